"""The top-k sweep: every budget k from one retrieval, as one jitted program.

Pitfalls handled here (spec §3.5): the budgets are prefixes of one top-``k_max``
list selected with masks (no re-retrieval per k, nested prefixes), the reader's
parameters are fixed across k, and recall and accuracy come from the same
queries.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._data import ICLData, check_data
from jaxpapers.evidence_coverage._retrieval import check_idx, check_ks

Reader = Callable[..., jax.Array]


def _context(pool_x, pool_y, idx, y_override, valid):
  x = pool_x[idx]  # [Q, K, d]
  y = pool_y[idx] if y_override is None else y_override  # [Q, K]
  v = jnp.ones(idx.shape, bool) if valid is None else valid
  return x, y.astype(x.dtype), v


def _sweep_body(reader, ks, q_x, idx, y_override, valid, pool_x, pool_y, w0):
  x, y, v = _context(pool_x, pool_y, idx, y_override, valid)
  pos = jnp.arange(idx.shape[1])

  def one_k(k):
    mask = (pos < k)[None, :] & v  # [Q, K]
    return jax.vmap(reader, in_axes=(0, 0, 0, 0, None))(x, y, mask, q_x, w0)

  return jax.vmap(one_k)(jnp.asarray(ks))  # [n_k, Q]


@jax.jit
def _gather_y(pool_y, idx):
  return pool_y[jnp.clip(idx, 0, pool_y.shape[0] - 1)]


@functools.partial(jax.jit, static_argnames=("reader", "ks"))
def _sweep(reader, data, idx, ks, y_override, valid):
  return _sweep_body(
    reader,
    ks,
    data.q_x,
    idx,
    y_override,
    valid,
    data.pool_x,
    data.pool_y,
    data.w0,
  )


@functools.lru_cache(maxsize=64)
def _sharded_sweep(reader, ks, mesh, axis):
  q, rep = P(axis), P()
  body = functools.partial(_sweep_body, reader, ks)
  f = jax.shard_map(
    body,
    mesh=mesh,
    in_specs=(q, q, q, q, rep, rep, rep),
    out_specs=P(None, axis),
  )
  return jax.jit(f)


@functools.partial(jax.jit, static_argnames=("reader",))
def _at_budget(reader, data, idx, k_q, y_override, valid):
  x, y, v = _context(data.pool_x, data.pool_y, idx, y_override, valid)
  mask = (jnp.arange(idx.shape[1])[None, :] < k_q[:, None]) & v
  return jax.vmap(reader, in_axes=(0, 0, 0, 0, None))(
    x, y, mask, data.q_x, data.w0
  )


def _check_extras(idx, y_override, valid):
  if y_override is not None:
    y_override = V.check_array(
      y_override, "y_override", shape=idx.shape, dtype=("real")
    )
  if valid is not None:
    valid = V.check_array(valid, "valid", shape=idx.shape, dtype="bool")
  return y_override, valid


def _check_reader(reader):
  if not callable(reader):
    raise TypeError(
      f"reader must be callable (x, y, mask, x_q, w0) -> yhat, got {reader!r}"
    )
  try:
    hash(reader)
  except TypeError as e:
    raise TypeError(
      "reader must be hashable (e.g. GDReader(eta=...)); it is a static arg"
    ) from e


def _query_block(data: ICLData, lo: int, hi: int) -> ICLData:
  """The queries ``lo:hi`` of ``data`` with the whole pool."""
  return dataclasses.replace(
    data,
    q_x=data.q_x[lo:hi],
    q_y=data.q_y[lo:hi],
    q_task=data.q_task[lo:hi],
    q_w=data.q_w[lo:hi],
  )


def _blocks(
  reader, data, idx, ks, y_override, valid, mesh, query_chunk
) -> jax.Array:
  """``k_sweep`` over consecutive blocks of ``query_chunk`` queries,
  concatenated: [n_k, Q]."""
  Q = idx.shape[0]
  c = V.check_int(query_chunk, "query_chunk", min_value=1)
  if Q % c:
    raise ValueError(
      f"query_chunk must divide the number of queries Q = {Q}, got {c}"
    )
  part = lambda x, lo: None if x is None else x[lo : lo + c]
  out = [
    k_sweep(
      reader,
      _query_block(data, lo, lo + c),
      idx[lo : lo + c],
      ks,
      y_override=part(y_override, lo),
      valid=part(valid, lo),
      mesh=mesh,
    )
    for lo in range(0, Q, c)
  ]
  return jnp.concatenate(out, axis=1)


def k_sweep(
  reader: Reader,
  data: ICLData,
  idx: jax.Array,
  ks: Sequence[int],
  *,
  y_override: jax.Array | None = None,
  valid: jax.Array | None = None,
  mesh: jax.sharding.Mesh | None = None,
  query_chunk: int | None = None,
) -> jax.Array:
  """Predictions of ``reader`` for every budget in ``ks`` from one retrieved
  list.

  For budget k the reader sees the demonstrations ``idx[q, :k]`` (masked prefix)
  that are also ``valid``: ``yhat_k(q) = reader(X_q, y_q, 1[i < k] & valid_q,
  x_q, w0)``. One compiled program for all k and all queries (vmap over k and
  over queries).

  Args:
    reader: a hashable ``(x [K, d], y [K], mask [K], x_q [d], w0 [d]) ->
      scalar`` (e.g. ``GDReader(eta)``, ``RidgeReader(lam)``,
      ``PriorReader()``); static under jit.
    data: the :class:`ICLData` (pool, queries, prior ``w0``).
    idx: int [Q, K] retrieved pool indices, best first.
    ks: strictly increasing static budgets ``<= K``.
    y_override: optional float [Q, K] labels replacing ``pool_y[idx]`` (shuffled
      controls).
    valid: optional bool [Q, K]; False drops an item at every budget (oracle
      lists shorter than K).
    mesh: optional mesh; the queries are split over its first axis with
      ``jax.shard_map`` (each device sweeps its own queries against the
      replicated pool; Q must divide).
    query_chunk: optional number of queries per block: the queries are swept in
      blocks of this size (one compilation for all blocks), which bounds the
      ``[len(ks), block, K, d]`` intermediates; it must divide Q. None: all
      queries at once.

  Returns:
    float [len(ks), Q] predictions (the same with or without blocks).

  Under jit: an index outside ``[0, P)`` poisons the result (NaN).
  """
  _check_reader(reader)
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  ks = check_ks(ks, k_max=idx.shape[1])
  y_override, valid = _check_extras(idx, y_override, valid)
  if query_chunk is not None:
    return V.poison(
      _blocks(reader, data, idx, ks, y_override, valid, mesh, query_chunk), ok
    )
  # Materialise the defaults: one compiled program per reader, whichever extras
  # are given.
  if y_override is None:
    y_override = _gather_y(data.pool_y, idx)
  if valid is None:
    valid = jnp.ones(idx.shape, bool)
  if mesh is None:
    return V.poison(_sweep(reader, data, idx, ks, y_override, valid), ok)
  if not isinstance(mesh, jax.sharding.Mesh):
    raise TypeError(
      f"mesh must be a jax.sharding.Mesh or None, got {type(mesh).__name__}"
    )
  axis = mesh.axis_names[0]
  n = mesh.shape[axis]
  if idx.shape[0] % n:
    raise ValueError(
      f"the number of queries ({idx.shape[0]}) must be divisible by mesh axis "
      f"{axis!r} ({n})"
    )
  f = _sharded_sweep(reader, ks, mesh, axis)
  q, rep = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P())
  args = jax.device_put((data.q_x, idx, y_override, valid), q)
  args += jax.device_put((data.pool_x, data.pool_y, data.w0), rep)
  out = f(*args)
  return V.poison(out, ok)


def predict_at_budget(
  reader: Reader,
  data: ICLData,
  idx: jax.Array,
  k_per_query: jax.Array,
  *,
  y_override: jax.Array | None = None,
  valid: jax.Array | None = None,
) -> jax.Array:
  """Predictions with a per-query budget (the selected-context controller's
  output).

  Args:
    reader: a hashable reader (see :func:`k_sweep`).
    data: the :class:`ICLData`.
    idx: int [Q, K] retrieved indices.
    k_per_query: int [Q] budgets in ``[0, K]`` (0: the reader sees no
      demonstration).
    y_override, valid: as in :func:`k_sweep`.

  Returns:
    float [Q].

  Under jit: an index outside ``[0, P)`` or a budget outside ``[0, K]`` poisons
  the result.
  """
  _check_reader(reader)
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  k_q = V.check_array(
    k_per_query, "k_per_query", shape=(idx.shape[0],), dtype=("int")
  )
  ok2 = V.check_values(
    (k_q >= 0) & (k_q <= idx.shape[1]),
    f"k_per_query must be in [0, {idx.shape[1]}]",
  )
  y_override, valid = _check_extras(idx, y_override, valid)
  return V.poison(
    _at_budget(reader, data, idx, k_q, y_override, valid), ok & ok2
  )


@functools.partial(jax.jit, static_argnames=("tol", "task"))
def _metrics(pred, y, tol, task):
  if task == "classification":
    correct = jnp.where(pred >= 0, 1.0, -1.0) == y
  else:
    correct = jnp.abs(pred - y) < tol
  return correct, ((pred - y) ** 2)


def answer_metrics(
  pred: jax.Array, y: jax.Array, *, tol: float = 0.5, task: str = "regression"
) -> tuple[jax.Array, jax.Array]:
  """Per-query answer correctness and squared error.

  Regression: ``correct = 1[|yhat - y| < tol]``; classification: ``correct =
  1[sign(yhat) = y]`` with ``sign(0) = +1`` and labels in {-1, +1}.

  Args:
    pred: float [..., Q] predictions (e.g. [n_k, Q] from :func:`k_sweep`).
    y: float [Q] targets.
    tol: regression tolerance (static, > 0).
    task: ``'regression'`` or ``'classification'``.

  Returns:
    ``(correct bool [..., Q], squared_error float [..., Q])``; average over the
    last axis for accuracy and MSE.
  """
  pred = V.check_array(pred, "pred", ndim=(1, 2), dtype="float")
  y = V.check_array(y, "y", shape=(pred.shape[-1],), dtype="real")
  tol = V.check_float(tol, "tol", min_value=0.0, min_inclusive=False)
  if task not in ("regression", "classification"):
    raise ValueError(
      f"task must be 'regression' or 'classification', got {task!r}"
    )
  return _metrics(pred, y.astype(pred.dtype), tol, task)
