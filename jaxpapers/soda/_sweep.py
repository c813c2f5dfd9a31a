"""The horizon study's grid as one compiled program: every run of a group of
optimizer families in one ``core.Sweep``, each run's batch optionally split over
a ``data`` mesh axis.

Every run carries the states of all the group's optimizers and applies its own
family's update, selected by a traced arm index; the hyperparameters (horizon
included) are traced too, so one compiled chunk serves every grid point and
horizon of the group (:func:`horizon_hparams`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxpapers import core
from jaxpapers.core import DATA_AXIS
from jaxpapers.core.sweep import RUNS_AXIS
from jaxpapers.soda._horizon import FAMILIES, horizon_optimizer


def choose_data_parallel(
  num_runs: int, num_devices: int, batch_size: int
) -> int:
  """Devices per run: the largest divisor ``p`` of ``num_devices`` and
  ``batch_size`` with ``p <= num_devices // num_runs`` (the devices runs-only
  sharding leaves idle; 1 when there are at least as many runs as devices)."""
  cap = max(1, num_devices // num_runs)
  return max(
    p for p in range(1, cap + 1) if num_devices % p == 0 and batch_size % p == 0
  )


def grid_mesh(
  num_runs: int,
  data_parallel: int,
  batch_size: int,
  devices: Sequence[Any] | None = None,
) -> Mesh | None:
  """The ``(runs, data)`` mesh of a grid of ``num_runs`` runs, or None for
  ``core.runs_mesh``.

  The runs axis gets the fewest devices that keep the load ``ceil(R / r)``
  minimal (all of them with several processes, as ``core.runs_mesh``); each
  run's batch is split over ``data``.

  Args:
    num_runs: runs in the grid ``R``.
    data_parallel: devices per run (1: none, None is returned; 0: the largest
      divisor of the device count and ``batch_size`` that the runs leave idle).
    batch_size: rows of each run's step batch.
    devices: the devices (default ``jax.devices()``).

  Returns:
    A ``Mesh`` with axes ``('runs', 'data')``, or None (runs-only sharding).

  Raises:
    ValueError: ``data_parallel`` negative or not dividing the devices and the
      batch.
  """
  devices = list(jax.devices() if devices is None else devices)
  if not isinstance(data_parallel, (int, np.integer)) or data_parallel < 0:
    raise ValueError(
      "data_parallel must be an int >= 0 (0 = automatic), "
      f"got {data_parallel!r}"
    )
  p = int(data_parallel) or choose_data_parallel(
    num_runs, len(devices), batch_size
  )
  if p == 1:
    return None
  if len(devices) % p or batch_size % p:
    raise ValueError(
      f"data_parallel={p} must divide the number of devices ({len(devices)}) "
      f"and the batch size ({batch_size})"
    )
  r = len(devices) // p
  if jax.process_count() == 1:
    r = math.ceil(num_runs / math.ceil(num_runs / r))
  auto = (jax.sharding.AxisType.Auto,) * 2
  return Mesh(
    np.asarray(devices[: r * p]).reshape(r, p),
    (RUNS_AXIS, DATA_AXIS),
    axis_types=auto,
  )


def data_constraint(mesh: Mesh | None, leading: int = 0):
  """``tree -> tree`` sharding axis ``leading`` of each leaf over the mesh's
  ``data`` axis (inside the vmapped per-run functions; identity without that
  axis). A leaf whose axis the data axis does not divide (a test set of 797
  rows) is left to the compiler."""
  if mesh is None or DATA_AXIS not in mesh.axis_names:
    return lambda tree: tree
  sharding, size = (
    NamedSharding(mesh, P(*([None] * leading), DATA_AXIS)),
    mesh.shape[DATA_AXIS],
  )

  def constrain(x):
    if x.ndim <= leading or x.shape[leading] % size:
      return x
    return jax.lax.with_sharding_constraint(x, sharding)

  return lambda tree: jax.tree.map(constrain, tree)


def horizon_hparams(
  runs: Sequence[tuple[str, dict[str, float]]],
  seeds: Sequence[int],
  base_seed: int,
  total: int,
  families: Sequence[str],
) -> tuple[dict[str, jax.Array], jax.Array]:
  """The traced hyperparameters and keys of a grid of runs for
  :func:`horizon_sweep`.

  Args:
    runs: ``[(family, {"lr", "wd"?, "adam_lr"?}), ...]`` grid points.
    seeds: the seeds run at every grid point (keys ``jax.random.key(base_seed *
      1000 + s)``).
    base_seed: the experiment's seed.
    total: the horizon in steps.
    families: the sweep's families (``arm`` indexes them).

  Returns:
    ``({"arm", "lr", "wd", "adam_lr", "total"}, each [R]; keys [R])``, runs
    ordered (family, hp) major, seed minor: ``R = len(runs) * len(seeds)``.

  Raises:
    ValueError: no runs or seeds, or a run's family not in ``families``.
  """
  if not runs or not len(seeds):
    raise ValueError(
      f"runs and seeds must be non-empty, got {len(runs)} runs, "
      f"{len(seeds)} seeds"
    )
  if any(f not in families for f, _ in runs):
    raise ValueError(
      f"every run's family must be in families={tuple(families)}"
    )
  fams, hps = zip(*runs)
  per_run = lambda v: jnp.asarray([x for x in v for _ in seeds], jnp.float32)
  hp = {
    "arm": jnp.asarray(
      [families.index(f) for f in fams for _ in seeds], jnp.int32
    ),
    "lr": per_run([h["lr"] for h in hps]),
    "wd": per_run([h.get("wd", 0.0) for h in hps]),
    "adam_lr": per_run([h.get("adam_lr", 0.0) for h in hps]),
  }
  hp["total"] = jnp.full_like(hp["lr"], float(total))
  keys = jnp.stack(
    [jax.random.key(base_seed * 1000 + s) for _ in hps for s in seeds]
  )
  return hp, keys


def horizon_sweep(
  task: dict[str, Any],
  *,
  families: Sequence[str],
  b1: float,
  b2: float,
  warmup_frac: float,
  cooldown_frac: float,
  mesh: Mesh | None = None,
  microbatches: int = 1,
) -> core.Sweep:
  """The ``core.Sweep`` of one group of optimizer families on a task's per-run
  functions.

  A run's state is ``(params, (state of each family's optimizer))``; its step
  applies the update of ``families[hparams['arm']]``
  (:func:`horizon_optimizer`). With ``microbatches = m`` the gradient is the
  mean over ``m`` slices of the batch, accumulated in a ``lax.scan``.

  Args:
    task: :func:`digits_task` or :func:`lm_task`'s functions.
    families: the group's families (a subset of ``FAMILIES``).
    b1: Adam's first-moment decay.
    b2: Adam's second-moment decay.
    warmup_frac: the schedule's warmup share.
    cooldown_frac: the schedule's cooldown share.
    mesh: :func:`grid_mesh`'s mesh (None: ``core.runs_mesh``).
    microbatches: slices of each step's batch (>= 1, dividing the batch).

  Returns:
    A ``core.Sweep``; its evals are ``task['eval_fn']`` of each run's
    parameters.

  Raises:
    ValueError: an unknown family or ``microbatches`` below 1.
  """
  if not families or any(f not in FAMILIES for f in families):
    raise ValueError(
      f"families must be a non-empty subset of {FAMILIES}, got {families!r}"
    )
  if not isinstance(microbatches, numbers.Integral) or microbatches < 1:
    raise ValueError(
      f"microbatches must be a positive int, got {microbatches!r}"
    )
  m, loss_fn, batch_fn = int(microbatches), task["loss_fn"], task["batch_fn"]
  shard = data_constraint(mesh, leading=1 if m > 1 else 0)
  opt_kw = dict(
    b1=b1, b2=b2, warmup_frac=warmup_frac, cooldown_frac=cooldown_frac
  )

  def value_and_grad(params, batch):
    if m == 1:
      return jax.value_and_grad(loss_fn)(params, shard(batch))

    def split(x):
      if x.shape[0] % m:
        raise ValueError(
          f"the batch ({x.shape[0]} rows) must be a multiple of "
          f"microbatches={m}"
        )
      return x.reshape(m, x.shape[0] // m, *x.shape[1:])

    def body(acc, mb):
      loss, g = jax.value_and_grad(loss_fn)(params, mb)
      return jax.tree.map(jnp.add, acc, (loss, g)), None

    zero = (jnp.zeros((), jnp.float32), jax.tree.map(jnp.zeros_like, params))
    (loss, grads), _ = jax.lax.scan(
      body, zero, shard(jax.tree.map(split, batch))
    )
    return loss / m, jax.tree.map(lambda g: g / m, grads)

  def txs(hp):
    return [
      horizon_optimizer(f, hp, **opt_kw, hidden_mask=task["hidden_mask"])
      for f in families
    ]

  def init_fn(hp, key, data):
    params = task["init_params"](jax.random.fold_in(key, 0))
    return params, tuple(tx.init(params) for tx in txs(hp))

  def step_fn(state, hp, key, i, data):
    params, states = state
    batch = batch_fn(jax.random.fold_in(jax.random.fold_in(key, 1), i))
    loss, grads = value_and_grad(params, batch)
    outs = [tx.update(grads, s, params) for tx, s in zip(txs(hp), states)]
    updates = jax.tree.map(
      lambda *us: jnp.select([hp["arm"] == j for j in range(len(us))], us),
      *[o[0] for o in outs],
    )
    return (
      optax.apply_updates(params, updates),
      tuple(o[1] for o in outs),
    ), loss

  def eval_run(state, hp, key, data):
    return task["eval_fn"](state[0], shard=data_constraint(mesh))

  return core.Sweep(init_fn, step_fn, eval_run, mesh=mesh)
