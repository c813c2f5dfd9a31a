"""Dense top-k retrieval and the recall / purity curves of its prefixes."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._data import ICLData, check_data


def check_ks(
  ks, name: str = "ks", *, k_max: int | None = None
) -> tuple[int, ...]:
  """A static, strictly increasing tuple of prefix lengths
  ``1 <= k <= k_max``."""
  if isinstance(ks, (int, np.integer)) or not isinstance(
    ks, (Sequence, np.ndarray)
  ):
    raise TypeError(
      f"{name} must be a sequence of ints, got {type(ks).__name__}"
    )
  out = tuple(
    V.check_int(k, f"{name}[{i}]", min_value=1) for i, k in enumerate(ks)
  )
  if not out:
    raise ValueError(f"{name} must hold at least one prefix length")
  if any(b <= a for a, b in zip(out, out[1:])):
    raise ValueError(f"{name} must be strictly increasing, got {out}")
  if k_max is not None and out[-1] > k_max:
    raise ValueError(
      f"{name} must be <= k_max = {k_max} (the retrieved list), got {out[-1]}"
    )
  return out


def check_idx(idx, data: ICLData, name: str = "idx"):
  """Trace-time checks of a retrieved index list ``[Q, k_max]``; returns (idx,
  ok flag)."""
  Q, P = data.q_x.shape[0], data.pool_x.shape[0]
  idx = V.check_array(idx, name, shape=(Q, None), dtype="int", nonempty=True)
  ok = V.check_values(
    (idx >= 0) & (idx < P),
    f"{name} must hold pool indices in [0, {P}) (pool size P)",
  )
  return idx, ok


@functools.partial(jax.jit, static_argnames=("k_max",))
def _topk(q, p, k_max):
  qn = q / jnp.maximum(jnp.linalg.norm(q, axis=-1, keepdims=True), 1e-30)
  pn = p / jnp.maximum(jnp.linalg.norm(p, axis=-1, keepdims=True), 1e-30)
  sims, idx = jax.lax.top_k(qn @ pn.T, k_max)  # ties: lower pool index first
  return idx.astype(jnp.int32), sims


def dense_topk(
  q_feat: jax.Array, pool_feat: jax.Array, k_max: int
) -> tuple[jax.Array, jax.Array]:
  """Cosine top-k retrieval, once for the largest budget.

  ``score_i = cos(phi(x_q), phi(x_i))``; the top ``k_max`` items in descending
  score, ties broken by the lower pool index, so every smaller budget k is the
  prefix ``[:, :k]`` (the prefixes are nested).

  Args:
    q_feat: float [Q, d] query features.
    pool_feat: float [P, d] pool features.
    k_max: the largest budget (static), ``1 <= k_max <= P``.

  Returns:
    ``(idx int32 [Q, k_max], sims float [Q, k_max])``.

  Under jit: a zero feature row has cosine 0 with everything (no error).
  """
  q = V.check_array(q_feat, "q_feat", ndim=2, dtype="float", nonempty=True)
  p = V.check_array(
    pool_feat, "pool_feat", ndim=2, dtype="float", nonempty=True
  )
  if q.shape[1] != p.shape[1]:
    raise ValueError(
      "q_feat and pool_feat must share the feature dimension, "
      f"got {q.shape} and {p.shape}"
    )
  k_max = V.check_int(k_max, "k_max", min_value=1, max_value=p.shape[0])
  return _topk(q, p, k_max)


def _relevant(idx, data):
  return data.pool_task[idx] == data.q_task[:, None]  # [Q, k_max]


def _n_relevant(data):
  return (data.pool_task[None, :] == data.q_task[:, None]).sum(-1)  # [Q]


@functools.partial(jax.jit, static_argnames=("ks", "kind"))
def _curve(idx, data, ks, kind):
  # [Q, n_k]
  hits = jnp.cumsum(_relevant(idx, data), axis=1)[:, jnp.asarray(ks) - 1]
  if kind == "recall":
    n = _n_relevant(data)[:, None]
    return jnp.where(n > 0, hits / jnp.maximum(n, 1), 0.0).mean(0)
  return (hits / jnp.asarray(ks, jnp.float32)).mean(0)


def recall_curve(idx: jax.Array, data: ICLData, ks: Sequence[int]) -> jax.Array:
  """Mean Recall@k over queries for every budget in ``ks``.

  ``Recall@k(q) = |top-k(q) ∩ Rel(q)| / |Rel(q)|`` with
  ``Rel(q) = {i : j_i = j_q}`` (the pool items of the query's cluster). A query
  whose cluster has no pool item scores 0.

  Args:
    idx: int [Q, k_max] retrieved pool indices (best first), e.g. from
      :func:`dense_topk`.
    data: the :class:`ICLData` the indices refer to.
    ks: strictly increasing static budgets, each ``<= k_max``.

  Returns:
    float [len(ks)].

  Under jit: an index outside ``[0, P)`` poisons the result (NaN).
  """
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  ks = check_ks(ks, k_max=idx.shape[1])
  return V.poison(_curve(idx, data, ks, "recall"), ok)


def purity_curve(idx: jax.Array, data: ICLData, ks: Sequence[int]) -> jax.Array:
  """Mean purity ``pi(k) = |top-k ∩ Rel(q)| / k`` over queries (precision@k).

  Args:
    idx: int [Q, k_max] retrieved pool indices.
    data: the :class:`ICLData`.
    ks: strictly increasing static budgets ``<= k_max``.

  Returns:
    float [len(ks)].

  Under jit: an index outside ``[0, P)`` poisons the result (NaN).
  """
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  ks = check_ks(ks, k_max=idx.shape[1])
  return V.poison(_curve(idx, data, ks, "purity"), ok)
