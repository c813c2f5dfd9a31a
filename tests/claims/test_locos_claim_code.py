"""Claim code of experiments/locos: collapse points, their advantage and retained recall."""

import importlib

import numpy as np
import pytest

MODULES = {"evaluate": "experiments.locos.evaluate"}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


def test_collapse_k(evaluate):
  curve = {"ks": [1, 2, 4, 8], "baseline": {"mean": 0.8}, "d": {"mean": [0.7, 0.45, 0.3, 0.1]}}
  assert evaluate.collapse_k(curve, "d") == 4  # the first score below half the baseline (0.4)
  curve["d"]["mean"] = [0.8, 0.8, 0.5, 0.45]
  assert evaluate.collapse_k(curve, "d") is None


@pytest.mark.xfail(
  strict=True,
  reason="the toy track's collapse k needs a score strictly below half the baseline, while the "
  "real tracks' collapse index (and the claims' notes: 'halving', '<= half') count a score "
  "exactly at half; toy accuracies are fractions of a few probes, so exact halves happen",
)
def test_collapse_k_at_exactly_half(evaluate):
  curve = {"ks": [1, 2, 4, 8], "baseline": {"mean": 0.8}, "d": {"mean": [0.7, 0.4, 0.3, 0.1]}}
  assert evaluate.collapse_k(curve, "d") == 2


def test_ablated_probes(evaluate):
  # Answered = ROUGE-1 recall of the answer in the unablated generation >= 0.5.
  answers = ["the eiffel tower", "big ben", "colosseum", "louvre"]
  texts = ["it is the eiffel tower", "no idea", "the colosseum", "the louvre museum"]
  np.testing.assert_array_equal(evaluate.ablated_probes(answers, texts), [0, 2, 3])
  np.testing.assert_array_equal(evaluate.ablated_probes(answers, texts, 3), [0, 2])  # items 0..2


def test_collapse_index(evaluate):
  # [K = 3, R = 4] curves against per-resample baselines (half: 0.5, 0.5, 0.4, 0.6).
  curve = np.array([[0.9, 0.5, 0.9, 0.9], [0.4, 0.5, 0.45, 0.9], [0.1, 0.1, 0.4, 0.9]])
  got = evaluate._collapse_index(curve, np.array([1.0, 1.0, 0.8, 1.2]))
  np.testing.assert_array_equal(got, [1, 0, 2, 3])  # 3 = never (one past the grid)


def _boot():
  # Five bootstrap resamples [K = 4, R = 5]: LOCOS collapses at grid indices (2, 1, 2, 3, 1),
  # the contrastive baseline at (3, 3, never = 4, 3, 2).
  boot_base = np.array([1.0, 1.0, 1.0, 0.8, 1.2])
  locos = [
    [0.9] * 5,
    [0.6, 0.5, 0.6, 0.6, 0.55],
    [0.2, 0.2, 0.2, 0.45, 0.2],
    [0.1] * 5,
  ]
  contrastive = [[0.9] * 5, [0.9] * 5, [0.6, 0.6, 0.6, 0.6, 0.5], [0.4, 0.4, 0.6, 0.3, 0.4]]
  boot = {"locos": np.array(locos), "contrastive": np.array(contrastive)}
  # Point estimates over two probes: LOCOS means (0.9, 0.6, 0.2, 0.1) collapse at index 2,
  # contrastive (0.9, 0.9, 0.6, 0.4) at index 3; baseline mean 1.0.
  mat = {
    "locos": np.array([[0.9, 0.9], [0.6, 0.6], [0.1, 0.3], [0.1, 0.1]]),
    "contrastive": np.array([[0.9, 0.9], [0.8, 1.0], [0.6, 0.6], [0.4, 0.4]]),
  }
  return boot, boot_base, mat, np.array([1.0, 1.0])


def test_advantage(evaluate):
  boot, boot_base, mat, base = _boot()
  ks = [1, 5, 20, 50]
  a = evaluate._advantage(boot, boot_base, mat, base, ks, ks, ["contrastive"])
  assert a["collapse_index"] == {"locos": 2, "contrastive": 3}
  assert a["collapse_k"] == {"locos": 20, "contrastive": 50}
  assert a["advantage"] == 1.0  # baseline's collapse index minus LOCOS's
  # Per resample (3-2, 3-1, 4-2, 3-3, 2-1) = (1, 2, 2, 0, 1): the 2.5% / 97.5% quantiles of
  # the sorted (0, 1, 1, 2, 2) are 0.1 and 2.0, so the half-width is max(1 - 0.1, 2 - 1).
  assert a["ci"] == pytest.approx([0.1, 2.0])
  assert a["halfwidth"] == pytest.approx(1.0)
  # A second baseline (never collapsing at the point estimate) that collapses at index 2 in
  # resamples 1 and 4: per resample the stronger baseline collapses at (3, 2, 4, 3, 2), so the
  # advantages are (1, 1, 2, 0, 1), quantiles 0.1 and 1.9.
  boot["wu"] = np.array([[0.9] * 5, [0.9] * 5, [0.9, 0.4, 0.9, 0.9, 0.5], [0.9] * 5])
  mat["wu"] = np.full((4, 2), 0.9)
  a = evaluate._advantage(boot, boot_base, mat, base, ks, ks, ["contrastive", "wu"])
  assert a["advantage"] == 1.0
  assert a["ci"] == pytest.approx([0.1, 1.9])
  assert a["halfwidth"] == pytest.approx(0.9)
  mat["contrastive"][1, 0] = np.nan  # a cell not run: no advantage
  assert (
    evaluate._advantage(boot, boot_base, mat, base, ks, ks, ["contrastive"])["advantage"] is None
  )


def test_curves_on_the_claim_grid(evaluate):
  ks = [1, 5, 20, 50]
  # Every probe scores the same, so every bootstrap resample equals the point estimate.
  means = {
    "locos": [0.9, 0.6, 0.2, 0.1],
    "contrastive": [0.9, 0.9, 0.6, 0.4],
    "random": [1.0, 0.9, 0.9, 0.7],
  }
  res = {("baseline", 0): np.full(3, 1.0)}
  res.update({(d, k): np.full(3, means[d][i]) for d in means for i, k in enumerate(ks)})
  cv = evaluate.ablation_curves(res, ("locos", "contrastive"), ks, [0, 1, 2], 50, 0)
  assert cv["collapse_step_advantage"] == 1.0  # full grid: index 3 - index 2
  assert cv["collapse_step_advantage_halfwidth"] == 0.0
  assert cv["collapse_k"] == {"locos": 20, "contrastive": 50, "random": None}
  assert cv["random"]["mean"] == pytest.approx(means["random"])
  # On the claim's grid (5, 50) both collapse at its second point: no advantage.
  cv = evaluate.ablation_curves(
    res, ("locos", "contrastive"), ks, [0, 1, 2], 50, 0, claim_ks=[5, 50]
  )
  assert cv["claim_grid"] == [5, 50]
  assert cv["collapse_step_advantage"] == 0.0
  assert cv["collapse_index"] == {"locos": 1, "contrastive": 1, "random": 2}


def test_derived_metrics(evaluate):
  toy = {
    "nonliteral": {
      "ks": [1, 2, 4, 8],
      "baseline": {"mean": 0.8},
      "locos": {"mean": [0.7, 0.5, 0.3, 0.1]},  # collapses (< 0.4) at k = 4
      "wu": {"mean": [0.8, 0.7, 0.45, 0.2]},  # at k = 8
      "contrastive": {"mean": [0.8, 0.8, 0.8, 0.5]},  # never: counts as 8 + 1 = 9
      "random": {"mean": [0.8, 0.8, 0.8, 0.1]},
    },
    "parametric": {
      "ks": [1, 2, 4, 8],
      "baseline": {"mean": 0.5},
      "locos": {"mean": [0.5, 0.45, 0.4, 0.2]},
    },
  }
  filtered = {
    "collapse_step_advantage": 1.0,
    "collapse_step_advantage_halfwidth": 0.5,
    "collapse_k": {"locos": 20},
    "baseline": {"mean": 0.9},
    "random": {"mean": [0.9, 0.85, 0.8, 0.6]},
    "collapse_index": {"locos": 1},
    "claim_grid": [5, 20, 50],
  }
  paper = dict(filtered, random={"mean": [0.9, 0.9, 0.9, None]})
  metrics = {
    "toy/curves": toy,
    "smollm2/curves": {"filtered": filtered, "paper": paper},
    "smollm2/parametric": {"ks": [1, 5, 20, 50], "baseline": 0.8, "locos": [0.8, 0.7, 0.6, 0.2]},
  }
  d = evaluate.derived_metrics(metrics)
  assert d["toy"]["collapse_k"] == {"locos": 4, "wu": 8, "contrastive": None, "random": 8}
  assert d["toy"]["collapse_k_advantage"] == 8 - 4  # the strongest attention detector
  assert d["toy"]["parametric_retained_at_collapse"] == pytest.approx(0.4 / 0.5)
  s = d["smollm2"]
  assert s["filtered"]["collapse_step_advantage"] == 1.0
  assert s["filtered"]["collapse_step_advantage_halfwidth"] == 0.5
  assert s["filtered"]["random_drop_at_max_k"] == pytest.approx(0.9 - 0.6)
  assert s["paper"]["random_drop_at_max_k"] is None
  # LOCOS's filtered collapse is at claim-grid index 1 (k = 20): parametric 0.6 / 0.8.
  assert s["parametric_retained"] == pytest.approx(0.75)
