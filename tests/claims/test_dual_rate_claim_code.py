"""Claim code of experiments/dual_rate: matched-quality FLOP ratio and gains in
seed std."""

import importlib

import numpy as np
import pytest

from jaxpapers import dual_rate as dr

MODULES = {
  "evaluate": "experiments.dual_rate.evaluate",
  "fdproxy": "jaxpapers.dual_rate._fdproxy",
  "quality": "jaxpapers.dual_rate._quality",
}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="quality")
def _quality():
  return importlib.import_module(MODULES["quality"])


@pytest.fixture(name="fdproxy")
def _fdproxy():
  return importlib.import_module(MODULES["fdproxy"])


def _row(method, steps, K, fd, std, mflops=100.0, wall=None):
  return dict(
    method=method,
    steps=steps,
    interval_K=K,
    refresh_kind="uniform",
    sampler="ddim",
    fd_mean=fd,
    fd_std=std,
    mflops_per_sample=mflops,
    wall_s=wall,
    kid_mean=0.0,
    class_acc=0.5,
  )


def _rows():
  return [
    # Baseline: best FD 3.5 +- 0.5, so matched quality is FD <= 4.0; the
    # cheapest baseline row reaching it costs 200 MFLOPs (the worst row, 5.0,
    # would set 5.5 and 100 MFLOPs).
    _row("baseline", 10, None, 5.0, 0.5, 100.0, 10.0),
    _row("baseline", 20, None, 4.0, 1.0, 200.0, 20.0),
    _row("baseline", 40, None, 3.5, 0.5, 400.0, 40.0),
    # Dual-rate: K = 1 is not eligible; the cheapest K > 1 row at FD <= 4.0
    # costs 80 MFLOPs.
    _row("dual-rate", 20, 1, 3.0, 0.4, 150.0, 12.0),
    _row("dual-rate", 20, 2, 3.9, 0.3, 80.0, 9.0),
    _row("dual-rate", 20, 4, 4.5, 0.3, 50.0, 6.0),
    _row("dual-rate", 40, 2, 3.2, 0.4, 160.0, 15.0),
    _row("mmd-dual-rate", 20, 2, 3.4, 0.3),
    _row("mmd-dual-rate", 40, 2, 3.1, 0.4),
    _row("no-features", 20, None, 4.6, 0.3, 50.0),
    _row("no-features", 40, None, 4.1, 0.4, 100.0),
    _row("mmd-baseline", 20, None, 4.0, 0.3, 60.0),
    _row("fresh-only", 20, 2, 4.2, 0.3),
    _row("fresh-only", 40, 2, 3.0, 0.3),
    # K = 1: left out of the stale-training pairs
    _row("fresh-only", 20, 1, 9.0, 0.3),
    _row("dual-rate/front_loaded", 20, 2, 3.5, 0.3),
    _row("dual-rate/front_loaded", 20, 4, 4.0, 0.3),
    _row("dual-rate/front_loaded", 40, 2, 3.3, 0.4),
  ]


FLOPS = {"dual": {"denoiser": 1.0, "encoder": 4.0}}
S33, S34, S44 = np.hypot(0.3, 0.3), np.hypot(0.3, 0.4), np.hypot(0.4, 0.4)


def test_headline_matched_quality(quality):
  h = quality.matched_quality(_rows(), FLOPS)
  assert h["target_fd"] == pytest.approx(4.0)
  assert h["baseline_best"]["fd_mean"] == 3.5
  assert h["baseline_cheapest_at_target"]["mflops_per_sample"] == 200.0
  assert h["dual_rate_cheapest_at_target"]["mflops_per_sample"] == 80.0
  assert h["flop_reduction_at_matched_quality"] == pytest.approx(200.0 / 80.0)
  assert h["wall_reduction_at_matched_quality"] == pytest.approx(20.0 / 9.0)
  assert h["cost_ratio_light_over_heavy"] == pytest.approx(0.25)
  # Against K = 1 at the same N (150 MFLOPs, 12 s at N = 20); N = 40 has no K =
  # 1 row.
  assert h["wall_vs_flop_ratio_vs_k1"] == [
    {
      "steps": 20,
      "K": 2,
      "flop_ratio": pytest.approx(150 / 80),
      "wall_ratio": pytest.approx(12 / 9),
    },
    {
      "steps": 20,
      "K": 4,
      "flop_ratio": pytest.approx(3.0),
      "wall_ratio": pytest.approx(2.0),
    },
  ]


def test_headline_not_reached(evaluate):
  rows = [
    r
    for r in _rows()
    if not (r["method"] == "dual-rate" and r["fd_mean"] < 4.1)
  ]
  h = dr.matched_quality(rows, FLOPS)
  assert h["dual_rate_cheapest_at_target"] is None
  assert h["flop_reduction_at_matched_quality"] is None
  d = evaluate.derived_metrics(
    {"headline": h, "rows": rows, "floor": {"fd": 1.0}}
  )
  assert d["matched_quality_flop_reduction"] == 0.0


def test_headline_ignores_dual_rate_k1(quality):
  rows = [
    _row("baseline", 10, None, 3.0, 1.0, 100.0),
    # reaches FD <= 4 cheaper, but K = 1
    _row("dual-rate", 10, 1, 3.5, 0.1, 40.0),
    _row("dual-rate", 10, 2, 3.9, 0.1, 60.0),
  ]
  h = quality.matched_quality(rows, FLOPS)
  assert h["flop_reduction_at_matched_quality"] == pytest.approx(100.0 / 60.0)


def test_headline_with_several_samplers(quality):
  # The target is the best row over every named baseline method (here the Heun
  # row, 3.0 +- 0.2), met by the cheapest K > 1 row of any named dual-rate
  # method.
  rows = _rows() + [
    _row("baseline/heun", 20, None, 3.0, 0.2, 300.0),
    _row("dual-rate/heun", 20, 2, 3.1, 0.2, 120.0),
  ]
  h = quality.matched_quality(
    rows,
    FLOPS,
    base_methods=("baseline", "baseline/heun"),
    dual_methods=("dual-rate", "dual-rate/heun"),
  )
  assert h["target_fd"] == pytest.approx(3.2)
  assert h["baseline_cheapest_at_target"]["method"] == "baseline/heun"
  assert h["dual_rate_cheapest_at_target"]["mflops_per_sample"] == 120.0
  assert h["flop_reduction_at_matched_quality"] == pytest.approx(300.0 / 120.0)


def test_derived_metrics(evaluate):
  rows = _rows()
  m = {
    "rows": rows,
    "headline": dr.matched_quality(rows, FLOPS),
    "floor": {"fd": 1.75},
    "quality_regime_bar": 2.5,
  }
  d = evaluate.derived_metrics(m)
  assert d["matched_quality_flop_reduction"] == pytest.approx(2.5)
  assert d["matched_quality_wall_reduction"] == pytest.approx(20.0 / 9.0)
  # Best MMD student (3.1 +- 0.4) minus the best dual-rate row (3.0 +- 0.4, K =
  # 1 included).
  assert d["mmd_dual_minus_dual_fd_in_std"] == pytest.approx(0.1 / S44)
  # Dual-rate K > 1 rows against the best no-feature row at <= their FLOPs: 80
  # -> (4.6 - 3.9) / S33; 50 -> (4.6 - 4.5) / S33; 160 -> (4.1 - 3.2) / S44.
  # Median:
  assert d["features_gain_in_std"] == pytest.approx(0.9 / S44)
  # Against the MMD baseline (60 MFLOPs): 80 -> 0.1 / S33, 50 -> none, 160 ->
  # 0.8 / S34.
  assert d["vs_mmd_baseline_gain_in_std"] == pytest.approx(
    (0.1 / S33 + 0.8 / S34) / 2
  )
  # Fresh-only minus dual-rate at the same (N, K > 1): 0.3 / S33 and -0.2 / S34;
  # median:
  assert d["stale_training_gain_in_std"] == pytest.approx(
    (0.3 / S33 - 0.2 / S34) / 2
  )
  # Uniform minus front-loaded at the same (N, K): 0.4 / S33, 0.5 / S33, -0.1 /
  # S44; median:
  assert d["front_vs_uniform_gain_in_std"] == pytest.approx(0.4 / S33)
  assert d["back_vs_uniform_gain_in_std"] is None
  assert d["baseline_best_fd_over_floor"] == pytest.approx(3.5 / 1.75)
  assert d["quality_regime_reached"] is True


def test_gain_in_std_sign(quality):
  worse, better = _row("a", 1, 1, 5.0, 0.3), _row("b", 1, 1, 4.0, 0.4)
  assert quality.gain_in_std(worse, better) == pytest.approx(1.0 / 0.5)
  assert quality.gain_in_std(better, worse) == pytest.approx(-1.0 / 0.5)


def test_gains_over_rows(quality):
  # the gains of test_derived_metrics, from the library functions
  rows = _rows()
  assert quality.gain_at_equal_cost(rows, "no-features") == pytest.approx(
    0.9 / S44
  )
  assert quality.gain_at_equal_cost(rows, "mmd-baseline") == pytest.approx(
    (0.1 / S33 + 0.8 / S34) / 2
  )
  assert quality.gain_at_equal_cost(rows, "absent") is None
  gain = quality.paired_gain(rows, "dual-rate/front_loaded", "dual-rate")
  # the median of 0.4 / S33, 0.5 / S33, -0.1 / S44
  assert gain == pytest.approx(0.4 / S33)
  k_gt_1 = lambda r: (r["interval_K"] or 0) > 1
  gain = quality.paired_gain(rows, "dual-rate", "fresh-only", pred=k_gt_1)
  assert gain == pytest.approx((0.3 / S33 - 0.2 / S34) / 2)


def test_aggregate_rows_over_training_seeds(quality):
  seed0 = [
    _row("dual-rate", 20, 2, 3.0, 0.2, wall=10.0),
    _row("baseline", 20, None, 5.0, 0.5),
  ]
  seed1 = [_row("dual-rate", 20, 2, 4.0, 0.4, wall=14.0)]
  seed2 = [_row("dual-rate", 20, 2, 3.5, 0.6, wall=None)]
  out = quality.aggregate_rows([seed0, seed1, seed2])
  r, b = out
  assert r["fd_mean"] == pytest.approx(3.5)
  # population std of (3, 4, 3.5)
  assert r["fd_std"] == pytest.approx(np.sqrt(1 / 6))
  # sample std 0.5
  assert r["fd_ci95"] == pytest.approx(4.303 * 0.5 / np.sqrt(3))
  assert r["fd_train_seeds"] == [3.0, 4.0, 3.5]
  assert r["fd_sampling_std"] == pytest.approx(0.4)
  assert r["wall_s"] == pytest.approx(12.0)  # over the seeds that measured it
  assert r["num_train_seeds"] == 3
  assert (
    b["fd_mean"] == 5.0 and b["fd_std"] == 0.5 and b["num_train_seeds"] == 1
  )
  assert quality.aggregate_rows([seed0]) == seed0


def test_fd_splits(fdproxy):
  # Held-out reference: the first N held-out images; the floor compares the next
  # N.
  assert fdproxy.fd_splits(797, 1000, 500, "heldout") == {
    "reference": ("heldout", 0, 500),
    "compared": ("heldout", 500, 1000),
  }
  # Train reference (the earlier protocol): the whole train split against N
  # held-out images.
  assert fdproxy.fd_splits(797, 1000, 500, "train") == {
    "reference": ("train", 0, 797),
    "compared": ("heldout", 0, 500),
  }
  # Two disjoint splits of N need 2 N held-out images; one more sample is one
  # too many.
  assert fdproxy.fd_splits(10, 8, 4, "heldout")["compared"] == ("heldout", 4, 8)
  # (Not pytest.raises: its failure is not an Exception, which
  # tests/claims/test_mutations.py counts as a caught mutant.)
  try:
    fdproxy.fd_splits(10, 8, 5, "heldout")
  except ValueError as e:
    assert "needs 10 held-out images" in str(e)
  else:
    raise AssertionError(
      "8 held-out images accepted for two disjoint splits of 5"
    )
  with pytest.raises(ValueError, match="fd_reference"):
    fdproxy.fd_splits(10, 8, 4, "test")


def _floor(reference="heldout", n=500, n_ref=500, n_cmp=500, start=500):
  return {
    "fd": 2.0,
    "reference": reference,
    "n_reference": n_ref,
    "n_compared": n_cmp,
    "splits": {
      "reference": [reference, 0, n_ref],
      "compared": ["heldout", start, start + n_cmp],
    },
  }


def test_floor_is_heldout(evaluate):
  rows = _rows()
  head = dr.matched_quality(rows, FLOPS)

  def judged(floor, n=500):
    m = {"rows": rows, "headline": head, "floor": floor, "num_eval_samples": n}
    return evaluate.derived_metrics(m)["floor_is_heldout"]

  assert judged(_floor()) == 1.0
  # The train-split reference of the earlier runs (also: no split record at
  # all).
  assert judged(_floor(reference="train", n_ref=797)) == 0.0
  assert judged({"fd": 2.0}) == 0.0
  # Splits of another size than the samples, or overlapping splits.
  assert judged(_floor(n_cmp=300, start=500)) == 0.0
  assert judged(_floor(), n=1000) == 0.0
  assert judged(_floor(start=0)) == 0.0
  # The regime ratio is the best baseline's FD over this floor: 3.5 / 2.0.
  m = {
    "rows": rows,
    "headline": head,
    "floor": _floor(),
    "num_eval_samples": 500,
  }
  assert evaluate.derived_metrics(m)[
    "baseline_best_fd_over_floor"
  ] == pytest.approx(1.75)


def test_coupling_gains(evaluate):
  rows = _rows() + [
    _row("dual-rate/ddim", 20, 4, 5.5, 0.3),  # vs dual-rate (20, 4): 4.5 +- 0.3
    _row("dual-rate/ddim", 20, 2, 9.9, 0.3),  # K = 2: left out (K >= 4 only)
    _row("dual-rate/rollout", 20, 4, 4.2, 0.3),
  ]
  d = evaluate.derived_metrics(
    {"rows": rows, "headline": dr.matched_quality(rows, FLOPS)}
  )
  # Gain of the coupling over the ancestral pair: (ancestral FD - coupling FD) /
  # S33.
  assert d["ddim_vs_ancestral_gain_in_std"] == pytest.approx(-1.0 / S33)
  assert d["rollout_vs_ancestral_gain_in_std"] == pytest.approx(0.3 / S33)
