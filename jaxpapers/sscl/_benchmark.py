"""The shapes-world benchmark: its arrays and the one protocol every model is
read with.

:func:`benchmark_data` renders the training and test images with everything the
experiment reads (context views of every test object, the linear probes' patch
labels); :func:`make_evaluate` is the evaluation: MaskCLIP readout, logit scale
``s``, bilinear upsampling, no post-processing; foreground mIoU, region
classification with GT boxes in context and in the context view, the feature
drift between the two and, for a CLIP model, the training-free readouts and
linear probes of its frozen dense features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers.core import validation as V
from jaxpapers.sscl._affinity import refine_logits, vfm_affinity
from jaxpapers.sscl._eval import (
  feature_drift,
  linear_probe_accuracy,
  patch_labels,
  region_embeddings,
  segment,
  segmentation_miou,
  upsample_logits,
)
from jaxpapers.sscl._losses import SSCLConfig, patch_text_logits
from jaxpapers.sscl._models import handcrafted_vfm, instance_vfm
from jaxpapers.sscl._roi import make_context_views
from jaxpapers.sscl._shapes import (
  CLASS_SETS,
  COLOURS,
  MAX_OBJECTS,
  SHAPES,
  class_prompts,
  label_maps,
  render_shapes_world,
)

VFMS = ("handcrafted", "instance")


def _check_choice(value: str, name: str, allowed: tuple[str, ...]) -> str:
  if value not in allowed:
    raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
  return value


def num_classes(classes: str) -> int:
  """The number of segmentation classes of a class set.

  Args:
    classes: ``"shape"`` or ``"colour"``.

  Returns:
    4 shapes or 6 colours.
  """
  _check_choice(classes, "classes", CLASS_SETS)
  return len(SHAPES if classes == "shape" else COLOURS)


def vfm_features(
  vfm: str, patch: int, images: jax.Array, instance: jax.Array
) -> jax.Array:
  """The frozen "VFM" proxy's patch features.

  Args:
    vfm: ``"instance"`` (grouping only: the share of each object per patch) or
      ``"handcrafted"`` (colour and edge statistics).
    patch: the patch size in pixels.
    images: uint8 ``[B, S, S, 3]``.
    instance: int ``[B, S, S]`` instance maps (read by ``"instance"`` only).

  Returns:
    ``[B, N, D']`` features.
  """
  if _check_choice(vfm, "vfm", VFMS) == "instance":
    return instance_vfm(instance, patch, MAX_OBJECTS)
  return handcrafted_vfm(images, patch)


def trivial_baselines(
  data: dict, seed: int, num_classes: int
) -> dict[str, float]:
  """Input-independent predictors on the benchmark's test set and metrics
  (host-side NumPy).

  Args:
    data: ``test_target`` int [n, S, S] (-1: ignored pixel), ``test_valid`` bool
      [n, K] and ``test_labels`` int [n, K] (:func:`benchmark_data`).
    seed: the seed of the uniform random segmentation.
    num_classes: C.

  Returns:
    ``majority_miou`` (the most frequent foreground class everywhere) and
    ``uniform_random_miou`` (a class drawn uniformly per pixel), mIoU as in
    :func:`segmentation_miou` (mean over the classes with a non-empty union);
    ``majority_region_acc`` (the most frequent object class),
    ``chance_region_acc`` = 1 / C and ``constant_feature_drift`` = 0 (a constant
    feature map never drifts).
  """
  C = V.check_int(num_classes, "num_classes", min_value=1)
  tgt = np.asarray(data["test_target"])
  labels, valid = (
    np.asarray(data["test_labels"]),
    np.asarray(data["test_valid"], bool),
  )
  if labels.shape != valid.shape:
    raise ValueError(
      f"test_labels must have test_valid's shape {valid.shape}, "
      f"got {labels.shape}"
    )
  keep = tgt >= 0

  def miou(pred):
    ious = []
    for c in range(C):
      p, g = (pred == c) & keep, (tgt == c) & keep
      if (p | g).any():
        ious.append((p & g).sum() / (p | g).sum())
    return float(np.mean(ious))

  counts = np.bincount(tgt[keep], minlength=C)
  out = {"majority_miou": miou(np.full_like(tgt, counts.argmax()))}
  out["uniform_random_miou"] = miou(
    np.random.default_rng(seed).integers(0, C, tgt.shape)
  )
  obj_counts = np.bincount(labels[valid], minlength=C)
  out["majority_region_acc"] = float(obj_counts.max() / obj_counts.sum())
  out["chance_region_acc"] = 1.0 / C
  out["constant_feature_drift"] = 0.0
  return out


def benchmark_data(
  seed: int,
  *,
  n_train: int,
  n_test: int,
  size: int,
  patch: int,
  classes: str,
  probe_images: int,
) -> dict[str, np.ndarray]:
  """Training and test images of the shapes world and everything the experiment
  reads.

  For every test object, one deterministic context view: its box pasted onto
  another test image's background, in a window 2-3x the box. Patch labels of
  both class sets on ``probe_images`` training images and every test image feed
  the linear probes.

  Args:
    seed: base seed (training images ``seed + 1``, test ``seed + 2``, views
      ``seed + 3``).
    n_train, n_test: image counts.
    size: S, the image side in pixels.
    patch: the patch size in pixels.
    classes: the evaluation class set, ``"shape"`` or ``"colour"``.
    probe_images: training images whose patches fit the probes.

  Returns:
    numpy arrays keyed by name: ``train_images`` uint8 [n_train, S, S, 3],
    ``test_views`` uint8 [n_test, K, S, S, 3], ``test_view_boxes``
    [n_test, K, 4], ``test_target`` [n_test, S, S], ``prompts`` [C, L], ... (K =
    ``MAX_OBJECTS``).
  """
  _check_choice(classes, "classes", CLASS_SETS)
  V.check_int(probe_images, "probe_images", min_value=1)
  tr = render_shapes_world(seed + 1, n_train, size=size)
  te = render_shapes_world(seed + 2, n_test, size=size)
  K = MAX_OBJECTS
  imgs = jnp.asarray(te.images, jnp.float32) / 255.0
  bgs = jnp.roll(jnp.asarray(te.backgrounds, jnp.float32) / 255.0, 1, axis=0)
  keys = jax.random.split(jax.random.key(seed + 3), n_test * K).reshape(
    n_test, K
  )

  def views_of(img, bg, boxes, ks):
    def one(box, k):
      v, b = make_context_views(
        k, img, box, n_views=1, scales=(2.0, 3.0), backgrounds=bg[None]
      )
      return v[0], b[0]

    return jax.vmap(one)(boxes, ks)

  safe = np.where(
    te.valid[..., None], te.boxes, np.array([0, 0, 8, 8], np.float32)
  )
  views, vboxes = jax.jit(jax.vmap(views_of))(
    imgs, bgs, jnp.asarray(safe), keys
  )
  fg_target, obj_labels = label_maps(te, classes)
  probe = {}
  n_probe = min(probe_images, n_train)
  for kind in CLASS_SETS:
    maps = {
      "train": label_maps(tr, kind)[0][:n_probe],
      "test": label_maps(te, kind)[0],
    }
    for split, m in maps.items():
      probe[f"probe_{split}_{kind}"] = np.asarray(
        patch_labels(jnp.asarray(m), patch)
      )
  return {
    **probe,
    "train_instance": tr.instance_map.astype(np.int32),
    "test_instance": te.instance_map.astype(np.int32),
    "train_images": tr.images,
    "train_bg": tr.backgrounds,
    "train_boxes": np.where(tr.valid[..., None], tr.boxes, 0).astype(
      np.float32
    ),
    "train_valid": tr.valid,
    "train_captions": tr.captions,
    "test_images": te.images,
    "test_target": fg_target,
    "test_boxes": safe.astype(np.float32),
    "test_valid": te.valid,
    "test_labels": np.maximum(obj_labels, 0).astype(np.int32),
    # [n, K, S, S, 3]
    "test_views": np.round(np.asarray(views) * 255).astype(np.uint8),
    "test_view_boxes": np.asarray(vboxes, np.float32),
    "prompts": class_prompts(classes),
  }


def _training_free(
  m, dense, T, data, *, size, patch, classes, vfm, config
) -> dict:
  """A CLIP model's training-free readouts and the linear probes of its dense
  features."""
  img_size = (size, size)
  C, tgt, imgs = num_classes(classes), data["test_target"], data["test_images"]

  def miou(feats):
    seg = segment(feats, T, img_size, logit_scale=config.logit_scale)
    return segmentation_miou(seg, tgt, C)[0]

  v = vfm_features(vfm, patch, imgs, data["test_instance"])
  A = vfm_affinity(
    v, gamma=config.gamma, threshold=config.threshold, validate=False
  )
  L = patch_text_logits(dense, T, logit_scale=config.logit_scale)

  def refined_miou(A):
    R = refine_logits(
      L, A, alpha=config.alpha, steps=config.steps, validate=False
    )
    return segmentation_miou(
      jnp.argmax(upsample_logits(R, img_size), -1), tgt, C
    )[0]

  out = {"miou_refine": refined_miou(A)}
  # placebo: the same refinement with the next test image's affinity
  out["miou_refine_placebo"] = refined_miou(jnp.roll(A, 1, axis=0))
  out["miou_proxy"] = miou(m.image.dense(imgs, "proxy", A))
  out["miou_sclip"] = miou(m.image.dense(imgs, "sclip"))
  n_probe = data["probe_train_shape"].shape[0]
  ftr = m.image.dense(data["train_images"][:n_probe], "maskclip")
  for kind in CLASS_SETS:
    out[f"probe_acc_{kind}"] = linear_probe_accuracy(
      ftr.reshape(-1, ftr.shape[-1]),
      data[f"probe_train_{kind}"].reshape(-1),
      dense.reshape(-1, dense.shape[-1]),
      data[f"probe_test_{kind}"].reshape(-1),
      num_classes(kind),
    )
  return out


def make_evaluate(
  graphdef: Any,
  *,
  size: int,
  patch: int,
  classes: str,
  vfm: str,
  config: SSCLConfig,
) -> Callable[..., dict]:
  """The benchmark's evaluation of a :class:`TinyCLIP`'s parameters, traceable
  under jit.

  Args:
    graphdef: the model's graph (``nnx.split(model)[0]``).
    size: S, the image side in pixels.
    patch: the patch size in pixels.
    classes: the evaluation class set, ``"shape"`` or ``"colour"``.
    vfm: the "VFM" proxy of the refinement (:func:`vfm_features`).
    config: ``logit_scale`` and the refinement's ``gamma``, ``threshold``,
      ``alpha``, ``steps``.

  Returns:
    ``evaluate(params, data, training_free) -> {metric: scalar}``: ``miou``
    (foreground), ``region_acc`` (GT boxes in context), ``region_acc_ctx`` (in
    the context view) and ``drift`` between the two; with ``training_free`` also
    ``miou_refine``, ``miou_refine_placebo``, ``miou_proxy``, ``miou_sclip`` and
    ``probe_acc_<class set>``.
  """
  _check_choice(vfm, "vfm", VFMS)
  size, patch = (
    V.check_int(size, "size", min_value=1),
    V.check_int(patch, "patch", min_value=1),
  )
  img_size, Sz, C = (size, size), size, num_classes(classes)

  def evaluate(params, data, training_free: bool):
    m = nnx.merge(graphdef, params)
    T = m.text(data["prompts"])  # [C, E]
    dense = m.image.dense(data["test_images"], "maskclip")
    seg = segment(dense, T, img_size, logit_scale=config.logit_scale)
    out = {"miou": segmentation_miou(seg, data["test_target"], C)[0]}
    valid = data["test_valid"]
    z_in = region_embeddings(dense, data["test_boxes"], img_size)  # [n, K, E]
    # [n K, N, E]
    dv = m.image.dense(data["test_views"].reshape(-1, Sz, Sz, 3), "maskclip")
    vb = data["test_view_boxes"].reshape(-1, 1, 4)
    z_ctx = region_embeddings(dv, vb, img_size).reshape(z_in.shape)
    Tn = T / jnp.linalg.norm(T, axis=-1, keepdims=True)

    def acc(z):
      hit = jnp.argmax(z @ Tn.T, -1) == data["test_labels"]
      return jnp.sum(hit & valid) / jnp.sum(valid)

    out["region_acc"] = acc(z_in)
    out["region_acc_ctx"] = acc(z_ctx)
    out["drift"] = feature_drift(z_in, z_ctx, valid)
    if training_free:
      kw = dict(size=size, patch=patch, classes=classes, vfm=vfm, config=config)
      out.update(_training_free(m, dense, T, data, **kw))
    return out

  return evaluate
