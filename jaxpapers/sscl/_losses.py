"""The SSCL objective: SGSR dense pseudo-label loss, CISC region consistency,
keep term.

Reconstruction from the abstract (no code or equations are public). Notation:
``F̂_s`` student dense features (row-normalised), ``T`` unit-norm class text
embeddings ``[C, D]``, ``s`` the logit scale, ``sg`` stop-gradient.

  L = λ_c L_CISC + λ_s L_SGSR + λ_keep (1 − cos(f_s^cls, sg f_t^cls))                 (SSCL)

SGSR targets (from :func:`jaxpapers.sscl.refine_logits`):
``q_i = softmax(R_i / τ_p)``, ``ŷ_i = argmax_c q_ic``,
``ω_i = 1[max_c q_ic > κ]`` and

  L_SGSR = Σ_i ω_i CE(softmax(s F̂_s,i Tᵀ), ŷ_i) / max(1, Σ_i ω_i)          (hard)
  L_SGSR = Σ_i ω_i KL(q_i ‖ softmax(s F̂_s,i Tᵀ)) / max(1, Σ_i ω_i)        (soft)

CISC on region embeddings ``z [A, V, D]`` (anchor a seen in V contexts),
normalised inside:

  center:  mean_{a,k} ‖ẑ_ak − sg(normalise(mean_k ẑ_ak))‖²
  infonce: −mean_{a,k} mean_{p ∈ P(a,k)} log( e^{ẑ_ak·ẑ_p/τ_c} / Σ_{j ≠ (a,k)} e^{ẑ_ak·ẑ_j/τ_c} )
           (P(a,k): the other views of anchors with the same id; negatives: other anchors)
  teacher: mean_{a,k} (1 − cos(ẑ_ak, sg t_a))    (CLIPSelf-style: t_a = frozen CLIP embedding
           of the tight crop of the anchor)
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V
from jaxpapers.sscl._affinity import _l2, refine_logits, vfm_affinity

CISC_MODES = ("center", "infonce", "teacher")


@dataclasses.dataclass(frozen=True)
class SSCLConfig:
  """Weights and options of :func:`sscl_loss` and :func:`sgsr_targets`
  (reconstructed defaults).

  Attributes:
    lambda_cisc, lambda_sgsr, lambda_keep: the weights λ_c, λ_s, λ_keep (>= 0).
    cisc_teacher, cisc_infonce, cisc_center: weights of the three CISC forms
      inside L_CISC (default: teacher + 0.5 infonce).
    tau_c: InfoNCE temperature τ_c (> 0).
    soft_sgsr: KL to the soft targets instead of CE to the hard labels.
    gamma, threshold: the affinity's γ and θ (ProxyCLIP: γ = 3).
    alpha, steps: refinement mixing α and power k.
    logit_scale: s, the scale of patch-text logits (ProxyCLIP: 40).
    tau_p: pseudo-label temperature τ_p (> 0).
    confidence: pseudo-label confidence κ in [0, 1).
  """

  lambda_cisc: float = 1.0
  lambda_sgsr: float = 1.0
  lambda_keep: float = 0.1
  cisc_teacher: float = 1.0
  cisc_infonce: float = 0.5
  cisc_center: float = 0.0
  tau_c: float = 0.07
  soft_sgsr: bool = False
  gamma: float = 3.0
  threshold: float = 0.2
  alpha: float = 0.5
  steps: int = 2
  logit_scale: float = 40.0
  tau_p: float = 1.0
  confidence: float = 0.5

  def __post_init__(self):
    for f in dataclasses.fields(self):
      v = getattr(self, f.name)
      if f.name == "soft_sgsr":
        if not isinstance(v, bool):
          raise TypeError(f"SSCLConfig.soft_sgsr must be a bool, got {v!r}")
      elif f.name == "steps":
        V.check_int(v, "SSCLConfig.steps", min_value=0)
      elif f.name in ("tau_c", "tau_p", "gamma", "logit_scale"):
        V.check_float(
          v, f"SSCLConfig.{f.name}", min_value=0.0, min_inclusive=False
        )
      elif f.name == "threshold":
        V.check_float(v, "SSCLConfig.threshold", min_value=-1.0, max_value=1.0)
      elif f.name == "alpha":
        V.check_float(v, "SSCLConfig.alpha", min_value=0.0, max_value=1.0)
      elif f.name == "confidence":
        V.check_float(
          v,
          "SSCLConfig.confidence",
          min_value=0.0,
          max_value=1.0,
          max_inclusive=False,
        )
      else:
        V.check_float(v, f"SSCLConfig.{f.name}", min_value=0.0)


class SGSRTargets(NamedTuple):
  """Text-conditioned dense supervision from :func:`sgsr_targets` (all
  ``stop_gradient``-ed).

  Attributes:
    refined: ``[..., N, C]`` refined logits R.
    probs: ``[..., N, C]`` soft targets q.
    labels: ``[..., N]`` int32 hard labels ŷ.
    weights: ``[..., N]`` float32 confidence weights ω in {0, 1}.
  """

  refined: jax.Array
  probs: jax.Array
  labels: jax.Array
  weights: jax.Array


def dense_pseudolabels(
  refined: jax.Array, *, tau: float = 1.0, confidence: float = 0.5
) -> tuple[jax.Array, jax.Array]:
  """Hard pseudo-labels and confidence weights: ``ŷ_i = argmax q_i``,
  ``ω_i = 1[max q_i > κ]``.

  Args:
    refined: ``[..., N, C]`` float refined logits R (C >= 2).
    tau: temperature τ_p (> 0) of ``q_i = softmax(R_i / τ_p)``.
    confidence: κ in [0, 1).

  Returns:
    ``(labels [..., N] int32, weights [..., N] float32)``. Under jit, NaN logits
    give ``weights`` NaN (a NaN probability is never confident eagerly:
    ValueError).
  """
  refined = V.check_array(
    refined, "refined", ndim=(2, 3), dtype="float", nonempty=True
  )
  if refined.shape[-1] < 2:
    raise ValueError(
      f"refined must have at least 2 classes (last axis), got {refined.shape}"
    )
  tau = V.check_float(tau, "tau", min_value=0.0, min_inclusive=False)
  confidence = V.check_float(
    confidence, "confidence", min_value=0.0, max_value=1.0, max_inclusive=False
  )
  ok = V.debug_check_values(
    jnp.isfinite(refined), "refined must be finite (no NaN or inf)"
  )
  q = jax.nn.softmax(refined.astype(jnp.float32) / tau, axis=-1)
  labels = jnp.argmax(q, axis=-1).astype(jnp.int32)
  weights = (jnp.max(q, axis=-1) > confidence).astype(jnp.float32)
  return labels, V.poison_floats(weights, ok)


def patch_text_logits(
  patches: jax.Array, text: jax.Array, *, logit_scale: float = 40.0
) -> jax.Array:
  """``s · F̂ Tᵀ``: patch-text logits from dense features and text embeddings.

  Args:
    patches: ``[..., N, D]`` float dense features (normalised inside).
    text: ``[C, D]`` float text embeddings (normalised inside).
    logit_scale: s (> 0).

  Returns:
    ``[..., N, C]`` float32 logits.
  """
  patches = V.check_array(
    patches, "patches", ndim=(2, 3), dtype="float", nonempty=True
  )
  text = V.check_array(text, "text", ndim=2, dtype="float", nonempty=True)
  if text.shape[-1] != patches.shape[-1]:
    raise ValueError(
      f"text must have shape [C, {patches.shape[-1]}] (the feature width), "
      f"got {list(text.shape)}"
    )
  s = V.check_float(
    logit_scale, "logit_scale", min_value=0.0, min_inclusive=False
  )
  return s * _l2(patches.astype(jnp.float32)) @ _l2(text.astype(jnp.float32)).T


def sgsr_targets(
  teacher_patches: jax.Array,
  vfm: jax.Array,
  text: jax.Array,
  cfg: SSCLConfig = SSCLConfig(),
) -> SGSRTargets:
  """SGSR steps 1-4: affinity, teacher logits, refinement, pseudo-labels (no
  gradients).

  Args:
    teacher_patches: ``[B, N, D]`` frozen CLIP dense features F_t.
    vfm: ``[B, N, D']`` frozen VFM patch features G.
    text: ``[C, D]`` class text embeddings T.
    cfg: an :class:`SSCLConfig`.

  Returns:
    :class:`SGSRTargets` with leading shape ``[B, N]``.
  """
  if not isinstance(cfg, SSCLConfig):
    raise TypeError(f"cfg must be an SSCLConfig, got {type(cfg).__name__}")
  teacher_patches = V.check_array(
    teacher_patches, "teacher_patches", ndim=3, dtype=("float")
  )
  vfm = V.check_array(vfm, "vfm", ndim=3, dtype="float")
  if vfm.shape[:2] != teacher_patches.shape[:2]:
    raise ValueError(
      f"vfm must have shape [{teacher_patches.shape[0]}, "
      f"{teacher_patches.shape[1]}, D'] (batch and patches of "
      f"teacher_patches), got {list(vfm.shape)}"
    )
  teacher_patches, vfm = jax.lax.stop_gradient((teacher_patches, vfm))
  A = vfm_affinity(vfm, gamma=cfg.gamma, threshold=cfg.threshold)
  L = patch_text_logits(
    teacher_patches, jax.lax.stop_gradient(text), logit_scale=cfg.logit_scale
  )
  R = refine_logits(L, A, alpha=cfg.alpha, steps=cfg.steps, validate=False)
  labels, weights = dense_pseudolabels(
    R, tau=cfg.tau_p, confidence=cfg.confidence
  )
  q = jax.nn.softmax(R / cfg.tau_p, axis=-1)
  return SGSRTargets(R, q, labels, weights)


def _weights_arg(weights, shape):
  weights = V.check_array(weights, "weights", dtype="real")
  if weights.shape != shape:
    raise ValueError(
      f"weights must have shape {list(shape)}, got {list(weights.shape)}"
    )
  ok = V.debug_check_values(
    jnp.isfinite(weights) & (weights >= 0),
    "weights must be finite and non-negative",
  )
  return weights.astype(jnp.float32), ok


def dense_pseudolabel_ce(
  student_logits: jax.Array, labels: jax.Array, weights: jax.Array
) -> jax.Array:
  """Confidence-weighted dense CE: ``Σ_i ω_i CE(softmax(ℓ_i), ŷ_i) / max(1, Σ_i
  ω_i)``.

  Args:
    student_logits: ``[..., N, C]`` float student patch-text logits.
    labels: ``[..., N]`` int labels in [0, C).
    weights: ``[..., N]`` non-negative weights ω.

  Returns:
    Scalar float32 loss (0 when every weight is 0). Under jit, labels outside
    [0, C) or negative / non-finite weights give NaN.
  """
  x = V.check_array(
    student_logits, "student_logits", ndim=(2, 3), dtype="float", nonempty=True
  )
  labels = V.check_array(labels, "labels", shape=x.shape[:-1], dtype="int")
  w, ok_w = _weights_arg(weights, x.shape[:-1])
  C = x.shape[-1]
  ok_l = V.debug_check_values(
    (labels >= 0) & (labels < C), f"labels must be in [0, {C})"
  )
  logp = jax.nn.log_softmax(x.astype(jnp.float32), axis=-1)
  nll = -jnp.take_along_axis(
    logp, jnp.clip(labels, 0, C - 1)[..., None], axis=-1
  )[..., 0]
  out = jnp.sum(w * nll) / jnp.maximum(1.0, jnp.sum(w))
  return V.poison_floats(out, V.all_flags(ok_w, ok_l))


def dense_kl(
  student_logits: jax.Array, probs: jax.Array, weights: jax.Array
) -> jax.Array:
  """Confidence-weighted dense KL: ``Σ_i ω_i KL(q_i ‖ softmax(ℓ_i)) / max(1, Σ_i
  ω_i)``.

  Args:
    student_logits: ``[..., N, C]`` float student logits.
    probs: ``[..., N, C]`` target distributions q (rows sum to 1).
    weights: ``[..., N]`` non-negative weights.

  Returns:
    Scalar float32 loss. Under jit, invalid ``probs`` or ``weights`` give NaN.
  """
  x = V.check_array(
    student_logits, "student_logits", ndim=(2, 3), dtype="float", nonempty=True
  )
  q = V.check_array(probs, "probs", shape=x.shape, dtype="float")
  w, ok_w = _weights_arg(weights, x.shape[:-1])
  ok_q = V.debug_check_values(
    jnp.all(q >= 0, -1) & (jnp.abs(q.sum(-1) - 1) < 1e-3),
    "probs rows must be distributions",
  )
  q = q.astype(jnp.float32)
  logp = jax.nn.log_softmax(x.astype(jnp.float32), axis=-1)
  kl = jnp.sum(
    jnp.where(q > 0, q * (jnp.log(jnp.where(q > 0, q, 1.0)) - logp), 0.0), -1
  )
  out = jnp.sum(w * kl) / jnp.maximum(1.0, jnp.sum(w))
  return V.poison_floats(out, V.all_flags(ok_w, ok_q))


def region_consistency_loss(
  z: jax.Array,
  *,
  mode: Literal["center", "infonce", "teacher"],
  teacher: jax.Array | None = None,
  anchor_ids: jax.Array | None = None,
  tau: float = 0.07,
) -> jax.Array:
  """CISC: semantic consistency of one anchor region seen in V contexts (see
  module doc).

  Args:
    z: ``[A, V, D]`` float region embeddings (anchor a, view k); normalised
      inside.
    mode: ``'center'``, ``'infonce'`` (needs V >= 2) or ``'teacher'`` (needs ``teacher``).
    teacher: ``[A, D]`` frozen teacher embedding of each anchor (mode
      ``'teacher'``).
    anchor_ids: optional ``[A]`` int ids; anchors sharing an id are positives of
      each other in ``'infonce'`` (default: all anchors distinct).
    tau: InfoNCE temperature τ_c (> 0).

  Returns:
    Scalar float32 loss; targets (``z̄``, ``teacher``) are stop-gradient-ed.
  """
  z = V.check_array(z, "z", ndim=3, dtype="float", nonempty=True)
  if mode not in CISC_MODES:
    raise ValueError(f"mode must be one of {list(CISC_MODES)}, got {mode!r}")
  A, Vn, D = z.shape
  zh = _l2(z.astype(jnp.float32))
  if mode == "center":
    c = jax.lax.stop_gradient(_l2(zh.mean(1)))  # [A, D]
    return jnp.mean(jnp.sum((zh - c[:, None]) ** 2, -1))
  if mode == "teacher":
    if teacher is None:
      raise ValueError(
        "teacher must be given for mode='teacher' (an [A, D] array)"
      )
    t = V.check_array(teacher, "teacher", shape=(A, D), dtype="float")
    t = jax.lax.stop_gradient(_l2(t.astype(jnp.float32)))
    return jnp.mean(1.0 - jnp.einsum("avd,ad->av", zh, t))
  if Vn < 2:
    raise ValueError(
      f"z must have at least 2 views (axis 1) for mode='infonce', got {z.shape}"
    )
  tau = V.check_float(tau, "tau", min_value=0.0, min_inclusive=False)
  if anchor_ids is None:
    ids = jnp.arange(A)
  else:
    ids = V.check_array(anchor_ids, "anchor_ids", shape=(A,), dtype="int")
  flat = zh.reshape(A * Vn, D)
  fid = jnp.repeat(ids, Vn)
  sim = flat @ flat.T / tau  # [AV, AV]
  eye = jnp.eye(A * Vn, dtype=bool)
  sim = jnp.where(eye, -jnp.inf, sim)
  logp = sim - jax.scipy.special.logsumexp(sim, axis=1, keepdims=True)
  pos = (fid[:, None] == fid[None, :]) & ~eye
  per = jnp.sum(jnp.where(pos, logp, 0.0), 1) / jnp.maximum(pos.sum(1), 1)
  return -jnp.mean(per)


def keep_loss(student_cls: jax.Array, teacher_cls: jax.Array) -> jax.Array:
  """Global keep term ``mean_b (1 − cos(f_s^cls, sg f_t^cls))``.

  Args:
    student_cls: ``[B, D]`` student global embeddings.
    teacher_cls: ``[B, D]`` frozen teacher global embeddings.

  Returns:
    Scalar float32.
  """
  s = V.check_array(
    student_cls, "student_cls", ndim=2, dtype="float", nonempty=True
  )
  t = V.check_array(teacher_cls, "teacher_cls", shape=s.shape, dtype="float")
  t = jax.lax.stop_gradient(_l2(t.astype(jnp.float32)))
  return jnp.mean(1.0 - jnp.sum(_l2(s.astype(jnp.float32)) * t, -1))


def sscl_loss(
  student_logits: jax.Array,
  targets: SGSRTargets,
  region_z: jax.Array,
  region_teacher: jax.Array,
  student_cls: jax.Array,
  teacher_cls: jax.Array,
  cfg: SSCLConfig = SSCLConfig(),
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The SSCL objective (equation SSCL in the module docstring).

  Args:
    student_logits: ``[B, N, C]`` student patch-text logits ``s F̂_s Tᵀ``.
    targets: :class:`SGSRTargets` for the same ``[B, N]`` (from
      :func:`sgsr_targets`).
    region_z: ``[A, V, D]`` student region embeddings of A anchors in V
      contexts.
    region_teacher: ``[A, D]`` frozen teacher embeddings of the anchors' tight
      crops.
    student_cls: ``[B, D]`` student global embeddings.
    teacher_cls: ``[B, D]`` frozen teacher global embeddings.
    cfg: an :class:`SSCLConfig`.

  Returns:
    ``(total, terms)``: scalar loss and ``{'sgsr', 'cisc_teacher',
    'cisc_infonce', 'cisc_center', 'keep'}`` (terms with weight 0 are still
    reported).
  """
  if not isinstance(cfg, SSCLConfig):
    raise TypeError(f"cfg must be an SSCLConfig, got {type(cfg).__name__}")
  if not isinstance(targets, SGSRTargets):
    raise TypeError(
      "targets must be SGSRTargets (from sgsr_targets), "
      f"got {type(targets).__name__}"
    )
  tg = jax.lax.stop_gradient(targets)
  if cfg.soft_sgsr:
    sgsr = dense_kl(student_logits, tg.probs, tg.weights)
  else:
    sgsr = dense_pseudolabel_ce(student_logits, tg.labels, tg.weights)
  terms = {
    "sgsr": sgsr,
    "cisc_teacher": region_consistency_loss(
      region_z, mode="teacher", teacher=region_teacher
    ),
    "cisc_infonce": region_consistency_loss(
      region_z, mode="infonce", tau=cfg.tau_c
    )
    if region_z.shape[1] >= 2
    else jnp.zeros((), jnp.float32),
    "cisc_center": region_consistency_loss(region_z, mode="center"),
    "keep": keep_loss(student_cls, teacher_cls),
  }
  cisc = (
    cfg.cisc_teacher * terms["cisc_teacher"]
    + cfg.cisc_infonce * terms["cisc_infonce"]
    + cfg.cisc_center * terms["cisc_center"]
  )
  total = (
    cfg.lambda_cisc * cisc
    + cfg.lambda_sgsr * sgsr
    + cfg.lambda_keep * terms["keep"]
  )
  return total, terms
