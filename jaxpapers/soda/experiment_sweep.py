"""The optimizer grid of the SODA experiment (``experiments/soda``) on ``core.Sweep``.

One *group* of optimizer families trains as one compiled program: every run carries the states
of all the group's optimizers and applies the update of its own family, selected by a traced arm
index. The hyperparameters (horizon included) are traced, so one compiled chunk serves every grid
and horizon of the group. A grid's mesh is ``runs`` only (``core.runs_mesh``) or ``runs x data``
(:func:`grid_mesh`): each run's batch split over the ``data`` axis, its state replicated there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxpapers import core
from jaxpapers.core.sweep import RUNS_AXIS
from jaxpapers.soda import soda

DATA_AXIS = "data"


def choose_data_parallel(num_runs: int, num_devices: int, batch_size: int) -> int:
  """Devices per run (``p``) for a grid of ``num_runs`` runs on ``num_devices`` devices.

  Data parallelism spends the devices that sharding whole runs leaves idle and never puts more
  than one run's state on a device where runs-only sharding would not.

  Args:
    num_runs: ``R``, runs in the grid.
    num_devices: devices available.
    batch_size: the per-run batch, which ``p`` must divide.

  Returns:
    The largest divisor ``p`` of ``num_devices`` and ``batch_size`` with
    ``p <= num_devices // num_runs`` (1 when there are at least as many runs as devices).
  """
  for name, v in (("num_runs", num_runs), ("num_devices", num_devices), ("batch_size", batch_size)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  cap = max(1, num_devices // num_runs)
  return max(p for p in range(1, cap + 1) if num_devices % p == 0 and batch_size % p == 0)


def grid_mesh(
  num_runs: int, data_parallel: int, batch_size: int, devices: Sequence[Any] | None = None
) -> Mesh | None:
  """The ``(runs, data)`` mesh of one grid, or ``None`` for the runs-only default.

  Args:
    num_runs: ``R``, runs in the grid.
    data_parallel: devices per run on the ``data`` axis; 1 = none (each device trains whole
      runs, ``core.runs_mesh``); 0 = :func:`choose_data_parallel`.
    batch_size: the per-run batch, which the ``data`` axis splits (a multiple of it).
    devices: default ``jax.devices()``.

  Returns:
    ``None`` when ``p = 1``, else a mesh with axes ``(RUNS_AXIS, 'data')`` of shape ``(r, p)``:
    the fewest runs-axis devices that keep the load ``ceil(R / r)`` minimal (all of them with
    several processes, as ``core.runs_mesh``).
  """
  devices = list(jax.devices() if devices is None else devices)
  if not isinstance(data_parallel, (int, np.integer)) or data_parallel < 0:
    raise ValueError(f"data_parallel must be an int >= 0 (0 = automatic), got {data_parallel!r}")
  p = int(data_parallel) or choose_data_parallel(num_runs, len(devices), batch_size)
  if p == 1:
    return None
  if len(devices) % p or batch_size % p:
    raise ValueError(
      f"data_parallel={p} must divide the number of devices ({len(devices)}) and the batch "
      f"size ({batch_size})"
    )
  r = len(devices) // p
  if jax.process_count() == 1:
    r = math.ceil(num_runs / math.ceil(num_runs / r))
  auto = (jax.sharding.AxisType.Auto,) * 2
  device_grid = np.asarray(devices[: r * p]).reshape(r, p)
  return Mesh(device_grid, (RUNS_AXIS, DATA_AXIS), axis_types=auto)


def data_constraint(mesh: Mesh | None, leading: int = 0) -> Callable[[Any], Any]:
  """Shards axis ``leading`` of every leaf over the mesh's ``data`` axis (identity without one).

  Used inside the per-run (vmapped) functions: ``jax.vmap`` leaves the runs axis unconstrained,
  so a ``[B, ...]`` batch becomes ``[R, B, ...]`` split over ``(runs, data)``. A leaf whose axis
  is not a multiple of the data axis (e.g. a test set of 797 rows) is left to the compiler.

  Args:
    mesh: the grid's mesh, or ``None``.
    leading: the axis to shard.

  Returns:
    A function of a pytree that returns it with the sharding constraint applied.
  """
  if mesh is None or DATA_AXIS not in mesh.axis_names:
    return lambda tree: tree
  spec = P(*([None] * leading), DATA_AXIS)
  size = mesh.shape[DATA_AXIS]

  def constrain(x):
    if x.ndim <= leading or x.shape[leading] % size:
      return x
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

  return lambda tree: jax.tree.map(constrain, tree)


def wsd(peak: Any, total: Any, warmup_frac: float, cooldown_frac: float) -> optax.Schedule:
  """Warmup-stable-decay: linear warmup, constant, then linear decay to 0 over the last part.

  Args:
    peak: the peak learning rate (a traced scalar is fine).
    total: the horizon in steps (a traced scalar is fine).
    warmup_frac: fraction of ``total`` for the warmup (0 = none).
    cooldown_frac: fraction of ``total`` for the decay.

  Returns:
    ``schedule(count) -> learning rate``, an optax schedule.
  """
  warm = jnp.maximum(1.0, jnp.round(warmup_frac * total))
  cd_len = jnp.maximum(1.0, jnp.round(cooldown_frac * total))

  def schedule(count: Any) -> jax.Array:
    c = jnp.asarray(count).astype(jnp.float32)
    w = jnp.minimum(1.0, (c + 1.0) / warm) if warmup_frac > 0 else 1.0
    d = jnp.clip((total - c) / cd_len, 0.0, 1.0)
    return peak * jnp.minimum(w, d)

  return schedule


def make_tx(
  family: str, hp: dict[str, Any], cfg: Any, hidden_mask: Callable[[Any], Any] | None = None
) -> optax.GradientTransformation:
  """The optimizer of one run of ``family``; ``hp`` values may be traced (vmapped) scalars.

  Args:
    family: ``'adamw'``, ``'soda_adamw'``, ``'soda_adamw_zero'`` (``anchor='zero'``), ``'muon'``
      or ``'soda_muon'`` (SODA on the ``hidden_mask`` matrices of Muon without weight decay).
    hp: ``lr``, ``wd``, ``adam_lr`` (Muon's Adam branch) and ``total`` (the horizon).
    cfg: the task config: ``b1``, ``b2``, ``warmup_frac``, ``cooldown_frac``.
    hidden_mask: for the Muon families, ``params -> bool pytree`` of Muon's matrices.

  Returns:
    The optax transformation.
  """
  lr = wsd(hp["lr"], hp["total"], cfg.warmup_frac, cfg.cooldown_frac)
  if family == "adamw":
    return optax.adamw(lr, b1=cfg.b1, b2=cfg.b2, weight_decay=hp["wd"])
  if family in ("soda_adamw", "soda_adamw_zero"):
    anchor = "zero" if family.endswith("zero") else "init"
    return soda(optax.adamw(lr, b1=cfg.b1, b2=cfg.b2, weight_decay=0.0), anchor=anchor)
  if family in ("muon", "soda_muon") and hidden_mask is not None:
    adam_lr = wsd(hp["adam_lr"], hp["total"], cfg.warmup_frac, cfg.cooldown_frac)
    dims = lambda p: jax.tree.map(
      lambda h: optax.contrib.MuonDimensionNumbers() if h else None, hidden_mask(p)
    )
    base = optax.contrib.muon(
      lr,
      weight_decay=hp["wd"] if family == "muon" else 0.0,
      adam_learning_rate=adam_lr,
      adam_b1=cfg.b1,
      adam_b2=cfg.b2,
      adam_weight_decay=0.0,
      muon_weight_dimension_numbers=dims,
    )
    return base if family == "muon" else soda(base, mask=hidden_mask)
  raise ValueError(f"unknown optimizer family {family!r} (the Muon families need hidden_mask)")


def group_sweep(
  *,
  families: Sequence[str],
  cfg: Any,
  init_params: Callable[[jax.Array], Any],
  loss_fn: Callable[[Any, Any], jax.Array],
  batch_fn: Callable[[jax.Array], Any],
  eval_fn: Callable[..., jax.Array],
  hidden_mask: Callable[[Any], Any] | None = None,
  mesh: Mesh | None = None,
  microbatches: int = 1,
) -> core.Sweep:
  """The per-run functions of one optimizer group on the shared sweep engine.

  Args:
    families: the group's families that the grid uses; ``hparams['arm']`` indexes them.
    cfg: the task config (see :func:`make_tx`).
    init_params: ``key -> params``.
    loss_fn: ``(params, batch) -> scalar`` mean loss.
    batch_fn: ``key -> batch`` (leaves with a leading batch axis ``B``).
    eval_fn: ``(params, shard=...) -> metrics`` on the held-out data.
    hidden_mask: the Muon matrices (see :func:`make_tx`).
    mesh: the grid's mesh (default ``core.runs_mesh``); with a ``data`` axis (:func:`grid_mesh`)
      each run's batch is split over it.
    microbatches: ``m``: the batch is cut into ``m`` slices of ``B / m`` rows and the gradient is
      their mean, accumulated in a ``lax.scan`` (equal to the full-batch gradient of a mean loss).

  Returns:
    The ``core.Sweep``; a run's state is ``(params, (state of each family's optimizer))``.
  """
  if not isinstance(microbatches, (int, np.integer)) or microbatches < 1:
    raise ValueError(f"microbatches must be a positive int, got {microbatches!r}")
  m = int(microbatches)
  shard = data_constraint(mesh, leading=1 if m > 1 else 0)

  def value_and_grad(params, batch):
    if m == 1:
      return jax.value_and_grad(loss_fn)(params, shard(batch))

    def split(x):
      if x.shape[0] % m:
        raise ValueError(f"the batch ({x.shape[0]} rows) must be a multiple of microbatches={m}")
      return x.reshape(m, x.shape[0] // m, *x.shape[1:])

    def body(acc, mb):
      loss, g = jax.value_and_grad(loss_fn)(params, mb)
      return jax.tree.map(jnp.add, acc, (loss, g)), None

    zero = (jnp.zeros((), jnp.float32), jax.tree.map(jnp.zeros_like, params))
    (loss, grads), _ = jax.lax.scan(body, zero, shard(jax.tree.map(split, batch)))
    return loss / m, jax.tree.map(lambda g: g / m, grads)

  def txs(hp):
    return [make_tx(f, hp, cfg, hidden_mask) for f in families]

  def init_fn(hp, key, data):
    params = init_params(jax.random.fold_in(key, 0))
    return params, tuple(tx.init(params) for tx in txs(hp))

  def step_fn(state, hp, key, i, data):
    params, states = state
    batch = batch_fn(jax.random.fold_in(jax.random.fold_in(key, 1), i))
    loss, grads = value_and_grad(params, batch)
    outs = [tx.update(grads, s, params) for tx, s in zip(txs(hp), states)]
    updates = jax.tree.map(
      lambda *us: jnp.select([hp["arm"] == j for j in range(len(us))], us), *[o[0] for o in outs]
    )
    return (optax.apply_updates(params, updates), tuple(o[1] for o in outs)), loss

  def eval_run(state, hp, key, data):
    return eval_fn(state[0], shard=data_constraint(mesh))

  return core.Sweep(init_fn, step_fn, eval_run, mesh=mesh)
