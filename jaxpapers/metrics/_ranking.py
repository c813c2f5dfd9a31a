"""Ranking and retrieval metrics over score matrices.

Every function takes ``scores [Q, N]`` (higher is better) and ``relevance
[Q, N]`` (binary, or graded for nDCG) for ``Q`` queries over ``N`` candidates,
and returns one value per query ``[Q]``; average them yourself (or use
:func:`mean_average_precision`). Ties in ``scores`` are broken by candidate
index (lower index ranks first), deterministically. Queries with no relevant
candidate score 0 in every metric (they have nothing to find).

All functions are jit- and vmap-compatible; ``k`` is static (a Python or numpy
int with ``1 <= k <= N``). A ``k`` larger than the candidate list is a
trace-time ``ValueError``, not a value: the two usual conventions disagree there
(precision@k divides by ``k``, so a perfect ranking of 3 candidates scores 0.3
at ``k = 10``, while nDCG@k and recall@k silently become @N), and ``k > N`` is
most often a sign of transposed ``[N, Q]`` arrays. Pass ``k = N`` to score the
whole list.

Bad input (policy in :mod:`jaxpapers.core.validation`): shapes, dtypes and ``k``
are checked at trace time (``num_candidates >= 1``); relevance must be
non-negative and finite and scores must not be NaN (``±inf`` scores are allowed,
e.g. to mask candidates). Those value checks raise ``ValueError`` on concrete
data; under ``jax.jit`` a bad value makes every output NaN.
"""

from __future__ import annotations

import functools
from typing import overload

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


@overload
def _check(
  scores: ArrayLike, relevance: ArrayLike, k: int
) -> tuple[jax.Array, jax.Array, int]: ...
@overload
def _check(
  scores: ArrayLike, relevance: ArrayLike, k: None = None
) -> tuple[jax.Array, jax.Array, None]: ...
def _check(
  scores: ArrayLike, relevance: ArrayLike, k: int | None = None
) -> tuple[jax.Array, jax.Array, int | None]:
  """Trace-time checks; returns ``(scores, relevance, k)`` with ``k`` a Python
  int or None."""
  scores = V.check_array(scores, "scores", dtype="real")
  relevance = V.check_array(relevance, "relevance", dtype="real")
  if scores.ndim != 2 or scores.shape != relevance.shape:
    raise ValueError(
      "scores and relevance must both have shape [num_queries, "
      f"num_candidates]; got scores {scores.shape}, "
      f"relevance {relevance.shape}"
    )
  if scores.shape[1] == 0:
    raise ValueError(
      f"scores must have at least one candidate, got shape {scores.shape}"
    )
  if k is not None:
    if isinstance(k, (bool,)) or not hasattr(k, "__index__"):
      raise ValueError(f"k must be a positive int, got {k!r}")
    k = int(k)
    if k < 1:
      raise ValueError(f"k must be a positive int, got {k!r}")
    if k > scores.shape[1]:
      raise ValueError(
        f"k={k} exceeds the number of candidates N={scores.shape[1]} (scores "
        "and relevance have shape [num_queries, num_candidates] = "
        f"{tuple(scores.shape)}): an @k metric needs 1 <= k <= N; "
        "pass k=N to score the whole list, and check that the arrays are not "
        "transposed"
      )
  return scores, relevance, k


def _metric(core):
  """Jits ``core(scores, relevance f32, k)`` together with the value checks'
  flags."""

  @functools.partial(jax.jit, static_argnames=("k",))
  def run(scores, relevance, k=None):
    relevance = relevance.astype(jnp.float32)
    rel_ok = jnp.all(jnp.isfinite(relevance) & (relevance >= 0))
    if jnp.issubdtype(scores.dtype, jnp.floating):
      score_ok = ~jnp.any(jnp.isnan(scores))
    else:
      score_ok = jnp.asarray(True)
    return core(scores, relevance, k), rel_ok, score_ok

  return run


def _finish(out, rel_ok, score_ok):
  """Raises on concrete bad values; poisons ``out`` with NaN when they are
  traced."""
  ok = V.check_values(
    rel_ok,
    "relevance must be finite and >= 0 (binary 0/1 or graded gains); "
    "got negative or non-finite entries (for labels in {-1, +1} pass "
    "relevance > 0)",
  )
  ok = ok & V.check_values(
    score_ok, "scores must not contain NaN (a NaN would rank silently)"
  )
  return V.poison(out, ok)


def _ranked_relevance(scores: jax.Array, relevance: jax.Array) -> jax.Array:
  """Relevance re-ordered by descending score, ties by index: ``[Q, N]``."""
  order = jnp.argsort(-scores, axis=-1, stable=True)
  return jnp.take_along_axis(relevance, order, axis=-1)


def _topk(ranked: jax.Array, k: int) -> jax.Array:
  return ranked[:, :k]  # 1 <= k <= N, checked in _check


def ndcg_at_k(scores: ArrayLike, relevance: ArrayLike, k: int) -> jax.Array:
  """Normalised discounted cumulative gain at ``k`` with linear gains.

  ``DCG@k = Σ_{i=1}^{k} rel_i / log2(i + 1)`` over the ranked list,
  ``nDCG@k = DCG@k / IDCG@k`` with the ideal ordering in the denominator.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array of graded gains, finite and >= 0.
    k: static cutoff, an int in [1, N].

  Returns:
    [Q] float32 array in [0, 1] (0 for a query without a relevant candidate).
  """
  scores, relevance, k = _check(scores, relevance, k)
  return _finish(*_ndcg(scores, relevance, k=k))


@_metric
def _ndcg(scores, relevance, k):
  ranked = _topk(_ranked_relevance(scores, relevance), k)
  ideal = _topk(-jnp.sort(-relevance, axis=-1), k)
  discount = 1.0 / jnp.log2(
    jnp.arange(ranked.shape[1], dtype=jnp.float32) + 2.0
  )
  dcg = (ranked * discount).sum(-1)
  idcg = (ideal * discount).sum(-1)
  return jnp.where(idcg > 0, dcg / jnp.where(idcg > 0, idcg, 1.0), 0.0)


def hit_rate_at_k(scores: ArrayLike, relevance: ArrayLike, k: int) -> jax.Array:
  """HR@k: 1 if any relevant candidate is in the top ``k``, else 0.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.
    k: static cutoff, an int in [1, N].

  Returns:
    [Q] float32 array of 0s and 1s.
  """
  scores, relevance, k = _check(scores, relevance, k)
  return _finish(*_hit_rate(scores, relevance, k=k))


@_metric
def _hit_rate(scores, relevance, k):
  ranked = _topk(_ranked_relevance(scores, relevance) > 0, k)
  return ranked.any(-1).astype(jnp.float32)


def recall_at_k(scores: ArrayLike, relevance: ArrayLike, k: int) -> jax.Array:
  """Recall@k: relevant candidates in the top ``k`` over all relevant
  candidates.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.
    k: static cutoff, an int in [1, N].

  Returns:
    [Q] float32 array in [0, 1] (0 for a query without a relevant candidate).
  """
  scores, relevance, k = _check(scores, relevance, k)
  return _finish(*_recall(scores, relevance, k=k))


@_metric
def _recall(scores, relevance, k):
  rel = relevance > 0
  hits = _topk(_ranked_relevance(scores, rel.astype(jnp.float32)), k).sum(-1)
  total = rel.sum(-1)
  return jnp.where(total > 0, hits / jnp.maximum(total, 1), 0.0)


def precision_at_k(
  scores: ArrayLike, relevance: ArrayLike, k: int
) -> jax.Array:
  """Precision@k: relevant candidates in the top ``k``, divided by ``k``.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.
    k: static cutoff, an int in [1, N].

  Returns:
    [Q] float32 array in [0, 1].
  """
  scores, relevance, k = _check(scores, relevance, k)
  return _finish(*_precision(scores, relevance, k=k))


@_metric
def _precision(scores, relevance, k):
  rel = (relevance > 0).astype(jnp.float32)
  return _topk(_ranked_relevance(scores, rel), k).sum(-1) / k


def mrr(scores: ArrayLike, relevance: ArrayLike) -> jax.Array:
  """Reciprocal rank of the first relevant candidate (0 if none).

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.

  Returns:
    [Q] float32 array in [0, 1].
  """
  scores, relevance, _ = _check(scores, relevance)
  return _finish(*_mrr(scores, relevance))


@_metric
def _mrr(scores, relevance, k):
  del k
  ranked = _ranked_relevance(scores, relevance) > 0
  first = jnp.argmax(ranked, axis=-1)
  return jnp.where(ranked.any(-1), 1.0 / (first + 1.0), 0.0)


def average_precision(scores: ArrayLike, relevance: ArrayLike) -> jax.Array:
  """Average precision: ``AP = (1/R) Σ_{i: rel_i} precision@i`` over the full
  ranking.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.

  Returns:
    [Q] float32 array in [0, 1] (0 for a query without a relevant candidate).
  """
  scores, relevance, _ = _check(scores, relevance)
  return _finish(*_average_precision(scores, relevance))


@_metric
def _average_precision(scores, relevance, k):
  del k
  ranked = (_ranked_relevance(scores, relevance) > 0).astype(jnp.float32)
  ranks = jnp.arange(1, ranked.shape[1] + 1, dtype=jnp.float32)
  precision_at_i = jnp.cumsum(ranked, axis=-1) / ranks
  total = ranked.sum(-1)
  return jnp.where(
    total > 0, (precision_at_i * ranked).sum(-1) / jnp.maximum(total, 1.0), 0.0
  )


def mean_average_precision(
  scores: ArrayLike, relevance: ArrayLike
) -> jax.Array:
  """mAP: the mean of :func:`average_precision` over queries.

  Args:
    scores: [Q, N] real array, higher ranks first; ties go to the lower index;
      no NaN.
    relevance: [Q, N] real array, finite and >= 0; an entry > 0 marks a relevant
      candidate.

  Returns:
    float32 scalar in [0, 1].
  """
  return average_precision(scores, relevance).mean()
