"""Shapes world, tiny models, readouts and evaluation against numpy
references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.sscl as S
from tests.sscl import _tiny
from tests.sscl._tiny import tiny_clip

RNG = np.random.default_rng(2)
F32 = np.float32


@pytest.fixture(scope="module")
def data():
  return S.render_shapes_world(5, 12)


def test_shapes_world_is_consistent(data):
  d = data
  again = S.render_shapes_world(5, 12)
  np.testing.assert_array_equal(d.images, again.images)
  assert d.images.shape == (12, 32, 32, 3) and d.images.dtype == np.uint8
  for i in range(12):
    for k in range(S.MAX_OBJECTS):
      m = d.instance_map[i] == k + 1
      if not d.valid[i, k]:
        assert not m.any() and d.shapes[i, k] == -1
        continue
      assert m.any()
      assert np.all(d.class_map[i][m] == d.shapes[i, k] + 1)
      ys, xs = np.nonzero(m)
      np.testing.assert_array_equal(
        d.boxes[i, k], [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
      )
    bg = d.class_map[i] == 0
    assert np.array_equal(bg, d.instance_map[i] == 0)
    np.testing.assert_array_equal(d.images[i][bg], d.backgrounds[i][bg])
    words = [S.VOCAB[t] for t in d.captions[i] if t]
    named = [w for w in words if w in S.SHAPES]
    assert named == [S.SHAPES[s] for s in d.shapes[i][d.valid[i]]]
    assert words.count("striped") == int(d.striped[i].sum())


def _np_vfm(img, p):
  x = img.astype(np.float64) / 255.0
  g = x.mean(-1)
  pad = np.pad(g, ((0, 1), (0, 1)), mode="edge")
  grads = [
    np.abs(pad[:-1, 1:] - pad[:-1, :-1]),
    np.abs(pad[1:, :-1] - pad[:-1, :-1]),
    np.abs(pad[1:, 1:] - pad[:-1, :-1]),
    np.abs(pad[1:, :-1] - pad[:-1, 1:]),
  ]
  h = x.shape[0] // p
  rows = []
  for i in range(h):
    for j in range(h):
      cell = x[i * p : (i + 1) * p, j * p : (j + 1) * p].reshape(-1, 3)
      gr = [gg[i * p : (i + 1) * p, j * p : (j + 1) * p].mean() for gg in grads]
      rows.append(np.concatenate([cell.mean(0), cell.std(0), gr]))
  f = np.array(rows)
  f = f - f.mean(0)
  return f / (f.std(0) + 1e-6)


def test_handcrafted_vfm_matches_numpy(data):
  got = np.asarray(
    jax.jit(S.handcrafted_vfm, static_argnums=1)(data.images[:2], 8)
  )
  for b in range(2):
    np.testing.assert_allclose(
      got[b], _np_vfm(data.images[b], 8), rtol=1e-3, atol=1e-3
    )


@pytest.fixture(scope="module")
def one_block():
  return tiny_clip()


@pytest.fixture(scope="module")
def readouts(one_block):
  """All four readouts of ``x`` and of ``x`` with patch 0 changed, in one
  compilation."""
  x = RNG.random((1, _tiny.SIZE, _tiny.SIZE, 3)).astype(F32)
  y = x.copy()
  y[0, : _tiny.PATCH, : _tiny.PATCH] += 0.5  # patch 0 changes
  n = (_tiny.SIZE // _tiny.PATCH) ** 2
  eye = np.eye(n, dtype=F32)[None].repeat(2, 0)

  @jax.jit
  def f(im):
    return {
      r: S.dense_features(one_block, im, readout=r)
      for r in ("maskclip", "plain", "sclip")
    } | {
      "proxy": S.dense_features(one_block, im, readout="proxy", affinity=eye)
    }

  return jax.tree.map(np.asarray, f(np.concatenate([x, y])))


def test_maskclip_readout_is_local_and_proxy_with_identity_is_maskclip(
  readouts,
):
  # with one block, the tokens entering it are patch embeddings: MaskCLIP's
  # value readout of a patch depends on that patch alone, the plain readout
  # mixes all patches
  m, p = readouts["maskclip"], readouts["plain"]
  assert np.abs(m[0, 0] - m[1, 0]).max() > 1e-3
  np.testing.assert_allclose(m[0, 1:], m[1, 1:], atol=1e-6)
  assert np.abs(p[0, 1:] - p[1, 1:]).max() > 1e-4
  np.testing.assert_allclose(readouts["proxy"], m, rtol=1e-5, atol=1e-6)
  sc = readouts["sclip"]
  assert sc.shape == (2, 4, _tiny.EMBED) and np.abs(sc - m).max() > 1e-4


def test_text_encoder_ignores_padding(one_block):
  t = S.tokenize(["a red circle"])
  enc = jax.jit(lambda x: one_block.text(x))
  short = enc(jnp.asarray(t[:, :5]))
  full = enc(jnp.asarray(t))
  np.testing.assert_allclose(short, full, atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(full, axis=-1), 1.0, rtol=1e-5)


def _np_miou(pred, tgt, C, ignore):
  ious = []
  for c in range(C):
    keep = tgt != ignore
    p, g = (pred == c) & keep, (tgt == c) & keep
    u = (p | g).sum()
    if u:
      ious.append((p & g).sum() / u)
  return np.mean(ious)


def test_segmentation_miou_matches_brute_force():
  pred = RNG.integers(0, 5, (3, 7, 7))
  tgt = RNG.integers(-1, 4, (3, 7, 7))  # class 4 only predicted; -1 ignored
  miou_of = jax.jit(S.segmentation_miou, static_argnums=2)
  miou, iou = miou_of(pred.astype(np.int32), tgt.astype(np.int32), 6)
  np.testing.assert_allclose(miou, _np_miou(pred, tgt, 6, -1), rtol=1e-6)
  assert np.isnan(iou[5]) and float(iou[4]) == 0.0
  m, _ = miou_of(tgt.clip(0).astype(np.int32), tgt.clip(0).astype(np.int32), 6)
  assert float(m) == 1.0


def test_segment_upsamples_then_argmaxes():
  # class 0 on the left patch column, class 1 on the right: pixels split at the
  # middle
  f = np.zeros((1, 4, 2), F32)
  f[0, [0, 2], 0] = 1.0
  f[0, [1, 3], 1] = 1.0
  seg = np.asarray(
    jax.jit(S.segment, static_argnums=2)(f, np.eye(2, dtype=F32), (8, 8))
  )
  assert np.all(seg[0, :, :4] == 0) and np.all(seg[0, :, 4:] == 1)
  up = np.asarray(
    jax.jit(S.upsample_logits, static_argnums=1)(
      np.ones((1, 4, 3), F32), (8, 8)
    )
  )
  np.testing.assert_allclose(up, 1.0)


def test_region_embeddings_and_drift():
  f = RNG.normal(size=(2, 16, 5)).astype(F32)
  boxes = np.array(
    [[[0, 0, 16, 16], [4, 4, 12, 8]], [[8, 0, 16, 8], [1, 1, 3, 3]]], F32
  )
  z = np.asarray(
    jax.jit(S.region_embeddings, static_argnums=2)(f, boxes, (16, 16))
  )
  roi = jax.jit(lambda m, b: S.roi_align(m, b, image_size=(16, 16)))
  for b in range(2):
    for k in range(2):
      r = np.asarray(roi(f[b].reshape(4, 4, 5), boxes[b, k]))
      ref = r.mean((0, 1))
      np.testing.assert_allclose(
        z[b, k], ref / np.linalg.norm(ref), rtol=1e-4, atol=1e-5
      )
  a, c = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
  cos = (
    (a * c).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(c, axis=-1)
  )
  drift = jax.jit(S.feature_drift)
  np.testing.assert_allclose(
    drift(a.astype(F32), c.astype(F32)), np.mean(1 - cos), rtol=1e-5
  )
  m = np.array([True, False, True, False])
  np.testing.assert_allclose(
    drift(a.astype(F32), c.astype(F32), m), np.mean((1 - cos)[m]), rtol=1e-5
  )


def test_trivial_baselines_are_input_independent_predictors():
  data = {
    "test_target": np.array([[0, 0, -1], [1, 2, 0]], np.int32),
    "test_valid": np.array([[True, True], [True, False]]),
    "test_labels": np.array([[0, 1], [0, 3]], np.int32),
  }
  t = S.trivial_baselines(data, 0, 4)
  # class 0 everywhere: IoU 3/5, 3 classes
  assert t["majority_miou"] == pytest.approx(3 / 5 / 3)
  # labels 0, 1, 0 of valid objects
  assert t["majority_region_acc"] == pytest.approx(2 / 3)
  assert t["chance_region_acc"] == 0.25 and t["constant_feature_drift"] == 0.0
  # uniform random: the same draw scored by hand (classes with a non-empty union
  # only)
  pred = np.random.default_rng(0).integers(0, 4, (2, 3))
  keep = data["test_target"] >= 0
  ious = [
    ((pred == c) & (data["test_target"] == c) & keep).sum()
    / (((pred == c) | (data["test_target"] == c)) & keep).sum()
    for c in range(4)
    if (((pred == c) | (data["test_target"] == c)) & keep).any()
  ]
  assert t["uniform_random_miou"] == pytest.approx(np.mean(ious))
