"""Controls (oracle, shuffled, random context), the regime rule and the
threshold controller."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._data import ICLData, check_data
from jaxpapers.evidence_coverage._retrieval import check_idx, check_ks

REGIMES = (
  "interference-limited",
  "coverage-limited",
  "saturation-limited",
  "unclassified",
)


def _check_key(key, name="key"):
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError(
      f"{name} must be a typed PRNG key from jax.random.key(seed)"
    )
  if key.shape != ():
    raise ValueError(
      f"{name} must be a single key (shape ()), got shape {key.shape}"
    )
  return key


@functools.partial(jax.jit, static_argnames=("k_max",))
def _oracle(q_feat, pool_feat, pool_task, q_task, k_max):
  qn = q_feat / jnp.maximum(
    jnp.linalg.norm(q_feat, axis=-1, keepdims=True), 1e-30
  )
  pn = pool_feat / jnp.maximum(
    jnp.linalg.norm(pool_feat, axis=-1, keepdims=True), 1e-30
  )
  rel = pool_task[None, :] == q_task[:, None]
  s = jnp.where(rel, qn @ pn.T, -jnp.inf)
  sims, idx = jax.lax.top_k(s, k_max)
  return idx.astype(jnp.int32), jnp.isfinite(sims)


def oracle_context(
  q_feat: jax.Array, pool_feat: jax.Array, data: ICLData, k_max: int
) -> tuple[jax.Array, jax.Array]:
  """Oracle context: the top-k by cosine similarity among ``Rel(q)`` only.

  Args:
    q_feat: float [Q, f] query features.
    pool_feat: float [P, f] pool features.
    data: the :class:`ICLData` (cluster ids define ``Rel(q)``).
    k_max: largest budget (static).

  Returns:
    ``(idx int32 [Q, k_max], valid bool [Q, k_max])``; ``valid`` is False past
    ``|Rel(q)|`` (pass it to :func:`k_sweep` so that those slots are never shown
    to the reader).
  """
  data = check_data(data)
  q = V.check_array(
    q_feat, "q_feat", shape=(data.q_x.shape[0], None), dtype=("float")
  )
  p = V.check_array(
    pool_feat,
    "pool_feat",
    shape=(data.pool_x.shape[0], q.shape[1]),
    dtype=("float"),
  )
  k_max = V.check_int(k_max, "k_max", min_value=1, max_value=p.shape[0])
  return _oracle(q, p, data.pool_task, data.q_task, k_max)


@functools.partial(jax.jit, static_argnames=("mode",))
def _shuffle(key, idx, pool_y, mode):
  if mode == "labels":
    u = jax.random.uniform(key, idx.shape)
    perm = jnp.argsort(u, axis=1)
    return idx, jnp.take_along_axis(pool_y[idx], perm, axis=1)
  # another query's list: a derangement-free random permutation of the query
  # axis, shifted by one so that no query keeps its own list
  perm = jax.random.permutation(key, idx.shape[0])
  other = jnp.zeros_like(perm).at[perm].set(jnp.roll(perm, 1))
  new = idx[other]
  return new, pool_y[new]


def shuffled_context(
  key: jax.Array, idx: jax.Array, data: ICLData, *, mode: str = "labels"
) -> tuple[jax.Array, jax.Array]:
  """Shuffled-context controls that keep the context's form and break its
  evidence.

  * ``mode='labels'``: labels permuted within each query's retrieved list
    (breaks the x-y pairing, keeps the inputs and the label marginal);
  * ``mode='other_query'``: every query gets another query's retrieved list (a
    random cyclic reassignment: no query keeps its own list when Q > 1).

  Args:
    key: typed PRNG key.
    idx: int [Q, K] retrieved indices.
    data: the :class:`ICLData`.
    mode: ``'labels'`` or ``'other_query'``.

  Returns:
    ``(idx' int [Q, K], y' float [Q, K])``: pass ``y'`` as ``y_override`` to
    :func:`k_sweep`.

  Under jit: an index outside ``[0, P)`` poisons ``y'`` (NaN).
  """
  key = _check_key(key)
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  if mode not in ("labels", "other_query"):
    raise ValueError(f"mode must be 'labels' or 'other_query', got {mode!r}")
  new, y = _shuffle(key, idx, data.pool_y, mode)
  return new, V.poison(y, ok)


@functools.partial(jax.jit, static_argnames=("n_queries", "n_pool", "k_max"))
def _random(key, n_queries, n_pool, k_max):
  u = jax.random.uniform(key, (n_queries, n_pool))
  return jax.lax.top_k(u, k_max)[1].astype(jnp.int32)


def random_context(key: jax.Array, data: ICLData, k_max: int) -> jax.Array:
  """Random context: ``k_max`` distinct pool items per query, uniformly at
  random.

  Args:
    key: typed PRNG key.
    data: the :class:`ICLData`.
    k_max: list length (static, ``<= P``).

  Returns:
    int32 [Q, k_max] pool indices.
  """
  key = _check_key(key)
  data = check_data(data)
  P = data.pool_x.shape[0]
  k_max = V.check_int(k_max, "k_max", min_value=1, max_value=P)
  return _random(key, data.q_x.shape[0], P, k_max)


def control_contexts(
  key: jax.Array, data: ICLData, idx: jax.Array, k_max: int
) -> dict[str, dict[str, jax.Array]]:
  """The retrieved context and its four controls, as keyword arguments of
  :func:`k_sweep`.

  Args:
    key: typed PRNG key; ``fold_in(key, 0/1/2)`` draw the shuffled-labels,
      other-query and random controls.
    data: the :class:`ICLData`.
    idx: int [Q, K] retrieved indices (:func:`dense_topk`).
    k_max: the largest budget (the oracle's and the random control's list
      length).

  Returns:
    ``{"retrieved": {"idx"}, "oracle": {"idx", "valid"}, "shuffled_labels":
    {"idx", "y_override"}, "other_query": {"idx", "y_override"}, "random":
    {"idx"}}``: per context its [Q, K] or [Q, k_max] indices and what
    :func:`k_sweep` needs with them (:func:`oracle_context` on the episode's
    inputs, :func:`shuffled_context` in both modes, :func:`random_context`).
  """
  key = _check_key(key)
  oidx, valid = oracle_context(data.q_x, data.pool_x, data, k_max)
  i_lab, y_lab = shuffled_context(
    jax.random.fold_in(key, 0), idx, data, mode=("labels")
  )
  i_oth, y_oth = shuffled_context(
    jax.random.fold_in(key, 1), idx, data, mode=("other_query")
  )
  return {
    "retrieved": dict(idx=idx),
    "oracle": dict(idx=oidx, valid=valid),
    "shuffled_labels": dict(idx=i_lab, y_override=y_lab),
    "other_query": dict(idx=i_oth, y_override=y_oth),
    "random": dict(idx=random_context(jax.random.fold_in(key, 2), data, k_max)),
  }


def _curve(a, name, n):
  a = np.asarray(a, np.float64)
  if a.shape != (n,):
    raise ValueError(
      f"{name} must have shape ({n},) (one accuracy per k), got {a.shape}"
    )
  if not np.all(np.isfinite(a)):
    raise ValueError(f"{name} must be finite (no NaN or inf)")
  return a


def classify_regime(
  acc_ret: npt.ArrayLike,
  acc_orc: npt.ArrayLike,
  ks: Sequence[int],
  *,
  tol: float = 0.01,
  ceiling: float | None = None,
) -> str:
  """The regime of a top-k accuracy curve, against its oracle curve (host-side
  rule).

  With tolerance ``delta = tol`` (accuracy units), checked in this order:

  * ``'interference-limited'``: ``a_ret(k_max) < max_k a_ret - delta`` while
    ``a_orc(k_max) >= max_k a_orc - delta`` (retrieved context hurts, relevant
    context does not);
  * ``'coverage-limited'``: ``a_ret`` is still rising at ``k_max``
    (``a_ret(k_max) > a_ret(k_prev) + delta``);
  * ``'saturation-limited'``: both curves plateau (their last three points
    within ``delta``) and, when ``ceiling`` is given, ``max a_ret < ceiling -
    delta``;
  * ``'unclassified'`` otherwise.

  Args:
    acc_ret: float [len(ks)] accuracy with retrieved context.
    acc_orc: float [len(ks)] accuracy with oracle context.
    ks: the budgets (strictly increasing, at least 3).
    tol: delta (>= 0).
    ceiling: optional accuracy ceiling (e.g. ridge on the full cluster).

  Returns:
    one of ``REGIMES``.
  """
  ks = check_ks(ks)
  if len(ks) < 3:
    raise ValueError(
      f"ks must hold at least 3 budgets for the regime rule, got {len(ks)}"
    )
  a = _curve(acc_ret, "acc_ret", len(ks))
  o = _curve(acc_orc, "acc_orc", len(ks))
  tol = V.check_float(tol, "tol", min_value=0.0)
  if ceiling is not None:
    ceiling = V.check_float(ceiling, "ceiling")
  if a[-1] < a.max() - tol and o[-1] >= o.max() - tol:
    return "interference-limited"
  if a[-1] > a[-2] + tol:
    return "coverage-limited"
  flat = lambda c: np.ptp(c[-3:]) <= tol
  if flat(a) and flat(o) and (ceiling is None or a.max() < ceiling - tol):
    return "saturation-limited"
  return "unclassified"


def threshold_controller(
  sims: jax.Array, tau: float, ks: Sequence[int]
) -> jax.Array:
  """Calibrated selected-context controller: per-query budget from a similarity
  threshold.

  ``k(q) = max{k in ks : sims[q, k-1] >= tau}`` (the largest grid budget whose
  last item still scores at least tau), and ``ks[0]`` when none does. Reported
  only as a probe of the diagnosis.

  Args:
    sims: float [Q, K] similarities of the retrieved list, descending per row.
    tau: the threshold (static float).
    ks: strictly increasing budgets ``<= K``.

  Returns:
    int32 [Q] the index into ``ks`` of each query's budget.

  Under jit: NaN similarities poison nothing (integer output) but compare False
  (smallest k).
  """
  s = V.check_array(sims, "sims", ndim=2, dtype="float", nonempty=True)
  ks = check_ks(ks, k_max=s.shape[1])
  tau = V.check_float(tau, "tau", allow_inf=True)
  return _controller(s, jnp.float32(tau), ks)


@functools.partial(jax.jit, static_argnames=("ks",))
def _controller(s, tau, ks):
  at = s[:, jnp.asarray(ks) - 1] >= tau  # [Q, n_k]; prefixes: monotone in k
  return jnp.maximum(at.sum(-1) - 1, 0).astype(jnp.int32)


def calibrate_threshold(
  sims_dev: npt.ArrayLike,
  correct_dev: npt.ArrayLike,
  ks: Sequence[int],
  grid: npt.ArrayLike,
) -> float:
  """Chooses the controller's tau on a dev split (host-side).

  ``tau* = argmax_{tau in grid} mean_q correct_dev[k_index(q; tau), q]`` with
  ``k_index`` from :func:`threshold_controller`; ties go to the first grid
  value.

  Args:
    sims_dev: float [Q, K] dev similarities (descending per row).
    correct_dev: [len(ks), Q] per-budget correctness (bool or float) on the dev
      queries.
    ks: the budgets.
    grid: 1-D sequence of candidate thresholds.

  Returns:
    tau* (a float from ``grid``).
  """
  s = np.asarray(sims_dev, np.float64)
  if s.ndim != 2 or s.size == 0:
    raise ValueError(f"sims_dev must have shape [Q, K], got {s.shape}")
  ks = check_ks(ks, k_max=s.shape[1])
  c = np.asarray(correct_dev, np.float64)
  if c.shape != (len(ks), s.shape[0]):
    raise ValueError(
      f"correct_dev must have shape ({len(ks)}, {s.shape[0]}), got {c.shape}"
    )
  g = np.asarray(grid, np.float64)
  if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
    raise ValueError(
      "grid must be a non-empty 1-D sequence of finite thresholds"
    )
  at = s[:, np.asarray(ks) - 1]  # [Q, n_k]
  best, tau = -1.0, float(g[0])
  for t in g:
    j = np.maximum((at >= t).sum(-1) - 1, 0)
    acc = c[j, np.arange(s.shape[0])].mean()
    if acc > best:
      best, tau = acc, float(t)
  return tau
