"""Toy regret (exact): small fingerprints, candidates made by flipping bits, Dirichlet posteriors.

:func:`toy_rows` draws the problems of every (F, n, flip) cell and measures, per problem, the
HR@1 regret of the Jaccard-Bayes fingerprint (enumerated over all 2^F vectors) and of the
BCE-Bayes marginals with cosine retrieval, binned by the pool's σ_max, both as drawn and
deduplicated by fingerprint; :func:`toy_summary` summarises them for the claims.
"""

from __future__ import annotations

import ml_collections
import numpy as np

import jaxpapers.msretrieval as M
from jaxpapers.core import stats


def _toy_problem(pi, cands, mask):
  """Regrets, σ band, top ties and the lemma check of one batch of toy problems.

  Args:
    pi: ``[P, n]`` posteriors (zero on masked slots).
    cands: ``[P, n, F]`` binary candidates.
    mask: ``[P, n]`` bool, False for slots that are not candidates.

  Returns:
    Per-problem lists: Jaccard-Bayes regret, BCE-marginals + cosine regret, the regret of the
    retrieval-optimal fingerprint ``y_{argmax π}`` (the oracle decision), σ_max, whether the
    Jaccard-Bayes fingerprint ties two candidates at the top, and the lemma counts.
  """
  yj, _ = M.enumerate_bayes_fingerprint(pi, cands)
  rj = np.asarray(M.hr1_regret(pi, cands, yj, sim="jaccard", mask=mask))
  marg = M.marginal_fingerprint(pi, cands)
  rc = np.asarray(M.hr1_regret(pi, cands, marg, sim="cosine", mask=mask))
  best = cands[np.arange(len(pi)), np.where(mask, pi, -1.0).argmax(1)]
  ro = np.asarray(M.hr1_regret(pi, cands, best, sim="jaccard", mask=mask))
  _, smax = M.similarity_band(cands, mask)
  smax = np.asarray(smax)
  # Lemma check: a decision within (1 + σ_max)/2 of some candidate ranks it alone first.
  yj = np.asarray(yj, np.float64)
  c64 = cands.astype(np.float64)
  inter = np.einsum("pf,pnf->pn", yj, c64)
  union = yj.sum(-1)[:, None] + c64.sum(-1) - inter
  jac = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
  prem, unique_top = lemma_check(np.where(mask, jac, -np.inf), smax)
  return {
    "regret_jaccard": rj.tolist(),
    "regret_bce_cosine": rc.tolist(),
    "regret_oracle": ro.tolist(),
    "sigma_max": smax.tolist(),
    "tied_top": (~unique_top).tolist(),
    "lemma_premise": prem.tolist(),
    "lemma_violation": (prem & ~unique_top).tolist(),
  }


def lemma_check(jac: np.ndarray, smax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Where the sufficient-margin lemma's premise holds, and where the top is unique.

  Args:
    jac: ``[P, n]`` float64 Jaccard of the decision to each candidate (``-inf`` on slots that
      are not candidates).
    smax: ``[P]`` σ_max of each pool (float32 from :func:`similarity_band`).

  Returns:
    ``(premise, unique_top)``, ``[P]`` bool: ``max_c J > (1 + σ_max) / 2`` by more than the
    1e-6 tie tolerance (the premise is strict; a float32 σ_max rounded down must not make an
    equality pass), and a single candidate within 1e-6 of the top.
  """
  top = jac >= jac.max(1, keepdims=True) - 1e-6
  premise = jac.max(1) > (1.0 + np.asarray(smax, np.float64)) / 2 + 1e-6
  return premise, top.sum(1) == 1


def toy_rows(cfg: ml_collections.ConfigDict) -> list:
  """Toy problems: each raw (as drawn) and deduplicated by fingerprint (empty ones dropped)."""
  rows = []
  rng = np.random.default_rng(cfg.seed + 5)
  for f in cfg.toy_bits:
    for n in cfg.toy_cands:
      for q in cfg.toy_flip:
        p = cfg.toy_problems
        base = rng.random((p, 1, f)) < cfg.toy_density
        flips = rng.random((p, n, f)) < q
        cands = (base ^ flips).astype(np.uint8)
        pi = rng.dirichlet(np.ones(n), size=p).astype(np.float32)
        pi = pi / pi.sum(1, keepdims=True)
        raw = _toy_problem(pi, cands, np.ones(pi.shape, bool))
        merged, mask = (
          np.asarray(a) for a in M.merge_duplicate_candidates(pi, cands, drop_empty=True)
        )
        real = mask.sum(1)
        ok = real >= 2  # a retrieval problem needs two distinct (non-empty) candidates
        # Left-out problems run as their raw selves (static shapes) and are dropped below.
        dd = _toy_problem(
          np.where(ok[:, None], merged, pi).astype(np.float32),
          cands,
          np.where(ok[:, None], mask, True),
        )
        dd = {k: ([x for x, keep in zip(v, ok) if keep] if isinstance(v, list) else v)
              for k, v in dd.items()}  # fmt: skip
        # A check of the deduplication: no kept problem holds a fingerprint twice or an empty one.
        left = sum(
          len(np.unique(c[m], axis=0)) < m.sum() or not c[m].any(-1).all()
          for c, m, keep in zip(cands, mask, ok)
          if keep
        )
        raw_dup = [len(np.unique(c, axis=0)) < n for c in cands]
        rows.append(
          {
            "F": f,
            "n": n,
            "flip": q,
            "raw": {**raw, "has_duplicates": raw_dup},
            "dedup": {
              **dd,
              "left_out": int((~ok).sum()),
              "candidates": real[ok].tolist(),
              "duplicates_left": int(left),
            },
          }
        )
  return rows


def _band_bins(rj, rc, sm) -> list:
  edges = (0.0, 0.25, 0.5, 0.75, 1.0001)
  bins = []
  for lo, hi in zip(edges[:-1], edges[1:]):
    sel = (sm >= lo) & (sm < hi)
    bins.append(
      {
        "lo": lo,
        "hi": min(hi, 1.0),
        "count": int(sel.sum()),
        "regret_jaccard": float(rj[sel].mean()) if sel.any() else None,
        "regret_bce_cosine": float(rc[sel].mean()) if sel.any() else None,
        "frac_positive_jaccard": float((rj[sel] > 1e-6).mean()) if sel.any() else None,
      }
    )
  return bins


def mean_ci(x) -> tuple[float, float]:
  """Mean and 95% t half-width over independent problems (``core.stats.t_interval``)."""
  t = stats.t_interval(np.asarray(x, np.float64))
  return t.mean, t.half_width


def diff_of_means_ci(a, b) -> tuple[float, float]:
  """``mean(a) - mean(b)`` of two independent samples and its 95% half-width.

  The half-width adds the two groups' t half-widths in quadrature, ``sqrt(h_a² + h_b²)``
  (Welch's interval with each group's own t quantile; for large groups the normal interval).
  """
  ma, ha = mean_ci(a)
  mb, hb = mean_ci(b)
  return ma - mb, float(np.hypot(ha, hb))


def toy_set_summary(part: list) -> dict:
  """The summary of one set of toy problems (``part``: per cell, the raw or dedup lists)."""
  cat = lambda k: np.concatenate([np.asarray(r[k], np.float64) for r in part])
  rj, rc, ro, sm = map(cat, ("regret_jaccard", "regret_bce_cosine", "regret_oracle", "sigma_max"))
  tied = cat("tied_top").astype(bool)
  m, h = mean_ci(rj)
  mo, ho = mean_ci(ro)
  low, high = sm < 0.5, sm >= 0.75
  out = {
    "problems": int(rj.size),
    "mean_regret_jaccard": m,
    "mean_regret_jaccard_ci95": h,
    "mean_regret_bce_cosine": float(rc.mean()),
    "mean_regret_oracle": mo,
    "mean_regret_oracle_ci95": ho,
    "frac_positive_jaccard": float((rj > 1e-6).mean()),
    "max_regret_jaccard": float(rj.max()),
    "tied_top_share": float(tied.mean()),
    "regret_tied_top": float(rj[tied].mean()) if tied.any() else None,
    "regret_untied_top": float(rj[~tied].mean()) if (~tied).any() else None,
    "low_count": int(low.sum()),
    "high_count": int(high.sum()),
    "regret_high_minus_low": None,
    "regret_high_minus_low_ci95": None,
    "lemma_premise": int(cat("lemma_premise").sum()),
    "lemma_violations": int(cat("lemma_violation").sum()),
    "bins": _band_bins(rj, rc, sm),
  }
  if low.sum() >= 2 and high.sum() >= 2:
    d, dh = diff_of_means_ci(rj[high], rj[low])
    out["regret_high_minus_low"], out["regret_high_minus_low_ci95"] = d, dh
  return out


def toy_summary(rows) -> dict:
  """Raw problems (as drawn, ties included) and the deduplicated ones, summarised apart."""
  raw = toy_set_summary([r["raw"] for r in rows])
  dup = np.concatenate([np.asarray(r["raw"]["has_duplicates"], bool) for r in rows])
  rj = np.concatenate([np.asarray(r["raw"]["regret_jaccard"], np.float64) for r in rows])
  raw["duplicate_share"] = float(dup.mean())
  raw["regret_with_duplicates"] = float(rj[dup].mean()) if dup.any() else None
  raw["regret_without_duplicates"] = float(rj[~dup].mean()) if (~dup).any() else None
  dedup = toy_set_summary([r["dedup"] for r in rows])
  dedup["left_out"] = int(sum(r["dedup"]["left_out"] for r in rows))
  dedup["duplicates_left"] = int(sum(r["dedup"]["duplicates_left"] for r in rows))
  dedup["mean_candidates"] = float(
    np.mean(np.concatenate([r["dedup"]["candidates"] for r in rows]))
  )
  return {"raw": raw, "dedup": dedup}
