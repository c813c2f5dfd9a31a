"""SODA experiment: does SODA remove weight-decay tuning across horizons?

Each task (``digits``: an MLP on sklearn's digits; ``lm``: a byte- or token-level GPT) is a grid
of (optimizer family, hyperparameters, seed) runs, trained per (horizon, optimizer group) as one
``core.Sweep`` grid (``jaxpapers.soda.experiment_sweep``) and stored as one cell per grid stage
(``grid.cell_blocks``) in ``<workdir>/cells/``: a rerun skips finished cells (checked against the
config's grid) and resumes an unfinished one from its latest checkpoint.
"""

from __future__ import annotations

import functools
import math
import pathlib
import time
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import nnx

from experiments.soda import evaluate as evaluation
from experiments.soda import grid
from experiments.soda.evaluate import derived_metrics  # re-judged by experiments.reproduce
from jaxpapers import core
from jaxpapers.soda import experiment_models as models
from jaxpapers.soda.experiment_sweep import grid_mesh, group_sweep

__all__ = ["derived_metrics", "setup_sweep", "train_and_evaluate"]

LN2 = math.log(2.0)
_SWEEP_FNS = ("init_params", "loss_fn", "batch_fn", "eval_fn", "hidden_mask")


def setup_sweep(setup: dict, *, families, cfg, **kwargs) -> core.Sweep:
  """``group_sweep`` with the per-run functions of a task setup; ``kwargs`` (``mesh``,
  ``microbatches``) pass through."""
  return group_sweep(families=families, cfg=cfg, **{k: setup[k] for k in _SWEEP_FNS}, **kwargs)


def _nll(graphdef, params, x, y):
  logits = nnx.merge(graphdef, params)(x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def _digits_setup(cfg) -> dict:
  """The per-run functions of the digits task, and its input-independent predictors."""
  (xtr, ytr), (xte, yte) = map(
    lambda xy: tuple(map(jnp.asarray, xy)), models.load_digits_split(cfg.num_train, cfg.data_seed)
  )
  graphdef, _ = nnx.split(models.MLP(cfg.hidden, rngs=nnx.Rngs(0)))

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
  init = lambda key: nnx.split(models.MLP(cfg.hidden, rngs=nnx.Rngs(key)))[1]
  loss = lambda params, batch: _nll(graphdef, params, *batch)
  return dict(init_params=init, loss_fn=loss, batch_fn=batch_fn, eval_fn=eval_fn,
              hidden_mask=models.mlp_hidden_mask, trivial=trivial)  # fmt: skip


def _lm_setup(cfg) -> dict:
  """The per-run functions of the LM task, its size and its unigram predictor."""
  if cfg.get("data_dir", ""):  # tokenised shards (GPT-2 ids), kept as uint16 on the device
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
  make = lambda key: models.CharLM(vocab=vocab, d=cfg.d_model, layers=cfg.num_layers,
                                   heads=cfg.num_heads, context=ctx, rngs=nnx.Rngs(key))  # fmt: skip
  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: make(jax.random.key(0))))
  # Validation in chunks of eval_batch windows (0 = all at once): the activations of one chunk.
  eval_batch = int(cfg.get("eval_batch", 0)) or cfg.val_windows
  if cfg.val_windows % eval_batch:
    raise ValueError(
      f"eval_batch ({eval_batch}) must divide val_windows ({cfg.val_windows}), or be 0"
    )
  val_chunks = (val_x.reshape(-1, eval_batch, ctx), val_y.reshape(-1, eval_batch, ctx))

  def batch_fn(key):
    s = jax.random.randint(key, (cfg.batch_size,), 0, train_tok.shape[0] - ctx - 1)
    win = jax.vmap(lambda i: jax.lax.dynamic_slice(train_tok, (i,), (ctx + 1,)))(s)
    win = win.astype(jnp.int32)
    return win[:, :-1], win[:, 1:]

  def eval_fn(params, shard=lambda t: t):  # bits per token (per byte for the byte-level text)
    if val_chunks[0].shape[0] == 1:
      return _nll(graphdef, params, *shard((val_x, val_y))) / LN2
    per_chunk = jax.lax.map(lambda xy: _nll(graphdef, params, *shard(xy)), val_chunks)
    return per_chunk.mean() / LN2  # equal chunks: the mean over every window and position

  return dict(init_params=lambda key: nnx.split(make(key))[1],
              loss_fn=lambda params, batch: _nll(graphdef, params, *batch),
              batch_fn=batch_fn, eval_fn=eval_fn, hidden_mask=models.hidden_matrix_mask,
              num_params=sum(x.size for x in jax.tree.leaves(abstract)),
              num_chars=num_chars, trivial=trivial)  # fmt: skip


def _train_cell(task, cfg, setup, engines, seed, group, families, total, runs, ckpt_dir):
  """Trains the ``runs`` of one cell (every seed) at horizon ``total``: one row per run.

  ``families``: those of the group that its whole grid uses (each run carries their states).
  """
  s = grid.group_seeds(cfg, group)
  if (group, len(runs)) not in engines:  # a group's cells of one size share one engine
    mesh = grid_mesh(len(runs) * s, int(cfg.get("data_parallel", 1)), int(cfg.batch_size))
    micro = int(cfg.get("microbatches", 1))
    engines[group, len(runs)] = setup_sweep(
      setup, families=families, cfg=cfg, mesh=mesh, microbatches=micro
    )
  hp, keys = grid.group_grid(runs, range(s), seed, total, families)
  t0 = time.time()
  r = engines[group, len(runs)].run(
    hp, keys, num_steps=total, chunk_size=cfg.chunk, checkpoint_dir=ckpt_dir,
    checkpoint_every=cfg.get("checkpoint_every", 1), desc=f"{task} T={total} {group}",
    show_progress=total // cfg.chunk > 1,
  )  # fmt: skip
  seconds = (time.time() - t0) / len(runs)
  train_curve = r.history.reshape(r.history.shape[0], -1, cfg.chunk).mean(-1)  # [R, E]
  steps = [int(x) for x in r.steps]
  return [
    {"family": family, "horizon": total, "hp": hp_i, "seeds": s,
     "curve": r.evals[i * s : (i + 1) * s].tolist(),  # [S, E(, 2)]
     "train_curve": train_curve[i * s : (i + 1) * s].tolist(), "steps": steps, "seconds": seconds}
    for i, (family, hp_i) in enumerate(runs)
  ]  # fmt: skip


def _run_task(task: str, cfg, workdir: pathlib.Path, seed: int) -> dict:
  setup = _digits_setup(cfg) if task == "digits" else _lm_setup(cfg)
  all_runs = grid.family_grid(cfg)
  groups = [g for g, fams in grid.GROUPS.items() if any(f in fams for f, _ in all_runs)]
  jobs = [(t, g) for g in groups for t in grid.group_horizons(cfg, g)]
  meta = {k: setup[k] for k in ("num_params", "num_chars", "trivial") if k in setup}
  out, store, engines = {"runs": [], "meta": meta}, core.CellStore(workdir / "cells"), {}
  for total, group in core.progress(jobs, desc=f"soda/{task}"):
    if total % cfg.chunk:
      raise ValueError(f"horizon {total} must be a multiple of chunk {cfg.chunk}")
    runs = [(f, h) for f, h in all_runs if f in grid.GROUPS[group]]
    families = tuple(f for f in grid.GROUPS[group] if any(f == g for g, _ in runs))
    for suffix, cell_runs in grid.cell_blocks(cfg, runs):
      name = f"{task}/T{total}/{group}{suffix}"
      args = (task, cfg, setup, engines, seed, group, families, total, cell_runs)
      value = store.get_or_compute(name, functools.partial(_train_cell, *args))
      grid.check_cell(name, value, cell_runs, total)
      out["runs"].extend(value)
  return out


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
    metrics[task] = evaluation.task_metrics(task, tcfg, _run_task(task, tcfg, workdir, config.seed))
  metrics["derived"] = evaluation.derived_metrics(metrics)
  notes = ("CPU-scale reproduction of the SODA wrapper claim (arXiv:2605.11172): best SODA (no "
           "weight decay, lr grid) vs best-tuned weight decay. Runs of one optimizer family are "
           "trained side by side with jax.vmap.")  # fmt: skip
  core.write_results(
    workdir, metrics=metrics, config=config, notes=notes, wall_time_s=time.time() - t0
  )
  return metrics
