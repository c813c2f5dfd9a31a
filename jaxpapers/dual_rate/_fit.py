"""Fitting a network (or an MMD student) on images: the losses of a run and a
resumable loop.

:func:`fit` trains one network with :func:`training_optimizer` and returns its
EMA weights; its jitted step is memoised on (graph structure, loss object)
(:func:`fit_step`), so networks of several training seeds with the same
structure share one compiled program when the losses and optimizers are built
once (:func:`make_losses`, one optimizer per setting).
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import pathlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers import core
from jaxpapers.dual_rate._mmd import mmd_pair_loss
from jaxpapers.dual_rate._schedule import NoiseSchedule
from jaxpapers.dual_rate._training import (
  COUPLINGS,
  diffusion_loss,
  dual_rate_loss,
  find_ema,
  training_optimizer,
)

# ``loss_fn(model, x, cond, key, consts) -> (loss, metrics)``.
LossFn = Callable[..., tuple[jax.Array, dict[str, jax.Array]]]

# One optimizer object per setting: the optimizer is a static field of the train
# state, so a fresh one per network would make the memoised step of `fit_step`
# recompile.
_optimizer = functools.cache(training_optimizer)


@functools.cache
def fit_step(graphdef: nnx.GraphDef, loss_fn: LossFn) -> Callable[..., Any]:
  """The jitted training step ``step(state, batch, consts) -> (state,
  metrics)``, memoised.

  ``consts`` (e.g. a frozen MMD teacher's nnx state) is an argument of the
  jitted step, not a closure: closed-over arrays would be baked into the program
  as HLO constants, which breaks compilation for a full-size teacher.

  Args:
    graphdef: the model's graph definition (equal for networks of the same
      structure).
    loss_fn: ``loss_fn(model, x, cond, key, consts) -> (loss, metrics)``.

  Returns:
    the jitted step over a ``core.TrainState`` and a batch ``(x [B, H, W, C],
    cond [B] or None, key)``.
  """

  if not callable(loss_fn):
    raise TypeError(
      f"loss_fn must be callable (model, x, cond, key, consts), got {loss_fn!r}"
    )

  @jax.jit
  def step_fn(state, batch, consts):
    x, c, key = batch

    def lf(p):
      return loss_fn(nnx.merge(graphdef, p, state.rest), x, c, key, consts)

    (loss, aux), grads = jax.value_and_grad(lf, has_aux=True)(state.params)
    return state.apply_gradients(grads), {"loss": loss, **aux}

  return step_fn


class _Prefetch:
  """``fn(step)`` read ahead by ``depth`` steps on a background thread (0: no
  read-ahead); the batch of a step depends on ``step`` only, so the result is
  the same with or without it."""

  def __init__(self, fn, depth: int = 0):
    self.fn, self.depth, self.futures = fn, int(depth), {}
    self.pool = (
      concurrent.futures.ThreadPoolExecutor(1) if self.depth > 0 else None
    )

  def __call__(self, step):
    if self.pool is None:
      return self.fn(step)
    for s in range(step, step + self.depth + 1):
      if s not in self.futures:
        self.futures[s] = self.pool.submit(self.fn, s)
    for s in [s for s in self.futures if s < step]:
      self.futures.pop(s).cancel()
    return self.futures.pop(step).result()

  def close(self):
    if self.pool is not None:
      self.pool.shutdown(wait=False, cancel_futures=True)


def fit(
  model: nnx.Module,
  loss_fn: LossFn,
  images: Any,
  labels: Any,
  *,
  name: str,
  steps: int,
  learning_rate: float,
  warmup_steps: int,
  ema_decay: float,
  batch_size: int,
  seed: int,
  workdir: str | os.PathLike[str],
  checkpoint_every: int = 0,
  data_parallel: bool = False,
  prefetch: int = 0,
  consts: Any = None,
) -> tuple[nnx.Module, list[dict[str, Any]], float]:
  """Trains ``model`` on random batches of ``images`` and returns its EMA
  weights.

  Batch ``s`` draws indices from ``np.random.default_rng([seed, salt, s])`` and
  the loss key ``fold_in(fold_in(key(seed), salt), s)``, with ``salt`` the sum
  of the code points of ``name``: the run is deterministic and resumes from its
  checkpoints under ``workdir/name``.

  Args:
    model: the network (or ``MMDPair``) to train.
    loss_fn: ``loss_fn(model, x, cond, key, consts) -> (loss, metrics)``.
    images: [N, H, W, C] float images in [-1, 1] (any array indexable by an
      index array).
    labels: [N] int class labels, indexable the same way.
    name: the training's name (checkpoint folder, progress label, batch salt).
    steps: training steps.
    learning_rate: the peak learning rate of :func:`training_optimizer`.
    warmup_steps: its warmup steps.
    ema_decay: its EMA decay (0: the EMA is the last parameters).
    batch_size: examples per step (divisible by the devices when
      ``data_parallel``).
    seed: the seed of batches and loss keys.
    workdir: checkpoints go under ``workdir/name``.
    checkpoint_every: steps between checkpoints (0: none).
    data_parallel: shard the batch over every device, parameters (and
      ``consts``) replicated.
    prefetch: host batches read ahead on a background thread (0: none).
    consts: an extra argument of the jitted step (e.g. a frozen teacher's
      state).

  Returns:
    ``(EMA model, history, seconds)``: the model with its EMA weights, the
    loop's logged metrics and the training's wall time.
  """
  tx = _optimizer(learning_rate, steps, warmup_steps, ema_decay)
  state = core.TrainState.create(model, tx)
  graphdef = state.graphdef
  mesh = None
  if data_parallel:  # the compiler inserts the gradient all-reduce
    mesh = core.make_mesh(axis_type=jax.sharding.AxisType.Auto)
    n_dev = mesh.shape[mesh.axis_names[0]]
    if batch_size % n_dev:
      raise ValueError(
        f"batch_size {batch_size} must be divisible by the {n_dev} devices"
      )
    state = core.replicate(state, mesh)
    consts = None if consts is None else core.replicate(consts, mesh)
  step_fn = functools.partial(fit_step(graphdef, loss_fn), consts=consts)
  base_key = jax.random.key(seed)
  salt = sum(ord(ch) for ch in name)

  def host_batch(step):
    idx = np.random.default_rng([seed, salt, step]).integers(
      0, images.shape[0], batch_size
    )
    return images[idx], labels[idx]

  def batch_fn(step):
    x, y = prefetcher(step)
    key = jax.random.fold_in(jax.random.fold_in(base_key, salt), step)
    if mesh is not None:
      x, y = core.shard_batch((x, y), mesh)
      return x, y, core.replicate(key, mesh)
    return jnp.asarray(x), jnp.asarray(y), key

  prefetcher = _Prefetch(host_batch, depth=prefetch)
  t0 = time.perf_counter()
  state, history = core.train_loop(
    state,
    step_fn,
    batch_fn,
    num_steps=steps,
    workdir=pathlib.Path(workdir) / name,
    checkpoint_every=checkpoint_every,
    log_every=max(steps // 10, 1),
    desc=name,
  )
  prefetcher.close()
  seconds = time.perf_counter() - t0
  return (
    nnx.merge(graphdef, find_ema(state.opt_state), state.rest),
    history,
    seconds,
  )


def mmd_step_loss(
  teacher_graphdef: nnx.GraphDef,
  schedule: NoiseSchedule,
  num_student_steps: int,
  refresh: np.ndarray | None,
) -> LossFn:
  """The MMD loss for :func:`fit`, with the frozen teacher's state passed as
  ``consts``.

  Args:
    teacher_graphdef: the teacher's graph definition.
    schedule: the noise schedule.
    num_student_steps: the student's sampling steps.
    refresh: [num_student_steps] bool refresh set of a dual-rate student, or
      None.

  Returns:
    ``loss(pair, x, cond, key, teacher_state) -> (loss, metrics)`` (:func:`mmd_pair_loss`).
  """

  if int(num_student_steps) < 1:
    raise ValueError(
      f"num_student_steps must be >= 1, got {num_student_steps!r}"
    )

  def loss(pair, x, c, key, teacher_state):
    teacher = nnx.merge(teacher_graphdef, teacher_state)
    return mmd_pair_loss(
      pair,
      teacher,
      x,
      c,
      key,
      schedule=schedule,
      num_student_steps=num_student_steps,
      refresh=refresh,
    )

  return loss


def make_losses(
  schedule: NoiseSchedule,
  *,
  weighting: str,
  train_grid_steps: Sequence[int],
  max_staleness: int,
  p_fresh: float,
  coupling: str,
  rollout_frac: float,
) -> tuple[LossFn, Callable[..., LossFn]]:
  """The training losses of a run: the baseline's and a memoised factory of the
  pair's.

  Args:
    schedule: the noise schedule.
    weighting: the loss weighting w(lambda_t) (:func:`loss_weight`).
    train_grid_steps: sampler grids N drawn per example for the staleness.
    max_staleness: K_max of :func:`sample_staleness`.
    p_fresh: probability of a fresh (k = 0) example.
    coupling: the default coupling of (z_tau, z_t) (``COUPLINGS``).
    rollout_frac: the rollout share of the batch with ``coupling='rollout'``.

  Returns:
    ``(base_loss, dual_loss_fn)``: ``base_loss(model, x, cond, key, consts)`` is
    :func:`diffusion_loss`; ``dual_loss_fn(coupling=, max_staleness=,
    use_features=)`` returns the pair's :func:`dual_rate_loss` with those
    settings (the run's by default), the same object for equal arguments, so the
    memoised :func:`fit_step` is reused.
  """

  if coupling not in COUPLINGS:
    raise ValueError(f"coupling must be one of {COUPLINGS}, got {coupling!r}")

  def base_loss(m, x, c, k, consts):
    del consts
    return diffusion_loss(m, x, c, k, schedule=schedule, weighting=weighting)

  @functools.cache
  def dual_loss_fn(
    coupling=coupling, max_staleness=max_staleness, use_features=True
  ):
    def loss(m, x, c, k, consts):
      del consts
      return dual_rate_loss(
        m,
        x,
        c,
        k,
        schedule=schedule,
        num_grid_steps=tuple(train_grid_steps),
        max_staleness=max_staleness,
        p_fresh=p_fresh,
        coupling=coupling,
        rollout_frac=rollout_frac,
        weighting=weighting,
        use_features=use_features,
      )

    return loss

  return base_loss, dual_loss_fn
