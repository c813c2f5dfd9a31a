"""The text towers' order sensitivity (the experiment's control) and output
norms."""

import jax
import numpy as np
from flax import nnx

import jaxpapers.cs_clip as C


def test_order_sensitivity_of_the_text_kinds():
  a = C.tokenize(["a red circle left of a blue square"])
  # same words, other order
  b = C.tokenize(["a blue square left of a red circle"])
  pair = np.concatenate([a, b])
  out = {}
  for kind in C.TEXT_KINDS:
    enc = C.TextEncoder(len(C.VOCAB), 8, kind=kind, rngs=nnx.Rngs(0))
    e = np.asarray(enc(pair))
    np.testing.assert_allclose(np.linalg.norm(e, axis=-1), 1.0, rtol=1e-5)
    out[kind] = np.abs(e[0] - e[1]).max()
  # bag of words: the same multiset, the same embedding
  assert out["bow"] < 1e-6
  assert out["weak_order"] > 1e-3 and out["positional"] > 1e-3
  enc = C.TextEncoder(len(C.VOCAB), 8, kind="weak_order", rngs=nnx.Rngs(0))
  e0 = np.asarray(enc(pair, order_strength=0.0))
  np.testing.assert_allclose(e0[0], e0[1], atol=1e-6)


def test_dual_encoder_shapes_and_scale():
  m = C.DualEncoder(len(C.VOCAB), 16, rngs=nnx.Rngs(0))
  img = m.image(C.render_scenes(0, 3).images)
  assert img.shape == (3, 16)
  np.testing.assert_allclose(np.linalg.norm(img, axis=-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(float(m.logit_scale()), 1 / 0.07, rtol=1e-5)
  # an empty (padded) caption embeds to 0 with a finite gradient
  g = jax.grad(lambda x: m.text.out(x).sum())(np.zeros((1, 64), np.float32))
  assert np.isfinite(np.asarray(g)).all()
