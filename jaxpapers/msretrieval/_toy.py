"""The paper's synthetic toy benchmark of HR@1 regret, exact by enumeration.

Small fingerprints (``F <= 20`` bits), candidates made by flipping the bits of a
base fingerprint, Dirichlet posteriors over the candidates.
:func:`toy_regret_problems` draws the problems of every ``(F, n, flip)`` cell
and measures, per problem, the HR@1 regret of the Jaccard-Bayes fingerprint
(enumerated over all ``2^F`` vectors), of the BCE-Bayes marginals with cosine
retrieval and of the retrieval-optimal fingerprint ``y_{argmax π}`` (the oracle
decision), with the pool's σ_max, both as drawn and deduplicated by fingerprint;
:func:`toy_regret_summary` summarises them.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxpapers.core import stats
from jaxpapers.msretrieval._theory import (
  MAX_BITS,
  enumerate_bayes_fingerprint,
  hr1_regret,
  marginal_fingerprint,
  merge_duplicate_candidates,
  similarity_band,
)


def _toy_problem(pi, cands, mask):
  """Regrets, σ band, top ties and the lemma check of one batch of toy problems.

  Args:
    pi: ``[P, n]`` posteriors (zero on masked slots).
    cands: ``[P, n, F]`` binary candidates.
    mask: ``[P, n]`` bool, False for slots that are not candidates.

  Returns:
    Per-problem lists: Jaccard-Bayes regret, BCE-marginals + cosine regret, the
    regret of the retrieval-optimal fingerprint ``y_{argmax π}`` (the oracle
    decision), σ_max, whether the Jaccard-Bayes fingerprint ties two candidates
    at the top, and the lemma counts.
  """
  yj, _ = enumerate_bayes_fingerprint(pi, cands)
  rj = np.asarray(hr1_regret(pi, cands, yj, sim="jaccard", mask=mask))
  marg = marginal_fingerprint(pi, cands)
  rc = np.asarray(hr1_regret(pi, cands, marg, sim="cosine", mask=mask))
  best = cands[np.arange(len(pi)), np.where(mask, pi, -1.0).argmax(1)]
  ro = np.asarray(hr1_regret(pi, cands, best, sim="jaccard", mask=mask))
  _, smax = similarity_band(cands, mask)
  smax = np.asarray(smax)
  # Lemma check: a decision within (1 + σ_max)/2 of some candidate ranks it
  # alone first.
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


def lemma_check(
  jac: np.ndarray, smax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """Where the sufficient-margin lemma's premise holds, and where the top is
  unique.

  The lemma: if ``J(ŷ, y_true) > (1 + σ_max) / 2`` then ``y_true`` is ranked
  first by Jaccard (``1 - J`` is a metric). Host-side numpy.

  Args:
    jac: ``[P, n]`` float64 Jaccard of the decision to each candidate (``-inf``
      on slots that are not candidates).
    smax: ``[P]`` σ_max of each pool (float32 from :func:`similarity_band`).

  Returns:
    ``(premise, unique_top)``, ``[P]`` bool: ``max_c J > (1 + σ_max) / 2`` by
    more than the 1e-6 tie tolerance (the premise is strict; a float32 σ_max
    rounded down must not make an equality pass), and a single candidate within
    1e-6 of the top.

  Raises:
    ValueError: ``jac`` is not ``[P, n]`` or ``smax`` not ``[P]``.
  """
  jac = np.asarray(jac, np.float64)
  if jac.ndim != 2 or np.shape(smax) != jac.shape[:1]:
    raise ValueError(
      f"jac must be [P, n] and smax [P], got {jac.shape} and {np.shape(smax)}"
    )
  top = jac >= jac.max(1, keepdims=True) - 1e-6
  premise = jac.max(1) > (1.0 + np.asarray(smax, np.float64)) / 2 + 1e-6
  return premise, top.sum(1) == 1


_REAL = (int, float, np.integer, np.floating)


def _check_toy_args(bits, cands, flips, problems, density):
  for name, vals, ok, form in (
    ("bits", bits, lambda v: 1 <= v <= MAX_BITS, f"ints in [1, {MAX_BITS}]"),
    ("cands", cands, lambda v: v >= 2, "ints >= 2"),
  ):
    if not vals or not all(
      isinstance(v, numbers.Integral) and ok(v) for v in vals
    ):
      raise ValueError(
        f"{name} must be a non-empty sequence of {form}, got {vals!r}"
      )
  if not flips or not all(
    isinstance(q, _REAL) and 0 <= float(q) <= 1 for q in flips
  ):
    raise ValueError(
      f"flips must be a non-empty sequence of rates in [0, 1], got {flips!r}"
    )
  if not isinstance(problems, numbers.Integral) or problems < 1:
    raise ValueError(f"problems must be an int >= 1, got {problems!r}")
  if not isinstance(density, _REAL) or not 0 <= float(density) <= 1:
    raise ValueError(f"density must be in [0, 1], got {density!r}")


def toy_regret_problems(
  bits: Sequence[int],
  cands: Sequence[int],
  flips: Sequence[float],
  *,
  problems: int,
  density: float,
  seed: int,
) -> list[dict[str, Any]]:
  """Draws and scores the toy problems of every ``(F, n, flip)`` cell
  (host-side, exact).

  A problem: a base fingerprint of ``F`` bits set with probability ``density``,
  ``n`` candidates made by flipping each of its bits with probability ``flip``,
  and a posterior ``π ~ Dirichlet(1_n)``. Each problem is scored as drawn and
  deduplicated by fingerprint (identical candidates merged with their posteriors
  summed, empty fingerprints dropped; problems left with fewer than two
  candidates are left out of the deduplicated set).

  Args:
    bits: fingerprint sizes ``F`` (each in ``[1, 20]``: the Bayes fingerprint is
      enumerated).
    cands: candidates per problem ``n`` (each >= 2).
    flips: bit-flip rates in ``[0, 1]``.
    problems: problems per cell.
    density: probability of a set bit in the base fingerprint.
    seed: the numpy generator's seed (cells are drawn in the order bits, cands,
      flips).

  Returns:
    One row per cell: ``{"F", "n", "flip", "raw": {per-problem lists
    "regret_jaccard", "regret_bce_cosine", "regret_oracle", "sigma_max",
    "tied_top", "lemma_premise", "lemma_violation", "has_duplicates"}, "dedup":
    {the same lists over the kept problems, "left_out", "candidates" (per kept
    problem), "duplicates_left" (0 unless the deduplication failed)}}``.

  Raises:
    ValueError: a size, rate, count or density out of range.
  """
  _check_toy_args(bits, cands, flips, problems, density)
  rows = []
  rng = np.random.default_rng(seed)
  for f in bits:
    for n in cands:
      for q in flips:
        p = problems
        base = rng.random((p, 1, f)) < density
        flip_bits = rng.random((p, n, f)) < q
        cand = (base ^ flip_bits).astype(np.uint8)
        pi = rng.dirichlet(np.ones(n), size=p).astype(np.float32)
        pi = pi / pi.sum(1, keepdims=True)
        raw = _toy_problem(pi, cand, np.ones(pi.shape, bool))
        # numpy in: converted at the library's boundary, as every array input
        # is.
        dd_in = merge_duplicate_candidates(pi, cand, drop_empty=True)  # pyright: ignore[reportArgumentType]
        merged, mask = (np.asarray(a) for a in dd_in)
        real = mask.sum(1)
        # a retrieval problem needs two distinct (non-empty) candidates
        ok = real >= 2
        # Left-out problems run as their raw selves (static shapes) and are
        # dropped below.
        dd = _toy_problem(
          np.where(ok[:, None], merged, pi).astype(np.float32),
          cand,
          np.where(ok[:, None], mask, True),
        )
        dd = {
          k: (
            [x for x, keep in zip(v, ok) if keep] if isinstance(v, list) else v
          )
          for k, v in dd.items()
        }
        # A check of the deduplication: no kept problem holds a fingerprint
        # twice or an empty one.
        left = sum(
          len(np.unique(c[m], axis=0)) < m.sum() or not c[m].any(-1).all()
          for c, m, keep in zip(cand, mask, ok)
          if keep
        )
        raw_dup = [len(np.unique(c, axis=0)) < n for c in cand]
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
        "frac_positive_jaccard": float((rj[sel] > 1e-6).mean())
        if sel.any()
        else None,
      }
    )
  return bins


def mean_ci(x) -> tuple[float, float]:
  """Mean and 95% t half-width over independent problems
  (``core.stats.t_interval``)."""
  t = stats.t_interval(np.asarray(x, np.float64))
  return t.mean, t.half_width


def diff_of_means_ci(a, b) -> tuple[float, float]:
  """``mean(a) - mean(b)`` of two independent samples and its 95% half-width.

  The half-width adds the two groups' t half-widths in quadrature,
  ``sqrt(h_a² + h_b²)`` (Welch's interval with each group's own t quantile; for
  large groups the normal interval).
  """
  ma, ha = mean_ci(a)
  mb, hb = mean_ci(b)
  return ma - mb, float(np.hypot(ha, hb))


def toy_set_summary(part: list) -> dict:
  """The summary of one set of toy problems (``part``: per cell, the raw or
  dedup lists)."""
  cat = lambda k: np.concatenate([np.asarray(r[k], np.float64) for r in part])
  rj, rc, ro, sm = map(
    cat, ("regret_jaccard", "regret_bce_cosine", "regret_oracle", "sigma_max")
  )
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


def toy_regret_summary(
  rows: Sequence[dict[str, Any]],
) -> dict[str, dict[str, Any]]:
  """The problems as drawn (ties included) and the deduplicated ones, summarised
  apart.

  Args:
    rows: :func:`toy_regret_problems`' rows (or the same as read back from
      JSON).

  Returns:
    ``{"raw": summary, "dedup": summary}``; a summary holds the problem count,
    the mean Jaccard-Bayes regret with its 95% t half-width over problems, the
    BCE-marginals + cosine and oracle regrets, the share of tied tops, the
    regret gap between high (σ_max >= 0.75) and low (< 0.5) pools with its
    half-width (None with fewer than two problems in a band), the lemma counts
    and the σ_max bins. ``raw`` adds the share of problems holding a duplicate
    and their regret; ``dedup`` the left-out problems, duplicates left and mean
    candidates.

  Raises:
    ValueError: ``rows`` is empty or a row lacks its ``raw`` or ``dedup`` part.
  """
  if not rows or not all(
    isinstance(r, dict) and {"raw", "dedup"} <= set(r) for r in rows
  ):
    raise ValueError(
      "rows must be a non-empty sequence of toy_regret_problems rows"
    )
  raw = toy_set_summary([r["raw"] for r in rows])
  dup = np.concatenate(
    [np.asarray(r["raw"]["has_duplicates"], bool) for r in rows]
  )
  rj = np.concatenate(
    [np.asarray(r["raw"]["regret_jaccard"], np.float64) for r in rows]
  )
  raw["duplicate_share"] = float(dup.mean())
  raw["regret_with_duplicates"] = float(rj[dup].mean()) if dup.any() else None
  raw["regret_without_duplicates"] = (
    float(rj[~dup].mean()) if (~dup).any() else None
  )
  dedup = toy_set_summary([r["dedup"] for r in rows])
  dedup["left_out"] = int(sum(r["dedup"]["left_out"] for r in rows))
  dedup["duplicates_left"] = int(
    sum(r["dedup"]["duplicates_left"] for r in rows)
  )
  dedup["mean_candidates"] = float(
    np.mean(np.concatenate([r["dedup"]["candidates"] for r in rows]))
  )
  return {"raw": raw, "dedup": dedup}
