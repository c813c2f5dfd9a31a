"""The label-free retrieval baselines on frozen states against float64 NumPy."""

import numpy as np
import pytest

from jaxpapers import lanr as L


def test_cosine_scores_match_numpy_and_zero_rows():
  rng = np.random.default_rng(0)
  q, d = rng.normal(size=(3, 5)), rng.normal(size=(4, 5))
  q[2] = 0.0
  want = (q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-300)) @ (
    d / np.linalg.norm(d, axis=1, keepdims=True)
  ).T
  got = np.asarray(L.cosine_scores(q.astype(np.float32), d.astype(np.float32)))
  np.testing.assert_allclose(got, want, atol=1e-6)
  assert np.all(got[2] == 0.0)


def test_whitening_matches_numpy_pca_and_gives_identity_covariance():
  rng = np.random.default_rng(1)
  # correlated, shifted
  x = rng.normal(size=(400, 5)) @ rng.normal(size=(5, 5)) + 3.0
  st = L.fit_whitening(x, dim=3)
  c = np.cov(x.T, bias=True)
  lam, u = np.linalg.eigh(c)
  lam, u = lam[::-1][:3], u[:, ::-1][:, :3]
  w = np.asarray(st["w"], np.float64)
  assert w.shape == (5, 3)
  # eigenvectors are defined up to sign: compare column by column
  sign = np.sign(np.sum(w * u, 0))
  np.testing.assert_allclose(w * sign, u / np.sqrt(lam), rtol=1e-4, atol=1e-6)
  y = np.asarray(L.whiten(st, x), np.float64)
  np.testing.assert_allclose(y.mean(0), 0.0, atol=1e-6)
  np.testing.assert_allclose(y.T @ y / len(y), np.eye(3), atol=1e-4)
  # default k = min(H, M - 1): fewer states than features keeps W finite
  st = L.fit_whitening(rng.normal(size=(4, 6)).astype(np.float32))
  assert st["w"].shape == (6, 3) and np.isfinite(np.asarray(st["w"])).all()
  with pytest.raises(ValueError, match=r"dim must be <= min\(H, M - 1\) = 3"):
    L.fit_whitening(rng.normal(size=(4, 6)), dim=4)


def test_whitened_cosine_ignores_a_dominant_direction():
  # Opposite offsets and a large-variance nuisance feature drown the raw cosine
  # of matching pairs (1 in 40 found) and still dominate after centring; a
  # shared whitening (each side centred by its own mean) scales the nuisance
  # down to one unit-variance direction of eight.
  rng = np.random.default_rng(2)
  base = rng.normal(size=(40, 8))
  q = base + 0.1 * rng.normal(size=(40, 8))
  d = base + 0.1 * rng.normal(size=(40, 8))
  q[:, 0] = 50.0 + 20.0 * rng.normal(size=40)
  d[:, 0] = -50.0 + 20.0 * rng.normal(size=40)
  hit = lambda s: (np.asarray(s).argmax(1) == np.arange(40)).mean()
  qc, dc = q - q.mean(0), d - d.mean(0)
  st = L.fit_whitening(np.concatenate([qc, dc]))
  white = L.cosine_scores(L.whiten(st, qc), L.whiten(st, dc))
  assert hit(white) >= 0.75
  assert hit(L.cosine_scores(qc, dc)) < 0.4 and hit(L.cosine_scores(q, d)) < 0.1
  with pytest.raises(
    TypeError, match=("stats must be the dict of fit_whitening")
  ):
    L.whiten({"w": np.eye(8)}, q)


def test_frozen_scorers_match_numpy_whitened_cosine():
  """Each side centred by its own mean, one PCA whitening of both, cosine:
  float64 NumPy."""
  rng = np.random.default_rng(3)
  zt = rng.normal(size=(30, 6)) @ rng.normal(size=(6, 6)) + 2.0
  h = rng.normal(size=(9, 6)) - 1.0
  z = rng.normal(size=(4, 6))
  s = L.frozen_scorers(zt.astype(np.float32), h.astype(np.float32), dim=4)
  x = np.concatenate([zt - zt.mean(0), h - h.mean(0)])
  lam, u = np.linalg.eigh(np.cov(x.T, bias=True))
  w = u[:, ::-1][:, :4] / np.sqrt(lam[::-1][:4])
  unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
  # signs of W cancel
  want = unit((z - zt.mean(0)) @ w) @ unit((h - h.mean(0)) @ w).T
  got = np.asarray(s["whitened_cosine"](z.astype(np.float32)), np.float64)
  np.testing.assert_allclose(got, want, atol=2e-4)
  np.testing.assert_allclose(
    np.asarray(s["untrained_cosine"](z.astype(np.float32))),
    unit(z) @ unit(h).T,
    atol=1e-5,
  )
