"""RoIAlign and context views: analytic answers on constant and linear maps,
brute force."""

import jax
import numpy as np
import pytest

import jaxpapers.sscl as S

RNG = np.random.default_rng(1)
F32 = np.float32


def _np_bilinear(feat, y, x):
  H, W = feat.shape[:2]
  y, x = np.clip(y - 0.5, 0, H - 1), np.clip(x - 0.5, 0, W - 1)
  y0, x0 = min(int(np.floor(y)), H - 2), min(int(np.floor(x)), W - 2)
  wy, wx = y - y0, x - x0
  return (
    (1 - wy) * (1 - wx) * feat[y0, x0]
    + (1 - wy) * wx * feat[y0, x0 + 1]
    + wy * (1 - wx) * feat[y0 + 1, x0]
    + wy * wx * feat[y0 + 1, x0 + 1]
  )


def _np_roi(feat, box, oh, ow, s):
  x0, y0, x1, y1 = box
  out = np.zeros((oh, ow, feat.shape[-1]))
  bh, bw = (y1 - y0) / oh, (x1 - x0) / ow
  for i in range(oh):
    for j in range(ow):
      acc = 0
      for a in range(s):
        for b in range(s):
          acc = acc + _np_bilinear(
            feat, y0 + (i + (a + 0.5) / s) * bh, x0 + (j + (b + 0.5) / s) * bw
          )
      out[i, j] = acc / s**2
  return out


def test_roi_align_constant_and_linear_maps_are_analytic():
  H = W = 8
  yy, xx = np.mgrid[0:H, 0:W] + 0.5  # cell centres
  lin = np.stack([2 * yy + 1, -xx, np.ones_like(xx) * 3], -1).astype(F32)
  # patch units, interior: no clamping
  box = np.array([1.3, 2.1, 6.2, 5.7], F32)
  roi = jax.jit(
    lambda f, b: S.roi_align(
      f, b, out_size=(3, 2), sampling=2, coords=("patch")
    )
  )
  out = np.asarray(roi(lin, box))
  cy = 2.1 + (np.arange(3) + 0.5) * (5.7 - 2.1) / 3  # bin centres
  cx = 1.3 + (np.arange(2) + 0.5) * (6.2 - 1.3) / 2
  np.testing.assert_allclose(
    out[..., 0], 2 * cy[:, None] + 1 + 0 * cx, rtol=1e-5
  )
  np.testing.assert_allclose(
    out[..., 1], -cx[None] + 0 * cy[:, None], rtol=1e-5
  )
  np.testing.assert_allclose(out[..., 2], 3.0, rtol=1e-6)


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_roi_align_matches_brute_force_with_border_clamping_and_pixel_coords():
  feat = RNG.normal(size=(6, 6, 3))
  boxes = np.array(
    [[0.0, 0.0, 6.0, 6.0], [4.5, 0.2, 6.0, 2.0], [2.0, 3.0, 2.5, 3.5]]
  )
  out = np.asarray(
    S.roi_align(
      feat.astype(F32),
      boxes.astype(F32),
      out_size=(2, 3),
      sampling=3,
      coords=("patch"),
    )
  )
  for k, b in enumerate(boxes):
    np.testing.assert_allclose(
      out[k], _np_roi(feat, b, 2, 3, 3), rtol=1e-4, atol=1e-5
    )
  pix = np.asarray(
    S.roi_align(
      feat.astype(F32),
      (boxes * 4).astype(F32),
      out_size=(2, 3),
      sampling=3,
      coords="pixel",
      image_size=(24, 24),
    )
  )
  np.testing.assert_allclose(pix, out, rtol=1e-5, atol=1e-6)
  one = S.roi_align(
    feat.astype(F32),
    boxes[1].astype(F32),
    out_size=(2, 3),
    sampling=3,
    coords=("patch"),
  )
  np.testing.assert_allclose(one, out[1], rtol=1e-6)


def test_context_views_keep_the_anchor_region():
  S_ = 32
  yy, xx = np.mgrid[0:S_, 0:S_] + 0.5
  # linear: resampling exact
  img = np.stack([xx / S_, yy / S_, 0.5 + 0 * xx], -1).astype(F32)
  box = np.array([10.0, 12.0, 18.0, 17.0], F32)
  mk = jax.jit(S.make_context_views, static_argnames=("n_views", "scales"))
  views, boxes = mk(jax.random.key(3), img, box, n_views=5, scales=(1.2, 2.5))
  views, boxes = np.asarray(views), np.asarray(boxes)
  roi = jax.jit(lambda f, b: S.roi_align(f, b, out_size=(3, 3), coords="patch"))
  ref = roi(img, box)
  w = box[2] - box[0]
  for k in range(5):
    assert np.all(boxes[k] >= -1e-4) and np.all(boxes[k] <= S_ + 1e-4)
    got = roi(views[k], boxes[k])
    np.testing.assert_allclose(got, ref, atol=2e-3)
    # = S / side, side in [1.2, 2.5] x 8
    ratio = (boxes[k, 2] - boxes[k, 0]) / w
    assert S_ / (2.5 * 8) - 1e-4 <= ratio <= S_ / (1.2 * 8) + 1e-4
  assert np.ptp(boxes[:, 2] - boxes[:, 0]) > 0.5  # the scales vary


@pytest.mark.slow  # compiles for >5 s on 2 cores: kept out of the default suite
def test_context_views_paste_the_box_onto_new_backgrounds():
  S_ = 32
  img = np.full((S_, S_, 3), 0.75, F32)
  bgs = np.full((2, S_, S_, 3), 0.25, F32)
  box = np.array([8.0, 8.0, 20.0, 20.0], F32)
  views, boxes = S.make_context_views(
    jax.random.key(0), img, box, n_views=2, backgrounds=bgs, scales=(2.0, 2.5)
  )
  c = np.arange(S_) + 0.5
  for k in range(2):
    x0, y0, x1, y1 = np.asarray(boxes[k])
    inside = (
      (c[:, None] > y0 + 1.5)
      & (c[:, None] < y1 - 1.5)
      & (c[None] > x0 + 1.5)
      & (c[None] < x1 - 1.5)
    )
    outside = (
      (c[:, None] < y0 - 1.5)
      | (c[:, None] > y1 + 1.5)
      | (c[None] < x0 - 1.5)
      | (c[None] > x1 + 1.5)
    )
    v = np.asarray(views[k])[..., 0]
    np.testing.assert_allclose(v[inside], 0.75, atol=1e-5)
    np.testing.assert_allclose(v[outside], 0.25, atol=1e-5)
    assert inside.any() and outside.any()
