"""Compute saved at matched quality: the paper's headline measure over measured sampler rows.

A *row* is one sampler setting's measurement, a dict with ``method``, ``steps`` (N),
``interval_K`` (K, None for a single network), ``fd_mean`` / ``fd_std`` (FD-proxy over seeds),
``mflops_per_sample`` and ``wall_s`` (None when not timed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_ROW_FIELDS = ("method", "steps", "interval_K", "fd_mean", "fd_std", "mflops_per_sample", "wall_s")


def matched_quality(
  rows: Sequence[Mapping[str, Any]],
  flops: Mapping[str, Mapping[str, float]],
  base_methods: Sequence[str] = ("baseline",),
  dual_methods: Sequence[str] = ("dual-rate",),
) -> dict[str, Any]:
  r"""FLOP and wall-time reduction of dual-rate sampling at the single network's best quality.

  The target is the best ``base_methods`` row's FD plus its seed std,
  :math:`\mathrm{FD}^* = \min_b \mathrm{FD}_b + \sigma_b`; the reduction is the cheapest
  ``base_methods`` row reaching it over the cheapest ``dual_methods`` row with ``K > 1`` reaching
  it (``K = 1`` refreshes the encoder every step: no reuse, not dual-rate sampling).

  Args:
    rows: the measured rows (see the module docstring).
    flops: per-call FLOPs; ``flops["dual"]["denoiser"]`` and ``["encoder"]`` give the cost ratio.
    base_methods: the single-network methods (samplers) that set the target.
    dual_methods: the dual-rate methods that may meet it.

  Returns:
    ``{"target_fd", "baseline_best", "baseline_cheapest_at_target",
    "dual_rate_cheapest_at_target" (None when none reaches it),
    "flop_reduction_at_matched_quality", "wall_reduction_at_matched_quality" (None when not
    reached or not timed), "cost_ratio_light_over_heavy", "wall_vs_flop_ratio_vs_k1"}``, the last
    one row per ``'dual-rate'`` (N, K > 1) with a K = 1 row at the same N: its FLOP and wall-time
    ratios against that row.

  Raises:
    ValueError: no row of ``base_methods``, or a row without a field named above.
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

  cb = cheapest(lambda r: r["method"] in base_methods)  # never None when cd is not: best reaches it
  cd = cheapest(lambda r: r["method"] in dual_methods and (r["interval_K"] or 0) > 1)
  headline = {
    "target_fd": target,
    "baseline_best": best,
    "baseline_cheapest_at_target": cb,
    "dual_rate_cheapest_at_target": cd,
    "flop_reduction_at_matched_quality": (cb["mflops_per_sample"] / cd["mflops_per_sample"])
    if cd and cb
    else None,
    "wall_reduction_at_matched_quality": (cb["wall_s"] / cd["wall_s"])
    if cd and cb and cb["wall_s"] and cd["wall_s"]
    else None,
    "cost_ratio_light_over_heavy": flops["dual"]["denoiser"] / flops["dual"]["encoder"],
  }
  # Measured wall-time ratio beside the FLOP ratio: dual-rate K > 1 against K = 1 at the same N.
  by_nk = {(r["steps"], r["interval_K"]): r for r in rows if r["method"] == "dual-rate"}
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
