"""Claim code of experiments/dense_limits: hand-computed slopes, gaps, ratios
and bounds."""

import importlib
import math

import ml_collections
import numpy as np
import pytest

MODULES = {
  "train": "experiments.dense_limits.train",
  "config": "experiments.dense_limits.configs.default",
  "theory": "jaxpapers.dense_limits._theory",
}

# t_{0.975, 2}: the 95% half-width of a mean of three seeds is T3 * sd / sqrt(3)
T3 = 4.303


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


@pytest.fixture(name="theory")
def _theory():
  return importlib.import_module(MODULES["theory"])


@pytest.fixture(name="config")
def _config():
  return importlib.import_module(MODULES["config"])


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
      cells[(task, cls, w)] = {
        "best_train": [float(10 ** (ai * lw[j])) for ai in a]
      }
  return cells


def test_slopes_are_log10_log10(train):
  cfg = _cfg()
  got = train._slopes(_cells(cfg), cfg, "bumps", "sparse")
  np.testing.assert_allclose(got, SLOPES["sparse"], atol=1e-12)


def test_slope_of_a_zero_loss_uses_the_floor(train):
  # Seed losses (1, 1, 0) at log10 widths (0, 1, 3): the 0 counts as 1e-12
  # (log10 = -12), and the least-squares slope of (0, 0, -12) on (0, 1, 3) is
  # S_xy / S_xx = -20 / (14/3) = -30/7.
  cfg = _cfg(seeds=1)
  cells = {
    ("t", "dense", w): {"best_train": [v]}
    for w, v in zip(cfg.widths, (1.0, 1.0, 0.0))
  }
  assert train._slopes(cells, cfg, "t", "dense")[0] == pytest.approx(-30 / 7)


def test_task_derived(train):
  cfg = _cfg(
    classes=("dense", "dense_sum", "sparse", "plain"), bounds=(1.0, 4.0)
  )
  slopes = {
    "dense@1": SLOPES["dense"],
    "dense@4": (-0.3, -0.2, -0.1),
    "dense_sum@1": (-0.5, -0.5, -0.5),
    "dense_sum@4": (-0.9, -0.6, -0.3),
    "sparse": SLOPES["sparse"],
    "plain": SLOPES["plain"],
  }
  d = train.task_derived(_cells(cfg, slopes), cfg, "bumps", 10.0)
  assert d["trivial_train_loss"] == 10.0 and d[
    "slope_constant"
  ] == pytest.approx(0, abs=1e-12)
  b1, b4 = d["B1"], d["B4"]
  assert b1["slope_dense"] == pytest.approx(0.1)
  # sample std of (-0.1, 0.0, 0.4)
  sd = np.sqrt(((-0.2) ** 2 + 0.1**2 + 0.3**2) / 2)
  assert b1["slope_dense_std"] == pytest.approx(sd)
  assert b1["slope_dense_ci95"] == pytest.approx(T3 * sd / np.sqrt(3))
  assert b4["slope_dense"] == pytest.approx(-0.2) and b4[
    "slope_sum"
  ] == pytest.approx(-0.6)
  assert b1["slope_sum"] == pytest.approx(-0.5) and b1["slope_sum_std"] == 0.0
  assert d["slope_sparse"] == pytest.approx(-1.7 / 3)
  assert d["slope_plain"] == pytest.approx(-0.6)
  # Per seed: dense minus the steeper of sparse and plain: (-0.1+1, 0+0.9,
  # 0.4+0.2).
  assert b1["slope_gap"] == pytest.approx((0.9 + 0.9 + 0.6) / 3)
  assert b1["slope_gap_ci95"] == pytest.approx(T3 * np.sqrt(0.03) / np.sqrt(3))
  # B = 4: (-0.3+1, -0.2+0.9, -0.1+0.2); the width-unbounded control is not one
  # of "the others".
  assert b4["slope_gap"] == pytest.approx((0.7 + 0.7 + 0.1) / 3)
  # Seed-mean train loss at the widest net (log10 width 3): mean of 10 ** (3 a).
  widest = np.mean(10 ** (3 * np.array([-0.1, 0, 0.4])))
  assert b1["widest_train"]["dense"] == pytest.approx(widest)
  assert d["widest_train"]["dense@1"] == pytest.approx(widest)
  assert b4["widest_train"]["sum"] == pytest.approx(
    np.mean(10 ** (3 * np.array([-0.9, -0.6, -0.3])))
  )
  # log10 (not ln) of the constant predictor's loss over the dense net's:
  # decades below it.
  assert b1["dense_gain_decades"] == pytest.approx(np.log10(10.0 / widest))
  assert b4["dense_gain_decades"] == pytest.approx(
    np.log10(10.0 / np.mean(10 ** (3 * np.array([-0.3, -0.2, -0.1]))))
  )


def test_lipschitz_summary(theory):
  # sd 0.05 -> Lip 20; d_in 2, two hidden layers: the dense class is <= sqrt(2)
  # B^3 Lipschitz.
  r = theory.lipschitz_summary(0.05, 2, 2, (1.0, 2.0, 4.0))
  assert r["target"] == pytest.approx(20.0)
  assert r["dense_bound"] == {
    "1": pytest.approx(math.sqrt(2)),
    "2": pytest.approx(8 * math.sqrt(2)),
    "4": pytest.approx(64 * math.sqrt(2)),
  }
  # sqrt(2) B^3 = 20
  assert r["b_star"] == pytest.approx((20 / math.sqrt(2)) ** (1 / 3))
  assert r["binds"] == {"1": True, "2": True, "4": False}
  # One hidden layer, d_in 4: 2 B^2.
  assert theory.lipschitz_summary(0.1, 4, 1, (2.0,))["dense_bound"][
    "2"
  ] == pytest.approx(8.0)


def test_class_names_bounds_and_learning_rates(train):
  cfg = _cfg(
    classes=("dense", "dense_sum", "sparse", "plain"),
    bounds=(1.0, 4.0),
    bound=1.0,
    lrs=(0.001, 0.01),
  )
  names = train.class_names(cfg)
  assert names == [
    "dense@1",
    "dense@4",
    "dense_sum@1",
    "dense_sum@4",
    "sparse",
    "plain",
  ]
  assert train.split_name("dense@4") == ("dense", 4.0) and train.split_name(
    "plain"
  ) == (
    "plain",
    None,
  )
  assert [train.class_bound(n, cfg) for n in names] == [
    1.0,
    4.0,
    1.0,
    4.0,
    1.0,
    None,
  ]
  # The dense class's weights live on [-B, B]: its learning rates scale with B;
  # no other's do.
  assert train.lr_grid("dense@4", cfg) == pytest.approx([0.004, 0.04])
  assert train.lr_grid("dense_sum@4", cfg) == pytest.approx([0.001, 0.01])
  assert train.lr_grid("plain", cfg) == pytest.approx([0.001, 0.01])


def _derived(b_slopes, learns=1.0, plain=-0.6, plain_ci=0.05):
  d = {
    "slope_constant": 0.0,
    "slope_plain": plain,
    "slope_plain_ci95": plain_ci,
  }
  for b, (dense, total) in b_slopes.items():
    d[f"B{b}"] = {
      "slope_dense": dense,
      "slope_dense_ci95": 0.02,
      "slope_sum": total,
      "slope_sum_ci95": 0.02,
      "dense_gain_decades": learns,
      "slope_gap": dense - plain,
      "slope_gap_ci95": 0.05,
    }
  return d


def test_plateau_claims_decide_as_registered(config):
  from jaxpapers import core

  def verdicts(bumps):
    claims = [c for c in config.claims((1.0, 4.0)) if "_bumps_" in c["id"]]
    return {
      v["claim_id"]: v
      for v in core.judge_all(claims, {"derived": {"bumps": bumps}})
    }

  # The dense net learns and is flat; the width-unbounded control keeps
  # improving: held.
  v = verdicts(_derived({1: (0.0, -0.5), 4: (0.0, -0.5)}))
  assert v["dense_plateau_bumps_B4"]["verdict"] == "held"
  assert v["others_keep_improving_bumps_B4"]["verdict"] == "held"
  # The control plateaus too: the flat curve is not density's (vacuous).
  v = verdicts(_derived({1: (0.0, 0.0), 4: (0.0, -0.5)}))
  assert v["dense_plateau_bumps_B1"]["guard"] == "controls"
  assert v["dense_plateau_bumps_B4"]["verdict"] == "held"
  # The dense net does not learn (a constant-like flat curve): inconclusive by
  # precondition, for both claims at that bound; the constant predictor is never
  # a control that always clears.
  v = verdicts(_derived({1: (0.0, -0.5), 4: (0.0, -0.5)}, learns=0.1))
  for cid in ("dense_plateau_bumps_B1", "others_keep_improving_bumps_B4"):
    assert v[cid]["verdict"] == "inconclusive" and v[cid]["guard"] == "requires"
  # A dense net that keeps improving: not reproduced.
  v = verdicts(_derived({1: (-0.5, -0.5), 4: (-0.5, -0.5)}))
  assert v["dense_plateau_bumps_B4"]["verdict"] == "not reproduced"


def test_lr_grid_summary_reports_the_learning_rates_used(train):
  cfg = _cfg(seeds=1, lrs=(0.1, 0.01))
  value, best = train.lr_grid_summary([0.5, 0.2], [0.0, 0.0], cfg, [0.4, 0.04])
  # the scaled grid's, not cfg.lrs's
  assert best == 1 and value["best_lr"] == 0.04


def test_lr_grid_summary_picks_lowest_seed_mean(train):
  cfg = _cfg(seeds=2)
  # Learning-rate major: (lr0 s0, lr0 s1, lr1 s0, lr1 s1, lr2 s0, lr2 s1). Seed
  # means: lr0 NaN (never chosen), lr1 0.55, lr2 0.425 -> lr2. By min over seeds
  # lr1 (0.2) would win.
  train_final = np.array([np.nan, 0.1, 0.2, 0.9, 0.4, 0.45])
  test_final = np.arange(6.0)
  value, best = train.lr_grid_summary(train_final, test_final, cfg)
  assert best == 2
  assert value["best_lr"] == 0.001
  assert value["best_train"] == [0.4, 0.45]
  assert value["best_test"] == [4.0, 5.0]
  assert value["test"] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_compression_derived(train):
  cfg = _cfg(widths=(32, 64, 128), seeds=2, bound=1.0)
  # Errors [seed][K] of the compressed dense bump nets at widths 64 and 128 (32
  # not compressed).
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
  cells = {("bumps", "dense@1", 32): {}}
  cells.update(
    {("bumps", "dense@1", w): {"compression": v} for w, v in comp.items()}
  )
  # another bound: not compressed
  cells[("bumps", "dense@4", 32)] = {"compression": comp[64]}
  c = train.compression_derived(cells, cfg)
  assert c["widths"] == [64, 128]
  # mean of (0.1, 0.3) at the largest K
  assert c["cut_err_kmax"] == pytest.approx(0.2)
  # sample std of (0.1, 0.3)
  assert c["cut_err_kmax_std"] == pytest.approx(np.sqrt(0.02))
  assert c["svd_err_kmax"] == pytest.approx(0.1)
  assert c["random_err_kmax"] == pytest.approx(0.7)
  assert c["random_over_cut_kmax"] == pytest.approx(0.7 / 0.2)
  assert c["cut_over_svd_kmax"] == pytest.approx(0.2 / 0.1)
  # widest / narrowest at K = 4
  assert c["width_ratio_kmax"] == pytest.approx(0.2 / 0.25)
  assert c["per_width"]["128"]["cut"] == pytest.approx([0.8, 0.55, 0.2])
  assert train.compression_derived({("bumps", "dense@1", 32): {}}, cfg) is None


def test_regularity_summary(theory):
  rows = [{"exact": 2.0, "lb": 1.5, "sdp_lower": 1.9, "sdp_upper": 2.4}]
  r = theory.regularity_summary(
    np.array([0.5, 0.3, 0.4]), [9.0, 8.0, 7.0], 2.0, 16, rows
  )
  assert r["fk_bound"] == pytest.approx(2.0 / 4.0)  # B / sqrt(K)
  assert r["min_found_over_bound"] == pytest.approx(0.3 / 0.5)
  assert r["lb_over_exact_min"] == pytest.approx(0.75)
  assert r["sdp_bracket_holds"] is True
  assert r["sdp_upper_over_lower_max"] == pytest.approx(2.4 / 1.9)


def test_the_constant_predictors_width_slope_is_zero(train):
  # the intercept, log10(loss), is not 0 for the last two
  for loss in (1.0, 2.302, 1e-3):
    assert train.constant_slope((16, 64, 256, 512), loss) == pytest.approx(
      0, abs=1e-12
    )


def test_rejudge_adds_the_constant_slope_per_task_and_keeps_the_rest(train):
  metrics = {
    "derived": {
      "bumps": {"trivial_train_loss": 2.3, "slope_dense": -0.002},
      "x": 1,
    }
  }
  out = train.rejudge_metrics(metrics, {"tasks": ["bumps"], "widths": [16, 64]})
  assert out["bumps"]["slope_dense"] == -0.002 and out["x"] == 1
  assert out["bumps"]["slope_constant"] == pytest.approx(0.0, abs=1e-12)
  # the input is not modified
  assert "slope_constant" not in metrics["derived"]["bumps"]
