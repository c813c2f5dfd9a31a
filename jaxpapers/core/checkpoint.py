"""Checkpoint/resume on orbax ``CheckpointManager``.

Saves are asynchronous; :meth:`Checkpointer.wait` (also called by ``close`` and
on context exit) blocks until they are on disk. Restores always go against an
abstract target (``jax.ShapeDtypeStruct`` leaves with shardings), so arrays come
back with the structure, dtypes and placement the caller expects.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import jax
import orbax.checkpoint as ocp
from etils import epath


def abstract_like(tree: Any) -> Any:
  """The abstract target (shape, dtype, sharding) of a concrete pytree."""

  def to_abstract(x):
    if isinstance(x, jax.Array):
      return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
    return x

  return jax.tree.map(to_abstract, tree)


def _as_path(directory) -> epath.Path:
  path = epath.Path(directory)
  if "://" in str(directory):
    return path
  return epath.Path(os.path.abspath(os.path.expanduser(os.fspath(directory))))


class Checkpointer:
  """A thin, typed wrapper over ``orbax.checkpoint.CheckpointManager``.

  Args:
    directory: where checkpoints go (created if needed); a local path is made
      absolute, a remote one (``gs://...``) is kept as an ``etils.epath`` path.
    max_to_keep: how many recent checkpoints to keep.
    save_interval_steps: ``save`` is a no-op unless ``step`` is a multiple of it
      (or ``force=True``).
    async_save: write in the background (``wait()`` before reading them).

  Example::

    with Checkpointer(workdir / "checkpoints") as ckpt:
      step = ckpt.latest_step()
      if step is not None:
        state = ckpt.restore(step, abstract_like(state))
      ...
      ckpt.save(step, state)
  """

  def __init__(
    self,
    directory: str | os.PathLike[str] | epath.PathLike,
    *,
    max_to_keep: int = 2,
    save_interval_steps: int = 1,
    async_save: bool = True,
  ):
    if max_to_keep < 1:
      raise ValueError(f"max_to_keep must be >= 1, got {max_to_keep}")
    if save_interval_steps < 1:
      raise ValueError(f"save_interval_steps must be >= 1, got {save_interval_steps}")
    self.directory = _as_path(directory)
    self.directory.mkdir(parents=True, exist_ok=True)
    options = ocp.CheckpointManagerOptions(
      max_to_keep=max_to_keep,
      save_interval_steps=save_interval_steps,
      enable_async_checkpointing=async_save,
      create=True,
    )
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def latest_step(self) -> int | None:
    """The newest saved step, or None."""
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    return list(self._manager.all_steps())

  def save(self, step: int, tree: Any, *, force: bool = False) -> bool:
    """Saves ``tree`` at ``step`` (asynchronously); returns whether it saved."""
    return self._manager.save(int(step), args=ocp.args.StandardSave(tree), force=force)

  def restore(self, step: int | None, abstract_tree: Any) -> Any:
    """Restores ``step`` (latest when None) into the structure of ``abstract_tree``.

    ``abstract_tree`` may hold concrete arrays; they are turned into
    ``ShapeDtypeStruct`` targets keeping their shardings.

    Raises:
      FileNotFoundError: no checkpoint at all, or none at ``step`` (naming the
        step, the directory and the steps that exist).
      ValueError: the checkpoint at ``step`` is corrupt, truncated or does not
        match ``abstract_tree`` (naming the step and directory, with the cause).
    """
    if step is None:
      step = self.latest_step()
      if step is None:
        raise FileNotFoundError(f"no checkpoint to restore in {self.directory}")
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
      raise TypeError(f"step must be an int or None, got {type(step).__name__} {step!r}")
    step = int(step)
    self._manager.reload()
    if step not in self._manager.all_steps():
      raise FileNotFoundError(
        f"no checkpoint for step {step} in {self.directory}; saved steps: "
        f"{sorted(self._manager.all_steps())}"
      )
    target = abstract_like(abstract_tree)
    try:
      return self._manager.restore(step, args=ocp.args.StandardRestore(target))
    except Exception as e:  # pylint: disable=broad-except  (orbax/tensorstore raise many types)
      raise ValueError(
        f"could not restore checkpoint step {step} from {self.directory / str(step)}: it is "
        f"corrupt, incomplete, or does not match the structure of abstract_tree "
        f"({type(e).__name__}: {str(e)[:500]})"
      ) from e

  def wait(self) -> None:
    """Blocks until pending asynchronous saves are finished."""
    self._manager.wait_until_finished()

  def close(self) -> None:
    self.wait()
    self._manager.close()

  def __enter__(self) -> Checkpointer:
    return self

  def __exit__(self, *exc) -> None:
    self.close()
