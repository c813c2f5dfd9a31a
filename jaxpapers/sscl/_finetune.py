"""Fine-tuning a CLIP's dense readout with SSCL and its ablation arms
(reconstructed).

An arm is a weighting of the SSCL terms of :func:`sscl_loss` (``ARM_WEIGHTS``):
the keep term alone, a CLIPSelf-style control (the anchor in its own image, no
context views), CISC only, SGSR only, and SSCL. Every arm trains the image
tower's last block, ``ln_post`` and the projection (:func:`trainable_mask`,
:func:`masked_adam`); a frozen copy of the starting model is the teacher. The
arms of one seed draw the same batches, anchors and views from the same step key
(:func:`finetune_batch`), so their results are paired.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxpapers.core import validation as V
from jaxpapers.sscl._benchmark import VFMS, vfm_features
from jaxpapers.sscl._eval import region_embeddings
from jaxpapers.sscl._losses import (
  SSCLConfig,
  patch_text_logits,
  sgsr_targets,
  sscl_loss,
)
from jaxpapers.sscl._models import TinyCLIP
from jaxpapers.sscl._roi import make_context_views
from jaxpapers.sscl._shapes import MAX_OBJECTS

# The weight of each loss term (``LOSS_TERMS``) per arm; ``diverse`` = 0 keeps
# the anchor in its own image (no context views).
LOSS_TERMS = ("sgsr", "teacher", "infonce", "keep", "diverse")
ARM_WEIGHTS = {
  "keep_only": (0.0, 0.0, 0.0, 1.0, 1.0),
  "clipself": (0.0, 1.0, 0.0, 0.1, 0.0),
  "cisc_only": (0.0, 1.0, 0.5, 0.1, 1.0),
  "sgsr_only": (1.0, 0.0, 0.0, 0.1, 1.0),
  "sscl": (1.0, 1.0, 0.5, 0.1, 1.0),
}
ARMS = tuple(ARM_WEIGHTS)


def trainable_mask(params: Any, depth: int) -> Any:
  """Which leaves of a :class:`TinyCLIP` parameter tree fine-tuning moves.

  Args:
    params: the model's parameter tree (``nnx.split(model)[1]`` or its abstract
      shape).
    depth: the image tower's number of blocks.

  Returns:
    a bool tree like ``params``: True for the image tower's last block,
    ``ln_post`` and ``proj``.
  """

  depth = V.check_int(depth, "depth", min_value=1)

  def trainable(path, _):
    keys = [getattr(p, "key", getattr(p, "idx", None)) for p in path]
    if not keys or keys[0] != "image":
      return False
    if keys[1] in ("ln_post", "proj"):
      return True
    return keys[1] == "blocks" and keys[2] == depth - 1

  return jax.tree_util.tree_map_with_path(trainable, params)


def masked_adam(lr: float, mask: Any = None) -> optax.GradientTransformation:
  """Adam after clipping the global gradient norm to 1; with ``mask``, only True
  leaves move.

  The frozen leaves get ``set_to_zero``: ``optax.masked`` alone would pass their
  raw gradients through as updates, and ``apply_updates`` would then step them
  up the gradient.

  Args:
    lr: the learning rate.
    mask: None, or a bool tree like the params (:func:`trainable_mask`).

  Returns:
    the optax transformation.
  """
  V.check_float(lr, "lr", min_value=0.0, min_inclusive=False)
  opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))
  if mask is None:
    return opt
  labels = jax.tree.map(lambda m: "train" if m else "frozen", mask)
  return optax.multi_transform(
    {"train": opt, "frozen": optax.set_to_zero()}, labels
  )


def _f32(x):
  return x.astype(jnp.float32) / 255.0


def _unit(x):
  return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def finetune_batch(
  key: jax.Array,
  data: dict,
  *,
  batch: int,
  n_views: int,
  view_scales: tuple[float, float],
  diverse: jax.Array | float,
) -> dict:
  """One fine-tuning step's batch: anchors in ``batch`` training images and
  their views.

  Args:
    key: the step's key (the arms of one seed share it).
    data: ``train_images`` uint8 ``[n, S, S, 3]``, ``train_valid`` ``[n, K]``,
      ``train_boxes`` ``[n, K, 4]``, ``train_bg`` uint8 ``[n, S, S, 3]``.
    batch: B, the images per step.
    n_views: V, the context views per anchor.
    view_scales: the views' window range, in multiples of the box.
    diverse: 1 for context views (the anchor pasted on another image's
      background), 0 for the anchor in its own image V times (the CLIPSelf
      control).

  Returns:
    ``idx`` [B], ``imgs`` uint8 and ``fimgs`` float ``[B, S, S, 3]``, ``boxes``
    [B, 4], ``vkeys`` [B], ``views`` ``[B, V, S, S, 3]`` and ``vboxes``
    ``[B, V, 4]``.
  """
  V.check_int(batch, "batch", min_value=1)
  V.check_int(n_views, "n_views", min_value=1)
  if len(view_scales) != 2:
    raise ValueError(f"view_scales must be (min, max), got {view_scales!r}")
  Sz = data["train_images"].shape[1]
  k_idx, k_obj, k_view = jax.random.split(key, 3)
  idx = jax.random.randint(k_idx, (batch,), 0, data["train_images"].shape[0])
  imgs = data["train_images"][idx]
  valid = data["train_valid"][idx]  # [B, K]
  u = jax.random.uniform(k_obj, (batch, MAX_OBJECTS))
  obj = jnp.argmax(jnp.where(valid, u, -1.0), -1)
  boxes = data["train_boxes"][idx, obj]  # [B, 4] one anchor per image
  bgs = _f32(jnp.roll(data["train_bg"][idx], 1, axis=0))
  fimgs = _f32(imgs)
  vkeys = jax.random.split(k_view, batch)
  views, vboxes = jax.vmap(
    lambda kk, im, bx, bg: make_context_views(
      kk,
      im,
      bx,
      n_views=n_views,
      scales=view_scales,
      backgrounds=jnp.broadcast_to(bg, (n_views, Sz, Sz, 3)),
    )
  )(vkeys, fimgs, boxes, bgs)  # [B, V, S, S, 3], [B, V, 4]
  views = diverse * views + (1 - diverse) * fimgs[:, None]
  vboxes = diverse * vboxes + (1 - diverse) * boxes[:, None]
  return dict(
    idx=idx,
    imgs=imgs,
    fimgs=fimgs,
    boxes=boxes,
    vkeys=vkeys,
    views=views,
    vboxes=vboxes,
  )


def teacher_targets(
  teacher: TinyCLIP,
  data: dict,
  b: dict,
  *,
  vfm: str,
  patch: int,
  config: SSCLConfig,
) -> dict:
  """The frozen teacher's dense targets, global embeddings and tight-crop
  embeddings.

  Args:
    teacher: the frozen starting model.
    data: the benchmark's arrays (``prompts``, ``train_instance``).
    b: a batch of :func:`finetune_batch`.
    vfm: the "VFM" proxy, ``"instance"`` or ``"handcrafted"``.
    patch: the patch size in pixels.
    config: the SGSR settings.

  Returns:
    ``T`` [C, E] the prompts' embeddings, ``t_dense`` [B, N, E], ``targets``
    (:class:`SGSRTargets`) and ``teach`` = (global [B, E], tight crop [B, E]).
  """
  if vfm not in VFMS:
    raise ValueError(f"vfm must be one of {VFMS}, got {vfm!r}")
  T = jax.lax.stop_gradient(teacher.text(data["prompts"]))
  t_cls, t_dense = teacher.image.encode(b["fimgs"], "maskclip")
  crops, _ = jax.vmap(
    lambda kk, im, bx: make_context_views(
      kk, im, bx, n_views=1, scales=(1.0, 1.0)
    )
  )(b["vkeys"], b["fimgs"], b["boxes"])
  t_crop = teacher.image(crops[:, 0])
  v = vfm_features(vfm, patch, b["imgs"], data["train_instance"][b["idx"]])
  targets = sgsr_targets(t_dense, v, T, config)
  teach = jax.lax.stop_gradient((t_cls, t_crop))
  return {"T": T, "t_dense": t_dense, "targets": targets, "teach": teach}


def arm_loss(
  model: TinyCLIP, w: dict, b: dict, t: dict, *, config: SSCLConfig
) -> tuple[jax.Array, dict]:
  """An arm's weighted SSCL terms on one batch.

  Args:
    model: the student.
    w: the arm's weight per name of ``LOSS_TERMS``.
    b: a batch of :func:`finetune_batch`.
    t: the teacher's targets (:func:`teacher_targets`).
    config: the SSCL settings (``logit_scale`` scales the patch-text logits).

  Returns:
    ``(loss, terms)``: the scalar loss and the unweighted terms of
    :func:`sscl_loss` with two diagnostics (not optimised): ``dense_drift``
    (from the teacher's dense readout) and ``dense_spread`` (of the patches
    around their image mean; 0 for a constant readout).
  """
  missing = {"sgsr", "teacher", "infonce", "keep"} - set(w)
  if missing:
    raise ValueError(
      f"w must weight every loss term of LOSS_TERMS, missing {sorted(missing)}"
    )
  B, Vn, Sz = b["views"].shape[:3]
  s_cls, s_dense = model.image.encode(b["fimgs"], "maskclip")
  logits = patch_text_logits(s_dense, t["T"], logit_scale=config.logit_scale)
  dv = model.image.dense(b["views"].reshape(B * Vn, Sz, Sz, 3), "maskclip")
  vb = b["vboxes"].reshape(B * Vn, 1, 4)
  z = region_embeddings(dv, vb, (Sz, Sz)).reshape(B, Vn, -1)
  teach = t["teach"]
  _, terms = sscl_loss(
    logits, t["targets"], z, teach[1], s_cls, teach[0], config
  )
  total = (
    w["sgsr"] * terms["sgsr"]
    + w["teacher"] * terms["cisc_teacher"]
    + w["infonce"] * terms["cisc_infonce"]
    + w["keep"] * terms["keep"]
  )
  sd = jax.lax.stop_gradient(_unit(s_dense))
  diag = {
    "dense_drift": jnp.mean(1.0 - jnp.sum(sd * _unit(t["t_dense"]), -1)),
    "dense_spread": jnp.mean(
      1.0 - jnp.sum(sd * _unit(jnp.mean(sd, 1, keepdims=True)), -1)
    ),
  }
  return total, {**terms, **diag}
