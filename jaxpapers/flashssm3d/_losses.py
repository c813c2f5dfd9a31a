"""Losses for FlashSSM-3D: VGGT's supervised losses and the two geometry-aware
distillation losses.

The VGGT losses (camera, confidence-weighted regression, gradient) follow
``facebookresearch/vggt:training/loss.py`` (arXiv:2503.11651). The Procrustes
alignment loss and the camera reprojection loss are named in the FlashSSM-3D
abstract; **their exact formulas here are a reconstruction** (no public code),
checked numerically in the tests.

All functions are pure and jit-able. Geometry conventions: see ``_geometry.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as val
from jaxpapers.flashssm3d import _geometry as geo
from jaxpapers.flashssm3d._models import Predictions

__all__ = [
  "weighted_umeyama",
  "procrustes_loss",
  "reprojection_loss",
  "camera_loss",
  "conf_regression_loss",
  "gradient_loss",
  "LossWeights",
  "distillation_loss",
  "apply_sim3_to_cameras",
]

_ROBUST = ("l2", "squared", "huber", "cauchy")


def _safe_norm(x, axis=-1, eps=1e-12):
  return jnp.sqrt(jnp.sum(x * x, axis=axis) + eps)


def weighted_umeyama(
  X: jax.Array,
  Y: jax.Array,
  w: jax.Array | None = None,
  *,
  with_scale: bool = True,
  eps: float = 1e-12,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Weighted Umeyama Sim(3) fit ``Y ≈ s R X + t`` (Umeyama 1991, weighted
  form).

  ``μ_X = Σ w̃ X``, ``μ_Y = Σ w̃ Y``, ``Σ_YX = Σ w̃ Ȳ X̄ᵀ = U D Vᵀ``, ``S =
  diag(1, 1, sign(det U det V))`` (reflection fix; a zero sign maps to +1),
  ``R = U S Vᵀ``, ``s = tr(D S) / σ_X²``, ``t = μ_Y − s R μ_X``.

  Args:
    X: ``[..., M, 3]`` source points.
    Y: ``[..., M, 3]`` target points.
    w: ``[..., M]`` non-negative weights (default uniform).
    with_scale: if False, ``s = 1`` (SE(3) fit).
    eps: guards ``σ_X²`` for degenerate (coincident) point sets, where
      ``s = 1``.

  Returns:
    ``(s [...], R [..., 3, 3], t [..., 3])``. Not meant to be differentiated
    through (the SVD has NaN gradients on rank-deficient inputs);
    :func:`procrustes_loss` stops its gradient.

  Bad values: weights must be finite and non-negative with a positive sum per
  set, and the points finite. Otherwise this raises ``ValueError`` eagerly;
  under ``jax.jit`` the whole result is NaN (wrap with
  ``jax.experimental.checkify.checkify`` to get the error). ``M = 0`` (no
  points) is a shape error.
  """
  ok = _check_umeyama(X, Y, w)
  if w is None:
    w = jnp.ones(X.shape[:-1], X.dtype)
  return val.poison_floats(
    _umeyama(X, Y, w, with_scale=with_scale, eps=eps), ok
  )


def _check_umeyama(X, Y, w):
  if (
    not (hasattr(X, "shape") and hasattr(Y, "shape"))
    or X.ndim < 2
    or X.shape != Y.shape
    or X.shape[-1] != 3
  ):
    raise ValueError(
      f"X and Y must both be [..., M, 3]; got {getattr(X, 'shape', X)} and "
      f"{getattr(Y, 'shape', Y)}"
    )
  if X.shape[-2] < 1:
    raise ValueError(f"X and Y need at least one point (M >= 1), got {X.shape}")
  geo._check_float(X, "X")
  geo._check_float(Y, "Y")
  oks = [
    val.debug_check_values(
      jnp.isfinite(X).all() & jnp.isfinite(Y).all(), "X and Y must be finite"
    )
  ]
  if w is not None:
    if not hasattr(w, "shape") or w.shape != X.shape[:-1]:
      raise ValueError(
        f"w must be [..., M] = {X.shape[:-1]}, got {getattr(w, 'shape', w)}"
      )
    oks.append(
      val.debug_check_values(
        jnp.all(jnp.isfinite(w) & (w >= 0)) & jnp.all(jnp.sum(w, -1) > 0),
        (
          "w must be finite, non-negative weights with a positive sum for "
          "every point set"
        ),
      )
    )
  return val.all_flags(*oks)


def _umeyama(X, Y, w, *, with_scale, eps):
  """Unchecked weighted Umeyama (weights clipped at 0; all-zero weights give R =
  I, s = 1)."""
  w = jnp.maximum(w, 0).astype(X.dtype)
  wn = w / jnp.maximum(jnp.sum(w, -1, keepdims=True), eps)
  mu_x = jnp.sum(wn[..., None] * X, -2)
  mu_y = jnp.sum(wn[..., None] * Y, -2)
  Xc, Yc = X - mu_x[..., None, :], Y - mu_y[..., None, :]
  var_x = jnp.sum(wn * jnp.sum(Xc * Xc, -1), -1)
  cov = jnp.einsum("...m,...mi,...mj->...ij", wn, Yc, Xc)  # Σ_YX [..., 3, 3]
  U, D, Vt = jnp.linalg.svd(cov)
  sgn = jnp.sign(jnp.linalg.det(U) * jnp.linalg.det(Vt))
  sgn = jnp.where(sgn == 0, 1.0, sgn).astype(X.dtype)
  S = jnp.stack([jnp.ones_like(sgn), jnp.ones_like(sgn), sgn], -1)
  R = jnp.einsum("...ij,...j,...jk->...ik", U, S, Vt)
  if with_scale:
    s = jnp.sum(D * S, -1) / jnp.maximum(var_x, eps)
    s = jnp.where(var_x > eps, s, 1.0)
  else:
    s = jnp.ones_like(var_x)
  t = mu_y - s[..., None] * jnp.einsum("...ij,...j->...i", R, mu_x)
  return s, R, t


def _robust(r, kind, delta):
  if kind == "l2":
    return r
  if kind == "squared":
    return r * r
  if kind == "huber":
    return jnp.where(r < delta, 0.5 * r * r / delta, r - 0.5 * delta)
  if kind == "cauchy":
    return delta * jnp.log1p(r / delta)
  raise ValueError(f"robust must be one of {_ROBUST}, got {kind!r}")


def procrustes_loss(
  X_s: jax.Array,
  Y_t: jax.Array,
  w: jax.Array | None = None,
  *,
  robust: str = "l2",
  delta: float = 0.1,
  with_scale: bool = True,
  stop_alignment_grad: bool = True,
  eps: float = 1e-12,
) -> jax.Array:
  """Confidence-weighted Procrustes (Sim(3)) alignment loss
  **[reconstruction]**.

  ``L = Σ w̃_i ρ(‖s* R* X_i + t* − Y_i‖) / Σ w̃_i ‖Y_i − μ_Y‖``, with
  ``(s*, R*, t*)`` from :func:`weighted_umeyama` (student ``X`` onto teacher
  ``Y``). The loss is invariant to any similarity transform of the student's
  points, so it measures global structure only.

  A point set whose weights are all zero contributes 0 (nothing to align);
  negative or non-finite weights or points raise ``ValueError`` eagerly and make
  the loss NaN under ``jax.jit`` (``checkify.checkify`` surfaces the error).

  The alignment is wrapped in ``stop_gradient`` by default: for ``ρ(r) = r²``
  this is exact by the envelope theorem (the alignment minimises the objective),
  and it keeps gradients finite for degenerate (collinear, coincident) point
  sets where the SVD's derivative is NaN. The residual norm is the safe
  ``sqrt(‖r‖² + eps)``.

  Args:
    X_s: student points ``[..., M, 3]``.
    Y_t: teacher points ``[..., M, 3]`` (treated as a constant target).
    w: weights ``[..., M]`` (teacher confidence × valid), default uniform.
    robust: ``'l2'`` (ρ(r)=r), ``'squared'``, ``'huber'`` or ``'cauchy'``.
    delta: scale of the Huber/Cauchy ρ (relative to the normalised residual), >
      0.
    with_scale: Sim(3) (True) or SE(3) (False) alignment.
    stop_alignment_grad: stop gradients through ``(s*, R*, t*)``.
    eps: guards the weight sum, ``σ_X²`` and the residual norm
      ``sqrt(‖r‖² + eps)``.

  Returns:
    the loss averaged over leading dims (scalar).
  """
  if robust not in _ROBUST:
    raise ValueError(f"robust must be one of {_ROBUST}, got {robust!r}")
  if (
    robust in ("huber", "cauchy")
    and val.is_concrete(delta)
    and not float(delta) > 0
  ):
    raise ValueError(f"delta must be > 0 for robust={robust!r}, got {delta!r}")
  if (
    X_s.shape != Y_t.shape
    or X_s.ndim < 2
    or X_s.shape[-1] != 3
    or X_s.shape[-2] < 1
  ):
    raise ValueError(
      "X_s and Y_t must both be [..., M, 3] with M >= 1; "
      f"got {X_s.shape} and {Y_t.shape}"
    )
  if w is not None:
    if not hasattr(w, "shape") or w.shape != X_s.shape[:-1]:
      raise ValueError(
        f"w must be [..., M] = {X_s.shape[:-1]}, got {getattr(w, 'shape', w)}"
      )
    ok = val.debug_check_values(
      jnp.all(jnp.isfinite(w) & (w >= 0)),
      "w must be finite, non-negative weights",
    )
  else:
    ok = None
    w = jnp.ones(X_s.shape[:-1], X_s.dtype)
  ok = val.all_flags(
    ok, val.debug_check_values(jnp.isfinite(Y_t).all(), "Y_t must be finite")
  )
  Y_t = jax.lax.stop_gradient(Y_t)
  w = jax.lax.stop_gradient(w)
  s, R, t = _umeyama(X_s, Y_t, w, with_scale=with_scale, eps=eps)
  if stop_alignment_grad:
    s, R, t = jax.tree.map(jax.lax.stop_gradient, (s, R, t))
  wn = w / jnp.maximum(jnp.sum(w, -1, keepdims=True), eps)
  aligned = (
    s[..., None, None] * jnp.einsum("...ij,...mj->...mi", R, X_s)
    + t[..., None, :]
  )
  mu_y = jnp.sum(wn[..., None] * Y_t, -2, keepdims=True)
  denom = jnp.sum(wn * _safe_norm(Y_t - mu_y, eps=eps), -1)
  denom = jnp.maximum(denom, 1e-6)
  r = _safe_norm(aligned - Y_t, eps=eps) / denom[..., None]
  return val.poison_floats(
    jnp.mean(jnp.sum(wn * _robust(r, robust, delta), -1)), ok
  )


def apply_sim3_to_cameras(
  extrinsics: jax.Array, s: jax.Array, R: jax.Array, t: jax.Array
) -> jax.Array:
  """Map camera-from-world extrinsics into the frame ``Y = s R X + t``.

  ``R' = R_c Rᵀ``, ``t' = s t_c − R_c Rᵀ t`` (projections of mapped points are unchanged).

  Args:
    extrinsics: ``[B, S, 3, 4]`` float camera-from-world ``[R_c | t_c]``.
    s: ``[B]`` scales of the similarity.
    R: ``[B, 3, 3]`` rotations of the similarity.
    t: ``[B, 3]`` translations of the similarity.

  Returns:
    ``[B, S, 3, 4]`` extrinsics ``[R' | t']`` in the mapped frame (scaled by
    ``s``).
  """
  if (
    not hasattr(extrinsics, "shape")
    or extrinsics.ndim != 4
    or extrinsics.shape[-2:] != (3, 4)
  ):
    got = getattr(extrinsics, "shape", extrinsics)
    raise ValueError(f"extrinsics must be [B, S, 3, 4], got {got}")
  B = extrinsics.shape[0]
  s, R, t = jnp.asarray(s), jnp.asarray(R), jnp.asarray(t)
  if s.shape != (B,) or R.shape != (B, 3, 3) or t.shape != (B, 3):
    raise ValueError(
      f"s, R, t must be [B], [B, 3, 3], [B, 3] with B = {B}; got {s.shape}, "
      f"{R.shape}, {t.shape}"
    )
  Rc, tc = extrinsics[..., :3, :3], extrinsics[..., :3, 3]
  Rn = Rc @ jnp.swapaxes(R, -1, -2)[:, None]
  tn = s[:, None, None] * tc - jnp.einsum("bsij,bj->bsi", Rn, t)
  return jnp.concatenate([Rn, tn[..., None]], -1)


def reprojection_loss(
  points_t: jax.Array,
  cams_s: tuple[jax.Array, jax.Array],
  cams_t: tuple[jax.Array, jax.Array],
  image_hw: Sequence[int],
  *,
  gauge: tuple[jax.Array, jax.Array, jax.Array] | None = None,
  delta: float = 0.02,
  clamp: float = 0.5,
  margin: float = 0.0,
  eps: float = 1e-4,
  point_weights: jax.Array | None = None,
) -> jax.Array:
  """Camera reprojection loss **[reconstruction]**.

  Teacher points ``X_j`` are projected into every view ``i`` with teacher and
  student cameras: ``u^T_ij = π(K^T_i, R^T_i X_j + t^T_i)``, ``u^S_ij = π(K^S_i,
  R^S_i X_j + t^S_i)``, ``m_ij = [z^T > eps] ∧ [z^S > eps] ∧ [u^T inside the
  image ± margin]``, ``L = Σ m_ij ρ_δ(min(‖u^S − u^T‖ / W, clamp)) / Σ m_ij``
  with the Huber ``ρ_δ(e) = e²/(2δ)`` for ``e < δ`` else ``e − δ/2``. Cost is
  ``O(M · S)``: linear in views for a fixed number of sampled points ``M``.

  Args:
    points_t: teacher world points ``[B, M, 3]``.
    cams_s: ``(extrinsics [B, S, 3, 4], intrinsics [B, S, 3, 3])`` of the
      student.
    cams_t: same for the teacher.
    image_hw: ``(H, W)``.
    gauge: optional ``(s [B], R [B,3,3], t [B,3])`` mapping student-frame points
      onto the teacher frame (``Y ≈ s R X + t``); the student's cameras are
      mapped with :func:`apply_sim3_to_cameras` first.
    delta: Huber threshold on the width-normalised pixel error.
    clamp: clamp of the normalised error.
    margin: accept teacher projections up to ``margin`` pixels outside the
      image.
    eps: minimal camera depth.
    point_weights: optional ``[B, M]`` weights (e.g. teacher confidence).

  Returns:
    scalar loss (0 when no point is visible).
  """
  H, W = geo._check_hw(image_hw)
  ext_s, K_s = cams_s
  ext_t, K_t = cams_t
  if points_t.ndim != 3 or points_t.shape[-1] != 3:
    raise ValueError(f"points_t must be [B, M, 3], got {points_t.shape}")
  if (
    ext_s.shape != ext_t.shape
    or ext_s.ndim != 4
    or ext_s.shape[-2:] != (3, 4)
    or ext_s.shape[0] != points_t.shape[0]
  ):
    raise ValueError(
      f"camera extrinsics must match and be [B, S, 3, 4] with B = "
      f"{points_t.shape[0]}; got {ext_s.shape}, {ext_t.shape}"
    )
  if K_s.shape != ext_s.shape[:2] + (3, 3) or K_t.shape != K_s.shape:
    raise ValueError(
      f"camera intrinsics must be [B, S, 3, 3] = {ext_s.shape[:2] + (3, 3)}; "
      f"got {K_s.shape}, {K_t.shape}"
    )
  for name, v in (("delta", delta), ("clamp", clamp), ("eps", eps)):
    if val.is_concrete(v) and not float(v) > 0:
      raise ValueError(f"{name} must be > 0, got {v!r}")
  if point_weights is not None and point_weights.shape != points_t.shape[:2]:
    raise ValueError(
      f"point_weights must be [B, M] = {points_t.shape[:2]}, "
      f"got {point_weights.shape}"
    )
  points_t = jax.lax.stop_gradient(points_t)
  ext_t, K_t = jax.lax.stop_gradient(ext_t), jax.lax.stop_gradient(K_t)
  if gauge is not None:
    ext_s = apply_sim3_to_cameras(ext_s, *gauge)
  P = points_t[:, None]  # [B, 1, M, 3]
  uv_t, z_t = geo.project_points(P, ext_t, K_t, eps=eps)  # [B, S, M, 2]
  uv_s, z_s = geo.project_points(P, ext_s, K_s, eps=eps)
  inside = (
    (uv_t[..., 0] >= -margin)
    & (uv_t[..., 0] <= W + margin)
    & (uv_t[..., 1] >= -margin)
    & (uv_t[..., 1] <= H + margin)
  )
  m = (z_t > eps) & (z_s > eps) & inside
  m = m.astype(points_t.dtype)
  if point_weights is not None:
    m = m * jax.lax.stop_gradient(point_weights)[:, None, :]
  d2 = jnp.sum(jnp.square((uv_s - uv_t) / W), -1)
  e2 = jnp.minimum(d2, clamp * clamp)
  # safe sqrt, only used if e > δ
  e = jnp.sqrt(jnp.where(e2 > delta * delta, e2, delta * delta))
  rho = jnp.where(e2 < delta * delta, 0.5 * e2 / delta, e - 0.5 * delta)
  return jnp.sum(m * rho) / jnp.maximum(jnp.sum(m), 1.0)


def camera_loss(
  pose_stages: jax.Array,
  pose_target: jax.Array,
  *,
  gamma: float = 0.6,
  frame_valid: jax.Array | None = None,
  fov_weight: float = 0.5,
  t_clamp: float = 100.0,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """VGGT camera loss over refinement stages.

  ``L = Σ_k γ^{n−1−k} [|Δt|₁ + min(|Δq|₁, |q+q̂|₁) + 0.5 |ΔFoV|₁] / n`` with the
  translation error clamped at 100 (VGGT ``training/loss.py`` uses L1). The
  quaternion sign ambiguity is handled by the min.

  Args:
    pose_stages: ``[n, B, S, 9]`` (or ``[B, S, 9]`` for one stage), last stage
      is the final one.
    pose_target: ``[B, S, 9]`` target encodings (no gradient flows into them).
    gamma: stage discount ``γ > 0``; the last stage has weight 1.
    frame_valid: optional ``[B, S]`` mask of frames that count.
    fov_weight: weight of the field-of-view term.
    t_clamp: clamp ``> 0`` of the per-frame translation error.

  Returns:
    ``(loss, {'cam_t','cam_q','cam_fov'})``: the scalar loss and the three
    scalar components of the last stage.
  """
  if pose_stages.ndim == pose_target.ndim:
    pose_stages = pose_stages[None]
  if pose_stages.shape[1:] != pose_target.shape or pose_target.shape[-1] != 9:
    raise ValueError(
      f"pose_stages [n, ..., 9] must match pose_target [..., 9]; got "
      f"{pose_stages.shape} and {pose_target.shape}"
    )
  if frame_valid is not None and frame_valid.shape != pose_target.shape[:-1]:
    raise ValueError(
      f"frame_valid must be {pose_target.shape[:-1]}, got {frame_valid.shape}"
    )
  for name, v in (("gamma", gamma), ("t_clamp", t_clamp)):
    if val.is_concrete(v) and not float(v) > 0:
      raise ValueError(f"{name} must be > 0, got {v!r}")
  n = pose_stages.shape[0]
  tgt = jax.lax.stop_gradient(pose_target)
  fv = (
    jnp.ones(tgt.shape[:-1], tgt.dtype)
    if frame_valid is None
    else frame_valid.astype(tgt.dtype)
  )
  denom = jnp.maximum(jnp.sum(fv), 1.0)

  def one(p):
    lt = jnp.minimum(jnp.sum(jnp.abs(p[..., :3] - tgt[..., :3]), -1), t_clamp)
    q, qt = p[..., 3:7], tgt[..., 3:7]
    lq = jnp.minimum(jnp.sum(jnp.abs(q - qt), -1), jnp.sum(jnp.abs(q + qt), -1))
    lf = jnp.sum(jnp.abs(p[..., 7:] - tgt[..., 7:]), -1)
    return (
      jnp.sum(lt * fv) / denom,
      jnp.sum(lq * fv) / denom,
      jnp.sum(lf * fv) / denom,
    )

  lt, lq, lf = jax.vmap(one)(pose_stages)
  wts = gamma ** (n - 1 - jnp.arange(n, dtype=tgt.dtype))
  total = jnp.sum(wts * (lt + lq + fov_weight * lf)) / n
  return total, {"cam_t": lt[-1], "cam_q": lq[-1], "cam_fov": lf[-1]}


def conf_regression_loss(
  pred: jax.Array,
  target: jax.Array,
  conf: jax.Array,
  valid: jax.Array | None = None,
  *,
  alpha: float = 0.2,
) -> jax.Array:
  """VGGT's confidence-weighted regression ``ℓ = ‖pred − gt‖ · C − α log C``, mean over valid.

  Args:
    pred: ``[B, S, H, W, C]`` prediction (C = 1 for depth, 3 for points).
    target: ``[B, S, H, W, C]`` target (no gradient flows into it).
    conf: ``[B, S, H, W]`` confidence ``C > 0`` (VGGT's heads give ``C >= 1``;
      use ones for no confidence).
    valid: optional ``[B, S, H, W]`` mask (default all valid).
    alpha: weight ``α`` of the ``−log C`` term.

  Returns:
    scalar; 0 when no pixel is valid. A non-positive confidence raises
    ``ValueError`` eagerly and gives NaN under ``jax.jit``
    (``checkify.checkify`` surfaces the error).
  """
  if pred.shape != target.shape:
    raise ValueError(f"pred {pred.shape} and target {target.shape} must match")
  if conf.shape != pred.shape[:-1]:
    raise ValueError(f"conf must be {pred.shape[:-1]}, got {conf.shape}")
  if valid is not None and valid.shape != conf.shape:
    raise ValueError(f"valid must be {conf.shape}, got {valid.shape}")
  ok = val.debug_check_values(
    jnp.all(conf > 0), "conf must be > 0 (a confidence; VGGT uses C >= 1)"
  )
  v = (
    jnp.ones(conf.shape, pred.dtype)
    if valid is None
    else valid.astype(pred.dtype)
  )
  err = _safe_norm(pred - jax.lax.stop_gradient(target), eps=1e-12)
  l = err * conf - alpha * jnp.log(conf)
  return val.poison_floats(jnp.sum(l * v) / jnp.maximum(jnp.sum(v), 1.0), ok)


def gradient_loss(
  pred: jax.Array,
  target: jax.Array,
  conf: jax.Array,
  valid: jax.Array | None = None,
  *,
  scales: int = 3,
  clamp: float = 1.0,
) -> jax.Array:
  """Multi-scale gradient loss (VGGT ``gradient_loss_multi_scale``).

  At strides ``2^k`` (k < scales), L1 of horizontal and vertical finite
  differences of ``pred − gt`` (summed over channels), clamped, weighted by the
  confidence of the later pixel, counted where both pixels are valid.

  Args:
    pred: ``[B, S, H, W, C]`` prediction (C = 1 for depth, 3 for points).
    target: ``[B, S, H, W, C]`` target (no gradient flows into it).
    conf: ``[B, S, H, W]`` confidence weights.
    valid: optional ``[B, S, H, W]`` mask (default all valid).
    scales: number of strides ``2^k`` (>= 1); scales too small for a difference
      are skipped.
    clamp: clamp ``> 0`` of each pixel's gradient error.

  Returns:
    scalar: per stride, the confidence-weighted error summed over counted pixel
    pairs and divided by their number; then averaged over ``scales`` (a skipped
    stride adds 0).
  """
  if pred.shape != target.shape or pred.ndim != 5:
    raise ValueError(
      "pred and target must both be [B, S, H, W, C]; "
      f"got {pred.shape} and {target.shape}"
    )
  if conf.shape != pred.shape[:-1]:
    raise ValueError(f"conf must be {pred.shape[:-1]}, got {conf.shape}")
  if valid is not None and valid.shape != conf.shape:
    raise ValueError(f"valid must be {conf.shape}, got {valid.shape}")
  if isinstance(scales, bool) or not isinstance(scales, int) or scales < 1:
    raise ValueError(f"scales must be an int >= 1, got {scales!r}")
  if val.is_concrete(clamp) and not float(clamp) > 0:
    raise ValueError(f"clamp must be > 0, got {clamp!r}")
  v = (
    jnp.ones(conf.shape, pred.dtype)
    if valid is None
    else valid.astype(pred.dtype)
  )
  diff = pred - jax.lax.stop_gradient(target)
  total = jnp.asarray(0.0)  # weakly typed, like the Python 0.0 it stands for
  for k in range(scales):
    st = 2**k
    d, c, m = (
      diff[:, :, ::st, ::st],
      conf[:, :, ::st, ::st],
      v[:, :, ::st, ::st],
    )
    if d.shape[2] < 2 or d.shape[3] < 2:
      break
    gx = jnp.minimum(
      jnp.sum(jnp.abs(d[:, :, :, 1:] - d[:, :, :, :-1]), -1), clamp
    )
    mx = m[:, :, :, 1:] * m[:, :, :, :-1]
    gy = jnp.minimum(jnp.sum(jnp.abs(d[:, :, 1:] - d[:, :, :-1]), -1), clamp)
    my = m[:, :, 1:] * m[:, :, :-1]
    num = jnp.sum(gx * mx * c[:, :, :, 1:]) + jnp.sum(gy * my * c[:, :, 1:])
    total = total + num / jnp.maximum(jnp.sum(mx) + jnp.sum(my), 1.0)
  return total / scales


@dataclasses.dataclass(frozen=True)
class LossWeights:
  """Weights of ``L = λ_cam L_cam + λ_d L_depth + λ_p L_point + λ_g L_grad + λ_proc L_proc + λ_rep L_reproj``.

  Attributes:
    camera, depth, points, grad, procrustes, reprojection: the weights λ
      (finite, >= 0); a zero Procrustes / reprojection weight skips that term.
    alpha: ``α`` of :func:`conf_regression_loss`.
    gamma: stage discount ``γ > 0`` of :func:`camera_loss`.
    reproj_delta: Huber threshold ``δ > 0`` of :func:`reprojection_loss`.
    num_points: pixels sampled per scene for the Procrustes and reprojection
      terms (>= 1).
    conf_weighted_targets: weight those two terms by the teacher's confidences
      (else by ``valid`` alone).
  """

  camera: float = 5.0
  depth: float = 1.0
  points: float = 1.0
  grad: float = 1.0
  procrustes: float = 0.0
  reprojection: float = 0.0
  alpha: float = 0.2
  gamma: float = 0.6
  reproj_delta: float = 0.02
  num_points: int = 1024
  conf_weighted_targets: bool = True

  def __post_init__(self):
    for f in dataclasses.fields(self):
      v = getattr(self, f.name)
      if f.name == "conf_weighted_targets":
        continue
      if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not v >= 0
        or v != v
        or v == float("inf")
      ):
        raise ValueError(
          f"LossWeights.{f.name} must be a finite number >= 0, got {v!r}"
        )
    if self.num_points < 1 or self.reproj_delta <= 0 or self.gamma <= 0:
      raise ValueError(
        "LossWeights.num_points must be >= 1 and reproj_delta, gamma > 0; got "
        f"{self.num_points}, {self.reproj_delta}, {self.gamma}"
      )


class DistillTargets(NamedTuple):
  """Teacher (or ground-truth) targets for distillation, all in the normalised
  first-camera gauge.

  pose_enc ``[B,S,9]``, depth ``[B,S,H,W,1]``, depth_conf ``[B,S,H,W]``, points
  ``[B,S,H,W,3]``, point_conf ``[B,S,H,W]``, valid ``[B,S,H,W]``.
  """

  pose_enc: jax.Array
  depth: jax.Array
  depth_conf: jax.Array
  points: jax.Array
  point_conf: jax.Array
  valid: jax.Array


def ground_truth_targets(scenes: Mapping[str, np.ndarray]) -> DistillTargets:
  """Ground truth as distillation targets, every confidence one.

  Args:
    scenes: ``pose_enc`` [B,S,9], ``depth`` [B,S,H,W], ``points`` [B,S,H,W,3]
      and ``valid`` [B,S,H,W] (e.g. :func:`render_scene_arrays`).

  Returns:
    :class:`DistillTargets` of NumPy arrays with ``depth`` [B,S,H,W,1] and
    ``depth_conf`` = ``point_conf`` = ones [B,S,H,W] (float32).

  Raises:
    ValueError: ``scenes`` lacks one of the four keys.
  """
  missing = [
    k for k in ("pose_enc", "depth", "points", "valid") if k not in scenes
  ]
  if missing:
    raise ValueError(
      f"scenes must hold pose_enc, depth, points and valid; {missing} missing"
    )
  ones = np.ones(np.shape(scenes["valid"]), np.float32)
  depth = np.asarray(scenes["depth"])[..., None]
  # NumPy leaves (batches are gathered on the host), in the field order of
  # DistillTargets
  return DistillTargets._make(
    (scenes["pose_enc"], depth, ones, scenes["points"], ones, scenes["valid"])
  )


def distillation_loss(
  student: Predictions | DistillTargets,
  teacher: DistillTargets,
  weights: LossWeights,
  *,
  pose_stages: jax.Array | None = None,
  key: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Geometry-aware distillation objective **[reconstruction of the paper's
  recipe]**.

  ``L = λ_cam L_cam + λ_d L_depth + λ_p L_point + λ_g (L_grad(depth) + L_grad(points))
  + λ_proc L_proc + λ_rep L_reproj``: VGGT losses with teacher outputs as
    targets, plus the
  Procrustes loss (student point map vs teacher point map, weighted by teacher
  point confidence × valid) and the reprojection loss (teacher points,
  unprojected from teacher depth with teacher cameras, projected with student vs
  teacher cameras). Both new terms use ``num_points`` sampled pixels per scene
  (uniformly at random if ``key`` is given, else a fixed stride).

  Args:
    student: a ``Predictions`` (pose_enc, depth, depth_conf, points,
      point_conf).
    teacher: :class:`DistillTargets`.
    weights: :class:`LossWeights`.
    pose_stages: ``[n, B, S, 9]`` student refinement stages (default: the final
      pose only).
    key: optional PRNG key for point sampling.

  Returns:
    ``(loss, aux)``: the scalar total and a dict of scalar terms ('cam',
    'depth', 'points', 'grad', 'cam_t', 'cam_q', 'cam_fov', 'procrustes' and
    'reprojection' when weighted, 'total').
  """
  if not isinstance(weights, LossWeights):
    raise TypeError(
      f"weights must be a LossWeights, got {type(weights).__name__}"
    )
  if not isinstance(teacher, DistillTargets):
    raise TypeError(
      f"teacher must be a DistillTargets, got {type(teacher).__name__}"
    )
  if teacher.valid.ndim != 4:
    raise ValueError(
      f"teacher.valid must be [B, S, H, W], got {teacher.valid.shape}"
    )
  B, S, H, W = teacher.valid.shape
  for f in ("pose_enc", "depth", "depth_conf", "points", "point_conf"):
    if getattr(student, f).shape != getattr(teacher, f).shape:
      raise ValueError(
        f"student.{f} {getattr(student, f).shape} must match teacher.{f} "
        f"{getattr(teacher, f).shape}"
      )
  valid = teacher.valid.astype(student.depth.dtype)
  tconf_d = (
    teacher.depth_conf
    if weights.conf_weighted_targets
    else jnp.ones_like(teacher.depth_conf)
  )
  tconf_p = (
    teacher.point_conf
    if weights.conf_weighted_targets
    else jnp.ones_like(teacher.point_conf)
  )
  stages = student.pose_enc[None] if pose_stages is None else pose_stages
  l_cam, cam_aux = camera_loss(stages, teacher.pose_enc, gamma=weights.gamma)
  l_d = conf_regression_loss(
    student.depth, teacher.depth, student.depth_conf, valid, alpha=weights.alpha
  )
  l_p = conf_regression_loss(
    student.points,
    teacher.points,
    student.point_conf,
    valid,
    alpha=weights.alpha,
  )
  l_g = gradient_loss(
    student.depth, teacher.depth, student.depth_conf, valid
  ) + gradient_loss(student.points, teacher.points, student.point_conf, valid)
  aux = {"cam": l_cam, "depth": l_d, "points": l_p, "grad": l_g, **cam_aux}
  total = (
    weights.camera * l_cam
    + weights.depth * l_d
    + weights.points * l_p
    + weights.grad * l_g
  )

  n_pix = S * H * W
  M = min(int(weights.num_points), n_pix)
  if key is None:
    idx = jnp.round(jnp.linspace(0, n_pix - 1, M)).astype(jnp.int32)
    idx = jnp.broadcast_to(idx, (B, M))
  else:
    idx = jax.vmap(lambda k: jax.random.choice(k, n_pix, (M,), replace=False))(
      jax.random.split(key, B)
    )
  take = lambda a: jnp.take_along_axis(
    a.reshape(B, n_pix, -1), idx[..., None], axis=1
  )

  if weights.procrustes or weights.reprojection:
    Xs = take(student.points)
    Yt = take(teacher.points)
    w = (take(tconf_p[..., None]) * take(valid[..., None]))[..., 0]
    l_proc = procrustes_loss(Xs, Yt, w)
    aux["procrustes"] = l_proc
    total = total + weights.procrustes * l_proc
  if weights.reprojection:
    hw = (H, W)
    cams_t = geo.decode_pose_unchecked(
      jax.lax.stop_gradient(teacher.pose_enc), hw
    )
    cams_s = geo.decode_pose_unchecked(student.pose_enc, hw)
    pts_t = geo.unproject_depth(teacher.depth[..., 0], *cams_t)  # [B,S,H,W,3]
    Pt = take(pts_t)
    wt = (take(tconf_d[..., None]) * take(valid[..., None]))[..., 0]
    l_rep = reprojection_loss(
      Pt, cams_s, cams_t, hw, delta=weights.reproj_delta, point_weights=wt
    )
    aux["reprojection"] = l_rep
    total = total + weights.reprojection * l_rep
  aux["total"] = total
  return total, aux
