"""SODA experiment: does SODA remove weight-decay tuning across horizons?

Each task (``digits``: an MLP on sklearn's digits; ``lm``: a byte- or token-level GPT;
``jaxpapers.soda.digits_task`` / ``lm_task``) is a grid of (optimizer family, hyperparameters,
seed) runs. One *group* of families trains per horizon as one ``jaxpapers.soda.horizon_sweep``
program (every run carries all the group's optimizer states; a traced arm index selects its
update). Each grid stage (``grid.cell_blocks``) is one cell in ``<workdir>/cells/``: a rerun
skips finished cells (checked against the config's grid) and resumes an unfinished one from its
latest checkpoint. A grid's mesh is ``runs`` only or ``runs x data``
(``jaxpapers.soda.grid_mesh``: each run's batch split over ``data``).
"""

from __future__ import annotations

import functools
import pathlib
import time
from typing import Any

import ml_collections

from experiments.soda import evaluate as evaluation
from experiments.soda import grid
from experiments.soda.evaluate import derived_metrics  # re-judged by experiments.reproduce
from jaxpapers import core, soda

__all__ = ["derived_metrics", "task_setup", "train_and_evaluate"]


_TASK_KEYS = {
  "digits": ("num_train", "data_seed", "hidden", "batch_size"),
  "lm": (
    "d_model",
    "num_layers",
    "num_heads",
    "context",
    "batch_size",
    "val_windows",
    "text_path",
    "data_dir",
    "vocab",
    "max_train_tokens",
    "max_val_tokens",
    "eval_batch",
  ),
}


def task_setup(task: str, cfg) -> dict:
  """The per-run functions of ``task`` (``jaxpapers.soda.digits_task`` / ``lm_task``)."""
  make = soda.digits_task if task == "digits" else soda.lm_task
  return make(**{k: cfg[k] for k in _TASK_KEYS[task]})


def _train_cell(task, cfg, setup, engines, seed, group, families, total, runs, ckpt_dir):
  """Trains the ``runs`` of one cell (every seed) at horizon ``total``: one row per run.

  ``families``: those of the group that its whole grid uses (each run carries their states).
  """
  s = grid.group_seeds(cfg, group)
  if (group, len(runs)) not in engines:  # a group's cells of one size share one engine
    mesh = soda.grid_mesh(len(runs) * s, int(cfg.get("data_parallel", 1)), int(cfg.batch_size))
    engines[group, len(runs)] = soda.horizon_sweep(
      setup,
      families=families,
      mesh=mesh,
      microbatches=int(cfg.get("microbatches", 1)),
      **{k: cfg[k] for k in ("b1", "b2", "warmup_frac", "cooldown_frac")},
    )
  hp, keys = soda.horizon_hparams(runs, range(s), seed, total, families)
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
  setup = task_setup(task, cfg)
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
