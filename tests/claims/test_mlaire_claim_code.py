"""Claim code of experiments/mlaire (``jaxpapers.mlaire._summary``): seed
summaries, nDCG ties, Spearman and paired drops."""

import importlib
import math

import numpy as np
import pytest

MODULES = {
  "lib": "jaxpapers.mlaire._summary",
  "agreement": ("jaxpapers.mlaire._agreement"),
}

T2, T3 = 12.706, 4.303  # t_{0.975, n-1} for n = 2, 3


@pytest.fixture(name="lib")
def _lib():
  return importlib.import_module(MODULES["lib"])


@pytest.fixture(name="agreement")
def _agreement():
  return importlib.import_module(MODULES["agreement"])


def _report(lib, s, lpr):
  r = {k: 0.1 * (s + 1) for k in lib.REPORT_KEYS}
  r["lpr_strict"] = lpr
  r["n_lpr_strict"] = 10
  r["four_way"] = [0.4, 0.3 + 0.1 * s, 0.2, 0.1]  # SpLp, SpLm, SmLp, SmLm
  r["lpr_strict_by_lang"] = [0.5, float("nan"), 0.1 * s]
  r["sem_at_1_by_lang"] = [0.2, 0.2, 0.2]
  return r


def test_summarize(lib):
  lprs = (0.5, float("nan"), 0.7)  # the second seed has no strict-LPR pairs
  runs = [
    {"reports": {v: {"e5": _report(lib, s, lprs[s])} for v in "ABC"}}
    for s in range(3)
  ]
  cell = lib.summarize_seeds(runs)["A"]["e5"]
  # Finite seeds only: mean 0.6, sample std sqrt(0.02), t-interval of n = 2.
  assert cell["lpr_strict"]["mean"] == pytest.approx(0.6)
  assert cell["lpr_strict"]["std"] == pytest.approx(math.sqrt(0.02))
  assert cell["lpr_strict"]["ci"] == pytest.approx(
    T2 * math.sqrt(0.02) / math.sqrt(2)
  )
  assert cell["ndcg"]["mean"] == pytest.approx(0.2)
  assert cell["four_way_SpLm"]["mean"] == pytest.approx(0.4)  # (0.3, 0.4, 0.5)
  assert cell["four_way_SpLm"]["ci"] == pytest.approx(T3 * 0.1 / math.sqrt(3))
  assert cell["four_way_SmLp"]["mean"] == pytest.approx(0.2)
  # Per language, the mean over the seeds where it is defined (NaN where none
  # is).
  np.testing.assert_allclose(cell["lpr_strict_by_lang"], [0.5, np.nan, 0.1])


def test_spearman(agreement):
  # Ranks (2, 0, 3, 1) and (1, 2, 0, 3): d = (1, -2, 3, -2), 1 - 6 * 18 /
  # (4 * 15) = -0.8.
  assert agreement.spearman(
    [0.3, 0.1, 0.6, 0.2], [0.2, 0.3, 0.1, 0.5]
  ) == pytest.approx(-0.8)
  assert math.isnan(agreement.spearman([1.0, 2.0], [2.0, 1.0]))


def test_spearman_with_ties(agreement):
  # Average ranks of (1, 1, 2) are (0.5, 0.5, 2): rho = corr((0, 1, 2), (0.5,
  # 0.5, 2)) = sqrt(3)/2.
  assert agreement.spearman([1.0, 2.0, 3.0], [1.0, 1.0, 2.0]) == pytest.approx(
    math.sqrt(3) / 2
  )
  assert agreement.spearman([2.0, 1.0, 3.0], [1.0, 1.0, 2.0]) == pytest.approx(
    math.sqrt(3) / 2
  )


def test_rank_agreement(agreement):
  # Means: nDCG (1, 1, 0.5), Lang-nDCG (0.75, 0.5, 0). Average ranks (1.5,
  # 1.5, 0) and (2, 1, 0): centred (0.5, 0.5, -1) and (1, 0, -1), rho = 1.5 /
  # sqrt(1.5 * 2) = sqrt(3) / 2.
  ndcg = [[1.0, 1.0], [1.0, 1.0], [0.5, 0.5]]
  lang = [[1.0, 0.5], [0.5, 0.5], [0.0, 0.0]]
  ra = agreement.rank_agreement(ndcg, lang, n_boot=400)
  assert ra["spearman"] == pytest.approx(math.sqrt(3) / 2)
  assert (ra["n_retrievers"], ra["n_queries"], ra["n_pairs"]) == (3, 2, 3)
  # Pair (0, 1) is tied on nDCG and split by Lang-nDCG; no pair is ordered
  # oppositely.
  assert (ra["n_discordant"], ra["n_ndcg_ties"], ra["n_ndcg_ties_split"]) == (
    0,
    1,
    1,
  )
  # Resampling query 1 alone gives Lang-nDCG (0.5, 0.5, 0): rho = 1; any other
  # resample gives the full-data order (sqrt(3) / 2). P(rho = 1) = 1/4, so the
  # 95% interval is [sqrt(3)/2, 1].
  assert ra["lo"] == pytest.approx(math.sqrt(3) / 2)
  assert ra["hi"] == pytest.approx(1.0)
  assert ra["ci"] == pytest.approx(1.0 - math.sqrt(3) / 2)


def test_rank_agreement_reversal_and_ties(agreement):
  # Opposite orders: rho = -1, all three pairs discordant.
  ra = agreement.rank_agreement(
    [[0.9], [0.8], [0.7]], [[0.1], [0.2], [0.3]], n_boot=10
  )
  assert ra["spearman"] == pytest.approx(-1.0)
  assert ra["n_discordant"] == 3 and ra["n_ndcg_ties"] == 0
  assert math.isnan(ra["lo"]) and math.isnan(ra["ci"])  # one query: no interval
  # Means that differ by float noise (1e-9) are a tie, not an order: nDCG
  # constant -> NaN.
  ra = agreement.rank_agreement(
    [[0.5], [0.5 + 1e-9], [0.5]], [[0.1], [0.2], [0.3]], n_boot=10
  )
  assert (
    math.isnan(ra["spearman"])
    and ra["n_ndcg_ties"] == 3
    and ra["n_ndcg_ties_split"] == 3
  )
  with pytest.raises(ValueError, match="R, N"):
    agreement.rank_agreement([0.1, 0.2], [0.1, 0.2])


def test_agreement_metrics(lib):
  # Two seeds of 1 and 2 queries; the random retriever (trivial) is left out of
  # the ranking.
  def run(nd, ln):
    pq = {r: {"ndcg": nd[r], "lang_ndcg": ln[r]} for r in nd}
    return {"per_query": {"A": pq, "D": pq}}

  s0 = run(
    {"e5": [1.0], "bm25": [0.5], "char_ngram": [0.2], "random": [0.0]},
    {"e5": [0.2], "bm25": [0.5], "char_ngram": [1.0], "random": [0.9]},
  )
  s1 = run(
    {
      "e5": [1.0, 1.0],
      "bm25": [0.5, 0.5],
      "char_ngram": [0.2, 0.2],
      "random": [0.0, 0.0],
    },
    {
      "e5": [0.2, 0.2],
      "bm25": [0.5, 0.5],
      "char_ngram": [1.0, 1.0],
      "random": [0.9, 0.9],
    },
  )
  d = lib.agreement_metrics([s0, s1], n_boot=50)
  for v in "AD":
    assert d[f"rank_agreement_{v}_n_retrievers"] == 3
    assert d[f"rank_agreement_{v}_n_queries"] == 3
    assert d[f"rank_agreement_{v}_spearman"] == pytest.approx(-1.0)
    # Every query orders the retrievers the same way: the interval is the point.
    assert d[f"rank_agreement_{v}_lo"] == pytest.approx(-1.0)
    assert d[f"rank_agreement_{v}_ci"] == pytest.approx(0.0)


def test_lpr_range(lib):
  D = {
    "e5": {"lpr_strict": {"mean": 0.3}},
    "e5_prior_0p05": {"lpr_strict": {"mean": 0.9}},
    "bm25": {"lpr_strict": {"mean": float("nan")}},
    "random": {"lpr_strict": {"mean": 0.0}},  # trivial: not counted
  }
  assert lib.lpr_range({"D": D}, "D") == pytest.approx(0.6)


def _cell(**means):
  out = {k: {"mean": v} for k, v in means.items()}
  return out


def _summary():
  A = {
    # nDCG ties (<= 0.02): e5 / e5_offset (gap in LPR 0.2) and bm25 / char_ngram
    # (0.55).
    "e5": _cell(ndcg=0.60, lpr_strict=0.30, sem_at_1=0.70),
    "e5_offset": _cell(ndcg=0.61, lpr_strict=0.10, sem_at_1=0.72),
    "bm25": _cell(ndcg=0.50, lpr_strict=0.60, sem_at_1=0.40),
    "char_ngram": _cell(ndcg=0.515, lpr_strict=0.05, sem_at_1=0.45),
    "e5_prior_0p01": _cell(ndcg=0.9, lpr_strict=0.20, sem_at_1=0.9),
  }
  for r, x in zip(
    ("e5", "e5_offset", "bm25", "char_ngram"), (0.10, 0.05, 0.30, 0.25)
  ):
    A[r]["four_way_SpLm"] = {"mean": x, "ci": x / 10}
  A["e5"]["lpr_strict"]["values"] = [0.30, 0.35, 0.25]
  A["e5_offset"]["lpr_strict"]["values"] = [0.10, 0.20, 0.00]
  for r in ("random", "lang_only", "blind_oracle"):
    A[r] = _cell(ndcg=0.1, lang_ndcg=0.2, lpr_strict=0.3, sem_at_1=0.4)
    A[r]["lang_ndcg"] = {"mean": 0.2}
  C = {r: {"four_way_SmLp": {"mean": 0.0}} for r in A}
  for r, y in zip(
    ("e5", "e5_offset", "bm25", "char_ngram", "e5_prior_0p01"),
    (0.2, 0.3, 0.1, 0.5, 0.15),
  ):
    C[r]["four_way_SmLp"]["mean"] = y
  B = {
    "e5": {"sem_at_1": {"values": [0.5, 0.5, 0.5]}},
    "e5_offset": {"sem_at_1": {"values": [0.6, 0.4, 0.8]}},
  }
  return {"A": A, "B": B, "C": C}


def test_derived_metrics(lib):
  d = lib.claim_metrics(_summary())
  assert d["lpr_gap_at_ndcg_tie"] == pytest.approx(0.55)
  assert d["lpr_gap_pair"] == "bm25 vs char_ngram"
  # Semantically strongest natural retriever: e5_offset (0.72), not the prior
  # (not natural).
  assert d["strongest_semantic"] == "e5_offset"
  assert d["strongest_SpLm_at_1"] == 0.05
  assert d["strongest_SpLm_at_1_ci"] == 0.005
  # Over the five non-trivial retrievers: LPR ranks (3, 1, 4, 0, 2), SmLp ranks
  # (2, 3, 0, 4, 1): d = (1, -2, 4, -4, 1), 1 - 6 * 38 / (5 * 24) = -0.9.
  assert d["spearman_lpr_A_vs_SmLp_C"] == pytest.approx(-0.9)
  assert d["spearman_n_retrievers"] == 5
  # e5 - e5_offset strict LPR per seed: (0.2, 0.15, 0.25).
  assert d["offset_lpr_drop"] == pytest.approx(0.2)
  assert d["offset_lpr_drop_ci"] == pytest.approx(T3 * 0.05 / math.sqrt(3))
  assert d["offset_sem_at_1_gain_B"] == pytest.approx(0.1)  # (0.1, -0.1, 0.3)
  assert d["random_lpr_strict"] == 0.3
  assert d["blind_oracle_SmLp_at_1_C"] == 0.0


def test_no_tie_gives_zero(lib):
  s = _summary()
  s["A"]["e5_offset"]["ndcg"]["mean"] = 0.9
  s["A"]["char_ngram"]["ndcg"]["mean"] = 0.3
  d = lib.claim_metrics(s, ndcg_tie=0.02)
  assert d["lpr_gap_at_ndcg_tie"] == 0.0 and d["lpr_gap_pair"] is None
