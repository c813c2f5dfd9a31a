"""The dimension threshold ``d* = C k ln(n/k)`` and the loss comparison, read
off measured margins.

* :func:`threshold_constants`: per ``(n, k)``, the first grid ``d`` where the
  best margin is positive and where it reaches half the optimum, and
  ``C = d_half / (k ln(n/k))``.
* :func:`seed_threshold_constants` / :func:`pooled_threshold_constants`: the
  same constant per seed on the integer ``d`` grid (from
  :func:`half_margin_dimensions`), its spread over the ``(n, k)`` and its value
  pooled over them.
* :func:`loss_wins`: sigmoid against InfoNCE, cell by cell, on each margin
  notion.
* :func:`critical_n_fit`: the critical ``n`` per ``d`` against ``n = k exp(d / (C k))``.

References:
  arXiv:2605.23556 (``d = Theta(k log(n/k))`` necessary and sufficient; the loss
  comparison).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers.core import ci95_halfwidth

NOTIONS = ("m0", "mg", "mq")
_ROW_FIELDS = ("n", "k", "d", "best_m0", "m_inf")


def threshold_constants(
  rows: Sequence[Mapping[str, Any]], ns: Sequence[int], ks: Sequence[int]
) -> list[dict[str, Any]]:
  """Per ``(n, k)``: the smallest grid ``d`` reaching half of ``m^rd(inf, A)``,
  over ``k ln(n/k)``.

  Args:
    rows: one per ``(n, k, d)``, with ``n``, ``k``, ``d``, ``best_m0`` (the best
      margin found) and ``m_inf`` (the optimum); any order.
    ns: the document counts, in output order (outer).
    ks: the relevant-set sizes, in output order (inner); an ``(n, k)`` without
      rows is skipped.

  Returns:
    Per ``(n, k)``: ``{"n", "k", "k_ln_n_over_k", "m_inf", "d_positive" (first d
    with best_m0 > 0), "d_half" (first d with best_m0 >= m_inf / 2), "C_half" (=
    d_half / (k ln(n/k)))}``, the last three None when never reached.

  Raises:
    ValueError: a row without one of the fields above.
  """
  for r in rows:
    missing = [f for f in _ROW_FIELDS if f not in r]
    if missing:
      raise ValueError(f"rows must hold {_ROW_FIELDS}; a row lacks {missing}")
  out = []
  for n in ns:
    for k in ks:
      rs = sorted(
        [r for r in rows if r["n"] == n and r["k"] == k], key=lambda r: r["d"]
      )
      if not rs:
        continue
      hit = [r["d"] for r in rs if r["best_m0"] >= 0.5 * r["m_inf"]]
      pos = [r["d"] for r in rs if r["best_m0"] > 0]
      scale = k * math.log(n / k)
      out.append(
        {
          "n": n,
          "k": k,
          "k_ln_n_over_k": scale,
          "m_inf": rs[0]["m_inf"],
          "d_positive": pos[0] if pos else None,
          "d_half": hit[0] if hit else None,
          "C_half": hit[0] / scale if hit else None,
        }
      )
  return out


def seed_threshold_constants(
  n: int, k: int, ref: Mapping[str, Any]
) -> dict[str, Any]:
  """``C = d_half / (k ln(n/k))`` per seed of one ``(n, k)`` from its bisection.

  Args:
    n: documents.
    k: relevant documents per query, ``0 < k < n``.
    ref: :func:`half_margin_dimensions`'s result: ``{"d_half": [S], "censored":
      [S], "rounds"}``.

  Returns:
    ``{"n", "k", "k_ln_n_over_k", "d_half_per_seed", "censored",
    "bisection_rounds", "C_per_seed" [S] (None where a seed never reached half),
    "C_mean", "C_ci95"}``, the last two (over seeds) None unless every seed
    reached half the optimum.

  Raises:
    ValueError: ``k`` outside ``(0, n)``.
  """
  if not 0 < k < n:
    raise ValueError(f"k must satisfy 0 < k < n, got n={n}, k={k}")
  scale = k * math.log(n / k)
  Cs = [None if d is None else d / scale for d in ref["d_half"]]
  ok = [c for c in Cs if c is not None]
  full = len(ok) == len(Cs)
  return {
    "n": n,
    "k": k,
    "k_ln_n_over_k": scale,
    "d_half_per_seed": ref["d_half"],
    "censored": ref["censored"],
    "bisection_rounds": ref["rounds"],
    "C_per_seed": Cs,
    "C_mean": float(np.mean(ok)) if full else None,
    "C_ci95": ci95_halfwidth(ok) if full else None,
  }


def pooled_threshold_constants(
  per_nk: Sequence[Mapping[str, Any]], seeds: int
) -> dict[str, Any]:
  """The spread of the ``(n, k)`` constants and the constant pooled over
  ``(n, k)`` per seed.

  Args:
    per_nk: :func:`seed_threshold_constants` per ``(n, k)``.
    seeds: the number of seeds of each.

  Returns:
    ``{"per_nk"}``, and when every ``(n, k)`` is complete also ``"C_median"``,
    ``"C_min"``, ``"C_max"`` (over the ``(n, k)`` seed means),
    ``"C_pooled_per_seed"`` [seeds] (per seed, the mean of C over the
    ``(n, k)``), ``"C_pooled_mean"`` and ``"C_pooled_ci95"``.

  Raises:
    ValueError: ``seeds < 1``.
  """
  if seeds < 1:
    raise ValueError(f"seeds must be >= 1, got {seeds}")
  means = [q["C_mean"] for q in per_nk]
  out: dict[str, Any] = {"per_nk": list(per_nk)}
  if per_nk and all(c is not None for c in means):
    # Per seed, the mean of C over the (n, k): the seed-to-seed spread of the
    # pooled constant.
    pooled = [
      float(np.mean([q["C_per_seed"][s] for q in per_nk])) for s in range(seeds)
    ]
    out |= {
      "C_pooled_per_seed": pooled,
      "C_pooled_mean": float(np.mean(pooled)),
      "C_pooled_ci95": ci95_halfwidth(pooled),
      "C_median": float(np.median(means)),
      "C_min": float(min(means)),
      "C_max": float(max(means)),
    }
  return out


def loss_wins(
  rows: Sequence[Mapping[str, Any]], loss_n: int, tie: float = 0.005
) -> dict[str, dict[str, Any]]:
  """Sigmoid against InfoNCE per margin notion, over the cells at
  ``n = loss_n``.

  Args:
    rows: one per cell, with ``n`` and, where both losses ran, ``"sigmoid"`` /
      ``"infonce"``: ``{"<notion>_mean"}`` for the notions ``m0``, ``mg``,
      ``mq``.
    loss_n: the document count of the comparison.
    tie: a cell where neither seed-mean exceeds the other by more than this is a
      tie.

  Returns:
    Per notion: ``{"sigmoid", "infonce", "tie"}`` (cell counts) and
    ``"mean_diff"`` (the mean of sigmoid minus InfoNCE; NaN without cells).

  Raises:
    ValueError: a negative ``tie``.
  """
  if tie < 0:
    raise ValueError(f"tie must be >= 0, got {tie}")
  wins = {}
  loss_rows = [
    r for r in rows if r["n"] == loss_n and "sigmoid" in r and "infonce" in r
  ]
  for m in NOTIONS:
    w: dict[str, Any] = {"sigmoid": 0, "infonce": 0, "tie": 0}
    diffs = []
    for r in loss_rows:
      a, b = r["sigmoid"][f"{m}_mean"], r["infonce"][f"{m}_mean"]
      diffs.append(a - b)
      w["sigmoid" if a - b > tie else "infonce" if b - a > tie else "tie"] += 1
    w["mean_diff"] = float(np.mean(diffs)) if diffs else float("nan")
    wins[m] = w
  return wins


def critical_n_fit(
  critical: Sequence[Mapping[str, Any]],
  constants: Sequence[Mapping[str, Any]],
  k: int,
  n_max: int,
  default_C: float,
) -> dict[str, Any]:
  """The critical ``n`` per ``d`` against the threshold's prediction
  ``n = k exp(d / (C k))``.

  Args:
    critical: per ``d``, ``{"d", "critical_n"}``.
    constants: :func:`threshold_constants`; ``C`` is the median of their
      ``C_half``.
    k: the relevant-set size of the critical-n search (>= 1).
    n_max: the search's cap (capped values are left out of the fits).
    default_C: ``C`` when no constant was measured (> 0).

  Returns:
    ``{"C" (3 decimals), "pred": {str(d): predicted n}}``, with ``"loglinear"``
    ``[a, b]`` of ``ln n = a + b d`` (two or more uncapped points) and
    ``"poly"`` (a polynomial in ``d`` of degree up to 3, lowest first; one or
    more uncapped points).

  Raises:
    ValueError: ``k < 1`` or ``default_C <= 0``.
  """
  if k < 1 or not default_C > 0:
    raise ValueError(
      f"k must be >= 1 and default_C > 0, got k={k}, default_C={default_C}"
    )
  Cs = [q["C_half"] for q in constants if q["C_half"] is not None]
  C = float(np.median(Cs)) if Cs else default_C
  pred = {str(c["d"]): k * math.exp(c["d"] / (C * k)) for c in critical}
  fit: dict[str, Any] = {"C": round(C, 3), "pred": pred}
  ds = np.array([c["d"] for c in critical], float)
  ns = np.array([c["critical_n"] for c in critical], float)
  keep = ns < n_max  # capped values carry no information about the growth
  ds, ns = ds[keep], ns[keep]
  if len(ds) >= 2 and (ns > 0).all():
    fit["loglinear"] = [float(x) for x in np.polyfit(ds, np.log(ns), 1)[::-1]]
  if len(ds) >= 1:
    fit["poly"] = [
      float(x) for x in np.polyfit(ds, ns, min(3, len(ds) - 1))[::-1]
    ]
  return fit
