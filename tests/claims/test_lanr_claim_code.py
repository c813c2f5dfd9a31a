"""Claim code of experiments/lanr: seed aggregates, references and the claims' differences."""

import importlib

import numpy as np
import pytest

MODULES = {"train": "experiments.lanr.train"}

T2 = 12.706  # t_{0.975, 1}: two seeds
HOPS = [1, 2, 3, 2]  # four test questions; q1..q3 are multi-hop


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _per_seed(train):
  """Two seeds; per method per-question calls, EM and support recall."""
  z = [0.0] * 4
  seeds = [{m: {"calls": [3.0] * 4, "em": z, "recall": z} for m in train.METHODS} for _ in (0, 1)]
  seeds[0]["fixed"] = {"calls": [3.0] * 4, "em": [1, 1, 1, 0], "recall": [1, 1, 0, 0]}
  seeds[1]["fixed"] = {"calls": [3.0] * 4, "em": [0, 0, 1, 0], "recall": [0, 1, 1, 1]}
  seeds[0]["entropy_control"] = {"calls": [1, 2, 3, 2], "em": [1, 0, 1, 0], "recall": z}
  seeds[1]["entropy_control"] = {"calls": [1, 1, 1, 3], "em": [1, 1, 1, 0], "recall": z}
  seeds[0]["oracle_control"] = {"calls": [2.0] * 4, "em": z, "recall": z}
  seeds[1]["oracle_control"] = {"calls": [1.0] * 4, "em": z, "recall": z}
  seeds[1]["one_call"] = {"calls": [1.0] * 4, "em": [1, 0, 0, 0], "recall": z}
  for s in seeds:
    s["closed_book_em"] = [0.0, 1.0, 0.0, 0.0]
  return seeds


def _ref():
  return {
    "bm25_top1": {"recall": [1, 0, 0, 0], "em": [0, 0, 0, 0]},
    "bm25_top3": {"recall": [1, 0, 1, 0], "em": [1, 0, 0, 0]},
    "gold_docs_em": [1, 1, 0, 1],
  }


def test_aggregate_methods(train):
  m = train.aggregate_methods(_per_seed(train), HOPS)["fixed"]
  assert m["recall_all"]["mean"] == pytest.approx((0.5 + 0.75) / 2)
  # Multi-hop (q1..q3): seed 0 1/3, seed 1 1.
  assert m["recall_multihop"]["mean"] == pytest.approx(2 / 3)
  assert m["recall_multihop"]["ci95"] == pytest.approx(T2 * (2 / 3) / 2)
  assert m["recall_2hop"]["mean"] == pytest.approx(0.75)  # q1 and q3: seed 0 1/2, seed 1 1
  assert m["em"]["per_seed"] == [0.75, 0.25]


def test_reference_metrics(train):
  refs = train.reference_metrics(_ref(), _per_seed(train), HOPS, 3, 5)
  assert refs["bm25_top3"]["recall_multihop"] == pytest.approx(1 / 3)
  assert refs["bm25_top3"]["recall_all"] == pytest.approx(0.5)
  # 3 random documents of 5 hold all h gold ones with probability C(5-h, 3-h) / C(5, 3):
  # h = 1, 2, 3 -> 6/10, 3/10, 1/10.
  assert refs["random_docs"]["recall_all"] == pytest.approx((0.6 + 0.3 + 0.1 + 0.3) / 4)
  assert refs["random_docs"]["recall_multihop"] == pytest.approx((0.3 + 0.1 + 0.3) / 3)
  assert refs["closed_book"]["em"] == pytest.approx(0.25)
  assert refs["gold_docs"]["em"] == pytest.approx(0.75)


def test_claim_values(train):
  per_seed = _per_seed(train)
  methods = train.aggregate_methods(per_seed, HOPS)
  refs = train.reference_metrics(_ref(), per_seed, HOPS, 3, 5)
  d = train.claim_values(per_seed, methods, refs, {"entropy_auroc": 0.7}, 3)
  assert d["lanr_minus_bm25_multihop_recall"] == pytest.approx(2 / 3 - 1 / 3)
  assert d["lanr_minus_bm25_multihop_recall_ci"] == pytest.approx(T2 * (2 / 3) / 2)
  # t_max - mean calls per seed: 3 - 2, 3 - 1.5.
  assert d["calls_saved_entropy_control"] == pytest.approx(1.25)
  assert d["calls_saved_entropy_control_ci"] == pytest.approx(T2 * 0.5 / 2)
  # EM, controlled minus fixed, per seed: 0.5 - 0.75, 0.75 - 0.25.
  assert d["em_entropy_control_minus_fixed"] == pytest.approx(0.125)
  assert d["em_entropy_control_minus_fixed_ci"] == pytest.approx(T2 * 0.75 / 2)
  assert d["trivial_one_call_em_minus_fixed"] == pytest.approx((-0.75 + 0.0) / 2)
  assert d["oracle_control_calls_saved"] == pytest.approx(3 - 1.5)
  assert d["entropy_auroc"] == 0.7


def test_entropy_auroc_rewards_low_entropy(train):
  # Sufficient contexts (label 1) have entropies 0.1 and 0.6, insufficient ones 0.5 and 0.9:
  # 3 of the 4 (sufficient, insufficient) pairs have the lower entropy on the sufficient side.
  got = train._entropy_auroc(np.array([0.1, 0.5, 0.9, 0.6]), np.array([1, 0, 0, 1]))
  assert got == pytest.approx(0.75)


def test_rule_outcomes(train):
  doc_ids = np.array([[3, 1, 2], [0, 4, 5], [7, 8, 9]])
  gold = [[1, 3], [4, 9], [7]]
  # EM after k = 0 (closed book), 1, 2, 3 calls.
  correct = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 1]], bool)
  out = train._rule_outcomes(np.array([2, 5, 1]), doc_ids, gold, correct, 3)
  assert out["calls"] == [2.0, 3.0, 1.0]  # 5 calls capped at t_max = 3
  assert out["recall"] == [1.0, 0.0, 1.0]  # {3, 1} holds {1, 3}; {0, 4, 5} lacks 9
  assert out["em"] == [1.0, 0.0, 0.0]  # EM after 2, 3 and 1 calls
