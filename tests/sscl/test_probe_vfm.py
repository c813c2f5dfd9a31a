"""The grouping-only VFM proxy, colour labels, patch labels and the linear probe
vs NumPy."""

import jax
import numpy as np
import pytest

import jaxpapers.sscl as S


def test_instance_vfm_is_the_region_histogram_of_each_patch():
  m = np.zeros((1, 4, 4), np.int32)
  m[0, :2, :2] = 1  # patch 0: object slot 0 only
  m[0, 2:, 2:] = 2
  m[0, 3, 3] = 0  # patch 3: 3 pixels of slot 1, one background
  g = np.asarray(S.instance_vfm(m, 2, 2))
  assert g.shape == (1, 4, 3)
  np.testing.assert_allclose(g[0, 0], [0, 1, 0])
  np.testing.assert_allclose(g[0, 1], [1, 0, 0])
  np.testing.assert_allclose(g[0, 3], [0.25, 0, 0.75])
  # patches of one object have cosine 1, of different objects 0, whatever their
  # class [1, 8, 8]: each region now spans patches
  big = np.kron(m, np.ones((1, 2, 2), np.int32))
  g = np.asarray(S.instance_vfm(big, 2, 2))[0]
  gn = g / np.linalg.norm(g, axis=-1, keepdims=True)
  cos = gn @ gn.T
  assert cos[0, 1] == pytest.approx(1.0) and cos[0, 2] == pytest.approx(0.0)
  with pytest.raises(ValueError, match="divisible by the patch size"):
    S.instance_vfm(np.zeros((1, 5, 5), np.int32), 2, 2)


def test_label_maps_and_colour_prompts():
  d = S.render_shapes_world(3, 4)
  pix, obj = S.label_maps(d, "colour")
  np.testing.assert_array_equal(obj, d.colours)
  for i in range(4):
    for k in range(S.MAX_OBJECTS):
      if d.valid[i, k]:
        assert np.all(pix[i][d.instance_map[i] == k + 1] == d.colours[i, k])
  assert np.all(pix[d.instance_map == 0] == -1)
  shape_pix, _ = S.label_maps(d, "shape")
  np.testing.assert_array_equal(
    shape_pix, np.where(d.class_map > 0, d.class_map - 1, -1)
  )
  assert S.class_prompts("colour").shape == (6, S.MAX_LEN)
  np.testing.assert_array_equal(S.class_prompts(), S.class_prompts("shape"))
  with pytest.raises(ValueError, match="kind must be one of"):
    S.class_prompts("size")


def test_patch_labels_read_the_centre_pixel():
  m = np.arange(64, dtype=np.int32).reshape(1, 8, 8)
  got = np.asarray(S.patch_labels(m, 4))
  np.testing.assert_array_equal(
    got, [[m[0, 2, 2], m[0, 2, 6], m[0, 6, 2], m[0, 6, 6]]]
  )


def test_linear_probe_matches_numpy_ridge_and_ignores_unlabelled_rows():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((60, 5)).astype(np.float32)
  y = rng.integers(0, 3, 60).astype(np.int32)
  y[:10] = -1
  xt = rng.standard_normal((40, 5)).astype(np.float32)
  yt = rng.integers(0, 3, 40).astype(np.int32)
  yt[:5] = -1
  keep = y >= 0
  xb = np.concatenate([x[keep], np.ones((keep.sum(), 1))], 1).astype(np.float64)
  W = np.linalg.solve(xb.T @ xb + 0.1 * np.eye(6), xb.T @ np.eye(3)[y[keep]])
  pred = np.argmax(np.concatenate([xt, np.ones((40, 1))], 1) @ W, -1)
  want = np.mean(pred[yt >= 0] == yt[yt >= 0])
  # one compilation for both cases (same shapes)
  probe = jax.jit(
    lambda a, b, c, d: S.linear_probe_accuracy(a, b, c, d, 3, ridge=0.1)
  )
  got = float(probe(x, y, xt, yt))
  assert got == pytest.approx(want, abs=1e-6)
  # separable features (the class one-hot in the first 3 of 5 columns): a
  # perfect probe
  onehot = np.eye(3, 5, dtype=np.float32)
  assert (
    float(probe(onehot[np.maximum(y, 0)], y, onehot[np.maximum(yt, 0)], yt))
    == 1
  )
