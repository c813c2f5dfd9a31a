"""Do two retrieval metrics rank retrievers alike? Spearman's rho with a
bootstrap over queries.

Lang-nDCG is meant to see what nDCG does not: the paper's point is that
retrievers tied on nDCG can differ in how they treat the query's language.
:func:`rank_agreement` ranks the retrievers by the mean of each metric and
compares the two rankings (average ranks, so a tie stays a tie), with a
percentile bootstrap over queries [reconstruction].
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats
from jax.typing import ArrayLike

from jaxpapers.core import stats


def _average_ranks(x: np.ndarray) -> np.ndarray:
  """Ranks ``0..n-1`` along the last axis, tied values sharing their average
  rank."""
  return scipy.stats.rankdata(x, method="average", axis=-1) - 1.0


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
  """Spearman's rho of each row pair of ``x``, ``y`` (``[..., n]``); NaN where a
  row is constant."""
  rx, ry = _average_ranks(x), _average_ranks(y)
  rx = rx - rx.mean(-1, keepdims=True)
  ry = ry - ry.mean(-1, keepdims=True)
  den = np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(den > 0, (rx * ry).sum(-1) / den, np.nan)


def spearman(x: ArrayLike, y: ArrayLike) -> float:
  """Spearman's rho with average ranks for ties (float64, on the host).

  Args:
    x: ``[n]`` values.
    y: ``[n]`` values paired with ``x``.

  Returns:
    rho in ``[-1, 1]``; NaN for ``n < 3`` or a constant input.
  """
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  if x.ndim != 1 or x.shape != y.shape:
    raise ValueError(f"x and y must both be [n], got {x.shape} and {y.shape}")
  if x.size < 3:
    return float("nan")
  return float(_spearman_rows(x, y))


def rank_agreement(
  ndcg: ArrayLike,
  lang_ndcg: ArrayLike,
  *,
  n_boot: int = 2000,
  decimals: int = 6,
) -> dict[str, Any]:
  """How far ranking retrievers by Lang-nDCG agrees with ranking them by nDCG.

  The retrievers are ranked by their mean over the items (queries) of each
  metric, the means rounded to ``decimals`` so that retrievers with the same
  score are a tie (average ranks), not ordered by float noise.

  Args:
    ndcg: ``[R, N]`` nDCG@k of R retrievers on the same N queries.
    lang_ndcg: ``[R, N]`` Lang-nDCG@k on the same queries.
    n_boot: resamples of the percentile bootstrap over queries
      (``core.stats.paired_bootstrap``, seed 0).
    decimals: rounding of the means before ranking.

  Returns:
    ``spearman`` (rho of the two rankings; NaN if either is constant or R < 3),
    ``lo`` / ``hi`` (its 95% bootstrap interval over queries; NaN if a resample
    has a constant ranking or there is one query), ``ci`` (the larger distance
    from rho to a bound), ``n_retrievers``, ``n_queries``, ``n_pairs``,
    ``n_discordant`` (pairs the two metrics order oppositely),
    ``n_ndcg_ties_split`` (pairs tied on nDCG that Lang-nDCG orders) and
    ``n_ndcg_ties``.
  """
  x, y = np.asarray(ndcg, np.float64), np.asarray(lang_ndcg, np.float64)
  if x.ndim != 2 or x.shape != y.shape:
    raise ValueError(
      f"ndcg and lang_ndcg must both be [R, N], got {x.shape} and {y.shape}"
    )
  r, n = x.shape
  mx, my = np.round(x.mean(1), decimals), np.round(y.mean(1), decimals)
  i, j = np.triu_indices(r, 1)
  sx, sy = np.sign(mx[i] - mx[j]), np.sign(my[i] - my[j])
  out = {
    "spearman": spearman(mx, my),
    "n_retrievers": r,
    "n_queries": n,
    "n_pairs": int(i.size),
    "n_discordant": int(np.sum(sx * sy < 0)),
    "n_ndcg_ties": int(np.sum(sx == 0)),
    "n_ndcg_ties_split": int(np.sum((sx == 0) & (sy != 0))),
  }
  nan = float("nan")
  lo = hi = nan
  if np.isfinite(out["spearman"]) and n > 1:

    def stat(idx, axis=-1):
      idx = np.asarray(idx)
      # [k, N] resampled query ids
      rows = idx.reshape(-1, idx.shape[-1]).astype(np.int64)
      rho = np.zeros(rows.shape[0])
      real = rows[:, 0] >= 0  # the constant arm (ids -1) scores 0
      if real.any():
        take = rows[real]
        bx = np.round(x[:, take].mean(-1), decimals).T  # [k', R]
        by = np.round(y[:, take].mean(-1), decimals).T
        rho[real] = _spearman_rows(bx, by)
      return rho.reshape(idx.shape[:-1])

    try:
      b = stats.paired_bootstrap(
        np.arange(n, dtype=np.float64),
        -np.ones(n),
        statistic=stat,
        n_resamples=n_boot,
        seed=0,
      )
      lo, hi = b.lo, b.hi
    except ValueError:  # a resample with a constant ranking: no interval
      pass
  out["lo"], out["hi"] = lo, hi
  ok = np.isfinite(lo) and np.isfinite(hi)
  out["ci"] = max(out["spearman"] - lo, hi - out["spearman"]) if ok else nan
  return out
