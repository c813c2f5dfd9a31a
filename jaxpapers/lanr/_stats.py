"""A bootstrap interval for the AUROC of a signal whose items come in groups."""

from __future__ import annotations

import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core.stats import paired_bootstrap


def auroc_interval(
  score: ArrayLike,
  label: ArrayLike,
  group: ArrayLike,
  n_boot: int,
  strata: ArrayLike | None = None,
) -> dict[str, float | None]:
  """AUROC of ``score`` for ``label`` and its 95% bootstrap interval over groups
  (questions).

  AUROC = P(score_pos > score_neg) + P(tie) / 2 over (positive, negative) pairs,
  only pairs in the same stratum when ``strata`` is given (e.g. the number of
  documents in the context, so that counting documents cannot separate the
  pairs). The interval resamples whole groups (every context of a question
  together) with ``paired_bootstrap``: the items are the group ids, the
  statistic is the AUROC of the resampled groups (each pair weighted by how
  often its two groups were drawn), against a constant arm that scores 0.

  Args:
    score: ``[M]`` per-item score (e.g. minus the answer entropy of each
      context).
    label: ``[M]`` 0/1 label (e.g. the context is sufficient).
    group: ``[M]`` group id of each item (e.g. its question); groups are
      resampled whole.
    n_boot: bootstrap resamples.
    strata: optional ``[M]`` stratum of each item; only pairs in one stratum
      count.

  Returns:
    ``{'auroc', 'lo', 'hi', 'ci'}`` (``ci``: the larger distance to a bound; the
    interval is ``core.paired_bootstrap``'s, None where it gives none); AUROC is
    0.5 when no pair exists.
  """
  score = np.asarray(score, np.float64)
  label = np.asarray(label).astype(bool)
  if (
    score.ndim != 1
    or label.shape != score.shape
    or np.shape(group) != score.shape
  ):
    raise ValueError(
      "score, label and group must be 1-D of one length, "
      f"got shapes {score.shape}, {label.shape}, {np.shape(group)}"
    )
  _, g = np.unique(np.asarray(group), return_inverse=True)
  G = int(g.max()) + 1
  st = np.zeros(len(score)) if strata is None else np.asarray(strata)
  pos, neg = np.flatnonzero(label), np.flatnonzero(~label)
  same = (st[pos][:, None] == st[neg][None, :]).astype(np.float64)
  comp = np.where(score[pos][:, None] > score[neg][None, :], 1.0, 0.0)
  comp = np.where(score[pos][:, None] == score[neg][None, :], 0.5, comp) * same
  gp, gn = g[pos], g[neg]

  def stat(x, axis=-1):
    x = np.asarray(x)
    rows = x.reshape(-1, x.shape[-1])
    w = np.stack(
      [
        np.bincount(r.astype(np.int64), minlength=G)
        for r in np.maximum(rows, 0)
      ]
    )
    # [k, n_pos], [k, n_neg]
    wp, wn = w[:, gp].astype(np.float64), w[:, gn].astype(np.float64)
    num = np.sum((wp @ comp) * wn, axis=1)
    den = np.sum((wp @ same) * wn, axis=1)
    out = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.5)
    # the constant arm scores 0
    out = np.where(np.all(rows < 0, axis=1), 0.0, out)
    return out.reshape(x.shape[:-1])

  ids = np.arange(G, dtype=np.float64)
  r = paired_bootstrap(
    ids, -np.ones(G), statistic=stat, n_resamples=n_boot, seed=0
  )
  return {"auroc": r.estimate, "lo": r.lo, "hi": r.hi, "ci": r.half_width}
