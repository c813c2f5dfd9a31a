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
file each, or one per grid stage with ``cell_stages``: see ``grid.cell_blocks``); a rerun on
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

from experiments.soda import evaluate as evaluation
from experiments.soda import grid, models
from experiments.soda.evaluate import derived_metrics  # re-judged by experiments.reproduce
from jaxpapers import core
from jaxpapers import soda as soda_lib
from jaxpapers.core.sweep import RUNS_AXIS

__all__ = ["derived_metrics", "grid_mesh", "make_tx", "setup_sweep", "train_and_evaluate"]

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
  device_grid = np.asarray(devices[: r * p]).reshape(r, p)
  return Mesh(device_grid, (RUNS_AXIS, DATA_AXIS), axis_types=auto)


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
  all_runs = grid.family_grid(cfg)
  groups = [g for g, fams in grid.GROUPS.items() if any(f in fams for f, _ in all_runs)]
  jobs = [(t, g) for g in groups for t in grid.group_horizons(cfg, g)]
  meta_keys = ("num_params", "num_chars", "trivial")
  out = {"runs": [], "meta": {k: setup[k] for k in meta_keys if k in setup}}
  store = core.CellStore(workdir / "cells")
  engines = {}
  bar = core.progress(total=len(jobs), desc=f"soda/{task}")
  for total, group in jobs:
    runs = [(f, h) for f, h in all_runs if f in grid.GROUPS[group]]
    families = tuple(f for f in grid.GROUPS[group] if any(f == g for g, _ in runs))
    if total % cfg.chunk:
      raise ValueError(f"horizon {total} must be a multiple of chunk {cfg.chunk}")

    def compute(ckpt_dir, total=total, group=group, runs=runs, families=families):
      s = grid.group_seeds(cfg, group)
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
      hp, keys = grid.group_grid(runs, range(s), seed, total, families)
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

    for suffix, cell_runs in grid.cell_blocks(cfg, runs):
      name = f"{task}/T{total}/{group}{suffix}"
      value = store.get_or_compute(name, functools.partial(compute, runs=cell_runs))
      grid.check_cell(name, value, cell_runs, total)
      out["runs"].extend(value)
    bar.update(1)
  bar.close()
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
    out = _run_task(task, tcfg, workdir, config.seed)
    metrics[task] = evaluation.task_metrics(task, tcfg, out)
  wall = time.time() - t0
  metrics["derived"] = evaluation.derived_metrics(metrics)
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
