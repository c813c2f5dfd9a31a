"""Claim code of experiments/goskills: per-seed paired differences over library
settings."""

import copy
import importlib
import types

import numpy as np
import pytest

MODULES = {
  "train": "experiments.goskills.train",
  "controls": "jaxpapers.goskills._controls",
  "benchmark": "jaxpapers.goskills._benchmark",
}

T2 = 12.706  # t_{0.975, 1}: two seeds


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


@pytest.fixture(name="controls")
def _controls():
  return importlib.import_module(MODULES["controls"])


@pytest.fixture(name="benchmark")
def _benchmark():
  return importlib.import_module(MODULES["benchmark"])


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
  # The ladder and the matched controls.
  ("flat_bottleneck", "coverage", 3): (0.5, 0.5, 0.7, 0.7),  # 0.5, 0.7
  ("flat_bottleneck", "success", 5): (0.4, 0.4, 0.6, 0.6),  # 0.4, 0.6
  ("gos_bottleneck", "reward", 5): (0.7, 0.7, 0.5, 0.5),  # 0.7, 0.5
  ("gos_bottleneck", "steps", 5): (5.0, 5.0, 7.0, 7.0),  # 5, 7
  ("start_only", "success", 5): (0.5, 0.5, 0.5, 0.5),
  ("flat_root", "success", 5): (0.4, 0.4, 0.2, 0.2),  # 0.4, 0.2
  ("flat_root", "coverage", 3): (0.45, 0.45, 0.55, 0.55),  # 0.45, 0.55
  ("no_graph_start_only", "coverage", 3): (0.6, 0.6, 0.8, 0.8),  # 0.6, 0.8
  ("start_only", "coverage", 3): (0.6, 0.6, 0.7, 0.7),
}


def _cfg():
  return types.SimpleNamespace(
    seed=10,
    seeds=2,
    headline_budget=5,
    small_budget=3,
    decoy_rate=(0.0, 0.3),
    budgets=(3, 5),
  )


def _cells(train):
  default = {
    m: {str(b): {k: 0.5 for k in train.METRICS} for b in (3, 5)}
    for m in train.METHODS
  }
  cells = []
  for j, (seed, decoy) in enumerate(
    ((10, 0.0), (10, 0.3), (11, 0.0), (11, 0.3))
  ):
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
  ci2 = lambda a, b: T2 * abs(a - b) / 2
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
  # Trivial = per-seed max(random, popular) = (0.4, 0.5); goskills - trivial =
  # (0.3, 0.4).
  assert d["trivial_cov_B5"] == pytest.approx(0.45)
  assert d["cov_gain_vs_trivial_B5"] == pytest.approx(0.35)
  assert d["cov_gain_vs_trivial_B5_ci"] == pytest.approx(ci2(0.3, 0.4))
  assert d["success_gain_vs_flat_B5"] == pytest.approx((0.4 + 0.3) / 2)
  assert d["reward_gain_vs_gos_B5"] == pytest.approx((0.2 + 0.1) / 2)
  assert d["reward_gain_vs_gos_B5_ci"] == pytest.approx(ci2(0.2, 0.1))
  assert d["graph_reward_gain_B5"] == pytest.approx(0.05)
  assert d["roles_success_gain_B5"] == pytest.approx((0.1 + 0.0) / 2)
  # Only the cells at the largest decoy rate: goskills (0.9, 0.7) - no_avoid
  # (0.4, 0.5).
  assert d["avoid_success_gain_B5_decoy_max"] == pytest.approx((0.5 + 0.2) / 2)
  assert d["flat_coverage_B5"] == pytest.approx(0.55)
  # Matched controls: goskills - flat_bottleneck coverage B3 per seed (0.1,
  # 0.0).
  assert d["cov_gain_vs_flat_bottleneck_B3"] == pytest.approx(0.05)
  assert d["cov_gain_vs_flat_bottleneck_B3_ci"] == pytest.approx(ci2(0.1, 0.0))
  # flat_bottleneck / load_all at B = 3 per seed: 0.5 / 1.0, 0.7 / 0.875 = 0.8.
  assert d["flat_bottleneck_cov_ratio_vs_load_all_B3"] == pytest.approx(0.65)
  assert d["flat_bottleneck_cov_ratio_vs_load_all_B3_ci"] == pytest.approx(
    ci2(0.5, 0.8)
  )
  # success goskills (0.7, 0.6) - flat_bottleneck (0.4, 0.6) = (0.3, 0.0).
  assert d["success_gain_vs_flat_bottleneck_B5"] == pytest.approx(0.15)
  # reward goskills (0.6, 0.6) - gos_bottleneck (0.7, 0.5) = (-0.1, 0.1).
  assert d["reward_gain_vs_gos_bottleneck_B5"] == pytest.approx(0.0)
  assert d["reward_gain_vs_gos_bottleneck_B5_ci"] == pytest.approx(
    ci2(-0.1, 0.1)
  )
  # steps saved = gos_bottleneck (5, 7) - goskills (4, 4) = (1, 3).
  assert d["steps_saving_vs_gos_bottleneck_B5"] == pytest.approx(2.0)
  # roles with START kept: goskills (0.7, 0.6) - start_only (0.5, 0.5).
  assert d["roles_success_gain_vs_start_only_B5"] == pytest.approx(0.15)
  # START rule alone: flat_root (0.4, 0.2) - flat (0.3, 0.3).
  assert d["start_rule_success_gain_B5"] == pytest.approx(0.0)
  assert d["start_rule_success_gain_B5_ci"] == pytest.approx(ci2(0.1, -0.1))
  # Ladder at B = 3 (coverage), each step minus the one before it, per seed:
  # flat (0.4, 0.6) -> flat_root (0.45, 0.55) -> flat_bottleneck (0.5, 0.7) ->
  # no_graph_start_only (0.6, 0.8) -> start_only (0.6, 0.7) -> goskills (0.6,
  # 0.7).
  assert d["ladder_start_rule_coverage_gain_B3"] == pytest.approx(0.0)
  assert d["ladder_start_rule_coverage_gain_B3_ci"] == pytest.approx(
    ci2(0.05, -0.05)
  )
  assert d["ladder_bottleneck_coverage_gain_B3"] == pytest.approx(0.1)
  assert d["ladder_groups_coverage_gain_B3"] == pytest.approx(0.1)
  assert d["ladder_group_graph_coverage_gain_B3"] == pytest.approx(-0.05)
  assert d["ladder_roles_coverage_gain_B3"] == pytest.approx(0.0)
  assert d["flat_bottleneck_entry_ok_B5"] == pytest.approx(0.5)
  assert d["gos_bundle_steps_B5"] == pytest.approx(5.5)


def test_root_first(controls):
  """START = the root, then the flat ranking without it, cut to the budget."""
  flat = np.asarray([[4, 7, 2, 1], [3, 5, 6, 0]])
  ids, roles, avoid = controls.root_first(flat, np.asarray([7, 9]), 3)
  np.testing.assert_array_equal(ids, [[7, 4, 2], [9, 3, 5]])
  np.testing.assert_array_equal(roles, [[0, -1, -1], [0, -1, -1]])  # START = 0
  assert avoid.shape == (2, 0)


def test_start_only(controls):
  """Every role but START dropped (START = 0, SUPPORT = 1, CHECK = 2), no AVOID notes."""
  ids, roles, avoid = controls.start_only(
    np.asarray([[5, 6, 7]]), np.asarray([[0, 1, 2]])
  )
  np.testing.assert_array_equal(ids, [[5, 6, 7]])
  np.testing.assert_array_equal(roles, [[0, -1, -1]])
  assert avoid.shape == (1, 0)


def test_pool_size(benchmark):
  cfg = types.SimpleNamespace(plan_size=4, max_support=4, max_check=2)
  assert benchmark.candidate_pool_size(cfg) == 4 * (1 + 4 + 2)


def test_pool_bottleneck_by_hand(controls):
  """Flat pool through the greedy: START first, then coverage, then pool order;
  no gain -> still fills the budget in pool order (every pool member has the
  same priority)."""
  import jax.numpy as jnp

  req = np.zeros((6, 4), bool)
  req[0, 0] = True  # the START skill covers r0
  req[1, 0] = True  # redundant with START
  req[2, 1] = req[2, 2] = True  # covers two new
  req[3, 3] = True  # covers one new
  # score order; 0 (= START) repeated in the pool
  pool = jnp.asarray([[1, 3, 2, 0, 5]])
  vis = jnp.ones((1, 4), bool)
  ids, roles = controls.pool_bottleneck(
    jnp.asarray(req), pool, jnp.asarray([0]), vis, budget=5, mu=0.1
  )
  # START 0; then 2 (two new), 3 (one new), then 1 and 5 (no coverage, pool
  # order; the repeated START is not a second candidate).
  np.testing.assert_array_equal(np.asarray(ids), [[0, 2, 3, 1, 5]])
  np.testing.assert_array_equal(np.asarray(roles), [[0, -1, -1, -1, -1]])
