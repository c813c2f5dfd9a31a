"""The three margin notions of a retrieval problem and exact top-k
retrievability.

Notation (fixed throughout ``jaxpapers.margins``): ``A in {0,1}^{N x n}`` says
which of the ``n`` documents are relevant to each of the ``N`` queries,
``Y = 2A - 1``, query embeddings ``U [N, d]``, document embeddings ``V [n, d]``
(unit rows) and scores ``S = U V^T``, ``S_ji = <U_j, V_i>``.

References:
  Bangachev, Bresler, Kogan, Polyanskiy, "Is Dimensionality a Barrier for
  Retrieval Models?", arXiv:2605.23556 (the margin ``m^rd(d, A)``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.margins import _validation as val


def _prepare(U, V, A, normalize):
  """Checked ``(U, V, A bool, ok)``; ``ok`` is the traced value-check flag (None
  eagerly)."""
  U, V, A, ok = val.check_embeddings_ok(U, V, A)
  if normalize:
    ok = val.both(
      ok,
      val.check_nonzero_rows(U, name="U"),
      val.check_nonzero_rows(V, name=("V")),
    )
    U, V = val.normalize_rows(U), val.normalize_rows(V)
  else:
    ok = val.both(
      ok, val.check_unit_rows(U, name="U"), val.check_unit_rows(V, name=("V"))
    )
  return U, V, A.astype(bool), ok


def _row_stats(S, A):
  """Per-row min over positives, max over negatives (+inf / -inf when empty)."""
  pos_min = jnp.min(jnp.where(A, S, jnp.inf), axis=1)
  neg_max = jnp.max(jnp.where(A, -jnp.inf, S), axis=1)
  return pos_min, neg_max


def margin(
  U: ArrayLike, V: ArrayLike, A: ArrayLike, *, normalize: bool = False
) -> jax.Array:
  r"""The paper's fixed-threshold margin ``m_0``.

  .. math:: m_0(U, V, A) = \min_{j, i} Y_{ji} \langle U_j, V_i \rangle, \qquad Y = 2A - 1,

  i.e. the largest ``m`` with ``<U_j, V_i> >= m`` wherever ``A_ji = 1`` and
  ``<U_j, V_i> <= -m`` wherever ``A_ji = 0``. Negative when A is not realised at
  threshold 0. ``m^rd(d, A)`` is the supremum of ``m_0`` over unit embeddings in
  R^d.

  Args:
    U: ``[N, d]`` query embeddings with unit rows (or any nonzero rows with
      ``normalize=True``).
    V: ``[n, d]`` document embeddings, same convention.
    A: ``[N, n]`` binary relevance matrix (bool or numbers in {0, 1}).
    normalize: divide rows of ``U`` and ``V`` by their norms first. When False
      (default) non-unit rows raise ``ValueError``.

  Returns:
    Scalar margin, in the dtype of ``U``/``V``.

  Bad values (a non-binary ``A``, rows that are not unit norm or NaN, zero rows
  with ``normalize=True``) raise ``ValueError`` eagerly; under ``jax.jit`` the
  margin is NaN (wrap with ``jax.experimental.checkify.checkify`` to get the
  error). The same holds for every function of this module. Empty problems (N =
  0 or n = 0) are a shape error.

  References:
    arXiv:2605.23556, the definition of ``m^rd(d, A)`` in the abstract.

  Example:
    A = k_sparse_relevance(n=8, k=2)                # [28, 8]: every 2-subset of 8 documents
    result = sdp_max_margin(A, key=jax.random.key(0))  # brackets m^rd(inf, A), with embeddings
    m0 = margin(result.U, result.V, A, normalize=True)
    m = all_margins(result.U, result.V, A, normalize=True)  # {"m0", "mg", "mq", "topk_accuracy"}
  """
  U, V, A, ok = _prepare(U, V, A, normalize)
  S = U @ V.T  # [N, n]
  return val.poison(jnp.min(jnp.where(A, S, -S)), ok)


def global_threshold_margin(
  U: ArrayLike, V: ArrayLike, A: ArrayLike, *, normalize: bool = False
) -> jax.Array:
  r"""Best fixed-threshold margin after one common shift of all scores, ``m_g``.

  .. math:: m_g = \tfrac12 \big(\min_{A_{ji}=1} S_{ji} - \max_{A_{ji}=0} S_{ji}\big)
            = \max_\theta \min_{j,i} Y_{ji} (S_{ji} - \theta).

  ``+inf`` when A has no zero or no one entries.

  Args:
    U: ``[N, d]`` query embeddings with unit rows (or nonzero rows with
      ``normalize=True``).
    V: ``[n, d]`` document embeddings, same convention.
    A: ``[N, n]`` binary relevance matrix.
    normalize: divide rows of ``U`` and ``V`` by their norms first (see
      :func:`margin`).

  Returns:
    Scalar ``m_g``, in the dtype of ``U``/``V``.
  """
  U, V, A, ok = _prepare(U, V, A, normalize)
  S = U @ V.T
  return val.poison(
    0.5
    * (jnp.min(jnp.where(A, S, jnp.inf)) - jnp.max(jnp.where(A, -jnp.inf, S))),
    ok,
  )


def per_query_margin(
  U: ArrayLike, V: ArrayLike, A: ArrayLike, *, normalize: bool = False
) -> jax.Array:
  r"""Per-query ranking margin ``m_q`` (what exact top-k retrieval needs).

  .. math:: m_q = \min_j \tfrac12 \big(\min_{i \in P_j} S_{ji} - \max_{i \notin P_j} S_{ji}\big),
            \qquad P_j = \{i : A_{ji} = 1\}.

  Rows with no positives or no negatives are skipped (``+inf`` if all are).
  ``m_q > 0`` iff every query ranks exactly its relevant documents on top.
  Always ``m_0 <= m_g <= m_q``.

  Args:
    U: ``[N, d]`` query embeddings with unit rows (or nonzero rows with
      ``normalize=True``).
    V: ``[n, d]`` document embeddings, same convention.
    A: ``[N, n]`` binary relevance matrix.
    normalize: divide rows of ``U`` and ``V`` by their norms first (see
      :func:`margin`).

  Returns:
    Scalar ``m_q``, in the dtype of ``U``/``V``.
  """
  U, V, A, ok = _prepare(U, V, A, normalize)
  pos_min, neg_max = _row_stats(U @ V.T, A)
  # skipped rows give +inf
  return val.poison(jnp.min(0.5 * (pos_min - neg_max)), ok)


def topk_accuracy(
  U: ArrayLike, V: ArrayLike, A: ArrayLike, *, normalize: bool = True
) -> jax.Array:
  """Fraction of queries whose top-|P_j| documents are exactly ``P_j`` (ties count as errors).

  Rows with no positives or no negatives count as correct. Normalisation does
  not change rankings, so ``normalize`` defaults to True here.

  Args:
    U: ``[N, d]`` query embeddings with unit rows (or nonzero rows with
      ``normalize=True``).
    V: ``[n, d]`` document embeddings, same convention.
    A: ``[N, n]`` binary relevance matrix.
    normalize: divide rows of ``U`` and ``V`` by their norms first (default
      here).

  Returns:
    Scalar accuracy in [0, 1], in the dtype of ``U``.
  """
  U, V, A, ok = _prepare(U, V, A, normalize)
  pos_min, neg_max = _row_stats(U @ V.T, A)
  return val.poison(jnp.mean((pos_min > neg_max).astype(U.dtype)), ok)


@functools.partial(jax.jit, static_argnames=("chunk_size",))
def _all_margins_chunked(U, V, A, chunk_size):
  """The reductions of :func:`all_margins` over blocks of ``chunk_size`` query
  rows.

  Each block needs only its per-row ``min`` over positives and ``max`` over
  negatives: ``m_0`` is ``min(min_{A=1} S, -max_{A=0} S)`` of the global
  extremes (min and negation are exact, so this equals ``min Y * S``), which
  saves a third pass over the scores. The blocks are dynamic slices of the
  unpadded ``U`` and ``A`` (a last, shorter block when ``chunk_size`` does not
  divide ``N``), so no padded copy of the inputs is made.
  """
  N = U.shape[0]
  full = N // chunk_size
  inf = jnp.asarray(jnp.inf, U.dtype)

  def block(carry, Uc, Ac):
    pmin, nmax, mq, correct = carry
    # S block [rows, n] -> [rows] each
    pos_min, neg_max = _row_stats(Uc @ V.T, Ac)
    return (
      jnp.minimum(pmin, jnp.min(pos_min)),
      jnp.maximum(nmax, jnp.max(neg_max)),
      jnp.minimum(mq, jnp.min(0.5 * (pos_min - neg_max))),
      correct + jnp.sum(pos_min > neg_max, dtype=jnp.int32),
    )

  def body(i, carry):
    start = i * chunk_size
    return block(
      carry,
      jax.lax.dynamic_slice_in_dim(U, start, chunk_size),
      jax.lax.dynamic_slice_in_dim(A, start, chunk_size),
    )

  carry = (inf, -inf, inf, jnp.zeros((), jnp.int32))
  carry = jax.lax.fori_loop(0, full, body, carry)
  if N % chunk_size:
    carry = block(carry, U[full * chunk_size :], A[full * chunk_size :])
  pmin, nmax, mq, correct = carry
  return {
    "m0": jnp.minimum(pmin, -nmax),
    "mg": 0.5 * (pmin - nmax),
    "mq": mq,
    "topk_accuracy": jnp.where(correct == N, 1.0, correct / N).astype(U.dtype),
  }


def all_margins(
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  *,
  normalize: bool = False,
  chunk_size: int = 16384,
) -> dict[str, jax.Array]:
  """All three margins and the top-k accuracy in one pass, chunked over query
  rows.

  Peak memory is ``O(chunk_size * n)``, so the C(64, 4) = 635,376-row k-sparse
  problem evaluates without materialising the full score matrix. The default
  block of 16,384 rows keeps a block of scores (``16384 x n`` floats) near the
  CPU caches; much larger blocks are slower
  (``benchmarks/margins_throughput.py`` records both).

  Args:
    U: ``[N, d]`` query embeddings with unit rows (or nonzero rows with
      ``normalize=True``).
    V: ``[n, d]`` document embeddings, same convention.
    A: ``[N, n]`` binary relevance matrix.
    normalize: divide rows of ``U`` and ``V`` by their norms first (see
      :func:`margin`).
    chunk_size: query rows per step of the loop (a positive int; capped at
      ``N``). The reductions (min, max, an integer count) do not depend on it;
      the float32 scores can differ in the last bit, as the matmul kernel
      depends on the block's shape.

  Returns:
    ``{"m0": m_0, "mg": m_g, "mq": m_q, "topk_accuracy": acc}`` (scalars), with
    the definitions of :func:`margin`, :func:`global_threshold_margin`,
    :func:`per_query_margin` and :func:`topk_accuracy`.
  """
  if (
    isinstance(chunk_size, bool)
    or not isinstance(chunk_size, (int, np.integer))
    or chunk_size <= 0
  ):
    raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}.")
  U, V, A, ok = _prepare(U, V, A, normalize)
  chunk_size = int(min(chunk_size, U.shape[0]))
  return val.poison(_all_margins_chunked(U, V, A, chunk_size), ok)


def margins_float64(
  U: ArrayLike, V: ArrayLike, A: ArrayLike
) -> dict[str, float]:
  """``m_0``, ``m_g``, ``m_q`` and the top-k accuracy in float64 NumPy, on the
  host.

  The rows of ``U`` and ``V`` are normalised first. Host-side NumPy compiles
  nothing, so evaluating many differently shaped fits (one per dimension and
  seed) costs no XLA programs; the values are those of :func:`all_margins` with
  ``normalize=True``, in float64.

  Args:
    U: ``[N, d]`` query embeddings (nonzero rows).
    V: ``[n, d]`` document embeddings (nonzero rows).
    A: ``[N, n]`` binary relevance matrix.

  Returns:
    ``{"m0", "mg", "mq", "topk_accuracy"}`` as Python floats (definitions of
    :func:`margin`, :func:`global_threshold_margin`, :func:`per_query_margin`
    and :func:`topk_accuracy`).
  """
  u = np.asarray(U, np.float64)
  v = np.asarray(V, np.float64)
  a = np.asarray(A, bool)
  if (
    u.ndim != 2
    or v.ndim != 2
    or u.shape[1] != v.shape[1]
    or a.shape != (u.shape[0], v.shape[0])
  ):
    raise ValueError(
      f"need U [N, d], V [n, d] and A [N, n]; got U {u.shape}, V {v.shape}, "
      f"A {a.shape}."
    )
  u_unit: np.ndarray = u / np.linalg.norm(u, axis=1, keepdims=True)
  v_unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
  S = u_unit @ v_unit.T
  pos_min = np.where(a, S, np.inf).min(1)
  neg_max = np.where(a, -np.inf, S).max(1)
  return {
    "m0": float(np.where(a, S, -S).min()),
    "mg": float(0.5 * (pos_min.min() - neg_max.max())),
    "mq": float((0.5 * (pos_min - neg_max)).min()),
    "topk_accuracy": float((pos_min > neg_max).mean()),
  }
