"""GoSkills retrieval end to end, and the flat and GoS-bundle baselines (batched
over tasks).

Stages for one task with hybrid scores ``a(s)`` (eq. (4)) and visible
requirements ``V``:

1. anchors: the ``n_groups`` top-scoring skills (ties: lower id); the first
   ``n_anchors`` seed;
2. groups :func:`build_groups` of every anchor (roles
   START/SUPPORT/CHECK/AVOID);
3. group graph eq. (7), row-normalised (self-loop for empty rows), and
   personalized PageRank eq. (3) on groups seeded by GoS rank weights over the
   ``n_anchors`` seeds; the plan is the top ``plan_size`` groups by PageRank
   rounded to 1e-6 (ties: the better-ranked anchor), a group whose member set
   repeats an earlier group's being skipped (``use_group_graph=False``: the
   first ``plan_size`` distinct groups);
4. role resolution over the plan with precedence AVOID > START > SUPPORT > CHECK
   per skill; only the first START in plan order stays START (later ones become
   SUPPORT); duplicates keep their first position;
5. bottleneck eq. (6) with one forced START; AVOID items are one-line notes
   outside ``B``.

The plan/group sizes are reconstructions (the paper's code was not read):
``n_anchors = 3``, ``n_groups = 8``, ``plan_size = 4``, ``depth = 2``,
``max_support = 4``.

Baselines: :func:`flat_topk` (top-``k`` hybrid scores, no roles) and
:func:`gos_bundle` (PPR on the skill graph seeded by the top-``k`` with rank
weights, top-``B`` by PPR, no roles).

Bad input: shapes, dtypes and the static config raise at trace time; NaN scores
raise eagerly and give all -1 ids under jit.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import flax.struct
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.goskills import _graph as G
from jaxpapers.goskills._bottleneck import (
  AVOID,
  NO_ROLE,
  START,
  SUPPORT,
  budgeted_coverage,
)
from jaxpapers.goskills._groups import (
  STARTS,
  Groups,
  _build,
  group_graph,
  slot_roles,
)
from jaxpapers.goskills._ppr import personalized_pagerank, rank_seed_weights


@dataclasses.dataclass(frozen=True)
class GoSkillsConfig:
  """Static configuration of :func:`goskills_retrieve` (hashable: a jit static
  argument).

  Attributes:
    budget: payload budget ``B`` (skills in the contract, AVOID notes excluded).
    n_anchors: seed anchors ``a`` for the group PageRank.
    n_groups: candidate groups (top-scoring skills whose groups are built), >=
      n_anchors.
    plan_size: groups kept in the plan ``b`` (<= n_groups).
    depth, max_support, max_check, max_avoid, start: see :func:`build_groups`.
    mu: role-priority weight in eq. (6).
    teleport, iters, tol: PageRank constants (GoS: 0.2, 50, 1e-6).
    rev_factor: reverse factors per edge type (GoS's by default).
    dangling: ``'self_loop'`` (GoS) or ``'uniform'`` for empty rows of the group
      graph.
    use_group_graph: False skips stage 3 (ablation: the first ``plan_size``
      groups).
    use_avoid: False flags no skill (ablation: no AVOID, decoys may take any
      role).
  """

  budget: int = 5
  n_anchors: int = 3
  n_groups: int = 8
  plan_size: int = 4
  depth: int = 2
  max_support: int = 4
  max_check: int = 2
  max_avoid: int = 2
  start: str = "root"
  mu: float = 0.1
  teleport: float = 0.2
  iters: int = 50
  tol: float = 1e-6
  rev_factor: tuple = G.GOS_REVERSE_FACTORS
  dangling: Literal["self_loop", "uniform"] = "self_loop"
  use_group_graph: bool = True
  use_avoid: bool = True

  def __post_init__(self):
    for name in ("budget", "n_anchors", "n_groups", "plan_size", "iters"):
      V.check_int(getattr(self, name), name, min_value=1)
    for name in ("depth", "max_support", "max_check", "max_avoid"):
      V.check_int(getattr(self, name), name, min_value=0)
    if self.n_groups < self.n_anchors:
      raise ValueError(
        f"n_groups ({self.n_groups}) must be >= n_anchors ({self.n_anchors})"
      )
    if self.plan_size > self.n_groups:
      raise ValueError(
        f"plan_size ({self.plan_size}) must be <= n_groups ({self.n_groups})"
      )
    if self.start not in STARTS:
      raise ValueError(f"start must be one of {STARTS}, got {self.start!r}")
    if self.dangling not in G.DANGLING:
      raise ValueError(
        f"dangling must be one of {G.DANGLING}, got {self.dangling!r}"
      )
    V.check_float(self.mu, "mu", min_value=0.0)
    V.check_float(
      self.teleport,
      "teleport",
      min_value=0.0,
      min_inclusive=False,
      max_value=1.0,
    )
    V.check_float(self.tol, "tol", min_value=0.0)
    if len(tuple(self.rev_factor)) != len(G.EDGE_TYPES):
      raise ValueError(
        f"rev_factor must have {len(G.EDGE_TYPES)} entries (one per edge type)"
      )
    object.__setattr__(
      self, "rev_factor", tuple(float(x) for x in self.rev_factor)
    )


@flax.struct.dataclass
class Contract:
  """A retrieval result (leading task axes ``[...]``).

  Attributes:
    ids: ``[..., B]`` int32 skill ids in pick order (-1: empty slot); flat
      methods: rank order.
    roles: ``[..., B]`` int32 roles (:data:`ROLES` index; -1: no role, as flat
      lists have).
    avoid: ``[..., K]`` int32 AVOID skill ids (one-line notes outside ``B``), -1
      padded.
  """

  ids: jax.Array
  roles: jax.Array
  avoid: jax.Array

  def truncate(self, budget: int) -> Contract:
    """The contract for a smaller budget (greedy and rank picks are nested).

    Args:
      budget: the new budget, in ``[1, B]``.

    Returns:
      A :class:`Contract` with the first ``budget`` picks (``ids``/``roles``
      ``[..., budget]``) and the same ``avoid``.
    """
    budget = V.check_int(
      budget, "budget", min_value=1, max_value=self.ids.shape[-1]
    )
    return Contract(
      self.ids[..., :budget], self.roles[..., :budget], self.avoid
    )


def _check_scores(scores, n):
  s = V.check_array(scores, "scores", ndim=(1, 2), dtype="real")
  if s.shape[-1] != n:
    raise ValueError(
      f"scores must be [n] or [T, n] with n = {n} skills, got shape {s.shape}"
    )
  ok = V.check_values(jnp.isfinite(s), "scores must be finite")
  return s.astype(jnp.float32), ok


def _one_task(scores, visible, flags, g, w, cfg: GoSkillsConfig):
  n = g.n
  use_graph, use_avoid, root_start = flags
  _, anchors = jax.lax.top_k(scores, cfg.n_groups)
  members, _ = _build(
    g,
    anchors,
    visible,
    scores,
    use_avoid,
    root_start,
    depth=cfg.depth,
    max_support=cfg.max_support,
    max_check=cfg.max_check,
    max_avoid=cfg.max_avoid,
  )
  mask = members >= 0
  slots = jnp.broadcast_to(
    slot_roles(cfg.max_support, cfg.max_check, cfg.max_avoid), members.shape
  )
  groups = Groups(
    members=members, roles=jnp.where(mask, slots, NO_ROLE), mask=mask
  )
  tg = G.row_normalize(group_graph(groups, w), dangling=cfg.dangling)
  p = (
    jnp.zeros((cfg.n_groups,))
    .at[: cfg.n_anchors]
    .set(rank_seed_weights(cfg.n_anchors))
  )
  pi = personalized_pagerank(
    tg, p, teleport=cfg.teleport, iters=cfg.iters, tol=cfg.tol, validate=False
  )
  # ties up to float noise (identical groups) go to the better anchor
  pi = jnp.round(pi, 6)
  pi = jnp.where(use_graph, pi, -jnp.arange(cfg.n_groups, dtype=jnp.float32))
  # A group whose member set repeats an earlier group's is not planned again.
  use = groups.mask & (groups.roles != AVOID)
  onehot = jnp.zeros((cfg.n_groups, n), bool)
  onehot = onehot.at[
    jnp.arange(cfg.n_groups)[:, None], jnp.clip(groups.members, 0)
  ].max(use)
  same = (onehot[:, None, :] == onehot[None, :, :]).all(-1)
  earlier = (
    jnp.arange(cfg.n_groups)[None, :] < jnp.arange(cfg.n_groups)[:, None]
  )
  dup = (same & earlier).any(-1)
  _, plan = jax.lax.top_k(jnp.where(dup, -jnp.inf, pi), cfg.plan_size)
  mem = groups.members[plan].reshape(-1)  # [P] in plan order
  rol = groups.roles[plan].reshape(-1)
  msk = groups.mask[plan].reshape(-1)
  ids = jnp.clip(mem, 0, n - 1)
  # Precedence code: AVOID 0 < START 1 < SUPPORT 2 < CHECK 3 (lower wins), per
  # skill.
  code = jnp.where(rol == AVOID, 0, rol + 1)
  best = jnp.full((n,), 9, jnp.int32).at[ids].min(jnp.where(msk, code, 9))
  keep = msk & (code == best[ids])
  pos = jnp.arange(mem.shape[0])
  same = (
    (mem[:, None] == mem[None, :])
    & keep[None, :]
    & (pos[None, :] < pos[:, None])
  )
  keep = keep & ~same.any(-1)  # first occurrence only
  is_start = keep & (rol == START)
  first_start = is_start & (jnp.cumsum(is_start) == 1)
  role = jnp.where(is_start & ~first_start, SUPPORT, rol)
  avoid_pos = jnp.where(keep & (rol == AVOID), pos, mem.shape[0])
  k = cfg.plan_size * cfg.max_avoid
  avoid_sorted = jnp.sort(avoid_pos)[:k]
  avoid = jnp.where(
    avoid_sorted < mem.shape[0],
    mem[jnp.clip(avoid_sorted, 0, mem.shape[0] - 1)],
    -1,
  )
  selectable = keep & (rol != AVOID)
  picks = budgeted_coverage(
    mem,
    role,
    selectable,
    g.req,
    visible,
    budget=cfg.budget,
    mu=cfg.mu,
    force_start=True,
  )
  sel = jnp.where(picks >= 0, mem[jnp.clip(picks, 0)], -1)
  srole = jnp.where(picks >= 0, role[jnp.clip(picks, 0)], NO_ROLE)
  return (
    sel.astype(jnp.int32),
    srole.astype(jnp.int32),
    avoid.astype(jnp.int32),
    anchors[plan],
  )


@functools.partial(jax.jit, static_argnames=("cfg",))
def _retrieve(g, s, vis, flags, *, cfg):
  w = G.transition_weights(g, cfg.rev_factor)
  fn = functools.partial(_one_task, flags=flags, g=g, w=w, cfg=cfg)
  return fn(s, vis) if s.ndim == 1 else jax.vmap(fn)(s, vis)


def _static_part(cfg: GoSkillsConfig) -> GoSkillsConfig:
  """The config with the ablation switches reset: they travel as traced flags,
  so the variants share one compiled program."""
  return dataclasses.replace(
    cfg, use_group_graph=True, use_avoid=True, start=("root")
  )


def goskills_retrieve(
  g: G.SkillGraph,
  scores: ArrayLike,
  visible: ArrayLike,
  cfg: GoSkillsConfig = GoSkillsConfig(),
) -> tuple[Contract, jax.Array]:
  """GoSkills retrieval for one task or a batch (stages in the module
  docstring).

  Args:
    g: the skill graph.
    scores: ``[n]`` or ``[T, n]`` hybrid anchor scores (:func:`hybrid_scores`).
    visible: ``[R]`` or ``[T, R]`` bool visible requirements.
    cfg: the static :class:`GoSkillsConfig`.

  Returns:
    ``(contract, plan)``: a :class:`Contract` with ``ids``/``roles``
    ``[..., budget]`` and ``avoid`` ``[..., plan_size * max_avoid]``, and
    ``plan`` ``[..., plan_size]`` the anchor ids of the planned groups.

  Under jit: NaN scores make every id -1.

  Sharding: tasks are independent; ``scores``/``visible`` sharded on their task
  axis over an ``AxisType.Auto`` mesh (``jax.make_mesh(...,
  axis_types=(AxisType.Auto,))``) run data parallel with the graph replicated
  (tested equal to the single-device call).
  """
  if not isinstance(g, G.SkillGraph):
    raise TypeError(f"g must be a SkillGraph, got {type(g).__name__}")
  if not isinstance(cfg, GoSkillsConfig):
    raise TypeError(f"cfg must be a GoSkillsConfig, got {type(cfg).__name__}")
  n, r = g.n, g.num_requirements
  if cfg.n_groups > n:
    raise ValueError(f"cfg.n_groups ({cfg.n_groups}) must be <= n ({n})")
  s, ok = _check_scores(scores, n)
  vis = V.check_array(
    visible, "visible", shape=s.shape[:-1] + (r,), dtype=("intbool")
  )
  ok = ok & G.graph_value_flag(g)
  flags = jnp.asarray([cfg.use_group_graph, cfg.use_avoid, cfg.start == "root"])
  out = _retrieve(g, s, vis.astype(bool), flags, cfg=_static_part(cfg))
  sel, role, avoid, plan = V.poison(out, ok)
  return Contract(
    ids=sel, roles=jnp.where(sel >= 0, role, NO_ROLE), avoid=avoid
  ), plan


def flat_topk(scores: ArrayLike, k: int) -> Contract:
  """Flat top-``k`` by score (ties: lower id), no roles and no AVOID notes.

  Args:
    scores: ``[n]`` or ``[T, n]`` hybrid scores.
    k: list length (1 <= k <= n).

  Returns:
    :class:`Contract` with ``ids`` ``[..., k]``, ``roles`` all -1, ``avoid``
    ``[..., 0]``.

  Under jit: NaN scores make every id -1.
  """
  s = V.check_array(scores, "scores", ndim=(1, 2), dtype="real")
  k = V.check_int(k, "k", min_value=1, max_value=s.shape[-1])
  s, ok = _check_scores(s, s.shape[-1])
  ids = V.poison(jax.lax.top_k(s, k)[1].astype(jnp.int32), ok)
  empty = jnp.zeros(s.shape[:-1] + (0,), jnp.int32)
  return Contract(
    ids=ids, roles=jnp.full(ids.shape, NO_ROLE, jnp.int32), avoid=empty
  )


def gos_bundle(
  t: ArrayLike,
  scores: ArrayLike,
  *,
  seeds: int = 3,
  budget: int = 5,
  teleport: float = 0.2,
  iters: int = 50,
  tol: float = 1e-6,
) -> Contract:
  """GoS bundle: PPR (eq. (3)) seeded by the top-``seeds`` skills with weights
  ``1/(rank+1)``, then the top-``budget`` skills by PPR score (ties: lower id),
  no roles.

  Args:
    t: ``[n, n]`` row-stochastic skill transition matrix
      (:func:`transition_matrix`).
    scores: ``[n]`` or ``[T, n]`` hybrid scores.
    seeds: number of seed skills (1 <= seeds <= n).
    budget: bundle size ``B`` (1 <= budget <= n).
    teleport: the PageRank restart probability in (0, 1].
    iters: the maximum number of PageRank updates.
    tol: the PageRank L1 stopping tolerance.

  Returns:
    :class:`Contract` with ``ids`` ``[..., budget]`` in PPR order, roles -1, no
    AVOID.

  Under jit: NaN scores or a non-stochastic ``t`` make every id -1.
  """
  t = V.check_array(t, "t", ndim=2, dtype="float")
  n = t.shape[0]
  s, ok = _check_scores(scores, n)
  seeds = V.check_int(seeds, "seeds", min_value=1, max_value=n)
  budget = V.check_int(budget, "budget", min_value=1, max_value=n)
  _, top = jax.lax.top_k(s, seeds)
  w = rank_seed_weights(seeds)
  p = jnp.zeros(s.shape)
  if s.ndim == 1:
    p = p.at[top].add(w)
  else:
    p = jax.vmap(lambda pp, tt: pp.at[tt].add(w))(p, top)
  pi = personalized_pagerank(t, p, teleport=teleport, iters=iters, tol=tol)
  ids = jax.lax.top_k(pi, budget)[1].astype(jnp.int32)
  ids = V.poison(ids, ok & jnp.isfinite(pi).all())
  empty = jnp.zeros(s.shape[:-1] + (0,), jnp.int32)
  return Contract(
    ids=ids, roles=jnp.full(ids.shape, NO_ROLE, jnp.int32), avoid=empty
  )
