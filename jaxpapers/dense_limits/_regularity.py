r"""Frieze–Kannan weak regularity: a matrix as a short sum of cut matrices.

Greedy decomposition (Frieze & Kannan 1999), :math:`R_0 = W`:

.. math::
   (S_r, T_r) &\approx \arg\max_{S,T} |1_S^\top R_{r-1} 1_T|, \\
   a_r &= \frac{1_{S_r}^\top R_{r-1} 1_{T_r}}{|S_r||T_r|}, \qquad
   R_r = R_{r-1} - a_r 1_{S_r} 1_{T_r}^\top .

Each step removes exactly :math:`(1_{S_r}^\top R_{r-1} 1_{T_r})^2 / (|S_r||T_r|)
\ge mn\,c_r^2` of :math:`\|R\|_F^2`, where :math:`c_r` is the normalised cut
found at step :math:`r`. With :math:`\|W\|_F^2 \le B^2 mn` this gives
:math:`\sum_r c_r^2 \le B^2`, so :math:`\min_{r \le K} c_r \le B/\sqrt K`; with
an exact oracle :math:`c_r = \|R_{r-1}\|_\square` and the residual's cut norm
falls below :math:`B/\sqrt K` at some step. With an oracle that finds a fraction
:math:`\rho` of the maximum, the bound on the true cut norm is
:math:`B/(\rho\sqrt K)`.
"""

from __future__ import annotations

import functools
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
from jaxpapers.dense_limits._cut import MAX_EXACT, _best_cut, _exact_search


class CutDecomposition(NamedTuple):
  r"""A sum of ``K`` cut matrices :math:`\sum_r a_r 1_{S_r} 1_{T_r}^\top`.

  Attributes:
    a: ``[K]`` coefficients.
    s: ``[K, m]`` float 0/1 row masks.
    t: ``[K, n]`` float 0/1 column masks.
  """

  a: jax.Array
  s: jax.Array
  t: jax.Array


class FKTrace(NamedTuple):
  """Per-step record of :func:`fk_decompose`.

  Attributes:
    cut_found: ``[K]`` normalised cut of ``R_{r-1}`` found at step ``r`` (a
      lower bound on its cut norm; the exact cut norm with ``exact=True``).
    frob_sq: ``[K + 1]`` ``||R_r||_F^2 / (m n)`` for ``r = 0..K``.
  """

  cut_found: jax.Array
  frob_sq: jax.Array


def reconstruct(dec: CutDecomposition) -> jax.Array:
  r""":math:`\sum_r a_r 1_{S_r} 1_{T_r}^\top`.

  Args:
    dec: a :class:`CutDecomposition` with ``a [K]``, ``s [K, m]``, ``t [K, n]``.

  Returns:
    ``[m, n]``.
  """
  if not isinstance(dec, CutDecomposition):
    raise TypeError(f"dec must be a CutDecomposition, got {type(dec).__name__}")
  a = V.check_array(dec.a, "dec.a", ndim=1, dtype="real")
  s = V.check_array(dec.s, "dec.s", ndim=2, dtype="real")
  t = V.check_array(dec.t, "dec.t", ndim=2, dtype="real")
  if not (a.shape[0] == s.shape[0] == t.shape[0]):
    raise ValueError(
      f"dec.a, dec.s, dec.t must share the number of terms K, got {a.shape}, "
      f"{s.shape}, {t.shape}"
    )
  return jnp.einsum("k,km,kn->mn", a, s, t)


def fk_decompose(
  m: jax.Array,
  k: int,
  key: jax.Array,
  *,
  restarts: int = 64,
  iters: int = 20,
  exact: bool = False,
) -> tuple[CutDecomposition, FKTrace]:
  r"""Greedy Frieze–Kannan cut decomposition with ``k`` terms (``lax.scan`` over
  steps).

  Args:
    m: ``[m, n]`` real matrix.
    k: number of cut terms ``K`` (static).
    key: typed PRNG key for the oracle's random starts (folded with the step).
    restarts: local-search starts per sign and step (see :func:`cut_norm_lb`).
    iters: local-search alternation steps.
    exact: use the exact oracle (enumeration; needs ``min(m, n) <= 20``).

  Returns:
    ``(CutDecomposition, FKTrace)``; ``m - reconstruct(dec)`` is the residual
    ``R_K``.

  Under jit, a NaN or infinite entry makes every float output NaN (eagerly:
  ``ValueError``).

  Example:
    >>> w = jnp.outer(jnp.array([1.0, 1, 0]), jnp.array([0.0, 1, 1]))
    >>> dec, _ = fk_decompose(w, 1, jax.random.key(0), exact=True)
    >>> bool(jnp.allclose(reconstruct(dec), w))
    True
  """
  m = check_matrix(m)
  k = V.check_int(k, "k", min_value=1)
  check_key(key)
  restarts = V.check_int(restarts, "restarts", min_value=1)
  iters = V.check_int(iters, "iters", min_value=0)
  rows, cols = m.shape
  if exact and min(rows, cols) > MAX_EXACT:
    raise ValueError(
      f"exact=True needs min(m.shape) <= {MAX_EXACT}, got shape {m.shape}"
    )
  ok = finite_flag(m, "m")
  return poison(_fk_jit(m, k, key, restarts, iters, exact), ok)


@functools.partial(jax.jit, static_argnums=(1, 3, 4, 5))
def _fk_jit(m, k, key, restarts, iters, exact):
  rows, cols = m.shape
  mn = rows * cols

  def oracle(r, kk):
    if exact:
      if rows <= cols:
        return _exact_search(r)
      v, s, t = _exact_search(r.T)
      return v, t, s
    t0 = jax.random.bernoulli(kk, 0.5, (restarts, cols)).astype(r.dtype)
    return _best_cut(r, t0, iters)

  def step(r, i):
    value, s, t = oracle(r, jax.random.fold_in(key, i))
    size = jnp.maximum(s.sum() * t.sum(), 1.0)
    a = jnp.where(value > 0, (s @ r @ t) / size, 0.0)
    r = r - a * jnp.outer(s, t)
    return r, (a, s, t, value / mn, jnp.sum(r * r) / mn)

  _, (a, s, t, found, frob) = lax.scan(step, m, jnp.arange(k))
  frob = jnp.concatenate([jnp.sum(m * m)[None] / mn, frob])
  out = (CutDecomposition(a, s, t), FKTrace(found, frob))
  return out
