"""Relevance matrices: all k-subsets, random k-sparse rows and LIMIT-style
matrices."""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np


def _check_nk(n, k):
  if isinstance(n, bool) or isinstance(k, bool):
    raise ValueError(f"n and k must be ints, got n={n!r}, k={k!r}.")
  if not isinstance(n, (int, np.integer)) or n <= 0:
    raise ValueError(
      f"n (number of documents) must be a positive int, got {n!r}."
    )
  if not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
    raise ValueError(
      f"k (relevant documents per query) must be an int in [1, n={n}], "
      f"got {k!r}."
    )


@functools.lru_cache(maxsize=16)
def _k_sparse_cached(n: int, k: int) -> np.ndarray:
  N = math.comb(n, k)
  idx = np.fromiter(
    itertools.chain.from_iterable(itertools.combinations(range(n), k)),
    dtype=np.int32,
    count=N * k,
  ).reshape(N, k)
  A = np.zeros((N, n), dtype=bool)
  A[np.arange(N)[:, None], idx] = True
  A.setflags(write=False)
  return A


def k_sparse_relevance(
  n: int, k: int, *, max_rows: int = 1_000_000
) -> np.ndarray:
  """The ``C(n, k) x n`` matrix with every k-subset of the n documents once, as
  a row.

  Rows are in lexicographic order of the subsets (``itertools.combinations``).
  Built on the host (numpy, bool) and cached; the returned array is read-only.

  Args:
    n: number of documents.
    k: number of relevant documents per query.
    max_rows: refuse to build more than this many rows (C(64, 4) = 635,376).

  Returns:
    ``bool[C(n, k), n]``.
  """
  _check_nk(n, k)
  N = math.comb(n, k)
  if N > max_rows:
    raise ValueError(
      f"k_sparse_relevance(n={n}, k={k}) has C(n, k) = {N:,} rows, "
      f"more than max_rows={max_rows:,}; raise max_rows or sample rows with "
      "random_k_sparse_relevance."
    )
  return _k_sparse_cached(int(n), int(k))


def random_k_sparse_relevance(
  key: jax.Array, num_queries: int, n: int, k: int
) -> jax.Array:
  """``num_queries`` rows, each an independent uniformly random k-subset of n
  documents.

  Args:
    key: a ``jax.random.key``.
    num_queries: N, number of rows.
    n: number of documents.
    k: relevant documents per row.

  Returns:
    ``bool[N, n]`` with exactly k ones per row (rows may repeat).
  """
  _check_nk(n, k)
  if not isinstance(num_queries, (int, np.integer)) or num_queries <= 0:
    raise ValueError(
      f"num_queries must be a positive int, got {num_queries!r}."
    )
  u = jax.random.uniform(key, (num_queries, n))
  ranks = jnp.argsort(jnp.argsort(u, axis=1), axis=1)
  return ranks < k


def sample_k_subsets(seed: int, num_queries: int, n: int, k: int) -> np.ndarray:
  """``num_queries`` *distinct* k-subsets drawn uniformly without replacement
  (numpy, bool).

  Falls back to all subsets when ``num_queries >= C(n, k)``.

  Args:
    seed: seed of the numpy generator.
    num_queries: number of subsets (a positive int).
    n: number of documents.
    k: subset size, ``1 <= k <= n``.

  Returns:
    ``bool[min(num_queries, C(n, k)), n]``, one subset per row with exactly k
    True entries, rows in lexicographic order of their index sets.
  """
  _check_nk(n, k)
  if (
    isinstance(num_queries, bool)
    or not isinstance(num_queries, (int, np.integer))
    or num_queries <= 0
  ):
    raise ValueError(
      f"num_queries must be a positive int, got {num_queries!r}."
    )
  N = math.comb(n, k)
  if num_queries >= N:
    return np.array(k_sparse_relevance(n, k, max_rows=max(N, 1)))
  rng = np.random.default_rng(seed)
  seen, rows = set(), []
  while len(rows) < num_queries:
    s = tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))
    if s not in seen:
      seen.add(s)
      rows.append(s)
  rows.sort()
  A = np.zeros((num_queries, n), dtype=bool)
  A[np.arange(num_queries)[:, None], np.asarray(rows)] = True
  return A


def limit_relevance(
  num_core: int = 46,
  k: int = 2,
  *,
  num_queries: int | None = 1000,
  num_docs: int | None = None,
  seed: int | None = 0,
) -> np.ndarray:
  """A LIMIT-style relevance matrix [reconstruction of WBNL25's LIMIT qrels].

  WBNL25 (arXiv:2508.21038) build LIMIT from ``num_core = 46`` documents whose
  ``C(46, 2) = 1035`` pairs exceed the 1000 queries: each query is relevant to
  one pair of core documents, and the remaining documents of the corpus (50k in
  LIMIT, none in LIMIT-small) are never relevant. Here: ``num_queries`` distinct
  k-subsets of the core documents (a uniform sample with ``seed``, or the first
  ones in lexicographic order with ``seed=None``; all of them with
  ``num_queries=None``), padded with ``num_docs - num_core`` all-zero distractor
  columns.

  Args:
    num_core: documents that can be relevant.
    k: relevant documents per query.
    num_queries: queries, in ``[1, C(num_core, k)]``; None for all subsets.
    num_docs: corpus size (>= ``num_core``); None means ``num_core``
      (LIMIT-small).
    seed: seed of the uniform sample; None takes the first subsets in
      lexicographic order.

  Returns:
    ``bool[num_queries, num_docs]``.
  """
  _check_nk(num_core, k)
  total = math.comb(num_core, k)
  if num_queries is None:
    num_queries = total
  if (
    not isinstance(num_queries, (int, np.integer))
    or not 1 <= num_queries <= total
  ):
    raise ValueError(
      f"num_queries must be an int in [1, C(num_core, k) = {total}], "
      f"got {num_queries!r}."
    )
  num_docs = num_core if num_docs is None else num_docs
  if not isinstance(num_docs, (int, np.integer)) or num_docs < num_core:
    raise ValueError(
      f"num_docs must be an int >= num_core={num_core}, got {num_docs!r}."
    )
  if seed is None:
    core = np.array(
      k_sparse_relevance(num_core, k, max_rows=total)[:num_queries]
    )
  else:
    core = sample_k_subsets(seed, num_queries, num_core, k)
  return np.concatenate(
    [core, np.zeros((num_queries, num_docs - num_core), bool)], axis=1
  )
