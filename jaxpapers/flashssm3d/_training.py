"""Training recipe of FlashSSM-3D: the train step, the optimizer, the FLOP
budget and batches.

A **reconstruction** (the paper's recipe is not public): every model (teacher,
distilled or ground-truth-trained student) minimises :func:`distillation_loss`
with AdamW under a warm-up + cosine schedule and global-norm clipping; a student
trains for as many steps as fit in its FLOP budget (a fraction of the teacher's
training FLOPs, every ``lax.scan`` step counted by :func:`count_flops`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers import core
from jaxpapers.flashssm3d._flops import count_flops
from jaxpapers.flashssm3d._losses import LossWeights, distillation_loss

# (images [B, S, H, W, 3], DistillTargets with leading axis B)
Batch = tuple[Any, Any]


def train_step(
  weights: LossWeights,
) -> Callable[[core.TrainState, Batch], tuple[Any, dict]]:
  """The train step of every model: one optax update on
  :func:`distillation_loss`.

  ``L = λ_cam L_cam + λ_d L_depth + λ_p L_point + λ_g L_grad + λ_proc L_proc +
  λ_rep L_reproj`` of the model's predictions ``model(images)`` against
  ``targets`` (the teacher's outputs or ground truth,
  :func:`ground_truth_targets`), camera stages included.

  Args:
    weights: the loss weights λ (:class:`LossWeights`; a zero Procrustes /
      reprojection weight skips that term).

  Returns:
    ``step(state, (images, targets)) -> (state', aux)`` for a
    :class:`jaxpapers.core.TrainState` of a :class:`FlashSSM3D` or
    :class:`AATeacher`: ``aux`` holds the loss terms (``total`` and one entry
    per term) of the batch before the update. Pure; jit it (the state may be
    donated).

  Raises:
    TypeError: ``weights`` is not a :class:`LossWeights`.
  """
  if not isinstance(weights, LossWeights):
    raise TypeError(
      f"weights must be a LossWeights, got {type(weights).__name__}"
    )

  def loss_fn(model, images, targets):
    pred = model(images)
    return distillation_loss(
      pred, targets, weights, pose_stages=pred.pose_stages
    )

  def step(state, batch):
    images, targets = batch
    (_, aux), grads, rest = state.value_and_grad(
      loss_fn, images, targets, has_aux=True
    )
    return state.apply_gradients(grads, rest=rest), aux

  return step


def compile_step(
  step_fn: Callable[[Any, Batch], tuple[Any, Any]],
  state: Any,
  batch: Batch,
  *,
  count: bool = True,
) -> tuple[jax.stages.Compiled, float | None]:
  """A train step compiled ahead of time, with its FLOPs per step.

  The step is jitted with the state donated (argument 0), traced once on
  ``(state, batch)``, lowered and compiled; its FLOPs are counted on that trace
  by :func:`count_flops` (every ``lax.scan`` step counted, not once per loop
  body as XLA does).

  Args:
    step_fn: ``step_fn(state, batch) -> (state, aux)``, e.g. :func:`train_step`'s result.
    state: the train state (a pytree, e.g. ``core.TrainState``) whose shapes the
      program takes.
    batch: a batch (e.g. ``(images [B, S, H, W, 3], DistillTargets)``) of the
      shapes and shardings of every later batch.
    count: count the FLOPs (False skips the count, which traces the step's jaxpr
      again).

  Returns:
    ``(compiled, flops)``: the compiled step, called as
    ``compiled(state, batch)`` (the state passed in is donated), and the FLOPs
    of one step (None with ``count=False``).

  Raises:
    TypeError: ``step_fn`` is not callable.
  """
  if not callable(step_fn):
    raise TypeError(f"step_fn must be callable, got {type(step_fn).__name__}")
  traced = jax.jit(step_fn, donate_argnums=0).trace(state, batch)
  compiled = traced.lower().compile()
  # without with_xla
  return compiled, (cast(float, count_flops(traced)) if count else None)


def train_optimizer(
  learning_rate: float, *, warmup: int, steps: int
) -> optax.GradientTransformation:
  """AdamW (weight decay 1e-4) after global-norm clipping at 1, under warm-up +
  cosine decay.

  The learning rate rises linearly from 0 to ``learning_rate`` over
  ``min(warmup, steps - 1)`` steps (at least 1), then follows a cosine down to
  ``0.05 · learning_rate`` at ``steps`` (``optax.warmup_cosine_decay_schedule``;
  runs of fewer than 2 steps use a 2-step schedule).

  Args:
    learning_rate: the peak learning rate (finite, > 0).
    warmup: warm-up steps (>= 0; cut to ``steps - 1``).
    steps: the run's total steps (>= 1), the end of the cosine.

  Returns:
    ``optax.chain(clip_by_global_norm(1.0), adamw(schedule,
    weight_decay=1e-4))``.

  Raises:
    ValueError: a non-positive or non-finite ``learning_rate``, ``warmup < 0``
      or ``steps < 1``.
  """
  if not (
    isinstance(learning_rate, (int, float)) and math.isfinite(learning_rate)
  ):
    raise ValueError(
      f"learning_rate must be a finite number > 0, got {learning_rate!r}"
    )
  if learning_rate <= 0:
    raise ValueError(
      f"learning_rate must be a finite number > 0, got {learning_rate!r}"
    )
  if int(warmup) != warmup or warmup < 0:
    raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
  if int(steps) != steps or steps < 1:
    raise ValueError(f"steps must be an int >= 1, got {steps!r}")
  sched = optax.warmup_cosine_decay_schedule(
    0.0,
    learning_rate,
    min(warmup, max(steps - 1, 1)),
    max(steps, 2),
    learning_rate * 0.05,
  )
  return optax.chain(
    optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=1e-4)
  )


def steps_within_budget(
  step_flops: float, budget_flops: float, *, min_steps: int, max_steps: int
) -> int:
  """How many train steps fit in a FLOP budget: ``clip(⌊budget / step⌋,
  min_steps, max_steps)``.

  Args:
    step_flops: FLOPs of one train step (:func:`count_flops`); a NaN, infinite
      or non-positive count (no cost model) gives ``min_steps``.
    budget_flops: the FLOPs the run may spend on steps (what is left of its
      budget after, e.g., the teacher's inference on the student's scenes; a
      negative budget gives ``min_steps``).
    min_steps: the fewest steps (>= 1).
    max_steps: the most steps (>= ``min_steps``).

  Returns:
    The number of steps, an int in ``[min_steps, max_steps]``.

  Raises:
    ValueError: ``min_steps < 1``, ``max_steps < min_steps``, or a NaN
      ``budget_flops`` with a usable ``step_flops``.
  """
  if (
    int(min_steps) != min_steps or min_steps < 1 or int(max_steps) != max_steps
  ):
    raise ValueError(f"min_steps must be an int >= 1, got {min_steps!r}")
  if max_steps < min_steps:
    raise ValueError(
      f"max_steps must be an int >= min_steps={min_steps}, got {max_steps!r}"
    )
  ok = np.isfinite(step_flops) and step_flops > 0
  if ok and math.isnan(budget_flops):
    raise ValueError("budget_flops must be a number of FLOPs, got NaN")
  fit = np.floor(budget_flops / step_flops) if ok else min_steps
  return int(np.clip(fit, min_steps, max_steps))


def sample_batches(
  images: Any, targets: Any, *, batch_size: int, seed: int, sharding: Any = None
) -> Callable[[int], Batch]:
  """Seeded random batches of ``(images, targets)``, a pure function of the
  step.

  Batch ``step`` holds the examples ``numpy.random.default_rng((seed,
  step)).choice(n, batch_size, replace=n < batch_size)`` of the ``n`` examples,
  so a resumed run sees the same batches.

  Args:
    images: ``[n, ...]`` array (NumPy).
    targets: a pytree of ``[n, ...]`` arrays (e.g. :class:`DistillTargets`).
    batch_size: examples per batch (>= 1; with ``n < batch_size`` drawn with
      replacement).
    seed: the generator seed.
    sharding: an optional ``jax.sharding.Sharding`` every batch array is placed
      with (e.g. the batch axis split over a mesh); None puts them on the
      default device.

  Returns:
    ``batch(step) -> (images [batch_size, ...], targets)`` as JAX arrays.

  Raises:
    ValueError: ``batch_size < 1``, no examples, or a target whose leading axis
      is not ``n``.
  """
  n = len(images)
  if int(batch_size) != batch_size or batch_size < 1:
    raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
  if n < 1:
    raise ValueError("images must hold at least one example on axis 0")
  for leaf in jax.tree.leaves(targets):
    if np.shape(leaf)[:1] != (n,):
      raise ValueError(
        f"targets must have {n} examples on axis 0 like images, "
        f"got {np.shape(leaf)}"
      )

  def put(a):
    return (
      jnp.asarray(a)
      if sharding is None
      else jax.device_put(np.asarray(a), sharding)
    )

  def batch(step: int) -> Batch:
    idx = np.random.default_rng((seed, step)).choice(
      n, batch_size, replace=n < batch_size
    )
    return put(images[idx]), jax.tree.map(lambda a: put(a[idx]), targets)

  return batch
