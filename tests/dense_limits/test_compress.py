"""Compression: exact on networks that are sums of few cut matrices; the
factored forward."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxpapers.dense_limits as D

RNG = np.random.default_rng(4)
X = RNG.uniform(size=(32, 3)).astype(np.float32)


def _net(widths=(10, 8)):
  return D.StronglyDenseMLP(3, 2, widths=widths, bound=1.0, rngs=nnx.Rngs(0))


def test_network_of_two_cut_terms_is_compressed_exactly():
  m = _net()
  s1, t1 = np.r_[np.ones(3), np.zeros(5)], np.r_[np.ones(6), np.zeros(4)]
  # [n_out=8, n_in=10]
  w_t = 0.9 * np.outer(s1, t1) - 0.4 * np.outer(1 - s1, 1 - t1)
  m.w1[...] = jnp.asarray(w_t.T, jnp.float32)
  c = D.compress_mlp(m, 2, jax.random.key(0))
  assert float(c.mids[0].rel_error) < 1e-6
  np.testing.assert_allclose(
    np.asarray(D.apply_compressed(c, X)), np.asarray(m(X)), atol=1e-6
  )


def test_full_rank_svd_is_exact_and_cut_error_falls_with_k():
  m = _net((12, 12))
  c = D.compress_mlp(m, 12, jax.random.key(0), method="svd")
  np.testing.assert_allclose(
    np.asarray(D.apply_compressed(c, X)), np.asarray(m(X)), atol=1e-5
  )
  errs = [
    float(D.compress_mlp(m, k, jax.random.key(0)).mids[0].rel_error)
    for k in (1, 4, 16)
  ]
  assert errs[0] > errs[1] > errs[2]


def test_apply_compressed_matches_numpy_factored_forward():
  m = _net()
  c = D.compress_mlp(m, 3, jax.random.key(1), method="random")
  (w0, b0), (w2, b2) = m.layers()[0], m.layers()[2]
  f = c.mids[0]
  h = np.maximum(
    X.astype(np.float64) @ np.asarray(w0, np.float64) + np.asarray(b0), 0
  )
  approx = (
    np.asarray(f.p, np.float64).T
    @ np.diag(np.asarray(f.q))
    @ np.asarray(f.t, np.float64)
  )
  # W^T ~ P^T diag(q) T; 1 / n_1
  h = np.maximum(h @ approx.T / 10 + np.asarray(f.bias), 0)
  want = h @ np.asarray(w2, np.float64) / 8 + np.asarray(b2)
  np.testing.assert_allclose(
    np.asarray(D.apply_compressed(c, X)), want, rtol=1e-5, atol=1e-6
  )


def test_random_terms_use_least_squares_coefficients():
  m = _net()
  c = D.compress_mlp(m, 3, jax.random.key(2), method="random")
  f = c.mids[0]
  p, t = np.asarray(f.p, np.float64), np.asarray(f.t, np.float64)
  basis = np.stack([np.outer(p[r], t[r]).ravel() for r in range(3)], 1)
  q = np.linalg.lstsq(
    basis, np.asarray(m.w1[...], np.float64).T.ravel(), rcond=None
  )[0]
  np.testing.assert_allclose(np.asarray(f.q), q, rtol=1e-3, atol=1e-5)


def test_bump_target_is_one_lipschitz_with_peaks_at_centres():
  t = D.bump_target(jax.random.key(0), 2, 4)
  assert t.centers.shape == (16, 2) and float(t.radius) == pytest.approx(0.125)
  ev = jax.jit(D.eval_bumps)
  v = np.asarray(ev(t, t.centers))
  np.testing.assert_allclose(v, np.asarray(t.signs) * 0.125, atol=1e-6)
  a = RNG.uniform(size=(500, 2)).astype(np.float32)
  b = (a + RNG.normal(scale=0.05, size=a.shape)).astype(np.float32)
  fa, fb = np.asarray(ev(t, a)), np.asarray(ev(t, b))
  assert np.all(np.abs(fa - fb) <= np.linalg.norm(a - b, axis=1) + 1e-5)
  # on a cell border
  assert float(D.eval_bumps(t, jnp.asarray([[0.25, 0.1]]))[0]) == 0.0


def test_truncate_and_refit_keep_prefixes_and_refit_least_squares():
  m = _net()
  full = D.compress_mlp(m, 4, jax.random.key(3), method="random")
  cut = D.truncate_compressed(full, 2).mids[0]
  np.testing.assert_array_equal(
    np.asarray(cut.q), np.asarray(full.mids[0].q)[:2]
  )
  ref = D.refit_compressed(full, m, 2).mids[0]
  np.testing.assert_array_equal(
    np.asarray(ref.p), np.asarray(full.mids[0].p)[:2]
  )
  p, t = np.asarray(ref.p, np.float64), np.asarray(ref.t, np.float64)
  basis = np.stack([np.outer(p[r], t[r]).ravel() for r in range(2)], 1)
  q = np.linalg.lstsq(
    basis, np.asarray(m.w1[...], np.float64).T.ravel(), rcond=None
  )[0]
  np.testing.assert_allclose(np.asarray(ref.q), q, rtol=1e-4, atol=1e-6)


def test_compression_errors_against_numpy_and_exact_svd():
  m = _net((8, 8))
  x = jnp.asarray(X)
  errs = D.compression_errors(
    m, x, (2, 8), jax.random.key(0), restarts=4, iters=4
  )
  assert set(errs) == set(D.METHODS) and all(len(v) == 2 for v in errs.values())
  assert errs["svd"][1] < 1e-5  # the full-rank SVD is exact
  f = np.asarray(m(x), np.float64)
  c = D.truncate_compressed(
    D.compress_mlp(m, 8, jax.random.key(0), method="svd"), 2
  )
  g = np.asarray(D.apply_compressed(c, x), np.float64)
  want = np.sqrt(np.mean((g - f) ** 2)) / np.sqrt(np.mean((f - f.mean(0)) ** 2))
  np.testing.assert_allclose(errs["svd"][0], want, rtol=1e-6)
