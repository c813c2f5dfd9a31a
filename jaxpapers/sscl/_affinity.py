"""SGSR, Structure-Guided Semantic Refinement: VFM affinities refine CLIP
text-patch responses.

Reconstruction (the paper's code is not public; the abstract names the objective
only). The affinity follows ProxyCLIP's proxy attention (``mc-lan/ProxyCLIP``:
cosine similarities of frozen vision-foundation-model patch features,
thresholded, then a softmax at temperature ``1 / γ``, γ = 3); the refinement is
a label-propagation step on those affinities.

  S = Ĝ Ĝᵀ,  S_ij ← −∞ where S_ij < θ (i ≠ j),  A = softmax_row(γ S)          (SGSR-1)
  R = (1 − α) L + α A^k L                                                    (SGSR-3)

with ``Ĝ`` the row-normalised VFM patch features and ``L = s F̂_t Tᵀ`` the
frozen CLIP patch-text logits. The diagonal is never masked (``S_ii = 1`` for
any non-zero feature), so every row of ``A`` is a distribution, also for a zero
feature vector.

Note: ``(1 − α) L + α A^k L`` is not the same as iterating
``L ← (1 − α) L + α A L`` k times (that gives ``((1 − α) I + α A)^k L``); this
module implements the closed form above.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def _l2(x, eps=1e-12):
  return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + eps)


def _finite_flag(x, name, validate):
  if not validate:
    return None
  return V.debug_check_values(
    jnp.isfinite(x), f"{name} must be finite (no NaN or inf)"
  )


def vfm_affinity(
  g: jax.Array,
  *,
  gamma: float = 3.0,
  threshold: float = 0.2,
  validate: bool = True,
) -> jax.Array:
  """Row-stochastic patch affinity from frozen VFM features (SGSR-1).

  ``A = softmax_row(γ · mask_θ(Ĝ Ĝᵀ))``, where ``mask_θ`` sets off-diagonal
  entries below ``θ`` to ``−∞``.

  Args:
    g: ``[N, D']`` or ``[B, N, D']`` float VFM patch features (any norm).
    gamma: inverse softmax temperature γ (> 0); ProxyCLIP uses 3.
    threshold: cosine threshold θ in [-1, 1]; entries below it get zero
      affinity.
    validate: check that ``g`` is finite (eagerly: ValueError; under jit: NaN
      output).

  Returns:
    ``[..., N, N]`` float32 affinity; each row is non-negative and sums to 1.

  Example:
    >>> A = vfm_affinity(jnp.eye(4))  # orthogonal features: A = I
  """
  g = V.check_array(g, "g", ndim=(2, 3), dtype="float", nonempty=True)
  gamma = V.check_float(gamma, "gamma", min_value=0.0, min_inclusive=False)
  threshold = V.check_float(
    threshold, "threshold", min_value=-1.0, max_value=1.0
  )
  ok = _finite_flag(g, "g", validate)
  gh = _l2(g.astype(jnp.float32))
  s = jnp.einsum("...id,...jd->...ij", gh, gh)  # [.., N, N]
  n = s.shape[-1]
  keep = (s >= threshold) | jnp.eye(n, dtype=bool)
  a = jax.nn.softmax(jnp.where(keep, gamma * s, -jnp.inf), axis=-1)
  return V.poison_floats(a, ok)


def refine_logits(
  logits: jax.Array,
  affinity: jax.Array,
  *,
  alpha: float = 0.5,
  steps: int = 2,
  validate: bool = True,
) -> jax.Array:
  """Affinity-refined text-patch logits (SGSR-3): ``R = (1 − α) L + α A^k L``.

  Args:
    logits: ``[N, C]`` or ``[B, N, C]`` float patch-text logits ``L``.
    affinity: ``[N, N]`` or ``[B, N, N]`` row-stochastic affinity ``A`` (same
      batch shape).
    alpha: mixing weight α in [0, 1] (0: ``R = L``).
    steps: the power k >= 0 of ``A`` (0: ``R = L``).
    validate: check that ``logits`` are finite and ``affinity`` rows are
      non-negative and sum to 1 (eagerly: ValueError; under jit: NaN output).

  Returns:
    ``[..., N, C]`` float32 refined logits ``R``.
  """
  logits = V.check_array(
    logits, "logits", ndim=(2, 3), dtype="float", nonempty=True
  )
  affinity = V.check_array(
    affinity, "affinity", ndim=logits.ndim, dtype=("float")
  )
  n = logits.shape[-2]
  want = (*logits.shape[:-2], n, n)
  if affinity.shape != want:
    raise ValueError(
      f"affinity must have shape {list(want)} (one row per patch), "
      f"got {list(affinity.shape)}"
    )
  alpha = V.check_float(alpha, "alpha", min_value=0.0, max_value=1.0)
  steps = V.check_int(steps, "steps", min_value=0)
  ok = None
  if validate:
    rows = jnp.abs(affinity.sum(-1) - 1.0) < 1e-3
    ok = V.all_flags(
      _finite_flag(logits, "logits", True),
      V.debug_check_values(
        jnp.all(jnp.isfinite(affinity))
        & jnp.all(affinity >= 0)
        & jnp.all(rows),
        "affinity must be row-stochastic (non-negative rows summing to 1)",
      ),
    )
  L = logits.astype(jnp.float32)
  A = affinity.astype(jnp.float32)
  prop = L
  for _ in range(steps):  # k is static and small: k matmuls, no N x N power
    prop = A @ prop
  return V.poison_floats((1.0 - alpha) * L + alpha * prop, ok)


def proxy_attention(values: jax.Array, affinity: jax.Array) -> jax.Array:
  """Training-free proxy attention (ProxyCLIP-style): ``A V``.

  The last CLIP block's own attention is replaced by the VFM affinity, which
  then mixes CLIP's value vectors; the caller applies the block's output
  projection.

  Args:
    values: ``[N, D]`` or ``[B, N, D]`` float value vectors.
    affinity: ``[N, N]`` or ``[B, N, N]`` row-stochastic affinity.

  Returns:
    ``[..., N, D]`` mixed values.
  """
  values = V.check_array(
    values, "values", ndim=(2, 3), dtype="float", nonempty=True
  )
  affinity = V.check_array(
    affinity, "affinity", ndim=values.ndim, dtype=("float")
  )
  n = values.shape[-2]
  want = (*values.shape[:-2], n, n)
  if affinity.shape != want:
    raise ValueError(
      f"affinity must have shape {list(want)}, got {list(affinity.shape)}"
    )
  return affinity.astype(jnp.float32) @ values.astype(jnp.float32)
