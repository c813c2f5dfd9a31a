"""Claim code of experiments/margins (train.py and e4.py): win fractions,
dimension constants, interpolated dimensions and their growth with N."""

import importlib
import math
import types

import numpy as np
import pytest

MODULES = {
  "train": "experiments.margins.train",
  "e4": "experiments.margins.e4",
  "dims": "jaxpapers.margins._dimensions",
  "threshold": "jaxpapers.margins._threshold",
}

T3 = 4.303  # t_{0.975, 2}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


@pytest.fixture(name="e4")
def _e4():
  return importlib.import_module(MODULES["e4"])


@pytest.fixture(name="threshold")
def _threshold():
  return importlib.import_module(MODULES["threshold"])


@pytest.fixture(name="dims")
def _dims():
  return importlib.import_module(MODULES["dims"])


def _loss_row(n, sig, inf):
  notions = ("m0", "mg", "mq")
  return {
    "n": n,
    "sigmoid": {f"{m}_mean": v for m, v in zip(notions, sig)},
    "infonce": {f"{m}_mean": v for m, v in zip(notions, inf)},
  }


def test_loss_wins(threshold):
  rows = [
    # m0 sigmoid, mg tie (< 0.005), mq InfoNCE
    _loss_row(16, (0.5, 0.300, 0.1), (0.4, 0.303, 0.2)),
    _loss_row(16, (0.5, 0.4, 0.3), (0.498, 0.3, 0.2)),  # tie, sigmoid, sigmoid
    # sigmoid, InfoNCE, sigmoid
    _loss_row(16, (0.6, 0.1, 0.25), (0.5, 0.3, 0.2)),
    _loss_row(32, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),  # another n: not compared
  ]
  w = threshold.loss_wins(rows, 16)
  assert {k: w["m0"][k] for k in ("sigmoid", "infonce", "tie")} == {
    "sigmoid": 2,
    "infonce": 0,
    "tie": 1,
  }
  assert {k: w["mq"][k] for k in ("sigmoid", "infonce", "tie")} == {
    "sigmoid": 2,
    "infonce": 1,
    "tie": 0,
  }
  assert w["m0"]["mean_diff"] == pytest.approx((0.1 + 0.002 + 0.1) / 3)


def test_win_fractions(train):
  w = {
    "m0": {"sigmoid": 2, "infonce": 0, "tie": 1},
    "mg": {"sigmoid": 1, "infonce": 1, "tie": 1},
    "mq": {"sigmoid": 2, "infonce": 1, "tie": 0},
  }
  d = train.derived_metrics({"loss_wins": w, "threshold": []})
  # ties count in the total
  assert d["sigmoid_win_fraction_m0"] == pytest.approx(2 / 3)
  assert d["sigmoid_win_fraction_mg"] == pytest.approx(1 / 3)
  assert d["sigmoid_win_fraction_mq"] == pytest.approx(2 / 3)


def _margin_row(n, k, d, m0, m_inf=1.0):
  return {"n": n, "k": k, "d": d, "best_m0": m0, "m_inf": m_inf}


def test_knee_constants(threshold):
  rows = [  # listed out of order in d
    _margin_row(16, 2, 16, 0.55),
    _margin_row(16, 2, 2, -0.1),
    _margin_row(16, 2, 8, 0.6),
    _margin_row(16, 2, 4, 0.2),
    _margin_row(8, 2, 8, 0.7),
    _margin_row(8, 2, 4, 0.5),  # exactly half the optimum counts
  ]
  q = threshold.threshold_constants(rows, (16, 8), (2, 4))
  # (8, 4) has no rows
  assert [(x["n"], x["k"]) for x in q] == [(16, 2), (8, 2)]
  assert q[0]["d_positive"] == 4
  assert q[0]["d_half"] == 8
  assert q[0]["C_half"] == pytest.approx(8 / (2 * math.log(8)))
  assert q[1]["C_half"] == pytest.approx(4 / (2 * math.log(4)))


def test_threshold_spread(train):
  q = [{"C_half": 8 / (2 * math.log(8))}, {"C_half": 4 / (2 * math.log(4))}]
  d = train.derived_metrics({"loss_wins": {}, "threshold": q})
  # (8 / (2 ln 8)) / (4 / (2 ln 4)) = 2 ln 4 / ln 8 = 4/3, whatever the log's
  # base.
  assert d["threshold_C_spread"] == pytest.approx(4 / 3)
  q[1]["C_half"] = None  # some (n, k) never reaches half
  assert (
    train.derived_metrics({"loss_wins": {}, "threshold": q})[
      "threshold_C_spread"
    ]
    == math.inf
  )


def test_refined_constants(threshold):
  ref = {"d_half": [8, 10, None], "censored": [False, False, True], "rounds": 3}
  q = threshold.seed_threshold_constants(16, 2, ref)
  scale = 2 * math.log(8)
  assert q["C_per_seed"] == pytest.approx([8 / scale, 10 / scale, None])
  assert q["C_mean"] is None  # a seed never reached half: no mean
  out = threshold.pooled_threshold_constants(_PER_NK, 3)
  assert (out["C_median"], out["C_min"], out["C_max"]) == (1.5, 1.0, 3.0)
  pooled = [4 / 3, 2.0, 6.5 / 3]  # per seed, the mean over the (n, k)
  assert out["C_pooled_per_seed"] == pytest.approx(pooled)
  assert out["C_pooled_mean"] == pytest.approx(np.mean(pooled))
  assert out["C_pooled_ci95"] == pytest.approx(
    T3 * np.std(pooled, ddof=1) / math.sqrt(3)
  )


_PER_NK = [
  {"C_per_seed": [1.0, 2.0, 1.5], "C_mean": 1.5},
  {"C_per_seed": [2.0, 3.0, 4.0], "C_mean": 3.0},
  {"C_per_seed": [1.0, 1.0, 1.0], "C_mean": 1.0},
]


def test_refined_derived_metrics(train):
  pooled = [4 / 3, 2.0, 6.5 / 3]
  out = {"per_nk": _PER_NK, "C_median": 1.5, "C_min": 1.0, "C_max": 3.0}
  out |= {"C_pooled_mean": float(np.mean(pooled)), "C_pooled_ci95": 0.1}
  d = train.derived_metrics(
    {"loss_wins": {}, "threshold": [], "threshold_refined": out}
  )
  assert d["threshold_C_fine_spread"] == pytest.approx(3.0)
  assert d["threshold_C_fine_median"] == 1.5
  assert d["threshold_C_fine_pooled"] == pytest.approx(np.mean(pooled))
  assert d["threshold_C_fine_pooled_ci95"] == 0.1


def test_d_needed(dims):
  ds = [2, 4, 8, 16]
  # Crosses 0.5 between d = 4 (0.3) and 8 (0.6), log-linearly: t = 2/3, d = 4 *
  # 2 ** (2/3).
  assert dims.needed_dimension(ds, [0.1, 0.3, 0.6, 0.9], 0.5) == pytest.approx(
    4 * 2 ** (2 / 3)
  )
  # "From which on": a dip at d = 4 moves the answer past it (not d = 2).
  assert dims.needed_dimension(ds, [0.6, 0.3, 0.6, 0.9], 0.5) == pytest.approx(
    4 * 2 ** (2 / 3)
  )
  assert dims.needed_dimension(ds, [0.6, 0.7, 0.8, 0.9], 0.5) == 2.0
  assert dims.needed_dimension(ds, [0.6, 0.7, 0.8, 0.4], 0.5) is None


def test_slope_is_ln_d_on_log10_n(dims):
  # d doubles per decade of N: slope of ln d on log10 N is ln 2.
  assert dims.growth_slope([10, 100, 1000], [2.0, 4.0, 8.0]) == pytest.approx(
    math.log(2)
  )
  assert dims.growth_slope([10, 100], [2.0, None]) is None


def test_analyse(e4):
  cfg = types.SimpleNamespace(
    ds=(2, 4, 8, 16), seeds=1, fractions=(0.5,), Ns=(10, 100), n=20, delta=0.01
  )
  # Retained fractions [d][N] (the cells hold margins = m_src x retained,
  # m_src = 0.5).
  retained = {
    "projected": [[0.1, 0.1], [0.3, 0.2], [0.6, 0.3], [0.9, 0.6]],
    "resolved": [[0.6, 0.2], [0.7, 0.6], [0.8, 0.7], [0.9, 0.8]],
    "random": [[0.1, 0.1]] * 4,
  }
  cells = {
    d: {
      **{m: [[0.5 * v for v in retained[m][i]]] for m in retained},
      "fista_gap_max": 0.0,
    }
    for i, d in enumerate(cfg.ds)
  }
  an = e4.analyse(cfg, {"m_src": 0.5}, cells)
  dn = an["d_needed"]["0.5"]
  # projected: N = 10 -> 4 * 2^(2/3); N = 100 -> 8 * 2^(2/3). resolved: 2; 2 *
  # 2^(3/4).
  assert dn["projected"][0] == pytest.approx(
    [4 * 2 ** (2 / 3), 8 * 2 ** (2 / 3)]
  )
  assert dn["resolved"][0] == pytest.approx([2.0, 2 * 2**0.75])
  sl = an["slopes"]["0.5"]
  assert sl["projected"][0] == pytest.approx(math.log(2))
  assert sl["resolved"][0] == pytest.approx(0.75 * math.log(2))
  assert sl["gap"][0] == pytest.approx(0.25 * math.log(2))
  assert sl["random"] == [None]
  assert an["retained_mean"]["projected"][2] == pytest.approx([0.6, 0.3])


def test_dimension_growth(dims):
  ds, Ns = (2, 4, 8, 16), (10, 100)
  retained = {  # [S = 1, D, len(Ns)]
    "projected": [[[0.1, 0.1], [0.3, 0.2], [0.6, 0.3], [0.9, 0.6]]],
    "resolved": [[[0.6, 0.2], [0.7, 0.6], [0.8, 0.7], [0.9, 0.8]]],
  }
  an = dims.dimension_growth(
    retained, ds, Ns, (0.5,), m_src=0.5, n=20, delta=0.01
  )
  sl = an["slopes"]["0.5"]
  assert sl["projected"][0] == pytest.approx(math.log(2))
  assert sl["resolved"][0] == pytest.approx(0.75 * math.log(2))
  # projected minus re-solved
  assert sl["gap"][0] == pytest.approx(0.25 * math.log(2))
  assert an["d_needed"]["0.5"]["resolved"][0] == pytest.approx(
    [2.0, 2 * 2**0.75]
  )
  assert an["retained_mean"]["resolved"][1] == pytest.approx([0.7, 0.6])
  docs = an["bound_dims"]["0.5"]["documents_only"]
  assert (
    docs is not None and dims.documents_only_bound(0.5, 20, docs, 0.01) >= 0.25
  )
  assert dims.documents_only_bound(0.5, 20, docs - 1, 0.01) < 0.25


def test_e4_derived_metrics(e4):
  metrics = {
    "f_claim": 0.5,
    "analysis": {
      "slopes": {
        "0.5": {
          "projected": [0.3, 0.5, 0.4],
          "resolved": [0.1, 0.0, 0.2],
          "gap": [0.2, 0.5, 0.2],
        }
      },
      # d_0.5 per seed and N; the ratio is taken at the largest N (last column):
      # 2, 2, 4.5.
      "d_needed": {
        "0.5": {
          "projected": [[1.0, 8.0], [1.0, 6.0], [1.0, 9.0]],
          "resolved": [[1.0, 4.0], [1.0, 3.0], [1.0, 2.0]],
        }
      },
      "retained_mean": {"random": [[0.0, 0.0], [0.2, 0.4]]},  # [d][N]
    },
  }
  d = e4.derived_metrics(metrics)
  # sample std of (0.3, 0.5, 0.4) and of (0.1, 0.0, 0.2) is 0.1
  h = T3 * 0.1 / math.sqrt(3)
  assert d["slope_projected_mean"] == pytest.approx(0.4)
  assert d["slope_projected_ci_low"] == pytest.approx(0.4 - h)
  assert d["slope_resolved_ci_high"] == pytest.approx(0.1 + h)
  assert d["slope_gap_mean"] == pytest.approx(0.3)
  assert d["slope_gap_ci_low"] == pytest.approx(
    0.3 - T3 * math.sqrt(0.03) / math.sqrt(3)
  )
  assert d["dim_ratio_mean"] == pytest.approx(8.5 / 3)
  assert d["dim_ratio_ci_low"] == pytest.approx(
    8.5 / 3 - T3 * np.std([2, 2, 4.5], ddof=1) / math.sqrt(3)
  )
  # largest d, mean over N
  assert d["random_retained_max_d"] == pytest.approx(0.3)
  sl = metrics["analysis"]["slopes"]["0.5"]
  sl["resolved"][1] = sl["gap"][1] = None  # a censored seed: no verdict
  d = e4.derived_metrics(metrics)
  assert d["slope_resolved_ci_high"] is None and d["slope_gap_ci_low"] is None
