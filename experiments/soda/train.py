"""SODA experiment: does SODA remove weight-decay tuning across horizons?

Two tasks, each a grid of (optimizer arm, hyperparameters, seed) runs that are
trained side by side with ``jax.vmap`` (one compiled program per arm family
and horizon):

* ``digits``: an MLP on sklearn's bundled 8x8 digits. AdamW over a
  learning-rate x weight-decay grid vs SODA(AdamW) (and the ``anchor='zero'``
  ablation) over the learning-rate grid only; Muon (fc1/fc2 kernels, Adam on the
  rest) over a learning-rate x weight-decay grid vs SODA(Muon) over the learning
  rates, on their own horizons and seeds (``muon_horizons``, ``muon_num_seeds``).
* ``lm``: a byte-level transformer LM on the text of ``pydoc_data.topics``.
  AdamW and Muon (hidden matrices; AdamW on embedding/head/vectors) over a
  weight-decay grid vs SODA(AdamW) and SODA(Muon) (hidden matrices wrapped,
  embedding/head unwrapped, as in the reference Muon run), at several horizons.

The grids run on the shared sweep engine (``core.Sweep``: runs vmapped and
sharded over the devices, ``lax.scan`` chunks, an orbax checkpoint every
``checkpoint_every`` chunks under ``<workdir>/cells/_checkpoints/``). With
``data_parallel`` > 1 (or 0: chosen per grid, see :func:`choose_data_parallel`)
the mesh is ``runs x data``: each run's batch is split over the ``data`` axis
and its parameters and optimizer state are replicated there (XLA all-reduces
the gradients), so a grid with fewer runs than devices still uses them all;
``microbatches`` > 1 accumulates each step's gradient over that many slices of
the batch (same update, less activation memory). Every
finished (task, horizon, group) is stored in ``<workdir>/cells/`` (one JSON
file each, or one per grid stage with ``cell_stages``: see :func:`cell_blocks`); a rerun on
the same workdir skips finished cells (checked against the config's grid) and
resumes an unfinished one from its latest checkpoint.
"""

from __future__ import annotations

import functools
import math
import pathlib
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import nnx
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from experiments.soda import models
from jaxpapers import core
from jaxpapers import soda as soda_lib
from jaxpapers.core.sweep import RUNS_AXIS

LN2 = math.log(2.0)
DATA_AXIS = "data"


# ------------------------------------------------------------------- mesh --


def choose_data_parallel(num_runs: int, num_devices: int, batch_size: int) -> int:
  """Devices per run (``p``) for a grid of ``num_runs`` runs on ``num_devices`` devices.

  Data parallelism spends the devices that sharding whole runs leaves idle and never puts
  more than one run's parameters and optimizer state on a device where runs-only sharding
  would not: ``p`` is the largest divisor of ``num_devices`` (and of ``batch_size``) with
  ``p <= num_devices // num_runs``; ``p = 1`` when there are at least as many runs as devices.
  """
  for name, v in (("num_runs", num_runs), ("num_devices", num_devices), ("batch_size", batch_size)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  cap = max(1, num_devices // num_runs)
  return max(p for p in range(1, cap + 1) if num_devices % p == 0 and batch_size % p == 0)


def grid_mesh(num_runs: int, data_parallel: int, batch_size: int, devices=None) -> Mesh | None:
  """The ``(runs, data)`` mesh of one grid, or ``None`` for the runs-only default.

  Args:
    num_runs: ``R``, runs in the grid.
    data_parallel: devices per run on the ``data`` axis; 1 = none (each device trains whole
      runs, ``core.runs_mesh``); 0 = :func:`choose_data_parallel`.
    batch_size: the per-run batch, which the ``data`` axis splits (a multiple of it).
    devices: default ``jax.devices()``.

  Returns:
    ``None`` when ``p = 1``, else a mesh with axes ``(RUNS_AXIS, 'data')`` of shape
    ``(r, p)``: the fewest runs-axis devices that keep the load ``ceil(R / r)`` minimal (all of
    them with several processes, as ``core.runs_mesh``).
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
  grid = np.asarray(devices[: r * p]).reshape(r, p)
  return Mesh(grid, (RUNS_AXIS, DATA_AXIS), axis_types=auto)


def data_constraint(mesh: Mesh | None, leading: int = 0) -> Callable[[Any], Any]:
  """Shards axis ``leading`` of every leaf over the mesh's ``data`` axis (identity without one).

  Used inside the per-run (vmapped) functions: ``jax.vmap`` leaves the runs axis unconstrained,
  so a ``[B, ...]`` batch becomes ``[R, B, ...]`` split over ``(runs, data)``. A leaf whose axis
  is not a multiple of the data axis (e.g. a test set of 797 rows) is left to the compiler.
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


# -------------------------------------------------------------- schedules --


def wsd(
  peak: jax.Array, total: jax.Array, warmup_frac: float, cooldown_frac: float
) -> Callable[[jax.Array], jax.Array]:
  """Warmup (linear), constant, then linear decay to 0 over the last part.

  ``total`` (the horizon) may be a traced scalar.
  """
  warm = jnp.maximum(1.0, jnp.round(warmup_frac * total))
  cd_len = jnp.maximum(1.0, jnp.round(cooldown_frac * total))

  def schedule(count):
    c = count.astype(jnp.float32)
    w = jnp.minimum(1.0, (c + 1.0) / warm) if warmup_frac > 0 else 1.0
    d = jnp.clip((total - c) / cd_len, 0.0, 1.0)
    return peak * jnp.minimum(w, d)

  return schedule


# ------------------------------------------------------------------- arms --

# Optimizer families trained in one compiled program ("group"): every run of a
# group carries the states of all the group's optimizers and applies the update
# of its own family (selected by a traced arm index; under ``vmap`` every family's
# update is computed for every run). For the Adam families this shares one
# compiled model across families and horizons at a small extra optimizer cost.
# Muon and SODA(Muon) are separate groups: a Muon update (Newton-Schulz, five
# iterations of three matrix products per hidden kernel) costs several times the
# whole forward/backward pass of the digits MLP, so computing both Muon families
# for every run nearly doubled the step (``benchmarks/soda_muon_step.py``).
GROUPS = {
  "muon": ("muon",),
  "soda_muon": ("soda_muon",),
  "adam": ("adamw", "soda_adamw", "soda_adamw_zero"),
}
MUON_GROUPS = ("muon", "soda_muon")


def group_horizons(task_cfg, group: str) -> tuple[int, ...]:
  """The horizons of a group: ``muon_horizons`` for the Muon groups when set, else ``horizons``."""
  if group in MUON_GROUPS and task_cfg.get("muon_horizons", ()):
    return tuple(task_cfg["muon_horizons"])
  return tuple(task_cfg["horizons"])


def group_seeds(task_cfg, group: str) -> int:
  """Seeds per grid point: ``muon_num_seeds`` for the Muon groups when > 0, else ``num_seeds``."""
  if group in MUON_GROUPS and task_cfg.get("muon_num_seeds", 0):
    return int(task_cfg["muon_num_seeds"])
  return int(task_cfg["num_seeds"])


def base_horizons(task_cfg, base: str) -> tuple[int, ...]:
  """The horizons at which ``base`` and its SODA arm were both run."""
  return group_horizons(task_cfg, "muon" if base == "muon" else "adam")


def make_tx(
  family: str, hp: dict[str, jax.Array], cfg, hidden_mask=None
) -> optax.GradientTransformation:
  """The optimizer of one run; ``hp`` values may be traced (vmapped) scalars.

  ``hp['total']`` is the horizon (the schedule depends on it).
  """
  lr = wsd(hp["lr"], hp["total"], cfg.warmup_frac, cfg.cooldown_frac)
  if family == "adamw":
    return optax.adamw(lr, b1=cfg.b1, b2=cfg.b2, weight_decay=hp["wd"])
  if family in ("soda_adamw", "soda_adamw_zero"):
    anchor = "zero" if family.endswith("zero") else "init"
    return soda_lib.soda(optax.adamw(lr, b1=cfg.b1, b2=cfg.b2, weight_decay=0.0), anchor=anchor)
  if family in ("muon", "soda_muon"):
    adam_lr = wsd(hp["adam_lr"], hp["total"], cfg.warmup_frac, cfg.cooldown_frac)
    dims = lambda p: jax.tree.map(
      lambda h: optax.contrib.MuonDimensionNumbers() if h else None, hidden_mask(p)
    )
    wd = hp["wd"] if family == "muon" else 0.0
    base = optax.contrib.muon(
      lr,
      weight_decay=wd,
      adam_learning_rate=adam_lr,
      adam_b1=cfg.b1,
      adam_b2=cfg.b2,
      adam_weight_decay=0.0,
      muon_weight_dimension_numbers=dims,
    )
    if family == "muon":
      return base
    return soda_lib.soda(base, mask=hidden_mask)
  raise ValueError(f"unknown optimizer family {family!r}")


def family_grid(task_cfg) -> list[tuple[str, dict[str, float]]]:
  """All (family, hyperparameters) of a task, in a fixed order."""
  runs = []
  for lr in task_cfg.adamw_lrs:
    for wd in task_cfg.adamw_wds:
      runs.append(("adamw", {"lr": lr, "wd": wd}))
  for lr in task_cfg.soda_adamw_lrs:
    runs.append(("soda_adamw", {"lr": lr}))
  for lr in task_cfg.get("soda_zero_lrs", ()):
    runs.append(("soda_adamw_zero", {"lr": lr}))
  for lr in task_cfg.get("muon_lrs", ()):
    for wd in task_cfg.muon_wds:
      runs.append(("muon", {"lr": lr, "wd": wd, "adam_lr": task_cfg.muon_adam_lr}))
  for lr in task_cfg.get("soda_muon_lrs", ()):
    runs.append(("soda_muon", {"lr": lr, "adam_lr": task_cfg.muon_adam_lr}))
  return runs


# --------------------------------------------------------------- training --


def group_sweep(
  *,
  families,
  cfg,
  init_params,
  loss_fn,
  batch_fn,
  eval_fn,
  hidden_mask=None,
  mesh: Mesh | None = None,
  microbatches: int = 1,
) -> core.Sweep:
  """The per-run functions of one optimizer group on the shared sweep engine.

  Every run carries the states of all the group's optimizers (``families``, those
  of the group that the grid uses) and applies the update of its own family
  (``hparams['arm']``, an index into ``families``). The hyperparameters, the
  horizon (``hparams['total']``) included, are traced: one compiled chunk
  serves every grid and horizon of the group.

  ``mesh``: the grid's mesh (default ``core.runs_mesh``); with a ``data`` axis
  (:func:`grid_mesh`) each run's batch is split over it. ``microbatches = m``:
  the batch (leading axis ``B``, a multiple of ``m``) is cut into ``m`` slices
  of ``B / m`` rows and the gradient is their mean, accumulated in a
  ``lax.scan`` (equal to the full-batch gradient of a mean loss).
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


def setup_sweep(setup, *, families, cfg, **kwargs) -> core.Sweep:
  """:func:`group_sweep` with the per-run functions of a task setup (``_lm_setup`` / the
  digits setup: ``init_params``, ``loss_fn``, ``batch_fn``, ``eval_fn``, ``hidden_mask``);
  ``kwargs`` (``mesh``, ``microbatches``) pass through."""
  return group_sweep(
    families=families,
    cfg=cfg,
    init_params=setup["init_params"],
    loss_fn=setup["loss_fn"],
    batch_fn=setup["batch_fn"],
    eval_fn=setup["eval_fn"],
    hidden_mask=setup.get("hidden_mask"),
    **kwargs,
  )


def group_grid(runs, seeds, base_seed, total, families):
  """Hyperparameters ``{arm, lr, wd, adam_lr, total}`` (each ``[R]``) and keys ``[R]``.

  Runs are ordered (family, hp) major, seed minor: ``R = len(runs) * len(seeds)``.
  """
  fams, hps = zip(*runs)
  per_run = lambda v: jnp.asarray([x for x in v for _ in seeds], jnp.float32)
  hp = {
    "arm": jnp.asarray([families.index(f) for f in fams for _ in seeds], jnp.int32),
    "lr": per_run([h["lr"] for h in hps]),
    "wd": per_run([h.get("wd", 0.0) for h in hps]),
    "adam_lr": per_run([h.get("adam_lr", 0.0) for h in hps]),
  }
  hp["total"] = jnp.full_like(hp["lr"], float(total))
  keys = jnp.stack([jax.random.key(base_seed * 1000 + s) for _ in hps for s in seeds])
  return hp, keys


# ------------------------------------------------------------------ tasks --


def _digits_setup(cfg):
  (xtr, ytr), (xte, yte) = models.load_digits_split(cfg.num_train, cfg.data_seed)
  xtr, ytr, xte, yte = map(jnp.asarray, (xtr, ytr, xte, yte))
  graphdef, _ = nnx.split(models.MLP(cfg.hidden, rngs=nnx.Rngs(0)))

  def init_params(key):
    return nnx.split(models.MLP(cfg.hidden, rngs=nnx.Rngs(key)))[1]

  def loss_fn(params, batch):
    x, y = batch
    logits = nnx.merge(graphdef, params)(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

  def batch_fn(key):
    idx = jax.random.randint(key, (cfg.batch_size,), 0, xtr.shape[0])
    return xtr[idx], ytr[idx]

  def eval_fn(params, shard=lambda t: t):  # [2]: accuracy, NLL
    logits = nnx.merge(graphdef, params)(shard(xte))
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, yte).mean()
    return jnp.stack([jnp.mean(jnp.argmax(logits, -1) == yte), nll])

  # Input-independent predictors: the training class frequencies (NLL) and the majority class.
  prior = np.bincount(np.asarray(ytr), minlength=10) / ytr.shape[0]
  trivial = {
    "class_prior_nll": float(-np.mean(np.log(prior[np.asarray(yte)]))),
    "majority_accuracy": float(np.mean(np.asarray(yte) == np.argmax(prior))),
  }
  return dict(
    init_params=init_params,
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    eval_fn=eval_fn,
    hidden_mask=models.mlp_hidden_mask,
    trivial=trivial,
  )


def _lm_setup(cfg):
  if cfg.get("data_dir", ""):
    # Tokenised shards (GPT-2 ids) from data_dir; kept as uint16 on the device.
    train_np = models.load_token_shards(cfg.data_dir, "train", cfg.max_train_tokens)
    val_tok = np.asarray(models.load_token_shards(cfg.data_dir, "val", cfg.max_val_tokens))
    vocab, num_chars = cfg.vocab, int(train_np.shape[0] + val_tok.shape[0])
  else:
    tokens = models.load_text(cfg.text_path)
    split = int(0.9 * len(tokens))
    train_np, val_tok = tokens[:split], np.asarray(tokens[split:], np.int32)
    vocab, num_chars = 256, len(tokens)
  train_tok = jnp.asarray(train_np)  # uint8 bytes or uint16 token ids; windows cast to int32
  # Input-independent predictor: add-one-smoothed train unigram frequencies, in bits/token.
  freq = np.bincount(train_np, minlength=vocab).astype(np.float64) + 1.0
  trivial = {"unigram_bits": float(-np.mean(np.log2(freq[val_tok] / freq.sum())))}
  ctx = cfg.context
  starts = np.linspace(0, len(val_tok) - ctx - 2, cfg.val_windows).astype(int)
  val_x = jnp.asarray(np.stack([val_tok[s : s + ctx] for s in starts]), jnp.int32)
  val_y = jnp.asarray(np.stack([val_tok[s + 1 : s + ctx + 1] for s in starts]), jnp.int32)

  def make(key):
    return models.CharLM(
      vocab=vocab,
      d=cfg.d_model,
      layers=cfg.num_layers,
      heads=cfg.num_heads,
      context=ctx,
      rngs=nnx.Rngs(key),
    )

  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: make(jax.random.key(0))))

  def init_params(key):
    return nnx.split(make(key))[1]

  def nll(params, x, y):
    logits = nnx.merge(graphdef, params)(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

  def loss_fn(params, batch):
    return nll(params, *batch)

  # Validation in chunks of eval_batch windows (0 = all at once): the activations of one chunk.
  eval_batch = int(cfg.get("eval_batch", 0)) or cfg.val_windows
  if cfg.val_windows % eval_batch:
    raise ValueError(
      f"eval_batch ({eval_batch}) must divide val_windows ({cfg.val_windows}), or be 0"
    )
  val_chunks = (
    val_x.reshape(-1, eval_batch, ctx),
    val_y.reshape(-1, eval_batch, ctx),
  )

  def batch_fn(key):
    s = jax.random.randint(key, (cfg.batch_size,), 0, train_tok.shape[0] - ctx - 1)
    win = jax.vmap(lambda i: jax.lax.dynamic_slice(train_tok, (i,), (ctx + 1,)))(s)
    win = win.astype(jnp.int32)
    return win[:, :-1], win[:, 1:]

  def eval_fn(params, shard=lambda t: t):  # bits per token (per byte for the byte-level text)
    if val_chunks[0].shape[0] == 1:
      return nll(params, *shard((val_x, val_y))) / LN2
    per_chunk = jax.lax.map(lambda xy: nll(params, *shard(xy)), val_chunks)
    return per_chunk.mean() / LN2  # equal chunks: the mean over every window and position

  num_params = sum(x.size for x in jax.tree.leaves(abstract))
  return dict(
    init_params=init_params,
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    eval_fn=eval_fn,
    hidden_mask=models.hidden_matrix_mask,
    num_params=num_params,
    num_chars=num_chars,
    trivial=trivial,
  )


def _run_task(task: str, cfg, workdir: pathlib.Path, seed: int) -> dict:
  setup = _digits_setup(cfg) if task == "digits" else _lm_setup(cfg)
  grid = family_grid(cfg)
  groups = [g for g, fams in GROUPS.items() if any(f in fams for f, _ in grid)]
  jobs = [(t, g) for g in groups for t in group_horizons(cfg, g)]
  meta_keys = ("num_params", "num_chars", "trivial")
  out = {"runs": [], "meta": {k: setup[k] for k in meta_keys if k in setup}}
  store = core.CellStore(workdir / "cells")
  engines = {}
  bar = core.progress(total=len(jobs), desc=f"soda/{task}")
  for total, group in jobs:
    runs = [(f, h) for f, h in grid if f in GROUPS[group]]
    families = tuple(f for f in GROUPS[group] if any(f == g for g, _ in runs))
    if total % cfg.chunk:
      raise ValueError(f"horizon {total} must be a multiple of chunk {cfg.chunk}")

    def compute(ckpt_dir, total=total, group=group, runs=runs, families=families):
      s = group_seeds(cfg, group)
      # One engine per (group, number of runs): a group's cells share its families.
      if (group, len(runs)) not in engines:
        mesh = grid_mesh(len(runs) * s, int(cfg.get("data_parallel", 1)), int(cfg.batch_size))
        engines[group, len(runs)] = setup_sweep(
          setup,
          families=families,
          cfg=cfg,
          mesh=mesh,
          microbatches=int(cfg.get("microbatches", 1)),
        )
      hp, keys = group_grid(runs, range(s), seed, total, families)
      t0 = time.time()
      r = engines[group, len(runs)].run(
        hp,
        keys,
        num_steps=total,
        chunk_size=cfg.chunk,
        checkpoint_dir=ckpt_dir,
        checkpoint_every=cfg.get("checkpoint_every", 1),
        desc=f"{task} T={total} {group}",
        show_progress=total // cfg.chunk > 1,
      )
      seconds = time.time() - t0
      curve = r.evals  # [R, E(, 2)]
      train_curve = r.history.reshape(r.history.shape[0], -1, cfg.chunk).mean(-1)  # [R, E]
      steps = [int(x) for x in r.steps]
      return [
        {
          "family": family,
          "horizon": total,
          "hp": hp_i,
          "seeds": s,
          "curve": curve[i * s : (i + 1) * s].tolist(),
          "train_curve": train_curve[i * s : (i + 1) * s].tolist(),
          "steps": steps,
          "seconds": seconds / len(runs),
        }
        for i, (family, hp_i) in enumerate(runs)
      ]

    for suffix, cell_runs in cell_blocks(cfg, runs):
      name = f"{task}/T{total}/{group}{suffix}"
      value = store.get_or_compute(name, functools.partial(compute, runs=cell_runs))
      _check_cell(name, value, cell_runs, total)
      out["runs"].extend(value)
    bar.update(1)
  bar.close()
  return out


def cell_blocks(task_cfg, runs):
  """The stored cells of one (horizon, group): ``[(name suffix, runs), ...]``, stage by stage.

  ``task_cfg.cell_stages`` is the grid's history: an ordered sequence of ``(suffix,
  {family: learning rates})``, the first the grid of the first run (suffix ``''``), each later
  one the learning rates a grid extension added (e.g. ``'+ext'``, ``'+ext2'``). A run belongs to
  the stage that lists its family's learning rate, and the runs of one stage form the cell
  ``<task>/T<h>/<group><suffix>``, so a stage's stored cells are read back as stored when a later
  stage is added and only the new stage's runs train. A family that no stage names is wholly in
  the first stage; without ``cell_stages`` every run is in the cell ``''``. Empty cells are left
  out; the order of ``runs`` is kept inside each cell.

  Raises:
    ValueError: if ``cell_stages`` is not a sequence of ``(str, mapping)`` pairs with distinct
      suffixes, if a learning rate is listed by two stages of one family, or if a run's family
      is named by a stage but its learning rate by none (its cell would be ambiguous).
  """
  stages = tuple(task_cfg.get("cell_stages", None) or ())
  if not stages:
    return [("", list(runs))] if runs else []
  if not all(
    isinstance(st, (tuple, list))
    and len(st) == 2
    and isinstance(st[0], str)
    and hasattr(st[1], "get")
    for st in stages
  ):
    raise ValueError(
      f"cell_stages must be a sequence of (suffix, {{family: learning rates}}) pairs, got {stages!r}"
    )
  suffixes = [suffix for suffix, _ in stages]
  if len(set(suffixes)) != len(suffixes):
    raise ValueError(f"cell_stages: the suffixes {suffixes} must be distinct")
  blocks = {suffix: [] for suffix in suffixes}
  for family, hp in runs:
    hits = [
      suffix
      for suffix, lrs in stages
      if any(math.isclose(hp["lr"], x) for x in (lrs.get(family, None) or ()))
    ]
    named = any(lrs.get(family, None) is not None for _, lrs in stages)
    if len(hits) > 1:
      raise ValueError(f"cell_stages: {family} lr {hp['lr']:g} is listed by the stages {hits}")
    if not hits and named:
      raise ValueError(
        f"cell_stages: {family} lr {hp['lr']:g} is in the grid but in no stage; add it to the "
        "stage that trains it"
      )
    blocks[hits[0] if hits else suffixes[0]].append((family, hp))
  return [(suffix, blocks[suffix]) for suffix in suffixes if blocks[suffix]]


def _check_cell(name, value, runs, total):
  """Raises ``ValueError`` unless a stored cell holds exactly ``runs`` at horizon ``total``."""
  got = [(r["family"], r["horizon"], r["hp"]) for r in value]
  want = [(f, total, hp) for f, hp in runs]
  same = len(got) == len(want) and all(
    gf == wf
    and gt == wt
    and set(gh) == set(wh)
    and all(math.isclose(float(gh[k]), float(wh[k])) for k in wh)
    for (gf, gt, gh), (wf, wt, wh) in zip(got, want)
  )
  if not same:
    raise ValueError(
      f"stored cell {name!r} holds the runs {got}, but the config asks for {want}: the grid "
      "changed since the cell was stored; use a fresh workdir or delete that cell"
    )


# -------------------------------------------------------------- reporting --


def higher_is_better(task: str, tcfg) -> bool:
  """digits: test accuracy (higher) or test NLL (lower, ``metric='nll'``); lm: bits/char."""
  return task == "digits" and tcfg.get("metric", "accuracy") == "accuracy"


def _summaries(task_out: dict, task: str, tcfg=None) -> list[dict]:
  """One row per (horizon, family, hp): mean/std over seeds of the final eval.

  ``metric`` is the claims' metric (see :func:`higher_is_better`); digits rows also carry
  ``accuracy`` and ``nll`` (means) and their seed std.
  """
  use_nll = task == "digits" and tcfg is not None and tcfg.get("metric", "accuracy") == "nll"
  rows = []
  for res in task_out["runs"]:
    curve = np.asarray(res["curve"])  # [S, E] or [S, E, 2]
    fin = curve[:, -1]
    row = {"horizon": res["horizon"], "family": res["family"], **res["hp"], "steps": res["steps"]}
    if task == "digits":
      acc, nll = fin[:, 0], fin[:, 1]
      main = nll if use_nll else acc
      row.update(
        metric=float(main.mean()),
        metric_std=float(main.std()),
        accuracy=float(acc.mean()),
        accuracy_std=float(acc.std()),
        nll=float(nll.mean()),
        nll_std=float(nll.std()),
        per_seed=main.tolist(),
        curve=curve[:, :, 1].mean(0).tolist(),
      )
    else:
      row.update(
        metric=float(fin.mean()),
        metric_std=float(fin.std()),
        per_seed=fin.tolist(),
        curve=curve.mean(0).tolist(),
      )
    rows.append(row)
  return rows


def _best(rows, horizon, family, higher_is_better, **fixed):
  """The row of ``family`` at ``horizon`` (with the ``fixed`` hyperparameters) whose seed-mean
  metric is best, or ``None`` when there is none. A non-finite mean (a diverged run) ranks last,
  so it is chosen only when every candidate diverged."""
  cand = [
    r
    for r in rows
    if r["horizon"] == horizon
    and r["family"] == family
    and all(r.get(k) == v for k, v in fixed.items())
  ]
  if not cand:
    return None
  sign = 1.0 if higher_is_better else -1.0
  return max(cand, key=lambda r: sign * r["metric"] if math.isfinite(r["metric"]) else -math.inf)


def _metric_label(task, cfg) -> str:
  if task == "lm":
    return "val bits/char"
  return "test NLL (nats)" if cfg.get("metric", "accuracy") == "nll" else "test accuracy"


def _bases(task_cfg) -> list[tuple[str, str, str]]:
  """``(base, SODA arm, display name)`` of each base optimizer the task's grid runs."""
  return [("adamw", "soda_adamw", "AdamW")] + (
    [("muon", "soda_muon", "Muon")] if task_cfg.get("muon_lrs", ()) else []
  )


def best_curves(rows, task_cfg, hib) -> dict[str, dict]:
  """The seed-mean eval curve of each family's best run at the longest horizon (and of the
  bases' best run at wd = 0), by legend label: ``{label: {"steps": [E], "curve": [E]}}``."""
  t, out = max(task_cfg["horizons"]), {}
  for fam in ("adamw", "soda_adamw", "soda_adamw_zero", "muon", "soda_muon"):
    best = _best(rows, t, fam, hib)
    if best is not None:
      hp = ", ".join(f"{k} {best[k]:g}" for k in ("lr", "wd") if k in best)
      out[f"{fam} ({hp})"] = {"steps": best["steps"], "curve": best["curve"]}
    w0 = _best(rows, t, fam, hib, wd=0.0) if fam in ("adamw", "muon") else None
    if w0 is not None and w0 is not best:
      out[f"{fam} wd=0 (lr {w0['lr']:g})"] = {"steps": w0["steps"], "curve": w0["curve"]}
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, per enabled task (pure).

  Returns:
    ``{"tasks": {task: {"metric", "horizons", "seeds", "muon" (title text), "cols" (column
    headers, three per base), "rows": {T: {"c": [{"metric", "metric_std", "hp"} or {} per
    column]}}, "arms": {base name: {"horizons", "best_wd", "tuned", "wd0", "soda" (metric
    lists), "*_std"}}, "by_horizon": {T: {"arms": {base name: {"wds", "best", "soda": {"x",
    "y", "lr"}}}}}}}}``; a weight decay of 0 is drawn a decade below the smallest positive one.
  """
  tasks = {}
  for task in ("digits", "lm"):
    m, tcfg = record["metrics"].get(task), record["config"][task]
    if not m:
      continue
    hib, bases = higher_is_better(task, tcfg), _bases(tcfg)
    rows = [{**r, "metric": float(r["metric"])} for r in m["rows"]]  # records write NaN as 'nan'
    best = lambda t, fam, **fixed: _best(rows, t, fam, hib, **fixed)
    cell = lambda r, *ks: {} if r is None else {**r, "hp": ", ".join(f"{r[k]:g}" for k in ks)}
    muon = f"; Muon arms: horizons {list(group_horizons(tcfg, 'muon'))}, "
    v = tasks[task] = {
      "metric": m["metric"], "horizons": str(list(tcfg["horizons"])), "seeds": tcfg["num_seeds"],
      "muon": muon + f"{group_seeds(tcfg, 'muon')} seeds" if len(bases) > 1 else "",
      "cols": [h.format(n) for _, _, n in bases
               for h in ("{} wd=0 (lr)", "best {} (lr, wd)", "SODA({}) (lr)")],
      "rows": {}, "arms": {}, "by_horizon": {},
    }  # fmt: skip
    for t in sorted({t for b, _, _ in bases for t in base_horizons(tcfg, b)}):
      v["rows"][str(t)] = {"c": [c for b, w, _ in bases for c in (
        cell(best(t, b, wd=0.0), "lr"), cell(best(t, b), "lr", "wd"), cell(best(t, w), "lr"))]}  # fmt: skip
    for base, wrapped, name in bases:
      wds = sorted({r["wd"] for r in rows if r["family"] == base})
      floor = lambda w: max(w, min([x for x in wds if x > 0] or [1.0]) / 10)
      ts = base_horizons(tcfg, base)
      arm = {"horizons": list(ts), "best_wd": [floor(best(t, base)["wd"]) for t in ts]}
      for key, fam, fixed in (
        ("tuned", base, {}),
        ("wd0", base, {"wd": 0.0}),
        ("soda", wrapped, {}),
      ):
        rs = [best(t, fam, **fixed) or {} for t in ts]
        arm[key], arm[f"{key}_std"] = (
          [r.get("metric") for r in rs],
          [r.get("metric_std") for r in rs],
        )
      v["arms"][name] = arm
      for t in ts:
        s = best(t, wrapped)
        v["by_horizon"].setdefault(str(t), {"arms": {}})["arms"][name] = {
          "wds": [floor(w) for w in wds],
          "best": [best(t, base, wd=w)["metric"] for w in wds],
          **({} if s is None else
             {"soda": {"x": [floor(wds[0]), floor(wds[-1])], "y": [s["metric"]] * 2, "lr": s["lr"]}}),
        }  # fmt: skip
  return {"tasks": tasks}


def _claims(rows, cfg, higher_is_better, base, wrapped) -> list[dict]:
  """Per horizon: best tuned wd, best SODA, and the gap in seed-std units."""
  out = []
  for t in base_horizons(cfg, base):
    b = _best(rows, t, base, higher_is_better)
    s = _best(rows, t, wrapped, higher_is_better)
    b0 = _best(rows, t, base, higher_is_better, wd=0.0)
    if b is None or s is None:
      continue
    sign = 1 if higher_is_better else -1
    gap = sign * (s["metric"] - b["metric"])  # > 0: SODA better
    noise = math.sqrt(b["metric_std"] ** 2 + s["metric_std"] ** 2) + 1e-12
    out.append(
      {
        "horizon": t,
        "base": base,
        "best_wd": b["wd"],
        "best_lr": b["lr"],
        "best_base": b["metric"],
        "base_wd0": b0["metric"] if b0 else None,
        "soda": s["metric"],
        "soda_lr": s["lr"],
        "soda_minus_best_base": gap,
        "gap_in_seed_std": gap / noise,
        "soda_beats_wd0": (sign * (s["metric"] - b0["metric"]) > 0) if b0 else None,
      }
    )
  return out


def _wd_transfer(rows, cfg, higher_is_better, base) -> dict | None:
  """How much a weight decay tuned at one end of the horizon range costs at the other end.

  With ``wd_s`` / ``wd_l`` the best weight decay (lr x wd grid) at the shortest / longest
  horizon, the penalty at the longest horizon is (best run) - (best run over lr with
  ``wd = wd_s``), signed so >= 0, in combined seed std; likewise at the shortest horizon with
  ``wd_l``. The larger of the two says whether the tuned weight decay must move with the
  horizon (0 when the same weight decay is best at both ends).
  """
  hs = base_horizons(cfg, base)
  t_s, t_l = min(hs), max(hs)
  bs, bl = _best(rows, t_s, base, higher_is_better), _best(rows, t_l, base, higher_is_better)
  if bs is None or bl is None:
    return None
  sign = 1 if higher_is_better else -1

  def penalty(t, best, wd):
    other = _best(rows, t, base, higher_is_better, wd=wd)
    gap = sign * (best["metric"] - other["metric"])
    return gap / (math.sqrt(best["metric_std"] ** 2 + other["metric_std"] ** 2) + 1e-12)

  return {
    "base": base,
    "best_wd_by_horizon": {str(t): _best(rows, t, base, higher_is_better)["wd"] for t in hs},
    "best_lr_by_horizon": {str(t): _best(rows, t, base, higher_is_better)["lr"] for t in hs},
    "penalty_at_longest_in_std": penalty(t_l, bl, bs["wd"]),
    "penalty_at_shortest_in_std": penalty(t_s, bs, bl["wd"]),
  }


def _edge(value: float, grid, *, lower: bool = True) -> str:
  """``'low'`` / ``'high'`` when ``value`` is the smallest / largest of ``grid``, else ``''``.

  With ``lower=False`` only the top end counts (a weight decay of 0 bounds the search space
  itself). A grid of one value has the value at its edge (``'low'``, or ``'high'`` without
  ``lower``).
  """
  if lower and value <= min(grid):
    return "low"
  if value >= max(grid):
    return "high"
  return ""


def grid_edges(rows, cfg, higher_is_better, base, wrapped) -> dict[str, dict]:
  """Per horizon of ``base``: does each tuned optimum lie inside the grid that was run?

  At horizon ``T`` the best run of ``base`` over lr x wd gives ``base_lr`` and ``base_wd``, the
  best run of ``wrapped`` (SODA) over lr gives ``soda_lr``. Each is compared with the values of
  that hyperparameter run by that family at ``T``: the smallest or the largest is an edge, beyond
  which the optimum may lie (the arm is then not tuned); for the weight decay only the largest
  is an edge. Returns ``{str(T): {"base_lr", "base_lr_edge", "base_wd", "base_wd_edge",
  "soda_lr", "soda_lr_edge", "base_at_edge", "at_edge"}}``: each ``*_edge`` is ``'low'``,
  ``'high'`` or ``''`` (inside), ``base_at_edge`` counts the base's two edges (0 to 2) and
  ``at_edge`` all three (0 to 3). Horizons where either arm was not run are left out.
  """
  out = {}
  for t in base_horizons(cfg, base):
    b = _best(rows, t, base, higher_is_better)
    s = _best(rows, t, wrapped, higher_is_better)
    if b is None or s is None:
      continue
    grid = lambda fam, key: sorted(
      {r[key] for r in rows if r["horizon"] == t and r["family"] == fam}
    )
    e = {
      "base_lr": b["lr"],
      "base_lr_edge": _edge(b["lr"], grid(base, "lr")),
      "base_wd": b["wd"],
      "base_wd_edge": _edge(b["wd"], grid(base, "wd"), lower=False),
      "soda_lr": s["lr"],
      "soda_lr_edge": _edge(s["lr"], grid(wrapped, "lr")),
    }
    e["base_at_edge"] = sum(bool(e[k]) for k in ("base_lr_edge", "base_wd_edge"))
    e["at_edge"] = e["base_at_edge"] + bool(e["soda_lr_edge"])
    out[str(t)] = e
  return out


# ------------------------------------------------------------------- main --


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
  """Runs the enabled tasks; writes results.json and the report (``config.report``)."""
  t0 = time.time()
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  metrics: dict[str, Any] = {}
  for task in ("digits", "lm"):
    tcfg = config[task]
    if not tcfg.enabled:
      continue
    core.validate_seeds(tcfg.num_seeds, name=f"{task}.num_seeds")
    if tcfg.get("muon_num_seeds", 0):  # 0 = the Muon groups use num_seeds
      core.validate_seeds(tcfg.muon_num_seeds, name=f"{task}.muon_num_seeds")
    hib = higher_is_better(task, tcfg)
    out = _run_task(task, tcfg, workdir, config.seed)
    rows = _summaries(out, task, tcfg)
    claims, transfer, edges = [], [], {}
    for base, wrapped, _ in _bases(tcfg):
      claims += _claims(rows, tcfg, hib, base, wrapped)
      edges[base] = grid_edges(rows, tcfg, hib, base, wrapped)
      tr = _wd_transfer(rows, tcfg, hib, base)
      if tr is not None:
        transfer.append(tr)
    metrics[task] = {
      "rows": [{k: v for k, v in r.items() if k != "curve"} for r in rows],
      "claims": claims,
      "wd_transfer": transfer,
      "grid_edges": edges,
      "metric": _metric_label(task, tcfg),
      "curves": best_curves(rows, tcfg, hib),
      **out["meta"],
      "seconds": sum(r["seconds"] for r in out["runs"]),
    }
  wall = time.time() - t0
  metrics["derived"] = derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    notes=(
      "CPU-scale reproduction of the SODA wrapper claim (arXiv:2605.11172): "
      "best SODA (no weight decay, lr grid) vs best-tuned weight decay. "
      "Runs of one optimizer family are trained side by side with jax.vmap."
    ),
    wall_time_s=wall,
  )
  return metrics


def derived_metrics(metrics) -> dict:
  """Per task and base optimizer, the values the claims in ``configs/default.py`` use.

  ``<task>_<base>_worst_gap_in_std``: the smallest over horizons of (best SODA - best tuned
  base) in combined seed std (> 0: SODA better); ``<task>_<base>_beats_wd0_fraction``: the
  fraction of horizons where SODA beats the base at wd = 0; ``<task>_<base>_horizons_at_edge``:
  the horizons (ascending) where a tuned optimum (base lr or wd, SODA lr) lies at an edge of its
  grid (:func:`grid_edges`), and ``<task>_<base>_optima_at_edge`` how many optima do, over all
  horizons. Pure, JSON in/out.
  """
  out = {}
  for task, m in metrics.items():
    if not isinstance(m, dict) or "claims" not in m:
      continue
    for base in sorted({c["base"] for c in m["claims"]}):
      cs = [c for c in m["claims"] if c["base"] == base]
      out[f"{task}_{base}_worst_gap_in_std"] = min(c["gap_in_seed_std"] for c in cs)
      beats = [c["soda_beats_wd0"] for c in cs if c["soda_beats_wd0"] is not None]
      out[f"{task}_{base}_beats_wd0_fraction"] = (sum(beats) / len(beats)) if beats else None
    for base, by_t in m.get("grid_edges", {}).items():
      ts = sorted(by_t, key=int)
      out[f"{task}_{base}_horizons_at_edge"] = [int(t) for t in ts if by_t[t]["at_edge"] > 0]
      out[f"{task}_{base}_optima_at_edge"] = sum(by_t[t]["at_edge"] for t in ts)
    for tr in m.get("wd_transfer", ()):
      out[f"{task}_{tr['base']}_wd_transfer_penalty_in_std"] = max(
        tr["penalty_at_longest_in_std"], tr["penalty_at_shortest_in_std"]
      )
  return out
