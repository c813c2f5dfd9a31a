"""Where ablating top-k heads collapses retrieval: collapse points and paired
bootstrap (spec §4).

The paper's claim is an ordering of collapse points: ablating the top LOCOS
heads halves non-literal retrieval at a smaller k than ablating the heads of an
attention-based detector. :func:`collapse_curves` turns per-probe scores of
every (detector, k) into mean curves, the collapse point of each detector on a
grid of k, and the collapse-index advantage of LOCOS over the strongest
baseline, with intervals from one paired bootstrap over probes (the same probe
indices for every detector and k, so differences account for the shared probes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jax.typing import ArrayLike

Scores = Mapping[Any, np.ndarray]


def collapse_index(curve: ArrayLike, baseline: ArrayLike) -> np.ndarray:
  """First grid index whose score is at or below half the baseline (never: the
  grid's length).

  Args:
    curve: [K, R] scores along a grid of K values of k, for R resamples (or R =
      1).
    baseline: [R] unablated scores of the same resamples.

  Returns:
    [R] int indices in [0, K]; K where no grid point halves the baseline.
  """
  curve = np.asarray(curve, np.float64)
  if curve.ndim != 2:
    raise ValueError(f"curve must be [K, R], got shape {curve.shape}")
  below = curve <= 0.5 * np.asarray(baseline, np.float64)
  return np.where(below.any(0), below.argmax(0), curve.shape[0])


def _nan_none(x):
  """A list of floats with None for NaN (cells skipped for time: null in
  results.json)."""
  return [None if np.isnan(v) else float(v) for v in x]


def _advantage(boot, boot_base, mat, base, ks, grid, baselines):
  """Collapse-index advantage (strongest baseline minus LOCOS) on the k values
  `grid`."""
  rows = [ks.index(k) for k in grid]
  # a cell not run
  if any(np.isnan(mat[d][rows]).any() for d in ("locos", *baselines)):
    return {"grid": list(grid), "baselines": list(baselines), "advantage": None}
  ci = {
    d: collapse_index(boot[d][rows], boot_base) for d in ("locos", *baselines)
  }
  point = {
    d: int(
      collapse_index(mat[d].mean(1)[rows][:, None], np.array([base.mean()]))[0]
    )
    for d in ("locos", *baselines)
  }
  adv_boot = np.min([ci[d] for d in baselines], axis=0) - ci["locos"]
  adv = min(point[d] for d in baselines) - point["locos"]
  lo, hi = np.quantile(adv_boot, [0.025, 0.975])
  return {
    "grid": list(grid),
    "baselines": list(baselines),
    "collapse_index": point,
    "collapse_k": {
      d: (grid[i] if i < len(grid) else None) for d, i in point.items()
    },
    "advantage": float(adv),
    "ci": [float(lo), float(hi)],
    "halfwidth": float(max(adv - lo, hi - adv)),
  }


def _first_collapse(m, base, grid_rows, grid):
  """(index, k) of the first grid row whose mean is <= half the baseline's;
  (len, None) if none; (None, 'not run') when a cell not run comes before the
  collapse."""
  for i, r in enumerate(grid_rows):
    if np.isnan(m[r]).any():
      return None, "not run"
    if m[r].mean() <= 0.5 * base.mean():
      return i, grid[i]
  return len(grid_rows), None


def _random_drop(boot_base, boot, base, mat):
  """Unablated minus random-heads score at each k: mean, paired 95 % interval,
  half-width."""
  mean = base.mean() - mat["random"].mean(1)  # [K]
  dd = boot_base[None, :] - boot["random"]  # [K, R]
  lo, hi = np.quantile(dd, 0.025, axis=1), np.quantile(dd, 0.975, axis=1)
  return {
    "mean": _nan_none(mean),
    "lo": _nan_none(lo),
    "hi": _nan_none(hi),
    "halfwidth": _nan_none(np.maximum(mean - lo, hi - mean)),
  }


def _locos_minus(boot, mat, baselines):
  """Paired differences LOCOS - each baseline (and random) at each k with 95 %
  intervals."""
  diffs = {}
  for d in (*baselines, "random"):
    dd = boot["locos"] - boot[d]
    diffs[d] = {
      "mean": _nan_none((mat["locos"] - mat[d]).mean(1)),
      "lo": _nan_none(np.quantile(dd, 0.025, axis=1)),
      "hi": _nan_none(np.quantile(dd, 0.975, axis=1)),
    }
  return diffs


def collapse_curves(
  scores: Scores,
  detectors: Sequence[str],
  ks: Sequence[int],
  keep: ArrayLike,
  num_resamples: int,
  seed: int,
  claim_ks: Sequence[int] | None = None,
  claim_baselines: Sequence[str] | None = None,
) -> dict[str, Any] | None:
  """Ablation curves, collapse points and the collapse-index advantage of LOCOS.

  A detector collapses at the first k of a grid whose mean score is at most half
  the unablated mean; the advantage is the strongest baseline's collapse index
  minus LOCOS's (a detector that never collapses counts one past the grid).
  Every detector and k is resampled with the same probe indices (a paired
  bootstrap).

  Args:
    scores: ``{(name, k): [n] per-probe scores}`` for ``("baseline", 0)``, every
      detector and ``"random"`` at every k of ``ks``; NaN marks a cell not run.
    detectors: detector names, ``"locos"`` among them; the others are the
      baselines.
    ks: the grid of k values of the curves.
    keep: [m] indices of the probes the curves average over.
    num_resamples: bootstrap resamples R.
    seed: the resamples' seed.
    claim_ks: the grid of the claim's statistic (default: ``ks``; values not in
      ``ks`` dropped).
    claim_baselines: the claim's baselines (default: every detector but LOCOS).

  Returns:
    None when ``keep`` is empty, else ``{"ks", "num_probes", "baseline":
    {"mean", "lo", "hi"}, <name>: {"mean", "lo", "hi"} (lists over ks, None
    where not run), "not_run", "claim_grid", "claim_baselines",
    "collapse_index", "collapse_k", "collapse_step_advantage" (None when a cell
    it needs was not run) with its "_ci" and "_halfwidth",
    "collapse_k_full_grid", "advantage_full_grid" (per baseline), "locos_minus"
    (paired differences per baseline and random), "random_drop" (unablated minus
    random heads per k)}``.
  """
  if "locos" not in detectors:
    raise ValueError(
      f"detectors must include 'locos', got {tuple(detectors)!r}"
    )
  keep = np.asarray(keep)
  names = ("baseline", *detectors, "random")
  baselines = [d for d in detectors if d != "locos"]
  claim_baselines = list(claim_baselines or baselines)
  claim_ks = [k for k in (claim_ks or ks) if k in ks]
  if keep.size == 0:
    return None
  ks = list(ks)
  base = scores[("baseline", 0)][keep]
  # [K, N]
  mat = {d: np.stack([scores[(d, k)][keep] for k in ks]) for d in names[1:]}
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, keep.size, size=(num_resamples, keep.size))
  boot_base = base[idx].mean(1)  # [R]
  boot = {d: m[:, idx].mean(-1) for d, m in mat.items()}  # [K, R]
  out: dict[str, Any] = {
    "ks": ks,
    "num_probes": int(keep.size),
    "baseline": {
      "mean": float(base.mean()),
      "lo": float(np.quantile(boot_base, 0.025)),
      "hi": float(np.quantile(boot_base, 0.975)),
    },
  }
  for d, m in mat.items():
    out[d] = {
      "mean": _nan_none(m.mean(1)),
      "lo": _nan_none(np.quantile(boot[d], 0.025, axis=1)),
      "hi": _nan_none(np.quantile(boot[d], 0.975, axis=1)),
    }
  out["not_run"] = {
    d: [k for k, row in zip(ks, m) if np.isnan(row).any()]
    for d, m in mat.items()
  }
  claim = _advantage(boot, boot_base, mat, base, ks, claim_ks, claim_baselines)
  out["claim_grid"] = claim["grid"]
  out["claim_baselines"] = claim["baselines"]
  rows = [ks.index(k) for k in claim["grid"]]
  point = {
    d: _first_collapse(m, base, rows, claim["grid"]) for d, m in mat.items()
  }
  out["collapse_index"] = {d: v[0] for d, v in point.items()}
  out["collapse_k"] = {d: v[1] for d, v in point.items()}
  out["collapse_step_advantage"] = claim["advantage"]
  out["collapse_step_advantage_ci"] = claim.get("ci")
  out["collapse_step_advantage_halfwidth"] = claim.get("halfwidth")
  out["collapse_k_full_grid"] = {
    d: _first_collapse(m, base, list(range(len(ks))), ks)[1]
    for d, m in mat.items()
  }
  out["advantage_full_grid"] = {
    d: _advantage(boot, boot_base, mat, base, ks, ks, [d]) for d in baselines
  }
  out["locos_minus"] = _locos_minus(boot, mat, baselines)
  out["random_drop"] = _random_drop(boot_base, boot, base, mat)
  return out
