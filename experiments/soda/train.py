"""SODA experiment: does SODA remove weight-decay tuning across horizons?

Each task (``digits``: an MLP on sklearn's digits; ``lm``: a byte- or
token-level GPT; ``jaxpapers.soda.digits_task`` / ``lm_task``) is a grid of
(optimizer family, hyperparameters, seed) runs. One *group* of families trains
per horizon as one ``jaxpapers.soda.horizon_sweep`` program (every run carries
all the group's optimizer states; a traced arm index selects its update). Each
grid stage (``grid.cell_blocks``) is one cell in ``<workdir>/cells/``: a rerun
skips finished cells (checked against the config's grid) and resumes an
unfinished one from its latest checkpoint. A grid's mesh is ``runs`` only or
``runs x data`` (``jaxpapers.soda.grid_mesh``: each run's batch split over
``data``). The code reads ``core.config_view`` of the config against
``configs/default.py``.
"""

from __future__ import annotations

import functools
import inspect
import pathlib
import time
from typing import Any

import ml_collections

from experiments.soda import evaluate as evaluation
from experiments.soda import grid
from experiments.soda.configs import default as default_config

# re-judged by experiments.reproduce
from experiments.soda.evaluate import derived_metrics
from jaxpapers import core, soda

__all__ = ["derived_metrics", "task_setup", "train_and_evaluate"]


def task_setup(task: str, cfg) -> dict:
  """The per-run functions of ``task``: ``jaxpapers.soda.digits_task`` /
  ``lm_task`` called with the task config's fields of the same names."""
  make = soda.digits_task if task == "digits" else soda.lm_task
  return make(**{k: cfg[k] for k in inspect.signature(make).parameters})


def _train_cell(
  task, cfg, setup, engines, seed, group, families, total, runs, ckpt_dir
):
  """Trains the ``runs`` of one cell (every seed) at horizon ``total``: one row
  per run.

  ``families``: those of the group that its whole grid uses (each run carries
  their states).
  """
  s = grid.group_seeds(cfg, group)
  # a group's cells of one size share one engine
  if (group, len(runs)) not in engines:
    mesh = soda.grid_mesh(
      len(runs) * s, cfg.get("data_parallel", 1), cfg.batch_size
    )
    engines[group, len(runs)] = soda.horizon_sweep(
      setup,
      families=families,
      mesh=mesh,
      microbatches=cfg.get("microbatches", 1),  # lm only
      **{k: cfg[k] for k in ("b1", "b2", "warmup_frac", "cooldown_frac")},
    )
  hp, keys = soda.horizon_hparams(runs, range(s), seed, total, families)
  t0 = time.time()
  r = engines[group, len(runs)].run(
    hp,
    keys,
    num_steps=total,
    chunk_size=cfg.chunk,
    checkpoint_dir=ckpt_dir,
    checkpoint_every=cfg.checkpoint_every,
    desc=f"{task} T={total} {group}",
    show_progress=total // cfg.chunk > 1,
  )
  seconds = (time.time() - t0) / len(runs)
  # [R, E]
  train_curve = r.history.reshape(r.history.shape[0], -1, cfg.chunk).mean(-1)
  per_run = lambda x, i: x[i * s : (i + 1) * s].tolist()
  return [
    {
      "family": family,
      "horizon": total,
      "hp": hp_i,
      "seeds": s,
      "curve": per_run(r.evals, i),  # [S, E(, 2)]
      "train_curve": per_run(train_curve, i),
      "steps": [int(x) for x in r.steps],
      "seconds": seconds,
    }
    for i, (family, hp_i) in enumerate(runs)
  ]


def _run_task(task: str, cfg, workdir: pathlib.Path, seed: int) -> dict:
  setup = task_setup(task, cfg)
  all_runs = grid.family_grid(cfg)
  groups = [
    g for g, fams in grid.GROUPS.items() if any(f in fams for f, _ in all_runs)
  ]
  jobs = [(t, g) for g in groups for t in grid.group_horizons(cfg, g)]
  meta = {
    k: setup[k] for k in ("num_params", "num_chars", "trivial") if k in setup
  }
  out, store, engines = (
    {"runs": [], "meta": meta},
    core.CellStore(workdir / "cells"),
    {},
  )
  for total, group in core.progress(jobs, desc=f"soda/{task}"):
    if total % cfg.chunk:
      raise ValueError(
        f"horizon {total} must be a multiple of chunk {cfg.chunk}"
      )
    runs = [(f, h) for f, h in all_runs if f in grid.GROUPS[group]]
    families = tuple(
      f for f in grid.GROUPS[group] if any(f == g for g, _ in runs)
    )
    for suffix, cell_runs in grid.cell_blocks(cfg, runs):
      name = f"{task}/T{total}/{group}{suffix}"
      args = (
        task,
        cfg,
        setup,
        engines,
        seed,
        group,
        families,
        total,
        cell_runs,
      )
      value = store.get_or_compute(name, functools.partial(_train_cell, *args))
      grid.check_cell(name, value, cell_runs, total)
      out["runs"].extend(value)
  return out


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
  """Runs the enabled tasks; writes results.json and the report
  (``config.report``)."""
  t0 = time.time()
  run_config, config = (
    config,
    core.config_view(config, default_config.get_config()),
  )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  metrics: dict[str, Any] = {}
  for task in ("digits", "lm"):
    tcfg = config[task]
    if not tcfg.enabled:
      continue
    core.validate_seeds(tcfg.num_seeds, name=f"{task}.num_seeds")
    # 0 or absent = the Muon groups use num_seeds
    if tcfg.get("muon_num_seeds", 0):
      core.validate_seeds(tcfg.muon_num_seeds, name=f"{task}.muon_num_seeds")
    metrics[task] = evaluation.task_metrics(
      task, tcfg, _run_task(task, tcfg, workdir, config.seed)
    )
  metrics["derived"] = evaluation.derived_metrics(metrics)
  notes = (
    "CPU-scale reproduction of the SODA wrapper claim (arXiv:2605.11172): "
    "best SODA (no weight decay, lr grid) vs best-tuned weight decay. "
    "Runs of one optimizer family are trained side by side with jax.vmap."
  )
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    notes=notes,
    wall_time_s=time.time() - t0,
  )
  return metrics
