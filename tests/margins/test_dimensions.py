"""Needed dimensions: grid read-off, growth slope, bound inversion, projected
row margins."""

import math

import jax
import numpy as np
import pytest

import jaxpapers.margins as M


def test_needed_dimension_reads_the_last_crossing_log_linearly():
  ds = [2, 4, 8, 16]
  # Crosses 0.25 between d = 2 (0.2) and d = 4 (0.3): t = 1/2, d = 2 * 2 ** 0.5.
  assert M.needed_dimension(ds, [0.2, 0.3, 0.5, 0.7], 0.25) == pytest.approx(
    2 * math.sqrt(2)
  )
  # the last d only
  assert M.needed_dimension(ds, [0.2, 0.3, 0.5, 0.7], 0.7) == pytest.approx(
    16.0
  )
  with pytest.raises(ValueError, match="retained must have shape"):
    M.needed_dimension(ds, [0.2, 0.3], 0.5)
  with pytest.raises(ValueError, match="strictly increasing"):
    M.needed_dimension([4, 2], [0.2, 0.3], 0.5)


def test_growth_slope_against_least_squares_float64():
  Ns, dims = [10, 30, 100, 1000], [5.0, 6.0, 6.5, 9.0]
  x, y = np.log10(Ns), np.log(dims)
  want = ((x - x.mean()) @ (y - y.mean())) / ((x - x.mean()) @ (x - x.mean()))
  assert M.growth_slope(Ns, dims) == pytest.approx(want, rel=1e-12)
  with pytest.raises(ValueError, match="length >= 2"):
    M.growth_slope([10], [1.0])


def test_bound_dimension_is_the_smallest_integer_reaching_the_target():
  bound = lambda d: 1.0 - 10.0 / d  # reaches 0.9 at d = 100 exactly
  assert M.bound_dimension(bound, 0.9) == 100
  assert M.bound_dimension(bound, 0.9 + 1e-9) == 101
  assert M.bound_dimension(lambda d: 0.0, 1.0) is None
  m, n = 0.2, 32
  d = M.bound_dimension(lambda d: M.documents_only_bound(m, n, d), 0.5 * m)
  assert (
    M.documents_only_bound(m, n, d) >= 0.1 > M.documents_only_bound(m, n, d - 1)
  )


def test_projected_row_margins_against_float64_numpy():
  rng = np.random.default_rng(0)
  n, D, d = 6, 7, 5
  A = np.asarray(M.k_sparse_relevance(n, 2))
  V = rng.normal(size=(n, D))
  V /= np.linalg.norm(V, axis=1, keepdims=True)
  U = rng.normal(size=(A.shape[0], D))
  key = jax.random.key(3)
  out = M.projected_row_margins(key, U, V, A, d, steps=200)
  Y = np.where(A, 1.0, -1.0)
  G = np.asarray(M.gaussian_map(key, D, d), np.float64)
  Vp = V @ G
  Vp /= np.linalg.norm(Vp, axis=1, keepdims=True)
  Up = U @ G
  Up /= np.linalg.norm(Up, axis=1, keepdims=True)
  np.testing.assert_allclose(
    out["projected"], np.min(Y * (Up @ Vp.T), axis=1), atol=1e-5
  )
  Ur = np.asarray(
    jax.random.normal(jax.random.fold_in(key, 7), (A.shape[0], d)), np.float64
  )
  Ur /= np.linalg.norm(Ur, axis=1, keepdims=True)
  np.testing.assert_allclose(
    out["random"], np.min(Y * (Ur @ Vp.T), axis=1), atol=1e-5
  )
  # Re-solved queries are the per-row optimum: never below the projected source
  # queries.
  assert np.all(out["resolved"] >= out["projected"] - 1e-4)
  assert 0.0 <= out["fista_gap"] < 1e-2
  with pytest.raises(ValueError, match=r"U must have shape \[N, D\]"):
    M.projected_row_margins(key, U[:, :3], V, A, d)
