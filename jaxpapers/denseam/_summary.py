"""What a learning-rate grid says about transfer: eta*(K), its drift over K, and
the regret.

Pure NumPy on the final losses of ``train_grid`` (one ``[L, S]`` grid per width
K, widths in increasing order): the seed-mean optimum, per-seed optima, the
spread and drift of the optimum across K, the loss paid at the largest K for the
rate tuned at the smallest, and the numbers the transfer claims are judged on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxpapers.core import stats
from jaxpapers.core.report import ci95_halfwidth
from jaxpapers.denseam._transfer import optimal_lr


def _finite(x):
  x = np.asarray(x, np.float64)
  return np.where(np.isfinite(x), x, np.inf)


def seed_mean(loss: Any) -> np.ndarray:
  """Mean over seeds in which a diverged seed (non-finite loss) makes the mean
  +inf.

  Args:
    loss: ``[..., L, S]`` final losses (S seeds).

  Returns:
    ``[..., L]`` float64 seed means; +inf where any seed's loss is not finite.
  """
  loss = np.asarray(loss, np.float64)
  if loss.ndim < 1:
    raise ValueError(
      f"loss must have a trailing seed axis, got shape {loss.shape}"
    )
  return _seed_mean(loss)


def _seed_mean(loss):
  """``[..., L, S] -> [..., L]`` mean over seeds; a diverged seed makes the mean
  +inf."""
  return _finite(loss).mean(-1)


def _nanfloat(x):
  x = float(x)
  return x if math.isfinite(x) else None


def transfer_summary(final_loss: Any, test_metric: Any, lrs: Any) -> dict:
  """eta*(K), spreads, transfer regret and best losses of one setting
  (JSON-ready).

  Args:
    final_loss: ``[W, L, S]`` final training losses per width (increasing K),
      learning rate and seed; non-finite = diverged.
    test_metric: ``[W, L, S]`` test metric (accuracy) of the same runs.
    lrs: ``[L]`` strictly increasing learning rates (> 0), ``L >= 1``.

  Returns:
    ``eta_star`` ``[W]`` (``optimal_lr`` of the seed means),
    ``eta_star_per_seed`` ``[W, S]``, ``eta_spread`` (max / min of
    ``eta_star``), ``transfer_regret`` (seed-mean loss at the largest K at the
    rate best at the smallest, over the best there, minus 1) with its per-seed
    values and 95% half-width, ``best_loss`` ``[W]``, ``best_loss_per_seed``
    ``[W, S]``, ``best_lr_grid`` ``[W]``, ``test_accuracy_at_best`` ``[W]``,
    ``diverged_fraction``, ``edge_fraction`` (per-seed optima on the grid's edge
    or missing), ``learns_at_every_width`` (best seed mean below ``ln 10`` at
    every K) and ``log_drift`` (:func:`log_drift` of the per-seed optima,
    largest over smallest K).
  """
  lrs = np.asarray(lrs, np.float64)
  loss = np.asarray(final_loss, np.float64)  # [W, L, S]
  acc = np.asarray(test_metric, np.float64)
  if (
    loss.ndim != 3 or loss.shape[1] != lrs.shape[-1] or acc.shape != loss.shape
  ):
    raise ValueError(
      "final_loss and test_metric must have the same shape [W, L, "
      f"S] with L = len(lrs), got {loss.shape}, {acc.shape} and lrs of shape "
      f"{lrs.shape}"
    )
  mean = _seed_mean(loss)  # [W, L]
  eta = optimal_lr(mean, lrs)  # [W]
  eta_seed = optimal_lr(np.moveaxis(_finite(loss), -1, 1), lrs)  # [W, S]

  def spread(e):
    e = np.asarray(e, np.float64)
    return float(e.max() / e.min()) if np.all(np.isfinite(e)) else float("inf")

  i0 = int(np.argmin(mean[0])) if np.isfinite(mean[0]).any() else None
  if i0 is not None and np.isfinite(mean[-1]).any():
    regret = float(mean[-1, i0] / mean[-1].min() - 1.0)
  else:
    regret = float("inf")
  seed_regret = []
  for s in range(loss.shape[-1]):
    a, b = _finite(loss[0, :, s]), _finite(loss[-1, :, s])
    seed_regret.append(
      float(b[int(np.argmin(a))] / b.min() - 1.0)
      if np.isfinite(b).any()
      else float("inf")
    )
  best_seed = np.min(_finite(loss), axis=1)  # [W, S]: each seed's best over lrs
  best_i = np.argmin(mean, axis=1)
  # A seed's optimum on the grid's edge (or no finite loss at all) is not
  # bracketed.
  seed_i = np.argmin(_finite(loss), axis=1)  # [W, S]
  unbracketed = (
    (seed_i == 0) | (seed_i == len(lrs) - 1) | ~np.isfinite(best_seed)
  )
  learns = bool(
    np.all(np.isfinite(mean.min(axis=1)) & (mean.min(axis=1) < math.log(10)))
  )
  n_w = loss.shape[0]
  return {
    "eta_star": eta.tolist(),
    "eta_star_per_seed": eta_seed.tolist(),
    "eta_spread": spread(eta),
    "eta_spread_per_seed": [
      spread(eta_seed[:, s]) for s in range(eta_seed.shape[1])
    ],
    "transfer_regret": regret,
    "transfer_regret_per_seed": seed_regret,
    "transfer_regret_ci95": _nanfloat(ci95_halfwidth(np.asarray(seed_regret))),
    "best_loss": [float(mean[w].min()) for w in range(n_w)],
    "best_loss_per_seed": best_seed.tolist(),
    "best_lr_grid": [float(lrs[i]) for i in best_i],
    "test_accuracy_at_best": [
      float(np.nanmean(acc[w, best_i[w]])) for w in range(n_w)
    ],
    "diverged_fraction": float(np.mean(~np.isfinite(loss))),
    "edge_fraction": float(np.mean(unbracketed)),
    "learns_at_every_width": learns,
    "log_drift": log_drift(eta_seed[-1], eta_seed[0]),
  }


def log_drift(eta_large: Any, eta_small: Any) -> dict:
  """The drift of the optimum ``ln(eta*(K_max) / eta*(K_min))`` over paired
  seeds.

  ``jaxpapers.core.stats.log_ratio_interval`` of the per-seed optima: ``mean``
  and ``hw`` (95% t half-width) on the natural-log scale, the geometric-mean
  ratio and its interval. Every entry is None when a seed has no finite positive
  optimum at either width.

  Args:
    eta_large: ``[S]`` per-seed optima at the largest width.
    eta_small: ``[S]`` per-seed optima at the smallest width (same seeds).

  Returns:
    ``{'mean', 'hw', 'ratio', 'ratio_lo', 'ratio_hi', 'n'}``.
  """
  a, b = np.asarray(eta_large, np.float64), np.asarray(eta_small, np.float64)
  if a.ndim != 1 or a.shape != b.shape:
    raise ValueError(
      f"eta_large and eta_small must both have shape [S], got {a.shape}, "
      f"{b.shape}"
    )
  if not (
    np.all(np.isfinite(a) & (a > 0)) and np.all(np.isfinite(b) & (b > 0))
  ):
    return dict.fromkeys(("mean", "hw", "ratio", "ratio_lo", "ratio_hi", "n"))
  r = stats.log_ratio_interval(a, b)
  return {
    "mean": r.log.mean,
    "hw": _nanfloat(r.log.half_width),
    "ratio": r.ratio,
    "ratio_lo": _nanfloat(r.ratio_lo),
    "ratio_hi": _nanfloat(r.ratio_hi),
    "n": r.n,
  }


def transfer_metrics(summaries: Mapping[str, Mapping[str, Any]]) -> dict:
  """The values the transfer claims are judged on, from the settings' summaries.

  Per setting (key ``'<energy>_<param>'``): ``log_drift`` = mean over seeds of
  ``ln(eta*(K_max) / eta*(K_min))`` and ``log_drift_hw`` its 95% t half-width;
  ``abs_log_drift`` = ``|log_drift|`` (two-sided transfer: the interval
  ``abs_log_drift ± hw`` lies below ``ln 2`` exactly when the drift's interval
  lies inside ``[-ln 2, ln 2]``), +inf when the setting does not learn at every
  width (no learning rate to transfer), None when a seed has no optimum;
  ``log_shrink`` = ``-log_drift``. Across settings, for each polynomial degree
  with both: ``<e>_sp_over_derived_log_best_loss`` = mean over seeds of
  ``ln(best loss at K_max under standard / under derived)`` with its half-width
  (+inf and 0 when standard has no finite loss at K_max for some seed).

  Args:
    summaries: ``{'<energy>:<param>': transfer_summary(...)}`` (at least the
      keys ``log_drift``, ``learns_at_every_width`` and ``best_loss_per_seed``).

  Returns:
    ``{'<energy>_<param>': {...}, '<e>_sp_over_derived_log_best_loss[_hw]':
    float}``.
  """
  bad = [name for name in summaries if ":" not in name]
  if bad:
    raise ValueError(
      f"settings must be named '<energy>:<parametrisation>', got {bad}"
    )
  out = {}
  for setting, s in summaries.items():
    d = s["log_drift"]
    m = d["mean"]
    if not s["learns_at_every_width"]:
      absd = float("inf")
    elif m is None:
      absd = None
    else:
      absd = abs(m)
    out[setting.replace(":", "_")] = {
      "log_drift": m,
      "log_drift_hw": d["hw"],
      "abs_log_drift": absd,
      "log_shrink": None if m is None else -m,
    }
  polys = sorted(
    {name.split(":")[0] for name in summaries if name.startswith("poly")}
  )
  for e in polys:
    sp, dv = summaries.get(f"{e}:standard"), summaries.get(f"{e}:derived")
    if sp is None or dv is None:
      continue
    a = _finite(np.asarray(sp["best_loss_per_seed"], np.float64)[-1])
    b = np.asarray(dv["best_loss_per_seed"], np.float64)[-1]
    key = f"{e}_sp_over_derived_log_best_loss"
    if np.all(np.isfinite(a)) and np.all(np.isfinite(b) & (b > 0)):
      r = stats.log_ratio_interval(a, b)
      out[key], out[key + "_hw"] = r.log.mean, _nanfloat(r.log.half_width)
    elif np.all(np.isfinite(b) & (b > 0)):
      out[key], out[key + "_hw"] = float("inf"), 0.0
    else:
      out[key], out[key + "_hw"] = None, None
  return out
