r"""The cut norm of a matrix: exact enumeration, a local search, and a certified
SDP bracket.

For :math:`M \in \mathbb{R}^{m \times n}` the (normalised) cut norm is

.. math:: \|M\|_\square = \frac{1}{mn} \max_{S \subseteq [m],\, T \subseteq [n]}
   \Big|\sum_{i \in S, j \in T} M_{ij}\Big| .

Three estimators:

* :func:`cut_norm_exact` enumerates the :math:`2^{\min(m,n)}` subsets of the
  short side; for a fixed :math:`S` the best :math:`T` is closed-form (the
  columns whose :math:`S`-sum is positive, or negative), so the cost is
  :math:`O(2^m mn)`. The reference for everything else.
* :func:`cut_norm_lb` alternates :math:`S \leftarrow \{i : (M 1_T)_i > 0\}`,
  :math:`T \leftarrow \{j : (M^\top 1_S)_j > 0\}` from random starts, for both
  signs: a witnessed lower bound (Frieze & Kannan's oracle in practice).
* :func:`cut_norm_sdp` brackets the cut norm with certificates (Alon & Naor
  2006). The matrix is augmented to :math:`M'` (one extra row and column) whose
  rows and columns sum to zero, so that :math:`\|M'\|_{\infty\to 1} =
  4\,\|M\|_C` (unnormalised cut norm). The Grothendieck SDP

  .. math:: \mathrm{SDP}(M') = \max_{\|u_i\| = \|v_j\| = 1} \sum_{ij} M'_{ij}\langle u_i, v_j\rangle

  satisfies :math:`\|M'\|_{\infty\to1} \le \mathrm{SDP}(M') \le K_G \|M'\|_{\infty\to1}` with
  Grothendieck's constant :math:`K_G \le \pi / (2\ln(1+\sqrt2)) \approx 1.7822` (Krivine). It is
  solved in low rank (Burer–Monteiro) by exact alternating block updates
  :math:`u_i \leftarrow (M'V)_i / \|(M'V)_i\|`, then :math:`v_j \leftarrow (M'^\top U)_j / \|\cdot\|`,
  each of which cannot decrease the objective. Bounds:

  - upper: any dual vector :math:`y` gives :math:`\mathrm{SDP} \le \sum_k y_k +
    N\,\lambda_{\max}(A - \mathrm{Diag}(y))` for the symmetric
    :math:`N \times N` lift :math:`A` (:math:`N = m + n + 2`); we take
    :math:`y = \mathrm{diag}(A X)` from the low-rank solution :math:`X`, so the
    bound is valid however far the solver got and tight when it converged;
  - lower: the best cut witnessed by random-hyperplane rounding of
    :math:`(U, V)` followed by the local search, and
    :math:`\text{primal}/(4 K_G)`, whichever is larger.

  So ``lower <= exact <= upper`` and ``upper / lower <= K_G`` once the solver has converged.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxpapers.core import validation as V
from jaxpapers.dense_limits._checks import (
  check_key,
  check_matrix,
  finite_flag,
  poison,
)

KRIVINE_BOUND = math.pi / (2.0 * math.log(1.0 + math.sqrt(2.0)))
"""Krivine's upper bound on Grothendieck's constant, :math:`\\pi/(2\\ln(1+\\sqrt 2)) = 1.78221...`"""

MAX_EXACT = 20


class CutNormBounds(NamedTuple):
  """A certified bracket of the normalised cut norm (:func:`cut_norm_sdp`).

  Attributes:
    lower: ``[]`` a lower bound (a witnessed cut, or the SDP primal over
      ``4 K_G``).
    upper: ``[]`` an upper bound (from the dual certificate of the SDP).
    sdp_primal: ``[]`` the low-rank SDP objective over ``4 m n`` (a lower bound
      on ``SDP(M') / (4 m n)``, itself between the cut norm and ``K_G`` times
      it).
    s: ``[m]`` float 0/1 mask of the witnessed row set.
    t: ``[n]`` float 0/1 mask of the witnessed column set.
  """

  lower: jax.Array
  upper: jax.Array
  sdp_primal: jax.Array
  s: jax.Array
  t: jax.Array


def _subset_matrix(k: int, dtype) -> jax.Array:
  """All ``2^k`` subsets of ``[k]`` as rows of a 0/1 matrix ``[2^k, k]``."""
  codes = jnp.arange(2**k, dtype=jnp.int32)[:, None]
  return ((codes >> jnp.arange(k, dtype=jnp.int32)[None, :]) & 1).astype(dtype)


def _exact_search(m: jax.Array):
  """Exact unnormalised cut value and an optimal (S, T) (0/1 masks) of ``m``
  (m.shape[0] small)."""
  s_all = _subset_matrix(m.shape[0], m.dtype)  # [2^m, m]
  col = s_all @ m  # [2^m, n]: column sums over S
  pos = jnp.maximum(col, 0).sum(-1)
  neg = jnp.maximum(-col, 0).sum(-1)
  best_pos, best_neg = jnp.argmax(pos), jnp.argmax(neg)
  use_pos = pos[best_pos] >= neg[best_neg]
  idx = jnp.where(use_pos, best_pos, best_neg)
  value = jnp.where(use_pos, pos[best_pos], neg[best_neg])
  t = jnp.where(use_pos, col[idx] > 0, col[idx] < 0).astype(m.dtype)
  return value, s_all[idx], t


@jax.jit
def _exact_jit(m):
  rows, cols = m.shape
  transpose = rows > cols
  value, s, t = _exact_search(m.T if transpose else m)
  if transpose:
    s, t = t, s
  return value / (rows * cols), s, t


def cut_norm_exact(
  m: jax.Array, *, return_sets: bool = False
) -> jax.Array | tuple[jax.Array, jax.Array, jax.Array]:
  r"""Exact normalised cut norm by enumerating the subsets of the shorter side.

  :math:`\|M\|_\square = \frac{1}{mn}\max_S \max\big(\sum_j (1_S^\top M)_j^+,\ \sum_j
  (1_S^\top M)_j^-\big)`, over all :math:`2^{\min(m, n)}` subsets :math:`S`.

  Args:
    m: ``[m, n]`` real matrix with ``min(m, n) <= 20``.
    return_sets: also return the optimal row and column sets.

  Returns:
    ``[]`` the cut norm; with ``return_sets``, ``(value, s [m], t [n])`` with
    0/1 float masks.

  Under jit, a NaN or infinite entry makes every float output NaN (eagerly:
  ``ValueError``).

  Example:
    >>> float(cut_norm_exact(jnp.array([[1.0, -1.0], [1.0, 1.0]])))  # S = {0,1}, T = {0}
    0.5
  """
  m = check_matrix(m)
  rows, cols = m.shape
  if min(rows, cols) > MAX_EXACT:
    raise ValueError(
      f"m must have min(rows, cols) <= {MAX_EXACT} for exact enumeration, "
      f"got shape {m.shape}"
    )
  ok = finite_flag(m, "m")
  out = poison(_exact_jit(m), ok)
  return out if return_sets else out[0]


def _signed_cut(m, s, t):
  return s @ m @ t


def _local_search(m: jax.Array, t0: jax.Array, iters: int):
  """Alternating maximisation of ``1_S^T M 1_T`` from column masks
  ``t0 [R, n]``.

  Returns the values ``[R]`` and masks ``s [R, m]``, ``t [R, n]``; each step
  cannot decrease the value.
  """

  def body(_, t):
    s = ((t @ m.T) > 0).astype(m.dtype)  # [R, m]
    return ((s @ m) > 0).astype(m.dtype)  # [R, n]

  t = lax.fori_loop(0, iters, body, t0)
  s = ((t @ m.T) > 0).astype(m.dtype)
  vals = jnp.einsum("rm,mn,rn->r", s, m, t)
  return vals, s, t


def _best_cut(m: jax.Array, t0: jax.Array, iters: int):
  """Local search on ``m`` and ``-m``; the best absolute (unnormalised) cut and
  its sets."""
  vp, sp, tp = _local_search(m, t0, iters)
  vn, sn, tn = _local_search(-m, t0, iters)
  v = jnp.concatenate([vp, vn])
  s = jnp.concatenate([sp, sn])
  t = jnp.concatenate([tp, tn])
  i = jnp.argmax(v)
  return v[i], s[i], t[i]


@functools.partial(jax.jit, static_argnums=(2, 3))
def _lb_jit(m, key, restarts, iters):
  t0 = jax.random.bernoulli(key, 0.5, (restarts, m.shape[1])).astype(m.dtype)
  v, s, t = _best_cut(m, t0, iters)
  return v / (m.shape[0] * m.shape[1]), s, t


def cut_norm_lb(
  m: jax.Array, key: jax.Array, *, restarts: int = 64, iters: int = 20
) -> tuple[jax.Array, jax.Array, jax.Array]:
  r"""A witnessed lower bound on the normalised cut norm by alternating
  maximisation.

  From ``restarts`` random column sets :math:`T`, alternate :math:`S \leftarrow
  \{i : (M 1_T)_i > 0\}` and :math:`T \leftarrow \{j : (M^\top 1_S)_j > 0\}` for
  ``iters`` steps, for :math:`M` and :math:`-M`; return the best
  :math:`|1_S^\top M 1_T| / (mn)`. All restarts run as one matmul per step.

  Args:
    m: ``[m, n]`` real matrix.
    key: typed PRNG key for the random starts.
    restarts: number of random starts per sign (static).
    iters: alternation steps (static).

  Returns:
    ``(value [], s [m], t [n])``: the cut found (a lower bound) and its 0/1
    float masks, with ``value = |s @ m @ t| / (m n)``.

  Under jit, a NaN or infinite entry makes the value NaN (eagerly:
  ``ValueError``).
  """
  m = check_matrix(m)
  check_key(key)
  restarts = V.check_int(restarts, "restarts", min_value=1)
  iters = V.check_int(iters, "iters", min_value=0)
  ok = finite_flag(m, "m")
  return poison(_lb_jit(m, key, restarts, iters), ok)


def augment(m: jax.Array) -> jax.Array:
  r"""Alon–Naor augmentation :math:`M' = \begin{pmatrix} M & -M1 \\ -1^\top M & 1^\top M 1
  \end{pmatrix}`: rows and columns sum to zero, :math:`\|M'\|_C = \|M\|_C` and
  :math:`\|M'\|_{\infty\to1} = 4\|M\|_C` (unnormalised cut norms).

  Args:
    m: ``[m, n]`` real matrix.

  Returns:
    ``[m + 1, n + 1]``.
  """
  m = check_matrix(m)
  r = m.sum(1, keepdims=True)
  c = m.sum(0, keepdims=True)
  top = jnp.concatenate([m, -r], axis=1)
  bottom = jnp.concatenate([-c, m.sum()[None, None]], axis=1)
  return jnp.concatenate([top, bottom], axis=0)


def _normalize_rows(x):
  return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-30)


def cut_norm_sdp(
  m: jax.Array,
  key: jax.Array,
  *,
  rank: int | None = None,
  iters: int = 300,
  roundings: int = 64,
  search_iters: int = 10,
) -> CutNormBounds:
  r"""Certified lower and upper bounds on the normalised cut norm (Grothendieck
  SDP).

  See the module docstring for the construction. The upper bound holds for any solver state
  (it is a dual certificate); in float32 it includes a margin of :math:`N^2 \varepsilon
  \|A\|_F` for the error of the eigenvalue solver.

  Args:
    m: ``[m, n]`` real matrix.
    key: typed PRNG key (initial vectors and rounding hyperplanes).
    rank: Burer–Monteiro rank; default ``ceil(sqrt(2 (m + n + 2))) + 1`` (above
      the Barvinok– Pataki bound, so that local optima are global in general).
    iters: alternating block updates.
    roundings: random hyperplanes for the rounding.
    search_iters: local-search steps after the rounding.

  Returns:
    :class:`CutNormBounds` (normalised by ``m n``).

  Under jit, a NaN or infinite entry makes every float output NaN (eagerly:
  ``ValueError``).
  """
  m = check_matrix(m)
  check_key(key)
  iters = V.check_int(iters, "iters", min_value=1)
  roundings = V.check_int(roundings, "roundings", min_value=1)
  search_iters = V.check_int(search_iters, "search_iters", min_value=0)
  p, q = m.shape
  n_lift = p + q + 2
  if rank is None:
    rank = math.ceil(math.sqrt(2 * n_lift)) + 1
  rank = V.check_int(rank, "rank", min_value=1)
  ok = finite_flag(m, "m")
  return poison(_sdp_jit(m, key, rank, iters, roundings, search_iters), ok)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _sdp_jit(m, key, rank, iters, roundings, search_iters):
  p, q = m.shape
  n_lift = p + q + 2
  ma = augment(m)  # [p+1, q+1]
  k_init, k_round = jax.random.split(key)
  v0 = _normalize_rows(jax.random.normal(k_init, (q + 1, rank), m.dtype))

  def body(_, v):
    u = _normalize_rows(ma @ v)
    return _normalize_rows(ma.T @ u)

  v = lax.fori_loop(0, iters, body, v0)
  u = _normalize_rows(ma @ v)
  g = u @ v.T  # [p+1, q+1] inner products
  primal = jnp.sum(ma * g)
  # Dual certificate: A = [[0, M'/2], [M'^T/2, 0]], y = diag(A X).
  y = jnp.concatenate([0.5 * jnp.sum(ma * g, 1), 0.5 * jnp.sum(ma * g, 0)])
  a_sym = jnp.zeros((n_lift, n_lift), m.dtype)
  a_sym = (
    a_sym.at[: p + 1, p + 1 :]
    .set(0.5 * ma)
    .at[p + 1 :, : p + 1]
    .set(0.5 * ma.T)
  )
  lam = jnp.linalg.eigvalsh(a_sym - jnp.diag(y))[-1]
  eps = jnp.finfo(m.dtype).eps
  pad = n_lift * n_lift * eps * jnp.linalg.norm(a_sym)
  upper_sdp = jnp.sum(y) + n_lift * lam + pad
  # Rounding: x = sign(U g), y = sign(V g). Because M' has zero row and column
  # sums, x^T M' y = 4 * x_p * y_q * sum_{i in S, j in T} M_ij with S = {i < p :
  # x_i != x_p} and T = {j < q : y_j != y_q}; the local search then starts from
  # T (both signs).
  gs = jax.random.normal(k_round, (rank, roundings), m.dtype)
  xs = jnp.where(u @ gs >= 0, 1.0, -1.0).astype(m.dtype)  # [p+1, R]
  ys = jnp.where(v @ gs >= 0, 1.0, -1.0).astype(m.dtype)  # [q+1, R]
  del xs  # S is recomputed from T by the first step of the search
  t0 = (ys[:q] != ys[q:]).astype(m.dtype).T  # [R, q]
  best, s, t = _best_cut(m, t0, search_iters)
  scale = 1.0 / (p * q)
  lower = jnp.maximum(best, primal / (4.0 * KRIVINE_BOUND)) * scale
  upper = upper_sdp / 4.0 * scale
  out = CutNormBounds(lower, upper, primal / 4.0 * scale, s, t)
  return out
