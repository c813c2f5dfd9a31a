"""How many dimensions a margin needs: read off a d grid, from a bound, and after projection.

* :func:`needed_dimension`: the smallest ``d`` (log-linear between grid points) from which on a
  grid of retained margin fractions stays at least ``f``.
* :func:`growth_slope`: the slope of ``ln d`` on ``log10 N`` (growth of the needed dimension per
  decade of queries ``N``; ``log(N n)`` rate vs the documents-only ``log n`` rate).
* :func:`bound_dimension`: the smallest integer ``d`` at which a monotone guarantee reaches a
  target (:func:`jl_bound`, :func:`documents_only_bound`).
* :func:`projected_row_margins`: per-row margins after one Gaussian map for the three routes of
  the main theorem's comparison: queries projected too, queries re-solved, random queries.

References:
  arXiv:2605.23556 (main theorem: ``d = O(m^{-2} log n)`` for the documents-only route).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.margins._constructions import gaussian_map, project_documents


def _grid(ds: Sequence[float], name: str = "ds") -> np.ndarray:
  g = np.asarray(ds, np.float64)
  if g.ndim != 1 or g.size == 0 or not np.all(g > 0) or not np.all(np.diff(g) > 0):
    raise ValueError(
      f"{name} must be a non-empty, positive, strictly increasing 1-D grid, got {ds!r}."
    )
  return g


def needed_dimension(ds: Sequence[float], retained: ArrayLike, f: float) -> float | None:
  r"""Smallest ``d`` from which on the grid the retained fraction stays ``>= f``.

  With ``i`` the first grid index such that ``retained[j] >= f`` for every ``j >= i``, the
  crossing is interpolated log-linearly in ``d`` between ``ds[i-1]`` and ``ds[i]``:

  .. math:: d_f = \exp\Big(\ln d_{i-1} + \frac{f - r_{i-1}}{r_i - r_{i-1}}
            (\ln d_i - \ln d_{i-1})\Big).

  Args:
    ds: ``[D]`` positive, strictly increasing dimensions.
    retained: ``[D]`` retained margin fractions ``m_0(d) / m_src`` on that grid.
    f: the fraction to keep.

  Returns:
    ``d_f`` as a float; ``None`` when the last grid point is below ``f`` (more than
    ``max(ds)`` needed: censored); ``ds[0]`` when every grid point keeps ``f`` (at most that).

  Example:
    >>> needed_dimension([1, 2, 4], [0.2, 0.4, 0.8], 0.5)  # between d = 2 and d = 4
    2.378...
  """
  g = _grid(ds)
  r = np.asarray(retained, np.float64)
  if r.shape != g.shape:
    raise ValueError(f"retained must have shape {g.shape} (one value per d), got {r.shape}.")
  if not r[-1] >= f:
    return None
  i = len(r) - 1
  while i > 0 and r[i - 1] >= f:
    i -= 1
  if i == 0:
    return float(g[0])
  lo, hi = math.log(g[i - 1]), math.log(g[i])
  t = (f - r[i - 1]) / (r[i] - r[i - 1])
  return float(math.exp(lo + t * (hi - lo)))


def growth_slope(Ns: Sequence[float], dims: Sequence[float | None]) -> float | None:
  r"""Least-squares slope ``b`` of ``ln d = a + b log10 N``: the needed dimension's relative growth
  per decade of queries (0 when it does not grow with ``N``).

  Args:
    Ns: ``[M]`` positive, strictly increasing numbers of queries (``M >= 2``).
    dims: ``[M]`` the needed dimensions at those ``N`` (``None`` where censored).

  Returns:
    The slope as a float, or ``None`` when some dimension is ``None``.
  """
  n = _grid(Ns, "Ns")
  if n.size < 2 or len(dims) != n.size:
    raise ValueError(
      f"Ns and dims must be two sequences of one length >= 2, got {len(Ns)}, {len(dims)}."
    )
  if any(x is None for x in dims):
    return None
  return float(np.polyfit(np.log10(n), np.log(np.asarray(dims, np.float64)), 1)[0])


def bound_dimension(bound: Callable[[int], float], target: float) -> int | None:
  """Smallest integer ``d >= 1`` with ``bound(d) >= target``, for a guarantee that grows with d.

  Doubling from ``d = 1``, then bisection between the last two powers of two.

  Args:
    bound: ``d -> guaranteed margin`` (non-decreasing in ``d``), e.g.
      ``lambda d: documents_only_bound(m, n, d)``.
    target: the margin to guarantee.

  Returns:
    ``d`` as an int, or ``None`` when no ``d`` up to about ``1e9`` reaches ``target``.
  """
  if not callable(bound):
    raise TypeError(f"bound must be a callable d -> margin, got {type(bound).__name__}.")
  hi = 1
  while bound(hi) < target:
    hi *= 2
    if hi > 1e9:
      return None
  lo = hi // 2
  while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (lo, mid) if bound(mid) >= target else (mid, hi)
  return hi


def projected_row_margins(
  key: jax.Array, U: ArrayLike, V: ArrayLike, A: ArrayLike, d: int, *, steps: int = 500
) -> dict[str, np.ndarray | float]:
  r"""Per-row margins after one Gaussian map ``G`` (drawn from ``key``) for three query routes.

  With ``V' = `` :func:`project_documents` ``(key, V, A, d).V`` and ``Y = 2A - 1``, the margin of
  row ``j`` is :math:`\min_i Y_{ji} \langle u_j, V'_i \rangle` for

  * ``"projected"``: ``u_j = normalize(U_j G)``, the source queries through the same map;
  * ``"resolved"``: ``u_j`` the max-margin query for ``V'`` (documents-only route);
  * ``"random"``: ``u_j`` a random unit vector (the trivial baseline; key ``fold_in(key, 7)``).

  Computed in float64 on the host from the float32 projection.

  Args:
    key: a ``jax.random.key``.
    U: ``[N, D]`` source queries (nonzero rows).
    V: ``[n, D]`` source documents.
    A: ``[N, n]`` binary relevance.
    d: target dimension (positive int).
    steps: FISTA iterations per re-solved row.

  Returns:
    ``{"projected", "resolved", "random": [N] float64 row margins, "fista_gap": float}``; the
    gap is the largest FISTA duality gap over the rows with a positive re-solved margin.
  """
  A, U, V = np.asarray(A), np.asarray(U, np.float64), np.asarray(V)
  if U.ndim != 2 or U.shape[0] != A.shape[0] or U.shape[1] != V.shape[1]:
    raise ValueError(f"U must have shape [N, D] = [{A.shape[0]}, {V.shape[1]}], got {U.shape}.")
  res = project_documents(key, jnp.asarray(V, jnp.float32), jnp.asarray(A), d, steps=steps)
  Y, Vp = np.where(A, 1.0, -1.0), np.asarray(res.V, np.float64)
  Up = U @ np.asarray(gaussian_map(key, V.shape[1], d), np.float64)  # the map res.V came from
  Ur = np.asarray(jax.random.normal(jax.random.fold_in(key, 7), (A.shape[0], d)), np.float64)
  unit = lambda X: X / np.linalg.norm(X, axis=1, keepdims=True)
  rb = np.asarray(res.row_margin, np.float64)
  gap = np.where(rb > 0, np.asarray(res.row_upper - res.row_margin), 0.0)
  return {
    "projected": np.min(Y * (unit(Up) @ Vp.T), axis=1),
    "resolved": rb,
    "random": np.min(Y * (unit(Ur) @ Vp.T), axis=1),
    "fista_gap": float(np.max(gap)),
  }
