"""RoIAlign and context views: the region machinery of CISC.

Conventions (fixed here, tested on constant and linear maps where the answer is
analytic):

* A box is ``(x0, y0, x1, y1)`` in continuous coordinates; pixel (or feature
  cell) ``i`` covers ``[i, i + 1)`` and its value sits at its centre ``i + 0.5``
  (the "half-pixel" convention, torchvision's ``aligned=True``).
* ``coords='pixel'``: the box is in image pixels and ``image_size`` maps it onto
  the ``H x W`` feature map (``x · W / image_w``); ``coords='patch'``: the box
  is in feature-cell units.
* Bin ``(i, j)`` of an ``oh x ow`` output averages ``sampling x sampling``
  bilinear samples at ``y0 + (i + (s + 0.5) / sampling) · bin_h`` (and the same
  in x). Samples outside the map are clamped to the border cells (replicate
  padding).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def _bilinear(img: jax.Array, ys: jax.Array, xs: jax.Array) -> jax.Array:
  """Bilinear samples of ``img [H, W, C]`` at continuous coordinates (centre of
  cell i = i+0.5).

  ``ys``, ``xs``: same shape ``S``; returns ``[*S, C]``. Border: replicate.
  """
  H, W = img.shape[:2]
  y = jnp.clip(ys - 0.5, 0.0, H - 1.0)
  x = jnp.clip(xs - 0.5, 0.0, W - 1.0)
  y0 = jnp.clip(jnp.floor(y), 0, max(H - 2, 0)).astype(jnp.int32)
  x0 = jnp.clip(jnp.floor(x), 0, max(W - 2, 0)).astype(jnp.int32)
  y1 = jnp.minimum(y0 + 1, H - 1)
  x1 = jnp.minimum(x0 + 1, W - 1)
  wy = (y - y0)[..., None]
  wx = (x - x0)[..., None]
  top = img[y0, x0] * (1 - wx) + img[y0, x1] * wx
  bot = img[y1, x0] * (1 - wx) + img[y1, x1] * wx
  return top * (1 - wy) + bot * wy


def _box_flag(box, validate=True):
  if not validate:
    return None
  ok = (
    jnp.all(jnp.isfinite(box))
    & jnp.all(box[..., 2] >= box[..., 0])
    & jnp.all(box[..., 3] >= box[..., 1])
  )
  return V.debug_check_values(
    ok, "box must be finite (x0, y0, x1, y1) with x1 >= x0, y1 >= y0"
  )


def roi_align(
  feat: jax.Array,
  box: jax.Array,
  *,
  out_size: tuple[int, int] = (2, 2),
  sampling: int = 2,
  coords: Literal["pixel", "patch"] = "pixel",
  image_size: tuple[int, int] | None = None,
  validate: bool = True,
) -> jax.Array:
  """RoIAlign of one feature map: bilinear samples averaged per output bin (see
  module doc).

  Args:
    feat: ``[H, W, D]`` float feature map.
    box: ``[4]`` or ``[K, 4]`` float boxes ``(x0, y0, x1, y1)``.
    out_size: ``(oh, ow)`` output bins (positive ints).
    sampling: samples per bin side (>= 1).
    coords: ``'pixel'`` (needs ``image_size``) or ``'patch'``.
    image_size: ``(image_h, image_w)`` in pixels, for ``coords='pixel'``.
    validate: check boxes (finite, non-negative extent); eagerly ValueError,
      under jit NaN.

  Returns:
    ``[oh, ow, D]`` (or ``[K, oh, ow, D]``) float32 pooled features.

  Example:
    >>> roi_align(jnp.ones((8, 8, 3)), jnp.array([0., 0., 16., 16.]), image_size=(32, 32))
  """
  feat = V.check_array(feat, "feat", ndim=3, dtype="float", nonempty=True)
  box = V.check_array(box, "box", ndim=(1, 2), dtype="real")
  if box.shape[-1] != 4:
    raise ValueError(
      f"box must have shape [4] or [K, 4] (x0, y0, x1, y1), got {box.shape}"
    )
  if not isinstance(out_size, (tuple, list)) or len(out_size) != 2:
    raise ValueError(f"out_size must be a pair (oh, ow), got {out_size!r}")
  oh = V.check_int(out_size[0], "out_size[0]", min_value=1)
  ow = V.check_int(out_size[1], "out_size[1]", min_value=1)
  sampling = V.check_int(sampling, "sampling", min_value=1)
  H, W, _ = feat.shape
  if coords == "pixel":
    if image_size is None or len(image_size) != 2:
      raise ValueError(
        "image_size must be given as (image_h, image_w) for coords='pixel'"
      )
    ih = V.check_int(image_size[0], "image_size[0]", min_value=1)
    iw = V.check_int(image_size[1], "image_size[1]", min_value=1)
    sy, sx = H / ih, W / iw
  elif coords == "patch":
    sy = sx = 1.0
  else:
    raise ValueError(
      f"coords must be one of ['pixel', 'patch'], got {coords!r}"
    )
  box = box.astype(jnp.float32)
  ok = _box_flag(box, validate)
  single = box.ndim == 1
  b = box[None] if single else box
  b = b * jnp.array([sx, sy, sx, sy], jnp.float32)
  f = (jnp.arange(sampling, dtype=jnp.float32) + 0.5) / sampling
  # [oh*s] in bin units
  gy = (jnp.arange(oh, dtype=jnp.float32)[:, None] + f[None]).reshape(-1)
  gx = (jnp.arange(ow, dtype=jnp.float32)[:, None] + f[None]).reshape(-1)
  ys = b[:, 1:2] + gy[None] * ((b[:, 3] - b[:, 1]) / oh)[:, None]  # [K, oh*s]
  xs = b[:, 0:1] + gx[None] * ((b[:, 2] - b[:, 0]) / ow)[:, None]
  Y = jnp.broadcast_to(ys[:, :, None], (b.shape[0], ys.shape[1], xs.shape[1]))
  X = jnp.broadcast_to(xs[:, None, :], Y.shape)
  samples = _bilinear(feat.astype(jnp.float32), Y, X)  # [K, oh*s, ow*s, D]
  K, D = b.shape[0], feat.shape[-1]
  out = samples.reshape(K, oh, sampling, ow, sampling, D).mean((2, 4))
  out = out[0] if single else out
  return V.poison_floats(out, ok)


def make_context_views(
  key: jax.Array,
  image: jax.Array,
  box: jax.Array,
  *,
  n_views: int,
  scales: tuple[float, float] = (1.0, 3.0),
  backgrounds: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
  """``n_views`` views of one anchor box under different context (CISC view
  generation).

  Reconstruction. View k: a square window of side ``σ_k · max(box_w, box_h)``
  (σ_k uniform in ``scales``, clipped to the image side) placed uniformly at
  random among positions that contain the box (and stay inside the image when
  possible), resampled bilinearly to the image size. With ``backgrounds``, view
  k first pastes the box's pixels (pixel centres inside the box) onto
  ``backgrounds[k]``: the same object region, another image's context.

  Args:
    key: a typed PRNG key.
    image: ``[S, S, 3]`` float image.
    box: ``[4]`` float pixel box ``(x0, y0, x1, y1)`` inside the image.
    n_views: V >= 1.
    scales: ``(lo, hi)`` window-to-box ratio range, ``1 <= lo <= hi``.
    backgrounds: optional ``[V, S, S, 3]`` float images (the new contexts).

  Returns:
    ``(views [V, S, S, 3] float32, boxes [V, 4] float32)``: the box in each
    view's pixels.
  """
  image = V.check_array(image, "image", ndim=3, dtype="float")
  S = image.shape[0]
  if image.shape[1] != S or image.shape[2] != 3:
    raise ValueError(
      f"image must have shape [S, S, 3] (square RGB), got {image.shape}"
    )
  box = V.check_array(box, "box", shape=(4,), dtype="real").astype(jnp.float32)
  n_views = V.check_int(n_views, "n_views", min_value=1)
  if not isinstance(scales, (tuple, list)) or len(scales) != 2:
    raise ValueError(f"scales must be a pair (lo, hi), got {scales!r}")
  lo = V.check_float(scales[0], "scales[0]", min_value=1.0)
  hi = V.check_float(scales[1], "scales[1]", min_value=lo)
  if backgrounds is not None:
    backgrounds = V.check_array(
      backgrounds, "backgrounds", shape=(n_views, S, S, 3), dtype=("float")
    )
  ok = _box_flag(box)
  k_s, k_x, k_y = jax.random.split(key, 3)
  sigma = jax.random.uniform(k_s, (n_views,), minval=lo, maxval=hi)
  extent = jnp.maximum(jnp.maximum(box[2] - box[0], box[3] - box[1]), 1.0)
  side = jnp.clip(sigma * extent, extent, float(S))  # [V]

  def origin(k, a0, a1):
    lo_o = jnp.maximum(a1 - side, 0.0)
    hi_o = jnp.minimum(a0, S - side)
    hi_o = jnp.maximum(hi_o, lo_o)
    return lo_o + jax.random.uniform(k, (n_views,)) * (hi_o - lo_o)

  ox, oy = origin(k_x, box[0], box[2]), origin(k_y, box[1], box[3])
  src = jnp.broadcast_to(image.astype(jnp.float32), (n_views, S, S, 3))
  if backgrounds is not None:
    c = jnp.arange(S, dtype=jnp.float32) + 0.5
    inside = (
      (c[:, None] >= box[1])
      & (c[:, None] < box[3])
      & (c[None] >= box[0])
      & (c[None] < box[2])
    )[..., None]
    src = jnp.where(inside, src, backgrounds.astype(jnp.float32))
  # [S] view pixel centres in [0, 1]
  t = (jnp.arange(S, dtype=jnp.float32) + 0.5) / S

  def one(img, o_x, o_y, sd):
    ys = o_y + t * sd
    xs = o_x + t * sd
    Y = jnp.broadcast_to(ys[:, None], (S, S))
    X = jnp.broadcast_to(xs[None, :], (S, S))
    return _bilinear(img, Y, X)

  views = jax.vmap(one)(src, ox, oy, side)
  scale = S / side
  boxes = jnp.stack(
    [
      (box[0] - ox) * scale,
      (box[1] - oy) * scale,
      (box[2] - ox) * scale,
      (box[3] - oy) * scale,
    ],
    axis=-1,
  )
  return V.poison_floats((views, boxes), ok)
