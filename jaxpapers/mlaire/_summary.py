"""Seed summaries of the MLAIRE pool reports and the numbers the claims are
judged on.

Pure NumPy on JSON-shaped per-seed records (``mlaire_report`` of every (pool,
retriever) and per-query nDCG / Lang-nDCG on the agreement pools): seed means
with 95% intervals, the rank agreement of nDCG and Lang-nDCG, the spread of
language preference, and the claim metrics.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers.core.report import ci95_halfwidth
from jaxpapers.core.stats import seed_summary
from jaxpapers.mlaire._agreement import rank_agreement, spearman
from jaxpapers.mlaire._metrics import REPORT_KEYS

POOLS = ("A", "B", "C", "D")
AGREEMENT_POOLS = ("A", "D")  # pools whose per-query nDCG / Lang-nDCG are kept
# as they come, no prior
NATURAL_RETRIEVERS = ("e5", "e5_offset", "bm25", "char_ngram")
TRIVIAL_RETRIEVERS = ("random", "lang_only", "blind_oracle")


def summarize_seeds(runs: Sequence[Mapping[str, Any]]) -> dict:
  """Seed mean / std / 95% CI of every (pool, retriever) report.

  Args:
    runs: one entry per seed, each with ``reports[pool][retriever]`` =
      ``mlaire_report`` (as lists: ``REPORT_KEYS``, ``n_lpr_strict``,
      ``four_way`` ``[4]``, ``lpr_strict_by_lang`` and ``sem_at_1_by_lang``
      ``[L]``); pools in ``POOLS`` order.

  Returns:
    ``{pool: {retriever: {metric: {mean, std, ci, values}}}}`` over the seeds
    with a finite value (``four_way_<SpLp|SpLm|SmLp|SmLm>`` for the four-way
    fractions), and per language the mean over the seeds where it is defined
    (NaN where none is).
  """
  if not runs or "reports" not in runs[0]:
    raise ValueError(
      "runs must be a non-empty sequence of {'reports': ...} per seed"
    )
  out = {}
  for v in (v for v in POOLS if v in runs[0]["reports"]):
    for name in runs[0]["reports"][v]:
      reps = [r["reports"][v][name] for r in runs]
      cell = {}
      for key in (*REPORT_KEYS, "n_lpr_strict"):
        vals = np.array([r[key] for r in reps], np.float64)
        cell[key] = _stats(vals)
      fw = np.array([r["four_way"] for r in reps], np.float64)  # [S, 4]
      for j, lab in enumerate(("SpLp", "SpLm", "SmLp", "SmLm")):
        cell[f"four_way_{lab}"] = _stats(fw[:, j])
      for key in ("lpr_strict_by_lang", "sem_at_1_by_lang"):
        # [S, L]; NaN where undefined
        by = np.array([r[key] for r in reps], np.float64)
        n = np.isfinite(by).sum(0)
        cell[key] = np.where(
          n > 0, np.nansum(by, 0) / np.maximum(n, 1), np.nan
        ).tolist()
      out.setdefault(v, {})[name] = cell
  return out


_stats = functools.partial(
  seed_summary, ci_key="ci", values_key="values", finite_only=True
)


def agreement_metrics(
  runs: Sequence[Mapping[str, Any]], n_boot: int = 2000
) -> dict:
  """Rank agreement of nDCG and Lang-nDCG on the pools of ``AGREEMENT_POOLS``.

  Over the non-trivial retrievers (natural ones and the language priors), items
  are the queries of every seed (each seed's pools are separate queries).

  Args:
    runs: one entry per seed, each with ``per_query[pool][retriever]`` =
      ``{'ndcg': [Q_s], 'lang_ndcg': [Q_s]}`` for every pool of
      ``AGREEMENT_POOLS``.
    n_boot: bootstrap resamples of the queries.

  Returns:
    ``{f"rank_agreement_{pool}_{key}": value}`` for the keys of
    :func:`rank_agreement`.
  """
  if not runs or any(
    v not in r.get("per_query", {}) for r in runs for v in AGREEMENT_POOLS
  ):
    raise ValueError(
      f"runs must be non-empty, each with per_query for pools {AGREEMENT_POOLS}"
    )
  d = {}
  for v in AGREEMENT_POOLS:
    names = [r for r in runs[0]["per_query"][v] if r not in TRIVIAL_RETRIEVERS]
    cat = lambda key: np.array(
      [
        np.concatenate([run["per_query"][v][r][key] for run in runs])
        for r in names
      ]
    )
    ra = rank_agreement(cat("ndcg"), cat("lang_ndcg"), n_boot=n_boot)
    d.update({f"rank_agreement_{v}_{key}": val for key, val in ra.items()})
  return d


def lpr_range(summary: Mapping[str, Any], pool: str) -> float:
  """Max minus min seed-mean strict LPR over the non-trivial retrievers of
  ``pool``.

  Args:
    summary: :func:`summarize_seeds` output (at least
      ``[pool][retriever]['lpr_strict']``).
    pool: the pool's name.

  Returns:
    The range (NaN when no non-trivial retriever has a finite mean).
  """
  if pool not in summary:
    raise ValueError(
      f"pool {pool!r} not in the summary (pools {sorted(summary)})"
    )
  vals = [
    c["lpr_strict"]["mean"]
    for r, c in summary[pool].items()
    if r not in TRIVIAL_RETRIEVERS
  ]
  vals = [x for x in vals if np.isfinite(x)]
  return float(max(vals) - min(vals)) if vals else float("nan")


def claim_metrics(summary: Mapping[str, Any], ndcg_tie: float = 0.02) -> dict:
  """The numbers the MLAIRE claims read, from the seed summaries of pools A, B
  and C.

  Args:
    summary: :func:`summarize_seeds` output with pools ``A`` and ``C`` (and
      ``B`` when e5 and its offset removal ran).
    ndcg_tie: two retrievers whose seed-mean nDCG differ by at most this tie.

  Returns:
    ``lpr_gap_at_ndcg_tie`` (the largest strict-LPR gap between natural
    retrievers tied on nDCG, pool A) and ``lpr_gap_pair``;
    ``strongest_semantic`` (the natural retriever with the best Sem@1) with its
    ``strongest_SpLm_at_1`` and ``_ci``; Spearman's rho between strict LPR on A
    and S-L+@1 on C over the non-trivial retrievers
    (``spearman_lpr_A_vs_SmLp_C``, ``spearman_n_retrievers``); the paired
    offset-removal effects ``offset_lpr_drop`` and ``offset_sem_at_1_gain_B``
    with ``_ci``; and the trivial baselines' ``<r>_<metric>`` values.
  """
  if "A" not in summary or "C" not in summary:
    raise ValueError(
      f"summary must hold pools 'A' and 'C', got {sorted(summary)}"
    )
  d = {}
  A, C = summary["A"], summary["C"]
  mean = lambda pool, r, key: pool[r][key]["mean"]
  natural = [r for r in NATURAL_RETRIEVERS if r in A]
  # 1. nDCG ties that hide a language-preference gap (natural retrievers, pool
  #    A).
  best = 0.0
  pair = None
  for i, a in enumerate(natural):
    for b in natural[i + 1 :]:
      if abs(mean(A, a, "ndcg") - mean(A, b, "ndcg")) <= ndcg_tie:
        gap = abs(mean(A, a, "lpr_strict") - mean(A, b, "lpr_strict"))
        if gap > best:
          best, pair = gap, f"{a} vs {b}"
  d["lpr_gap_at_ndcg_tie"] = best
  d["lpr_gap_pair"] = pair
  # 2. The semantically strongest natural retriever: its
  #    right-content-wrong-language rate.
  if natural:
    strongest = max(natural, key=lambda r: mean(A, r, "sem_at_1"))
    d["strongest_semantic"] = strongest
    d["strongest_SpLm_at_1"] = A[strongest]["four_way_SpLm"]["mean"]
    d["strongest_SpLm_at_1_ci"] = A[strongest]["four_way_SpLm"]["ci"]
  # 3. Preference vs preference-driven semantic failures, every non-trivial
  #    retriever.
  nontrivial = [r for r in A if r not in TRIVIAL_RETRIEVERS]
  d["spearman_lpr_A_vs_SmLp_C"] = spearman(
    np.asarray([mean(A, r, "lpr_strict") for r in nontrivial], np.float64),
    np.asarray([C[r]["four_way_SmLp"]["mean"] for r in nontrivial], np.float64),
  )
  d["spearman_n_retrievers"] = len(nontrivial)
  # 4. Offset removal: paired LPR drop on pool A (seed by seed).
  if "e5" in A and "e5_offset" in A:
    B = summary["B"]
    for key, (a, b) in {
      "offset_lpr_drop": (A["e5"]["lpr_strict"], A["e5_offset"]["lpr_strict"]),
      "offset_sem_at_1_gain_B": (
        B["e5_offset"]["sem_at_1"],
        B["e5"]["sem_at_1"],
      ),
    }.items():
      diff = np.array(a["values"]) - np.array(b["values"])  # paired by seed
      d[key] = float(diff.mean())
      d[f"{key}_ci"] = ci95_halfwidth(diff) if diff.size > 1 else float("nan")
  # Trivial baselines that would expose a vacuous metric.
  for r in TRIVIAL_RETRIEVERS:
    for key in ("ndcg", "lang_ndcg", "lpr_strict", "sem_at_1"):
      d[f"{r}_{key}"] = mean(A, r, key)
    d[f"{r}_SmLp_at_1_C"] = C[r]["four_way_SmLp"]["mean"]
  return d
