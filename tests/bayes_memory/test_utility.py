"""Distillation, regression and gate losses against NumPy references; the fit
learns."""

import numpy as np
import pytest
from sklearn.metrics import log_loss

from jaxpapers import bayes_memory as bm

rng = np.random.default_rng(0)
U = rng.normal(size=(5, 4)).astype(np.float32)
LBF = rng.normal(size=(5, 4)).astype(np.float32)
VALID = rng.random((5, 4)) < 0.75
VALID[:, 0] = True


def _np_kl(u, t, valid, beta):
  out = []
  for q in range(u.shape[0]):
    m = valid[q]
    p = np.exp(t[q, m] / beta - np.max(t[q, m] / beta))
    p /= p.sum()
    s = np.exp(u[q, m] - u[q, m].max())
    s /= s.sum()
    out.append(np.sum(p * (np.log(p) - np.log(s))))
  return np.mean(out)


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_distillation_loss_is_the_listwise_kl(beta):
  got = float(bm.utility_distillation_loss(U, LBF, VALID, beta=beta))
  assert got == pytest.approx(
    _np_kl(U.astype(float), LBF.astype(float), VALID, beta), rel=1e-5
  )
  # Zero exactly at the teacher (u = LBF / β up to a per-row constant), on valid
  # turns only.
  u0 = LBF / beta + 3.0 + np.where(VALID, 0.0, 50.0)
  assert (
    float(
      bm.utility_distillation_loss(u0.astype(np.float32), LBF, VALID, beta=beta)
    )
    < 1e-6
  )


def test_regression_loss_is_the_masked_huber():
  d = (U - LBF).astype(float)
  h = np.where(np.abs(d) <= 1.0, 0.5 * d**2, np.abs(d) - 0.5)
  assert float(bm.utility_regression_loss(U, LBF, VALID)) == pytest.approx(
    h[VALID].mean(), rel=1e-5
  )


def test_gate_loss_is_bce_on_the_access_label():
  g = rng.normal(size=5).astype(np.float32)
  tau = 0.5
  label = np.any(VALID & (LBF > tau), axis=1)
  ref = log_loss(label, 1 / (1 + np.exp(-g.astype(float))), labels=[0, 1])
  assert float(bm.gate_loss(g, LBF, VALID, tau=tau)) == pytest.approx(
    ref, rel=1e-5
  )


def test_utility_model_learns_a_feature_rule():
  """The target LBF is high for the turn whose feature matches the query:
  learnable."""
  Q, N, d = 64, 5, 6
  r = np.random.default_rng(1)
  fq = r.normal(size=(Q, d)).astype(np.float32)
  ft = r.normal(size=(Q, N, d)).astype(np.float32)
  gold = r.integers(N, size=Q)
  ft[np.arange(Q), gold] = fq + 0.1 * r.normal(size=(Q, d))
  lbf = np.where(np.arange(N)[None] == gold[:, None], 3.0, -1.0).astype(
    np.float32
  )
  pos = np.tile(np.linspace(0, 1, N, dtype=np.float32), (Q, 1))
  valid = np.ones((Q, N), bool)
  model, gate, losses = bm.train_utility_model(
    ft, fq, pos, valid, lbf, steps=150, hidden=16
  )
  losses = np.asarray(losses)
  assert losses[-1] < 0.3 * losses[0]
  u = np.asarray(model(ft, fq, pos))
  assert np.mean(u.argmax(1) == gold) > 0.9
  assert np.asarray(gate(ft, fq, valid)).shape == (Q,)


def test_pair_features_layout():
  ft = (
    np.arange(12, dtype=np.float32).reshape(1, 2, 6)[..., :3].reshape(1, 2, 3)
  )
  fq = np.array([[1.0, 2.0, 3.0]], np.float32)
  z = np.asarray(bm.pair_features(ft, fq, np.array([[0.0, 1.0]], np.float32)))
  np.testing.assert_allclose(
    z[0, 1], np.r_[ft[0, 1], fq[0], ft[0, 1] * fq[0], 1.0]
  )
