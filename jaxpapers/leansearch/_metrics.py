"""The reference's retrieval metrics and the reasoning mode's rank fusion, in
JAX.

Single-query search (one relevant declaration per query; ``pos`` is its 1-based
rank in the retrieved list, 0 when absent)::

  nDCG@k(q) = 1 / log2(pos + 1)  if 1 <= pos <= k else 0,     Recall@k(q) = [1 <= pos <= k]

Global premise retrieval (premise groups, each a set of aliases; a group is hit
at k when any alias is among the top-k retrieved ids, which is the reference's
short-name matching when the aliases are all declarations sharing a short
name)::

  recall_group@k(q) = #hit groups / max(#groups, 1)          (original and alternative)
  Covered@k(q)      = all original groups hit (True when there are none)
                      or (alternative groups exist and all are hit)

Values are per query (``[Q]``); the reference reports their mean in percent.

Under jit: value checks on the data (negative positions, ids below -1, a
retrieved list that repeats an id) cannot raise, so the float outputs become NaN
(the project's policy, ``jaxpapers.core.validation``); call eagerly once to get
the message.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


def _check_k(k, name="k"):
  return V.check_int(k, name, min_value=1)


def target_positions(retrieved: jax.Array, target: jax.Array) -> jax.Array:
  """1-based rank of ``target[q]`` in ``retrieved[q]``, 0 when absent.

  Args:
    retrieved: int [Q, K] retrieved ids (``-1`` pads).
    target: int [Q] the relevant id per query (``>= 0``).

  Returns:
    int32 [Q] positions (the first occurrence counts).
  """
  retrieved = V.check_array(retrieved, "retrieved", ndim=2, dtype="int")
  target = V.check_array(
    target, "target", shape=(retrieved.shape[0],), dtype=("int")
  )
  ok = V.check_values(target >= 0, "target must hold ids >= 0")
  hit = retrieved == target[:, None]
  pos = jnp.where(hit.any(1), jnp.argmax(hit, axis=1) + 1, 0).astype(jnp.int32)
  return V.poison(pos, ok)


def _positions(positions):
  positions = V.check_array(positions, "positions", ndim=1, dtype="int")
  ok = V.check_values(
    positions >= 0, "positions must be 1-based ranks or 0 for a miss (>= 0)"
  )
  return positions, ok


@functools.partial(jax.jit, static_argnames="k")
def _ndcg(positions, k):
  p = positions.astype(jnp.float32)
  return jnp.where(
    (positions >= 1) & (positions <= k), 1.0 / jnp.log2(p + 1.0), 0.0
  )


def ndcg_single(positions: jax.Array, k: int) -> jax.Array:
  """Single-relevant nDCG@k: ``1 / log2(pos + 1)`` when ``1 <= pos <= k``, else 0.

  Args:
    positions: int [Q], 1-based rank of the relevant item, 0 for a miss.
    k: cutoff.

  Returns:
    float32 [Q].
  """
  k = _check_k(k)
  positions, ok = _positions(positions)
  return V.poison(_ndcg(positions, k), ok)


def recall_single(positions: jax.Array, k: int) -> jax.Array:
  """Single-relevant Recall@k: 1 when ``1 <= pos <= k``, else 0.

  Args:
    positions: int [Q], 1-based rank of the relevant item, 0 for a miss (see
      :func:`target_positions`).
    k: cutoff (>= 1).

  Returns:
    float32 [Q] of 0s and 1s.
  """
  k = _check_k(k)
  positions, ok = _positions(positions)
  out = ((positions >= 1) & (positions <= k)).astype(jnp.float32)
  return V.poison(out, ok)


def _groups(retrieved, group_alias, group_mask):
  retrieved = V.check_array(retrieved, "retrieved", ndim=2, dtype="int")
  q = retrieved.shape[0]
  group_alias = V.check_array(group_alias, "group_alias", ndim=3, dtype="int")
  if group_alias.shape[0] != q:
    raise ValueError(
      f"group_alias must have shape [Q={q}, G, A] (one row per query), "
      f"got {group_alias.shape}"
    )
  group_mask = V.check_array(
    group_mask, "group_mask", shape=group_alias.shape[:2], dtype=("bool")
  )
  ok = V.check_values(
    (group_alias >= -1).all() & (retrieved >= -1).all(),
    "retrieved and group_alias must hold ids >= 0 (or -1 for padding)",
  )
  return retrieved, group_alias, group_mask, ok


@functools.partial(jax.jit, static_argnames="k")
def _group_hits(retrieved, group_alias, group_mask, k):
  top = retrieved[:, :k]  # [Q, k]
  valid_alias = group_alias >= 0
  # [Q,G,A,k]
  eq = (group_alias[..., None] == top[:, None, None, :]) & valid_alias[
    ..., None
  ]
  return eq.any(axis=(2, 3)) & group_mask  # [Q, G]


def premise_group_recall(
  retrieved: jax.Array, group_alias: jax.Array, group_mask: jax.Array, k: int
) -> jax.Array:
  """recall_group@k per query: hit groups / max(#groups, 1) over all groups.

  Args:
    retrieved: int [Q, K] ranked ids (``-1`` pads; ``K < k`` uses all K).
    group_alias: int [Q, G, A] alias ids of each group (``-1`` pads).
    group_mask: bool [Q, G], True for a real group.
    k: cutoff.

  Returns:
    float32 [Q] (a query without groups scores 0, as in the reference).
  """
  k = _check_k(k)
  retrieved, group_alias, group_mask, ok = _groups(
    retrieved, group_alias, group_mask
  )
  hits = _group_hits(retrieved, group_alias, group_mask, k)
  n = group_mask.sum(1)
  out = hits.sum(1) / jnp.maximum(n, 1).astype(jnp.float32)
  return V.poison(out.astype(jnp.float32), ok)


def covered_at_k(
  retrieved: jax.Array,
  group_alias: jax.Array,
  group_mask: jax.Array,
  group_is_alt: jax.Array,
  k: int,
) -> jax.Array:
  """Covered@k per query: all original groups hit (vacuously true without any),
  or alternative groups exist and all of them are hit.

  Args:
    retrieved: int [Q, K] ranked ids (``-1`` pads).
    group_alias: int [Q, G, A] alias ids of each group (``-1`` pads).
    group_mask: bool [Q, G], True for a real group.
    k: cutoff.
    group_is_alt: bool [Q, G], True for an "alternative" group.

  Returns:
    float32 [Q] in {0, 1}.
  """
  k = _check_k(k)
  retrieved, group_alias, group_mask, ok = _groups(
    retrieved, group_alias, group_mask
  )
  group_is_alt = V.check_array(
    group_is_alt, "group_is_alt", shape=group_mask.shape, dtype=("bool")
  )
  hits = _group_hits(retrieved, group_alias, group_mask, k)
  orig = group_mask & ~group_is_alt
  alt = group_mask & group_is_alt
  main_done = jnp.all(hits | ~orig, axis=1)
  alt_all = alt.any(1) & jnp.all(hits | ~alt, axis=1)
  return V.poison((main_done | alt_all).astype(jnp.float32), ok)


@functools.partial(jax.jit, static_argnames=("n_docs", "top_k"))
def _fusion(lists, list_mask, n_docs, top_k):
  rank = jnp.arange(lists.shape[1], dtype=jnp.float32)
  w = jnp.where(
    list_mask & (lists >= 0), 1.0 / jnp.log2(rank + 2.0)[None, :], 0.0
  )
  # padding goes to a dropped bin
  seg = jnp.where(list_mask & (lists >= 0), lists, n_docs)
  score = jax.ops.segment_sum(w.ravel(), seg.ravel(), num_segments=n_docs + 1)[
    :n_docs
  ]
  top, ids = jax.lax.top_k(score, top_k)
  return jnp.where(top > 0, ids, -1).astype(jnp.int32), top


def discounted_fusion(
  lists: ArrayLike, list_mask: ArrayLike, n_docs: int, top_k: int
) -> tuple[jax.Array, jax.Array]:
  """Reasoning mode's fusion: ``score(d) = sum_s sum_i [lists[s, i] = d] / log2(i + 2)``.

  ``i`` is the 0-based position in sub-query ``s``'s list of kept documents,
  counting only the entries before it that are kept (pass lists already
  compacted: masked entries inside a list still occupy their position).

  Args:
    lists: int [S, L] doc ids per sub-query (``-1`` pads).
    list_mask: bool [S, L], False drops an entry.
    n_docs: corpus size (ids lie in ``[0, n_docs)``).
    top_k: output length.

  Returns:
    ``(ids int32 [top_k], scores float32 [top_k])``, best first; ids with zero
    score are -1. Ties go to the lower doc id (reconstruction: the reference
    sorts a dict by score). Each id appears at most once.
  """
  n_docs = V.check_int(n_docs, "n_docs", min_value=1)
  top_k = V.check_int(top_k, "top_k", min_value=1, max_value=n_docs)
  lists = V.check_array(lists, "lists", ndim=2, dtype="int")
  list_mask = V.check_array(
    list_mask, "list_mask", shape=lists.shape, dtype=("bool")
  )
  ok = V.check_values(
    ((lists >= -1) & (lists < n_docs)).all(),
    f"lists must hold ids in [0, {n_docs}) or -1",
  )
  ids, sc = _fusion(lists, list_mask, n_docs, top_k)
  return V.poison((ids, sc), ok)
