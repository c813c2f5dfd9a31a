"""Claim code of experiments/evidence_coverage: decoupling, control gains and budget boundary."""

import importlib
import types

import pytest

MODULES = {"train": "experiments.evidence_coverage.train"}

KS = (1, 2, 4, 8, 16)


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _reader(retrieved, oracle, k_peak, shuffled, other, random):
  return {
    "retrieved": {"acc": retrieved},
    "oracle": {"acc": oracle},
    "shuffled_labels": {"acc": shuffled},
    "other_query": {"acc": other},
    "random": {"acc": random},
    "k_peak": k_peak,
    "controller": {"acc": 0.5, "best_fixed_k_acc": 0.6},
    "regime": "coverage-limited",
  }


def _cells():
  """Three cells. Accuracy declines past its peak while recall rises by >= 0.1 (decoupling):
  GD in A and C, ridge in C only; ridge's oracle context in A. The control accuracies are
  given as a single best value (the rest of the curve is lower)."""
  low = lambda best: [best] + [0.0] * 4  # noqa: E731
  a = {
    "recall": [0.1, 0.2, 0.3, 0.5, 0.6],
    "prior": {"acc": 0.3},
    "k_star": 2,
    "k_star_average": 1,
    "gd": _reader(
      [0.5, 0.7, 0.6, 0.55, 0.5], [0.5, 0.6, 0.7, 0.8, 0.9], 2, low(0.5), low(0.3), low(0.35)
    ),
    "ridge": _reader(
      [0.5, 0.6, 0.62, 0.63, 0.64], [0.5, 0.6, 0.6, 0.6, 0.5], 16, low(0.3), low(0.47), low(0.3)
    ),
  }
  b = {  # accuracy falls, but recall rises by < 0.1; GD's gain over the prior is < 0.05
    "recall": [0.5, 0.52, 0.55, 0.56, 0.58],
    "prior": {"acc": 0.58},
    "k_star": 16,
    "k_star_average": 2,
    "gd": _reader([0.4, 0.6, 0.5, 0.5, 0.45], [0.5] * 5, 2, low(0.9), low(0.9), low(0.9)),
    "ridge": _reader([0.7, 0.6, 0.5, 0.4, 0.3], [0.5] * 5, 1, low(0.6), low(0.58), low(0.64)),
  }
  c = {
    "recall": [0.1, 0.3, 0.5, 0.7, 0.9],
    "prior": {"acc": 0.3},
    "k_star": 4,
    "k_star_average": 4,
    "gd": _reader([0.3, 0.5, 0.8, 0.7, 0.77], [0.5] * 5, 4, low(0.4), low(0.55), low(0.3)),
    "ridge": _reader([0.3, 0.4, 0.5, 0.6, 0.5], [0.5] * 5, 8, low(0.45), low(0.3), low(0.36)),
  }
  return [a, b, c]


def _cfg():
  return types.SimpleNamespace(ks=KS, decline_tol=0.02, recall_rise=0.1)


def test_decline(train):
  cfg = _cfg()
  recall = [0.1, 0.3, 0.5, 0.7, 0.9]
  assert train._decline([0.3, 0.5, 0.8, 0.7, 0.77], recall, KS, cfg)  # 0.77 < 0.8 - 0.02
  assert not train._decline([0.3, 0.5, 0.8, 0.7, 0.785], recall, KS, cfg)  # within decline_tol
  # Peak at k = 8 (recall 0.7): recall at k_max is only 0.05 higher there.
  assert not train._decline([0.3, 0.5, 0.6, 0.9, 0.5], [0.1, 0.3, 0.5, 0.85, 0.9], KS, cfg)


def test_k_peak_and_within_2x(train):
  assert train._k_peak([0.2, 0.6, 0.9, 0.9, 0.1], KS) == 4  # the first of the tied maxima
  assert train._within_2x(4, 8) and train._within_2x(8, 4) and train._within_2x(4, 4)
  assert not train._within_2x(2, 8)
  assert not train._within_2x(2, 5)  # 2.5x: |log2| = 1.32 (|ln| = 0.92)


def test_derived_metrics(train):
  d = train.derived_metrics(_cells(), _cfg())
  assert d["decoupling_fraction_gd"] == pytest.approx(2 / 3)
  assert d["decoupling_fraction_ridge"] == pytest.approx(1 / 3)
  assert d["decoupling_fraction_min"] == pytest.approx(1 / 3)
  assert d["decoupling_fraction_gd_oracle"] == 0.0
  assert d["decoupling_fraction_ridge_oracle"] == pytest.approx(1 / 3)
  # |log2 k* - log2 k_peak| <= 1: GD (2, 2), (16, 2), (4, 4) -> 2/3; ridge (2, 16), (16, 1),
  # (4, 8) -> 1/3.
  assert d["kstar_within_2x_gd"] == pytest.approx(2 / 3)
  assert d["kstar_within_2x_ridge"] == pytest.approx(1 / 3)
  assert d["kstar_average_within_2x_ridge"] == pytest.approx(2 / 3)  # (1, 16), (2, 1), (4, 8)
  # Constant k = 2 ** round(median log2 k_peak): ridge peaks 16, 1, 8 -> median 3 -> k = 8
  # (the mean, 7/3, would round to k = 4), within 2x of 16 and 8.
  assert d["constant_k_ridge"] == 8
  assert d["constant_k_within_2x_ridge"] == pytest.approx(2 / 3)
  assert d["constant_k_gd"] == 2
  assert d["constant_k_within_2x_gd"] == pytest.approx(1.0)
  # (best control - prior) / (best retrieved - prior), over cells with a gain >= 0.05:
  # GD: A (0.5-0.3)/0.4, C (0.4-0.3)/0.5; B's gain is 0.02 (skipped).
  assert d["gain_kept_gd_shuffled_labels"] == pytest.approx((0.5 + 0.2) / 2)
  assert d["gain_kept_gd_other_query"] == pytest.approx((0.0 + 0.5) / 2)
  assert d["gain_kept_gd_random"] == pytest.approx((0.125 + 0.0) / 2)
  # ridge: gains A 0.34, B 0.12, C 0.3.
  assert d["gain_kept_ridge_shuffled_labels"] == pytest.approx((0.0 + 0.02 / 0.12 + 0.5) / 3)
  assert d["gain_kept_ridge_other_query"] == pytest.approx((0.5 + 0.0 + 0.0) / 3)
  assert d["gain_kept_ridge_random"] == pytest.approx((0.0 + 0.5 + 0.2) / 3)
  assert d["shuffled_gain_kept_max"] == pytest.approx(0.35)
  assert d["random_gain_kept_max"] == pytest.approx(0.7 / 3)
  assert d["controller_minus_best_fixed_gd"] == pytest.approx(-0.1)
