"""Claim code of experiments/goskills: per-seed paired differences over library settings."""

import copy
import importlib
import types

import numpy as np
import pytest

MODULES = {"train": "experiments.goskills.train"}

T2 = 12.706  # t_{0.975, 1}: two seeds


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


# Per (method, metric, budget): values of the four cells, ordered
# (seed 10 decoy 0, seed 10 decoy 0.3, seed 11 decoy 0, seed 11 decoy 0.3).
VALUES = {
  ("goskills", "coverage", 5): (0.8, 0.6, 0.9, 0.9),  # seed means 0.7, 0.9
  ("flat", "coverage", 5): (0.5, 0.5, 0.6, 0.6),  # 0.5, 0.6
  ("goskills", "coverage", 3): (0.6, 0.6, 0.7, 0.7),
  ("flat", "coverage", 3): (0.4, 0.4, 0.6, 0.6),
  ("load_all", "coverage", 3): (1.0, 1.0, 0.875, 0.875),
  ("goskills", "steps", 5): (3.0, 5.0, 4.0, 4.0),  # 4, 4
  ("gos_bundle", "steps", 5): (6.0, 6.0, 5.0, 5.0),  # 6, 5
  ("random", "coverage", 5): (0.3, 0.5, 0.2, 0.2),  # 0.4, 0.2
  ("popular", "coverage", 5): (0.2, 0.2, 0.5, 0.5),  # 0.2, 0.5
  ("goskills", "success", 5): (0.5, 0.9, 0.5, 0.7),  # 0.7, 0.6
  ("no_avoid", "success", 5): (0.5, 0.4, 0.5, 0.5),
  ("flat", "success", 5): (0.3, 0.3, 0.3, 0.3),
  ("no_roles", "success", 5): (0.6, 0.6, 0.6, 0.6),
  ("goskills", "reward", 5): (0.6, 0.6, 0.6, 0.6),
  ("gos_bundle", "reward", 5): (0.4, 0.4, 0.5, 0.5),
  ("no_graph", "reward", 5): (0.55, 0.55, 0.55, 0.55),
}


def _cfg():
  return types.SimpleNamespace(
    seed=10, seeds=2, headline_budget=5, small_budget=3, decoy_rate=(0.0, 0.3), budgets=(3, 5)
  )


def _cells(train):
  default = {m: {str(b): {k: 0.5 for k in train.METRICS} for b in (3, 5)} for m in train.METHODS}
  cells = []
  for j, (seed, decoy) in enumerate(((10, 0.0), (10, 0.3), (11, 0.0), (11, 0.3))):
    res = copy.deepcopy(default)
    for (m, k, b), v in VALUES.items():
      res[m][str(b)][k] = v[j]
    cells.append({"seed": seed, "decoy_rate": decoy, "results": res})
  return cells


def test_per_seed_means(train):
  got = train._per_seed(_cfg(), _cells(train), "goskills", 5, "coverage")
  np.testing.assert_allclose(got, [0.7, 0.9])


def test_derived_metrics(train):
  d = train.derived_metrics(_cfg(), _cells(train))
  ci2 = lambda a, b: T2 * abs(a - b) / 2  # noqa: E731  (95% half-width of two values)
  # goskills - flat coverage per seed (0.2, 0.3).
  assert d["cov_gain_vs_flat_B5"] == pytest.approx(0.25)
  assert d["cov_gain_vs_flat_B5_ci"] == pytest.approx(ci2(0.2, 0.3))
  assert d["cov_gain_vs_flat_B3"] == pytest.approx(0.15)
  # goskills / load_all coverage at B = 3 per seed: 0.6 / 1.0, 0.7 / 0.875.
  assert d["cov_ratio_vs_load_all_B3"] == pytest.approx(0.7)
  assert d["cov_ratio_vs_load_all_B3_ci"] == pytest.approx(ci2(0.6, 0.8))
  # Steps saved = gos_bundle - goskills per seed: (2, 1).
  assert d["steps_saving_vs_gos_B5"] == pytest.approx(1.5)
  assert d["steps_saving_vs_gos_B5_ci"] == pytest.approx(ci2(2.0, 1.0))
  # Trivial = per-seed max(random, popular) = (0.4, 0.5); goskills - trivial = (0.3, 0.4).
  assert d["trivial_cov_B5"] == pytest.approx(0.45)
  assert d["cov_gain_vs_trivial_B5"] == pytest.approx(0.35)
  assert d["cov_gain_vs_trivial_B5_ci"] == pytest.approx(ci2(0.3, 0.4))
  assert d["success_gain_vs_flat_B5"] == pytest.approx((0.4 + 0.3) / 2)
  assert d["reward_gain_vs_gos_B5"] == pytest.approx((0.2 + 0.1) / 2)
  assert d["reward_gain_vs_gos_B5_ci"] == pytest.approx(ci2(0.2, 0.1))
  assert d["graph_reward_gain_B5"] == pytest.approx(0.05)
  assert d["roles_success_gain_B5"] == pytest.approx((0.1 + 0.0) / 2)
  # Only the cells at the largest decoy rate: goskills (0.9, 0.7) - no_avoid (0.4, 0.5).
  assert d["avoid_success_gain_B5_decoy_max"] == pytest.approx((0.5 + 0.2) / 2)
  assert d["flat_coverage_B5"] == pytest.approx(0.55)
  assert d["gos_bundle_steps_B5"] == pytest.approx(5.5)
