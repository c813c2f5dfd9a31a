"""Checkpoint/resume on orbax ``CheckpointManager``, verified by a digest of
every array.

Saves are asynchronous; :meth:`Checkpointer.wait` (also called by ``close`` and
on context exit) blocks until they are on disk. Restores always go against an
abstract target (``jax.ShapeDtypeStruct`` leaves with shardings), so arrays come
back with the structure, dtypes and placement the caller expects.

**Digests.** Every save records, inside the same orbax checkpoint, a digest of
each leaf's bits (:func:`tree_digests`: two 32-bit lanes per leaf, computed
where the array lives, under ``jax.jit`` for device arrays, so sharded and
multi-process arrays never travel to one host). Every restore recomputes them on
the restored arrays and compares: a checkpoint whose files were changed after
writing (a flipped bit, a truncated or overwritten file) never comes back as
different values. :meth:`Checkpointer.restore_latest` then falls back to the
newest earlier checkpoint that verifies, with a warning naming the bad one
(which is moved aside, so the run can save that step again), and raises if none
does. Checkpoints written before digests were recorded restore with a warning
that they are not verified.
"""

from __future__ import annotations

import numbers
import os
import uuid
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from absl import logging
from etils import epath

_TREE = "tree"
_DIGESTS = "leaf_digests"

# ------------------------------------------------------------------- digests --

_M1, _M2, _GOLDEN = 0x85EBCA6B, 0xC2B2AE35, 0x9E3779B9


def _fmix32(h, xp):
  """murmur3's 32-bit finalizer: a bijection of uint32 that mixes every input
  bit."""
  h = h ^ (h >> 16)
  h = h * xp.uint32(_M1)
  h = h ^ (h >> 13)
  h = h * xp.uint32(_M2)
  return h ^ (h >> 16)


def _lanes(words, index, xp):
  """``[2]`` uint32: ``sum_i w_i (2 i + 1)`` and ``sum_i fmix(w_i ^ fmix(i +
  golden))``.

  Both sums are mod 2**32. Changing one word changes one term of each sum by a
  nonzero amount (``2i + 1`` is odd; ``fmix`` is a bijection), so any single
  flipped bit, and any change confined to one 32-bit word, changes both lanes.
  """
  a = xp.sum(words * (index * xp.uint32(2) + xp.uint32(1)), dtype=xp.uint32)
  b = xp.sum(
    _fmix32(words ^ _fmix32(index + xp.uint32(_GOLDEN), xp), xp),
    dtype=xp.uint32,
  )
  return xp.stack([a, b])


def _unsigned(bits: int):
  return {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]


def _np_words(a: np.ndarray) -> np.ndarray:
  """The bits of ``a`` as a flat uint32 vector, element by element in C
  order."""
  a = np.ascontiguousarray(a).reshape(-1)
  dt = a.dtype
  if dt == np.bool_:
    return a.astype(np.uint32)
  if np.issubdtype(dt, np.complexfloating):
    a = np.stack([np.real(a), np.imag(a)], axis=-1).reshape(-1)
    dt = a.dtype
  if dt.kind in "fiuV" and dt.itemsize in (1, 2, 4, 8):
    bits = jax.dtypes.itemsize_bits(dt)
    if bits < 8:  # int4 / float4: exact in 32 bits
      return _np_words(
        a.astype(np.float32 if jnp.issubdtype(dt, jnp.floating) else np.int32)
      )
    if bits == 64:
      # little-endian: low word first, as lax.bitcast_convert_type
      return a.view(np.uint32)
    return a.view(_unsigned(bits)).astype(np.uint32)
  # Anything else (strings, ...): the raw bytes, zero-padded to whole words.
  raw = a.tobytes()
  return np.frombuffer(raw + b"\0" * (-len(raw) % 4), np.uint32)


def _jnp_words(x: jax.Array) -> jax.Array:
  """The bits of ``x`` as uint32, element by element (64-bit types add a minor
  axis of 2)."""
  if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
    x = jax.random.key_data(x)
  dt = np.dtype(x.dtype)
  if dt == np.bool_:
    return x.astype(jnp.uint32)
  if jnp.issubdtype(dt, jnp.complexfloating):
    x = jnp.stack([x.real, x.imag], axis=-1)
    dt = np.dtype(x.dtype)
  bits = jax.dtypes.itemsize_bits(dt)
  if bits < 8:
    return _jnp_words(
      x.astype(jnp.float32 if jnp.issubdtype(dt, jnp.floating) else jnp.int32)
    )
  if bits == 64:
    return jax.lax.bitcast_convert_type(x, jnp.uint32)
  return jax.lax.bitcast_convert_type(x, jnp.dtype(_unsigned(bits))).astype(
    jnp.uint32
  )


def _jnp_digest(x: jax.Array) -> jax.Array:
  w = _jnp_words(x)
  # The C-order linear index of each word, without a reshape (that could move
  # sharded data).
  index = jnp.zeros(w.shape, jnp.uint32)
  stride = 1
  for d in reversed(range(w.ndim)):
    index = index + jax.lax.broadcasted_iota(
      jnp.uint32, w.shape, d
    ) * jnp.uint32(stride % 2**32)
    stride *= w.shape[d]
  return _lanes(w, index, jnp)


def _np_digest(a: Any) -> np.ndarray:
  w = _np_words(np.asarray(a))
  return _lanes(w, np.arange(w.size, dtype=np.uint32), np)


@jax.jit
def _device_digests(leaves: tuple[jax.Array, ...]) -> jax.Array:
  return jnp.stack([_jnp_digest(x) for x in leaves])  # [n, 2]


def _to_numpy(x: jax.Array) -> np.ndarray:
  if x.is_fully_addressable or x.is_fully_replicated:
    return np.asarray(x.addressable_data(0))
  from jax.experimental import multihost_utils

  return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def tree_digests(tree: Any) -> np.ndarray:
  """A digest of every leaf's bits: ``[n_leaves, 2]`` uint32, in
  ``jax.tree.leaves`` order.

  Device arrays are digested where they live (one ``jax.jit`` program per set of
  devices, reductions across shards and processes), host values (numpy, Python
  scalars) on the host; both give the same digest for the same dtype, shape and
  bits. Typed PRNG keys are digested through their key data. In a multi-process
  job every process must call it (like a save).

  The digest is not cryptographic: it detects accidental change (every single
  flipped bit, and any change within one 32-bit word, with certainty; other
  changes with probability ``1 - 2**-64``), not tampering.

  Args:
    tree: a pytree of arrays and scalars.

  Returns:
    ``[n_leaves, 2]`` uint32 numpy array.
  """
  leaves = jax.tree.leaves(tree)
  out = np.zeros((len(leaves), 2), np.uint32)
  groups: dict[frozenset, list[int]] = {}
  for i, x in enumerate(leaves):
    if isinstance(x, jax.Array):
      groups.setdefault(frozenset(x.sharding.device_set), []).append(i)
    else:
      out[i] = _np_digest(x)
  for idx in groups.values():
    out[idx] = _to_numpy(_device_digests(tuple(leaves[i] for i in idx)))
  return out


# -------------------------------------------------------------- checkpointer --


class CorruptCheckpointError(ValueError):
  """A checkpoint step that cannot be restored or does not match its recorded
  digests.

  The arguments are kept as attributes of the same names.

  Args:
    step: the step.
    path: its directory.
    reason: what is wrong with it.
  """

  def __init__(self, step: int, path: Any, reason: str):
    self.step, self.path, self.reason = step, path, reason
    super().__init__(
      f"could not restore checkpoint step {step} from {path}: {reason}"
    )


def abstract_like(tree: Any) -> Any:
  """The abstract target (shape, dtype, sharding) of a concrete pytree.

  Args:
    tree: a pytree whose ``jax.Array`` leaves are to be described.

  Returns:
    ``tree`` with every ``jax.Array`` leaf replaced by a
    ``jax.ShapeDtypeStruct`` of the same shape, dtype and sharding; other leaves
    are kept as they are.
  """

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


def _agree(ok: bool) -> bool:
  """Whether ``ok`` holds on every process (all processes must call it)."""
  if jax.process_count() == 1:
    return ok
  from jax.experimental import multihost_utils

  return bool(np.all(multihost_utils.process_allgather(np.int32(ok))))


class Checkpointer:
  """A thin, typed wrapper over ``orbax.checkpoint.CheckpointManager`` with
  verified restores.

  Args:
    directory: where checkpoints go (created if needed); a local path is made
      absolute, a remote one (``gs://...``) is kept as an ``etils.epath`` path.
    max_to_keep: how many recent checkpoints to keep (with 2 or more, a corrupt
      latest checkpoint leaves an earlier one to fall back to).
    save_interval_steps: ``save`` is a no-op unless ``step`` is a multiple of it
      (or ``force=True``).
    async_save: write in the background (``wait()`` before reading them).

  Example::

    with Checkpointer(workdir / "checkpoints") as ckpt:
      if ckpt.latest_step() is not None:
        step, tree = ckpt.restore_latest(abstract_like(state))
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
      raise ValueError(
        f"save_interval_steps must be >= 1, got {save_interval_steps}"
      )
    self.directory = _as_path(directory)
    self.directory.mkdir(parents=True, exist_ok=True)
    options = ocp.CheckpointManagerOptions(
      max_to_keep=max_to_keep,
      save_interval_steps=save_interval_steps,
      enable_async_checkpointing=async_save,
      create=True,
      cleanup_tmp_directories=True,  # what a save cut off by a kill left behind
    )
    self._manager = ocp.CheckpointManager(
      self.directory,
      options=options,
      item_handlers=ocp.StandardCheckpointHandler(),
    )

  def latest_step(self) -> int | None:
    """The newest saved step.

    Returns:
      the largest saved step, or None when there is no checkpoint.
    """
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    """Every saved step.

    Returns:
      the steps the manager knows of (in its order, oldest first).
    """
    return list(self._manager.all_steps())

  def save(self, step: int, tree: Any, *, force: bool = False) -> bool:
    """Saves ``tree`` and its digests at ``step`` (asynchronously); returns
    whether it saved.

    The digests are computed before this returns, so ``tree``'s buffers may be
    donated afterwards.

    Args:
      step: the step number to save under.
      tree: the pytree of arrays to save.
      force: save even when ``step`` is not a multiple of
        ``save_interval_steps``.

    Returns:
      True when a save was started, False when the interval skipped it.
    """
    step = int(step)
    if not force and not self._manager.should_save(step):
      return False
    item = {_TREE: tree, _DIGESTS: tree_digests(tree)}
    return self._manager.save(
      step, args=ocp.args.StandardSave(item), force=force
    )

  def restore(self, step: int | None, abstract_tree: Any) -> Any:
    """Restores ``step`` (latest when None) into the structure of
    ``abstract_tree``, verified.

    ``abstract_tree`` may hold concrete arrays; they are turned into
    ``ShapeDtypeStruct`` targets keeping their shardings. Restoring into other
    dtypes than the saved ones is not supported (the digests would not match):
    cast afterwards. With ``step=None`` this is :meth:`restore_latest` (with its
    fallback) without the step.

    Args:
      step: the step to restore, or None for the newest that verifies.
      abstract_tree: the target structure: a pytree of ``jax.ShapeDtypeStruct``
        or arrays.

    Returns:
      the restored pytree, of ``abstract_tree``'s structure, shapes, dtypes and
      shardings.

    Raises:
      FileNotFoundError: no checkpoint at all, or none at ``step`` (naming the
        step, the directory and the steps that exist).
      CorruptCheckpointError: (a ``ValueError``) the checkpoint at ``step`` is
        corrupt, truncated, does not match its recorded digests, or does not
        match the structure of ``abstract_tree`` (naming the step and directory,
        with the cause).
    """
    if step is None:
      return self.restore_latest(abstract_tree)[1]
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
      raise TypeError(
        f"step must be an int or None, got {type(step).__name__} {step!r}"
      )
    step = int(step)
    self._manager.reload()
    if step not in self._manager.all_steps():
      raise FileNotFoundError(
        f"no checkpoint for step {step} in {self.directory}; saved steps: "
        f"{sorted(self._manager.all_steps())}"
      )
    return self._restore_verified(step, abstract_like(abstract_tree))

  def restore_latest(self, abstract_tree: Any) -> tuple[int, Any]:
    """Restores the newest checkpoint that verifies; returns ``(step, tree)``.

    A newer checkpoint that is corrupt (unreadable, or not matching its digests)
    is skipped with a warning naming it, and moved aside to
    ``<directory>/corrupt/<step>-<id>`` so that the run can save that step
    again.

    Args:
      abstract_tree: the target structure: a pytree of ``jax.ShapeDtypeStruct``
        or arrays.

    Returns:
      ``(step, tree)``: the step restored and the pytree, of ``abstract_tree``'s
      structure.

    Raises:
      FileNotFoundError: there is no checkpoint.
      CorruptCheckpointError: every checkpoint is corrupt (each one's cause
        listed).
    """
    self._manager.reload()
    steps = sorted(self._manager.all_steps(), reverse=True)
    if not steps:
      raise FileNotFoundError(f"no checkpoint to restore in {self.directory}")
    target = abstract_like(abstract_tree)
    failures = []
    for step in steps:
      try:
        tree = self._restore_verified(step, target)
      except CorruptCheckpointError as e:
        failures.append(e)
        later = [s for s in steps if s < step]
        logging.warning(
          "%s; %s",
          e,
          f"falling back to step {later[0]}"
          if later
          else "no earlier checkpoint is left",
        )
        continue
      if failures:
        self._move_aside([e.step for e in failures])
      return step, tree
    raise CorruptCheckpointError(
      steps[0],
      self._step_path(steps[0]),
      "no checkpoint in the directory can be restored ("
      + "; ".join(f"step {e.step}: {e.reason}" for e in failures)
      + f"). Delete {self.directory} to start the run afresh.",
    )

  def _step_path(self, step: int) -> epath.Path:
    return self.directory / str(step)

  def _legacy(self, step: int) -> bool:
    """Whether ``step`` was written before digests were recorded."""
    try:
      meta = self._manager.item_metadata(step)
    except Exception as e:  # pylint: disable=broad-except  (unreadable metadata)
      raise CorruptCheckpointError(
        step,
        self._step_path(step),
        f"its metadata cannot be read ({type(e).__name__}: {e})",
      ) from e
    keys = set(meta.keys()) if hasattr(meta, "keys") else set()
    return keys != {_TREE, _DIGESTS}

  def _restore_verified(self, step: int, target: Any) -> Any:
    path = self._step_path(step)
    error = None
    # Both are read only when every process restored the step.
    legacy = False
    restored: Any = None
    try:
      legacy = self._legacy(step)
      n = len(jax.tree.leaves(target))
      item = (
        target
        if legacy
        else {_TREE: target, _DIGESTS: np.zeros((n, 2), np.uint32)}
      )
      restored = self._manager.restore(
        step, args=ocp.args.StandardRestore(item)
      )
    except CorruptCheckpointError as e:
      error = e
    except Exception as e:  # pylint: disable=broad-except  (orbax/tensorstore raise many types)
      error = CorruptCheckpointError(
        step,
        path,
        (
          "it is corrupt, incomplete, or does not match the structure of "
          f"abstract_tree ({type(e).__name__}: {str(e)[:500]})"
        ),
      )
    if not _agree(error is None):
      raise error or CorruptCheckpointError(
        step, path, "another process could not restore it"
      )
    if legacy:
      logging.warning(
        (
          "checkpoint step %d at %s records no digests (written by an older "
          "version): its values are not verified"
        ),
        step,
        path,
      )
      return restored
    tree, expected = restored[_TREE], np.asarray(restored[_DIGESTS])
    bad = np.flatnonzero(np.any(tree_digests(tree) != expected, axis=1))
    if bad.size:
      paths = [
        jax.tree_util.keystr(p)
        for p, _ in jax.tree_util.tree_leaves_with_path(tree)
      ]
      raise CorruptCheckpointError(
        step,
        path,
        (
          f"{bad.size} of {len(paths)} arrays do not match the digests "
          "recorded when it was written "
          f"({', '.join(paths[i] or '<root>' for i in bad[:5])}{', ...' if bad.size > 5 else ''})"
        ),
      )
    return tree

  def _move_aside(self, steps: Sequence[int]) -> None:
    """Moves corrupt steps to ``<directory>/corrupt/`` (process 0), then every
    process reloads."""
    if jax.process_index() == 0:
      quarantine = self.directory / "corrupt"
      quarantine.mkdir(parents=True, exist_ok=True)
      for step in steps:
        dest = quarantine / f"{step}-{uuid.uuid4().hex[:8]}"
        self._step_path(step).rename(dest)
        logging.warning("moved corrupt checkpoint step %d to %s", step, dest)
    if jax.process_count() > 1:
      from jax.experimental import multihost_utils

      multihost_utils.sync_global_devices(
        f"jaxpapers_checkpoint_move_aside_{self.directory}"
      )
    self._manager.reload()

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
