"""Claim code of experiments/msretrieval: metric-family misalignment, toy
regret, baselines."""

import importlib
import math
import types

import numpy as np
import pytest

MODULES = {
  "evaluate": "experiments.msretrieval.evaluate",
  "toy": "jaxpapers.msretrieval._toy",
  "benchmark": "jaxpapers.msretrieval._benchmark",
}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="benchmark")
def _benchmark():
  return importlib.import_module(MODULES["benchmark"])


@pytest.fixture(name="toy")
def _toy():
  return importlib.import_module(MODULES["toy"])


def _ms(mean, std):
  return {"mean": mean, "std": std}


def _objectives():
  return {
    # mass pool: best Tanimoto = a, best HR@1 = b (they disagree).
    "a": {
      "mass": {"fp/tanimoto": _ms(0.60, 0.02), "hr/cosine@1": _ms(0.30, 0.03)},
      "hard": {"fp/tanimoto": _ms(0.70, 0.02), "hr/cosine@1": _ms(0.50, 0.03)},
    },
    "b": {
      "mass": {"fp/tanimoto": _ms(0.55, 0.01), "hr/cosine@1": _ms(0.40, 0.04)},
      "hard": {"fp/tanimoto": _ms(0.65, 0.01), "hr/cosine@1": _ms(0.45, 0.04)},
    },
    "c": {
      "mass": {"fp/tanimoto": _ms(0.50, 0.05), "hr/cosine@1": _ms(0.35, 0.02)},
      "hard": {"fp/tanimoto": _ms(0.60, 0.05), "hr/cosine@1": _ms(0.40, 0.02)},
    },
  }


def _metrics():
  base = {
    "random": {p: {"hr/random@1": 0.10} for p in ("mass", "hard")},
    "prior": {"mass": {"hr/cosine@1": 0.15}, "hard": {"hr/cosine@1": 0.05}},
    "nn_lookup": {p: {"hr/cosine@1": 0.20} for p in ("mass", "hard")},
  }
  dedup = {
    "mean_regret_jaccard": 0.1,
    "mean_regret_jaccard_ci95": 0.01,
    "mean_regret_bce_cosine": 0.2,
    "mean_regret_oracle": 0.0,
    "mean_regret_oracle_ci95": 0.0,
    "regret_high_minus_low": 0.3,
    "regret_high_minus_low_ci95": 0.02,
    "low_count": 40,
    "high_count": 50,
    "problems": 90,
    "duplicates_left": 0,
    "lemma_violations": 0,
  }
  raw = {
    "mean_regret_jaccard": 0.4,
    "duplicate_share": 0.5,
    "regret_high_minus_low": 0.6,
  }
  toy = {"dedup": dedup, "raw": raw}
  return {
    "objectives": _objectives(),
    "seeds": 3,
    "baselines": base,
    "toy": toy,
  }


def test_derived_metrics(evaluate):
  d = evaluate.derived_metrics(_metrics())
  assert (d["best_tanimoto_loss_mass"], d["best_hr1_loss_mass"]) == ("a", "b")
  assert d["hr1_gap_mass"] == pytest.approx(0.10)
  assert d["tanimoto_gap_mass"] == pytest.approx(0.05)
  # z = min(0.10 / sqrt((0.04^2 + 0.03^2) / 3), 0.05 / sqrt((0.02^2 + 0.01^2) / 3))
  #   = min(2 sqrt(3), sqrt(15)) = 2 sqrt(3).
  assert d["misalignment_z_mass"] == pytest.approx(2 * math.sqrt(3))
  # the same objective is best by both families
  assert d["misalignment_z_hard"] == 0.0
  # (a, b, c) vs (b, c, a)
  assert d["kendall_tau_mass"] == pytest.approx(-1 / 3)
  assert d["best_hr1_mass"] == 0.40 and d["best_hr1_std_mass"] == 0.04
  assert d["best_trivial_hr1_mass"] == 0.15  # max(random 0.10, prior 0.15)
  assert d["method_minus_trivial_hr1_mass"] == pytest.approx(0.25)
  assert d["best_trivial_hr1_hard"] == 0.10
  assert d["nn_lookup_hr1_mass"] == 0.20
  # The toy claims read the deduplicated problems; the raw ones are reported
  # beside them.
  assert (
    d["toy_mean_regret_jaccard"] == 0.1
    and d["toy_mean_regret_jaccard_ci95"] == 0.01
  )
  assert (
    d["toy_regret_high_minus_low"] == 0.3
    and d["toy_regret_high_minus_low_ci95"] == 0.02
  )
  assert d["toy_mean_regret_oracle"] == 0.0 and d["toy_duplicates_left"] == 0
  assert (d["toy_low_count"], d["toy_high_count"]) == (40, 50)
  assert (
    d["toy_raw_mean_regret_jaccard"] == 0.4
    and d["toy_raw_duplicate_share"] == 0.5
  )
  assert d["toy_raw_regret_high_minus_low"] == 0.6
  # no placebo shuffles, no control value
  assert "misalignment_z_mass_shuffled" not in d


def test_misalignment(evaluate):
  tan = {"a": _ms(0.6, 0.02), "b": _ms(0.55, 0.01), "c": _ms(0.5, 0.05)}
  hr = {"a": _ms(0.3, 0.03), "b": _ms(0.4, 0.04), "c": _ms(0.35, 0.02)}
  m = evaluate.misalignment(tan, hr, 3)
  assert (m["lt"], m["lh"]) == ("a", "b")
  assert (m["gap_h"], m["gap_t"]) == (pytest.approx(0.10), pytest.approx(0.05))
  assert m["z"] == pytest.approx(2 * math.sqrt(3))  # min(2 sqrt 3, sqrt 15)
  # The Tanimoto family decides when its gap is the weaker: std 0.05 -> se
  # sqrt(0.0029 / 3).
  tan["b"] = _ms(0.55, 0.05)
  assert evaluate.misalignment(tan, hr, 3)["z"] == pytest.approx(
    0.05 / math.sqrt(0.0029 / 3)
  )
  hr["a"] = _ms(0.5, 0.0)  # the same objective is best by both
  assert evaluate.misalignment(tan, hr, 3)["z"] == 0.0


def test_shuffled_label_control_is_the_median_over_shuffles(evaluate):
  m = _metrics()
  # Placebo HR@1 per objective and shuffle (3 shuffles); Tanimoto best = a on
  # the mass pool.
  placebo = {
    "a": ([0.10, 0.10, 0.10], [0.01, 0.01, 0.01]),
    # shuffle 1: a ties b -> a stays L_H
    "b": ([0.20, 0.10, 0.12], [0.01, 0.01, 0.01]),
    "c": ([0.05, 0.05, 0.05], [0.01, 0.01, 0.01]),
  }
  for k, (mean, std) in placebo.items():
    m["objectives"][k]["placebo_hr1"] = {
      p: {"mean": mean, "std": std} for p in ("mass", "hard")
    }
  d = evaluate.derived_metrics(m)
  se_h = math.sqrt(2 * 0.01**2 / 3)
  # Tanimoto gap a over b on the mass pool
  zt = 0.05 / math.sqrt((0.02**2 + 0.01**2) / 3)
  want = [min(0.10 / se_h, zt), 0.0, min(0.02 / se_h, zt)]
  assert d["misalignment_z_mass_shuffled_all"] == pytest.approx(want)
  # the median
  assert d["misalignment_z_mass_shuffled"] == pytest.approx(sorted(want)[1])
  # An objective without placebo values: no control value rather than a partial
  # one.
  del m["objectives"]["c"]["placebo_hr1"]
  assert "misalignment_z_mass_shuffled" not in evaluate.derived_metrics(m)


def test_shuffled_labels_permute_within_each_pool(benchmark):
  labels = np.zeros((50, 8), bool)
  labels[:, 3] = True
  s = benchmark.shuffled_labels(labels, 4, [0, 300])
  assert s.shape == (4, 50, 8)
  np.testing.assert_array_equal(s.sum(-1), 1)  # one placebo positive per pool
  # it moves at random
  assert (s[:, :, 3].mean() < 0.5) and len(np.unique(s.argmax(-1))) == 8
  # seeded
  np.testing.assert_array_equal(
    s, benchmark.shuffled_labels(labels, 4, [0, 300])
  )
  # each pool its own
  assert not np.array_equal(s, benchmark.shuffled_labels(labels, 4, [0, 301]))


def test_mean_ci_and_difference_of_independent_means(toy):
  x = [0.0, 0.1, 0.2, 0.5]
  m, h = toy.mean_ci(x)
  sd = np.std(x, ddof=1)
  # t_{.975,3}
  assert m == pytest.approx(0.2) and h == pytest.approx(
    3.182446 * sd / 2, rel=1e-5
  )
  y = [0.0, 0.0, 0.3]
  d, dh = toy.diff_of_means_ci(x, y)
  hy = 4.302653 * np.std(y, ddof=1) / math.sqrt(3)  # t_{.975,2}
  assert d == pytest.approx(0.2 - 0.1)
  assert dh == pytest.approx(math.hypot(3.182446 * sd / 2, hy), rel=1e-5)


def test_pool_ties(benchmark):
  fps = np.array([[1, 0], [1, 0], [0, 1], [1, 1], [0, 1]], np.uint8)
  # query 0: tied with 1; query 3: 2 and 4 tie
  pool = np.array([[0, 1, 2], [3, 2, 4], [2, 3, 0]])
  query = np.array([0, 3, 2])
  t = benchmark.pool_ties(fps, pool, query)
  assert t["query_tied"] == pytest.approx(1 / 3)
  assert t["any_tied"] == pytest.approx(2 / 3)
  assert t["extra_copies"] == pytest.approx(2 / 3)


def test_kendall(evaluate):
  assert evaluate._kendall(["a", "b", "c"], ["a", "b", "c"]) == 1.0
  assert evaluate._kendall(["a", "b", "c"], ["c", "b", "a"]) == -1.0
  assert evaluate._kendall(["a", "b", "c"], ["b", "c", "a"]) == pytest.approx(
    -1 / 3
  )


def _part(rj, rc, ro, sm, tied, prem, viol):
  """One set of toy problems; ``prem`` / ``viol`` count the first of them as
  lemma cases."""
  flags = lambda k: [i < k for i in range(len(rj))]
  return {
    "regret_jaccard": rj,
    "regret_bce_cosine": rc,
    "regret_oracle": ro,
    "sigma_max": sm,
    "tied_top": tied,
    "lemma_premise": flags(prem),
    "lemma_violation": flags(viol),
  }


def test_lemma_check_is_strict_beyond_float32_round_off(toy):
  # J = 0.9 = (1 + 0.8) / 2 exactly: no premise, although float32(0.8) rounds
  # 0.9 down.
  jac = np.array(
    [[0.9, 0.9, 0.5], [0.95, 0.9, -np.inf], [0.95, 0.95, 0.1], [0.5, 0.4, 0.3]]
  )
  smax = np.array([0.8, 0.8, 0.8, 0.9], np.float32)
  premise, unique = toy.lemma_check(jac, smax)
  np.testing.assert_array_equal(premise, [False, True, True, False])
  np.testing.assert_array_equal(unique, [False, True, False, True])


def test_toy_set_summary(toy):
  part = [
    _part([0.0, 0.1], [0.0, 0.3], [0.0, 0.2], [0.1, 0.4], [False, True], 2, 0),
    _part(
      [0.2, 0.4, 0.6],
      [0.1, 0.2, 0.0],
      [0.0] * 3,
      [0.6, 0.9, 0.8],
      [False] * 3,
      1,
      1,
    ),
  ]
  t = toy.toy_set_summary(part)
  assert t["problems"] == 5
  assert t["mean_regret_jaccard"] == pytest.approx(0.26)
  sd = np.std([0.0, 0.1, 0.2, 0.4, 0.6], ddof=1)
  assert t["mean_regret_jaccard_ci95"] == pytest.approx(
    2.776445 * sd / math.sqrt(5), rel=1e-5
  )
  assert t["mean_regret_bce_cosine"] == pytest.approx(0.12)
  assert t["mean_regret_oracle"] == pytest.approx(0.04)
  assert t["frac_positive_jaccard"] == pytest.approx(0.8)
  assert t["tied_top_share"] == pytest.approx(0.2)
  assert t["regret_tied_top"] == pytest.approx(0.1)
  assert t["regret_untied_top"] == pytest.approx(0.3)
  # sigma_max >= 0.75: (0.4, 0.6); < 0.5: (0.0, 0.1); the half-width adds t
  # half-widths.
  assert t["regret_high_minus_low"] == pytest.approx(0.5 - 0.05)
  # t_{.975,1} per group of two
  h = 12.7062 * np.std([0.4, 0.6], ddof=1) / math.sqrt(2)
  h2 = 12.7062 * np.std([0.0, 0.1], ddof=1) / math.sqrt(2)
  assert t["regret_high_minus_low_ci95"] == pytest.approx(
    math.hypot(h, h2), rel=1e-4
  )
  assert (t["low_count"], t["high_count"]) == (2, 2)
  assert [b["count"] for b in t["bins"]] == [1, 1, 1, 2]
  assert (t["lemma_premise"], t["lemma_violations"]) == (3, 1)


def test_toy_summary_reports_raw_and_deduplicated_apart(toy):
  raw = _part(
    [0.5, 0.0], [0.5, 0.1], [0.5, 0.0], [1.0, 0.3], [True, False], 0, 0
  )
  dedup = _part([0.0], [0.1], [0.0], [0.3], [False], 0, 0)
  rows = [
    {
      "raw": {**raw, "has_duplicates": [True, False]},
      "dedup": {
        **dedup,
        "left_out": 1,
        "candidates": [3],
        "duplicates_left": 0,
      },
    }
  ]
  t = toy.toy_regret_summary(rows)
  assert t["raw"]["problems"] == 2 and t["dedup"]["problems"] == 1
  assert t["raw"]["duplicate_share"] == 0.5
  assert t["raw"]["regret_with_duplicates"] == 0.5
  assert t["raw"]["regret_without_duplicates"] == 0.0
  assert t["dedup"]["mean_regret_jaccard"] == 0.0
  assert (t["dedup"]["left_out"], t["dedup"]["duplicates_left"]) == (1, 0)
  assert t["dedup"]["mean_candidates"] == 3.0


def test_summarise(evaluate):
  ev = {
    "runs": [
      {
        "loss": "a",
        "mass": {"x": 1.0},
        "hard": {"x": 0.0},
        "random": {"x": 0.0},
      },
      {
        "loss": "a",
        "mass": {"x": 3.0},
        "hard": {"x": 0.0},
        "random": {"x": 0.0},
      },
      {
        "loss": "b",
        "mass": {"x": 5.0},
        "hard": {"x": 0.0},
        "random": {"x": 0.0},
      },
    ]
  }
  s = evaluate.summarise(types.SimpleNamespace(losses=("a", "b")), ev)
  assert s["a"]["mass"]["x"] == {
    "mean": 2.0,
    "std": pytest.approx(math.sqrt(2)),
  }
  assert s["b"]["mass"]["x"] == {"mean": 5.0, "std": 0.0}
