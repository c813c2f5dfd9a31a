"""SSCL's SGSR pipeline, dense losses, RoIAlign and mIoU, with and without
``jax.jit``.

Checked against the float64 transcriptions of ``test_sgsr_cisc``,
``test_roi_views`` and ``test_models_eval`` and against NumPy closed forms.
Static settings (temperatures, the refinement power, RoI bins, the class count)
are closed over.
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

import jaxpapers.sscl as S
from tests.sscl.test_models_eval import _np_miou
from tests.sscl.test_roi_views import _np_roi
from tests.sscl.test_sgsr_cisc import _np_affinity, _softmax, _unit


def _cos(a, b):
  return (_unit(a) * _unit(b)).sum(-1)


class SsclVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_affinity_refinement_and_proxy_attention(self):
    rng = np.random.default_rng(0)
    N, Dg, C, D = 6, 4, 3, 5
    g = rng.normal(size=(N, Dg)).astype(np.float32)
    logits = rng.normal(size=(N, C)).astype(np.float32)
    values = rng.normal(size=(N, D)).astype(np.float32)
    gamma, theta, alpha, steps = 2.0, 0.1, 0.4, 3

    @self.variant
    def sgsr(g, logits, values):
      a = S.vfm_affinity(g, gamma=gamma, threshold=theta)
      return (
        a,
        S.refine_logits(logits, a, alpha=alpha, steps=steps),
        S.proxy_attention(values, a),
      )

    a, refined, mixed = sgsr(g, logits, values)
    want_a = _np_affinity(g.astype(np.float64), gamma, theta)
    l64 = logits.astype(np.float64)
    want_r = (1 - alpha) * l64 + alpha * np.linalg.matrix_power(
      want_a, steps
    ) @ l64
    chex.assert_shape(a, (N, N))
    chex.assert_shape(refined, (N, C))
    chex.assert_type((a, refined), jnp.float32)
    chex.assert_trees_all_close(
      (a, refined, mixed),
      (want_a, want_r, want_a @ values),
      rtol=1e-5,
      atol=1e-6,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_patch_text_logits_pseudolabels_and_dense_losses(self):
    rng = np.random.default_rng(1)
    B, N, D, C = 2, 5, 4, 3
    patches = rng.normal(size=(B, N, D)).astype(np.float32)
    text = rng.normal(size=(C, D)).astype(np.float32)
    refined = (rng.normal(size=(B, N, C)) * 2).astype(np.float32)
    scale, tau, kappa = 10.0, 0.7, 0.6

    @self.variant
    def dense(patches, text, refined, q):
      logits = S.patch_text_logits(patches, text, logit_scale=scale)
      labels, weights = S.dense_pseudolabels(refined, tau=tau, confidence=kappa)
      return (
        logits,
        labels,
        weights,
        S.dense_pseudolabel_ce(logits, labels, weights),
        S.dense_kl(logits, q, weights),
      )

    # the soft targets of the KL term
    q = _softmax(refined.astype(np.float64) / tau)
    logits, labels, weights, ce, kl = dense(
      patches, text, refined, q.astype(np.float32)
    )
    want_logits = (
      scale
      * _unit(patches.astype(np.float64))
      @ _unit(text.astype(np.float64)).T
    )
    want_labels, want_w = q.argmax(-1), (q.max(-1) > kappa).astype(np.float64)
    # some patches are confident, some not
    self.assertTrue(0 < want_w.sum() < want_w.size)
    log_p = np.log(_softmax(want_logits))
    ce_i = -np.take_along_axis(log_p, want_labels[..., None], -1)[..., 0]
    kl_i = (q * (np.log(q) - log_p)).sum(-1)
    norm = max(1.0, want_w.sum())
    chex.assert_shape(logits, (B, N, C))
    chex.assert_type(labels, jnp.int32)
    chex.assert_trees_all_equal(labels, want_labels.astype(np.int32))
    chex.assert_trees_all_close(
      (logits, weights, ce, kl),
      (
        want_logits,
        want_w,
        (want_w * ce_i).sum() / norm,
        (want_w * kl_i).sum() / norm,
      ),
      rtol=1e-4,
      atol=1e-5,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_roi_align_matches_brute_force(self):
    rng = np.random.default_rng(2)
    feat = rng.normal(size=(6, 6, 3)).astype(np.float32)
    # patch units
    boxes = np.array([[0.5, 1.0, 4.0, 3.5], [2.0, 0.0, 6.0, 6.0]], np.float32)
    oh, ow, s = 2, 3, 2
    fn = self.variant(
      functools.partial(
        S.roi_align, out_size=(oh, ow), sampling=s, coords=("patch")
      )
    )
    got = fn(feat, boxes)
    want = np.stack(
      [_np_roi(feat.astype(np.float64), b, oh, ow, s) for b in boxes]
    )
    chex.assert_shape(got, (2, oh, ow, 3))
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_segmentation_miou_keep_loss_and_drift(self):
    rng = np.random.default_rng(3)
    C = 4
    pred = rng.integers(0, C, (2, 5, 5)).astype(np.int32)
    # class 3 only predicted
    target = rng.integers(-1, C - 1, (2, 5, 5)).astype(np.int32)
    za, zb = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    mask = np.array([[True, False, True], [True, True, False]])

    @self.variant
    def evaluate(pred, target, za, zb, mask):
      miou, iou = S.segmentation_miou(pred, target, C)
      return miou, iou, S.keep_loss(za[0], zb[0]), S.feature_drift(za, zb, mask)

    miou, iou, keep, drift = evaluate(
      pred, target, *(x.astype(np.float32) for x in (za, zb)), mask
    )
    chex.assert_shape(iou, (C,))
    chex.assert_trees_all_close(miou, _np_miou(pred, target, C, -1), rtol=1e-6)
    chex.assert_trees_all_close(
      keep, np.mean(1 - _cos(za[0], zb[0])), rtol=1e-5
    )
    chex.assert_trees_all_close(
      drift, np.mean((1 - _cos(za, zb))[mask]), rtol=1e-5
    )
