"""The typed skill graph and its Graph-of-Skills transition matrix.

A skill library is a directed multigraph over ``n`` skills with typed, weighted
edges (:data:`EDGE_TYPES`). Each skill carries the visible requirements it
addresses (``req``, a ``[n, R]`` bool matrix), a kind (:data:`KINDS`) and a
payload length in tokens (``cost``).

The transition matrix follows Graph of Skills (GoS, ``gos/core/retrieval.py``):
an edge ``s -> t`` of type ``tau`` and weight ``w`` adds ``w`` to ``W[s, t]``
and ``w * rho_tau`` to ``W[t, s]``; rows are normalised, and a row with no mass
gets a self-loop::

    W[s, t] = sum_{(s->t, tau, w)} w  +  sum_{(t->s, tau, w)} w * rho_tau          (1)
    T[s, :] = W[s, :] / sum_t W[s, t]        (or e_s when the row sum is 0)          (2)

with GoS's reverse factors ``rho = {dependency 1.0, workflow 0.5, semantic 0.2,
alternative 0.1}``; the two types GoS does not know (``validates``,
``conflicts``) get 0, as GoS gives unknown types (:data:`GOS_REVERSE_FACTORS`).

Bad input: shapes, dtypes and static options raise at trace time. Values (edge
endpoints in ``[0, n)``, known edge types, non-negative finite weights and
reverse factors) raise eagerly; under ``jax.jit`` a bad value turns every float
output into NaN.
"""

from __future__ import annotations

from typing import Literal

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

EDGE_TYPES = (
  "dependency",
  "workflow",
  "semantic",
  "alternative",
  "validates",
  "conflicts",
)
"""Edge types. ``s -> t`` reads: dependency, ``s`` is a prerequisite of ``t``; workflow, ``t``
usually follows ``s``; semantic, related text; alternative, ``s`` can replace ``t``;
validates, ``s`` checks the output of ``t``; conflicts, ``s`` (a note) flags ``t`` as a known
failure."""
KINDS = ("procedure", "validator", "note")
"""Skill kinds: an executable step, a check of a requirement, a failure note."""
DEPENDENCY, WORKFLOW, SEMANTIC, ALTERNATIVE, VALIDATES, CONFLICTS = range(6)
PROCEDURE, VALIDATOR, NOTE = range(3)
GOS_REVERSE_FACTORS = (1.0, 0.5, 0.2, 0.1, 0.0, 0.0)
"""GoS's reverse factors rho per edge type, in :data:`EDGE_TYPES` order (0 for the types GoS
does not define, as its ``reverse_weights.get(type, 0.0)``)."""
DANGLING = ("self_loop", "uniform")


@flax.struct.dataclass
class SkillGraph:
  """A typed skill graph (a pytree; ``n`` and ``R`` come from ``req``'s shape).

  Attributes:
    src: ``[E]`` int32 edge sources.
    dst: ``[E]`` int32 edge targets.
    etype: ``[E]`` int32 edge types (indices into :data:`EDGE_TYPES`).
    weight: ``[E]`` float32 non-negative edge weights.
    emask: ``[E]`` bool, False for padding edges (static edge counts under jit).
    req: ``[n, R]`` bool, the visible requirements each skill addresses.
    kind: ``[n]`` int32 skill kinds (indices into :data:`KINDS`).
    cost: ``[n]`` int32 payload lengths in tokens.
  """

  src: jax.Array
  dst: jax.Array
  etype: jax.Array
  weight: jax.Array
  emask: jax.Array
  req: jax.Array
  kind: jax.Array
  cost: jax.Array

  @property
  def n(self) -> int:
    return self.req.shape[0]

  @property
  def num_requirements(self) -> int:
    return self.req.shape[1]


def skill_graph(
  src: npt.ArrayLike,
  dst: npt.ArrayLike,
  etype: npt.ArrayLike,
  req: npt.ArrayLike,
  kind: npt.ArrayLike,
  cost: npt.ArrayLike,
  *,
  weight: npt.ArrayLike | None = None,
  emask: npt.ArrayLike | None = None,
) -> SkillGraph:
  """Builds a :class:`SkillGraph`, checking shapes and dtypes (values: see
  :func:`check_graph`).

  Args:
    src: ``[E]`` integer edge sources in ``[0, n)``.
    dst: ``[E]`` integer edge targets in ``[0, n)``.
    etype: ``[E]`` integer edge types (indices into :data:`EDGE_TYPES`).
    req: ``[n, R]`` bool (or 0/1 integer) requirement matrix.
    kind: ``[n]`` integer kinds in :data:`KINDS`.
    cost: ``[n]`` integer payload tokens.
    weight: ``[E]`` float weights (default 1).
    emask: ``[E]`` bool validity mask (default all True).

  Returns:
    The :class:`SkillGraph`.
  """
  src = V.check_array(src, "src", ndim=1, dtype="int")
  e = src.shape[0]
  dst = V.check_array(dst, "dst", shape=(e,), dtype="int")
  etype = V.check_array(etype, "etype", shape=(e,), dtype="int")
  req = V.check_array(req, "req", ndim=2, dtype="intbool")
  n = req.shape[0]
  if n == 0:
    raise ValueError(
      "req must describe at least one skill (n >= 1), got shape (0, R)"
    )
  kind = V.check_array(kind, "kind", shape=(n,), dtype="int")
  cost = V.check_array(cost, "cost", shape=(n,), dtype="int")
  weight = jnp.ones((e,), jnp.float32) if weight is None else weight
  weight = V.check_array(weight, "weight", shape=(e,), dtype="real")
  emask = jnp.ones((e,), bool) if emask is None else emask
  emask = V.check_array(emask, "emask", shape=(e,), dtype="bool")
  return SkillGraph(
    src=src.astype(jnp.int32),
    dst=dst.astype(jnp.int32),
    etype=etype.astype(jnp.int32),
    weight=weight.astype(jnp.float32),
    emask=emask,
    req=req.astype(bool),
    kind=kind.astype(jnp.int32),
    cost=cost.astype(jnp.int32),
  )


def _check_graph_struct(g) -> SkillGraph:
  if not isinstance(g, SkillGraph):
    raise TypeError(
      f"g must be a SkillGraph (see skill_graph), got {type(g).__name__}"
    )
  return g


def graph_value_flag(g: SkillGraph):
  """Value checks of a graph: raises eagerly, returns a traced all-ok flag under
  jit."""
  return _value_ok(g, _flags(g))


def _check_rev(rev_factor) -> jax.Array:
  rev = V.check_array(
    rev_factor, "rev_factor", shape=(len(EDGE_TYPES),), dtype=("real")
  )
  return rev.astype(jnp.float32)


def transition_weights(
  g: SkillGraph, rev_factor: npt.ArrayLike = GOS_REVERSE_FACTORS
) -> jax.Array:
  """The unnormalised GoS weights ``W`` of eq. (1).

  Args:
    g: the skill graph.
    rev_factor: ``[6]`` reverse factors rho per edge type (default GoS's).

  Returns:
    ``[n, n]`` float32 ``W`` (``W[s, t]``: weight of moving from ``s`` to
    ``t``).

  Under jit: a bad value (see the module docstring) makes ``W`` all NaN.
  """
  g = _check_graph_struct(g)
  rev = _check_rev(rev_factor)
  out, flags = _weights(g, rev)
  return V.poison(
    out,
    _value_ok(g, flags)
    & V.check_values(flags[4], "rev_factor must be finite and >= 0"),
  )


def _flags(g: SkillGraph):
  n, m = g.n, g.emask
  return (
    (~m | ((g.src >= 0) & (g.src < n) & (g.dst >= 0) & (g.dst < n))).all(),
    (~m | ((g.etype >= 0) & (g.etype < len(EDGE_TYPES)))).all(),
    (~m | (jnp.isfinite(g.weight) & (g.weight >= 0))).all(),
    ((g.kind >= 0) & (g.kind < len(KINDS))).all(),
  )


def _value_ok(g, flags):
  ok = V.check_values(
    flags[0],
    f"src and dst must lie in [0, n) = [0, {g.n}) for every unmasked edge",
  )
  ok = ok & V.check_values(
    flags[1], f"etype must index EDGE_TYPES (0..{len(EDGE_TYPES) - 1})"
  )
  ok = ok & V.check_values(flags[2], "weight must be finite and >= 0")
  return ok & V.check_values(
    flags[3], f"kind must index KINDS (0..{len(KINDS) - 1})"
  )


@jax.jit
def _weights(g: SkillGraph, rev):
  n = g.n
  src = jnp.clip(g.src, 0, n - 1)
  dst = jnp.clip(g.dst, 0, n - 1)
  typ = jnp.clip(g.etype, 0, len(EDGE_TYPES) - 1)
  w = jnp.where(g.emask, g.weight, 0.0)
  out = jnp.zeros((n, n), jnp.float32)
  out = out.at[src, dst].add(w)
  out = out.at[dst, src].add(w * rev[typ])
  return out, _flags(g) + ((jnp.isfinite(rev) & (rev >= 0)).all(),)


def row_normalize(
  w: ArrayLike, *, dangling: Literal["self_loop", "uniform"] = "self_loop"
) -> jax.Array:
  """Eq. (2): row-normalises non-negative weights; empty rows get a self-loop
  (GoS) or 1/n.

  Args:
    w: ``[..., m, m]`` non-negative weights.
    dangling: ``'self_loop'`` (GoS: mass stays on a sink) or ``'uniform'`` (a
      sink jumps anywhere).

  Returns:
    ``[..., m, m]`` row-stochastic matrix.
  """
  w = V.check_array(w, "w", dtype="float")
  if w.ndim < 2 or w.shape[-1] != w.shape[-2] or w.shape[-1] == 0:
    raise ValueError(
      f"w must be a non-empty square [..., m, m] array, got shape {w.shape}"
    )
  if dangling not in DANGLING:
    raise ValueError(f"dangling must be one of {DANGLING}, got {dangling!r}")
  m = w.shape[-1]
  s = w.sum(-1, keepdims=True)
  empty = s <= 0
  fill = (
    jnp.eye(m, dtype=w.dtype)
    if dangling == "self_loop"
    else jnp.full((m, m), 1.0 / m)
  )
  return jnp.where(empty, fill.astype(w.dtype), w / jnp.where(empty, 1.0, s))


def transition_matrix(
  g: SkillGraph,
  rev_factor: npt.ArrayLike = GOS_REVERSE_FACTORS,
  *,
  dangling: Literal["self_loop", "uniform"] = "self_loop",
) -> jax.Array:
  """The GoS transition matrix ``T`` of eqs. (1)-(2).

  Args:
    g: the skill graph.
    rev_factor: ``[6]`` reverse factors per edge type.
    dangling: what a row with no out-weight does (``'self_loop'``: GoS parity;
      ``'uniform'``).

  Returns:
    ``[n, n]`` float32 row-stochastic ``T``.

  Under jit: a bad value makes ``T`` all NaN.

  Example:
    >>> g = skill_graph([0], [1], [0], np.ones((2, 1), bool), [0, 0], [10, 10])
    >>> transition_matrix(g).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
  """
  return row_normalize(transition_weights(g, rev_factor), dangling=dangling)


def typed_adjacency(g: SkillGraph) -> jax.Array:
  """Dense typed adjacency: ``A[tau, s, t] = 1`` iff an unmasked edge ``s -> t``
  of type tau exists.

  Args:
    g: the skill graph (edges with out-of-range values are dropped;
      :func:`transition_weights` reports them).

  Returns:
    ``[6, n, n]`` bool, types in :data:`EDGE_TYPES` order.
  """
  g = _check_graph_struct(g)
  n, k = g.n, len(EDGE_TYPES)
  ok = g.emask & (g.src >= 0) & (g.src < n) & (g.dst >= 0) & (g.dst < n)
  ok = ok & (g.etype >= 0) & (g.etype < k)
  a = jnp.zeros((k, n, n), bool)
  idx = (
    jnp.clip(g.etype, 0, k - 1),
    jnp.clip(g.src, 0, n - 1),
    jnp.clip(g.dst, 0, n - 1),
  )
  return a.at[idx].max(ok)


def numpy_graph(g: SkillGraph) -> dict:
  """The graph's arrays as numpy (host-side helpers, tests)."""
  return {k: np.asarray(getattr(g, k)) for k in g.__dataclass_fields__}
