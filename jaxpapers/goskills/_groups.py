"""Anchor-centred skill groups with roles, and the group graph (reconstruction).

For an anchor ``x`` (a top-scoring skill), the group ``g(x)`` is built from the
typed graph:

* **flagged** skills: targets of a ``conflicts`` edge from a ``note`` (known
  failures);
* **core**: ``x`` and up to ``max_support`` procedures reached from ``x`` by
  breadth-first search over dependency/workflow edges in either direction, to
  ``depth`` hops, nearest first (ties: higher task score, then lower id);
  flagged skills never enter the core;
* **START**: ``x`` (``start='anchor'``) or the core member with the fewest
  dependency/workflow predecessors inside the core (``start='root'``, ties:
  score, id): a similarity anchor is often the *goal* step while the executor
  needs the *entry* step;
* **SUPPORT**: the other core members;
* **CHECK**: up to ``max_check`` validators with a ``validates`` edge into the
  core, those whose requirement is visible first (then score, id);
* **AVOID**: up to ``max_avoid`` flagged skills in the core's
  ``alternative``/``conflicts`` neighbourhood or equal to ``x`` (then id).

The group graph sums the GoS transition weights between the non-AVOID members of
two groups (eq. (1) before normalisation), with the diagonal removed::

    W_G[g, g'] = sum_{s in g, s' in g'} W[s, s']      (g != g'),   W_G[g, g] = 0          (7)

Ties inside an integer tier (hops, predecessors) go to the higher score, then
the lower id; scores closer than float32 resolution after a monotone squashing
count as ties.

Group members come in fixed slots ``[START | SUPPORT x max_support | CHECK x max_check |
AVOID x max_avoid]`` (``M`` in all), -1 padded, so shapes are static.

Bad input: shapes, dtypes and static options raise at trace time; anchors
outside ``[0, n)`` raise eagerly and give all -1 members under jit.
"""

from __future__ import annotations

import functools
from typing import Literal

import flax.struct
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.goskills import _graph as G
from jaxpapers.goskills._bottleneck import AVOID, CHECK, NO_ROLE, START, SUPPORT

STARTS = ("root", "anchor")


@flax.struct.dataclass
class Groups:
  """Anchor-centred groups (leading axes ``[..., a]`` for ``a`` anchors).

  Attributes:
    members: ``[..., a, M]`` int32 skill ids, -1 for an empty slot.
    roles: ``[..., a, M]`` int32 roles per slot (:data:`ROLES` index; -1 for an
      empty slot).
    mask: ``[..., a, M]`` bool, ``members >= 0``.
  """

  members: jax.Array
  roles: jax.Array
  mask: jax.Array


def group_size(max_support: int, max_check: int, max_avoid: int) -> int:
  """``M = 1 + max_support + max_check + max_avoid``."""
  return 1 + max_support + max_check + max_avoid


def slot_roles(max_support: int, max_check: int, max_avoid: int) -> jax.Array:
  """``[M]`` the role of each slot."""
  return jnp.asarray(
    [START]
    + [SUPPORT] * max_support
    + [CHECK] * max_check
    + [AVOID] * max_avoid,
    jnp.int32,
  )


def _first_k(value, valid, k):
  """Indices of the ``k`` valid entries with the largest ``value`` (ties: lower
  index; -1 when fewer are valid). float32 ``lax.top_k`` (far faster than
  integer keys on CPU)."""
  if k == 0:
    return jnp.zeros((0,), jnp.int32)
  value = jnp.where(valid, value.astype(jnp.float32), -jnp.inf)
  if value.shape[0] < k:  # fewer entries than slots: pad with invalid ones
    value = jnp.concatenate([value, jnp.full((k - value.shape[0],), -jnp.inf)])
  v, idx = jax.lax.top_k(value, k)
  return jnp.where(v > -jnp.inf, idx, -1).astype(jnp.int32)


def _squash(scores):
  """A strictly increasing map of the scores into (0, 1), to break ties inside
  integer tiers."""
  return jnp.arctan(jnp.where(jnp.isfinite(scores), scores, 0.0)) / jnp.pi + 0.5


def _flagged(g: G.SkillGraph, use_avoid) -> jax.Array:
  n = g.n
  e = (
    g.emask
    & (g.etype == G.CONFLICTS)
    & (g.kind[jnp.clip(g.src, 0, n - 1)] == G.NOTE)
  )
  return jnp.zeros((n,), bool).at[jnp.clip(g.dst, 0, n - 1)].max(e) & use_avoid


def _dense(g: G.SkillGraph, depth: int):
  """Dense per-library matrices (computed once, outside the per-task/per-anchor
  vmaps)."""
  adj = G.typed_adjacency(g)
  flow = adj[G.DEPENDENCY] | adj[G.WORKFLOW]
  und = flow | flow.T
  reach, r = [], und
  for d in range(depth):
    if d:
      r = r | ((r.astype(jnp.float32) @ und.astype(jnp.float32)) > 0)
    reach.append(r)
  hops = (
    sum(x.astype(jnp.int32) for x in reach)
    if reach
    else jnp.zeros(flow.shape, jnp.int32)
  )
  alt = adj[G.ALTERNATIVE] | adj[G.CONFLICTS]
  return {
    "flow": flow,
    "hops": hops,
    "validates": adj[G.VALIDATES],
    "alt": alt | alt.T,
  }


def _one_group(
  x,
  g,
  mats,
  sq,
  visible,
  flagged,
  root_start,
  *,
  depth,
  max_support,
  max_check,
  max_avoid,
):
  n = g.n
  ids = jnp.arange(n)
  # dist = hops to reach from x over flow edges (either direction); depth + 1 =
  # unreached.
  dist = jnp.where(ids == x, 0, depth + 1 - mats["hops"][x])
  procedure = g.kind == G.PROCEDURE
  sup_ok = (dist >= 1) & (dist <= depth) & procedure & ~flagged
  # nearest, then score, then id
  support = _first_k(sq - 2.0 * dist, sup_ok, max_support)
  x_ok = ~flagged[x]
  core = jnp.concatenate([jnp.where(x_ok, x, -1)[None], support])  # [1 + S]
  cvalid = core >= 0
  cid = jnp.clip(core, 0, n - 1)
  s_anchor = jnp.where(
    x_ok, 0, _first_k(-jnp.arange(core.shape[0]), cvalid, 1)[0]
  )
  # root: fewest flow predecessors inside the core, then score, then id
  preds = (mats["flow"][cid[:, None], cid[None, :]] & cvalid[:, None]).sum(0)
  s_root = _first_k(sq[cid] - 2.0 * preds, cvalid, 1)[0]
  s_pos = jnp.where(root_start, s_root, s_anchor)
  s_id = jnp.where(s_pos >= 0, core[jnp.clip(s_pos, 0)], -1)
  rest = jnp.where(jnp.arange(core.shape[0]) == s_pos, -1, core)
  # compact, in order
  keep = _first_k(-jnp.arange(rest.shape[0]), rest >= 0, max_support)
  rest = jnp.where(keep >= 0, rest[jnp.clip(keep, 0)], -1)
  # CHECK: validators with a `validates` edge into the core, visible requirement
  # first.
  into = (mats["validates"][:, cid] & cvalid[None, :]).any(1)
  is_val = into & (g.kind == G.VALIDATOR) & ~flagged
  touches = (g.req & visible[None, :]).any(-1)
  checks = _first_k(sq - 2.0 * (~touches), is_val, max_check)
  # AVOID: flagged skills next to the core (alternative/conflicts) or the anchor
  # itself.
  near = (mats["alt"][cid] & cvalid[:, None]).any(0)
  avoid = _first_k(-ids, flagged & (near | (ids == x)), max_avoid)
  return jnp.concatenate([s_id[None], rest, checks, avoid]).astype(jnp.int32)


def build_groups(
  g: G.SkillGraph,
  anchors: ArrayLike,
  visible: ArrayLike,
  scores: ArrayLike | None = None,
  *,
  depth: int = 2,
  max_support: int = 4,
  max_check: int = 2,
  max_avoid: int = 2,
  start: Literal["root", "anchor"] = "root",
  use_avoid: bool = True,
) -> Groups:
  """Builds the anchor-centred group of every anchor (see the module docstring).

  Args:
    g: the skill graph.
    anchors: ``[a]`` int anchor skill ids.
    visible: ``[R]`` bool visible requirements of the task.
    scores: ``[n]`` task scores used to break ties (default zeros: ties by id).
    depth: breadth-first search depth over dependency/workflow edges (>= 0).
    max_support: SUPPORT slots (>= 0).
    max_check: CHECK slots (>= 0).
    max_avoid: AVOID slots (>= 0).
    start: ``'root'`` or ``'anchor'`` (which core member is START).
    use_avoid: False treats no skill as flagged (the no-AVOID ablation).

  Returns:
    :class:`Groups` with ``[a, M]`` fields, ``M = 1 + max_support + max_check + max_avoid``.

  Under jit: anchors outside ``[0, n)`` make every member -1.
  """
  if not isinstance(g, G.SkillGraph):
    raise TypeError(f"g must be a SkillGraph, got {type(g).__name__}")
  n, r = g.n, g.num_requirements
  anchors = V.check_array(
    anchors, "anchors", ndim=1, dtype="int", nonempty=True
  )
  visible = V.check_array(
    visible, "visible", shape=(r,), dtype="intbool"
  ).astype(bool)
  scores = jnp.zeros((n,), jnp.float32) if scores is None else scores
  scores = V.check_array(scores, "scores", shape=(n,), dtype="real").astype(
    jnp.float32
  )
  depth = V.check_int(depth, "depth", min_value=0)
  max_support = V.check_int(max_support, "max_support", min_value=0)
  max_check = V.check_int(max_check, "max_check", min_value=0)
  max_avoid = V.check_int(max_avoid, "max_avoid", min_value=0)
  if start not in STARTS:
    raise ValueError(f"start must be one of {STARTS}, got {start!r}")
  if not isinstance(use_avoid, bool):
    raise TypeError(f"use_avoid must be a bool, got {use_avoid!r}")
  members, flag = _build(
    g,
    anchors,
    visible,
    scores,
    jnp.asarray(use_avoid),
    jnp.asarray(start == "root"),
    depth=depth,
    max_support=max_support,
    max_check=max_check,
    max_avoid=max_avoid,
  )
  members = V.poison(
    members, V.check_values(flag, f"anchors must lie in [0, n={n})")
  )
  roles = jnp.broadcast_to(
    slot_roles(max_support, max_check, max_avoid), members.shape
  )
  mask = members >= 0
  return Groups(
    members=members, roles=jnp.where(mask, roles, NO_ROLE), mask=mask
  )


@functools.partial(
  jax.jit, static_argnames=("depth", "max_support", "max_check", "max_avoid")
)
def _build(
  g,
  anchors,
  visible,
  scores,
  use_avoid,
  root_start,
  *,
  depth,
  max_support,
  max_check,
  max_avoid,
):
  """Groups of every anchor; ``use_avoid`` and ``root_start`` are traced (one
  program serves the ablations)."""
  n = g.n
  flag = ((anchors >= 0) & (anchors < n)).all()
  flagged = _flagged(g, use_avoid)
  sq = _squash(scores)
  mats = _dense(g, depth)
  one = lambda x: _one_group(
    jnp.clip(x, 0, n - 1),
    g,
    mats,
    sq,
    visible,
    flagged,
    root_start,
    depth=depth,
    max_support=max_support,
    max_check=max_check,
    max_avoid=max_avoid,
  )
  return jax.vmap(one)(anchors), flag


def group_graph(groups: Groups, w: ArrayLike) -> jax.Array:
  """Eq. (7): group-to-group weights from the skill weights ``W`` (AVOID members
  excluded).

  Args:
    groups: :class:`Groups` with ``[a, M]`` fields.
    w: ``[n, n]`` unnormalised skill weights (:func:`transition_weights`).

  Returns:
    ``[a, a]`` float32 ``W_G`` with a zero diagonal (row-normalise with
    :func:`row_normalize`).
  """
  if not isinstance(groups, Groups):
    raise TypeError(f"groups must be a Groups, got {type(groups).__name__}")
  w = V.check_array(w, "w", ndim=2, dtype="float")
  n = w.shape[0]
  if w.shape != (n, n):
    raise ValueError(f"w must be square [n, n], got {w.shape}")
  m = V.check_array(groups.members, "groups.members", ndim=2, dtype="int")
  a, k = m.shape
  use = groups.mask & (groups.roles != AVOID) & (m >= 0) & (m < n)
  flat = jnp.clip(m.reshape(-1), 0, n - 1)
  sub = w[flat[:, None], flat[None, :]] * (
    use.reshape(-1)[:, None] & use.reshape(-1)[None, :]
  )
  wg = sub.reshape(a, k, a, k).sum((1, 3))
  return wg * (1.0 - jnp.eye(a, dtype=wg.dtype))
