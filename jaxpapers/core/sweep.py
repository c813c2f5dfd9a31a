"""A grid of small training runs, vmapped and sharded over the runs axis.

Most experiments are grids of independent runs (learning rates x seeds x sizes
x splits). :class:`Sweep` trains such a grid as one program: the per-run
functions are ``jax.vmap``-ed over a leading *runs* axis, the runs axis is
sharded over a mesh with ``NamedSharding`` (all devices of the host, or of all
hosts), and the steps run in ``lax.scan`` chunks of fixed length so one
compilation serves every chunk (and every later grid with the same shapes).

After each chunk the engine can save an orbax checkpoint (state plus the metrics
so far), so a rerun on the same ``checkpoint_dir`` resumes inside the grid
instead of starting it again. Finished grids ("cells") go into a
:class:`CellStore`: one JSON file per cell, written atomically;
:func:`fill_cells` is the resumable loop over a grid of named cells.

Per-run functions (``R`` runs; shapes below are per run, the engine adds the
leading ``[R]`` axis)::

  init_fn(hparams, key, data) -> state
  step_fn(state, hparams, key, step, data) -> (state, metrics)
  eval_fn(state, hparams, key, data) -> metrics          # optional, per chunk

``hparams`` is one run's slice of the hyperparameter pytree, ``key`` its typed
PRNG key, ``step`` the int32 global step index (0-based), and ``data`` the
shared (unbatched, replicated) pytree given to :meth:`Sweep.run`. Everything is
traced, so hyperparameters can be swept without recompiling.

Example::

  def init_fn(hp, key, data):
    params = {"w": jax.random.normal(key, (3,))}
    return params, optax.sgd(hp["lr"]).init(params)

  def step_fn(state, hp, key, step, data):
    params, opt = state
    loss, g = jax.value_and_grad(loss_fn)(params, data)
    upd, opt = optax.sgd(hp["lr"]).update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {"loss": loss}

  hp = {"lr": jnp.array([0.1, 0.01, 0.001])}                   # [R]
  keys = jax.random.split(jax.random.key(0), 3)                # [R]
  res = Sweep(init_fn, step_fn).run(hp, keys, num_steps=100, chunk_size=25,
                                    data=data, checkpoint_dir=workdir / "ckpt")
  res.history["loss"]                                          # [R, 100]
"""

from __future__ import annotations

import hashlib
import json
import lzma
import math
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging
from etils import epath
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxpapers.core import cache as cache_lib
from jaxpapers.core.checkpoint import Checkpointer
from jaxpapers.core.progress import progress as _progress

__all__ = [
  "RUNS_AXIS",
  "CellStore",
  "Sweep",
  "SweepResult",
  "fill_cells",
  "run_sweep",
  "runs_mesh",
]

RUNS_AXIS = "runs"

InitFn = Callable[[Any, jax.Array, Any], Any]
StepFn = Callable[[Any, Any, jax.Array, jax.Array, Any], tuple[Any, Any]]
EvalFn = Callable[[Any, Any, jax.Array, Any], Any]


def _is_writer() -> bool:
  return jax.process_index() == 0


# ------------------------------------------------------------------ mesh --


def runs_mesh(
  num_runs: int,
  # jax.Device aliases a class of jaxlib's compiled module, which pyright cannot
  # resolve.
  devices: Sequence[jax.Device] | None = None,  # pyright: ignore[reportInvalidTypeForm]
) -> Mesh:
  """A 1-D ``jax.make_mesh`` mesh (axis ``'runs'``) sized for ``num_runs`` runs.

  With one process it uses the fewest devices that keep the per-device load
  minimal: ``L = ceil(R / D)`` runs per device on ``ceil(R / L)`` devices, so
  10 runs on 8 devices use 5 devices with 2 runs each (the same wall time as
  8 devices, no padded runs). With several processes it spans every device, so
  the runs axis covers all hosts.

  Args:
    num_runs: ``R``, the number of runs (> 0).
    devices: the devices to draw from (default ``jax.devices()``).

  Returns:
    A ``Mesh`` with one axis named :data:`RUNS_AXIS` (``AxisType.Auto``).
  """
  if not isinstance(num_runs, (int, np.integer)) or num_runs < 1:
    raise ValueError(f"num_runs must be a positive int, got {num_runs!r}")
  devices = list(jax.devices() if devices is None else devices)
  if jax.process_count() > 1:
    d = len(devices)
  else:
    load = math.ceil(num_runs / len(devices))
    d = math.ceil(num_runs / load)
  return jax.make_mesh(
    (d,),
    (RUNS_AXIS,),
    axis_types=(jax.sharding.AxisType.Auto,),
    devices=devices[:d],
  )


def _to_host(x: jax.Array) -> np.ndarray:
  if isinstance(x, jax.Array) and not x.is_fully_addressable:
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
  return np.asarray(x)


def _pad_runs(x: jax.Array, pad: int) -> jax.Array:
  """Appends ``pad`` copies of the last run (valid inputs, unlike zeros)."""
  if pad == 0:
    return x
  return jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)


def _fingerprint(hparams, keys, num_steps: int, chunk_size: int) -> np.ndarray:
  h = hashlib.sha256()
  h.update(f"{num_steps}/{chunk_size}".encode())
  for path, leaf in jax.tree_util.tree_leaves_with_path(hparams):
    a = np.asarray(leaf)
    h.update(f"{jax.tree_util.keystr(path)}:{a.dtype}:{a.shape}".encode())
    h.update(np.ascontiguousarray(a).tobytes())
  h.update(np.asarray(jax.random.key_data(keys)).tobytes())
  return np.frombuffer(h.digest(), np.uint8).copy()


def _ckpt_tree(state, history, evals, fingerprint) -> dict:
  tree = {"state": state, "history": history, "fingerprint": fingerprint}
  if evals is not None:
    tree["evals"] = evals
  return tree


# ---------------------------------------------------------------- engine --


class SweepResult(NamedTuple):
  """What :meth:`Sweep.run` returns (padding runs removed).

  Attributes:
    state: the per-run state after the last chunk run, leaves ``[R, ...]``
      (device arrays, sharded over the runs axis).
    history: the per-step metrics of ``step_fn``, leaves ``[R, T, ...]``
      (numpy; steps not run yet are zeros).
    evals: the per-chunk metrics of ``eval_fn``, leaves ``[R, K, ...]``
      (numpy; ``K = T / chunk_size``), or None without ``eval_fn``.
    steps: ``[K]`` int, the step count at each evaluation
      (``chunk_size * (k + 1)``).
    steps_done: how many steps are done (``T`` unless stopped by
      ``max_chunks``).
    resumed_from: the step the run resumed from (0 when it started afresh).
  """

  state: Any
  history: Any
  evals: Any
  steps: np.ndarray
  steps_done: int
  resumed_from: int

  @property
  def complete(self) -> bool:
    return self.steps_done == self.steps[-1]


class Sweep:
  """Trains a grid of independent runs: vmapped, chunked with ``lax.scan``,
  sharded.

  Build one ``Sweep`` per set of per-run functions and call :meth:`run` for
  each grid; compiled programs are cached on the object by chunk length and
  input shapes, so grids of the same shapes (e.g. another horizon, another
  sweep point) reuse them. A grid of several chunks compiles an init program
  and a chunk program; a one-chunk grid run from scratch compiles a single
  program with the initialisation fused in.

  Several processes (after ``jax.distributed.initialize()``): every process
  calls :meth:`run` with the same inputs; the default mesh then spans all
  processes' devices, results are gathered to every process, checkpoints are
  written collectively by orbax, and progress bars and :class:`CellStore`
  files come from process 0 only.

  Args:
    init_fn: ``(hparams, key, data) -> state`` for one run.
    step_fn: ``(state, hparams, key, step, data) -> (state, metrics)`` for one
      run and one step; ``step`` is the int32 global step index.
    eval_fn: optional ``(state, hparams, key, data) -> metrics``, run after
      every chunk.
    mesh: a mesh whose first axis shards the runs (runs are padded to a
      multiple of its size); further axes are free for the per-run functions
      (e.g. a ``data`` axis that a ``with_sharding_constraint`` in ``step_fn``
      splits each run's batch over); default :func:`runs_mesh` for each
      grid's size.
    donate: donate the state buffers to each chunk (saves memory; safe
      because checkpoints copy device arrays to the host before returning).
    compiler_options: passed to ``jax.jit`` (e.g. XLA flags on CPU).
  """

  def __init__(
    self,
    init_fn: InitFn,
    step_fn: StepFn,
    eval_fn: EvalFn | None = None,
    *,
    mesh: Mesh | None = None,
    donate: bool = True,
    compiler_options: dict[str, Any] | None = None,
  ):
    for name, fn in (("init_fn", init_fn), ("step_fn", step_fn)):
      if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    if eval_fn is not None and not callable(eval_fn):
      raise TypeError(
        f"eval_fn must be callable or None, got {type(eval_fn).__name__}"
      )
    self.init_fn, self.step_fn, self.eval_fn = init_fn, step_fn, eval_fn
    self.mesh = mesh
    self.donate = donate
    self.compiler_options = compiler_options
    self._compiled: dict[
      tuple, tuple[Mesh, tuple[Callable, Callable, Callable]]
    ] = {}

  # -- compiled programs (one per mesh and chunk length) --

  def _programs(self, mesh: Mesh, chunk_size: int):
    cache_key = (mesh, chunk_size)  # meshes hash by devices and axes
    if cache_key in self._compiled:
      return self._compiled[cache_key]
    shard = NamedSharding(mesh, P(mesh.axis_names[0]))
    init_fn, step_fn, eval_fn = self.init_fn, self.step_fn, self.eval_fn

    def init_all(hparams, keys, data):
      return jax.vmap(lambda hp, k: init_fn(hp, k, data))(hparams, keys)

    def chunk_all(state, hparams, keys, data, start):
      def one(s, hp, k):
        def body(carry, i):
          return step_fn(carry, hp, k, i, data)

        steps = start + jnp.arange(chunk_size, dtype=jnp.int32)
        s, metrics = jax.lax.scan(body, s, steps)
        ev = None if eval_fn is None else eval_fn(s, hp, k, data)
        return s, metrics, ev

      return jax.vmap(one)(state, hparams, keys)

    def first_all(hparams, keys, data, start):
      return chunk_all(
        init_all(hparams, keys, data), hparams, keys, data, start
      )

    kw: dict[str, Any] = (
      dict(compiler_options=self.compiler_options)
      if self.compiler_options
      else {}
    )
    progs = (
      jax.jit(init_all, out_shardings=shard, **kw),
      jax.jit(
        chunk_all,
        out_shardings=shard,
        donate_argnums=(0,) if self.donate else (),
        **kw,
      ),
      jax.jit(first_all, out_shardings=shard, **kw),
    )
    self._compiled[cache_key] = (mesh, progs)
    return self._compiled[cache_key]

  def run(
    self,
    hparams: Any,
    keys: jax.Array,
    *,
    num_steps: int,
    chunk_size: int | None = None,
    data: Any = None,
    checkpoint_dir: str | epath.PathLike | None = None,
    checkpoint_every: int = 1,
    max_chunks: int | None = None,
    desc: str | None = None,
    show_progress: bool = True,
  ) -> SweepResult:
    """Trains ``R`` runs for ``num_steps`` steps in chunks of ``chunk_size``.

    Args:
      hparams: pytree of arrays, each with leading axis ``[R, ...]`` (one row
        per run).
      keys: ``[R]`` typed PRNG keys (``jax.random.key``), one per run.
      num_steps: ``T``, steps per run (> 0, a multiple of ``chunk_size``).
      chunk_size: ``C``, steps per compiled ``lax.scan`` chunk (default ``T``).
      data: a pytree shared by all runs (replicated; not vmapped).
      checkpoint_dir: if given, an orbax checkpoint of the state and metrics
        is saved there after every ``checkpoint_every`` chunks (not after the
        last chunk: the caller stores the result), and a rerun with the same
        inputs resumes from the latest one that verifies (the newest two are
        kept). Inputs that differ from the saved run's (hyperparameters, keys,
        ``T``, ``C``) are an error.
      checkpoint_every: chunks between checkpoints (>= 1).
      max_chunks: stop after this many chunks in this call (the result is
        then partial, ``complete`` False); for time-limited jobs and tests.
      desc: progress bar label.
      show_progress: show the progress bar (process 0 only).

    Returns:
      A :class:`SweepResult`; ``history`` ``[R, T, ...]`` and ``evals``
      ``[R, T / C, ...]`` on the host.

    Raises:
      TypeError: ``keys`` are not typed PRNG keys.
      ValueError: bad sizes, or a hyperparameter leaf without the ``[R]`` axis.
    """
    keys, hparams, r = self._check_inputs(hparams, keys)
    if not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
      raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
    chunk_size = int(num_steps if chunk_size is None else chunk_size)
    if chunk_size < 1 or num_steps % chunk_size:
      raise ValueError(
        f"chunk_size must be a positive divisor of num_steps={num_steps}, "
        f"got {chunk_size}"
      )
    if (
      not isinstance(checkpoint_every, (int, np.integer))
      or checkpoint_every < 1
    ):
      raise ValueError(
        f"checkpoint_every must be a positive int, got {checkpoint_every!r}"
      )
    num_steps = int(num_steps)
    num_chunks = num_steps // chunk_size

    mesh = self.mesh if self.mesh is not None else runs_mesh(r)
    # Pad to a multiple of the runs axis only: on a 2-D (runs x data) mesh the
    # other axes hold shares of each run, so padding to every device would add
    # runs that only cost time.
    n_dev = mesh.shape[mesh.axis_names[0]]
    r_pad = -(-r // n_dev) * n_dev
    mesh, (init_p, chunk_p, first_p) = self._programs(mesh, chunk_size)
    shard = NamedSharding(mesh, P(mesh.axis_names[0]))
    rep = NamedSharding(mesh, P())

    def put(x):
      # Host values (every process holds the same): device_put onto a sharding
      # spanning other processes' devices accepts numpy, not local jax.Arrays.
      if jnp.issubdtype(jnp.result_type(x), jax.dtypes.prng_key):
        data = put(jax.random.key_data(x))
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
      x = np.asarray(x)
      if r_pad > r:
        x = np.concatenate([x, np.repeat(x[-1:], r_pad - r, axis=0)], axis=0)
      return jax.device_put(x, shard)

    hp_dev = jax.tree.map(put, hparams)
    keys_dev = put(keys)
    # same reason as put: go through numpy
    if data is not None and jax.process_count() > 1:
      data = jax.tree.map(
        lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, data
      )
    data_dev = jax.device_put(data, rep) if data is not None else None
    start0 = jnp.asarray(0, jnp.int32)
    fingerprint = _fingerprint(hparams, keys, num_steps, chunk_size)

    # Two kept: should the newest be corrupt, the run falls back to the one
    # before.
    ckpt = (
      Checkpointer(checkpoint_dir, max_to_keep=2)
      if checkpoint_dir is not None
      else None
    )
    latest = None if ckpt is None else ckpt.latest_step()
    # A one-chunk run from scratch uses one program (init fused into the chunk):
    # one compile less, and initialisation (random draws under vmap) is often as
    # slow to compile as a step.
    fused = num_chunks == 1 and latest is None and max_chunks != 0
    # set when not fused, as a checkpoint (latest) rules fusing out
    state_shape: Any = None
    if fused:
      _, m_shape, e_shape = jax.eval_shape(
        first_p, hp_dev, keys_dev, data_dev, start0
      )
    else:
      state_shape = jax.eval_shape(init_p, hp_dev, keys_dev, data_dev)
      _, m_shape, e_shape = jax.eval_shape(
        chunk_p, state_shape, hp_dev, keys_dev, data_dev, start0
      )
    # Host buffers for every step's / chunk's metrics (fixed shapes:
    # checkpointable).
    history = jax.tree.map(
      lambda s: np.zeros((r_pad, num_steps) + s.shape[2:], s.dtype), m_shape
    )
    evals = jax.tree.map(
      lambda s: np.zeros((r_pad, num_chunks) + s.shape[1:], s.dtype), e_shape
    )

    start_chunk = 0
    state = None
    if ckpt is not None and latest is not None:  # latest is set only with ckpt
      # The newest checkpoint that matches its digests (a corrupt one is
      # skipped, warned of).
      latest, restored = ckpt.restore_latest(
        _ckpt_tree(state_shape, history, evals, fingerprint)
      )
      if not np.array_equal(np.asarray(restored["fingerprint"]), fingerprint):
        ckpt.close()
        raise ValueError(
          f"checkpoint_dir {checkpoint_dir} holds a different sweep "
          "(hyperparameters, keys, num_steps or chunk_size differ); "
          "use another directory or delete it"
        )
      state = restored["state"]
      history = jax.tree.map(np.array, restored["history"])
      evals = jax.tree.map(np.array, restored.get("evals", evals))
      start_chunk = int(latest) // chunk_size
    elif not fused:
      state = init_p(hp_dev, keys_dev, data_dev)

    stop = (
      num_chunks
      if max_chunks is None
      else min(num_chunks, start_chunk + int(max_chunks))
    )
    bar = _progress(
      total=num_chunks,
      initial=start_chunk,
      desc=desc,
      disable=None if (show_progress and _is_writer()) else True,
    )
    try:
      for c in range(start_chunk, stop):
        start = jnp.asarray(c * chunk_size, jnp.int32)
        if fused:
          state, metrics, ev = first_p(hp_dev, keys_dev, data_dev, start)
        else:
          state, metrics, ev = chunk_p(state, hp_dev, keys_dev, data_dev, start)
        for buf, m in zip(jax.tree.leaves(history), jax.tree.leaves(metrics)):
          buf[:, c * chunk_size : (c + 1) * chunk_size] = _to_host(m)
        for buf, m in zip(jax.tree.leaves(evals), jax.tree.leaves(ev)):
          buf[:, c] = _to_host(m)
        bar.update(1)
        done = c + 1
        if (
          ckpt is not None
          and done < num_chunks
          and done % checkpoint_every == 0
        ):
          ckpt.save(
            done * chunk_size, _ckpt_tree(state, history, evals, fingerprint)
          )
    finally:
      bar.close()
      if ckpt is not None:
        ckpt.close()

    # max_chunks=0 on a fresh one-chunk run: the initial state
    if state is None:
      state = init_p(hp_dev, keys_dev, data_dev)
    unpad = lambda x: x[:r]
    return SweepResult(
      state=jax.tree.map(unpad, state),
      history=jax.tree.map(unpad, history),
      evals=None if self.eval_fn is None else jax.tree.map(unpad, evals),
      steps=chunk_size * np.arange(1, num_chunks + 1),
      steps_done=stop * chunk_size,
      resumed_from=start_chunk * chunk_size,
    )

  @staticmethod
  def _check_inputs(hparams, keys):
    if not (
      isinstance(keys, jax.Array)
      and jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)
    ):
      raise TypeError(
        "keys must be a [R] array of typed PRNG keys (jax.random.key / "
        f"jax.random.split), got {getattr(keys, 'dtype', type(keys))}"
      )
    if keys.ndim != 1 or keys.shape[0] < 1:
      raise ValueError(
        f"keys must have shape [R] with R >= 1, got {keys.shape}"
      )
    r = keys.shape[0]

    def check(path, x):
      x = jnp.asarray(x)
      if x.ndim == 0 or x.shape[0] != r:
        raise ValueError(
          f"hparams leaf {jax.tree_util.keystr(path)} has shape {x.shape}; "
          f"every leaf needs the leading runs axis [R={r}, ...]"
        )
      return x

    return keys, jax.tree_util.tree_map_with_path(check, hparams), r


def run_sweep(
  init_fn: InitFn,
  step_fn: StepFn,
  hparams: Any,
  keys: jax.Array,
  *,
  num_steps: int,
  eval_fn: EvalFn | None = None,
  mesh: Mesh | None = None,
  **run_kwargs: Any,
) -> SweepResult:
  """One-off :class:`Sweep` (``Sweep(init_fn, step_fn, eval_fn,
  mesh=mesh).run(...)``).

  Args:
    init_fn: ``(hparams, key, data) -> state`` for one run.
    step_fn: ``(state, hparams, key, step, data) -> (state, metrics)`` for one
      run and step.
    hparams: pytree of arrays, each with leading axis ``[R, ...]``.
    keys: ``[R]`` typed PRNG keys, one per run.
    num_steps: ``T``, steps per run.
    eval_fn: optional ``(state, hparams, key, data) -> metrics``, run after
      every chunk.
    mesh: the mesh whose first axis shards the runs (default :func:`runs_mesh`).
    **run_kwargs: further keyword arguments of :meth:`Sweep.run`
      (``chunk_size``, ``data``, ``checkpoint_dir``, ...).

  Returns:
    the :class:`SweepResult` of :meth:`Sweep.run`.
  """
  return Sweep(init_fn, step_fn, eval_fn, mesh=mesh).run(
    hparams, keys, num_steps=num_steps, **run_kwargs
  )


# ------------------------------------------------------------ cell store --


# Characters a cell file name keeps as they are (see CellStore.filename); '/'
# becomes '~'.
_CELL_NAME_SAFE = "-_.=,+@"
# The layout of CellStore.save_snapshot files.
_SNAPSHOT_FORMAT = "jaxpapers.cells/1"


class CellStore:
  """Finished cells of an experiment, one JSON file per cell, written
  atomically.

  A cell is keyed by a stable name (any non-empty string, e.g.
  ``'digits/T500/adam'``); its file is ``<directory>/<filename(name)>``
  (``digits~T500~adam.json``, see :meth:`filename`) holding ``{"name": ...,
  "value": ..., "sha256": ...}``, written through
  :func:`jaxpapers.core.cache.write_json`: into a temporary file in the same
  directory, renamed over the final path, so a crash or a serialisation error
  mid-write leaves the previous value (or no file), never a partial one. Only
  process 0 writes; every process sees its own puts. A cell file that is corrupt
  (cut off, or not matching its digest) is left out with a warning naming it, so
  :meth:`get_or_compute` computes that cell again.

  The store reads every ``*.json`` record in its folder whatever the file is
  called (the name is inside the record), so folders written under the earlier
  naming, the whole name percent-encoded (``digits%2FT500%2Fadam.json``), still
  resume; a put replaces such a file by one of the current name. Paths are
  ``etils.epath`` paths, so remote directories work wherever epath does.

  Values are JSON: dicts, lists, numbers, strings, None; numpy arrays and
  scalars are converted with ``tolist()``/``item()``.

  :meth:`get_or_compute` is the resume pattern: a finished cell is read back,
  an unfinished one is computed with a checkpoint directory of its own (under
  ``checkpoint_root``, default ``<directory>/_checkpoints``) that is removed
  once the cell is stored.

  Args:
    directory: the store's folder (created on the first write).
    checkpoint_root: where :meth:`get_or_compute` puts cells' checkpoints.

  Example::

    store = CellStore(workdir / "cells")
    res = store.get_or_compute("lr=0.1/seed=0", lambda ckpt_dir: train(ckpt_dir))
  """

  SUFFIX = ".json"

  def __init__(
    self,
    directory: str | epath.PathLike,
    checkpoint_root: str | epath.PathLike | None = None,
  ):
    self.directory = epath.Path(directory)
    self.checkpoint_root = epath.Path(
      self.directory / "_checkpoints"
      if checkpoint_root is None
      else checkpoint_root
    )
    self.reload()

  def reload(self) -> CellStore:
    """Reads the folder again: cells stored since by another process become
    visible.

    Several jobs may share one store, each computing other cells. A cell this
    store held stays (a put of a process other than 0 is not on disk, and a
    stored cell never goes away).

    Returns:
      the store itself.
    """
    held = dict(getattr(self, "_cells", {}))
    self._cells: dict[str, Any] = {}
    # the file each stored cell was read from
    self._files: dict[str, epath.Path] = {}
    # other files holding the same cell
    self._stale: dict[str, list[epath.Path]] = {}
    if self.directory.exists():
      for f in sorted(self.directory.iterdir()):
        if f.name.endswith(self.SUFFIX) and not f.name.startswith("."):
          try:
            rec = cache_lib.read_json(f)
            if not isinstance(rec.get("name"), str) or "value" not in rec:
              raise cache_lib.CorruptFileError(
                f, 'expected a record {"name": ..., "value": ...}'
              )
          except cache_lib.CorruptFileError as e:
            logging.warning(
              "%s; the cell is left out and will be computed again", e
            )
            continue
          name = rec["name"]
          # One cell in two files (a put that stopped between writing the file
          # of the current name and removing the one of the earlier naming): the
          # current name is the newer.
          if name in self._files:
            if f.name != self.filename(name):
              self._stale.setdefault(name, []).append(f)
              continue
            self._stale.setdefault(name, []).append(self._files[name])
          self._cells[name] = rec["value"]
          self._files[name] = f
    for name, value in held.items():
      self._cells.setdefault(name, value)
    return self

  @classmethod
  def filename(cls, name: str) -> str:
    """The file name of cell ``name``: readable, reversible and safe on common
    filesystems.

    ``/`` becomes ``~``; ASCII letters, digits and ``- _ . = , + @`` stay as
    they are; every other character (``~``, ``%``, space, ``|``, ``:``, ``\\``,
    non-ASCII, ...) becomes ``%XX`` per UTF-8 byte, as does a leading ``.`` (no
    cell file is hidden, none is ``..``). Distinct names get distinct files;
    :meth:`name_of` inverts it.

    Example::

      CellStore.filename("train_seed=0/main")  # 'train_seed=0~main.json'
      CellStore.filename("a b/50%")            # 'a%20b~50%25.json'

    Args:
      name: the cell name, a non-empty ``str``.

    Returns:
      ``<encoded name>.json``.

    Raises:
      TypeError: ``name`` is not a non-empty ``str``.
    """
    if not isinstance(name, str) or not name:
      raise TypeError(f"cell name must be a non-empty str, got {name!r}")
    # quote() never escapes "~" (RFC 3986 unreserved): escape it here, it is the
    # separator.
    parts = (
      urllib.parse.quote(p, safe=_CELL_NAME_SAFE).replace("~", "%7E")
      for p in name.split("/")
    )
    stem = "~".join(parts)
    if stem.startswith("."):
      stem = "%2E" + stem[1:]
    return stem + cls.SUFFIX

  @classmethod
  def name_of(cls, filename: str) -> str:
    """The cell name whose file is called ``filename`` (the inverse of
    :meth:`filename`).

    Args:
      filename: a file name made by :meth:`filename`, ``.json`` suffix included.

    Returns:
      The cell name.

    Raises:
      ValueError: ``filename`` does not end in ``.json``, or its ``%XX`` escapes
        are not UTF-8.
    """
    if not isinstance(filename, str) or not filename.endswith(cls.SUFFIX):
      raise ValueError(
        f"filename must be '<encoded name>{cls.SUFFIX}', got {filename!r}"
      )
    stem = filename[: -len(cls.SUFFIX)]
    if not stem:
      raise ValueError(
        f"filename must be '<encoded name>{cls.SUFFIX}', got {filename!r}"
      )
    try:
      return "/".join(
        urllib.parse.unquote(p, errors="strict") for p in stem.split("~")
      )
    except UnicodeDecodeError as e:
      raise ValueError(
        f"filename {filename!r} has %XX escapes that are not UTF-8: {e}"
      ) from None

  @classmethod
  def legacy_filename(cls, name: str) -> str:
    """The file name of cell ``name`` under the earlier naming (all of it
    percent-encoded)."""
    if not isinstance(name, str) or not name:
      raise TypeError(f"cell name must be a non-empty str, got {name!r}")
    return urllib.parse.quote(name, safe="") + cls.SUFFIX

  def path(self, name: str) -> epath.Path:
    """The file of cell ``name``.

    Args:
      name: the cell's name (a non-empty str).

    Returns:
      ``<directory>/<readable file name>`` (see :meth:`filename`).
    """
    return self.directory / self.filename(name)

  def put(self, name: str, value: Any) -> None:
    """Stores ``value`` under ``name`` (replacing any previous value,
    atomically).

    A file of the earlier naming that held ``name`` is removed once the new one
    is written.

    Args:
      name: the cell's name (a non-empty str).
      value: a JSON-serialisable value (NumPy arrays and scalars are converted).

    Raises:
      TypeError: ``value`` is not JSON-serialisable, or ``name`` is not a
        non-empty str.
    """
    path = self.path(name)
    # Only a file of the earlier naming can be another cell's (the earlier
    # naming kept "~", the separator now): that cell moves to its current name
    # before this one is written.
    for other, f in list(self._files.items()):
      if other != name and f.name == path.name:
        cache_lib.write_json(
          self.path(other), {"name": other, "value": self._cells[other]}
        )
        self._files[other] = self.path(other)
    try:
      record = cache_lib.write_json(path, {"name": name, "value": value})
    except TypeError as e:
      # "cell values must be JSON-serialisable, ..."
      raise TypeError(f"cell {e}") from None
    held = {path.name} | {
      f.name for other, f in self._files.items() if other != name
    }
    for old in [self._files.get(name), *self._stale.pop(name, [])]:
      if (
        _is_writer()
        and old is not None
        and old.name not in held
        and old.exists()
      ):
        old.unlink()
    self._files[name] = path
    # What readers of the file will see (tuples become lists, numpy becomes
    # Python).
    self._cells[name] = record["value"]

  def checkpoint_dir(self, name: str) -> epath.Path:
    """The checkpoint directory :meth:`get_or_compute` gives cell ``name``.

    A run interrupted under the earlier naming resumes from its checkpoint
    directory (``<percent-encoded name>``) when that one exists and the current
    one does not.

    Args:
      name: the cell's name (a non-empty str).

    Returns:
      ``<checkpoint_root>/<file name without .json>``, or the earlier naming's
      directory.
    """
    current = self.checkpoint_root / self.filename(name)[: -len(self.SUFFIX)]
    legacy = (
      self.checkpoint_root / self.legacy_filename(name)[: -len(self.SUFFIX)]
    )
    if legacy != current and not current.exists() and legacy.exists():
      return legacy
    return current

  def get_or_compute(
    self, name: str, compute: Callable[[epath.Path], Any]
  ) -> Any:
    """The stored value of ``name``, or ``compute(checkpoint_dir)`` stored and
    returned.

    The returned value is what the store holds (JSON types), whether it was
    computed now or read back, so a resumed run sees the same objects.

    Args:
      name: the cell's name (a non-empty str).
      compute: ``compute(checkpoint_dir) -> value``, called only when the cell
        is missing; its checkpoint directory is removed once the value is
        stored.

    Returns:
      the cell's value as stored (JSON types).
    """
    if name not in self._cells:
      ckpt_dir = self.checkpoint_dir(name)
      self.put(name, compute(ckpt_dir))
      if _is_writer() and ckpt_dir.exists():
        ckpt_dir.rmtree()
        if not any(self.checkpoint_root.iterdir()):
          self.checkpoint_root.rmdir()
    return self._cells[name]

  def wait_for(
    self,
    name: str,
    *,
    deadline: float | None = None,
    poll_s: float = 20.0,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
  ) -> bool:
    """Waits until cell ``name`` is stored, by another process if need be.

    The folder is re-read (:meth:`reload`) every ``poll_s`` seconds until the
    cell is there or ``clock()`` passes ``deadline``.

    Args:
      name: the cell's name.
      deadline: a ``clock()`` time after which to give up (None: wait as long as
        it takes).
      poll_s: seconds between two reads of the folder (> 0).
      clock: the clock ``deadline`` is on (``time.time``).
      sleep: the wait between reads (``time.sleep``).

    Returns:
      True once the cell is stored (the store then holds it), False past
      ``deadline``.
    """
    if not poll_s > 0:
      raise ValueError(f"poll_s must be > 0, got {poll_s!r}")
    while name not in self._cells:
      if deadline is not None and clock() > deadline:
        return False
      sleep(poll_s)
      self.reload()
    return True

  def get(self, name: str, default: Any = None) -> Any:
    """The stored value of ``name``, or ``default``.

    Args:
      name: the cell's name.
      default: what to return when the cell is missing.

    Returns:
      the cell's value (JSON types), or ``default``.
    """
    return self._cells.get(name, default)

  def __getitem__(self, name: str) -> Any:
    return self._cells[name]

  def __contains__(self, name: object) -> bool:
    return name in self._cells

  def __len__(self) -> int:
    return len(self._cells)

  def __iter__(self) -> Iterator[str]:
    return iter(sorted(self._cells))

  def keys(self) -> list[str]:
    """The names of the stored cells.

    Returns:
      the names, sorted.
    """
    return sorted(self._cells)

  def items(self) -> list[tuple[str, Any]]:
    """The stored cells.

    Returns:
      ``(name, value)`` pairs sorted by name.
    """
    return [(k, self._cells[k]) for k in sorted(self._cells)]

  def to_dict(self) -> dict[str, Any]:
    """The stored cells as a dict.

    Returns:
      name -> value, in name order.
    """
    return dict(self.items())

  def save_snapshot(self, path: str | epath.PathLike) -> int:
    """Writes every stored cell into one file, so a run can resume on another
    machine.

    The file is ``{"format": "jaxpapers.cells/1", "cells": {name: value}}`` as
    JSON, compressed with xz when ``path`` ends in ``.xz`` (a snapshot of many
    small cells is a few times smaller than the folder);
    :meth:`restore_snapshot` reads it back. Written atomically by process 0
    (:func:`jaxpapers.core.cache.atomic_write`).

    Args:
      path: the snapshot file (``.json`` or ``.json.xz``).

    Returns:
      the number of cells written.
    """
    data = json.dumps(
      {"format": _SNAPSHOT_FORMAT, "cells": self.to_dict()},
      sort_keys=True,
      separators=(",", ":"),
    ).encode()
    compressed = epath.Path(path).name.endswith(".xz")
    cache_lib.atomic_write(path, lzma.compress(data) if compressed else data)
    return len(self)

  def restore_snapshot(self, path: str | epath.PathLike) -> int:
    """Stores the cells of a :meth:`save_snapshot` file that this store lacks.

    A cell the store already holds keeps its value: the folder is the newer
    state.

    Args:
      path: the snapshot file (``.json``, or ``.json.xz`` compressed with xz).

    Returns:
      the number of cells added.

    Raises:
      FileNotFoundError: no such file.
      ValueError: the file is not a cell snapshot (not JSON, or without
        ``{"format": "jaxpapers.cells/1", "cells": {...}}``).
    """
    path = epath.Path(path)
    raw = path.read_bytes()
    try:
      record = json.loads(
        lzma.decompress(raw) if path.name.endswith(".xz") else raw
      )
    except (lzma.LZMAError, ValueError) as e:
      raise ValueError(f"{path} is not a cell snapshot: {e}") from None
    if (
      not isinstance(record, dict)
      or record.get("format") != _SNAPSHOT_FORMAT
      or not isinstance(record.get("cells"), dict)
    ):
      raise ValueError(
        f'{path} is not a cell snapshot: expected {{"format": '
        f'"{_SNAPSHOT_FORMAT}", "cells": {{name: value}}}}'
      )
    added = 0
    for name, value in sorted(record["cells"].items()):
      if name not in self._cells:
        self.put(name, value)
        added += 1
    return added


def fill_cells(
  store: CellStore,
  cells: Mapping[str, Sequence[Any]],
  compute: Callable[..., Any],
  *,
  desc: str | None = None,
  show_progress: bool = True,
) -> list[Any]:
  """The values of a grid of cells, computing and storing only the missing ones
  (resume).

  The loop every grid experiment writes: for each cell name in order, the stored
  value, or ``compute(*args)`` stored under that name
  (:meth:`CellStore.get_or_compute`), with a progress bar over the grid. A rerun
  on the same store reads the finished cells back.

  Args:
    store: the cells (:class:`CellStore`).
    cells: cell name -> the positional arguments of ``compute`` for that cell (a
      tuple), in the order to compute them; names must be distinct non-empty
      strings (a mapping's keys are).
    compute: ``compute(*args) -> value``, a JSON-serialisable value; called only
      for the cells missing from ``store``.
    desc: the progress bar's label.
    show_progress: draw the progress bar (process 0 only;
      ``JAXPAPERS_NO_PROGRESS=1`` hides it).

  Returns:
    ``[len(cells)]`` values as stored (JSON types), in the order of ``cells``.

  Raises:
    TypeError: ``store`` is not a :class:`CellStore`, ``cells`` is not a
      mapping, a cell's arguments are not a tuple or list, or ``compute`` is not
      callable.

  Example::

    grid = {f"lr={lr}/seed={s}": (lr, s) for lr in (0.1, 0.3) for s in range(3)}
    values = fill_cells(CellStore(workdir / "cells"), grid, train_one, desc="cells")
  """
  if not isinstance(store, CellStore):
    raise TypeError(f"store must be a CellStore, got {type(store).__name__}")
  if not isinstance(cells, Mapping):
    raise TypeError(
      "cells must be a mapping of cell names to argument tuples, "
      f"got {type(cells).__name__}"
    )
  if not callable(compute):
    raise TypeError(f"compute must be callable, got {type(compute).__name__}")
  for name, args in cells.items():
    if not isinstance(args, (tuple, list)):
      raise TypeError(
        f"cells[{name!r}] must be a tuple of compute's arguments, "
        f"got {type(args).__name__}"
      )
  bar = _progress(
    cells.items(), desc=desc, disable=None if show_progress else True
  )
  return [
    store.get_or_compute(name, lambda _, args=args: compute(*args))
    for name, args in bar
  ]


class CellRunner:
  """Fills a :class:`CellStore` cell by cell, within a process-CPU budget, or
  only reads it.

  The orchestration of an experiment whose work is a list of named cells
  computed in a fixed order (a search's trials, then the finals they select):
  :meth:`cell` returns a stored cell as it is; otherwise it computes it
  (``compute() -> dict``), stores it with its ``cpu_s`` (the process CPU seconds
  it took) and ``wall_s``, and returns what the store holds. It returns None
  instead of computing when ``report_only`` is set (re-rendering a report from
  the cells there are) or when the process has used more than ``budget_s`` CPU
  seconds since the runner was made; :attr:`stopped` then says that the budget
  stopped it. A rerun on the same store reads finished cells back and computes
  only the missing ones.

  Args:
    store: the cells (:class:`CellStore`).
    budget_s: process CPU seconds after which no new cell starts (0: no budget).
    report_only: never compute; missing cells are None.
    describe: optional ``cell value -> str`` for the log line of a computed
      cell.

  Attributes:
    stopped: whether the budget has stopped a cell from starting.

  Example::

    runner = CellRunner(CellStore(workdir / "cells"), budget_s=1400.0)
    for t in range(trials):
      runner.cell(f"texas|gedi|panda|trial{t:03d}", lambda t=t: run_trial(t))
  """

  def __init__(
    self,
    store: CellStore,
    *,
    budget_s: float = 0.0,
    report_only: bool = False,
    describe: Callable[[Any], str] | None = None,
  ):
    if not isinstance(store, CellStore):
      raise TypeError(f"store must be a CellStore, got {type(store).__name__}")
    if (
      isinstance(budget_s, bool)
      or not isinstance(budget_s, (int, float))
      or budget_s < 0
    ):
      raise ValueError(
        f"budget_s must be a number >= 0 (0: no budget), got {budget_s!r}"
      )
    self.store, self.budget_s, self.report_only = (
      store,
      float(budget_s),
      bool(report_only),
    )
    self.describe = describe
    self.cpu0, self.stopped = time.process_time(), False

  def cell(
    self, name: str, compute: Callable[[], dict[str, Any]]
  ) -> Any | None:
    """The cell ``name``: stored, computed now, or None (report-only or budget
    spent).

    Args:
      name: the cell's name in the store.
      compute: ``() -> dict``, called only when the cell is missing and may
        start.

    Returns:
      The cell's value as stored (with ``cpu_s`` and ``wall_s`` when computed by
      a runner), or None.
    """
    if name in self.store:
      return self.store.get(name)
    if self.report_only:
      return None
    if self.budget_s and time.process_time() - self.cpu0 > self.budget_s:
      self.stopped = True
      return None

    def timed(_checkpoint_dir):
      c0, t0 = time.process_time(), time.perf_counter()
      out = compute()
      if not isinstance(out, dict):
        raise TypeError(
          f"cell {name!r}: compute() must return a dict, "
          f"got {type(out).__name__}"
        )
      return dict(
        out, cpu_s=time.process_time() - c0, wall_s=time.perf_counter() - t0
      )

    value = self.store.get_or_compute(name, timed)
    what = f"{self.describe(value)} " if self.describe is not None else ""
    logging.info("%s: %s(%.0f CPU s)", name, what, value["cpu_s"])
    return value
