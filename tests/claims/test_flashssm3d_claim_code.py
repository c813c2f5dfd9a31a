"""Claim code of experiments/flashssm3d: slacks in margins, paired gains and
scaling exponents."""

import importlib
import math

import numpy as np
import pytest

MODULES = {
  "evaluate": "experiments.flashssm3d.evaluate",
  "scaling": "experiments.flashssm3d.scaling",
}

# margins 0.05, 0.05, 0.10 (relative)
A, D, P = "AUC@30", "depth_delta1.25", "points_overall"


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="scaling")
def _scaling():
  return importlib.import_module(MODULES["scaling"])


def _m(auc=None, depth=None, points=None):
  return {k: v for k, v in ((A, auc), (D, depth), (P, points)) if v is not None}


def _evals():
  return {
    # Best trivial vs GT: AUC 0.20, depth 0.30 (the higher), points 1.6 (the
    # lower error). vs teacher: AUC 0.15, depth 0.40, points 1.5.
    "trivial_mean_pose": {"vs_gt": _m(auc=0.10), "vs_teacher": _m(auc=0.12)},
    "trivial_constant_depth": {
      "vs_gt": _m(depth=0.30, points=2.0),
      "vs_teacher": _m(depth=0.35, points=1.8),
    },
    "trivial_mean_output": {
      "vs_gt": _m(0.20, 0.25, 1.6),
      "vs_teacher": _m(0.15, 0.40, 1.5),
    },
    "teacher_T1": {"vs_gt": _m(0.40, 0.50, 1.2)},
    "student_reprojection": {
      "vs_gt": _m(0.36, 0.48, 1.3),
      "vs_teacher": _m(0.50, 0.60, 1.0),
    },
    "student_gt": {"vs_gt": _m(0.30, 0.46, 1.4)},
    "student_attention_gt": {"vs_gt": _m(0.32, 0.47, 1.5)},
    "student_regression": {"vs_gt": _m(0.25, 0.40, 1.45)},
  }


def test_gain(evaluate):
  assert evaluate._gain(0.7, 0.5, "higher") == pytest.approx(0.2)
  # (ref - x) / |ref|
  assert evaluate._gain(1.5, 2.0, "lower") == pytest.approx(0.25)
  assert evaluate._gain(2.5, 2.0, "lower") == pytest.approx(-0.25)
  assert evaluate._gain(1.0, 0.0, "lower") == -10.0  # clipped


def test_slack_over_trivial(evaluate):
  ev = _evals()
  # Teacher vs GT: AUC (0.40-0.20)/0.05-1 = 3, depth (0.50-0.30)/0.05-1 = 3,
  # points (1.6-1.2)/1.6/0.10-1 = 1.5: the minimum.
  assert evaluate._slack_over_trivial(
    ev["teacher_T1"], ev, "vs_gt"
  ) == pytest.approx(1.5)
  assert np.isnan(
    evaluate._slack_over_trivial({"vs_gt": _m(auc=0.5)}, ev, "vs_gt")
  )


def test_derived_metrics(evaluate):
  ev = _evals()
  ext = {
    # retained 0.75 and 0.5
    "student_reprojection": {"16": _m(auc=0.27, depth=0.24)},
    "teacher_T1": {"16": _m(auc=0.36, depth=0.45)},  # 0.9 and 0.9
  }
  d = evaluate.derived_metrics(ev, ext)
  assert d["derived/teacher_T1/over_trivial_vs_gt"] == pytest.approx(1.5)
  s = "derived/student_reprojection/"
  # vs GT: AUC 2.2, depth 2.6, points (1.6-1.3)/1.6/0.1-1 = 0.875.
  assert d[s + "over_trivial_vs_gt"] == pytest.approx(0.875)
  # vs teacher: AUC (0.50-0.15)/0.05-1 = 6, depth 3, points
  # (1.5-1.0)/1.5/0.1-1 = 7/3.
  assert d[s + "over_trivial_vs_teacher"] == pytest.approx(7 / 3)
  # Student over teacher (both vs GT) / m + 1: AUC 0.2, depth 0.6, points
  # -1/12/0.1+1 = 1/6.
  assert d[s + "vs_teacher_gap"] == pytest.approx(1 / 6)
  assert d[s + "distill_score"] == pytest.approx(1 / 6)
  assert "derived/student_gt/distill_score" not in d
  # Reprojection over GT-trained student, mean in margins: (1.2 + 0.4 +
  # (0.1/1.4)/0.1) / 3.
  assert d["derived/distill_vs_gt"] == pytest.approx((1.2 + 0.4 + 1 / 1.4) / 3)
  # GT-trained SSM over attention, min / m + 1: AUC 0.6, depth 0.8, points 5/3.
  assert d["derived/ssm_vs_attention_gt"] == pytest.approx(0.6)
  assert d["derived/geometry_minus_regression_AUC"] == pytest.approx(
    0.36 - 0.25
  )
  assert d[s + "extrap_retained_16"] == pytest.approx(0.5)
  assert d["derived/teacher_T1/extrap_retained_16"] == pytest.approx(0.9)


def test_scan_order_derived(evaluate):
  ev = {k: v for k, v in _evals().items() if k.startswith("trivial_")}
  ev["student_alternating"] = {"vs_gt": _m(0.40, 0.50, 1.2)}
  ev["student_frame_major"] = {"vs_gt": _m(0.35, 0.45, 1.3)}
  ev["student_position_major"] = {"vs_gt": _m(0.30, 0.52, 1.25)}
  d = evaluate.scan_order_derived(ev)
  assert d["derived/student_alternating/over_trivial_vs_gt"] == pytest.approx(
    1.5
  )
  vs_frame = (1.0 + 1.0 + (0.1 / 1.3) / 0.1) / 3
  vs_position = (2.0 - 0.4 + (0.05 / 1.25) / 0.1) / 3
  assert d["derived/alternating_vs_frame_major"] == pytest.approx(vs_frame)
  assert d["derived/alternating_vs_position_major"] == pytest.approx(
    vs_position
  )
  assert d["derived/alternating_vs_best_single"] == pytest.approx(
    min(vs_frame, vs_position)
  )


def test_aggregate_over_seeds(evaluate):
  out = evaluate.aggregate(
    [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 2.0}, {"a": 5.0}]
  )
  assert out["a"] == pytest.approx(3.0)
  assert out["a/std"] == pytest.approx(2.0)  # sample std
  assert out["a/ci95"] == pytest.approx(4.303 * 2.0 / math.sqrt(3))
  # a seed without the value: no silent mean over the others
  assert math.isnan(out["b"])


def test_scaling_metrics(scaling):
  res = {
    "views": [1, 2],
    "student_ssm": {
      "time_exponent": 1.1,
      "time_exponent_ci95": 0.3,
      "time_s": [0.1, 0.2],
    },
    "teacher_attention": {"time_exponent": 1.9, "time_exponent_ci95": 0.4},
  }
  m = scaling.scaling_metrics(res)
  assert m["student_ssm/time_exponent"] == 1.1
  assert "student_ssm/time_s" not in m
  assert m["derived/ssm_minus_attention_exponent"] == pytest.approx(1.1 - 1.9)
  # hypot(0.3, 0.4)
  assert m["derived/ssm_minus_attention_exponent/ci95"] == pytest.approx(0.5)
