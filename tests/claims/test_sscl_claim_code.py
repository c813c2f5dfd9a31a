"""Claim code of experiments/sscl: seed-paired differences of the arms and
trivial baselines."""

import importlib
import math
import types

import numpy as np
import pytest

MODULES = {
  "evaluate": "experiments.sscl.evaluate",
  "benchmark": ("jaxpapers.sscl._benchmark"),
}

T3 = 4.303  # t_{0.975, 2}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="benchmark")
def _benchmark():
  return importlib.import_module(MODULES["benchmark"])


def _ev(miou=0.0, drift=0.0, ctx=0.0, acc=0.5, **extra):
  return {
    "miou": miou,
    "region_acc": acc,
    "region_acc_ctx": ctx,
    "drift": drift,
    **extra,
  }


def _grid():
  raw = (0.30, 0.40, 0.35)
  refine = (0.35, 0.38, 0.45)
  placebo = (0.31, 0.42, 0.33)
  probe = (0.9, 0.6, 0.8)
  arms = {
    "sscl": {"miou": (0.50, 0.45, 0.55)},
    "cisc_only": {
      "miou": (0.40, 0.50, 0.45),
      "drift": (0.10, 0.15, 0.05),
      "ctx": (0.7, 0.5, 0.65),
    },
    "sgsr_only": {"miou": (0.48, 0.42, 0.50)},
    "keep_only": {
      "miou": (0.20, 0.41, 0.30),
      "drift": (0.30, 0.20, 0.25),
      "ctx": (0.6, 0.5, 0.55),
      "acc": (0.38, 0.35, 0.52),
    },
  }
  raw_acc = (0.40, 0.45, 0.50)
  # runs listed out of seed order: only sorting by seed pairs them
  order = (2, 0, 1)
  pre = [
    {
      "seed": s,
      "evals": _ev(
        raw[s],
        acc=raw_acc[s],
        miou_refine=refine[s],
        miou_refine_placebo=placebo[s],
        miou_proxy=0.0,
        miou_sclip=0.0,
        probe_acc_shape=0.3,
        probe_acc_colour=probe[s],
      ),
    }
    for s in order
  ]
  ft = []
  for i, (a, v) in enumerate(arms.items()):
    o = order[i % 3 :] + order[: i % 3]
    ft += [
      {"seed": s, "arm": a, "evals": _ev(**{k: x[s] for k, x in v.items()})}
      for s in o
    ]
  return {"pretrain": pre, "finetune": ft}


def _summary(evaluate):
  return evaluate.summarize(
    types.SimpleNamespace(arms=("sscl", "cisc_only", "sgsr_only", "keep_only")),
    _grid(),
  )


def test_summarize_orders_by_seed(evaluate):
  s = _summary(evaluate)
  assert s["raw"]["miou"] == [0.30, 0.40, 0.35]
  assert s["refine"]["miou"] == [0.35, 0.38, 0.45]
  assert s["sscl"]["miou"] == [0.50, 0.45, 0.55]
  assert s["keep_only"]["drift"] == [0.30, 0.20, 0.25]


def test_probes_and_placebo_are_read_per_seed(evaluate):
  g = _grid()
  p = evaluate.probes(g)
  assert p["colour"] == [0.9, 0.6, 0.8] and p["shape"] == [0.3] * 3
  s = _summary(evaluate)
  assert s["refine_placebo"]["miou"] == [0.31, 0.42, 0.33]
  d = evaluate.derived_metrics(s, {}, p)
  # the worst seed, not the mean
  assert d["probe_acc_colour_min"] == pytest.approx(0.6)
  assert d["probe_acc_colour"] == pytest.approx(0.7666667, rel=1e-6)
  assert d["refine_placebo_minus_raw_miou"] == pytest.approx(
    (0.01 + 0.02 - 0.02) / 3
  )


def test_derived_metrics(evaluate):
  d = evaluate.derived_metrics(_summary(evaluate), {"majority_miou": 0.1})
  ci = lambda x: T3 * np.std(x, ddof=1) / math.sqrt(3)
  assert d["refine_minus_raw_miou"] == pytest.approx((0.05 - 0.02 + 0.10) / 3)
  assert d["refine_minus_raw_miou_ci"] == pytest.approx(ci([0.05, -0.02, 0.10]))
  assert d["sscl_minus_refine_miou"] == pytest.approx((0.15 + 0.07 + 0.10) / 3)
  assert d["sscl_minus_refine_miou_ci"] == pytest.approx(ci([0.15, 0.07, 0.10]))
  assert d["cisc_minus_keep_drift"] == pytest.approx((-0.2 - 0.05 - 0.2) / 3)
  assert d["cisc_minus_keep_drift_ci"] == pytest.approx(ci([-0.2, -0.05, -0.2]))
  assert d["cisc_minus_keep_region_acc_ctx"] == pytest.approx(
    (0.1 + 0.0 + 0.1) / 3
  )
  # Per seed, SSCL minus the better single objective: max(cisc, sgsr) = (0.48,
  # 0.50, 0.50).
  assert d["sscl_minus_best_single_miou"] == pytest.approx(
    (0.02 - 0.05 + 0.05) / 3
  )
  assert d["sscl_minus_best_single_miou_ci"] == pytest.approx(
    ci([0.02, -0.05, 0.05])
  )
  assert d["raw_miou"] == pytest.approx(0.35)
  # keep-only against the pretrained CLIP, paired by seed: region accuracy
  # differences (-0.02, -0.10, +0.02); the precondition reads the worst seed,
  # not the mean
  assert d["keep_only_minus_raw_region_acc"] == pytest.approx(-0.1 / 3)
  assert d["keep_only_minus_raw_region_acc_min"] == pytest.approx(-0.10)
  assert d["keep_only_minus_raw_miou"] == pytest.approx(
    (-0.10 + 0.01 - 0.05) / 3
  )
  assert d["keep_only_region_acc"] == pytest.approx((0.38 + 0.35 + 0.52) / 3)
  assert d["trivial_majority_miou"] == 0.1


def test_trivial_baselines(benchmark):
  # Classes 0..3 on six labelled pixels (-1: ignored). Majority class 0 (3
  # pixels): IoU of class 0 = 3 / 6 and the other present classes 0, so mIoU
  # over the 3 present = 1/6.
  tgt = np.array([[0, 0, 0, 1, 2, 1, -1]])
  data = {
    "test_target": tgt,
    "test_valid": np.array([[True, True, False]]),
    "test_labels": np.array([[2, 2, 3]]),
  }
  out = benchmark.trivial_baselines(data, 0, 4)
  assert out["majority_miou"] == pytest.approx((3 / 6 + 0 + 0) / 3)
  # valid objects: labels 2, 2
  assert out["majority_region_acc"] == pytest.approx(1.0)
  assert out["chance_region_acc"] == 0.25
  assert benchmark.trivial_baselines(data, 0, 6)[
    "chance_region_acc"
  ] == pytest.approx(1 / 6)
