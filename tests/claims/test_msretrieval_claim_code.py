"""Claim code of experiments/msretrieval: metric-family misalignment, toy regret, baselines."""

import importlib
import math
import types

import pytest

MODULES = {"train": "experiments.msretrieval.train"}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _ms(mean, std):
  return {"mean": mean, "std": std}


def _objectives():
  return {
    # mass pool: best Tanimoto = a, best HR@1 = b (they disagree).
    "a": {"mass": {"fp/tanimoto": _ms(0.60, 0.02), "hr/cosine@1": _ms(0.30, 0.03)},
          "hard": {"fp/tanimoto": _ms(0.70, 0.02), "hr/cosine@1": _ms(0.50, 0.03)}},
    "b": {"mass": {"fp/tanimoto": _ms(0.55, 0.01), "hr/cosine@1": _ms(0.40, 0.04)},
          "hard": {"fp/tanimoto": _ms(0.65, 0.01), "hr/cosine@1": _ms(0.45, 0.04)}},
    "c": {"mass": {"fp/tanimoto": _ms(0.50, 0.05), "hr/cosine@1": _ms(0.35, 0.02)},
          "hard": {"fp/tanimoto": _ms(0.60, 0.05), "hr/cosine@1": _ms(0.40, 0.02)}},
  }  # fmt: skip


def _metrics():
  base = {
    "random": {p: {"hr/random@1": 0.10} for p in ("mass", "hard")},
    "prior": {"mass": {"hr/cosine@1": 0.15}, "hard": {"hr/cosine@1": 0.05}},
    "nn_lookup": {p: {"hr/cosine@1": 0.20} for p in ("mass", "hard")},
  }
  toy = {
    "mean_regret_jaccard": 0.1,
    "mean_regret_bce_cosine": 0.2,
    "regret_high_minus_low": 0.3,
    "lemma_violations": 0,
  }
  return {"objectives": _objectives(), "seeds": 3, "baselines": base, "toy": toy}


def test_derived_metrics(train):
  d = train.derived_metrics(_metrics())
  assert (d["best_tanimoto_loss_mass"], d["best_hr1_loss_mass"]) == ("a", "b")
  assert d["hr1_gap_mass"] == pytest.approx(0.10)
  assert d["tanimoto_gap_mass"] == pytest.approx(0.05)
  # z = min(0.10 / sqrt((0.04^2 + 0.03^2) / 3), 0.05 / sqrt((0.02^2 + 0.01^2) / 3))
  #   = min(2 sqrt(3), sqrt(15)) = 2 sqrt(3).
  assert d["misalignment_z_mass"] == pytest.approx(2 * math.sqrt(3))
  assert d["misalignment_z_hard"] == 0.0  # the same objective is best by both families
  assert d["kendall_tau_mass"] == pytest.approx(-1 / 3)  # (a, b, c) vs (b, c, a)
  assert d["best_hr1_mass"] == 0.40 and d["best_hr1_std_mass"] == 0.04
  assert d["best_trivial_hr1_mass"] == 0.15  # max(random 0.10, prior 0.15)
  assert d["method_minus_trivial_hr1_mass"] == pytest.approx(0.25)
  assert d["best_trivial_hr1_hard"] == 0.10
  assert d["nn_lookup_hr1_mass"] == 0.20
  assert d["toy_mean_regret_jaccard"] == 0.1
  assert d["toy_regret_high_minus_low"] == 0.3


def test_kendall(train):
  assert train._kendall(["a", "b", "c"], ["a", "b", "c"]) == 1.0
  assert train._kendall(["a", "b", "c"], ["c", "b", "a"]) == -1.0
  assert train._kendall(["a", "b", "c"], ["b", "c", "a"]) == pytest.approx(-1 / 3)


def test_toy_summary(train):
  rows = [
    {"regret_jaccard": [0.0, 0.1], "regret_bce_cosine": [0.0, 0.3], "sigma_max": [0.1, 0.4],
     "lemma_premise": 2, "lemma_violations": 0},
    {"regret_jaccard": [0.2, 0.4], "regret_bce_cosine": [0.1, 0.2], "sigma_max": [0.6, 0.9],
     "lemma_premise": 1, "lemma_violations": 1},
  ]  # fmt: skip
  t = train._toy_summary(rows)
  assert t["problems"] == 4
  assert t["mean_regret_jaccard"] == pytest.approx(0.175)
  assert t["mean_regret_bce_cosine"] == pytest.approx(0.15)
  assert t["frac_positive_jaccard"] == pytest.approx(0.75)
  # sigma_max >= 0.75: (0.4); < 0.5: (0.0, 0.1).
  assert t["regret_high_minus_low"] == pytest.approx(0.4 - 0.05)
  assert [b["count"] for b in t["bins"]] == [1, 1, 1, 1]
  assert (t["lemma_premise"], t["lemma_violations"]) == (3, 1)


def test_summarise(train):
  ev = {
    "runs": [
      {"loss": "a", "mass": {"x": 1.0}, "hard": {"x": 0.0}, "random": {"x": 0.0}},
      {"loss": "a", "mass": {"x": 3.0}, "hard": {"x": 0.0}, "random": {"x": 0.0}},
      {"loss": "b", "mass": {"x": 5.0}, "hard": {"x": 0.0}, "random": {"x": 0.0}},
    ]
  }
  s = train._summarise(types.SimpleNamespace(losses=("a", "b")), ev)
  assert s["a"]["mass"]["x"] == {"mean": 2.0, "std": pytest.approx(math.sqrt(2))}
  assert s["b"]["mass"]["x"] == {"mean": 5.0, "std": 0.0}
