"""Claim code of experiments/evidence_coverage: decoupling, control gains and
budget boundary."""

import importlib
import types

import pytest

MODULES = {
  "evaluate": "experiments.evidence_coverage.evaluate",
  "budget": "jaxpapers.evidence_coverage._budget",
}

KS = (1, 2, 4, 8, 16)


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="budget")
def _budget():
  return importlib.import_module(MODULES["budget"])


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
  """Three cells. Accuracy declines past its peak while recall rises by >= 0.1
  (decoupling): GD in A and C, ridge in C only; ridge's oracle context in A. The
  control accuracies are given as a single best value (the rest of the curve is
  lower). A and B share the setting P = 64, J = 4 (mean cluster size 16), C has
  P = 64, J = 16 (cluster size 4)."""
  low = lambda best: [best] + [0.0] * 4
  a = {
    "n_pool": 64,
    "n_clusters": 4,
    "s_x": 0.0,
    "s_w": 0.0,
    "recall": [0.1, 0.2, 0.3, 0.5, 0.6],
    "prior": {"acc": 0.3},
    "k_star": 2,
    "k_star_average": 1,
    "gd": _reader(
      [0.5, 0.7, 0.6, 0.55, 0.5],
      [0.5, 0.6, 0.7, 0.8, 0.9],
      2,
      low(0.5),
      low(0.3),
      low(0.35),
    ),
    "ridge": _reader(
      [0.5, 0.6, 0.62, 0.63, 0.64],
      [0.5, 0.6, 0.6, 0.6, 0.5],
      16,
      low(0.3),
      low(0.47),
      low(0.3),
    ),
  }
  # accuracy falls, but recall rises by < 0.1; GD's gain over the prior is <
  # 0.05
  b = {
    "n_pool": 64,
    "n_clusters": 4,
    "s_x": 1.0,
    "s_w": 0.0,
    "recall": [0.5, 0.52, 0.55, 0.56, 0.58],
    "prior": {"acc": 0.58},
    "k_star": 16,
    "k_star_average": 2,
    "gd": _reader(
      [0.4, 0.6, 0.5, 0.5, 0.45], [0.5] * 5, 2, low(0.9), low(0.9), low(0.9)
    ),
    "ridge": _reader(
      [0.7, 0.6, 0.5, 0.4, 0.3], [0.5] * 5, 1, low(0.6), low(0.58), low(0.64)
    ),
  }
  c = {
    "n_pool": 64,
    "n_clusters": 16,
    "s_x": 0.0,
    "s_w": 0.0,
    "recall": [0.1, 0.3, 0.5, 0.7, 0.9],
    "prior": {"acc": 0.3},
    "k_star": 4,
    "k_star_average": 4,
    "gd": _reader(
      [0.3, 0.5, 0.8, 0.7, 0.77], [0.5] * 5, 4, low(0.4), low(0.55), low(0.3)
    ),
    "ridge": _reader(
      [0.3, 0.4, 0.5, 0.6, 0.5], [0.5] * 5, 8, low(0.45), low(0.3), low(0.36)
    ),
  }
  return [a, b, c]


def _cfg():
  return types.SimpleNamespace(
    ks=KS, decline_tol=0.02, recall_rise=0.1, min_gain=0.05, n_boot=10000
  )


def test_decline(budget):
  tols = dict(decline_tol=0.02, recall_rise=0.1)
  recall = [0.1, 0.3, 0.5, 0.7, 0.9]
  # 0.77 < 0.8 - 0.02
  assert budget.decoupled([0.3, 0.5, 0.8, 0.7, 0.77], recall, **tols)
  # within decline_tol
  assert not budget.decoupled([0.3, 0.5, 0.8, 0.7, 0.785], recall, **tols)
  # Peak at k = 8 (recall 0.7): recall at k_max is only 0.05 higher there.
  assert not budget.decoupled(
    [0.3, 0.5, 0.6, 0.9, 0.5], [0.1, 0.3, 0.5, 0.85, 0.9], **tols
  )


def test_k_peak(budget):
  # the first of the tied maxima
  assert budget.k_peak([0.2, 0.6, 0.9, 0.9, 0.1], KS) == 4
  assert budget.k_peak([0.9, 0.6, 0.5, 0.4, 0.1], KS) == 1


def test_within_2x(evaluate):
  assert (
    evaluate._within_2x(4, 8)
    and evaluate._within_2x(8, 4)
    and evaluate._within_2x(4, 4)
  )
  assert not evaluate._within_2x(2, 8)
  assert not evaluate._within_2x(2, 5)  # 2.5x: |log2| = 1.32 (|ln| = 0.92)


def test_derived_metrics(evaluate):
  d = evaluate.derived_metrics(_cells(), _cfg())
  # Cells where retrieval helps (best retrieved - prior >= 0.05): GD in A (0.4)
  # and C (0.5), not B (0.02); ridge in A (0.34), B (0.12) and C (0.3).
  assert d["n_gain_cells_gd"] == 2 and d["n_gain_cells_ridge"] == 3
  # a reader absent from the cells is skipped
  assert "n_gain_cells_gd_ls" not in d
  # A and C (B is not a gain cell)
  assert d["decoupling_fraction_gd"] == pytest.approx(1.0)
  assert d["decoupling_fraction_ridge"] == pytest.approx(1 / 3)  # C of A, B, C
  assert d["decoupling_fraction_gd_oracle"] == 0.0
  # A's oracle declines
  assert d["decoupling_fraction_ridge_oracle"] == pytest.approx(1 / 3)
  assert d["decoupling_fraction_gd_ci"] == 0.0  # every resample of (1, 1) is 1
  # (0, 0, 1): 1/27 of the resamples are all ones (far more than 2.5%), so the
  # upper bound is 1 and the lower 0; the reported half-width is the larger
  # side, 1 - 1/3.
  assert d["decoupling_fraction_ridge_ci"] == pytest.approx(2 / 3)
  # |log2 k* - log2 k_peak| <= 1 over the gain cells: GD (2, 2), (4, 4) -> 1; ridge (2, 16),
  # (16, 1), (4, 8) -> 1/3.
  assert d["kstar_within_2x_gd"] == pytest.approx(1.0)
  assert d["kstar_within_2x_ridge"] == pytest.approx(1 / 3)
  # (1, 16), (2, 1), (4, 8)
  assert d["kstar_average_within_2x_ridge"] == pytest.approx(2 / 3)
  # Constant k = 2 ** round(median log2 k_peak): ridge peaks 16, 1, 8 -> median
  # 3 -> k = 8 (the mean, 7/3, would round to k = 4), within 2x of 16 and 8.
  assert d["constant_k_ridge"] == 8
  assert d["constant_k_within_2x_ridge"] == pytest.approx(2 / 3)
  # GD peaks 2, 4: median log2 1.5 rounds (half to even) to 2
  assert d["constant_k_gd"] == 4
  assert d["constant_k_within_2x_gd"] == pytest.approx(1.0)
  # k(P/J): 16 for A and B, 4 for C. Ridge: 16 vs 16, 16 vs 1, 4 vs 8 -> 2/3;
  # GD: 16 vs 2, 4 vs 4 -> 1/2.
  assert d["cluster_k_within_2x_ridge"] == pytest.approx(2 / 3)
  assert d["cluster_k_within_2x_gd"] == pytest.approx(1 / 2)
  # Per-setting median peak. Ridge: (64, 4) peaks 16, 1 -> k = 4, misses both;
  # (64, 16) -> 8, hits C. GD: (64, 4) has A alone (k = 2), (64, 16) has C (k =
  # 4): both hit.
  assert d["setting_k_ridge"] == {"P64_J16": 8, "P64_J4": 4}
  assert d["setting_k_within_2x_ridge"] == pytest.approx(1 / 3)
  assert d["setting_k_within_2x_gd"] == pytest.approx(1.0)
  # (best control - prior) / (best retrieved - prior), over cells with a gain >=
  # 0.05: GD: A (0.5-0.3)/0.4, C (0.4-0.3)/0.5; B's gain is 0.02 (skipped).
  assert d["gain_kept_gd_shuffled_labels"] == pytest.approx((0.5 + 0.2) / 2)
  assert d["gain_kept_gd_other_query"] == pytest.approx((0.0 + 0.5) / 2)
  assert d["gain_kept_gd_random"] == pytest.approx((0.125 + 0.0) / 2)
  # ridge: gains A 0.34, B 0.12, C 0.3.
  assert d["gain_kept_ridge_shuffled_labels"] == pytest.approx(
    (0.0 + 0.02 / 0.12 + 0.5) / 3
  )
  assert d["gain_kept_ridge_other_query"] == pytest.approx(
    (0.5 + 0.0 + 0.0) / 3
  )
  assert d["gain_kept_ridge_random"] == pytest.approx((0.0 + 0.5 + 0.2) / 3)
  # max over readers and controls
  assert d["shuffled_gain_kept_max"] == pytest.approx(0.35)
  assert d["random_gain_kept_max"] == pytest.approx(0.7 / 3)
  assert d["controller_minus_best_fixed_gd"] == pytest.approx(-0.1)


def test_cluster_k_is_nearest_in_log2(budget):
  ks = (32, 64, 128, 256, 512, 1024)
  assert budget.cluster_k(10000, 64, ks) == 128  # 156: log2 7.29
  assert budget.cluster_k(2500, 64, ks) == 32  # 39: log2 5.29
  assert budget.cluster_k(10000, 16, ks) == 512  # 625: log2 9.29
  # 185: log2 7.53 -> 256, although 128 is nearer on the linear scale (57 vs
  # 71).
  assert budget.cluster_k(185, 1, ks) == 256
  # beyond the grid: its largest budget
  assert budget.cluster_k(10**6, 1, ks) == 1024


def test_fraction_ci(evaluate):
  assert evaluate._fraction_ci([1.0], 1000) is None  # no spread from one cell
  assert evaluate._fraction_ci([1.0, 1.0, 1.0], 1000) == 0.0
  # Half of 400 cells: the bootstrap half-width is near the normal one, 1.96
  # sqrt(.25 / 400).
  h = evaluate._fraction_ci([1.0, 0.0] * 200, 4000)
  assert h == pytest.approx(1.96 * 0.5 / 20, abs=0.006)
  # Skewed: 1 of 20. The upper side is the wider one (the larger distance is
  # reported).
  h = evaluate._fraction_ci([1.0] + [0.0] * 19, 4000)
  assert h >= 0.05 + 1e-9 and h == pytest.approx(0.1, abs=0.03)


def test_shift_response(evaluate):
  cfg = types.SimpleNamespace(ks=(1, 2, 4, 8, 16))

  def cell(sx, sw, seed, k_star, peak):
    return {
      "n_pool": 64,
      "n_clusters": 4,
      "s_x": sx,
      "s_w": sw,
      "seed": seed,
      "k_star": k_star,
      **{r: {"k_peak": peak} for r in evaluate.READERS},
    }

  cells = [
    cell(0.0, 0.0, 0, 16, 8),
    cell(0.0, 0.0, 1, 16, 8),
    cell(0.0, 0.0, 2, 4, 2),  # seed medians: log2 k* = 4, log2 k_peak = 3
    cell(1.0, 0.0, 0, 4, 4),
    # medians of two seeds: log2 k* = 1.5, log2 k_peak = 2
    cell(1.0, 0.0, 1, 2, 4),
    cell(2.0, 0.0, 0, 1, 1),
  ]
  rec = evaluate.shift_response(cells, cfg)["P64_J4"]
  assert rec["cluster_k"] == 16
  assert rec["shifts"] == [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]
  assert rec["log2_k_star"] == pytest.approx([4.0, 1.5, 0.0])
  assert rec["log2_k_peak_ridge"] == pytest.approx([3.0, 2.0, 0.0])
  assert rec["k_star_range_octaves"] == pytest.approx(4.0)
  assert rec["k_peak_range_octaves_ridge"] == pytest.approx(3.0)
  assert rec["spearman_k_star_k_peak_ridge"] == pytest.approx(1.0)
  assert evaluate._spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
  # k* does not move: no correlation
  assert evaluate._spearman([1, 1, 1], [1, 3, 2]) is None
