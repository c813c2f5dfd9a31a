"""Fingerprint accuracy vs retrieval: every training objective, the same encoder
and pools.

``train_and_evaluate(config, workdir)`` runs two measurements
(``configs/default.py`` describes them) and writes ``results.json`` and its
plots into ``workdir``; finished parts are kept in ``<workdir>/cells/`` and the
training grid checkpoints inside itself, so a rerun resumes.

1. **Objectives**: one spectrum encoder per objective of ``config.losses`` x
   seed, trained as one ``core.Sweep`` grid (an objective is a traced weighting
   of the base losses), scored on three test pools beside the trivial baselines
   (``evaluate.py``).
2. **Toy regret (exact)**: ``jaxpapers.msretrieval.toy_regret_problems``.
"""

from __future__ import annotations

import pathlib
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import nnx

import jaxpapers.msretrieval as M
from experiments.msretrieval import evaluate as evaluation
from experiments.msretrieval.configs import default as default_config

# re-judged by reproduce
from experiments.msretrieval.evaluate import POOLS, derived_metrics
from jaxpapers import core

__all__ = ["POOLS", "derived_metrics", "train_and_evaluate"]

_DATA_KEYS = (
  "n_molecules",
  "n_bits",
  "radius",
  "n_bins",
  "max_mz",
  "test_fraction",
  "max_test_queries",
  "train_pool",
  "train_cands",
  "eval_cands",
  "seed",
)


def _model(cfg, key) -> M.FingerprintMLP:
  return M.FingerprintMLP(
    cfg.n_bins,
    cfg.n_bits,
    hidden=tuple(cfg.hidden),
    embed_dim=cfg.embed_dim,
    dropout=cfg.dropout,
    rngs=nnx.Rngs(params=key),
  )


def _train(cfg, d: dict, checkpoint_dir):
  """All objectives x seeds as one core.Sweep grid; returns the [R] params and
  the history."""
  names = [(loss, s) for loss in cfg.losses for s in range(cfg.seeds)]
  weights = np.stack(
    [M.loss_weights(loss, comb_weight=cfg.comb_weight) for loss, _ in names]
  )
  keys = jnp.stack([jax.random.key(1000 * cfg.seed + s) for _, s in names])
  graphdef, _ = nnx.split(
    jax.eval_shape(lambda: _model(cfg, jax.random.key(0)))
  )
  tx = M.make_optimizer(cfg.lr, warmup_steps=cfg.warmup, clip_norm=1.0)

  def init_fn(hp, key, data):
    params = nnx.state(_model(cfg, jax.random.fold_in(key, 0)))
    return params, tx.init(params)

  def step_fn(state, hp, key, step, data):
    params, opt = state
    k = jax.random.fold_in(jax.random.fold_in(key, 1), step)
    rows = jax.random.randint(k, (cfg.batch,), 0, data["train"].shape[0])
    lib, pool, labels = (
      data["train"][rows],
      data["train_pool"][rows],
      data["train_labels"][rows],
    )
    # cand [B, C, F]
    x, fp, cand = data["spectra"][lib], data["fps"][lib], data["fps"][pool]
    mask = jnp.ones(labels.shape, bool)

    def loss_fn(p):
      logits = nnx.merge(graphdef, p)(x, key=jax.random.fold_in(k, 7))
      return M.weighted_loss(
        logits,
        fp,
        cand,
        labels,
        mask,
        hp["w"],
        gamma=cfg.focal_gamma,
        temperature=cfg.temperature,
      )

    (loss, parts), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    upd, opt = tx.update(g, opt, params)
    return (optax.apply_updates(params, upd), opt), {
      "loss": loss,
      "parts": parts,
    }

  data = {
    k: jnp.asarray(d[k])
    for k in ("train", "spectra", "fps", "train_pool", "train_labels")
  }
  res = core.Sweep(init_fn, step_fn).run(
    {"w": weights},
    keys,
    num_steps=cfg.steps,
    chunk_size=cfg.chunk or cfg.steps,
    data=data,
    checkpoint_dir=checkpoint_dir,
    desc="objectives x seeds",
  )
  return names, graphdef, res


def train_and_evaluate(cfg: ml_collections.ConfigDict, workdir) -> dict:
  """Runs both measurements; writes results.json, table.md and plots into
  ``workdir``."""
  run_config, cfg = cfg, core.config_view(cfg, default_config.get_config())
  for loss in cfg.losses:
    core.validate_choice(loss, name="losses", allowed=M.LOSSES)
  core.validate_choice(cfg.train_pool, name="train_pool", allowed=POOLS)
  # the claims need a seed spread
  core.validate_seeds(cfg.seeds, name="seeds", min_count=2)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  cells = core.CellStore(workdir / "cells")
  make_data = lambda: M.simulated_benchmark(**{k: cfg[k] for k in _DATA_KEYS})
  d = core.cached_arrays(workdir / "data.npz", make_data, compress=True)

  def run_objectives(checkpoint_dir):
    names, graphdef, res = _train(cfg, d, checkpoint_dir)
    ev = evaluation.evaluate_runs(cfg, d, names, graphdef, res.state[0])
    hist = np.asarray(res.history["loss"])
    ev["final_train_loss"] = {
      f"{l}/{s}": float(hist[i, -50:].mean()) for i, (l, s) in enumerate(names)
    }
    return ev

  ev = cells.get_or_compute("objectives", run_objectives)
  toy = (cfg.toy_bits, cfg.toy_cands, cfg.toy_flip)
  toy_kw = dict(
    problems=cfg.toy_problems, density=cfg.toy_density, seed=cfg.seed + 5
  )
  toy_rows = cells.get_or_compute(
    "toy", lambda _: M.toy_regret_problems(*toy, **toy_kw)
  )
  metrics = {
    "data": M.pool_summary(d),
    "seeds": cfg.seeds,
    "objectives": evaluation.summarise(cfg, ev),
    "runs": ev["runs"],
    "baselines": ev["baselines"],
    "final_train_loss": ev["final_train_loss"],
    "toy": M.toy_regret_summary(toy_rows),
  }
  metrics["derived"] = evaluation.derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,  # the ConfigDict: claims, issue_verdicts, report
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      "Real molecules shipped with RDKit (unique InChIKey skeletons), "
      "folded Morgan fingerprints, SIMULATED fragmentation spectra (a proxy "
      "for MS/MS, not measurements). Pools deduplicated by fingerprint; "
      "toy problems summarised both as drawn and deduplicated (identical "
      "candidates merged, empty ones dropped). One encoder per objective x "
      "seed trained as one vmapped grid; final checkpoint (no per-metric "
      "selection). HR@k ties broken by eps-noise as the reference. "
      "Absolute numbers are not comparable with MassSpecGym."
    ),
  )
  return metrics
