"""Claim code of experiments/soda and the horizon-study functions of
jaxpapers.soda it calls: best runs per horizon, gaps, weight-decay transfer,
grid edges and the grid's stages."""

import importlib
import math

import ml_collections
import numpy as np
import pytest

from jaxpapers import soda

MODULES = {
  "evaluate": "experiments.soda.evaluate",
  "grid": "experiments.soda.grid",
  "study": "jaxpapers.soda._study",
}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="grid")
def _grid():
  return importlib.import_module(MODULES["grid"])


@pytest.fixture(name="study")
def _study():
  return importlib.import_module(MODULES["study"])


H = (100, 1000)  # the horizons of the rows below


def _r(t, family, lr, wd, metric, std):
  row = {
    "horizon": t,
    "family": family,
    "lr": lr,
    "metric": metric,
    "metric_std": std,
  }
  if wd is not None:
    row["wd"] = wd
  return row


def _rows():
  """Test NLL (lower is better) per (horizon, family, lr, wd)."""
  return [
    _r(100, "adamw", 0.1, 0.0, 0.50, 0.02),
    _r(100, "adamw", 0.01, 0.0, 0.405, 0.02),  # best at wd = 0
    _r(100, "adamw", 0.1, 0.1, 0.40, 0.02),  # best tuned: wd_s = 0.1
    _r(100, "adamw", 0.01, 0.1, 0.45, 0.02),
    _r(100, "adamw", 0.1, 0.01, 0.42, 0.03),
    _r(100, "soda_adamw", 0.1, None, 0.41, 0.03),  # best SODA
    _r(100, "soda_adamw", 0.01, None, 0.46, 0.03),
    _r(1000, "adamw", 0.1, 0.0, 0.30, 0.03),  # best at wd = 0
    _r(1000, "adamw", 0.1, 0.1, 0.35, 0.04),
    _r(1000, "adamw", 0.01, 0.1, 0.33, 0.03),  # best at wd = 0.1
    _r(1000, "adamw", 0.1, 0.01, 0.25, 0.04),  # best tuned: wd_l = 0.01
    _r(1000, "adamw", 0.01, 0.01, 0.28, 0.04),
    _r(1000, "soda_adamw", 0.1, None, 0.28, 0.03),
    _r(1000, "soda_adamw", 0.01, None, 0.27, 0.04),  # best SODA
  ]


def test_summaries(evaluate):
  curve = np.zeros((3, 2, 2))  # [seeds, evals, (accuracy, NLL)]
  curve[:, -1] = [[0.9, 0.3], [0.8, 0.5], [0.85, 0.4]]
  curve[:, 0, 1] = [1.0, 2.0, 3.0]
  out = {
    "runs": [
      {
        "horizon": 100,
        "family": "adamw",
        "hp": {"lr": 0.1},
        "steps": [1, 2],
        "curve": curve,
      }
    ]
  }
  (row,) = evaluate._summaries(out, "digits")
  assert row["metric"] == pytest.approx(0.4)  # NLL, the claims' metric
  # population std over seeds
  assert row["metric_std"] == pytest.approx(math.sqrt(0.02 / 3))
  assert row["accuracy"] == pytest.approx(0.85)
  assert row["curve"] == pytest.approx([2.0, 0.4])  # NLL curve, seed mean


def test_best(study):
  rows = _rows()
  assert study.best_run(rows, 1000, "adamw")["metric"] == 0.25
  assert study.best_run(rows, 1000, "adamw", wd=0.1)["metric"] == 0.33
  assert study.best_run(rows, 10, "adamw") is None


def test_claims_per_horizon(study):
  cs = study.horizon_gaps(_rows(), H, "adamw", "soda_adamw")
  c100, c1000 = cs
  # Gap signed so > 0 favours SODA: -(SODA - best tuned) / sqrt(std_b^2 +
  # std_s^2).
  assert c100["soda_minus_best_base"] == pytest.approx(-0.01)
  assert c100["gap_in_seed_std"] == pytest.approx(
    -0.01 / math.hypot(0.02, 0.03), rel=1e-6
  )
  assert (c100["best_wd"], c100["best_lr"]) == (0.1, 0.1)
  assert c100["soda_beats_wd0"] is False  # 0.41 vs 0.405
  assert c1000["gap_in_seed_std"] == pytest.approx(
    -0.02 / math.hypot(0.04, 0.04), rel=1e-6
  )
  assert c1000["soda_beats_wd0"] is True  # 0.27 vs 0.30


def test_wd_transfer(study):
  tr = study.wd_transfer(_rows(), H, "adamw")
  assert tr["best_wd_by_horizon"] == {"100": 0.1, "1000": 0.01}
  # At T = 1000 with the wd tuned at T = 100 (0.1): best 0.33 +- 0.03 vs 0.25 +-
  # 0.04.
  assert tr["penalty_at_longest_in_std"] == pytest.approx(0.08 / 0.05, rel=1e-6)
  # At T = 100 with wd 0.01: 0.42 +- 0.03 vs 0.40 +- 0.02.
  assert tr["penalty_at_shortest_in_std"] == pytest.approx(
    0.02 / math.hypot(0.02, 0.03), rel=1e-6
  )


def test_derived_metrics(evaluate):
  rows = _rows()
  m = {
    "digits": {
      "claims": soda.horizon_gaps(rows, H, "adamw", "soda_adamw"),
      "wd_transfer": [soda.wd_transfer(rows, H, "adamw")],
    }
  }
  d = evaluate.derived_metrics(m)
  assert d["digits_adamw_worst_gap_in_std"] == pytest.approx(
    -0.02 / math.hypot(0.04, 0.04), rel=1e-6
  )
  assert d["digits_adamw_beats_wd0_fraction"] == pytest.approx(0.5)
  assert d["digits_adamw_wd_transfer_penalty_in_std"] == pytest.approx(
    1.6, rel=1e-6
  )


def _edge_rows():
  """Two horizons; lr grid {0.01, 0.1, 1} for both arms, wd grid {0, 0.1, 1} for
  AdamW.

  T = 100: AdamW's best is (lr 0.1, wd 0.1), inside; SODA's best lr is 0.1,
  inside. T = 1000: AdamW's best is (lr 1, wd 1): both at the top edge; SODA's
  best lr is 0.01: the bottom edge.
  """
  rows = []
  for t, best_base, best_soda in (
    (100, (0.1, 0.1), 0.1),
    (1000, (1.0, 1.0), 0.01),
  ):
    for lr in (0.01, 0.1, 1.0):
      for wd in (0.0, 0.1, 1.0):
        m = 0.3 if (lr, wd) == best_base else 0.5 + lr + wd
        rows.append(_r(t, "adamw", lr, wd, m, 0.01))
      rows.append(
        _r(t, "soda_adamw", lr, None, 0.35 if lr == best_soda else 0.6, 0.01)
      )
  return rows


def test_grid_edges(study):
  e = study.grid_edges(_edge_rows(), H, "adamw", "soda_adamw")
  assert e["100"] == {
    "base_lr": 0.1,
    "base_lr_edge": "",
    "base_wd": 0.1,
    "base_wd_edge": "",
    "soda_lr": 0.1,
    "soda_lr_edge": "",
    "base_at_edge": 0,
    "at_edge": 0,
  }
  assert (e["1000"]["base_lr_edge"], e["1000"]["base_wd_edge"]) == (
    "high",
    "high",
  )
  assert e["1000"]["soda_lr_edge"] == "low"
  assert (e["1000"]["base_at_edge"], e["1000"]["at_edge"]) == (2, 3)


def test_grid_edges_weight_decay_zero_is_not_an_edge(study):
  rows = [r for r in _edge_rows() if r["horizon"] == 100]
  # make (lr 0.1, wd 0) AdamW's best: wd 0 bounds the search space itself
  for r in rows:
    if r["family"] == "adamw":
      r["metric"] = 0.2 if (r["lr"], r["wd"]) == (0.1, 0.0) else 0.6
  e = study.grid_edges(rows, H, "adamw", "soda_adamw")["100"]
  assert (e["base_wd"], e["base_wd_edge"], e["at_edge"]) == (0.0, "", 0)
  # The bottom lr is an edge on its own (without the top one being reached).
  for r in rows:
    if r["family"] == "soda_adamw":
      r["metric"] = 0.1 if r["lr"] == 0.01 else 0.6
  e = study.grid_edges(rows, H, "adamw", "soda_adamw")["100"]
  assert (e["soda_lr_edge"], e["at_edge"], e["base_at_edge"]) == ("low", 1, 0)


def test_grid_edges_of_a_one_point_grid(study):
  """A single learning rate cannot bracket anything: its optimum is at an
  edge."""
  rows = [
    _r(100, "adamw", 0.1, 0.0, 0.3, 0.01),
    _r(100, "adamw", 0.1, 1.0, 0.4, 0.01),
  ]
  rows.append(_r(100, "soda_adamw", 0.1, None, 0.3, 0.01))
  e = study.grid_edges(rows, (100,), "adamw", "soda_adamw")["100"]
  assert (e["base_lr_edge"], e["soda_lr_edge"], e["at_edge"]) == (
    "low",
    "low",
    2,
  )


def test_derived_edge_horizons(evaluate):
  rows = _edge_rows()
  m = {
    "digits": {
      "claims": soda.horizon_gaps(rows, H, "adamw", "soda_adamw"),
      "grid_edges": {"adamw": soda.grid_edges(rows, H, "adamw", "soda_adamw")},
    }
  }
  d = evaluate.derived_metrics(m)
  assert d["digits_adamw_horizons_at_edge"] == [1000]
  assert d["digits_adamw_optima_at_edge"] == 3
  # T = 100: SODA's best lr moves to the top of its grid, one optimum at an edge
  for r in rows:
    if r["horizon"] == 100 and r["family"] == "soda_adamw":
      r["metric"] = 0.1 if r["lr"] == 1.0 else 0.6
  m["digits"]["grid_edges"]["adamw"] = soda.grid_edges(
    rows, H, "adamw", "soda_adamw"
  )
  d = evaluate.derived_metrics(m)
  assert d["digits_adamw_horizons_at_edge"] == [100, 1000]
  assert d["digits_adamw_optima_at_edge"] == 4


def _staged_cfg():
  """Three stages: the first run's grid, then two extensions of SODA's and one
  of AdamW's."""
  return ml_collections.ConfigDict(
    {
      "cell_stages": (
        ("", (("adamw", (0.01, 0.1)), ("soda_adamw", (0.01, 0.1)))),
        ("+ext", (("soda_adamw", (0.001, 1.0)), ("adamw", (1.0,)))),
        ("+ext2", (("soda_adamw", (1e-4,)),)),
      )
    }
  )


def test_cell_blocks(grid):
  runs = [
    # a family no stage names: the first run's cell
    ("soda_adamw_zero", {"lr": 3.0}),
    ("adamw", {"lr": 1.0, "wd": 0.0}),
    ("adamw", {"lr": 0.01, "wd": 1.0}),
    ("soda_adamw", {"lr": 1e-4}),
    ("soda_adamw", {"lr": 0.001}),
    ("soda_adamw", {"lr": 0.01}),
    ("soda_adamw", {"lr": 0.1}),
    ("soda_adamw", {"lr": 1.0}),
  ]
  assert grid.cell_blocks(_staged_cfg(), runs) == [
    ("", [runs[0], runs[2], runs[5], runs[6]]),
    ("+ext", [runs[1], runs[4], runs[7]]),
    ("+ext2", [runs[3]]),
  ]
  # Without the last stage's runs its cell is left out (nothing to train or read
  # back).
  assert [s for s, _ in grid.cell_blocks(_staged_cfg(), runs[:3])] == [
    "",
    "+ext",
  ]
  assert grid.cell_blocks(
    ml_collections.ConfigDict({"cell_stages": ()}), runs
  ) == [("", runs)]
  # The order of the stages, not of their names, decides: the first stage is the
  # '' cell.
  one = ml_collections.ConfigDict(
    {"cell_stages": (("", (("soda_adamw", (1.0,)),)),)}
  )
  assert grid.cell_blocks(one, runs[:1] + runs[7:]) == [
    ("", runs[:1] + runs[7:])
  ]


def test_cell_blocks_refuses_an_ambiguous_cell(grid):
  # a family the stages name, at a learning rate none lists
  runs = [("soda_adamw", {"lr": 0.3})]
  with pytest.raises(
    ValueError, match=("soda_adamw lr 0.3 is in the grid but in no stage")
  ):
    grid.cell_blocks(_staged_cfg(), runs)
  twice = ml_collections.ConfigDict(
    {
      "cell_stages": (
        ("", (("soda_adamw", (0.3,)),)),
        ("+ext", (("soda_adamw", (0.3,)),)),
      )
    }
  )
  with pytest.raises(ValueError, match=r"listed by the stages \['', '\+ext'\]"):
    grid.cell_blocks(twice, runs)
  same = ml_collections.ConfigDict(
    {"cell_stages": (("", ()), ("", (("soda_adamw", (0.3,)),)))}
  )
  with pytest.raises(ValueError, match="must be distinct"):
    grid.cell_blocks(same, runs)
  bad = ml_collections.ConfigDict({"cell_stages": ((("soda_adamw", (0.3,)),),)})
  with pytest.raises(ValueError, match="cell_stages must be a sequence"):
    grid.cell_blocks(bad, runs)


def test_grid_edges_of_an_extended_grid(study):
  """Rows of every stage count: a top-edge optimum is inside once the next
  stage's lr is worse."""
  first = [
    _r(100, "muon", lr, wd, m if wd == 0.3 else 0.8, 0.01)
    for lr, m in ((0.1, 0.5), (0.3, 0.2))
    for wd in (0.0, 0.3, 3.0)
  ]
  soda_rows = [
    _r(100, "soda_muon", lr, None, m, 0.01)
    for lr, m in ((1e-3, 0.2), (3e-3, 0.4))
  ]
  e = study.grid_edges(first + soda_rows, (100,), "muon", "soda_muon")["100"]
  assert (e["base_lr_edge"], e["soda_lr_edge"], e["at_edge"]) == (
    "high",
    "low",
    2,
  )
  ext2 = [
    _r(100, "muon", lr, 0.3, m, 0.01) for lr, m in ((1.0, 0.3), (3.0, 0.9))
  ]
  ext2 += [
    _r(100, "soda_muon", lr, None, m, 0.01)
    for lr, m in ((1e-4, 0.6), (3e-4, 0.3))
  ]
  e = study.grid_edges(first + soda_rows + ext2, (100,), "muon", "soda_muon")[
    "100"
  ]
  assert (e["base_lr"], e["soda_lr"]) == (0.3, 1e-3)
  assert (e["base_lr_edge"], e["soda_lr_edge"], e["at_edge"]) == ("", "", 0)
  # If the added point past the edge is better still, the optimum moved with the
  # edge.
  ext2[0]["metric"], ext2[1]["metric"] = 0.15, 0.1  # lr 3 best: the new top
  e = study.grid_edges(first + soda_rows + ext2, (100,), "muon", "soda_muon")[
    "100"
  ]
  assert (e["base_lr"], e["base_lr_edge"], e["base_at_edge"]) == (
    3.0,
    "high",
    1,
  )


def test_best_ranks_a_diverged_run_last(study):
  rows = [
    # diverged, listed first
    _r(100, "soda_adamw", 3.0, None, float("nan"), float("nan")),
    _r(100, "soda_adamw", 1.0, None, 0.4, 0.01),
    _r(100, "soda_adamw", 0.1, None, 0.3, 0.01),
  ]
  assert study.best_run(rows, 100, "soda_adamw")["lr"] == 0.1
  # all diverged: that one
  assert study.best_run(rows[:1], 100, "soda_adamw")["lr"] == 3.0
