"""LAnR objectives, heads, metrics and the stop rule, jitted and eager, against
float64 NumPy.

Temperatures, thresholds and the config are static and closed over; head
parameters are traced pytrees under jit.
"""

import functools

import chex
import jax
import numpy as np
from absl.testing import absltest

from jaxpapers import lanr as L
from tests.lanr.test_losses import _np_info_nce, _np_std

RNG = np.random.default_rng(101)


def _np_bce(logits, y):
  s = 1 / (1 + np.exp(-np.asarray(logits, np.float64)))
  return -(y * np.log(s) + (1 - y) * np.log(1 - s))


def _np_unit(e):
  return e / np.linalg.norm(e, axis=-1, keepdims=True)


class LossesTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_info_nce_multi_positive_over_candidates(self):
    eq, ed = RNG.normal(size=(4, 3)), RNG.normal(size=(6, 3))
    pos = RNG.random((4, 6)) < 0.3
    pos[0] = False  # no positive: contributes nothing
    pos[1, 2] = True
    cand = RNG.random((4, 6)) < 0.6
    cand[1, 2] = False  # a positive is always a candidate
    fn = self.variant(functools.partial(L.info_nce, tau=0.3))
    got = fn(eq.astype(np.float32), ed.astype(np.float32), pos, cand_mask=cand)
    chex.assert_shape(got, ())
    chex.assert_trees_all_close(
      got, np.float32(_np_info_nce(eq, ed, pos, 0.3, cand)), rtol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_answer_entropy_labels_and_the_flare_stop(self):
    lg = RNG.normal(size=(3, 4, 5)) * 2
    m = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]], bool)
    p = np.exp(lg - lg.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    h = -(p * np.log(p)).sum(-1)
    want = np.array([h[0, :2].mean(), h[1].mean(), h[2, 1]])
    got = self.variant(L.answer_entropy)(lg.astype(np.float32), m)
    chex.assert_shape(got, (3,))
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    hs = np.array([0.1, 0.5, 0.9], np.float32)
    labels = self.variant(functools.partial(L.entropy_labels, eps=0.5))(hs)
    stop = self.variant(functools.partial(L.entropy_threshold_stop, eps=0.6))(
      hs
    )
    chex.assert_trees_all_equal(
      (np.asarray(labels, np.float32), np.asarray(stop, np.float32)),
      (np.float32([1, 0, 0]), np.float32([1, 1, 0])),
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_control_loss_and_auroc(self):
    lg = (RNG.normal(size=6) * 3).astype(np.float32)
    y = np.array([0, 1, 1, 0, 0.5, 1.0], np.float32)
    v = np.array([1, 1, 0, 1, 1, 1], bool)
    got = self.variant(L.control_loss)(lg, y, v)
    chex.assert_trees_all_close(
      got, np.float32(_np_bce(lg, y)[v].mean()), rtol=1e-5
    )
    s = np.array([0.1, 0.4, 0.4, 0.8, 0.3, 0.4], np.float32)
    lab = np.array([0, 1, 0, 1, 0, 1])
    pairs = [
      (a, b) for a in np.flatnonzero(lab) for b in np.flatnonzero(1 - lab)
    ]
    want = np.mean(
      [1.0 if s[a] > s[b] else 0.5 if s[a] == s[b] else 0.0 for a, b in pairs]
    )
    chex.assert_trees_all_close(
      self.variant(L.auroc)(s, lab), np.float32(want), rtol=1e-6
    )


class HeadsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_query_doc_and_control_heads(self):
    H = 5
    heads = L.init_retrieval_heads(jax.random.key(0), H, rep_dim=3)
    ctl = L.init_control_head(jax.random.key(1), H, width=4)
    z = (RNG.normal(size=(4, H)) * 10 + 3).astype(np.float32)
    eq = self.variant(L.query_embedding)(heads, z)
    ed = self.variant(L.doc_embedding)(heads, z)
    chex.assert_shape([eq, ed], [(4, 3), (4, 3)])
    w = {k: np.asarray(v, np.float64) for k, v in {**heads, **ctl}.items()}
    want_q = _np_unit(_np_std(z) @ w["p_q"])
    want_d = _np_unit(_np_std(z) @ w["p_d"])
    chex.assert_trees_all_close(
      (eq, ed),
      (want_q.astype(np.float32), want_d.astype(np.float32)),
      atol=1e-5,
    )
    logits = self.variant(L.control_logits)(ctl, z)
    want = np.maximum(_np_std(z) @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]
    chex.assert_trees_all_close(
      logits, want.astype(np.float32).reshape(logits.shape), atol=1e-4
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_lanr_loss_is_the_weighted_sum_of_its_terms(self):
    H, N, B = 5, 4, 3
    heads = L.init_retrieval_heads(jax.random.key(2), H, rep_dim=3)
    ctl = L.init_control_head(jax.random.key(3), H, width=4)
    z, dh = (
      RNG.normal(size=(B, H)).astype(np.float32),
      RNG.normal(size=(N, H)).astype(np.float32),
    )
    nxt = np.array([0, 3, -1], np.int32)
    inc = np.zeros((B, N), bool)
    inc[1, 0] = True
    y = np.array([0, 0, 1], np.float32)
    cfg = L.LAnRConfig(tau_ret=0.2, lambda_ret=1.0, lambda_ctl=0.5)
    batch = dict(z=z, doc_h=dh, next_doc=nxt, in_context=inc, ctl_label=y)
    loss, aux = self.variant(functools.partial(L.lanr_loss, cfg=cfg))(
      heads, ctl, batch
    )
    w = {k: np.asarray(v, np.float64) for k, v in {**heads, **ctl}.items()}
    eq, ed = _np_unit(_np_std(z) @ w["p_q"]), _np_unit(_np_std(dh) @ w["p_d"])
    ret = _np_info_nce(eq, ed, np.arange(N)[None] == nxt[:, None], 0.2, ~inc)
    lg = (
      np.maximum(_np_std(z) @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]
    ).reshape(B)
    ctl_l = _np_bce(lg, y).mean()
    want = (
      np.float32(ret + 0.5 * ctl_l),
      {"ret": np.float32(ret), "ctl": np.float32(ctl_l)},
    )
    chex.assert_trees_all_close((loss, aux), want, rtol=1e-4)


class RetrievalTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_cosine_scores_stop_hops_and_at_hop(self):
    q, d = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4))
    q[2] = 0.0  # a zero row has cosine 0 with everything
    got = self.variant(L.cosine_scores)(
      q.astype(np.float32), d.astype(np.float32)
    )
    want = np.zeros((3, 5))
    want[:2] = _np_unit(q[:2]) @ _np_unit(d).T
    chex.assert_trees_all_close(got, want.astype(np.float32), atol=1e-6)
    probs = np.array(
      [[0.1, 0.7, 0.2, 0.9], [0.9, 0.1, 0.1, 0.1], [0.2, 0.5, 0.1, 0.0]],
      np.float32,
    )
    hops = self.variant(functools.partial(L.stop_hops, tau_stop=0.5))(probs)
    # The first t with s_t > 0.5 (strictly: 0.5 itself goes on) among T = 3
    # steps, else T.
    chex.assert_type(hops, np.int32)
    chex.assert_trees_all_equal(hops, np.int32([1, 0, 3]))
    stats = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    got = self.variant(L.at_hop)(stats, hops)
    chex.assert_trees_all_close(got, stats[np.arange(3), [1, 0, 3]])


if __name__ == "__main__":
  absltest.main()
