"""Claim code of experiments/lanr: seed aggregates, references, paired intervals
and AUROC."""

import importlib
import itertools

import numpy as np
import pytest

from jaxpapers import lanr as L

MODULES = {
  "evaluate": "experiments.lanr.evaluate",
  "stats": "jaxpapers.lanr._stats",
  "per_question": "jaxpapers.lanr._eval",
}

T2 = 12.706  # t_{0.975, 1}: two seeds
HOPS = [1, 2, 3, 2]  # four test questions; q1..q3 are multi-hop


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="stats")
def _stats():
  return importlib.import_module(MODULES["stats"])


@pytest.fixture(name="per_question")
def _per_question():
  return importlib.import_module(MODULES["per_question"])


def _per_seed(evaluate):
  """Two seeds; per method per-question calls, EM and support recall."""
  z = [0.0] * 4
  seeds = [
    {m: {"calls": [3.0] * 4, "em": z, "recall": z} for m in evaluate.METHODS}
    for _ in (0, 1)
  ]
  seeds[0]["fixed"] = {
    "calls": [3.0] * 4,
    "em": [1, 1, 1, 0],
    "recall": [1, 1, 0, 0],
  }
  seeds[1]["fixed"] = {
    "calls": [3.0] * 4,
    "em": [0, 0, 1, 0],
    "recall": [0, 1, 1, 1],
  }
  seeds[0]["entropy_control"] = {
    "calls": [1, 2, 3, 2],
    "em": [1, 0, 1, 0],
    "recall": z,
  }
  seeds[1]["entropy_control"] = {
    "calls": [1, 1, 1, 3],
    "em": [1, 1, 1, 0],
    "recall": z,
  }
  seeds[0]["oracle_control"] = {"calls": [2.0] * 4, "em": z, "recall": z}
  seeds[1]["oracle_control"] = {"calls": [1.0] * 4, "em": z, "recall": z}
  seeds[1]["one_call"] = {"calls": [1.0] * 4, "em": [1, 0, 0, 0], "recall": z}
  seeds[0]["next_hop_train"] = {"all": 0.6, "hop1": 0.9}
  seeds[1]["next_hop_train"] = {"all": 0.4, "hop1": 0.5}
  return seeds


def _ref():
  return {
    "bm25_top1": {"recall": [1, 0, 0, 0]},
    "bm25_top3": {"recall": [1, 0, 1, 0]},
    "bm25_iterative": {"recall": [1, 1, 0, 0]},
    "untrained_cosine": {"recall": [1, 0, 0, 1]},
    "whitened_cosine": {"recall": [1, 1, 1, 0]},
    "gold_docs_em": [1, 1, 0, 1],
    "closed_book_em": [0.0, 1.0, 0.0, 0.0],
  }


def test_aggregate_methods(evaluate):
  m = evaluate.aggregate_methods(_per_seed(evaluate), HOPS)["fixed"]
  assert m["recall_all"]["mean"] == pytest.approx((0.5 + 0.75) / 2)
  # Multi-hop (q1..q3): seed 0 1/3, seed 1 1.
  assert m["recall_multihop"]["mean"] == pytest.approx(2 / 3)
  assert m["recall_multihop"]["ci95"] == pytest.approx(T2 * (2 / 3) / 2)
  # q1 and q3: seed 0 1/2, seed 1 1
  assert m["recall_2hop"]["mean"] == pytest.approx(0.75)
  assert m["em"]["per_seed"] == [0.75, 0.25]


def test_reference_metrics(evaluate):
  refs = evaluate.reference_metrics(_ref(), _per_seed(evaluate), HOPS, 3, 5)
  assert refs["bm25_top3"]["recall_multihop"] == pytest.approx(1 / 3)
  assert refs["bm25_top3"]["recall_all"] == pytest.approx(0.5)
  # q1 and q3: 1, 0
  assert refs["bm25_iterative"]["recall_2hop"] == pytest.approx(0.5)
  assert refs["whitened_cosine"]["recall_multihop"] == pytest.approx(2 / 3)
  # 3 random documents of 5 hold all h gold ones with probability C(5-h, 3-h) /
  # C(5, 3): h = 1, 2, 3 -> 6/10, 3/10, 1/10.
  assert refs["random_docs"]["recall_all"] == pytest.approx(
    (0.6 + 0.3 + 0.1 + 0.3) / 4
  )
  assert refs["random_docs"]["recall_multihop"] == pytest.approx(
    (0.3 + 0.1 + 0.3) / 3
  )
  assert refs["closed_book"]["em"] == pytest.approx(0.25)
  assert refs["gold_docs"]["em"] == pytest.approx(0.75)
  assert (
    refs["gold_docs"]["em_2hop"] == 1.0 and refs["gold_docs"]["em_3hop"] == 0.0
  )


def _suff():
  return {
    "entropy": {"auroc": 0.7, "ci": 0.1},
    "entropy_same_docs": {"auroc": 0.6, "ci": 0.2},
  }


def test_claim_values(evaluate):
  d = evaluate.claim_values(_per_seed(evaluate), _ref(), HOPS, _suff(), 3, 500)
  # Multi-hop q1..q3: LAnR per-question seed means (1, 0.5, 0.5) vs iterative
  # BM25 (1, 0, 0).
  assert d["lanr_minus_bm25_iter_multihop_recall"] == pytest.approx(
    2 / 3 - 1 / 3
  )
  assert d["untrained_cosine_minus_bm25_iter_multihop_recall"] == pytest.approx(
    1 / 3 - 1 / 3
  )
  assert d["whitened_cosine_minus_bm25_iter_multihop_recall"] == pytest.approx(
    2 / 3 - 1 / 3
  )
  # All questions: LAnR (0.5, 1, 0.5, 0.5) against the better frozen cosine by
  # mean recall (whitened, 3/4 > untrained, 1/2): (1, 1, 1, 0).
  assert d["best_frozen_cosine"] == "whitened_cosine"
  assert d["trained_minus_frozen_cosine_recall"] == pytest.approx(
    2.5 / 4 - 3 / 4
  )
  # Calls of the entropy control per question, seed means (1, 1.5, 2, 2.5): 3 -
  # 1.75 saved.
  assert d["calls_saved_entropy_control"] == pytest.approx(1.25)
  # EM, controlled minus fixed, per question: (1, .5, 1, 0) - (.5, .5, 1, 0).
  assert d["em_entropy_control_minus_fixed"] == pytest.approx(0.5 / 4)
  assert d["trivial_one_call_em_minus_fixed"] == pytest.approx(
    (0.5 - 0.5 - 0.5 - 1 + 0) / 4
  )
  assert d["entropy_auroc"] == 0.7 and d["entropy_auroc_same_docs_ci"] == 0.2
  assert d["train_next_hop_acc"] == pytest.approx(0.5)
  for k in (
    "lanr_minus_bm25_iter_multihop_recall_ci",
    "calls_saved_entropy_control_ci",
  ):
    assert d[k] > 0


def test_paired_ci(evaluate):
  # A constant difference has no spread; a difference of means needs the
  # pairing.
  r = evaluate.paired_ci([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], 500)
  assert r["mean"] == pytest.approx(0.5) and r["ci"] == pytest.approx(0.0)
  # 400 items, differences +-1 half each: the half-width is near 1.96 /
  # sqrt(400).
  a = np.tile([1.0, -1.0], 200)
  r = evaluate.paired_ci(a, np.zeros(400), 4000)
  assert r["ci"] == pytest.approx(1.96 / 20, abs=0.01)
  # one item: no interval
  assert evaluate.paired_ci([1.0], [0.0], 100)["ci"] is None
  # A skewed difference (one item of 10 among 20): the interval is [0, 1.5]
  # around 0.5 (the draws of that item are Binomial(20, 1/20)), so the
  # half-width is the wider side, 1.0.
  r = evaluate.paired_ci(np.r_[np.zeros(19), 10.0], np.zeros(20), 4000)
  assert r["lo"] == pytest.approx(0.0) and r["hi"] == pytest.approx(1.5)
  assert r["ci"] == pytest.approx(1.0)


def _pairs_auroc(score, label, strata):
  num = den = 0.0
  for i, j in itertools.product(range(len(score)), repeat=2):
    if label[i] and not label[j] and strata[i] == strata[j]:
      den += 1
      num += (
        1.0 if score[i] > score[j] else 0.5 if score[i] == score[j] else 0.0
      )
  return num / den if den else 0.5


def test_auroc_ci_pairs_strata_and_group_bootstrap(stats):
  # Six questions, contexts t = 0..hops; sufficient at t = hops.
  hops = [1, 2, 1, 3, 2, 1]
  rng = np.random.default_rng(0)
  score, label, group, strata = [], [], [], []
  for q, h in enumerate(hops):
    for t in range(h + 1):
      score.append(float(rng.integers(0, 4)))  # ties included
      label.append(t == h)
      group.append(q)
      strata.append(t)
  score, label = np.asarray(score), np.asarray(label)
  r = stats.auroc_interval(score, label, group, 300)
  assert r["auroc"] == pytest.approx(
    _pairs_auroc(score, label, [0] * len(score))
  )
  rs = stats.auroc_interval(score, label, group, 300, strata=strata)
  assert rs["auroc"] == pytest.approx(_pairs_auroc(score, label, strata))
  # Brute-force bootstrap: resample whole questions with the draws of
  # core.paired_bootstrap (one integers(0, G, (n, G)) call of default_rng(0)),
  # AUROC of the resampled contexts.
  draws = np.random.default_rng(0).integers(0, 6, size=(300, 6))
  vals = []
  for row in draws:
    idx = [i for q in row for i in np.flatnonzero(np.asarray(group) == q)]
    vals.append(_pairs_auroc(score[idx], label[idx], np.asarray(strata)[idx]))
  lo, hi = np.quantile(vals, [0.025, 0.975])
  assert rs["lo"] == pytest.approx(lo) and rs["hi"] == pytest.approx(hi)
  assert rs["ci"] == pytest.approx(max(rs["auroc"] - lo, hi - rs["auroc"]))
  # Perfect separation: every resample scores 1.
  perfect = stats.auroc_interval(label.astype(float), label, group, 100)
  assert perfect["auroc"] == 1.0 and perfect["ci"] == 0.0


def test_entropy_auroc_rewards_low_entropy(evaluate):
  # Sufficient contexts (label 1) have entropies 0.1 and 0.6, insufficient ones
  # 0.5 and 0.9: 3 of the 4 (sufficient, insufficient) pairs have the lower
  # entropy on the sufficient side.
  got = evaluate._entropy_auroc(
    np.array([0.1, 0.5, 0.9, 0.6]), np.array([1, 0, 0, 1])
  )
  assert got == pytest.approx(0.75)


def test_next_hop_accuracy(per_question):
  # Three gold-prefix rows (t = 0, 1 of one 2-hop question, and its sufficient
  # t = 2).
  rows = [
    {"in_context": np.array([0, 0, 0], bool), "next_doc": 2, "t": 0},
    {"in_context": np.array([0, 0, 1], bool), "next_doc": 0, "t": 1},
    {"in_context": np.array([1, 0, 1], bool), "next_doc": -1, "t": 2},
  ]
  s = np.array([[0.1, 0.2, 0.9], [0.1, 0.5, 0.9], [0.0, 0.0, 0.0]])
  fields = {
    k: np.asarray([r[k] for r in rows]) for k in ("in_context", "next_doc", "t")
  }
  out = per_question.next_hop_accuracy(s, **fields)
  # Row 0: argmax 2 = next (hit); row 1: doc 2 is in the context, argmax of the
  # rest is 1 (miss).
  assert out == {"all": 0.5, "hop1": 1.0}


def test_bm25_diagnostics(per_question):
  kb = L.make_kb(0, n_people=6, n_cities=3, n_countries=2, n_companies=2)
  qs = L.make_questions(kb, kb.people, hops=(1, 2), n_per_hop=2, seed=0)
  top3 = np.asarray([list(q.gold) + [0, 1, 2][: 3 - q.hops] for q in qs])
  out = per_question.bm25_diagnostics(kb, qs, top3)
  assert out["hop1"]["docs"] == 4 and out["later_hops"]["docs"] == 2
  # the person's own fact
  assert out["hop1"]["share_an_entity_with_question"] == 1.0
  # the bridge's fact
  assert out["later_hops"]["share_an_entity_with_question"] == 0.0
  assert (
    out["hop1"]["in_question_top3"] == 1.0
    and out["later_hops"]["in_question_top3"] == 1.0
  )


def test_stop_outcomes(per_question):
  doc_ids = np.array([[3, 1, 2], [0, 4, 5], [7, 8, 9]])
  gold = [[1, 3], [4, 9], [7]]
  # EM after k = 0 (closed book), 1, 2, 3 calls.
  correct = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 1]], bool)
  out = per_question.stop_outcomes(
    np.array([2, 5, 1]), doc_ids, gold, correct, 3
  )
  assert out["calls"] == [2.0, 3.0, 1.0]  # 5 calls capped at t_max = 3
  # {3, 1} holds {1, 3}; {0, 4, 5} lacks 9
  assert out["recall"] == [1.0, 0.0, 1.0]
  assert out["em"] == [1.0, 0.0, 0.0]  # EM after 2, 3 and 1 calls


def test_better_on_compares_the_masked_questions(evaluate):
  # a wins over all questions (2/4 vs 1/4), b on the multi-hop ones (1/2 vs
  # 0/2).
  ref = {
    "a": {"recall": [1.0, 1.0, 0.0, 0.0]},
    "b": {"recall": [0.0, 0.0, 1.0, 0.0]},
  }
  assert evaluate.better_on(ref, ("a", "b"), [True] * 4) == "a"
  assert evaluate.better_on(ref, ("a", "b"), [False, False, True, True]) == "b"
  # tie: the first
  assert evaluate.better_on(ref, ("b", "a"), [True, False, True, False]) == "b"
