"""Objectives and heads against float64 numpy transcriptions and brute force."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import lanr as L

RNG = np.random.default_rng(0)


def _np_info_nce(eq, ed, pos, tau, cand):
  s = eq.astype(np.float64) @ ed.astype(np.float64).T / tau
  out = []
  for b in range(len(eq)):
    if not pos[b].any():
      continue
    c = cand[b] | pos[b]
    out.append(
      np.log(np.exp(s[b][c]).sum()) - np.log(np.exp(s[b][pos[b]]).sum())
    )
  return np.mean(out) if out else 0.0


def test_info_nce_matches_numpy_multi_positive_with_candidates():
  eq, ed = RNG.normal(size=(5, 4)), RNG.normal(size=(7, 4))
  pos = RNG.random((5, 7)) < 0.25
  pos[0] = False  # a query without positives contributes nothing
  pos[1, :] = False
  pos[1, 2] = True
  cand = RNG.random((5, 7)) < 0.6
  cand[1, 2] = False  # a positive is always a candidate
  got = L.info_nce(
    jnp.asarray(eq, jnp.float32),
    jnp.asarray(ed, jnp.float32),
    pos,
    tau=0.3,
    cand_mask=cand,
  )
  np.testing.assert_allclose(
    got, _np_info_nce(eq, ed, pos, 0.3, cand), rtol=1e-5
  )
  # without a candidate mask every document competes; the temperature divides
  # the scores
  got = L.info_nce(
    jnp.asarray(eq, jnp.float32), jnp.asarray(ed, jnp.float32), pos, tau=0.05
  )
  np.testing.assert_allclose(
    got, _np_info_nce(eq, ed, pos, 0.05, np.ones_like(pos)), rtol=1e-5
  )


def test_info_nce_prefers_the_positive_and_is_zero_without_positives():
  ed = np.eye(3, dtype=np.float32)
  pos = np.eye(3, dtype=bool)
  good = L.info_nce(ed, ed, pos, tau=0.1)
  bad = L.info_nce(ed, ed, np.roll(pos, 1, axis=1), tau=0.1)
  assert good < 0.01 < bad  # a sign flip would swap these
  assert float(L.info_nce(ed, ed, np.zeros((3, 3), bool), tau=0.1)) == 0.0


def test_answer_entropy_matches_numpy():
  lg = RNG.normal(size=(3, 4, 6)) * 2
  m = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], bool)
  p = np.exp(lg - lg.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  h = -(p * np.log(p)).sum(-1)
  want = [h[0, :2].mean(), h[1].mean(), 0.0]
  np.testing.assert_allclose(
    L.answer_entropy(jnp.asarray(lg, jnp.float32), m),
    want,
    rtol=1e-5,
    atol=1e-6,
  )
  # uniform logits: log V
  np.testing.assert_allclose(
    L.answer_entropy(np.zeros((1, 1, 6), np.float32), np.ones((1, 1), bool)),
    [np.log(6)],
    rtol=1e-6,
  )


def test_entropy_labels_strict_threshold_and_flare_rule():
  h = np.array([0.1, 0.5, 0.9], np.float32)
  np.testing.assert_array_equal(L.entropy_labels(h, 0.5), [1, 0, 0])
  np.testing.assert_array_equal(L.entropy_threshold_stop(h, 0.6), [1, 1, 0])


def test_control_loss_matches_numpy_bce():
  lg = RNG.normal(size=(6,)) * 3
  y = np.array([0, 1, 1, 0, 0.5, 1.0])
  v = np.array([1, 1, 0, 1, 1, 1], bool)
  s = 1 / (1 + np.exp(-lg))
  bce = -(y * np.log(s) + (1 - y) * np.log(1 - s))
  np.testing.assert_allclose(
    L.control_loss(jnp.asarray(lg, jnp.float32), y, v), bce[v].mean(), rtol=1e-5
  )
  np.testing.assert_allclose(
    L.control_loss(jnp.asarray(lg, jnp.float32), y), bce.mean(), rtol=1e-5
  )


def test_auroc_matches_pair_counting_with_ties():
  s = np.array([0.1, 0.4, 0.4, 0.8, 0.3, 0.4])
  y = np.array([0, 1, 0, 1, 0, 1])
  pairs = [(a, b) for a in np.flatnonzero(y) for b in np.flatnonzero(1 - y)]
  want = np.mean(
    [1.0 if s[a] > s[b] else 0.5 if s[a] == s[b] else 0.0 for a, b in pairs]
  )
  np.testing.assert_allclose(L.auroc(s.astype(np.float32), y), want, rtol=1e-6)
  assert float(L.auroc(-s.astype(np.float32), y)) == pytest.approx(1 - want)
  assert np.isnan(L.auroc(s.astype(np.float32), np.ones(6)))


def _np_std(x):
  x = np.asarray(x, np.float64)
  return (x - x.mean(-1, keepdims=True)) / np.sqrt(
    x.var(-1, keepdims=True) + 1e-6
  )


def test_heads_match_numpy():
  H = 6
  heads = L.init_retrieval_heads(jax.random.key(0), H, rep_dim=3)
  ctl = L.init_control_head(jax.random.key(1), H, width=5)
  z = RNG.normal(size=(4, H)) * 10 + 3  # scale and shift do not matter after LN
  e = _np_std(z) @ np.asarray(heads["p_q"], np.float64)
  e /= np.linalg.norm(e, axis=1, keepdims=True)
  np.testing.assert_allclose(
    L.query_embedding(heads, jnp.asarray(z, jnp.float32)), e, atol=1e-5
  )
  e = _np_std(z) @ np.asarray(heads["p_d"], np.float64)
  e /= np.linalg.norm(e, axis=1, keepdims=True)
  np.testing.assert_allclose(
    L.doc_embedding(heads, jnp.asarray(z, jnp.float32)), e, atol=1e-5
  )
  w1, b1, w2, b2 = (
    np.asarray(ctl[k], np.float64) for k in ("w1", "b1", "w2", "b2")
  )
  want = np.maximum(_np_std(z) @ w1 + b1, 0) @ w2 + b2
  np.testing.assert_allclose(
    L.control_logits(ctl, jnp.asarray(z, jnp.float32)), want, atol=1e-4
  )
  assert not np.allclose(heads["p_q"], heads["p_d"])  # two separate projections


def test_lanr_loss_matches_numpy_and_control_does_not_move_the_query():
  H, N, B = 6, 5, 4
  heads = L.init_retrieval_heads(jax.random.key(2), H, rep_dim=3)
  ctl = L.init_control_head(jax.random.key(3), H, width=4)
  z, dh = (
    RNG.normal(size=(B, H)).astype(np.float32),
    RNG.normal(size=(N, H)).astype(np.float32),
  )
  nxt = np.array([0, 3, -1, 2], np.int32)
  inc = np.zeros((B, N), bool)
  inc[1, 0] = inc[3, [0, 1]] = True
  y = np.array([0, 0, 1, 0], np.float32)
  cfg = L.LAnRConfig(tau_ret=0.2, lambda_ret=1.0, lambda_ctl=0.5)
  batch = dict(z=z, doc_h=dh, next_doc=nxt, in_context=inc, ctl_label=y)
  loss, aux = L.lanr_loss(heads, ctl, batch, cfg=cfg)
  eq = np.asarray(L.query_embedding(heads, z), np.float64)
  ed = np.asarray(L.doc_embedding(heads, dh), np.float64)
  pos = np.arange(N)[None] == nxt[:, None]
  ret = _np_info_nce(eq, ed, pos, 0.2, ~inc)
  lg = np.asarray(L.control_logits(ctl, z), np.float64)
  s = 1 / (1 + np.exp(-lg))
  ctl_l = -(y * np.log(s) + (1 - y) * np.log(1 - s)).mean()
  np.testing.assert_allclose(aux["ret"], ret, rtol=1e-4)
  np.testing.assert_allclose(aux["ctl"], ctl_l, rtol=1e-4)
  np.testing.assert_allclose(loss, ret + 0.5 * ctl_l, rtol=1e-4)
  g = jax.grad(
    lambda b: L.lanr_loss(heads, ctl, dict(batch, z=b), cfg=cfg)[1]["ctl"]
  )(z)
  # control_stopgrad: L_ctl sends no gradient into z
  np.testing.assert_array_equal(g, 0.0)
