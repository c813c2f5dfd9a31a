"""How many dimensions a margin needs: read off a d grid, from a bound, and
after projection.

* :func:`needed_dimension`: the smallest ``d`` (log-linear between grid points)
  from which on a grid of retained margin fractions stays at least ``f``.
* :func:`growth_slope`: the slope of ``ln d`` on ``log10 N`` (growth of the
  needed dimension per decade of queries ``N``; ``log(N n)`` rate vs the
  documents-only ``log n`` rate).
* :func:`bound_dimension`: the smallest integer ``d`` at which a monotone
  guarantee reaches a target (:func:`jl_bound`, :func:`documents_only_bound`).
* :func:`dimension_growth`: the needed dimension per seed and ``N``, its growth
  slopes and the bounds' dimensions, from the retained fractions of a (seed, d,
  N) grid.
* :func:`projected_row_margins`: per-row margins after one Gaussian map for the
  three routes of the main theorem's comparison: queries projected too, queries
  re-solved, random queries.

References:
  arXiv:2605.23556 (main theorem: ``d = O(m^{-2} log n)`` for the documents-only
  route).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import ci95_halfwidth
from jaxpapers.margins._constructions import (
  documents_only_bound,
  gaussian_map,
  jl_bound,
  project_documents,
)


def _grid(ds: Sequence[float], name: str = "ds") -> np.ndarray:
  g = np.asarray(ds, np.float64)
  if (
    g.ndim != 1
    or g.size == 0
    or not np.all(g > 0)
    or not np.all(np.diff(g) > 0)
  ):
    raise ValueError(
      f"{name} must be a non-empty, positive, strictly increasing 1-D grid, "
      f"got {ds!r}."
    )
  return g


def needed_dimension(
  ds: Sequence[float], retained: ArrayLike, f: float
) -> float | None:
  r"""Smallest ``d`` from which on the grid the retained fraction stays
  ``>= f``.

  With ``i`` the first grid index such that ``retained[j] >= f`` for every
  ``j >= i``, the crossing is interpolated log-linearly in ``d`` between
  ``ds[i-1]`` and ``ds[i]``:

  .. math:: d_f = \exp\Big(\ln d_{i-1} + \frac{f - r_{i-1}}{r_i - r_{i-1}}
            (\ln d_i - \ln d_{i-1})\Big).

  Args:
    ds: ``[D]`` positive, strictly increasing dimensions.
    retained: ``[D]`` retained margin fractions ``m_0(d) / m_src`` on that grid.
    f: the fraction to keep.

  Returns:
    ``d_f`` as a float; ``None`` when the last grid point is below ``f`` (more
    than ``max(ds)`` needed: censored); ``ds[0]`` when every grid point keeps
    ``f`` (at most that).

  Example:
    >>> needed_dimension([1, 2, 4], [0.2, 0.4, 0.8], 0.5)  # between d = 2 and d = 4
    2.378...
  """
  g = _grid(ds)
  r = np.asarray(retained, np.float64)
  if r.shape != g.shape:
    raise ValueError(
      f"retained must have shape {g.shape} (one value per d), got {r.shape}."
    )
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


def growth_slope(
  Ns: Sequence[float], dims: Sequence[float | None]
) -> float | None:
  r"""Least-squares slope ``b`` of ``ln d = a + b log10 N``: the needed
  dimension's relative growth per decade of queries (0 when it does not grow
  with ``N``).

  Args:
    Ns: ``[M]`` positive, strictly increasing numbers of queries (``M >= 2``).
    dims: ``[M]`` the needed dimensions at those ``N`` (``None`` where
      censored).

  Returns:
    The slope as a float, or ``None`` when some dimension is ``None``.
  """
  n = _grid(Ns, "Ns")
  if n.size < 2 or len(dims) != n.size:
    raise ValueError(
      f"Ns and dims must be two sequences of one length >= 2, got {len(Ns)}, "
      f"{len(dims)}."
    )
  if any(x is None for x in dims):
    return None
  return float(
    np.polyfit(np.log10(n), np.log(np.asarray(dims, np.float64)), 1)[0]
  )


def bound_dimension(bound: Callable[[int], float], target: float) -> int | None:
  """Smallest integer ``d >= 1`` with ``bound(d) >= target``, for a guarantee
  that grows with d.

  Doubling from ``d = 1``, then bisection between the last two powers of two.

  Args:
    bound: ``d -> guaranteed margin`` (non-decreasing in ``d``), e.g.
      ``lambda d: documents_only_bound(m, n, d)``.
    target: the margin to guarantee.

  Returns:
    ``d`` as an int, or ``None`` when no ``d`` up to about ``1e9`` reaches
    ``target``.
  """
  if not callable(bound):
    raise TypeError(
      f"bound must be a callable d -> margin, got {type(bound).__name__}."
    )
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


def dimension_growth(
  retained: Mapping[str, ArrayLike],
  ds: Sequence[float],
  Ns: Sequence[int],
  fractions: Sequence[float],
  *,
  m_src: float,
  n: int,
  delta: float,
) -> dict[str, Any]:
  """How the dimension that keeps a fraction of the margin grows with the number
  of queries.

  Per method, fraction ``f``, seed and ``N``: ``d_f`` (:func:`needed_dimension`
  over ``ds``); per seed its :func:`growth_slope` over ``Ns``, and the slope gap
  projected minus re-solved; per ``f`` the dimensions at which
  :func:`documents_only_bound` and (per ``N``) :func:`jl_bound` guarantee
  ``f m_src`` (:func:`bound_dimension`).

  Args:
    retained: method -> [S, D, len(Ns)] retained fractions ``m_0 / m_src``
      (seed, d, N); the methods include ``"projected"`` and ``"resolved"``.
    ds: the d grid (D values, increasing).
    Ns: the numbers of queries.
    fractions: the fractions ``f`` (keys as ``str(f)``).
    m_src: the source margin.
    n: the number of documents.
    delta: the bounds' failure probability.

  Returns:
    ``{"retained_mean": {method: [D][len(Ns)] seed means}, "retained_ci95":
    {method: [D] [len(Ns)]}, "d_needed": {f: {method: [S][len(Ns)] (None above
    the grid)}}, "slopes": {f: {method: [S], "gap": [S]}}, "bound_dims": {f:
    {"documents_only", "jl": {str(N)}}}}``.

  Raises:
    ValueError: ``retained`` without ``"projected"`` or ``"resolved"``, or an
      array not of shape [S, D, len(Ns)].
  """
  if not {"projected", "resolved"} <= set(retained):
    raise ValueError(
      f"retained must hold 'projected' and 'resolved', got {sorted(retained)}"
    )
  r_all = {m: np.asarray(r, np.float64) for m, r in retained.items()}
  for m, r in r_all.items():
    if r.ndim != 3 or r.shape[1:] != (len(ds), len(Ns)):
      raise ValueError(
        f"retained[{m!r}] must be [S, {len(ds)}, {len(Ns)}], got {r.shape}"
      )
  seeds = r_all["projected"].shape[0]
  dneed, slopes, bounds = {}, {}, {}
  for f in map(str, fractions):
    dneed[f] = {
      m: [
        [needed_dimension(ds, r[s, :, j], float(f)) for j in range(len(Ns))]
        for s in range(seeds)
      ]
      for m, r in r_all.items()
    }
    per = {
      m: [growth_slope(Ns, dneed[f][m][s]) for s in range(seeds)] for m in r_all
    }
    gap = [
      None if a is None or b is None else a - b
      for a, b in zip(per["projected"], per["resolved"], strict=True)
    ]
    slopes[f] = {**per, "gap": gap}
    dim = lambda bound, f=float(f): bound_dimension(bound, f * m_src)
    bounds[f] = {
      "documents_only": dim(lambda d: documents_only_bound(m_src, n, d, delta)),
      "jl": {
        str(N): dim(lambda d, N=N: jl_bound(m_src, N, n, d, delta)) for N in Ns
      },
    }
  return {
    "retained_mean": {m: r.mean(axis=0).tolist() for m, r in r_all.items()},
    "retained_ci95": {
      m: [
        [ci95_halfwidth(r[:, i, j]) for j in range(len(Ns))]
        for i in range(len(ds))
      ]
      for m, r in r_all.items()
    },
    "d_needed": dneed,
    "slopes": slopes,
    "bound_dims": bounds,
  }


def projected_row_margins(
  key: jax.Array,
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  d: int,
  *,
  steps: int = 500,
) -> dict[str, np.ndarray | float]:
  r"""Per-row margins after one Gaussian map ``G`` (drawn from ``key``) for
  three query routes.

  With ``V' = `` :func:`project_documents` ``(key, V, A, d).V`` and
  ``Y = 2A - 1``, the margin of row ``j`` is :math:`\min_i Y_{ji} \langle u_j,
  V'_i \rangle` for

  * ``"projected"``: ``u_j = normalize(U_j G)``, the source queries through the
    same map;
  * ``"resolved"``: ``u_j`` the max-margin query for ``V'`` (documents-only
    route);
  * ``"random"``: ``u_j`` a random unit vector (the trivial baseline; key
    ``fold_in(key, 7)``).

  Computed in float64 on the host from the float32 projection.

  Args:
    key: a ``jax.random.key``.
    U: ``[N, D]`` source queries (nonzero rows).
    V: ``[n, D]`` source documents.
    A: ``[N, n]`` binary relevance.
    d: target dimension (positive int).
    steps: FISTA iterations per re-solved row.

  Returns:
    ``{"projected", "resolved", "random": [N] float64 row margins, "fista_gap":
    float}``; the gap is the largest FISTA duality gap over the rows with a
    positive re-solved margin.
  """
  A, U, V = np.asarray(A), np.asarray(U, np.float64), np.asarray(V)
  if U.ndim != 2 or U.shape[0] != A.shape[0] or U.shape[1] != V.shape[1]:
    raise ValueError(
      f"U must have shape [N, D] = [{A.shape[0]}, {V.shape[1]}], got {U.shape}."
    )
  res = project_documents(
    key, jnp.asarray(V, jnp.float32), jnp.asarray(A), d, steps=steps
  )
  Y, Vp = np.where(A, 1.0, -1.0), np.asarray(res.V, np.float64)
  # the map res.V came from
  Up = U @ np.asarray(gaussian_map(key, V.shape[1], d), np.float64)
  Ur = np.asarray(
    jax.random.normal(jax.random.fold_in(key, 7), (A.shape[0], d)), np.float64
  )
  unit = lambda X: X / np.linalg.norm(X, axis=1, keepdims=True)
  rb = np.asarray(res.row_margin, np.float64)
  gap = np.where(rb > 0, np.asarray(res.row_upper - res.row_margin), 0.0)
  return {
    "projected": np.min(Y * (unit(Up) @ Vp.T), axis=1),
    "resolved": rb,
    "random": np.min(Y * (unit(Ur) @ Vp.T), axis=1),
    "fista_gap": float(np.max(gap)),
  }
