"""Constructions meet their stated bounds; the optimum is bracketed; per-query
SVM is exact."""

import math

import jax
import numpy as np
import pytest
from scipy import optimize as sp_optimize

import jaxpapers.margins as M


@pytest.mark.parametrize("seed", range(4))
def test_cs_sum_queries_meet_coherence_bound(seed):
  n, k, d = 8, 2, 1025  # d' = 1024: coherence ~ 0.15, so k * mu < 1/2
  c = M.cs_construction(jax.random.key(seed), n, k, d, queries="sum")
  assert c.bound > 0
  assert c.certificate >= c.bound - 1e-6
  np.testing.assert_allclose(
    float(M.margin(c.U, c.V, M.k_sparse_relevance(n, k))),
    c.certificate,
    atol=1e-5,
  )


def test_cs_embeddings_jit_vmap_over_keys_match_numpy():
  """Pure JAX: jit(vmap) over typed keys equals the eager call and a float64
  transcription."""
  n, k, d, sin_phi = 6, 2, 9, 0.5
  A = M.k_sparse_relevance(n, k)
  keys = jax.random.split(jax.random.key(3), 3)
  U, V = jax.jit(
    jax.vmap(lambda key: M.cs_embeddings(key, A, d, sin_phi=sin_phi))
  )(keys)
  assert U.shape == (3, len(A), d) and V.shape == (3, n, d)
  assert not np.allclose(V[0], V[1])  # different keys, different signs
  cos_phi = math.sqrt(1 - sin_phi**2)
  for i, key in enumerate(keys):
    Ue, Ve = M.cs_embeddings(key, A, d, sin_phi=sin_phi)
    np.testing.assert_allclose(U[i], Ue, atol=1e-6)
    np.testing.assert_allclose(V[i], Ve, atol=1e-6)
    # float64 transcription of the definition from the same signs.
    signs = np.asarray(V[i][:, :-1], np.float64).T / cos_phi * math.sqrt(d - 1)
    np.testing.assert_allclose(np.abs(signs), 1.0, atol=1e-5)
    signs = np.sign(signs)
    phi = signs / math.sqrt(d - 1)
    v_ref = np.concatenate([cos_phi * phi.T, np.full((n, 1), sin_phi)], axis=1)
    u_ref = np.concatenate(
      [A @ phi.T, np.full((len(A), 1), -0.5 * cos_phi / sin_phi)], axis=1
    )
    u_ref /= np.linalg.norm(u_ref, axis=1, keepdims=True)
    np.testing.assert_allclose(V[i], v_ref, atol=1e-6)
    np.testing.assert_allclose(U[i], u_ref, atol=1e-6)
  # cs_construction draws the same signs from the same key.
  c = M.cs_construction(keys[0], n, k, d, queries="sum", sin_phi=sin_phi)
  np.testing.assert_allclose(c.V, V[0], atol=1e-6)
  np.testing.assert_allclose(c.U, U[0], atol=1e-6)


def test_cs_svm_queries_beat_sum_and_reach_positive_margin_at_8_k_log():
  n, k = 20, 2
  d = int(round(8 * k * math.log(n / k))) + 1  # d' = C k log(n/k), C = 8
  key = jax.random.key(0)
  s = M.cs_construction(key, n, k, d, queries="sum")
  v = M.cs_construction(key, n, k, d, queries="svm")
  assert v.certificate >= s.certificate - 1e-6
  assert v.certificate > 0.1  # measured 0.19 on this seed
  assert v.certificate <= M.k_sparse_optimal_margin(n, k) + 1e-6


def test_max_margin_queries_match_scipy_svm():
  rng = np.random.default_rng(0)
  n, d = 7, 5
  V = rng.normal(size=(n, d))
  V /= np.linalg.norm(V, axis=1, keepdims=True)
  A = rng.random((5, n)) < 0.4
  A[:, 0], A[:, 1] = True, False
  res = M.max_margin_queries(V.astype(np.float32), A, steps=3000)
  for j in range(A.shape[0]):
    y = np.where(A[j], 1.0, -1.0)
    # Hard-margin SVM through the origin: min ||w||^2 s.t. y_i <w, v_i> >= 1; margin 1/||w||.
    sol = sp_optimize.minimize(
      lambda w: w @ w,
      np.asarray(res.U[j], np.float64) * 10,
      jac=lambda w: 2 * w,
      method="SLSQP",
      constraints=[
        {
          "type": "ineq",
          "fun": lambda w: y * (V @ w) - 1,
          "jac": lambda w: y[:, None] * V,
        }
      ],
    )
    best = (
      1.0 / np.linalg.norm(sol.x)
      if sol.success and (y * (V @ sol.x) >= 1 - 1e-6).all()
      else None
    )
    assert res.row_margin[j] <= res.row_upper[j] + 1e-6
    if best is not None:
      np.testing.assert_allclose(float(res.row_margin[j]), best, atol=2e-4)


@pytest.mark.parametrize("seed", range(3))
def test_jl_projection_meets_stated_bound(seed):
  src = M.orthogonal_construction(10, 1)  # m_0 = 1/3 in D = 11
  A = M.k_sparse_relevance(10, 1)
  key = jax.random.key(seed)
  p = M.jl_project(key, src.U, src.V, A, 4096)
  assert p.bound > 0.05
  assert p.certificate >= p.bound
  r = M.jl_project(key, src.U, src.V, A, 4096, reoptimize_queries=True)
  # same documents, better-or-equal queries
  assert r.certificate >= p.certificate - 1e-6
  np.testing.assert_allclose(r.V, p.V)


def test_jl_bound_formula():
  N, n, d, m = 45, 10, 2000, 0.6
  t = math.sqrt(16 * math.log((4 * N * n + 2 * (N + n)) / 0.01) / d)
  np.testing.assert_allclose(M.jl_bound(m, N, n, d), (m - t) / (1 + t))
  assert M.jl_bound(m, N, n, 10) == -1.0


def test_sdp_brackets_exact_k_sparse_optimum():
  n, k = 6, 2
  A = M.k_sparse_relevance(n, k)
  exact = M.k_sparse_optimal_margin(n, k)
  res = M.sdp_max_margin(A, key=jax.random.key(0), steps=1500, dual_steps=1500)
  assert res.lower <= exact + 1e-9 <= res.upper + 2e-9
  assert res.upper - res.lower < 0.02
  # orthogonal is not optimal
  assert res.lower > M.orthogonal_construction(n, k).certificate
  np.testing.assert_allclose(
    float(M.margin(res.U, res.V, A, normalize=True)), res.lower, atol=1e-5
  )
  # The dimension-reduction construction, from this solution, in d = N + n dims
  # or fewer.
  c = M.dimension_reduction_construction(
    jax.random.key(1), A, 12, source=(res.U, res.V)
  )
  assert c.U.shape == (A.shape[0], 12) and c.certificate <= exact + 1e-6


def test_dual_bound_forster_and_k_sparse_theta():
  rng = np.random.default_rng(0)
  A = rng.random((9, 6)) < 0.5
  Y = np.where(A, 1.0, -1.0)
  forster = np.linalg.norm(Y, 2) / math.sqrt(A.size)
  np.testing.assert_allclose(
    M.dual_upper_bound(
      A,
      np.ones(A.shape),
      np.full(9, (6 / 9) ** 0.25),
      np.full(6, (9 / 6) ** 0.25),
    ),
    forster,
  )
  # Any other dual point is still a valid bound, just not smaller than the
  # optimum.
  assert (
    M.dual_upper_bound(
      A, rng.random(A.shape), rng.random(9) + 0.1, rng.random(6) + 0.1
    )
    > 0
  )
  # k-sparse optimum: Theta(k^{-1/2}); for n = 3, k = 1 the value 3/5.
  np.testing.assert_allclose(M.k_sparse_optimal_margin(3, 1), 0.6, rtol=1e-7)
  vals = [M.k_sparse_optimal_margin(1000, k) * math.sqrt(k) for k in (1, 4, 16)]
  assert all(0.3 < v < 0.5 for v in vals)


def test_symmetric_optimum_reaches_the_exact_optimum():
  """The symmetric documents with re-solved queries reach
  ``k_sparse_optimal_margin`` (an independent closed form), on all rows and on a
  subset of them."""
  opt = M.symmetric_optimum(7, 2, steps=1500)
  assert opt.U.shape == (21, 8) and opt.V.shape == (7, 8)
  np.testing.assert_allclose(np.linalg.norm(opt.V, axis=1), 1.0, atol=1e-12)
  np.testing.assert_allclose(
    opt.V @ opt.V.T - np.eye(7) * (1 - opt.s**2), opt.s**2, atol=1e-12
  )
  assert opt.m_inf == M.k_sparse_optimal_margin(7, 2)
  np.testing.assert_allclose(opt.m_src, opt.m_inf, atol=2e-3)
  part = M.symmetric_optimum(7, 2, steps=1500, rows=[3, 0, 3])
  assert np.all(part.U[[1, 2, 4]] == 0) and np.all(
    np.linalg.norm(part.U[[0, 3]], axis=1) > 0.99
  )
