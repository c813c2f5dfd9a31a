"""The view-scaling claims' numbers from a measured sweep: exponents and views
within 10 s.

The paper claims linear complexity in the number of views and 500+ views in
under 10 s. From a sweep of :func:`view_scaling` (forward time and XLA's buffer
estimate per view count), each model's time and memory grow as ``S^a``: ``a`` is
the log-log least-squares slope over the view counts ``S >= fit_min_views``
(:func:`jaxpapers.core.power_law_fit`, with its 95% t-interval), and the views
within the 10 s budget are read off the measured times and off the fitted law.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers import core

BUDGET_S = 10.0  # the paper's time budget (500+ views in < 10 s)


def views_within(
  budget_s: float,
  views: Sequence[int],
  times: Sequence[float],
  slope: float,
  intercept: float,
) -> tuple[int, float]:
  r"""The views a time budget allows: the largest measured, and the power law's
  estimate.

  Args:
    budget_s: the time budget in seconds (> 0).
    views: ``[m]`` view counts ``S`` of the sweep.
    times: ``[m]`` forward times in seconds (NaN where not measured).
    slope: the fitted exponent ``a`` of ``t = e^b S^a``.
    intercept: the fitted ``b`` (natural log).

  Returns:
    ``(measured, fit)``: the largest ``S`` with a finite time ``<= budget_s`` (0
    if none), and :math:`\exp((\ln t_\text{budget} - b) / a)` (NaN unless ``a``
    is finite and > 0).

  Raises:
    ValueError: ``budget_s <= 0`` or ``views`` and ``times`` differ in length.
  """
  if not budget_s > 0:
    raise ValueError(f"budget_s must be > 0 seconds, got {budget_s!r}")
  if len(views) != len(times):
    raise ValueError(
      f"views and times must have the same length, got {len(views)}, "
      f"{len(times)}"
    )
  ok = [v for v, t in zip(views, times) if np.isfinite(t) and t <= budget_s]
  measured = max(ok) if ok else 0
  good = np.isfinite(slope) and slope > 0
  est = (
    float(np.exp((np.log(budget_s) - intercept) / slope))
    if good
    else float("nan")
  )
  return measured, est


def scaling_summary(
  views: Sequence[int],
  sweep: Mapping[str, Mapping[str, Any]],
  *,
  fit_min_views: int,
) -> dict[str, dict[str, Any]]:
  """Each model's sweep with its time and memory exponents and its views within
  10 s.

  Args:
    views: ``[m]`` view counts of the sweep.
    sweep: :func:`view_scaling`'s result: model name -> ``{"time_s",
      "memory_mib", "compile_s", "time_s_repeats"}`` lists over ``views``.
    fit_min_views: the smallest view count in the fits (the start of the
      asymptotic regime).

  Returns:
    Model name -> ``{"time_s", "memory_mib", "compile_s", "time_s_repeats",
    "time_exponent", "time_exponent_stderr", "time_exponent_ci95",
    "time_fit_points", "memory_exponent", "views_in_10s_measured",
    "views_in_10s_fit"}``: the measurements, the log-log slopes (time with its
    standard error, 95% half-width and point count) and :func:`views_within` at
    10 s.

  Raises:
    ValueError: a model's lists are not as long as ``views``.
  """
  out = {}
  for name, m in sweep.items():
    times, mems = m["time_s"], m["memory_mib"]
    if len(times) != len(views) or len(mems) != len(views):
      raise ValueError(
        f"sweep[{name!r}] must have one time and memory per view count"
      )
    fit = core.power_law_fit(views, times, min_x=fit_min_views)
    measured, est = views_within(
      BUDGET_S, views, times, fit.slope, fit.intercept
    )
    out[name] = {
      "time_s": times,
      "memory_mib": mems,
      "compile_s": m["compile_s"],
      "time_s_repeats": m["time_s_repeats"],
      "time_exponent": fit.slope,
      "time_exponent_stderr": fit.se,
      "time_exponent_ci95": fit.ci95,
      "time_fit_points": fit.n,
      "memory_exponent": core.power_law_fit(
        views, mems, min_x=fit_min_views
      ).slope,
      "views_in_10s_measured": measured,
      "views_in_10s_fit": est,
    }
  return out
