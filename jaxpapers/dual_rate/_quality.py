"""Compute saved at matched quality (the paper's headline measure), the gains of
dual-rate sampling over its controls in seed std, and rows aggregated over
training seeds.

A *row* is one sampler setting's measurement, a dict with ``method``, ``steps``
(N), ``interval_K`` (K, None for a single network), ``fd_mean`` / ``fd_std``
(FD-proxy over seeds), ``mflops_per_sample`` and ``wall_s`` (None when not
timed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers.core import ci95_halfwidth

_ROW_FIELDS = (
  "method",
  "steps",
  "interval_K",
  "fd_mean",
  "fd_std",
  "mflops_per_sample",
  "wall_s",
)


def matched_quality(
  rows: Sequence[Mapping[str, Any]],
  flops: Mapping[str, Mapping[str, float]],
  base_methods: Sequence[str] = ("baseline",),
  dual_methods: Sequence[str] = ("dual-rate",),
) -> dict[str, Any]:
  r"""FLOP and wall-time reduction of dual-rate sampling at the single network's
  best quality.

  The target is the best ``base_methods`` row's FD plus its seed std,
  :math:`\mathrm{FD}^* = \min_b \mathrm{FD}_b + \sigma_b`; the reduction is the
  cheapest ``base_methods`` row reaching it over the cheapest ``dual_methods``
  row with ``K > 1`` reaching it (``K = 1`` refreshes the encoder every step: no
  reuse, not dual-rate sampling).

  Args:
    rows: the measured rows (see the module docstring).
    flops: per-call FLOPs; ``flops["dual"]["denoiser"]`` and ``["encoder"]``
      give the cost ratio.
    base_methods: the single-network methods (samplers) that set the target.
    dual_methods: the dual-rate methods that may meet it.

  Returns:
    ``{"target_fd", "baseline_best", "baseline_cheapest_at_target",
    "dual_rate_cheapest_at_target" (None when none reaches it),
    "flop_reduction_at_matched_quality", "wall_reduction_at_matched_quality"
    (None when not reached or not timed), "cost_ratio_light_over_heavy",
    "wall_vs_flop_ratio_vs_k1"}``, the last one row per ``'dual-rate'`` (N, K
    > 1) with a K = 1 row at the same N: its FLOP and wall-time ratios against
    that row.

  Raises:
    ValueError: no row of ``base_methods``, or a row without a field named
      above.
  """
  for r in rows:
    missing = [f for f in _ROW_FIELDS if f not in r]
    if missing:
      raise ValueError(f"rows must hold {_ROW_FIELDS}; a row lacks {missing}")
  base_rows = [r for r in rows if r["method"] in base_methods]
  if not base_rows:
    raise ValueError(f"rows hold no row of base_methods={tuple(base_methods)}")
  best = min(base_rows, key=lambda r: r["fd_mean"])
  target = best["fd_mean"] + best["fd_std"]

  def cheapest(pred):
    ok = [r for r in rows if pred(r) and r["fd_mean"] <= target]
    return min(ok, key=lambda r: r["mflops_per_sample"]) if ok else None

  # never None when cd is not: best reaches it
  cb = cheapest(lambda r: r["method"] in base_methods)
  cd = cheapest(
    lambda r: r["method"] in dual_methods and (r["interval_K"] or 0) > 1
  )
  headline = {
    "target_fd": target,
    "baseline_best": best,
    "baseline_cheapest_at_target": cb,
    "dual_rate_cheapest_at_target": cd,
    "flop_reduction_at_matched_quality": (
      cb["mflops_per_sample"] / cd["mflops_per_sample"]
    )
    if cd and cb
    else None,
    "wall_reduction_at_matched_quality": (cb["wall_s"] / cd["wall_s"])
    if cd and cb and cb["wall_s"] and cd["wall_s"]
    else None,
    "cost_ratio_light_over_heavy": flops["dual"]["denoiser"]
    / flops["dual"]["encoder"],
  }
  # Measured wall-time ratio beside the FLOP ratio: dual-rate K > 1 against K =
  # 1 at the same N.
  by_nk = {
    (r["steps"], r["interval_K"]): r for r in rows if r["method"] == "dual-rate"
  }
  headline["wall_vs_flop_ratio_vs_k1"] = [
    {
      "steps": n,
      "K": k,
      "flop_ratio": by_nk[(n, 1)]["mflops_per_sample"] / r["mflops_per_sample"],
      "wall_ratio": by_nk[(n, 1)]["wall_s"] / r["wall_s"]
      if r["wall_s"] and by_nk[(n, 1)]["wall_s"]
      else None,
    }
    for (n, k), r in sorted(by_nk.items())
    if k > 1 and (n, 1) in by_nk
  ]
  return headline


_ROW_KEY = ("method", "steps", "interval_K", "refresh_kind", "sampler")


def _require(
  rows: Sequence[Mapping[str, Any]], fields: Sequence[str], name: str
) -> None:
  for r in rows:
    missing = [f for f in fields if f not in r]
    if missing:
      raise ValueError(
        f"{name} must hold {tuple(fields)}; a row lacks {missing}"
      )


def aggregate_rows(
  per_seed_rows: Sequence[Sequence[Mapping[str, Any]]],
) -> list[dict[str, Any]]:
  """Rows of several training seeds as one row per setting, in the first seed's
  order.

  A setting is the row's ``method``, ``steps``, ``interval_K``, ``refresh_kind``
  and ``sampler``. Over the seeds that ran it: ``fd_mean``, ``kid_mean``,
  ``class_acc`` and ``wall_s`` (over the timed seeds) are means; ``fd_std`` /
  ``kid_std`` the (population) std over training seeds of the per-seed means,
  with ``fd_ci95`` and ``fd_train_seeds``; ``fd_sampling_std`` the mean
  sampling-seed std. A setting of one seed keeps its row.

  Args:
    per_seed_rows: per training seed, its rows (see the module docstring; plus
      ``kid_mean``, ``class_acc`` and the setting's fields).

  Returns:
    The aggregated rows, each with ``num_train_seeds``; one training seed: its
    rows unchanged.

  Raises:
    ValueError: no training seed.
  """
  if not per_seed_rows:
    raise ValueError(
      "per_seed_rows must hold the rows of at least one training seed"
    )
  if len(per_seed_rows) == 1:
    return [dict(r) for r in per_seed_rows[0]]
  groups = {}
  for seed_rows in per_seed_rows:
    for r in seed_rows:
      groups.setdefault(tuple(r[k] for k in _ROW_KEY), []).append(r)
  out = []
  for rs in groups.values():
    if len(rs) == 1:
      out.append({**rs[0], "num_train_seeds": 1})
      continue
    fds = [r["fd_mean"] for r in rs]
    walls = [r["wall_s"] for r in rs if r.get("wall_s")]
    row = dict(rs[0])
    row.update(
      fd_mean=float(np.mean(fds)),
      fd_std=float(np.std(fds)),
      fd_ci95=ci95_halfwidth(fds) if len(fds) > 1 else None,
      fd_train_seeds=[float(v) for v in fds],
      fd_sampling_std=float(np.mean([r["fd_std"] for r in rs])),
      fd_seeds=None,
      kid_mean=float(np.mean([r["kid_mean"] for r in rs])),
      kid_std=float(np.std([r["kid_mean"] for r in rs])),
      class_acc=float(np.mean([r["class_acc"] for r in rs])),
      wall_s=float(np.mean(walls)) if walls else None,
      num_train_seeds=len(rs),
    )
    if all("fd_train_mean" in r for r in rs):
      row["fd_train_mean"] = float(np.mean([r["fd_train_mean"] for r in rs]))
      row["fd_train_std"] = float(np.std([r["fd_train_mean"] for r in rs]))
    out.append(row)
  return out


def gain_in_std(worse: Mapping[str, Any], better: Mapping[str, Any]) -> float:
  r"""The FD gain of ``better`` over ``worse`` in their combined seed std.

  :math:`(\mathrm{FD}_w - \mathrm{FD}_b) / \sqrt{\sigma_w^2 + \sigma_b^2}`, > 0
  when ``better`` is better.

  Args:
    worse: a row with ``fd_mean`` and ``fd_std``.
    better: a row with ``fd_mean`` and ``fd_std``.

  Returns:
    The gain (a float).

  Raises:
    ValueError: a row without ``fd_mean`` or ``fd_std``.
  """
  _require((worse, better), ("fd_mean", "fd_std"), "worse and better")
  noise = float(np.hypot(worse["fd_std"], better["fd_std"])) + 1e-12
  return (worse["fd_mean"] - better["fd_mean"]) / noise


def _median_or_none(values):
  return float(np.median(values)) if values else None


def gain_at_equal_cost(
  rows: Sequence[Mapping[str, Any]], competitor: str
) -> float | None:
  """The median gain of dual-rate sampling over ``competitor`` at equal or lower
  FLOPs.

  Over the ``'dual-rate'`` rows r with ``K > 1``: :func:`gain_in_std` of r over
  the best (lowest FD) ``competitor`` row costing at most r's FLOPs; rows
  without one are skipped.

  Args:
    rows: the measured rows (see the module docstring).
    competitor: the competing method's name.

  Returns:
    The median gain, or None when no row has a competitor.

  Raises:
    ValueError: a row without ``method``.
  """
  _require(rows, ("method",), "rows")
  gains = []
  for r in rows:
    if (
      r["method"] != "dual-rate" or not r["interval_K"] or r["interval_K"] <= 1
    ):
      continue
    cost = r["mflops_per_sample"] * 1.0001
    cand = [
      c
      for c in rows
      if c["method"] == competitor and c["mflops_per_sample"] <= cost
    ]
    if cand:
      gains.append(gain_in_std(min(cand, key=lambda c: c["fd_mean"]), r))
  return _median_or_none(gains)


def paired_gain(
  rows: Sequence[Mapping[str, Any]],
  method: str,
  other: str,
  same: Sequence[str] = ("steps", "interval_K"),
  pred: Callable[[Mapping[str, Any]], bool] | None = None,
) -> float | None:
  """The median gain of ``method`` over ``other`` over the pairs of rows that
  match.

  Args:
    rows: the measured rows (see the module docstring).
    method: the method whose rows gain.
    other: the method they are compared with.
    same: the fields a pair shares.
    pred: which ``method`` rows count (None: every one).

  Returns:
    The median :func:`gain_in_std` over the pairs, or None without a pair.

  Raises:
    ValueError: a row without ``method``.
  """
  _require(rows, ("method",), "rows")
  gains = []
  for r in rows:
    if r["method"] != method or (pred is not None and not pred(r)):
      continue
    for o in rows:
      if o["method"] == other and all(o[f] == r[f] for f in same):
        gains.append(gain_in_std(o, r))
  return _median_or_none(gains)
