"""The documents-only reduction: exact per-row re-solve, N-free bound, errors
under jit."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import jaxpapers.margins as M


def _min_norm_in_hull(P):
  """Brute force, float64: distance from 0 to conv(rows of P), over every face's
  affine hull.

  For each subset S, the minimum-norm point of aff(P_S) solves the KKT system
  ``[P_S P_S^T, 1; 1^T, 0] [alpha; lam] = [0; 1]``; it is a hull point when
  ``alpha >= 0``. The nearest hull point lies in the relative interior of some
  face, so the minimum over the feasible subsets is exact.
  """
  n = P.shape[0]
  best = math.inf
  for r in range(1, n + 1):
    for S in itertools.combinations(range(n), r):
      Q = P[list(S)]
      K = np.zeros((r + 1, r + 1))
      K[:r, :r] = Q @ Q.T
      K[:r, r] = K[r, :r] = 1.0
      rhs = np.zeros(r + 1)
      rhs[r] = 1.0
      try:
        sol = np.linalg.solve(K, rhs)
      except np.linalg.LinAlgError:
        continue
      alpha = sol[:r]
      if np.all(alpha >= -1e-12) and np.allclose(K @ sol, rhs, atol=1e-9):
        best = min(best, float(np.linalg.norm(alpha @ Q)))
  return best


def _reference(key, V, A, d):
  """float64: the projected documents and every row's best margin, by brute
  force."""
  V = np.asarray(V, np.float64)
  V = V / np.linalg.norm(V, axis=1, keepdims=True)
  Vp = V @ np.asarray(M.gaussian_map(key, V.shape[1], d), np.float64)
  Vp /= np.linalg.norm(Vp, axis=1, keepdims=True)
  Y = np.where(np.asarray(A, bool), 1.0, -1.0)
  return Vp, np.array(
    [_min_norm_in_hull(Y[j][:, None] * Vp) for j in range(len(Y))]
  )


@pytest.mark.parametrize(
  "d",
  [4, pytest.param(11, marks=pytest.mark.slow)],
  # d <= n (direct) and d > n (solved in the span; also in
  # test_resolved_not_projected_queries)
)
def test_rows_match_brute_force_float64(d):
  key = jax.random.key(d)
  n, D, N = 6, 12, 7
  V = np.asarray(jax.random.normal(jax.random.key(100), (n, D)))
  A = np.asarray(jax.random.bernoulli(jax.random.key(101), 0.4, (N, n)))
  res = M.project_documents(key, V, A, d, steps=2000)
  Vp, best = _reference(key, V, A, d)
  np.testing.assert_allclose(res.V, Vp, atol=1e-5)
  pos = best > 0.02  # rows the projected documents can still separate
  assert pos.sum() >= 3
  np.testing.assert_allclose(
    np.asarray(res.row_margin)[pos], best[pos], atol=2e-4
  )
  np.testing.assert_allclose(
    np.asarray(res.row_upper)[pos], best[pos], atol=2e-4
  )
  # The returned queries are unit vectors that achieve the reported row margins.
  U = np.asarray(res.U, np.float64)
  np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, atol=1e-5)
  Y = np.where(A, 1.0, -1.0)
  np.testing.assert_allclose((Y * (U @ Vp.T)).min(1), res.row_margin, atol=1e-5)
  assert float(res.margin) == pytest.approx(float(np.min(res.row_margin)))


def test_resolved_not_projected_queries():
  """Re-solving reaches each row's optimum for the projected documents;
  projecting does not.

  Same key, same projected documents as ``jl_project``: the projected queries'
  margin is clearly below the brute-force optimum that ``project_documents``
  must reach.
  """
  n, k, d = 6, 2, 16
  src = M.orthogonal_construction(n, k)
  A = np.asarray(M.k_sparse_relevance(n, k))
  key = jax.random.key(4)
  res = M.project_documents(key, src.V, A, d, steps=2000)
  proj = M.jl_project(key, src.U, src.V, A, d)
  np.testing.assert_allclose(res.V, proj.V, atol=1e-6)
  _, best = _reference(key, src.V, A, d)
  assert float(res.margin) == pytest.approx(best.min(), abs=2e-4)
  assert proj.certificate < best.min() - 0.05


def test_bound_closed_form_and_independent_of_N():
  m, n, d, delta = 0.3, 20, 2000, 0.01
  a_d = math.sqrt(2) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
  want = (
    m * a_d
    - math.sqrt(2 * math.log(2 * n))
    - m * math.sqrt(2 * math.log(2 / delta))
  ) / (math.sqrt(d) + math.sqrt(2 * math.log(2 * n / delta)))
  assert M.documents_only_bound(m, n, d, delta) == pytest.approx(
    want, rel=1e-12
  )
  assert 0 < want < m
  # The classical route loses log(N n): worse, and worse again with more
  # queries.
  big = 20000  # where both guarantees are positive
  docs = M.documents_only_bound(m, n, big, delta)
  assert (
    0
    < M.jl_bound(m, 10**6, n, big, delta)
    < M.jl_bound(m, 10, n, big, delta)
    < docs
  )
  assert M.documents_only_bound(m, n, 10**8) == pytest.approx(m, abs=2e-3)
  assert M.documents_only_bound(m, n, 50) == -1.0
  assert M.documents_only_bound(-0.1, n, d) == -1.0
  for bad in (
    dict(n=0),
    dict(d=1.5),
    dict(delta=1.0),
    dict(source_margin=float("nan")),
  ):
    kw = dict(source_margin=m, n=n, d=d, delta=delta) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
      M.documents_only_bound(**kw)


def test_measured_margin_meets_bound():
  """The guarantee holds on every seed (it fails with probability <= delta per
  draw)."""
  n, k, d = 6, 1, 400
  src = M.orthogonal_construction(n, k)
  A = M.k_sparse_relevance(n, k)
  bound = M.documents_only_bound(src.certificate, n, d)
  assert bound > 0.05
  keys = jax.random.split(jax.random.key(0), 8)
  margins = jax.vmap(
    lambda kk: M.project_documents(kk, src.V, A, d, steps=300).margin
  )(keys)
  assert np.all(np.asarray(margins) >= bound)


@pytest.mark.slow
def test_jit_and_vmap_match_eager():
  n, k, d = 6, 2, 5
  src = M.orthogonal_construction(n, k)
  A = M.k_sparse_relevance(n, k)
  keys = jax.random.split(jax.random.key(1), 3)
  f = jax.jit(lambda kk, V: M.project_documents(kk, V, A, d, steps=200))
  batched = jax.vmap(f, in_axes=(0, None))(keys, src.V)
  for i, kk in enumerate(keys):
    eager = M.project_documents(kk, src.V, A, d, steps=200)
    np.testing.assert_allclose(
      batched.row_margin[i], eager.row_margin, atol=1e-4
    )
    np.testing.assert_allclose(batched.U[i], eager.U, atol=1e-3)


def test_bad_input_eager_and_under_jit():
  key = jax.random.key(0)
  V = jnp.eye(4, 5)
  A = jnp.array([[1, 0, 1, 0], [0, 1, 0, 0]])
  with pytest.raises(ValueError, match="binary"):
    M.project_documents(key, V, A.at[0, 0].set(2), 3)
  with pytest.raises(ValueError, match="V has an all-zero row"):
    M.project_documents(key, V.at[1].set(0.0), A, 3)
  with pytest.raises(ValueError, match="V has an all-zero row or a non-finite"):
    M.project_documents(key, V.at[1, 1].set(jnp.nan), A, 3)
  with pytest.raises(ValueError, match="A must be a 2-D binary matrix"):
    M.project_documents(key, V, A[:, :3], 3)
  with pytest.raises(ValueError, match="N >= 1"):
    M.project_documents(key, V, A[:0], 3)
  for d in (0, 2.5, True):
    with pytest.raises(ValueError, match="d must be a positive int"):
      M.project_documents(key, V, A, d)
  with pytest.raises(ValueError, match="steps"):
    M.project_documents(key, V, A, 3, steps=0)
  with pytest.raises(TypeError, match="key"):
    M.project_documents(0, V, A, 3)
  # Under jit a bad value cannot raise: the outputs are NaN (the battery in
  # test_bad_input.py) and checkify names the argument.
  f = jax.jit(lambda A, V: M.project_documents(key, V, A, 3, steps=5))
  err, out = checkify.checkify(f, errors=checkify.user_checks)(
    A.at[0, 0].set(2), V
  )
  assert np.isnan(out.margin)
  with pytest.raises(checkify.JaxRuntimeError, match="binary"):
    err.throw()
