"""Claim code of experiments/dense_limits: hand-computed slopes, gaps, ratios and bounds."""

import importlib

import ml_collections
import numpy as np
import pytest

MODULES = {"train": "experiments.dense_limits.train"}

T3 = 4.303  # t_{0.975, 2}: the 95% half-width of a mean of three seeds is T3 * sd / sqrt(3)


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _cfg(**kw):
  c = dict(
    classes=("dense", "sparse", "plain"),
    widths=(1, 10, 1000),  # log10 width 0, 1, 3 (unevenly spaced)
    seeds=3,
    lrs=(0.1, 0.01, 0.001),
    compress_ks=(1, 2, 4),
  )
  c.update(kw)
  return ml_collections.ConfigDict(c)


# Per class and seed, losses 10 ** (a * log10 width): log-log slope exactly a.
SLOPES = {
  "dense": (-0.1, 0.0, 0.4),  # mean 0.1, median 0.0
  "sparse": (-1.0, -0.5, -0.2),
  "plain": (-0.8, -0.9, -0.1),
}


def _cells(cfg, slopes=SLOPES, task="bumps"):
  lw = np.log10(np.asarray(cfg.widths, float))
  cells = {}
  for cls, a in slopes.items():
    for j, w in enumerate(cfg.widths):
      cells[(task, cls, w)] = {"best_train": [float(10 ** (ai * lw[j])) for ai in a]}
  return cells


def test_slopes_are_log10_log10(train):
  cfg = _cfg()
  got = train._slopes(_cells(cfg), cfg, "bumps", "sparse")
  np.testing.assert_allclose(got, SLOPES["sparse"], atol=1e-12)


def test_slope_of_a_zero_loss_uses_the_floor(train):
  # Seed losses (1, 1, 0) at log10 widths (0, 1, 3): the 0 counts as 1e-12 (log10 = -12), and
  # the least-squares slope of (0, 0, -12) on (0, 1, 3) is S_xy / S_xx = -20 / (14/3) = -30/7.
  cfg = _cfg(seeds=1)
  cells = {("t", "dense", w): {"best_train": [v]} for w, v in zip(cfg.widths, (1.0, 1.0, 0.0))}
  assert train._slopes(cells, cfg, "t", "dense")[0] == pytest.approx(-30 / 7)


def test_task_derived(train):
  cfg = _cfg()
  d = train.task_derived(_cells(cfg), cfg, "bumps", 1.0)
  assert d["trivial_train_loss"] == 1.0
  assert d["slope_dense"] == pytest.approx(0.1)
  sd = np.sqrt(((-0.2) ** 2 + 0.1**2 + 0.3**2) / 2)  # sample std of (-0.1, 0.0, 0.4)
  assert d["slope_dense_std"] == pytest.approx(sd)
  assert d["slope_dense_ci95"] == pytest.approx(T3 * sd / np.sqrt(3))
  assert d["slope_sparse"] == pytest.approx(-1.7 / 3)
  assert d["slope_plain"] == pytest.approx(-0.6)
  # Per seed: dense minus the steeper of sparse and plain: (-0.1+1, 0+0.9, 0.4+0.2).
  assert d["slope_gap"] == pytest.approx((0.9 + 0.9 + 0.6) / 3)
  assert d["slope_gap_ci95"] == pytest.approx(T3 * np.sqrt(0.03) / np.sqrt(3))
  # Seed-mean train loss at the widest net (log10 width 3): mean of 10 ** (3 a).
  assert d["widest_train"]["dense"] == pytest.approx(np.mean(10 ** (3 * np.array([-0.1, 0, 0.4]))))


def test_lr_grid_summary_picks_lowest_seed_mean(train):
  cfg = _cfg(seeds=2)
  # Learning-rate major: (lr0 s0, lr0 s1, lr1 s0, lr1 s1, lr2 s0, lr2 s1). Seed means: lr0 NaN
  # (never chosen), lr1 0.55, lr2 0.425 -> lr2. By min over seeds lr1 (0.2) would win.
  train_final = np.array([np.nan, 0.1, 0.2, 0.9, 0.4, 0.45])
  test_final = np.arange(6.0)
  value, best = train.lr_grid_summary(train_final, test_final, cfg)
  assert best == 2
  assert value["best_lr"] == 0.001
  assert value["best_train"] == [0.4, 0.45]
  assert value["best_test"] == [4.0, 5.0]
  assert value["test"] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_compression_derived(train):
  cfg = _cfg(widths=(32, 64, 128), seeds=2)
  # Errors [seed][K] of the compressed dense bump nets at widths 64 and 128 (32 not compressed).
  comp = {
    64: {
      "cut": [[0.9, 0.5, 0.2], [0.8, 0.4, 0.3]],
      "svd": [[0.0] * 3] * 2,
      "random": [[1.0] * 3] * 2,
    },
    128: {
      "cut": [[0.9, 0.6, 0.1], [0.7, 0.5, 0.3]],
      "svd": [[0.8, 0.3, 0.05], [0.8, 0.3, 0.15]],
      "random": [[1.0, 0.9, 0.8], [1.0, 0.9, 0.6]],
    },
  }
  cells = {("bumps", "dense", 32): {}}
  cells.update({("bumps", "dense", w): {"compression": v} for w, v in comp.items()})
  c = train.compression_derived(cells, cfg)
  assert c["widths"] == [64, 128]
  assert c["cut_err_kmax"] == pytest.approx(0.2)  # mean of (0.1, 0.3) at the largest K
  assert c["cut_err_kmax_std"] == pytest.approx(np.sqrt(0.02))  # sample std of (0.1, 0.3)
  assert c["svd_err_kmax"] == pytest.approx(0.1)
  assert c["random_err_kmax"] == pytest.approx(0.7)
  assert c["random_over_cut_kmax"] == pytest.approx(0.7 / 0.2)
  assert c["cut_over_svd_kmax"] == pytest.approx(0.2 / 0.1)
  assert c["width_ratio_kmax"] == pytest.approx(0.2 / 0.25)  # widest / narrowest at K = 4
  assert c["per_width"]["128"]["cut"] == pytest.approx([0.8, 0.55, 0.2])
  assert train.compression_derived({("bumps", "dense", 32): {}}, cfg) is None


def test_regularity_summary(train):
  rows = [{"exact": 2.0, "lb": 1.5, "sdp_lower": 1.9, "sdp_upper": 2.4}]
  r = train.regularity_summary(np.array([0.5, 0.3, 0.4]), [9.0, 8.0, 7.0], 2.0, 16, rows)
  assert r["fk_bound"] == pytest.approx(2.0 / 4.0)  # B / sqrt(K)
  assert r["min_found_over_bound"] == pytest.approx(0.3 / 0.5)
  assert r["lb_over_exact_min"] == pytest.approx(0.75)
  assert r["sdp_bracket_holds"] is True
  assert r["sdp_upper_over_lower_max"] == pytest.approx(2.4 / 1.9)


def test_the_constant_predictors_width_slope_is_zero(train):
  for loss in (1.0, 2.302, 1e-3):  # the intercept, log10(loss), is not 0 for the last two
    assert train.constant_slope((16, 64, 256, 512), loss) == pytest.approx(0, abs=1e-12)


def test_rejudge_adds_the_constant_slope_per_task_and_keeps_the_rest(train):
  metrics = {"derived": {"bumps": {"trivial_train_loss": 2.3, "slope_dense": -0.002}, "x": 1}}
  out = train.rejudge_metrics(metrics, {"tasks": ["bumps"], "widths": [16, 64]})
  assert out["bumps"]["slope_dense"] == -0.002 and out["x"] == 1
  assert out["bumps"]["slope_constant"] == pytest.approx(0.0, abs=1e-12)
  assert "slope_constant" not in metrics["derived"]["bumps"]  # the input is not modified
