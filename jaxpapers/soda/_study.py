"""Reading a horizon study: the best run per horizon, SODA's gap, the
weight-decay transfer.

A horizon study (:func:`jaxpapers.soda.horizon_sweep` at several horizons ``T``)
gives one row per (horizon, optimizer family, hyperparameters): ``{"horizon": T,
"family": "adamw", "lr", "wd" (bases only), "metric" (seed mean, lower is
better), "metric_std" (over seeds)}``. These functions answer the paper's two
questions from such rows: does the tuned weight decay of a base optimizer move
with the horizon (:func:`wd_transfer`), and does SODA without weight decay keep
up with the base tuned over learning rate x weight decay (:func:`horizon_gaps`);
and whether each tuned optimum lies inside the grid that was run
(:func:`grid_edges`). Host-side and pure: JSON-like rows in, dicts out.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

_ROW_KEYS = ("horizon", "family", "metric")


def _check_rows(rows: Any) -> None:
  if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
    raise TypeError(
      f"rows must be a sequence of row mappings, got {type(rows).__name__}"
    )
  for i, r in enumerate(rows):
    if not isinstance(r, Mapping):
      raise TypeError(f"rows[{i}] must be a mapping, got {type(r).__name__}")
    missing = [k for k in _ROW_KEYS if k not in r]
    if missing:
      raise ValueError(
        f"rows[{i}] must have the keys {list(_ROW_KEYS)}, lacks {missing}"
      )


def _check_horizons(horizons: Any) -> tuple[int, ...]:
  if (
    isinstance(horizons, (str, bytes))
    or not isinstance(horizons, Sequence)
    or not horizons
    or not all(
      isinstance(t, numbers.Integral) and not isinstance(t, bool)
      for t in horizons
    )
  ):
    raise ValueError(
      f"horizons must be a non-empty sequence of ints, got {horizons!r}"
    )
  return tuple(horizons)


def best_run(
  rows: Sequence[Mapping[str, Any]], horizon: int, family: str, **fixed: float
) -> Mapping[str, Any] | None:
  """The best row of ``family`` at ``horizon``: argmin of the seed-mean metric.

  Args:
    rows: the study's rows (module docstring).
    horizon: T, in steps.
    family: the optimizer family, e.g. ``'adamw'`` or ``'soda_adamw'``.
    **fixed: hyperparameters the row must have, e.g. ``wd=0.0`` (the best
      learning rate at weight decay 0).

  Returns:
    The row itself (not a copy) with the lowest ``metric`` among those matching,
    or ``None`` when none match. A non-finite metric (a diverged run) ranks
    last, so it is chosen only when every candidate diverged.

  Raises:
    TypeError: ``rows`` is not a sequence of mappings.
    ValueError: a row lacks ``horizon``, ``family`` or ``metric``.
  """
  _check_rows(rows)
  cand = [
    r
    for r in rows
    if r["horizon"] == horizon
    and r["family"] == family
    and all(r.get(k) == v for k, v in fixed.items())
  ]
  if not cand:
    return None
  return min(
    cand, key=lambda r: r["metric"] if math.isfinite(r["metric"]) else math.inf
  )


def horizon_gaps(
  rows: Sequence[Mapping[str, Any]],
  horizons: Sequence[int],
  base: str,
  wrapped: str,
) -> list[dict]:
  """Per horizon: the base tuned over learning rate x weight decay against its
  SODA arm.

  The gap is ``best base - best SODA`` (signed so that > 0 favours SODA) and, in
  combined seed std, ``gap / sqrt(std_base² + std_soda²)``.

  Args:
    rows: the study's rows (module docstring).
    horizons: the horizons to compare at.
    base: the base family (``'adamw'``, ``'muon'``): rows with ``lr`` and
      ``wd``.
    wrapped: its SODA family (``'soda_adamw'``, ``'soda_muon'``): rows with
      ``lr``.

  Returns:
    One dict per horizon where both arms have a row: ``{"horizon", "base",
    "best_wd", "best_lr", "best_base", "base_wd0" (the best base at wd = 0, or
    None), "soda", "soda_lr", "soda_minus_best_base", "gap_in_seed_std",
    "soda_beats_wd0" (None without a wd = 0 row)}``.

  Raises:
    TypeError: ``rows`` is not a sequence of mappings.
    ValueError: a malformed row, or ``horizons`` not a non-empty sequence of
      ints.
  """
  out = []
  for t in _check_horizons(horizons):
    b, s = best_run(rows, t, base), best_run(rows, t, wrapped)
    b0 = best_run(rows, t, base, wd=0.0)
    if b is None or s is None:
      continue
    gap = b["metric"] - s["metric"]  # > 0: SODA better
    noise = math.sqrt(b["metric_std"] ** 2 + s["metric_std"] ** 2) + 1e-12
    out.append(
      {
        "horizon": t,
        "base": base,
        "best_wd": b["wd"],
        "best_lr": b["lr"],
        "best_base": b["metric"],
        "base_wd0": b0["metric"] if b0 else None,
        "soda": s["metric"],
        "soda_lr": s["lr"],
        "soda_minus_best_base": gap,
        "gap_in_seed_std": gap / noise,
        "soda_beats_wd0": (s["metric"] < b0["metric"]) if b0 else None,
      }
    )
  return out


def wd_transfer(
  rows: Sequence[Mapping[str, Any]], horizons: Sequence[int], base: str
) -> dict | None:
  """How much a weight decay tuned at one end of the horizon range costs at the
  other end.

  With ``wd_s`` / ``wd_l`` the best weight decay (lr x wd grid) at the shortest
  / longest horizon, the penalty at the longest horizon is (best run over lr
  with ``wd = wd_s``) - (best run), in combined seed std; likewise at the
  shortest horizon with ``wd_l``. The larger of the two says whether the tuned
  weight decay must move with the horizon (0 when the same weight decay is best
  at both ends).

  Args:
    rows: the study's rows (module docstring).
    horizons: the horizons the base was run at (their min and max are the ends).
    base: the base family (rows with ``lr`` and ``wd``).

  Returns:
    ``{"base", "best_wd_by_horizon", "best_lr_by_horizon" ({str(T): value}),
    "penalty_at_longest_in_std", "penalty_at_shortest_in_std"}``, or ``None``
    when an end has no row of ``base``.

  Raises:
    TypeError: ``rows`` is not a sequence of mappings.
    ValueError: a malformed row, ``horizons`` not a non-empty sequence of ints,
      or no row of ``base`` at a horizon between the ends or at one end with the
      other end's weight decay.
  """
  hs = _check_horizons(horizons)
  t_s, t_l = min(hs), max(hs)
  bs, bl = best_run(rows, t_s, base), best_run(rows, t_l, base)
  if bs is None or bl is None:
    return None

  def need(t, **fixed):
    r = best_run(rows, t, base, **fixed)
    if r is None:
      at = f"horizon {t}" + (f" with {fixed}" if fixed else "")
      raise ValueError(f"rows hold no {base} run at {at}")
    return r

  def penalty(t, best, wd):
    other = need(t, wd=wd)
    gap = other["metric"] - best["metric"]
    return gap / (
      math.sqrt(best["metric_std"] ** 2 + other["metric_std"] ** 2) + 1e-12
    )

  return {
    "base": base,
    "best_wd_by_horizon": {str(t): need(t)["wd"] for t in hs},
    "best_lr_by_horizon": {str(t): need(t)["lr"] for t in hs},
    "penalty_at_longest_in_std": penalty(t_l, bl, bs["wd"]),
    "penalty_at_shortest_in_std": penalty(t_s, bs, bl["wd"]),
  }


def _edge(value: float, grid: list[float], *, lower: bool = True) -> str:
  """``'low'`` / ``'high'`` when ``value`` is the smallest / largest of
  ``grid``, else ``''``.

  With ``lower=False`` only the top end counts (a weight decay of 0 bounds the
  search space itself). A grid of one value has the value at its edge
  (``'low'``, or ``'high'`` without ``lower``).
  """
  if lower and value <= min(grid):
    return "low"
  if value >= max(grid):
    return "high"
  return ""


def grid_edges(
  rows: Sequence[Mapping[str, Any]],
  horizons: Sequence[int],
  base: str,
  wrapped: str,
) -> dict[str, dict]:
  """Per horizon: does each tuned optimum lie inside the grid that was run?

  The best ``base`` run (lr x wd) and the best ``wrapped`` (SODA) run (lr) at
  ``T`` are compared with the values their family ran at ``T``: an optimum at
  the smallest or largest is at an edge (for the weight decay only the largest:
  0 bounds the search space). An optimum at an edge may lie beyond the grid, so
  that arm is not tuned there.

  Args:
    rows: the study's rows (module docstring).
    horizons: the horizons to check.
    base: the base family (rows with ``lr`` and ``wd``).
    wrapped: its SODA family (rows with ``lr``).

  Returns:
    ``{str(T): {"base_lr", "base_lr_edge", "base_wd", "base_wd_edge", "soda_lr",
    "soda_lr_edge", "base_at_edge" (0-2), "at_edge" (0-3)}}`` for each horizon
    where both arms have a row, with each ``*_edge`` in ``'low'``, ``'high'``,
    ``''``.

  Raises:
    TypeError: ``rows`` is not a sequence of mappings.
    ValueError: a malformed row, or ``horizons`` not a non-empty sequence of
      ints.
  """
  out = {}
  for t in _check_horizons(horizons):
    b, s = best_run(rows, t, base), best_run(rows, t, wrapped)
    if b is None or s is None:
      continue
    grid = lambda fam, key: sorted(
      {r[key] for r in rows if r["horizon"] == t and r["family"] == fam}
    )
    e = {
      "base_lr": b["lr"],
      "base_lr_edge": _edge(b["lr"], grid(base, "lr")),
      "base_wd": b["wd"],
      "base_wd_edge": _edge(b["wd"], grid(base, "wd"), lower=False),
      "soda_lr": s["lr"],
      "soda_lr_edge": _edge(s["lr"], grid(wrapped, "lr")),
    }
    e["base_at_edge"] = sum(
      bool(e[k]) for k in ("base_lr_edge", "base_wd_edge")
    )
    e["at_edge"] = e["base_at_edge"] + bool(e["soda_lr_edge"])
    out[str(t)] = e
  return out
