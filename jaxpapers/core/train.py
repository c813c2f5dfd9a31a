"""A train state for Flax NNX models kept functional, and a resumable step loop.

The model is split once (``nnx.split``) into a static graph definition and
pytrees of parameters and other state; the step function is a pure
``jax.jit``-able function of :class:`TrainState`, merging the model back inside
(``state.model()``) where it needs to call it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from etils import epath
from flax import nnx

from jaxpapers.core import checkpoint as checkpoint_lib
from jaxpapers.core import metric_writer as metric_writer_lib
from jaxpapers.core.progress import progress


class TrainState(flax.struct.PyTreeNode):
  """Functional training state of an NNX model.

  Build one with :meth:`create`; the constructor's arguments are the fields.

  Args:
    step: int32 scalar, number of updates applied.
    graphdef: the model's static graph definition (not a pytree leaf).
    params: the ``nnx.Param`` variables, as an ``nnx.State`` pytree.
    rest: every other variable (batch stats, RNG counters, ...), as
      ``nnx.State``.
    opt_state: the optax state of ``tx`` over ``params``.
    tx: the optax transformation (static).
  """

  step: jax.Array
  params: Any
  rest: Any
  opt_state: Any
  graphdef: Any = flax.struct.field(pytree_node=False)
  tx: optax.GradientTransformation = flax.struct.field(pytree_node=False)

  @classmethod
  def create(
    cls, model: nnx.Module, tx: optax.GradientTransformation
  ) -> TrainState:
    """Splits ``model`` into a state at step 0 and initialises the optimizer.

    Args:
      model: the NNX module; its ``nnx.Param`` variables become ``params``, the
        rest ``rest``.
      tx: the optax transformation, initialised over ``params``.

    Returns:
      the state with ``step = 0`` (an int32 scalar).
    """
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    return cls(
      step=jnp.zeros((), jnp.int32),
      params=params,
      rest=rest,
      opt_state=tx.init(params),
      graphdef=graphdef,
      tx=tx,
    )

  def model(self) -> nnx.Module:
    """The NNX module with this state's variables.

    Returns:
      a fresh module each call, merged from ``graphdef``, ``params`` and
      ``rest``.
    """
    return nnx.merge(self.graphdef, self.params, self.rest)

  def value_and_grad(
    self, loss_fn: Callable[..., Any], *args: Any, has_aux: bool = False
  ) -> tuple[Any, Any, Any]:
    """Differentiates ``loss_fn(model, *args)`` with respect to the parameters.

    Merges the model, differentiates with ``nnx.value_and_grad`` (so layers that
    mutate state, such as BatchNorm statistics or dropout RNG counters, work
    under ``jax.jit``), and splits the mutated non-parameter state back out.

    Args:
      loss_fn: ``loss_fn(model, *args)`` returning a scalar loss, or
        ``(loss, aux)`` when ``has_aux``.
      *args: further arguments of ``loss_fn`` (e.g. the batch).
      has_aux: whether ``loss_fn`` returns ``(loss, aux)``.

    Returns:
      ``(value, grads, rest)``: ``value`` is what ``loss_fn`` returns (a
      ``(loss, aux)`` pair when ``has_aux``), ``grads`` has the structure of
      ``params``, and ``rest`` is the updated non-parameter state, ready for
      ``apply_gradients(grads, rest=rest)``.
    """
    model = self.model()
    value, grads = nnx.value_and_grad(loss_fn, has_aux=has_aux)(model, *args)
    _, _, rest = nnx.split(model, nnx.Param, ...)
    return value, grads, rest

  def apply_gradients(
    self, grads: Any, *, rest: Any = None, **extra_args: Any
  ) -> TrainState:
    """One optax update.

    Args:
      grads: gradients, of ``params``' structure.
      rest: updated non-parameter state (from :meth:`value_and_grad`); None
        keeps ``rest``.
      **extra_args: keyword arguments passed to ``tx.update`` (for
        ``GradientTransformationExtraArgs``, e.g. ``value`` of a line search).

    Returns:
      the state with ``step + 1``, updated ``params`` and ``opt_state``, and
      ``rest``.
    """
    if extra_args:
      updates, opt_state = self.tx.update(
        grads, self.opt_state, self.params, **extra_args
      )
    else:
      updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
    params = optax.apply_updates(self.params, updates)
    return self.replace(
      step=optax.safe_increment(self.step),
      params=params,
      opt_state=opt_state,
      rest=self.rest if rest is None else rest,
    )

  def checkpoint_tree(self) -> dict[str, Any]:
    """The arrays to save (everything but the static parts).

    Returns:
      ``{'step', 'params', 'rest', 'opt_state'}``, the pytree
      :meth:`restore_from` reads.
    """
    return {
      "step": self.step,
      "params": self.params,
      "rest": self.rest,
      "opt_state": self.opt_state,
    }

  def restore_from(self, tree: dict[str, Any]) -> TrainState:
    """The state with its arrays taken from a restored checkpoint tree.

    Args:
      tree: a dict of the form returned by :meth:`checkpoint_tree`.

    Returns:
      this state with ``step``, ``params``, ``rest`` and ``opt_state`` replaced.
    """
    return self.replace(
      step=tree["step"],
      params=tree["params"],
      rest=tree["rest"],
      opt_state=tree["opt_state"],
    )


_HISTORY_FILE = "history.jsonl"


def _history_record(rec: dict[str, Any]) -> dict[str, Any]:
  """A JSONL record ``{"step", **metrics}`` in the in-memory order
  ``{**metrics, "step", ...}``."""
  out = {k: v for k, v in rec.items() if k not in ("step", "elapsed_s")}
  out["step"] = rec["step"]
  if "elapsed_s" in rec:
    out["elapsed_s"] = rec["elapsed_s"]
  return out


def _scalarize(metrics: dict[str, Any]) -> dict[str, Any]:
  out = {}
  for k, v in metrics.items():
    arr = np.asarray(v)
    out[k] = arr.item() if arr.ndim == 0 else arr.tolist()
  return out


def train_loop(
  state: TrainState,
  step_fn: Callable[[TrainState, Any], tuple[TrainState, dict[str, Any]]],
  batch_fn: Callable[[int], Any],
  *,
  num_steps: int,
  workdir: str | os.PathLike[str] | None = None,
  checkpoint_every: int = 0,
  eval_fn: Callable[[TrainState], dict[str, Any]] | None = None,
  eval_every: int = 0,
  log_every: int = 100,
  desc: str = "train",
  max_to_keep: int = 2,
) -> tuple[TrainState, list[dict[str, Any]]]:
  """Runs ``step_fn`` until ``state.step == num_steps``, resumably.

  Args:
    state: the initial state (also the abstract restore target).
    step_fn: ``(state, batch) -> (state, metrics)``; jit it (and donate) yourself.
    batch_fn: ``step -> batch``. It must depend only on ``step`` (e.g. a key
      folded with ``step``), so a resumed run sees the same batches.
    num_steps: total number of updates.
    workdir: with ``checkpoint_every > 0``, checkpoints go to
      ``<workdir>/checkpoints`` and the logged history to
      ``<workdir>/history.jsonl`` (and TensorBoard events when ``tensorboardX``
      is installed) through :class:`~jaxpapers.core.metric_writer.MetricWriter`,
      written by process 0 only; a rerun resumes from the latest checkpoint
      that verifies. The history is flushed before every checkpoint save, so a
      run killed at any point and rerun logs every step exactly once and ends
      in the uninterrupted run's state.
    checkpoint_every: save every this many steps (and at the end); 0 disables.
    eval_fn: ``state -> metrics``, run every ``eval_every`` steps and at the
      end.
    eval_every: 0 disables periodic evaluation (the final one still runs).
    log_every: record training metrics every this many steps.
    desc: progress bar label.
    max_to_keep: checkpoints kept.

  Returns:
    The final state and the history (one dict per logged step, with ``step``,
    training metrics prefixed ``train/``, eval metrics prefixed ``eval/``).
  """
  if num_steps < 0:
    raise ValueError(f"num_steps must be >= 0, got {num_steps}")
  ckpt = None
  writer = None
  history: list[dict[str, Any]] = []
  start = int(state.step)
  if workdir is not None and checkpoint_every > 0:
    workdir = epath.Path(workdir)
    ckpt = checkpoint_lib.Checkpointer(
      workdir / "checkpoints", max_to_keep=max_to_keep
    )
    resume_step = None
    if ckpt.latest_step() is not None:
      # The newest checkpoint that matches its digests (a corrupt one is
      # skipped, warned of).
      _, tree = ckpt.restore_latest(state.checkpoint_tree())
      state = state.restore_from(tree)
      start = resume_step = int(state.step)
      # Every process reads the history back (so all return the same list);
      # only process 0 rewrites the file (MetricWriter is a no-op elsewhere).
      history = [
        _history_record(r)
        for r in metric_writer_lib.read_metrics(
          workdir, _HISTORY_FILE, allow_torn_tail=True
        )
        if r["step"] <= start
      ]
    writer = metric_writer_lib.MetricWriter(
      workdir, filename=_HISTORY_FILE, resume_step=resume_step
    )

  def record(rec: dict[str, Any]) -> None:
    history.append(rec)
    if writer is not None:
      writer.write(rec["step"], {k: v for k, v in rec.items() if k != "step"})

  bar = progress(total=num_steps, initial=start, desc=desc)
  t0 = time.perf_counter()
  try:
    for step in range(start, num_steps):
      state, metrics = step_fn(state, batch_fn(step))
      done = step + 1
      rec: dict[str, Any] = {}
      if log_every and (done % log_every == 0 or done == num_steps):
        rec.update({f"train/{k}": v for k, v in _scalarize(metrics).items()})
        bar.set_postfix(
          {k: f"{v:.4g}" for k, v in rec.items() if isinstance(v, float)},
          refresh=False,
        )
      if eval_fn is not None and (
        (eval_every and done % eval_every == 0) or done == num_steps
      ):
        rec.update(
          {f"eval/{k}": v for k, v in _scalarize(eval_fn(state)).items()}
        )
      if rec:
        rec["step"] = done
        rec["elapsed_s"] = time.perf_counter() - t0
        record(rec)
      if ckpt is not None and (
        done % checkpoint_every == 0 or done == num_steps
      ):
        if writer is not None:  # always, with ckpt
          # every record up to `done` is on disk before its checkpoint can be
          writer.flush()
        ckpt.save(done, state.checkpoint_tree(), force=True)
      bar.update(1)
    if start >= num_steps and eval_fn is not None and not history:
      record(
        {
          "step": start,
          **{f"eval/{k}": v for k, v in _scalarize(eval_fn(state)).items()},
        }
      )
  finally:
    bar.close()
    if writer is not None:
      writer.close()
    if ckpt is not None:
      ckpt.close()
  return state, history
