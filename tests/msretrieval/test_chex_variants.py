"""Fingerprint losses, similarities, candidate scoring, HR@k and the optimizer
step, with and without ``jax.jit``, against float64 NumPy (the transcriptions of
``test_losses`` and ``test_similarity`` where they exist).

Static settings (``gamma``, ``temperature``, ``sim``, ``k``, ``ties``, the
optimizer's hyper-parameters) are closed over.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np

import jaxpapers.msretrieval as M
from tests.msretrieval.test_losses import (
  BCE,
  LAB,
  MASK,
  P,
  S,
  Y,
  Z,
  _np_list,
  _np_pair,
)
from tests.msretrieval.test_similarity import _np_tanimoto


class MsretrievalVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_fingerprint_losses(self):
    gamma = 3.0

    @self.variant
    def losses(z, y):
      return {
        "bce": M.bce_loss(z, y),
        "focal": M.focal_loss(z, y, gamma=gamma),
        "cosine": M.cosine_loss(z, y),
        "soft_iou": M.soft_iou_loss(z, y),
      }

    got = losses(Z, Y)
    inter = (P * Y).sum(1)
    cos = inter / np.linalg.norm(P, axis=1) / np.linalg.norm(Y, axis=1)
    want = {
      "bce": BCE.mean(),
      "focal": ((1 - np.exp(-BCE)) ** gamma * BCE).mean(),
      "cosine": np.mean(1 - cos),
      "soft_iou": 1 - np.mean(inter / (P.sum(1) + Y.sum(1) - inter)),
    }
    chex.assert_shape(list(got.values()), ())
    chex.assert_trees_all_close(got, want, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_contrastive_losses(self):
    tau = 0.3
    fn = self.variant(
      lambda s, lab, mask: (
        M.listwise_contrastive_loss(s, lab, mask, temperature=tau),
        M.pairwise_contrastive_loss(s, lab, mask, temperature=tau),
      )
    )
    got = fn(S, LAB, MASK)
    want = (_np_list(S, LAB, MASK, tau), _np_pair(S, LAB, MASK, tau))
    chex.assert_trees_all_close(got, want, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_similarities(self):
    rng = np.random.default_rng(5)
    a = (rng.random((3, 4, 40)) < 0.3).astype(np.float32)
    # broadcasts over a's leading axis
    b = (rng.random((4, 40)) < 0.3).astype(np.float32)
    a[0, 0] = 0.0
    b[0] = 0.0  # both empty: 0 by convention
    p = rng.random((3, 4, 40)).astype(np.float32)

    @self.variant
    def sims(a, b, p):
      return {
        "tanimoto": M.tanimoto(a, b),
        "packed": M.packed_tanimoto(M.pack_bits(a), M.pack_bits(b)),
        "thresholded": M.thresholded_tanimoto(p, b, threshold=0.6),
        "continuous": M.continuous_tanimoto(p, b),
        "cosine": M.cosine_similarity(p, b),
      }

    got = sims(a, b, p)
    p64, b64 = (
      p.astype(np.float64),
      np.broadcast_to(b, p.shape).astype(np.float64),
    )
    norm = np.linalg.norm(p64, axis=-1) * np.linalg.norm(b64, axis=-1)
    want = {
      "tanimoto": _np_tanimoto(a, np.broadcast_to(b, a.shape)),
      "packed": _np_tanimoto(a, np.broadcast_to(b, a.shape)),
      "thresholded": _np_tanimoto(p > 0.6, b64),
      "continuous": np.minimum(p64, b64).sum(-1) / np.maximum(p64, b64).sum(-1),
      "cosine": np.where(
        norm > 0, (p64 * b64).sum(-1) / np.maximum(norm, 1e-8), 0.0
      ),
    }
    chex.assert_shape(list(got.values()), (3, 4))
    chex.assert_type(list(got.values()), jnp.float32)
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-7)

  @chex.variants(with_jit=True, without_jit=True)
  def test_candidate_scores_and_hit_rate(self):
    rng = np.random.default_rng(6)
    B, C, F, k = 3, 5, 30, 2
    pred = rng.random((B, F)).astype(np.float32)
    cand = (rng.random((B, C, F)) < 0.3).astype(np.uint8)
    mask = np.ones((B, C), bool)
    mask[0, 3:] = False
    q, t = pred[:, None].astype(np.float64), cand.astype(np.float64)
    want = np.minimum(q, t).sum(-1) / np.maximum(q, t).sum(-1)
    order = np.argsort(-np.where(mask, want, -np.inf), axis=1)
    labels = np.zeros((B, C), bool)
    # The positive ranks first (a hit), second (a hit only at k >= 2), last (a
    # miss).
    labels[0, order[0, 0]] = labels[1, order[1, 1]] = labels[
      2, order[2, -1]
    ] = True

    @self.variant
    def score_and_hit(pred, cand, mask, labels):
      scores = M.candidate_scores(pred, cand, mask, sim="cont_iou")
      hit = M.hit_rate_at_k(scores, labels, mask, k, ties="pessimistic")
      return scores, hit

    scores, hit = score_and_hit(pred, cand, mask, labels)
    chex.assert_shape(scores, (B, C))
    # padding scores -inf
    chex.assert_trees_all_equal(np.isneginf(np.asarray(scores)), ~mask)
    chex.assert_trees_all_close(np.asarray(scores)[mask], want[mask], rtol=1e-5)
    chex.assert_shape(hit, (B,))
    chex.assert_trees_all_close(hit, np.array([1.0, 1.0, 0.0]))

  @chex.variants(with_jit=True, without_jit=True)
  def test_optimizer_steps_match_clipped_adam_with_warmup(self):
    lr, warmup, clip = 0.1, 4, 1.0
    opt = M.make_optimizer(lr, warmup_steps=warmup, clip_norm=clip)
    params = {
      "w": np.array([0.5, -1.0, 2.0], np.float32),
      "b": np.array(0.3, np.float32),
    }
    rng = np.random.default_rng(7)
    grads = [
      {
        "w": rng.normal(size=3).astype(np.float32) * s,
        "b": np.float32(rng.normal() * s),
      }
      for s in (3.0, 0.2, 1.0)
    ]
    step = self.variant(lambda p, s, g: opt.update(g, s, p))
    state = opt.init(params)
    p = params
    for g in grads:
      updates, state = step(p, state, g)
      p = jax.tree.map(lambda x, u: x + u, p, updates)
    # float64 Adam (b1 = 0.9, b2 = 0.999, eps = 1e-8) after global-norm
    # clipping.
    flat = lambda t: np.concatenate(
      [np.ravel(t["w"]), np.ravel(t["b"])]
    ).astype(np.float64)
    x, m, v = flat(params), 0.0, 0.0
    for t, g in enumerate(grads):
      g = flat(g)
      g = g * min(1.0, clip / np.linalg.norm(g))
      m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g**2
      m_hat, v_hat = m / (1 - 0.9 ** (t + 1)), v / (1 - 0.999 ** (t + 1))
      x = x - lr * min(1.0, (t + 1) / warmup) * m_hat / (np.sqrt(v_hat) + 1e-8)
    chex.assert_trees_all_equal_shapes(p, params)
    chex.assert_trees_all_close(flat(p), x, rtol=1e-5)
