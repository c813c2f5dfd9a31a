"""Matched controls: the baselines given GoSkills' START rule, bottleneck and
budget.

The ablation ladder of the reproduction gives a flat ranking GoSkills' pieces
one at a time: START = the dependency root of the top-scoring skill's group
(:func:`top_group_root`, :func:`root_first`), a flat candidate pool through the
greedy of eq. (6) (:func:`pool_bottleneck`), and GoSkills' own picks without
their SUPPORT / CHECK labels and AVOID notes (:func:`start_only`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.goskills import _graph as G
from jaxpapers.goskills._bottleneck import (
  NO_ROLE,
  START,
  SUPPORT,
  budgeted_coverage,
)
from jaxpapers.goskills._groups import build_groups


@functools.partial(
  jax.jit, static_argnames=("depth", "max_support", "max_check", "max_avoid")
)
def top_group_root(
  g: G.SkillGraph,
  scores: jax.Array,
  visible: jax.Array,
  *,
  depth: int,
  max_support: int,
  max_check: int,
  max_avoid: int,
) -> jax.Array:
  """The START (dependency root) of the top-scoring skill's group, GoSkills'
  START rule.

  Args:
    g: the skill graph of ``n`` skills.
    scores: ``[T, n]`` task scores; the top skill is the anchor (ties: lower
      id).
    visible: ``[T, R]`` bool visible requirements.
    depth, max_support, max_check, max_avoid: the group construction of
      :func:`build_groups`.

  Returns:
    ``[T]`` int START skill per task.
  """

  def one(s, v):
    anchor = jax.lax.top_k(s, 1)[1]
    grp = build_groups(
      g,
      anchor,
      v,
      s,
      depth=depth,
      max_support=max_support,
      max_check=max_check,
      max_avoid=max_avoid,
      start="root",
    )
    return grp.members[0, 0]

  return jax.vmap(one)(scores, visible)


@functools.partial(jax.jit, static_argnames=("budget", "mu"))
def pool_bottleneck(
  req: jax.Array,
  pool: jax.Array,
  start: jax.Array,
  visible: jax.Array,
  *,
  budget: int,
  mu: float,
) -> tuple[jax.Array, jax.Array]:
  """A flat pool through GoSkills' bottleneck (eq. (6), forced START, same
  budget).

  Every pool member gets the same SUPPORT priority, so the greedy is coverage
  first, then the pool's rank order, and it fills the budget as GoSkills' greedy
  does.

  Args:
    req: ``[n, R]`` bool requirement matrix of the library.
    pool: ``[T, P]`` candidate skill ids (-1: none), in the baseline's own rank
      order.
    start: ``[T]`` the START skill (:func:`top_group_root`).
    visible: ``[T, R]`` bool visible requirements.
    budget: ``B``.
    mu: the role-priority weight of eq. (6).

  Returns:
    ``(ids, roles)``, ``[T, budget]`` each: picks in greedy order (START first),
    roles START for the START skill and -1 (none) for the others, -1 padded.
  """

  def one(p, st, v):
    cands = jnp.concatenate([st[None], p])
    roles = jnp.concatenate(
      [jnp.asarray([START], jnp.int32), jnp.full(p.shape, SUPPORT)]
    )
    mask = jnp.concatenate([jnp.asarray([True]), (p >= 0) & (p != st)])
    picks = budgeted_coverage(
      cands, roles, mask, req, v, budget=budget, mu=mu, force_start=True
    )
    ids = jnp.where(picks >= 0, cands[jnp.clip(picks, 0)], -1)
    return ids, jnp.where(picks == 0, START, NO_ROLE)

  return jax.vmap(one)(pool, start, visible)


def start_only(
  ids: ArrayLike, roles: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The same picks with every role but START dropped and no AVOID notes
  (numpy).

  Args:
    ids: ``[T, B]`` picked skill ids.
    roles: ``[T, B]`` their roles.

  Returns:
    ``(ids, roles, avoid)``: ``ids`` unchanged, ``[T, B]`` roles START where
    they were START and -1 elsewhere, ``[T, 0]`` avoid.
  """
  ids, roles = np.asarray(ids), np.asarray(roles)
  if ids.ndim != 2 or roles.shape != ids.shape:
    raise ValueError(
      f"start_only needs ids and roles of one shape [T, B], got {ids.shape}, "
      f"{roles.shape}"
    )
  return (
    ids,
    np.where(roles == START, START, NO_ROLE),
    np.full((ids.shape[0], 0), -1, np.int32),
  )


def root_first(
  flat_ids: ArrayLike, root: ArrayLike, bmax: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """START = ``root`` followed by the flat ranking without it, cut to ``bmax``
  (numpy).

  Args:
    flat_ids: ``[T, K]`` flat ranking, ``K >= bmax``.
    root: ``[T]`` START skill per task.
    bmax: list length.

  Returns:
    ``(ids, roles, avoid)``: ``[T, bmax]`` ids, roles START at position 0 and -1
    elsewhere, ``[T, 0]`` avoid.
  """
  flat_ids, root = np.asarray(flat_ids), np.asarray(root)
  if (
    flat_ids.ndim != 2
    or root.shape != flat_ids.shape[:1]
    or not 1 <= bmax <= flat_ids.shape[1]
  ):
    raise ValueError(
      "root_first needs flat_ids [T, K], root [T] and 1 <= bmax <= K; "
      f"got flat_ids {flat_ids.shape}, root {root.shape}, bmax={bmax!r}"
    )
  t = flat_ids.shape[0]
  rest = np.where(flat_ids == root[:, None], -1, flat_ids)
  # drop the root, keep rank order
  order = np.argsort(rest < 0, axis=1, kind="stable")
  rest = np.take_along_axis(rest, order, 1)
  ids = np.concatenate([root[:, None], rest], 1)[:, :bmax]
  roles = np.full(ids.shape, NO_ROLE)
  roles[:, 0] = START
  return ids, roles, np.full((t, 0), -1, np.int32)
