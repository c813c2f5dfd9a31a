"""The best margin of a relevance matrix: per-query max-margin directions and
``m^rd(inf, A)``.

* :func:`max_margin_queries`: for fixed documents, each query's best unit
  direction (a hard-margin SVM through the origin), solved as a min-norm point
  in a convex hull with FISTA, with a per-row duality certificate.
* :func:`sdp_max_margin`: ``m^rd(inf, A)`` as a semidefinite program over the
  Gram matrix of the ``N + n`` unit vectors; a Burer–Monteiro factorisation
  gives a feasible solution (certified lower bound) and a parametrised dual
  gives a certified upper bound.
* :func:`k_sparse_optimal_margin`: the exact ``m^rd(inf, A)`` for the
  all-k-subsets matrix, from the symmetry-reduced dual (a one-dimensional convex
  problem with a closed-form spectrum) [derived].

References:
  arXiv:2605.23556 (``m^rd(d, A)``); Burer & Monteiro (2003) for the low-rank
  SDP factorisation; Forster (2002) for the spectral bound that the dual
  generalises.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike
from scipy import optimize as sp_optimize

from jaxpapers.margins import _validation as val

# ------------------------------------------------------------------------------
# Per-query hard margin with fixed documents.
# ------------------------------------------------------------------------------


def _project_simplex(v, iters: int = 30):
  """Euclidean projection of each row of ``v [B, n]`` onto the probability
  simplex.

  The threshold ``theta`` with ``sum_i max(v_i - theta, 0) = 1`` is bracketed by
  bisection (elementwise work only; sorting is slow on CPU), then made exact
  from the identified support: ``theta = (sum_{v_i > theta} v_i - 1) / |{v_i >
  theta}|``.
  """
  lo = jnp.min(v, axis=-1, keepdims=True) - 1.0  # sum > 1 here
  hi = jnp.max(v, axis=-1, keepdims=True)  # sum = 0 here

  def body(_, lohi):
    lo, hi = lohi
    mid = 0.5 * (lo + hi)
    big = jnp.sum(jnp.maximum(v - mid, 0.0), axis=-1, keepdims=True) > 1.0
    return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

  lo, hi = jax.lax.fori_loop(0, iters, body, (lo, hi))
  support = v > lo
  theta = (
    jnp.sum(jnp.where(support, v, 0.0), axis=-1, keepdims=True) - 1.0
  ) / jnp.maximum(jnp.sum(support, axis=-1, keepdims=True), 1)
  return jnp.maximum(v - theta, 0.0)


def _row_min_norm(V, y, L, steps):
  r"""FISTA for one row: ``min_{alpha in simplex} || sum_i alpha_i y_i V_i ||``;
  returns the point ``z``.

  The objective ``f(alpha) = ||(alpha * y) V||^2 / 2`` has gradient
  ``y * (V z)`` and Lipschitz constant ``L = ||V||_2^2`` (for signs ``y``), so
  ``alpha <- P(beta - grad / L)`` with Nesterov momentum converges as
  ``O(L / t^2)`` in the objective.
  """
  n = V.shape[0]

  def grad(alpha):
    return y * (V @ ((alpha * y) @ V))

  def body(_, carry):
    alpha, beta, t = carry
    new_alpha = _project_simplex(beta - grad(beta) / L)
    t_new = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
    beta = new_alpha + ((t - 1.0) / t_new) * (new_alpha - alpha)
    return new_alpha, beta, t_new

  alpha0 = jnp.full((n,), 1.0 / n, V.dtype)
  alpha, _, _ = jax.lax.fori_loop(
    0, steps, body, (alpha0, alpha0, jnp.ones((), V.dtype))
  )
  return (alpha * y) @ V


def _min_norm_rows(V, Y, steps):
  """:func:`_row_min_norm` vmapped over the rows of ``Y [N, n]``; returns
  ``z [N, d]``."""
  # ||diag(y) V||_2 = ||V||_2 for y in {+-1}
  L = jnp.linalg.norm(V, ord=2) ** 2 + 1e-12
  return jax.vmap(_row_min_norm, in_axes=(None, 0, None, None))(V, Y, L, steps)


@functools.partial(jax.jit, static_argnames=("steps",))
def _min_norm_fista(V, Y, steps):
  """min_{alpha in simplex} || sum_i alpha_i Y_ji V_i || for every row j (FISTA, vmapped)."""
  return _min_norm_rows(V, Y, steps)


def _row_margins(U, V, Y):
  return jnp.min(Y * (U @ V.T), axis=1)


@functools.partial(jax.jit, static_argnames=("steps",))
def _max_margin_queries(V, A, init, steps):
  Y = jnp.where(A.astype(bool), 1.0, -1.0).astype(V.dtype)
  d = V.shape[1]
  # zero columns change nothing; fewer compiles
  d_pad = 1 << max(d - 1, 0).bit_length()
  z = _min_norm_fista(jnp.pad(V, ((0, 0), (0, d_pad - d))), Y, steps)[:, :d]
  upper = jnp.linalg.norm(z, axis=1)
  # Rows whose signed hull contains the origin (e.g. a relevant and an
  # irrelevant copy of the same document) have z = 0: no direction separates
  # them; use e_1 there.
  degenerate = upper < 1e-7
  e1 = jnp.zeros_like(z).at[:, 0].set(1.0)
  U = jnp.where(degenerate[:, None], e1, val.safe_normalize_rows(z))
  m = _row_margins(U, V, Y)
  if init is not None:
    U0 = val.normalize_rows(init)
    m0 = _row_margins(U0, V, Y)
    better = m0 > m
    U = jnp.where(better[:, None], U0, U)
    m = jnp.maximum(m, m0)
  return U, m, upper


class QueryResult(NamedTuple):
  """Per-query max-margin directions for fixed documents.

  Attributes:
    U: ``[N, d]`` unit query embeddings (the best found per row).
    row_margin: ``[N]`` achieved ``min_i Y_ji <U_j, V_i>`` (a certified lower
      bound).
    row_upper: ``[N]`` certified upper bound ``||sum_i alpha_i Y_ji V_i||`` on
      the best achievable row margin (meaningful when positive).
  """

  U: jax.Array
  row_margin: jax.Array
  row_upper: jax.Array


def max_margin_queries(
  V: ArrayLike, A: ArrayLike, *, steps: int = 500, init: ArrayLike | None = None
) -> QueryResult:
  r"""Best unit query for each row of ``A`` with the documents ``V`` held fixed.

  Solves, for every row j, the hard-margin problem through the origin

  .. math:: \max_{\|u\| \le 1} \min_i Y_{ji} \langle u, V_i \rangle
            = \min_{\alpha \in \Delta_n} \big\| \textstyle\sum_i \alpha_i Y_{ji} V_i \big\|

  (when positive; the right side is the distance from the origin to the convex
  hull of the signed documents, minimised with FISTA on the simplex). The
  direction ``u = z / ||z||`` of the minimiser ``z`` is a feasible query, and
  ``||z||`` for any ``alpha`` is an upper bound, so the gap is certified per
  row. When ``init`` is given each row keeps whichever of ``init`` and the FISTA
  direction has the larger margin.

  Args:
    V: ``[n, d]`` unit document embeddings.
    A: ``[N, n]`` binary relevance.
    steps: FISTA iterations.
    init: optional ``[N, d]`` queries to improve on (rows normalised).

  Returns:
    :class:`QueryResult`. A non-binary ``A`` or non-unit ``V`` raises
    ``ValueError`` eagerly and gives NaN fields under ``jax.jit``
    (``checkify.checkify`` surfaces it).
  """
  V = jnp.asarray(V)
  A = jnp.asarray(A)
  if V.ndim != 2 or A.ndim != 2 or A.shape[1] != V.shape[0]:
    raise ValueError(
      f"need V [n, d] and A [N, n] with matching n; got V {V.shape}, "
      f"A {A.shape}."
    )
  ok = val.both(val.check_binary(A), val.check_unit_rows(V, name="V"))
  if not isinstance(steps, (int, np.integer)) or steps <= 0:
    raise ValueError(f"steps must be a positive int, got {steps!r}.")
  if init is not None:
    init = jnp.asarray(init, V.dtype)
    if init.shape != (A.shape[0], V.shape[1]):
      raise ValueError(
        f"init must have shape {(A.shape[0], V.shape[1])}, got {init.shape}."
      )
  U, m, upper = _max_margin_queries(V, A, init, int(steps))
  return val.poison(QueryResult(U=U, row_margin=m, row_upper=upper), ok)


# ------------------------------------------------------------------------------
# m^rd(inf, A): Burer–Monteiro primal and a parametrised dual.
# ------------------------------------------------------------------------------


class MaxMarginResult(NamedTuple):
  """Bracket on the unrestricted-dimension optimum ``m^rd(inf, A)``.

  Attributes:
    lower: margin ``m_0`` of the returned embeddings (achievable, so a lower
      bound).
    upper: dual certificate (an upper bound valid for every dimension).
    U: ``[N, r]`` query embeddings achieving ``lower``.
    V: ``[n, r]`` document embeddings achieving ``lower``.
  """

  lower: float
  upper: float
  U: jax.Array
  V: jax.Array


def dual_upper_bound(
  A: ArrayLike, lam: ArrayLike, d_query: ArrayLike, d_doc: ArrayLike
) -> float:
  r"""Certified upper bound on ``m^rd(inf, A)`` from any dual point (float64
  numpy).

  The SDP ``max m`` s.t. ``G >= 0``, ``diag G = 1``, ``Y_ji G_{q_j, v_i} >= m``
  has the weak dual: for ``lambda >= 0`` with ``sum lambda = 1`` and positive
  weights ``d = (d_query, d_doc)``,

  .. math:: m^{rd}(\infty, A) \le \sigma_{\max}\!\big(\tfrac12 D_q^{-1} (Y \odot \lambda) D_v^{-1}\big)
            \cdot \big(\textstyle\sum_j d_{q,j}^2 + \sum_i d_{v,i}^2\big).

  (``diag(mu) >= C(lambda)`` with ``mu = s d^2``.) Uniform ``lambda`` with
  ``d_query = (n/N)^{1/4}``, ``d_doc = (N/n)^{1/4}`` gives Forster's bound
  ``||Y||_2 / sqrt(N n)``. ``lam`` is renormalised to sum to one.

  Args:
    A: ``[N, n]`` binary relevance.
    lam: ``[N, n]`` finite dual weights with a nonzero sum (absolute values are
      taken).
    d_query: ``[N]`` positive query-side weights.
    d_doc: ``[n]`` positive document-side weights.

  Returns:
    The bound, a Python float (valid for every embedding dimension).
  """
  A = np.asarray(A)
  if A.ndim != 2:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n], got shape {A.shape}."
    )
  val.check_binary(jnp.asarray(A))
  A = A.astype(bool)
  lam = np.abs(np.asarray(lam, np.float64))
  if lam.shape != A.shape or not np.all(np.isfinite(lam)) or not lam.sum() > 0:
    raise ValueError(
      f"lam must be finite [N, n] = {A.shape} weights with a nonzero sum, "
      f"got shape {lam.shape}."
    )
  lam = lam / lam.sum()
  dq = np.asarray(d_query, np.float64)
  dv = np.asarray(d_doc, np.float64)
  if dq.shape != (A.shape[0],) or dv.shape != (A.shape[1],):
    raise ValueError(
      f"d_query and d_doc must have shapes [N] = [{A.shape[0]}] and [n] = "
      f"[{A.shape[1]}], got {dq.shape} and {dv.shape}."
    )
  if not (
    (dq > 0).all()
    and (dv > 0).all()
    and np.isfinite(dq).all()
    and np.isfinite(dv).all()
  ):
    raise ValueError("d_query and d_doc must be positive.")
  Y = np.where(A, 1.0, -1.0)
  B = 0.5 * (Y * lam) / dq[:, None] / dv[None, :]
  return float(np.linalg.norm(B, 2) * (np.sum(dq**2) + np.sum(dv**2)))


def _softmin(x, beta):
  return -jax.nn.logsumexp(-beta * x) / beta


@functools.partial(jax.jit, static_argnames=("N", "steps"))
def _bm_primal(W0, Y, N, steps, lr, beta0, beta1):
  tx = optax.adam(lr)

  def measured(W):
    W = val.safe_normalize_rows(W)
    return jnp.min(Y * (W[:N] @ W[N:].T)), W

  def loss_fn(W, beta):
    Wn = val.safe_normalize_rows(W)
    return -_softmin(Y * (Wn[:N] @ Wn[N:].T), beta)

  def body(carry, t):
    W, opt, best_m, best_W = carry
    beta = beta0 * (beta1 / beta0) ** (t / steps)
    g = jax.grad(loss_fn)(W, beta)
    upd, opt = tx.update(g, opt, W)
    W = optax.apply_updates(W, upd)
    m, Wn = measured(W)
    better = m > best_m
    return (
      W,
      opt,
      jnp.where(better, m, best_m),
      jnp.where(better, Wn, best_W),
    ), None

  m0, Wn0 = measured(W0)
  init = (W0, tx.init(W0), m0, Wn0)
  (_, _, best_m, best_W), _ = jax.lax.scan(
    body, init, jnp.arange(steps, dtype=jnp.float32)
  )
  return best_m, best_W


@functools.partial(jax.jit, static_argnames=("steps",))
def _dual_descent(Y, steps, lr):
  N, n = Y.shape

  def bound(params):
    logits, logd = params
    lam = jax.nn.softmax(logits.reshape(-1)).reshape(N, n)
    dq, dv = jnp.exp(logd[:N]), jnp.exp(logd[N:])
    B = 0.5 * (Y * lam) / dq[:, None] / dv[None, :]
    return jnp.linalg.norm(B, ord=2) * (jnp.sum(dq**2) + jnp.sum(dv**2))

  tx = optax.adam(lr)
  params0 = (jnp.zeros((N, n), jnp.float32), jnp.zeros((N + n,), jnp.float32))

  def body(carry, _):
    params, opt, best, best_params = carry
    val_, g = jax.value_and_grad(bound)(params)
    better = val_ < best
    best_params = jax.tree.map(
      lambda a, b: jnp.where(better, a, b), params, best_params
    )
    best = jnp.minimum(val_, best)
    upd, opt = tx.update(g, opt, params)
    return (optax.apply_updates(params, upd), opt, best, best_params), None

  init = (params0, tx.init(params0), bound(params0), params0)
  (_, _, _, best_params), _ = jax.lax.scan(body, init, None, length=steps)
  logits, logd = best_params
  return jax.nn.softmax(logits.reshape(-1)).reshape(N, n), jnp.exp(logd)


def sdp_max_margin(
  A: ArrayLike,
  *,
  key: jax.Array,
  steps: int = 3000,
  dual_steps: int = 2000,
  lr: float = 0.02,
  beta: tuple[float, float] = (10.0, 400.0),
) -> MaxMarginResult:
  r"""Brackets ``m^rd(inf, A)``, the best margin without a dimension limit.

  .. math:: m^{rd}(\infty, A) = \max\{ m : G \succeq 0,\ G_{aa} = 1,\
            Y_{ji} G_{q_j, v_i} \ge m \}

  over the ``(N+n) x (N+n)`` Gram matrix of all unit embeddings. Lower bound:
  Burer–Monteiro, ``G = W W^T`` with ``W`` of full rank ``N + n`` and unit rows,
  maximising the soft-min ``-(1/beta) logsumexp(-beta Y * S)`` with Adam while
  ``beta`` anneals geometrically; the best measured ``m_0`` along the path is
  kept, so ``lower`` is exactly the margin of the returned ``(U, V)``. Upper
  bound: :func:`dual_upper_bound` at the dual point found by Adam on
  its (nonsmooth) objective. Meant for small instances (``N + n`` up to a few
  hundred).

  Args:
    A: ``[N, n]`` binary relevance.
    key: ``jax.random.key`` for the initialisation.
    steps: primal Adam steps.
    dual_steps: dual Adam steps.
    lr: Adam learning rate (both problems).
    beta: (start, end) soft-min inverse temperature.

  Returns:
    :class:`MaxMarginResult` with ``lower <= m^rd(inf, A) <= upper``.

  Not jittable as a whole, by design: ``lower`` is re-measured in float64 and
  ``upper`` is a float64 eigenvalue bound on the host, so both are exact
  certificates (Python floats). The initialisation is a pure JAX draw from
  ``key`` and the two descents are jitted programs.
  """
  A = np.asarray(A)
  if A.ndim != 2:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n], got shape {A.shape}."
    )
  val.check_binary(jnp.asarray(A))
  A = A.astype(bool)
  N, n = A.shape
  if N + n > 2000:
    raise ValueError(
      "sdp_max_margin is for small instances (N + n <= 2000), "
      f"got N + n = {N + n}."
    )
  if isinstance(lr, bool) or not isinstance(
    lr, (int, float, np.floating, np.integer)
  ):
    raise TypeError(
      f"lr must be a real number, got {type(lr).__name__} {lr!r}."
    )
  if not (math.isfinite(lr) and lr > 0):
    raise ValueError(
      f"lr must be a finite number > 0 (the Adam learning rate), got {lr!r}."
    )
  for name, v in (("steps", steps), ("dual_steps", dual_steps)):
    # zero steps would scan nothing and return the random start as the "best"
    # bound
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1 (Adam steps), got {v!r}.")
  Y = jnp.where(jnp.asarray(A), 1.0, -1.0).astype(jnp.float32)
  # full rank N + n (a.s.)
  W0 = jax.random.normal(key, (N + n, N + n), jnp.float32)
  best_m, W = _bm_primal(
    W0, Y, N, int(steps), lr, float(beta[0]), float(beta[1])
  )
  U, V = W[:N], W[N:]
  # Re-measure in float64 so the certificate is exactly the returned embeddings'
  # margin.
  lower = float(
    np.min(
      np.where(A, 1.0, -1.0)
      * (np.asarray(U, np.float64) @ np.asarray(V, np.float64).T)
      / np.linalg.norm(np.asarray(U, np.float64), axis=1)[:, None]
      / np.linalg.norm(np.asarray(V, np.float64), axis=1)[None, :]
    )
  )
  lam, d = _dual_descent(Y, int(dual_steps), lr * 2.5)
  upper = dual_upper_bound(A, lam, np.asarray(d[:N]), np.asarray(d[N:]))
  forster = dual_upper_bound(
    A, np.ones((N, n)), np.full(N, (n / N) ** 0.25), np.full(n, (N / n) ** 0.25)
  )
  upper = min(upper, forster)
  return MaxMarginResult(lower=lower, upper=upper, U=U, V=V)


def _k_sparse_dual_value(p, n, k):
  """sqrt(N n) * sigma_max(alpha A - beta (J - A)) for the all-k-subsets A,
  closed form."""
  N = math.comb(n, k)
  r = math.comb(n - 1, k - 1)
  s = math.comb(n - 2, k - 2) if k >= 2 else 0
  alpha = p / (N * k)
  beta = (1.0 - p) / (N * (n - k)) if n > k else 0.0
  c = alpha + beta
  e_perp = c * c * (r - s) if n > 1 else 0.0
  e_one = c * c * (r - s + s * n) - 2.0 * c * beta * r * n + beta * beta * N * n
  return math.sqrt(N * n) * math.sqrt(max(e_perp, e_one, 0.0))


def k_sparse_optimal_margin(n: int, k: int) -> float:
  r"""Exact ``m^rd(inf, A)`` for the all-k-subsets matrix ``A =
  k_sparse_relevance(n, k)`` [derived].

  The symmetric group on documents acts on the SDP and its dual; averaging a
  dual optimum over the group keeps it optimal, so one may take ``lambda``
  uniform on the positive entries (total mass ``p``) and on the negative ones
  (``1 - p``) and the weights ``d`` uniform per side. Then the dual value is
  ``sqrt(N n) * sigma_max(p/(N k) A - (1-p)/(N (n-k)) (J - A))``, and ``M^T M``
  only has the eigenvalues on ``1`` and on ``1^perp`` (from
  ``A^T A = (r - s) I + s J`` with ``r = C(n-1, k-1)``, ``s = C(n-2, k-2)``).
  Strong duality (Slater) makes the minimum over ``p in [0, 1]`` equal to
  ``m^rd(inf, A)``; it is a convex 1-D problem solved with scipy to ~1e-10. For
  ``k = 1`` the value is ``n / (3n - 4)`` (-> 1/3). Does not build A, so any
  ``n`` works. Theory: ``Theta(k^{-1/2})``.

  Args:
    n: number of documents.
    k: relevant documents per query, ``1 <= k <= n``.

  Returns:
    ``m^rd(inf, A)`` as a Python float (1.0 for ``k = n``).
  """
  if (
    not isinstance(n, (int, np.integer))
    or not isinstance(k, (int, np.integer))
    or not 1 <= k <= n
  ):
    raise ValueError(f"need ints 1 <= k <= n, got n={n!r}, k={k!r}.")
  if k == n:
    return 1.0
  res = sp_optimize.minimize_scalar(
    lambda p: _k_sparse_dual_value(p, n, k),
    bounds=(0.0, 1.0),
    method="bounded",
    options={"xatol": 1e-12},
  )
  return float(res.fun)
