"""Explicit constructions of large-margin embeddings, each with a certificate.

* :func:`orthogonal_construction`: all k-subsets in ``d = n + 1`` with margin
  exactly ``1 / (2 sqrt(k) + 1)`` [derived].
* :func:`cs_construction`: random-sign (RIP) documents in ``d`` dimensions with
  either sum queries (coherence bound) or per-query max-margin queries
  [reconstruction of the paper's compressed-sensing construction; the exact one
  is in its appendix].
* :func:`jl_project` / :func:`dimension_reduction_construction`: the main
  theorem's route, a random Gaussian projection of a high-dimensional
  (near-)optimal solution, optionally re-solving the queries for the projected
  documents [reconstruction]; guarantee :func:`jl_bound` (``log(N n)``).
* :func:`project_documents`: the documents-only reduction, every query re-solved
  for the projected documents (pure JAX); guarantee :func:`documents_only_bound`
  (``log n``, whatever ``N``) [derived from Gordon's escape theorem].

References:
  arXiv:2605.23556 (main theorem, Theorem 1.5, compressed-sensing
  constructions).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike
from scipy import optimize as sp_optimize

from jaxpapers.margins import _optimum, _relevance
from jaxpapers.margins import _validation as val


class Construction(NamedTuple):
  """Embeddings with a certificate.

  Attributes:
    U: ``[N, d]`` unit query embeddings.
    V: ``[n, d]`` unit document embeddings.
    certificate: the measured paper margin ``m_0(U, V, A)`` (float64 on the
      host).
    bound: the construction's stated guarantee, a lower bound on ``certificate``
      computable from the instance (``-1.0`` when the guarantee is vacuous).
  """

  U: jax.Array
  V: jax.Array
  certificate: float
  bound: float


def _m0_float64(U, V, A) -> float:
  U = np.asarray(U, np.float64)
  V = np.asarray(V, np.float64)
  U = U / np.linalg.norm(U, axis=1, keepdims=True)
  V = V / np.linalg.norm(V, axis=1, keepdims=True)
  return float(np.min(np.where(np.asarray(A, bool), 1.0, -1.0) * (U @ V.T)))


def orthogonal_construction(
  n: int, k: int, *, A: ArrayLike | None = None
) -> Construction:
  r"""All k-subsets of n documents with margin ``1 / (2 sqrt(k) + 1)`` in ``d = n + 1`` [derived].

  Documents ``V_i = (cos(phi) e_i, sin(phi))``, queries ``U_S = (sin(theta) 1_S
  / sqrt(k), -cos(theta))`` with ``theta + phi = pi / 2`` and
  ``cos^2(theta) = m``. Then ``<U_S, V_i> = sin^2(theta)/sqrt(k) - m = m`` for
  ``i in S`` and ``-m`` otherwise, with ``m = 1 / (2 sqrt(k) + 1)``: every score
  sits exactly at ``+-m`` (so ``m_0 = m_g = m_q = m``). Not optimal (compare
  :func:`k_sparse_optimal_margin`), but explicit.

  Args:
    n: number of documents.
    k: relevant documents per query, ``1 <= k <= n``.
    A: ``[N, n]`` binary relevance matrix whose rows are k-subsets (e.g. sampled
      ones, :func:`sample_k_subsets`); default ``k_sparse_relevance(n, k)``,
      every k-subset.

  Returns:
    :class:`Construction` for ``A`` with ``bound = m``.
  """
  if A is None:
    A = _relevance.k_sparse_relevance(n, k)
  else:
    A = np.asarray(A, bool)
    if A.ndim != 2 or A.shape[1] != n or not (A.sum(1) == k).all():
      raise ValueError(
        f"A must be a [N, n={n}] binary matrix with k={k} ones per row, "
        f"got shape {A.shape}."
      )
  m = 1.0 / (2.0 * math.sqrt(k) + 1.0)
  cos_t = math.sqrt(m)
  sin_t = math.sqrt(1.0 - m)
  cos_p, sin_p = sin_t, cos_t  # phi = pi/2 - theta
  V = np.concatenate([cos_p * np.eye(n), np.full((n, 1), sin_p)], axis=1)
  U = np.concatenate(
    [
      sin_t * A.astype(np.float64) / math.sqrt(k),
      np.full((A.shape[0], 1), -cos_t),
    ],
    axis=1,
  )
  return Construction(
    U=jnp.asarray(U, jnp.float32),
    V=jnp.asarray(V, jnp.float32),
    certificate=_m0_float64(U, V, A),
    bound=m,
  )


def coherence(Phi: ArrayLike) -> float:
  """``max_{i != j} |<phi_i, phi_j>| / (||phi_i|| ||phi_j||)`` over the columns
  of ``Phi [d, n]``.

  Args:
    Phi: ``[d, n]`` matrix with at least two finite, nonzero columns
      (``ValueError`` otherwise).

  Returns:
    The mutual coherence ``mu`` in [0, 1], computed in float64.
  """
  P = np.asarray(Phi, np.float64)
  if P.ndim != 2 or P.shape[1] < 2:
    raise ValueError(
      "Phi must be a 2-D array [d, n] with n >= 2 columns, "
      f"got shape {P.shape}."
    )
  norms = np.linalg.norm(P, axis=0)
  if not (np.all(np.isfinite(P)) and np.all(norms > 0)):
    raise ValueError("Phi must have finite, nonzero columns.")
  P = P / np.linalg.norm(P, axis=0, keepdims=True)
  G = np.abs(P.T @ P)
  np.fill_diagonal(G, 0.0)
  return float(G.max())


def _check_key(key, name="key"):
  """A JAX PRNG key (typed ``jax.random.key`` or a raw ``uint32[2]`` key),
  checked at trace time."""
  dt = getattr(key, "dtype", None)
  if dt is None or not (
    jnp.issubdtype(dt, jax.dtypes.prng_key)
    or (dt == jnp.uint32 and key.shape[-1:] == (2,))
  ):
    raise TypeError(
      f"{name} must be a jax.random.key, got {type(key).__name__} {key!r}."
    )


def _cs_signs(key, dp: int, n: int) -> jax.Array:
  """``Phi sqrt(d')``: a ``[d', n]`` matrix of independent signs drawn from
  ``key`` (float32)."""
  return jax.random.rademacher(key, (dp, n), dtype=jnp.float32)


def cs_embeddings(
  key: jax.Array, A: ArrayLike, d: int, *, sin_phi: float = 0.5
) -> tuple[jax.Array, jax.Array]:
  r"""The sum-query embeddings of :func:`cs_construction`, in pure JAX.

  ``Phi in {+-1/sqrt(d')}^{d' x n}`` (``d' = d - 1``) drawn from ``key``;
  documents ``V_i = (cos(phi) Phi e_i, sin(phi))`` and queries
  ``U_j propto (Phi A_j, -c)`` with ``c = cos(phi) / (2 sin(phi))`` (see
  :func:`cs_construction` for the margin bound).

  Jittable and vmappable over keys (``jax.vmap(lambda k: cs_embeddings(k, A,
  d))(keys)``); the same key gives the same signs as :func:`cs_construction`.

  Args:
    key: a ``jax.random.key``.
    A: ``[N, n]`` binary relevance (bool or numbers in {0, 1}).
    d: total dimension (static int ``>= 2``).
    sin_phi: weight of the bias coordinate (static float in (0, 1)).

  Returns:
    ``(U [N, d], V [n, d])`` float32 with unit rows.

  Bad values: a non-binary ``A`` raises ``ValueError`` eagerly; under
  ``jax.jit`` the embeddings are NaN (wrap with
  ``jax.experimental.checkify.checkify`` for the error).
  """
  _check_key(key)
  if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
    raise ValueError(
      f"d must be an int >= 2 (one bias coordinate plus d - 1), got {d!r}."
    )
  if not isinstance(sin_phi, (int, float)) or not 0.0 < sin_phi < 1.0:
    raise ValueError(f"sin_phi must be in (0, 1), got {sin_phi!r}.")
  A = jnp.asarray(A)
  if A.ndim != 2 or 0 in A.shape:
    raise ValueError(
      f"A must be a non-empty 2-D binary matrix [N, n], got shape {A.shape}."
    )
  ok = val.check_binary(A)
  n, dp = A.shape[1], int(d) - 1
  phi = _cs_signs(key, dp, n) / math.sqrt(dp)
  cos_phi = math.sqrt(1.0 - sin_phi**2)
  c = 0.5 * cos_phi / sin_phi
  V = jnp.concatenate(
    [cos_phi * phi.T, jnp.full((n, 1), sin_phi, jnp.float32)], axis=1
  )
  U = jnp.concatenate(
    [A.astype(jnp.float32) @ phi.T, jnp.full((A.shape[0], 1), -c, jnp.float32)],
    axis=1,
  )
  U = val.normalize_rows(U)  # the bias coordinate -c keeps every row nonzero
  return val.poison((U, V), ok)


def cs_construction(
  key: jax.Array,
  n: int,
  k: int,
  d: int,
  *,
  A: ArrayLike | None = None,
  queries: str = "svm",
  sin_phi: float = 0.5,
  steps: int = 500,
) -> Construction:
  r"""Random-sign (RIP) documents plus a bias coordinate [reconstruction].

  ``Phi in {+-1/sqrt(d')}^{d' x n}`` with ``d' = d - 1``; documents
  ``V_i = (cos(phi) Phi e_i, sin(phi))``.

  * ``queries='sum'``: ``U_S propto (Phi 1_S, -c)`` with
    ``c sin(phi) = cos(phi) / 2``, so ``<U_S, V_i> propto cos(phi) (<Phi 1_S,
    Phi e_i> - 1/2)``: a threshold at 1/2 between in-set (``~1``) and out-of-set
    (``~0``) correlations. With coherence ``mu`` of ``Phi`` this gives the
    stated bound, for every row with ``|P_j| = k_j``,

    .. math:: m_0 \ge \min_j \frac{\cos\phi\,(1/2 - k_j \mu)}
              {\sqrt{k_j (1 + (k_j - 1)\mu) + c^2}} \quad (k_j \mu < 1/2).

    RIP of order ``k + 1`` with constant ``delta`` gives the same with ``k mu`` replaced
    by ``delta sqrt(k)``, needing ``d' ~ k^2 log(n/k)``: weaker than the paper.
  * ``queries='svm'``: the same documents, each query re-solved as the exact
    hard-margin direction (:func:`max_margin_queries`, started from the sum
    query and keeping the better one per row), so the sum-query bound still
    holds. This is our reconstruction of the compressed-sensing idea that
    reaches ``d = O(k log(n/k))``.

  Not jittable (it returns host floats: ``certificate`` is re-measured in
  float64 and the coherence bound is a host computation); :func:`cs_embeddings`
  is its pure-JAX core for ``jit``/``vmap`` over keys (the same key gives the
  same ``Phi``).

  Args:
    key: ``jax.random.key`` for ``Phi``.
    n: number of documents.
    k: subset size; ``A`` defaults to ``k_sparse_relevance(n, k)``.
    d: total dimension (``>= 2``).
    A: optional ``[N, n]`` relevance (any rows; ``k_j`` is each row's count).
    queries: ``'sum'`` or ``'svm'``.
    sin_phi: weight of the bias coordinate in the documents.
    steps: FISTA steps for ``'svm'``.

  Returns:
    :class:`Construction` with ``bound`` the coherence bound above (``-1`` if
    vacuous).
  """
  if queries not in ("sum", "svm"):
    raise ValueError(f"queries must be 'sum' or 'svm', got {queries!r}.")
  if not isinstance(d, (int, np.integer)) or d < 2:
    raise ValueError(
      f"d must be an int >= 2 (one bias coordinate plus d - 1), got {d!r}."
    )
  if not 0.0 < sin_phi < 1.0:
    raise ValueError(f"sin_phi must be in (0, 1), got {sin_phi!r}.")
  A = _relevance.k_sparse_relevance(n, k) if A is None else np.asarray(A)
  if A.ndim != 2 or A.shape[1] != n:
    raise ValueError(f"A must have shape [N, n={n}], got {A.shape}.")
  val.check_binary(jnp.asarray(A))
  A = A.astype(bool)
  dp = d - 1
  # The signs are a pure JAX draw (cs_embeddings is the jittable, vmappable
  # core); the rest runs in float64 on the host because the certificate and
  # bound are exact host floats and the 'svm' queries keep the better of two
  # solutions per row.
  _check_key(key)
  Phi = np.asarray(_cs_signs(key, dp, n), np.float64) / math.sqrt(dp)
  cos_phi = math.sqrt(1.0 - sin_phi**2)
  c = 0.5 * cos_phi / sin_phi
  # unit rows
  V = np.concatenate([cos_phi * Phi.T, np.full((n, 1), sin_phi)], axis=1)
  U = np.concatenate(
    [A.astype(np.float64) @ Phi.T, np.full((A.shape[0], 1), -c)], axis=1
  )
  U = U / np.linalg.norm(U, axis=1, keepdims=True)
  mu = coherence(Phi)
  kj = A.sum(axis=1).astype(np.float64)
  num = 0.5 - kj * mu
  bound = float(
    np.min(cos_phi * num / np.sqrt(kj * (1.0 + (kj - 1.0) * mu) + c * c))
  )
  bound = bound if (num > 0).all() else -1.0
  if queries == "svm":
    res = _optimum.max_margin_queries(
      jnp.asarray(V, jnp.float32),
      jnp.asarray(A),
      steps=steps,
      init=jnp.asarray(U, jnp.float32),
    )
    U = np.asarray(res.U, np.float64)
  cert = _m0_float64(U, V, A)
  return Construction(
    U=jnp.asarray(U, jnp.float32),
    V=jnp.asarray(V, jnp.float32),
    certificate=cert,
    bound=bound,
  )


def jl_bound(
  source_margin: float, N: int, n: int, d: int, delta: float = 0.01
) -> float:
  r"""Guaranteed margin after a Gaussian projection to ``d`` dimensions (prob.
  >= 1 - delta).

  For ``G`` with i.i.d. ``N(0, 1/d)`` entries, Laurent–Massart gives
  ``P(| ||Gx||^2 / ||x||^2 - 1 | >= t) <= 2 exp(-d t^2 / 16)`` for ``t <= 1``.
  Writing ``<Gu, Gv> = (||G(u+v)||^2 - ||G(u-v)||^2) / 4`` and taking a union
  bound over the ``2 N n`` sums/differences and ``N + n`` norms, with ``t =
  sqrt(16 log((4 N n + 2 (N + n)) / delta) / d)`` every inner product moves by
  at most ``t`` and every squared norm by at most ``t``, so the renormalised
  margin is

  .. math:: m_0(GU, GV) \ge \frac{m_0(U, V) - t}{1 + t}

  (returned; ``-1`` when ``t >= 1`` or ``t >= m_0``). ``ValueError`` for sizes <
  1, ``delta`` outside (0, 1) or a margin outside [-1, 1] (e.g. NaN). Positive
  once ``d >~ 16 log(N n / delta) / m^2``: the ``O(m^{-2} log(N n))`` of
  [BDES02]; the paper improves the log factor to ``log n``.

  Args:
    source_margin: ``m_0(U, V)`` of the unprojected embeddings, in [-1, 1].
    N: number of queries.
    n: number of documents.
    d: target dimension.
    delta: failure probability in (0, 1).

  Returns:
    The guaranteed margin ``(m_0 - t) / (1 + t)``, or ``-1.0`` when vacuous.
  """
  for name, v in (("N", N), ("n", n), ("d", d)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}.")
  if not 0.0 < delta < 1.0:
    raise ValueError(f"delta must be a probability in (0, 1), got {delta!r}.")
  if not -1.0 <= source_margin <= 1.0:
    raise ValueError(
      f"source_margin must be a margin in [-1, 1], got {source_margin!r}."
    )
  x = math.log((4.0 * N * n + 2.0 * (N + n)) / delta)
  t = math.sqrt(16.0 * x / d)
  if t >= 1.0 or t >= source_margin:
    return -1.0
  return (source_margin - t) / (1.0 + t)


def gaussian_map(
  key: jax.Array, D: int, d: int, dtype: DTypeLike = jnp.float32
) -> jax.Array:
  """The projection ``G [D, d]`` with i.i.d. ``N(0, 1/d)`` entries (so ``E ||x G||^2 = ||x||^2``).

  :func:`jl_project` and :func:`project_documents` draw exactly this matrix from
  their key, so the same key projects the documents identically in both.

  Args:
    key: a ``jax.random.key``.
    D: source dimension (static positive int; ``ValueError`` otherwise).
    d: target dimension (static positive int).
    dtype: floating dtype of ``G``.

  Returns:
    ``G [D, d]`` in ``dtype``.
  """
  _check_key(key)
  for name, v in (("D", D), ("d", d)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
      raise ValueError(f"{name} must be a positive int, got {v!r}.")
  return jax.random.normal(key, (D, d), dtype) / math.sqrt(d)


@functools.partial(jax.jit, static_argnames=("d",))
def _gaussian_projection(key, U, V, d):
  G = gaussian_map(key, U.shape[1], d, jnp.float32)
  return (
    val.normalize_rows(val.normalize_rows(U) @ G),
    val.normalize_rows(val.normalize_rows(V) @ G),
  )


def jl_project(
  key: jax.Array,
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  d: int,
  *,
  reoptimize_queries: bool = False,
  delta: float = 0.01,
  steps: int = 500,
) -> Construction:
  """Random Gaussian projection of unit embeddings ``U [N, D]``, ``V [n, D]`` to
  ``R^d``.

  ``U' = normalize(U G)``, ``V' = normalize(V G)`` with ``G [D, d]`` i.i.d.
  ``N(0, 1/d)``. With ``reoptimize_queries=True`` only the documents are kept
  from the projection and each query is re-solved for them
  (:func:`max_margin_queries`, started from the projected query, keeping the
  better), which can only raise the margin; this tests the paper's
  ``O(m^{-2} log n)`` (documents only) against ``O(m^{-2} log(N n))``
  [reconstruction].

  Args:
    key: a ``jax.random.key`` for ``G`` (:func:`gaussian_map`).
    U: ``[N, D]`` query embeddings (nonzero rows; normalised inside).
    V: ``[n, D]`` document embeddings (nonzero rows; normalised inside).
    A: ``[N, n]`` binary relevance.
    d: target dimension (positive int).
    reoptimize_queries: re-solve each query for the projected documents.
    delta: failure probability of the stated bound.
    steps: FISTA iterations of the re-solve.

  Returns:
    :class:`Construction` with ``bound = jl_bound(m_0(U, V, A), N, n, d, delta)``.
  """
  U, V, A = val.check_embeddings(U, V, A)
  if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0:
    raise ValueError(f"d must be a positive int, got {d!r}.")
  val.check_nonzero_rows(U, name="U")
  val.check_nonzero_rows(V, name="V")
  src = _m0_float64(U, V, A)
  Up, Vp = _gaussian_projection(
    key, U.astype(jnp.float32), V.astype(jnp.float32), int(d)
  )
  if reoptimize_queries:
    Up = _optimum.max_margin_queries(Vp, A, steps=steps, init=Up).U
  return Construction(
    U=Up,
    V=Vp,
    certificate=_m0_float64(Up, Vp, A),
    bound=jl_bound(src, A.shape[0], A.shape[1], d, delta),
  )


def _mean_chi(d: int) -> float:
  """``a_d = E ||g||`` for ``g ~ N(0, I_d)``: ``sqrt(2) Gamma((d + 1) / 2) / Gamma(d / 2)``."""
  return math.exp(
    0.5 * math.log(2.0) + math.lgamma((d + 1) / 2.0) - math.lgamma(d / 2.0)
  )


def documents_only_bound(
  source_margin: float, n: int, d: int, delta: float = 0.01
) -> float:
  r"""Guaranteed margin of :func:`project_documents` (prob. >= 1 - delta), free of ``N``.

  Let unit documents ``v_i`` and queries realise ``A`` with margin
  ``m = source_margin > 0`` in any dimension ``D``. For row ``j`` the best query
  for fixed documents has margin ``dist(0, K_j)`` with ``K_j = conv{Y_ji v_i}``
  (hard-margin duality), and ``m <= ||x||`` on every ``K_j``. Project with
  ``G = g / sqrt(d)``, ``g`` a ``d x D`` standard Gaussian:

  * the radial image ``T`` of ``union_j K_j`` is a subset of the sphere with
    Gaussian width ``w(T) <= E max_i |<h, v_i>| / m <= sqrt(2 ln(2n)) / m``,
    **whatever** ``N`` is;
  * Gordon's escape theorem gives ``E min_{t in T} ||g t|| >= a_d - w(T)``
    (``a_d = E||N(0, I_d)||``); the minimum is 1-Lipschitz in ``g``, so with
    ``s_1 = sqrt(2 ln(2/delta))`` it is ``>= a_d - w(T) - s_1`` w.p.
    ``>= 1 - delta/2``;
  * every projected document has ``||g v_i|| <= sqrt(d) + s_2``,
    ``s_2 = sqrt(2 ln(2n/delta))``, w.p. ``>= 1 - delta/2`` (union over ``n``).

  The re-solved queries against the renormalised projected documents then have

  .. math:: m^{rd}(d, A) \ge m_0(U', V') \ge
            \frac{m\,a_d - \sqrt{2\ln(2n)} - m\sqrt{2\ln(2/\delta)}}
                 {\sqrt{d} + \sqrt{2\ln(2n/\delta)}}

  (returned; ``-1`` when the numerator is not positive). The loss is
  ``~ sqrt(2 ln(2n) / d)``: ``d = O(m^{-2} log n)`` keeps a constant fraction of
  ``m``, the paper's main-theorem rate, against the ``log(N n)`` of
  :func:`jl_bound` [derived; the paper's own proof and constants are not
  reproduced]. ``ValueError`` for sizes < 1, ``delta`` outside (0, 1) or a
  margin outside [-1, 1] (e.g. NaN).

  Args:
    source_margin: the margin ``m`` realised in any dimension, in [-1, 1].
    n: number of documents.
    d: target dimension.
    delta: failure probability in (0, 1).

  Returns:
    The guaranteed margin, or ``-1.0`` when the bound is vacuous (``m <= 0``
    included).
  """
  for name, v in (("n", n), ("d", d)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}.")
  if not 0.0 < delta < 1.0:
    raise ValueError(f"delta must be a probability in (0, 1), got {delta!r}.")
  if not -1.0 <= source_margin <= 1.0:
    raise ValueError(
      f"source_margin must be a margin in [-1, 1], got {source_margin!r}."
    )
  if source_margin <= 0.0:
    return -1.0
  m = float(source_margin)
  num = (
    m * _mean_chi(int(d))
    - math.sqrt(2.0 * math.log(2.0 * n))
    - m * math.sqrt(2.0 * math.log(2.0 / delta))
  )
  if num <= 0.0:
    return -1.0
  return num / (math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 * n / delta)))


class DocumentProjection(NamedTuple):
  """Documents projected to ``R^d`` and every query re-solved for them.

  Attributes:
    U: ``[N, d]`` unit queries, each the max-margin direction for its row.
    V: ``[n, d]`` unit projected documents ``normalize(normalize(V) G)``.
    row_margin: ``[N]`` achieved ``min_i Y_ji <U_j, V_i>`` (a certified lower
      bound).
    row_upper: ``[N]`` certified upper bound on each row's best margin (the
      FISTA hull point's norm); ``row_upper - row_margin`` is the optimisation
      gap.
    margin: ``min_j row_margin``, the paper's ``m_0(U, V, A)``.
  """

  U: jax.Array
  V: jax.Array
  row_margin: jax.Array
  row_upper: jax.Array
  margin: jax.Array


@functools.partial(jax.jit, static_argnames=("d", "steps"))
def _project_documents(key, V, A, d, steps):
  n = V.shape[0]
  Vp = val.normalize_rows(
    val.normalize_rows(V) @ gaussian_map(key, V.shape[1], d, V.dtype)
  )
  Y = jnp.where(A.astype(bool), 1.0, -1.0).astype(V.dtype)
  if d > n:
    # The per-row problem only sees the Gram matrix of the documents: solve it
    # in the n coordinates of their span (Vp^T = Q R, Vp = R^T Q^T) and map the
    # answer back.
    Q, R = jnp.linalg.qr(Vp.T)
    coords = R.T
  else:
    Q, coords = None, Vp
  z = _optimum._min_norm_rows(coords, Y, steps)
  upper = jnp.linalg.norm(z, axis=1)
  U = val.safe_normalize_rows(z)
  if Q is not None:
    U = U @ Q.T
  # A row whose signed hull holds the origin has no separating direction: use
  # e_1.
  e1 = jnp.zeros((A.shape[0], d), V.dtype).at[:, 0].set(1.0)
  U = jnp.where((upper < 1e-7)[:, None], e1, U)
  row = jnp.min(Y * (U @ Vp.T), axis=1)
  return DocumentProjection(
    U=U, V=Vp, row_margin=row, row_upper=upper, margin=jnp.min(row)
  )


def project_documents(
  key: jax.Array, V: ArrayLike, A: ArrayLike, d: int, *, steps: int = 500
) -> DocumentProjection:
  r"""Documents-only dimension reduction: project the documents, re-solve every
  query.

  With ``G [D, d]`` i.i.d. ``N(0, 1/d)`` (:func:`gaussian_map`, drawn from
  ``key``) the documents become ``V'_i = normalize(normalize(V_i) G)`` and each
  query ``j`` is the hard-margin direction through the origin for them,

  .. math:: U'_j = \arg\max_{\|u\| \le 1} \min_i Y_{ji} \langle u, V'_i \rangle,
            \qquad \max_{\|u\| \le 1} \min_i Y_{ji} \langle u, V'_i \rangle
            = \min_{\alpha \in \Delta_n} \Big\| \sum_i \alpha_i Y_{ji} V'_i \Big\|,

  a convex problem per row (FISTA on the simplex, ``jax.vmap`` over the rows;
  for ``d > n`` it is solved in the ``n``-dimensional span of the projected
  documents, which is exact). The source queries are not needed: only the
  documents are projected, which is why the guarantee
  (:func:`documents_only_bound`) depends on ``log n`` and not on ``log(N n)`` as
  for projecting queries too (:func:`jl_project`) [reconstruction of the paper's
  main theorem, ``d = O(m^{rd}(\infty, A)^{-2} \log n)``].

  Pure JAX: jittable (``d`` and ``steps`` static) and vmappable over keys. The
  same key gives the same projected documents as :func:`jl_project`.

  Args:
    key: a ``jax.random.key``.
    V: ``[n, D]`` documents (finite, nonzero rows; normalised inside).
    A: ``[N, n]`` binary relevance (bool or numbers in {0, 1}), ``N >= 1``.
    d: target dimension (positive int).
    steps: FISTA iterations per row.

  Returns:
    :class:`DocumentProjection`. A non-binary ``A`` or a zero / non-finite row
    of ``V`` raises ``ValueError`` eagerly; under ``jax.jit`` every float field
    is NaN instead (wrap in ``jax.experimental.checkify.checkify`` for the
    message).
  """
  _check_key(key)
  V = jnp.asarray(V)
  A = jnp.asarray(A)
  if V.ndim != 2 or 0 in V.shape:
    raise ValueError(
      "V must be a non-empty 2-D array [n, D] of documents, "
      f"got shape {V.shape}."
    )
  if not jnp.issubdtype(V.dtype, jnp.floating):
    raise TypeError(f"V must be a floating point array, got {V.dtype}.")
  if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] != V.shape[0]:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n] with N >= 1 and n = {V.shape[0]} "
      f"(rows of V), got shape {A.shape}."
    )
  if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0:
    raise ValueError(f"d must be a positive int, got {d!r}.")
  if (
    isinstance(steps, bool)
    or not isinstance(steps, (int, np.integer))
    or steps <= 0
  ):
    raise ValueError(f"steps must be a positive int, got {steps!r}.")
  ok = val.both(val.check_binary(A), val.check_nonzero_rows(V, name="V"))
  if V.dtype not in (jnp.float32, jnp.float64):
    V = V.astype(jnp.float32)  # low-precision documents: solve in float32
  out = _project_documents(key, V, A, int(d), int(steps))
  return val.poison(out, ok)


def dimension_reduction_construction(
  key: jax.Array,
  A: ArrayLike,
  d: int,
  *,
  source: tuple[ArrayLike, ArrayLike] | None = None,
  reoptimize_queries: bool = True,
  sdp_steps: int = 3000,
  steps: int = 500,
) -> Construction:
  """The main theorem's route: a near-optimal unrestricted solution projected to
  ``R^d``.

  ``source=(U, V)`` gives the high-dimensional solution; by default it is the
  Burer–Monteiro solution of :func:`sdp_max_margin` (margin close to
  ``m^rd(inf, A)``), which is then passed to :func:`jl_project`. The paper
  proves that ``d = O(m^rd(inf, A)^{-2} log n)`` keeps the margin near the
  optimum [reconstruction: the constants and the exact projection are not
  reproduced].

  Args:
    key: a ``jax.random.key``, split into the SDP start and the projection.
    A: ``[N, n]`` binary relevance.
    d: target dimension (positive int).
    source: optional ``(U [N, D], V [n, D])`` high-dimensional embeddings.
    reoptimize_queries: re-solve each query after the projection (see
      :func:`jl_project`).
    sdp_steps: primal steps of :func:`sdp_max_margin` when ``source`` is None.
    steps: FISTA iterations of the query re-solve.

  Returns:
    :class:`Construction` in ``R^d`` with the bound of :func:`jl_project`.
  """
  A = np.asarray(A)
  if A.ndim != 2:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n], got shape {A.shape}."
    )
  val.check_binary(jnp.asarray(A))
  if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0:
    raise ValueError(f"d must be a positive int, got {d!r}.")
  k_src, k_proj = jax.random.split(key)
  if source is None:
    res = _optimum.sdp_max_margin(A, key=k_src, steps=sdp_steps)
    U, V = res.U, res.V
  else:
    U, V = source
  return jl_project(
    k_proj, U, V, A, d, reoptimize_queries=reoptimize_queries, steps=steps
  )


class SymmetricOptimum(NamedTuple):
  """The unrestricted optimum of the all-k-subsets problem as explicit
  embeddings.

  Attributes:
    A: ``bool[N, n]`` the relevance matrix ``k_sparse_relevance(n, k)``, ``N = C(n, k)``.
    U: ``float64[N, n + 1]`` unit queries (rows not solved are zero).
    V: ``float64[n, n + 1]`` unit documents ``(sqrt(1 - s^2) e_i, s)``.
    s: the documents' common coordinate.
    m_src: the margin of the solved rows (their minimum row margin).
    m_inf: the exact ``m^rd(inf, A)`` (:func:`k_sparse_optimal_margin`), for
      comparison.
  """

  A: np.ndarray
  U: np.ndarray
  V: np.ndarray
  s: float
  m_src: float
  m_inf: float


def _symmetric_documents(n: int, s: float) -> np.ndarray:
  """``V_i = (sqrt(1 - s^2) e_i, s)``: unit documents with pairwise inner
  product ``s^2``."""
  return np.concatenate(
    [math.sqrt(1.0 - s * s) * np.eye(n), np.full((n, 1), s)], axis=1
  )


def symmetric_optimum(
  n: int, k: int, *, steps: int = 3000, rows: ArrayLike | None = None
) -> SymmetricOptimum:
  """The unrestricted optimum for all k-subsets, as explicit embeddings in
  ``R^{n+1}`` [derived].

  By the symmetry of the SDP over document permutations an optimal document Gram
  matrix is ``(1 - c) I + c J``; with ``c = s^2 >= 0`` these are the documents
  ``(sqrt(1 - s^2) e_i, s)``, and every row then has the same best query margin.
  ``s`` maximises that margin (one row, :func:`max_margin_queries`, scipy's
  bounded scalar search); the queries of the rows are then solved for these
  documents.

  Args:
    n: number of documents.
    k: relevant documents per query, ``1 <= k < n``.
    steps: FISTA steps per row of :func:`max_margin_queries`.
    rows: indices into the rows of ``k_sparse_relevance(n, k)`` to solve
      (default: all).

  Returns:
    A :class:`SymmetricOptimum` (``m_src`` close to ``m_inf`` when ``steps``
    suffice).

  Example:
    >>> opt = symmetric_optimum(6, 2, steps=500)
    >>> abs(opt.m_src - opt.m_inf) < 1e-2
    True
  """
  if (
    not isinstance(n, (int, np.integer))
    or not isinstance(k, (int, np.integer))
    or not 1 <= k < n
  ):
    raise ValueError(f"need ints 1 <= k < n, got n={n!r}, k={k!r}.")
  A = np.asarray(_relevance.k_sparse_relevance(n, k))
  solved = (
    np.arange(A.shape[0]) if rows is None else np.unique(np.asarray(rows))
  )

  def neg_margin(s):
    V = jnp.asarray(_symmetric_documents(n, s), jnp.float32)
    return -float(
      _optimum.max_margin_queries(
        V, jnp.asarray(A[:1]), steps=steps
      ).row_margin[0]
    )

  search: Any = sp_optimize.minimize_scalar
  s = float(
    search(
      neg_margin, bounds=(0.02, 0.98), method="bounded", options={"xatol": 1e-5}
    ).x
  )
  V = _symmetric_documents(n, s)
  q = _optimum.max_margin_queries(
    jnp.asarray(V, jnp.float32), jnp.asarray(A[solved]), steps=steps
  )
  U = np.zeros((A.shape[0], n + 1))
  U[solved] = np.asarray(q.U, np.float64)
  U[solved] /= np.linalg.norm(U[solved], axis=1, keepdims=True)
  m_src = float(np.min(np.where(A[solved], 1.0, -1.0) * (U[solved] @ V.T)))
  return SymmetricOptimum(
    A, U, V, s, m_src, _optimum.k_sparse_optimal_margin(n, k)
  )
