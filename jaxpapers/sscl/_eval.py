"""Evaluation: zero-shot segmentation, mIoU, region embeddings and feature
drift.

Protocol (fixed here, stated in every config): patch-text logits ``s F̂ Tᵀ``
(s = 40) are upsampled bilinearly (``jax.image.resize``, half-pixel centres) to
the image resolution and arg-maxed; no sliding window, no PAMR, no background
threshold. mIoU is the mean over classes with a non-empty union of
``|P ∩ G| / |P ∪ G|``; pixels labelled ``ignore_index`` are left out (the
VOC20-style "objects only" protocol drops background pixels this way).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V
from jaxpapers.sscl._affinity import _l2
from jaxpapers.sscl._losses import patch_text_logits
from jaxpapers.sscl._roi import roi_align


def upsample_logits(
  patch_logits: jax.Array, image_size: tuple[int, int]
) -> jax.Array:
  """``[B, N, C]`` patch logits (row-major ``h x w`` grid, square) -> ``[B, H, W, C]`` pixels.

  Bilinear, half-pixel centres (``jax.image.resize``).

  Args:
    patch_logits: ``[B, N, C]`` float logits of ``N = h²`` patches in row-major order.
    image_size: ``(H, W)``, the output size in pixels (positive ints).

  Returns:
    ``[B, H, W, C]`` float32 upsampled logits.
  """
  x = V.check_array(
    patch_logits, "patch_logits", ndim=3, dtype="float", nonempty=True
  )
  B, N, C = x.shape
  h = int(round(N**0.5))
  if h * h != N:
    raise ValueError(
      f"patch_logits must have a square number of patches, got N={N}"
    )
  H = V.check_int(image_size[0], "image_size[0]", min_value=1)
  W = V.check_int(image_size[1], "image_size[1]", min_value=1)
  return jax.image.resize(
    x.reshape(B, h, h, C).astype(jnp.float32), (B, H, W, C), "bilinear"
  )


def segment(
  patch_features: jax.Array,
  text: jax.Array,
  image_size: tuple[int, int],
  *,
  logit_scale: float = 40.0,
) -> jax.Array:
  """Zero-shot segmentation: ``argmax_c upsample(s F̂ Tᵀ)``.

  Args:
    patch_features: ``[B, N, D]`` dense features (any readout).
    text: ``[C, D]`` class text embeddings.
    image_size: ``(H, W)`` output resolution.
    logit_scale: s (> 0).

  Returns:
    ``[B, H, W]`` int32 class indices in [0, C).
  """
  logits = patch_text_logits(patch_features, text, logit_scale=logit_scale)
  return jnp.argmax(upsample_logits(logits, image_size), -1).astype(jnp.int32)


def segmentation_miou(
  pred: jax.Array,
  target: jax.Array,
  num_classes: int,
  *,
  ignore_index: int = -1,
) -> tuple[jax.Array, jax.Array]:
  """Mean intersection-over-union over classes present in prediction or target.

  ``IoU_c = |{pred = c} ∩ {target = c}| / |{pred = c} ∪ {target = c}|`` over
  pixels with ``target != ignore_index``; ``mIoU = mean_c IoU_c`` over classes
  with a non-empty union.

  Args:
    pred: ``[...]`` int predicted classes in [0, num_classes).
    target: ``[...]`` int ground truth (same shape), in [0, num_classes) or
      ``ignore_index``.
    num_classes: C >= 1.
    ignore_index: label of pixels left out.

  Returns:
    ``(miou scalar, iou [C])`` float32; ``iou`` is NaN for classes with an empty
    union (and ``miou`` NaN when every union is empty). Under jit, labels out of
    range give NaN.
  """
  C = V.check_int(num_classes, "num_classes", min_value=1)
  pred = V.check_array(pred, "pred", dtype="int", nonempty=True)
  target = V.check_array(target, "target", shape=pred.shape, dtype="int")
  keep = target != ignore_index
  ok = V.all_flags(
    V.debug_check_values((pred >= 0) & (pred < C), f"pred must be in [0, {C})"),
    V.debug_check_values(
      ~keep | ((target >= 0) & (target < C)),
      f"target must be in [0, {C}) or ignore_index={ignore_index}",
    ),
  )
  cls = jnp.arange(C)
  P = (pred.reshape(-1)[:, None] == cls) & keep.reshape(-1)[:, None]
  G = (target.reshape(-1)[:, None] == cls) & keep.reshape(-1)[:, None]
  inter = jnp.sum(P & G, 0).astype(jnp.float32)
  union = jnp.sum(P | G, 0).astype(jnp.float32)
  iou = jnp.where(union > 0, inter / jnp.maximum(union, 1.0), jnp.nan)
  present = union > 0
  miou = jnp.sum(jnp.where(present, iou, 0.0)) / jnp.where(
    present.any(), present.sum(), jnp.nan
  )
  return V.poison_floats((miou, iou), ok)


def region_embeddings(
  patch_features: jax.Array,
  boxes: jax.Array,
  image_size: tuple[int, int],
  *,
  out_size: tuple[int, int] = (2, 2),
) -> jax.Array:
  """``z = normalise(mean-pool(RoIAlign(F, box)))`` for every box of every
  image.

  Args:
    patch_features: ``[B, N, D]`` dense features on a square ``h x h`` patch
      grid.
    boxes: ``[B, K, 4]`` pixel boxes ``(x0, y0, x1, y1)``.
    image_size: ``(H, W)`` of the images in pixels.
    out_size: RoIAlign bins before the mean pool.

  Returns:
    ``[B, K, D]`` float32 unit-norm region embeddings.
  """
  f = V.check_array(
    patch_features, "patch_features", ndim=3, dtype="float", nonempty=True
  )
  B, N, D = f.shape
  h = int(round(N**0.5))
  if h * h != N:
    raise ValueError(
      f"patch_features must have a square number of patches, got N={N}"
    )
  boxes = V.check_array(boxes, "boxes", shape=(B, None, 4), dtype="real")
  fm = f.reshape(B, h, h, D)
  img_h, img_w = image_size
  pooled = jax.vmap(
    lambda m, b: roi_align(
      m, b, out_size=out_size, image_size=(img_h, img_w), validate=False
    )
  )(fm, boxes)  # [B, K, oh, ow, D]
  return _l2(pooled.mean((2, 3)))


def feature_drift(
  z_a: jax.Array, z_b: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
  """Mean ``1 − cos(z_a, z_b)`` over paired region embeddings (the same object,
  two contexts).

  A constant feature map has drift 0: read drift beside region accuracy, never
  alone.

  Args:
    z_a, z_b: ``[..., D]`` paired embeddings.
    mask: optional ``[...]`` bool, pairs to average (default all).

  Returns:
    Scalar float32 (NaN when the mask is empty).
  """
  a = V.check_array(z_a, "z_a", dtype="float", nonempty=True)
  b = V.check_array(z_b, "z_b", shape=a.shape, dtype="float")
  d = 1.0 - jnp.sum(_l2(a.astype(jnp.float32)) * _l2(b.astype(jnp.float32)), -1)
  if mask is None:
    return d.mean()
  m = V.check_array(mask, "mask", shape=a.shape[:-1], dtype="bool")
  return jnp.sum(jnp.where(m, d, 0.0)) / jnp.where(m.any(), m.sum(), jnp.nan)


def patch_labels(label_map: jax.Array, patch: int) -> jax.Array:
  """The label at each patch's centre pixel (pixel ``(patch // 2, patch // 2)``
  of the cell).

  Args:
    label_map: ``[B, S, S]`` int pixel labels (any value, e.g. -1 for ignored
      pixels).
    patch: the patch side (>= 1), dividing S.

  Returns:
    ``[B, N]`` int32 labels, ``N = (S / patch)²`` row-major.
  """
  patch = V.check_int(patch, "patch", min_value=1)
  m = V.check_array(label_map, "label_map", ndim=3, dtype="int", nonempty=True)
  if m.shape[1] % patch or m.shape[2] % patch:
    raise ValueError(
      f"label_map must have sides divisible by the patch size {patch}, "
      f"got {m.shape}"
    )
  c = patch // 2
  return m[:, c::patch, c::patch].reshape(m.shape[0], -1).astype(jnp.int32)


def linear_probe_accuracy(
  train_x: jax.Array,
  train_y: jax.Array,
  test_x: jax.Array,
  test_y: jax.Array,
  num_classes: int,
  *,
  ridge: float = 1e-2,
) -> jax.Array:
  """Accuracy of a ridge-regression linear probe (one-hot targets, with bias) on
  frozen features.

  ``W = argmin ||[X 1] W - Y||² + ridge ||W||²`` over the training rows with a
  label in ``[0, C)`` (rows labelled ``-1`` are left out), then ``argmax [x 1]
  W`` on the test rows.

  Args:
    train_x: ``[M, D]`` float features; train_y: ``[M]`` int labels in ``[0,
      C)`` or -1.
    test_x: ``[M', D]`` float features; test_y: ``[M']`` int labels in ``[0,
      C)`` or -1.
    num_classes: C >= 2.
    ridge: the L2 penalty (>= 0) on the weights (the bias included).

  Returns:
    Scalar float32 accuracy over the labelled test rows (NaN when there are
    none).
  """
  C = V.check_int(num_classes, "num_classes", min_value=2)
  ridge = V.check_float(ridge, "ridge", min_value=0.0)
  x = V.check_array(train_x, "train_x", ndim=2, dtype="float", nonempty=True)
  y = V.check_array(train_y, "train_y", shape=(x.shape[0],), dtype="int")
  xt = V.check_array(
    test_x, "test_x", shape=(None, x.shape[1]), dtype="float", nonempty=True
  )
  yt = V.check_array(test_y, "test_y", shape=(xt.shape[0],), dtype="int")
  keep = (y >= 0) & (y < C)
  xb = (
    jnp.concatenate([x, jnp.ones_like(x[:, :1])], 1).astype(jnp.float32)
    * keep[:, None]
  )
  Y = (
    jax.nn.one_hot(jnp.where(keep, y, 0), C, dtype=jnp.float32) * keep[:, None]
  )
  d = xb.shape[1]
  W = jnp.linalg.solve(
    xb.T @ xb + ridge * jnp.eye(d, dtype=jnp.float32), xb.T @ Y
  )
  pred = jnp.argmax(jnp.concatenate([xt, jnp.ones_like(xt[:, :1])], 1) @ W, -1)
  test_keep = (yt >= 0) & (yt < C)
  hits = jnp.sum((pred == yt) & test_keep)
  return hits / jnp.where(test_keep.any(), test_keep.sum(), jnp.nan)
