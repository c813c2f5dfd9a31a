"""What one top-k sweep says about the budget: curves, peak, boundary and the
controller.

Host-side summaries of the library's jitted pieces, in the shapes a results file
records: :func:`coverage_summary` (Recall@k, purity and the coverage margin with
its boundary k*), :func:`k_peak` (the budget of the best accuracy),
:func:`cluster_k` (the budget the mean cluster size pins), :func:`decoupled`
(the paper's falsifiable prediction on one accuracy curve) and
:func:`controller_summary` (the threshold controller calibrated on dev queries,
applied to test queries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
import numpy.typing as npt

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._controls import (
  calibrate_threshold,
  threshold_controller,
)
from jaxpapers.evidence_coverage._coverage import (
  budget_boundary,
  effective_coverage,
)
from jaxpapers.evidence_coverage._data import ICLData
from jaxpapers.evidence_coverage._retrieval import (
  check_ks,
  purity_curve,
  recall_curve,
)


def coverage_summary(
  idx: jax.Array, data: ICLData, ks: Sequence[int]
) -> dict[str, Any]:
  """Recall@k, purity, the coverage margin ``Delta(k) = C_eff(k) - A(k)`` and
  its boundary.

  Args:
    idx: int [Q, K] retrieved pool indices per query (:func:`dense_topk`),
      ``K >= max(ks)``.
    data: the episode (its queries are the rows of ``idx``).
    ks: strictly increasing budgets.

  Returns:
    ``{"recall", "purity", "c_eff", "ambiguity", "delta"}``: lists of len(ks)
    floats (the means over queries of :func:`recall_curve`, :func:`purity_curve`
    and :func:`effective_coverage`), ``"k_star"`` (:func:`budget_boundary`,
    cumulative rule) and ``"k_star_average"`` (average rule), each an element of
    ``ks``.
  """
  out: dict[str, Any] = {
    "recall": np.asarray(recall_curve(idx, data, ks)).tolist(),
    "purity": np.asarray(purity_curve(idx, data, ks)).tolist(),
  }
  c_eff, amb, delta = (
    np.asarray(a).tolist() for a in effective_coverage(idx, data, ks)
  )
  out.update(c_eff=c_eff, ambiguity=amb, delta=delta)
  out["k_star"] = budget_boundary(ks, delta)
  out["k_star_average"] = budget_boundary(ks, delta, rule="average")
  return out


def _curve(a: npt.ArrayLike, name: str, n: int) -> np.ndarray:
  a = np.asarray(a, np.float64)
  if a.shape != (n,):
    raise ValueError(
      f"{name} must have shape ({n},) (one value per budget), got {a.shape}"
    )
  return a


def k_peak(acc: npt.ArrayLike, ks: Sequence[int]) -> int:
  """The budget of the highest accuracy (host-side).

  Args:
    acc: float [len(ks)] accuracy at each budget.
    ks: strictly increasing budgets.

  Returns:
    ``ks[argmax acc]`` (the smallest k on a tie).
  """
  ks = check_ks(ks)
  return int(ks[int(np.argmax(_curve(acc, "acc", len(ks))))])


def cluster_k(n_pool: int, n_clusters: int, ks: Sequence[int]) -> int:
  """The grid budget nearest (in log2) to the mean cluster size ``P / J``
  (host-side).

  Args:
    n_pool: P, the pool size.
    n_clusters: J, the number of clusters.
    ks: strictly increasing budgets.

  Returns:
    ``argmin_{k in ks} |log2 k - log2(P / J)|`` (the smaller k on a tie).
  """
  n_pool = V.check_int(n_pool, "n_pool", min_value=1)
  n_clusters = V.check_int(n_clusters, "n_clusters", min_value=1)
  k = np.asarray(check_ks(ks), np.float64)
  return int(
    k[int(np.argmin(np.abs(np.log2(k) - np.log2(n_pool / n_clusters))))]
  )


def decoupled(
  acc: npt.ArrayLike,
  recall: npt.ArrayLike,
  *,
  decline_tol: float,
  recall_rise: float,
) -> bool:
  """Whether recall keeps rising after accuracy has peaked and declined
  (host-side).

  ``acc[-1] < max(acc) - decline_tol`` and ``recall[-1] - recall[p] >=
  recall_rise`` with ``p`` the first argmax of ``acc``: the largest budget is
  measurably worse than the peak while it retrieves measurably more of the
  relevant items (the abstract's falsifiable prediction).

  Args:
    acc: float [n_k] accuracy over increasing budgets.
    recall: float [n_k] Recall@k over the same budgets.
    decline_tol: the drop below the peak that counts as a decline.
    recall_rise: the rise of recall after the peak that counts.

  Returns:
    the indicator.
  """
  a = np.asarray(acc, np.float64)
  if a.ndim != 1 or a.size == 0:
    raise ValueError(f"acc must be a non-empty 1-D curve, got shape {a.shape}")
  r = _curve(recall, "recall", a.size)
  decline_tol = V.check_float(decline_tol, "decline_tol", min_value=0.0)
  recall_rise = V.check_float(recall_rise, "recall_rise")
  p = int(np.argmax(a))
  return bool(a[-1] < a.max() - decline_tol and r[-1] - r[p] >= recall_rise)


def controller_summary(
  sims_dev: npt.ArrayLike,
  correct_dev: npt.ArrayLike,
  sims: jax.Array,
  correct: npt.ArrayLike,
  ks: Sequence[int],
  *,
  n_grid: int = 41,
) -> dict[str, float]:
  """The threshold controller calibrated on dev queries and applied to test
  queries.

  tau is chosen by :func:`calibrate_threshold` on a grid of ``n_grid`` quantiles
  (evenly spaced levels from 0 to 1) of the dev similarities at the budgets;
  each test query then gets the budget :func:`threshold_controller` picks.

  Args:
    sims_dev: float [Q_dev, K] dev similarities (descending per row).
    correct_dev: [len(ks), Q_dev] per-budget correctness on the dev queries.
    sims: float [Q, K] test similarities.
    correct: [len(ks), Q] per-budget correctness on the test queries.
    ks: strictly increasing budgets ``<= K``.
    n_grid: the number of candidate thresholds.

  Returns:
    ``{"tau": tau*, "acc": the test accuracy at the chosen budgets, "k_geomean":
    the geometric mean of the chosen budgets}``.
  """
  n_grid = V.check_int(n_grid, "n_grid", min_value=1)
  ks = check_ks(ks)
  s_dev = np.asarray(sims_dev)
  if s_dev.ndim != 2 or s_dev.shape[1] < ks[-1]:
    raise ValueError(
      f"sims_dev must have shape [Q_dev, K >= {ks[-1]}], got {s_dev.shape}"
    )
  c = np.asarray(correct)
  if c.shape != (len(ks), np.shape(sims)[0]):
    raise ValueError(
      f"correct must have shape ({len(ks)}, {np.shape(sims)[0]}), got {c.shape}"
    )
  grid = np.quantile(s_dev[:, np.asarray(ks) - 1], np.linspace(0, 1, n_grid))
  tau = calibrate_threshold(s_dev, correct_dev, ks, grid)
  j = np.asarray(threshold_controller(sims, tau, ks))
  return {
    "tau": tau,
    "acc": float(c[j, np.arange(len(j))].mean()),
    "k_geomean": float(np.exp(np.mean(np.log(np.asarray(ks)[j])))),
  }
