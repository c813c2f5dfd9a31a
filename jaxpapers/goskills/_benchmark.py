"""The skill-access benchmark: every method's contract on a library, scored by
the executor.

Methods (:data:`METHODS`): ``goskills`` and its ablations ``no_graph`` (plan =
the first groups), ``no_roles`` (the same skills as a flat list in score order,
no AVOID), ``no_avoid`` (no skill flagged) and ``anchor_start`` (START = the
anchor); the baselines ``flat`` (top-B hybrid), ``gos_bundle`` (PPR seeded by
the top anchors) and ``load_all`` (every skill); the matched controls of the
ablation ladder (:mod:`jaxpapers.goskills._controls`) ``flat_root``,
``flat_bottleneck``, ``gos_bottleneck``, ``no_graph_start_only`` and
``start_only``; and the input-independent ``random`` and ``popular`` (highest
global PageRank).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.goskills._bottleneck import visible_requirement_coverage
from jaxpapers.goskills._controls import (
  pool_bottleneck,
  root_first,
  start_only,
  top_group_root,
)
from jaxpapers.goskills._executor import simulate_execution
from jaxpapers.goskills._graph import transition_matrix
from jaxpapers.goskills._ppr import personalized_pagerank
from jaxpapers.goskills._retrieve import (
  GoSkillsConfig,
  flat_topk,
  gos_bundle,
  goskills_retrieve,
)
from jaxpapers.goskills._scores import (
  bm25_scores,
  build_vocab,
  hybrid_scores,
  term_counts,
)
from jaxpapers.goskills._synthetic import SkillLibrary, TaskSet

__all__ = [
  "METHODS",
  "METRICS",
  "anchor_scores",
  "candidate_pool_size",
  "method_contracts",
  "evaluate_methods",
]

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
METRICS = (
  "coverage",
  "success",
  "reward",
  "steps",
  "tokens",
  "entry_ok",
  "steps_recall",
  "decoy_executed",
)

# A contract as numpy (ids, roles, avoid); roles None: no role; avoid None: no
# AVOID note.
Triple = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]

_flat = jax.jit(flat_topk, static_argnames="k")
_bundle = jax.jit(gos_bundle, static_argnames=("seeds", "budget"))
_ppr = jax.jit(personalized_pagerank)


def _check_world(lib, tasks):
  if not isinstance(lib, SkillLibrary):
    raise TypeError(
      "lib must be a SkillLibrary (make_skill_library), "
      f"got {type(lib).__name__}"
    )
  if not isinstance(tasks, TaskSet):
    raise TypeError(
      f"tasks must be a TaskSet (make_tasks), got {type(tasks).__name__}"
    )


def anchor_scores(
  lib: SkillLibrary,
  tasks: TaskSet,
  embed: Callable[[Sequence[str], bool], ArrayLike],
  *,
  alpha: float,
) -> jax.Array:
  """Hybrid anchor scores of every task against every skill (embeddings and
  BM25).

  A skill's document is ``"<name> <purpose>"``; BM25 runs over the vocabulary of
  those documents; :func:`hybrid_scores` mixes the two with weight ``alpha`` on
  the embeddings.

  Args:
    lib: the :class:`SkillLibrary` of ``n`` skills.
    tasks: the :class:`TaskSet` of ``T`` tasks.
    embed: ``(texts, is_query) -> [len(texts), D]`` float embeddings (e.g.
      :func:`hashed_embeddings` of the texts, or a sentence encoder's
      query/passage sides).
    alpha: the embedding weight in [0, 1].

  Returns:
    float32 ``[T, n]`` scores.
  """
  _check_world(lib, tasks)
  docs = [f"{t.name} {t.purpose}" for t in lib.texts]
  vocab = build_vocab(docs)
  bm = bm25_scores(term_counts(tasks.texts, vocab), term_counts(docs, vocab))
  return hybrid_scores(
    embed(tasks.texts, True), embed(docs, False), bm, alpha=alpha
  )


def candidate_pool_size(config: GoSkillsConfig) -> int:
  """GoSkills' largest selectable pool: ``plan_size`` groups of START +
  SUPPORT + CHECK.

  Args:
    config: the :class:`GoSkillsConfig` (or any object with its ``plan_size``,
      ``max_support`` and ``max_check``).

  Returns:
    ``plan_size * (1 + max_support + max_check)``, the pool the matched controls
    select from.
  """
  cfg = config
  return cfg.plan_size * (1 + cfg.max_support + cfg.max_check)


def method_contracts(
  lib: SkillLibrary,
  tasks: TaskSet,
  scores: ArrayLike,
  config: GoSkillsConfig,
  rng: np.random.Generator,
) -> dict[str, Triple]:
  """Every method's contract at the largest budget ``config.budget`` (numpy,
  host-side).

  GoSkills and the nested baselines pick in order, so a budget
  ``b <= config.budget`` reads the first ``b`` picks; ``no_roles`` holds
  GoSkills' picks (reordered by score per budget in :func:`evaluate_methods`);
  ``load_all`` lists every skill, best-scored first.

  Args:
    lib: the :class:`SkillLibrary` of ``n`` skills.
    tasks: the :class:`TaskSet` of ``T`` tasks.
    scores: float ``[T, n]`` anchor scores (:func:`anchor_scores`).
    config: GoSkills' settings; its ``budget`` is the largest budget.
    rng: numpy generator; draws the ``random`` baseline's skills.

  Returns:
    ``{method: (ids [T, K], roles [T, K] or None, avoid [T, A] or None)}`` for
    every name of :data:`METHODS` (``K = config.budget``, ``n`` for
    ``load_all``).
  """
  _check_world(lib, tasks)
  if not isinstance(config, GoSkillsConfig):
    raise TypeError(
      f"config must be a GoSkillsConfig, got {type(config).__name__}"
    )
  g, bmax, t = lib.graph, config.budget, np.shape(scores)[0]
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
    cfg = dataclasses.replace(config, **kw)
    out[name] = as_np(goskills_retrieve(g, scores, vis, cfg)[0])  # one program
  # Same skills as goskills, presented as a flat list in score order (no roles,
  # no AVOID).
  out["no_roles"] = (out["goskills"][0], None, None)
  out["flat"] = as_np(_flat(scores, k=bmax))
  tm = transition_matrix(g)
  out["gos_bundle"] = as_np(
    _bundle(tm, scores, seeds=config.n_anchors, budget=bmax)
  )
  # The ladder: the baselines with GoSkills' START rule, pool size, budget and
  # maximiser.
  p = min(candidate_pool_size(config), lib.n)
  root = top_group_root(
    g,
    scores,
    vis,
    depth=config.depth,
    max_support=config.max_support,
    max_check=config.max_check,
    max_avoid=config.max_avoid,
  )
  out["flat_root"] = root_first(
    _flat(scores, k=min(bmax + 1, lib.n)).ids, root, bmax
  )
  pools = {
    "flat_bottleneck": _flat(scores, k=p).ids,
    "gos_bottleneck": _bundle(tm, scores, seeds=config.n_anchors, budget=p).ids,
  }
  for name, pool in pools.items():
    ids_b, roles_b = pool_bottleneck(
      g.req, pool, root, vis, budget=bmax, mu=config.mu
    )
    out[name] = (np.asarray(ids_b), np.asarray(roles_b), None)
  out["no_graph_start_only"] = start_only(*out["no_graph"][:2])
  out["start_only"] = start_only(*out["goskills"][:2])
  random = np.stack([rng.choice(lib.n, bmax, replace=False) for _ in range(t)])
  out["random"] = (random, None, None)
  pr = np.asarray(_ppr(tm, jnp.ones(lib.n)))
  out["popular"] = (
    np.broadcast_to(np.argsort(-pr, kind="stable")[:bmax], (t, bmax)),
    None,
    None,
  )
  # every skill, best-scored first: budget-free
  out["load_all"] = (
    np.argsort(-np.asarray(scores), axis=1, kind="stable"),
    None,
    None,
  )
  return out


def evaluate_methods(
  contracts: dict[str, Triple],
  lib: SkillLibrary,
  tasks: TaskSet,
  scores: ArrayLike,
  *,
  budgets: Sequence[int],
  rng: np.random.Generator,
  p_decoy: float,
) -> dict[str, dict[str, dict[str, float]]]:
  """Each method's contracts cut to each budget, run by the simulated executor,
  task-averaged.

  Methods run in :data:`METHODS` order and budgets in the given order, each
  drawing its decoy executions from ``rng``; ``load_all`` runs once
  (budget-free) and is copied to every budget.

  Args:
    contracts: from :func:`method_contracts` (at ``max(budgets)``).
    lib: the :class:`SkillLibrary` of ``n`` skills.
    tasks: the :class:`TaskSet` of ``T`` tasks.
    scores: float ``[T, n]`` anchor scores (``no_roles`` orders GoSkills' picks
      by them).
    budgets: the skill budgets ``B``.
    rng: numpy generator of :func:`simulate_execution`.
    p_decoy: probability that an un-flagged decoy in the payloads is executed.

  Returns:
    ``{method: {str(B): {metric: task mean}}}`` over :data:`METHODS` and
    :data:`METRICS` (``coverage``: :func:`visible_requirement_coverage`; the
    others from the executor).
  """
  _check_world(lib, tasks)
  missing = sorted(set(METHODS) - set(contracts))
  if missing:
    raise ValueError(
      f"contracts must hold every method of METHODS, missing {missing}"
    )
  s, t = np.asarray(scores), tasks.entry.shape[0]
  none = np.full((t, 0), -1, np.int32)
  res = {}
  for m in METHODS:
    res[m] = {}
    for b in budgets:
      ids, roles, avoid = contracts[m]
      ids = ids if m == "load_all" else np.asarray(ids)[:, :b]
      if m == "no_roles":  # GoSkills' picks in score order
        key = np.where(
          ids >= 0, -s[np.arange(t)[:, None], np.clip(ids, 0, None)], np.inf
        )
        ids = np.take_along_axis(ids, np.argsort(key, axis=1, kind="stable"), 1)
      roles = np.full(ids.shape, -1) if roles is None else roles[:, :b]
      avoid = none if avoid is None else avoid
      ex = simulate_execution(
        ids, roles, avoid, tasks, lib, rng, p_decoy=p_decoy
      )
      # one shape per library size: one compile
      padded = np.full((t, lib.n), -1, np.int32)
      padded[:, : ids.shape[1]] = ids
      cov = np.asarray(
        visible_requirement_coverage(padded, lib.graph.req, tasks.visible)
      )
      vals = {"coverage": cov, **{k: ex[k] for k in METRICS if k != "coverage"}}
      res[m][str(b)] = {k: float(np.mean(v)) for k, v in vals.items()}
      if m == "load_all":  # budget-free: identical for every B
        res[m] = {str(b2): res[m][str(b)] for b2 in budgets}
        break
  return res
