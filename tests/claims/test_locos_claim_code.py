"""Claim code of experiments/locos: collapse points, their advantage and
retained recall."""

import importlib

import numpy as np
import pytest

MODULES = {
  "evaluate": "experiments.locos.evaluate",
  "needle": "experiments.locos.needle",
  "collapse": "jaxpapers.locos._collapse",
}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="needle")
def _needle():
  return importlib.import_module(MODULES["needle"])


@pytest.fixture(name="collapse")
def _collapse():
  return importlib.import_module(MODULES["collapse"])


def test_collapse_k(evaluate):
  curve = {
    "ks": [1, 2, 4, 8],
    "baseline": {"mean": 0.8},
    "d": {"mean": [0.7, 0.45, 0.3, 0.1]},
  }
  # the first score below half the baseline (0.4)
  assert evaluate.collapse_k(curve, "d") == 4
  curve["d"]["mean"] = [0.8, 0.8, 0.5, 0.45]
  assert evaluate.collapse_k(curve, "d") is None


@pytest.mark.xfail(
  strict=True,
  reason=(
    "the toy track's collapse k needs a score strictly below half the "
    "baseline, while the real tracks' collapse index (and the claims' notes: "
    "'halving', '<= half') count a score exactly at half; "
    "toy accuracies are fractions of a few probes, so exact halves happen"
  ),
)
def test_collapse_k_at_exactly_half(evaluate):
  curve = {
    "ks": [1, 2, 4, 8],
    "baseline": {"mean": 0.8},
    "d": {"mean": [0.7, 0.4, 0.3, 0.1]},
  }
  assert evaluate.collapse_k(curve, "d") == 2


def test_ablated_probes(evaluate):
  # Answered = ROUGE-1 recall of the answer in the unablated generation >= 0.5.
  answers = ["the eiffel tower", "big ben", "colosseum", "louvre"]
  texts = [
    "it is the eiffel tower",
    "no idea",
    "the colosseum",
    "the louvre museum",
  ]
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts), [0, 2, 3]
  )
  # items 0..2
  np.testing.assert_array_equal(
    evaluate.ablated_probes(answers, texts, 3), [0, 2]
  )


def test_collapse_index(collapse):
  # [K = 3, R = 4] curves against per-resample baselines (half: 0.5, 0.5, 0.4,
  # 0.6).
  curve = np.array(
    [[0.9, 0.5, 0.9, 0.9], [0.4, 0.5, 0.45, 0.9], [0.1, 0.1, 0.4, 0.9]]
  )
  got = collapse.collapse_index(curve, np.array([1.0, 1.0, 0.8, 1.2]))
  # 3 = never (one past the grid)
  np.testing.assert_array_equal(got, [1, 0, 2, 3])


def _boot():
  # Five bootstrap resamples [K = 4, R = 5]: LOCOS collapses at grid indices (2,
  # 1, 2, 3, 1), the contrastive baseline at (3, 3, never = 4, 3, 2).
  boot_base = np.array([1.0, 1.0, 1.0, 0.8, 1.2])
  locos = [
    [0.9] * 5,
    [0.6, 0.5, 0.6, 0.6, 0.55],
    [0.2, 0.2, 0.2, 0.45, 0.2],
    [0.1] * 5,
  ]
  contrastive = [
    [0.9] * 5,
    [0.9] * 5,
    [0.6, 0.6, 0.6, 0.6, 0.5],
    [0.4, 0.4, 0.6, 0.3, 0.4],
  ]
  boot = {"locos": np.array(locos), "contrastive": np.array(contrastive)}
  # Point estimates over two probes: LOCOS means (0.9, 0.6, 0.2, 0.1) collapse
  # at index 2, contrastive (0.9, 0.9, 0.6, 0.4) at index 3; baseline mean 1.0.
  mat = {
    "locos": np.array([[0.9, 0.9], [0.6, 0.6], [0.1, 0.3], [0.1, 0.1]]),
    "contrastive": np.array([[0.9, 0.9], [0.8, 1.0], [0.6, 0.6], [0.4, 0.4]]),
  }
  return boot, boot_base, mat, np.array([1.0, 1.0])


def test_advantage(collapse):
  boot, boot_base, mat, base = _boot()
  ks = [1, 5, 20, 50]
  a = collapse._advantage(boot, boot_base, mat, base, ks, ks, ["contrastive"])
  assert a["collapse_index"] == {"locos": 2, "contrastive": 3}
  assert a["collapse_k"] == {"locos": 20, "contrastive": 50}
  assert a["advantage"] == 1.0  # baseline's collapse index minus LOCOS's
  # Per resample (3-2, 3-1, 4-2, 3-3, 2-1) = (1, 2, 2, 0, 1): the 2.5% / 97.5%
  # quantiles of the sorted (0, 1, 1, 2, 2) are 0.1 and 2.0, so the half-width
  # is max(1 - 0.1, 2 - 1).
  assert a["ci"] == pytest.approx([0.1, 2.0])
  assert a["halfwidth"] == pytest.approx(1.0)
  # A second baseline (never collapsing at the point estimate) that collapses at
  # index 2 in resamples 1 and 4: per resample the stronger baseline collapses
  # at (3, 2, 4, 3, 2), so the advantages are (1, 1, 2, 0, 1), quantiles 0.1 and
  # 1.9.
  boot["wu"] = np.array(
    [[0.9] * 5, [0.9] * 5, [0.9, 0.4, 0.9, 0.9, 0.5], [0.9] * 5]
  )
  mat["wu"] = np.full((4, 2), 0.9)
  a = collapse._advantage(
    boot, boot_base, mat, base, ks, ks, ["contrastive", "wu"]
  )
  assert a["advantage"] == 1.0
  assert a["ci"] == pytest.approx([0.1, 1.9])
  assert a["halfwidth"] == pytest.approx(0.9)
  mat["contrastive"][1, 0] = np.nan  # a cell not run: no advantage
  assert (
    collapse._advantage(boot, boot_base, mat, base, ks, ks, ["contrastive"])[
      "advantage"
    ]
    is None
  )


def test_curves_on_the_claim_grid(collapse):
  ks = [1, 5, 20, 50]
  # Every probe scores the same, so every bootstrap resample equals the point
  # estimate.
  means = {
    "locos": [0.9, 0.6, 0.2, 0.1],
    "contrastive": [0.9, 0.9, 0.6, 0.4],
    "random": [1.0, 0.9, 0.9, 0.7],
  }
  res = {("baseline", 0): np.full(3, 1.0)}
  res.update(
    {(d, k): np.full(3, means[d][i]) for d in means for i, k in enumerate(ks)}
  )
  cv = collapse.collapse_curves(
    res, ("locos", "contrastive"), ks, [0, 1, 2], 50, 0
  )
  assert cv["collapse_step_advantage"] == 1.0  # full grid: index 3 - index 2
  assert cv["collapse_step_advantage_halfwidth"] == 0.0
  assert cv["collapse_k"] == {"locos": 20, "contrastive": 50, "random": None}
  assert cv["random"]["mean"] == pytest.approx(means["random"])
  # On the claim's grid (5, 50) both collapse at its second point: no advantage.
  cv = collapse.collapse_curves(
    res, ("locos", "contrastive"), ks, [0, 1, 2], 50, 0, claim_ks=[5, 50]
  )
  assert cv["claim_grid"] == [5, 50]
  assert cv["collapse_step_advantage"] == 0.0
  assert cv["collapse_index"] == {"locos": 1, "contrastive": 1, "random": 2}


def test_derived_metrics(evaluate):
  toy = {
    "nonliteral": {
      "ks": [1, 2, 4, 8],
      "baseline": {"mean": 0.8},
      "locos": {"mean": [0.7, 0.5, 0.3, 0.1]},  # collapses (< 0.4) at k = 4
      "wu": {"mean": [0.8, 0.7, 0.45, 0.2]},  # at k = 8
      # never: counts as 8 + 1 = 9
      "contrastive": {"mean": [0.8, 0.8, 0.8, 0.5]},
      "random": {"mean": [0.8, 0.8, 0.8, 0.1]},
    },
    "parametric": {
      "ks": [1, 2, 4, 8],
      "baseline": {"mean": 0.5},
      "locos": {"mean": [0.5, 0.45, 0.4, 0.2]},
    },
  }
  filtered = {
    "collapse_step_advantage": 1.0,
    "collapse_step_advantage_halfwidth": 0.5,
    "collapse_k": {"locos": 20},
    "baseline": {"mean": 0.9},
    "random": {"mean": [0.9, 0.85, 0.8, 0.6]},
    "collapse_index": {"locos": 1},
    "claim_grid": [5, 20, 50],
  }
  paper = dict(filtered, random={"mean": [0.9, 0.9, 0.9, None]})
  metrics = {
    "toy/curves": toy,
    "smollm2/curves": {"filtered": filtered, "paper": paper},
    "smollm2/parametric": {
      "ks": [1, 5, 20, 50],
      "baseline": 0.8,
      "locos": [0.8, 0.7, 0.6, 0.2],
    },
  }
  d = evaluate.derived_metrics(metrics)
  assert d["toy"]["collapse_k"] == {
    "locos": 4,
    "wu": 8,
    "contrastive": None,
    "random": 8,
  }
  # the strongest attention detector
  assert d["toy"]["collapse_k_advantage"] == 8 - 4
  assert d["toy"]["parametric_retained_at_collapse"] == pytest.approx(0.4 / 0.5)
  s = d["smollm2"]
  assert s["filtered"]["collapse_step_advantage"] == 1.0
  assert s["filtered"]["collapse_step_advantage_halfwidth"] == 0.5
  assert s["filtered"]["random_drop_at_max_k"] == pytest.approx(0.9 - 0.6)
  assert s["paper"]["random_drop_at_max_k"] is None
  # LOCOS's filtered collapse is at claim-grid index 1 (k = 20): parametric 0.6
  # / 0.8.
  assert s["parametric_retained"] == pytest.approx(0.75)


def _manual_quantiles(diff_fn, n, num_resamples, seed):
  """2.5 % and 97.5 % quantiles of diff_fn(resample indices) over the curves'
  resamples."""
  idx = np.random.default_rng(seed).integers(0, n, size=(num_resamples, n))
  return np.quantile([diff_fn(i) for i in idx], [0.025, 0.975])


def test_random_drop_is_a_paired_interval_of_baseline_minus_random(collapse):
  ks = [1, 50]
  base = np.array([1.0, 1.0, 0.5, 1.0, 0.0])
  rnd = {
    1: np.array([1.0, 0.5, 0.5, 1.0, 0.0]),
    50: np.array([0.0, 1.0, 0.5, 0.0, 0.0]),
  }
  res = {("baseline", 0): base, ("locos", 1): base, ("locos", 50): base * 0}
  res.update({("contrastive", k): base for k in ks})
  res.update({("random", k): rnd[k] for k in ks})
  cv = collapse.collapse_curves(
    res, ("locos", "contrastive"), ks, np.arange(5), 300, 3
  )
  drop = cv["random_drop"]
  # 3.5/5 - 3.0/5, 3.5/5 - 1.5/5
  assert drop["mean"] == pytest.approx([0.1, 0.4])
  for j, k in enumerate(ks):
    lo, hi = _manual_quantiles(
      lambda i, k=k: base[i].mean() - rnd[k][i].mean(), 5, 300, 3
    )
    assert drop["lo"][j] == pytest.approx(lo) and drop["hi"][
      j
    ] == pytest.approx(hi)
    m = drop["mean"][j]
    assert drop["halfwidth"][j] == pytest.approx(max(m - lo, hi - m))


def test_random_guards(evaluate):
  cv = {
    "ks": [1, 5, 20, 50],
    "claim_baselines": ["contrastive"],
    "collapse_index": {"locos": 1, "contrastive": 2, "random": 3},
    "random_drop": {
      "mean": [0.01, 0.02, 0.2, 0.6],
      "halfwidth": [0.005, 0.01, 0.05, 0.07],
    },
  }
  g = evaluate.random_guards(cv, 270)
  # contrastive's index 2 minus random's 3
  assert g["random_collapse_step_advantage"] == -1.0
  assert g["random_drop_at_max_k_halfwidth"] == 0.07
  assert g["head_share_at_max_k"] == pytest.approx(50 / 270)
  # 50 / 1152 of 270 heads is 11.7: the largest k at or below it is 5
  assert g["paper_share_k"] == 5
  assert g["random_drop_at_paper_share"] == 0.02
  assert g["random_drop_at_paper_share_halfwidth"] == 0.01
  assert evaluate.random_guards(cv, 72)["paper_share_k"] == 1  # 3.1 heads
  g = evaluate.random_guards(cv, 20)  # 0.87 heads: no k of the grid fits
  assert g["paper_share_k"] is None and g["random_drop_at_paper_share"] is None
  # a random cell before the collapse was not run
  cv["collapse_index"]["random"] = None
  assert (
    evaluate.random_guards(cv, None)["random_collapse_step_advantage"] is None
  )


def test_parametric_retained_halfwidth(evaluate):
  base = np.array([1.0, 1.0, 0.5, 1.0])
  abl = np.array([1.0, 0.0, 0.5, 0.5])
  par = {
    "per_probe": {
      "baseline": base.tolist(),
      "locos": {"5": abl.tolist(), "20": None},
    }
  }
  r = abl.mean() / base.mean()  # 2.0 / 3.5
  idx = np.random.default_rng(0).integers(0, 4, size=(400, 4))
  # every resampled baseline is > 0
  ratios = [abl[i].mean() / base[i].mean() for i in idx]
  lo, hi = np.quantile(ratios, [0.025, 0.975])
  got = evaluate.parametric_retained_halfwidth(
    par, 5, num_resamples=400, seed=0
  )
  assert got == pytest.approx(max(r - lo, hi - r))
  # the cell was not run
  assert evaluate.parametric_retained_halfwidth(par, 20) is None


def test_derived_metrics_adds_the_guards_only_to_runs_that_record_them(
  evaluate,
):
  cv = {
    "ks": [1, 5],
    "claim_grid": [1, 5],
    "claim_baselines": ["contrastive"],
    "collapse_step_advantage": 0.0,
    "collapse_step_advantage_halfwidth": 0.0,
    "collapse_k": {"locos": 5},
    "collapse_index": {"locos": 1, "contrastive": 1, "random": 2},
    "baseline": {"mean": 0.9},
    "random": {"mean": [0.9, 0.8]},
  }
  par = {"baseline": 1.0, "ks": [1, 5], "locos": [1.0, 0.5]}
  old = evaluate.derived_metrics(
    {"smollm2/curves": {"filtered": cv}, "smollm2/parametric": par}
  )
  assert "random_collapse_step_advantage" not in old["smollm2"]["filtered"]
  assert "parametric_retained_halfwidth" not in old["smollm2"]
  cv["random_drop"] = {"mean": [0.0, 0.1], "halfwidth": [0.0, 0.02]}
  par["per_probe"] = {
    "baseline": [1.0, 1.0],
    "locos": {"1": [1.0, 1.0], "5": [1.0, 0.0]},
  }
  new = evaluate.derived_metrics(
    {
      "smollm2/curves": {"filtered": cv},
      "smollm2/parametric": par,
      "smollm2/num_heads": 270,
    }
  )
  f = new["smollm2"]["filtered"]
  assert f["random_collapse_step_advantage"] == -1.0
  assert f["random_drop_at_max_k_halfwidth"] == 0.02
  assert f["paper_share_k"] == 5 and f["random_drop_at_paper_share"] == 0.1
  assert new["smollm2"]["parametric_retained"] == 0.5
  assert new["smollm2"]["parametric_retained_halfwidth"] > 0


def test_paired_needle(needle):
  from jaxpapers import core

  base = [1.0, 0.0, 1.0, 1.0, 0.5]  # every probe; probes 0, 2, 3, 4 are ablated
  keep = np.array([0, 2, 3, 4])
  res = {
    "baseline@0": {"rougeL": base},
    "locos@12": {"rougeL": [0.0, 0.5, 1.0, 0.0]},
    "contrastive@12": {"rougeL": [1.0, 0.5, 1.0, 0.5]},
    "random@12": {"rougeL": [1.0, 1.0, 0.0, 0.5]},
  }
  out = needle.paired_needle(res, keep, [12], 500, 7)["k=12"]
  want = core.paired_bootstrap(
    [1.0, 0.5, 1.0, 0.5], [0.0, 0.5, 1.0, 0.0], n_resamples=500, seed=7
  )
  got = out["contrastive_minus_locos"]
  assert got["mean"] == pytest.approx(0.375) and got["n"] == 4
  assert (got["lo"], got["hi"]) == pytest.approx((want.lo, want.hi))
  assert got["halfwidth"] == pytest.approx(
    max(0.375 - want.lo, want.hi - 0.375)
  )
  # the baseline is read on the ablated probes only: 1, 1, 1, 0.5 against
  # LOCOS's rows
  assert out["baseline_minus_locos"]["mean"] == pytest.approx((3.5 - 1.5) / 4)
  assert out["contrastive_minus_random"]["mean"] == pytest.approx(
    (3.0 - 2.5) / 4
  )
  res["random@12"] = None  # a cell not run
  assert (
    needle.paired_needle(res, keep, [12], 50, 0)["k=12"][
      "baseline_minus_random"
    ]
    is None
  )
