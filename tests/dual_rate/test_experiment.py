"""The smoke experiment end to end, the notebook on its smoke setting, and the
experiment's jitted MMD step and claim metrics."""

import inspect
import json
import pathlib

import jax
import numpy as np
import pytest
from flax import nnx

from experiments.dual_rate import evaluate, train
from experiments.dual_rate.configs import default, smoke
from jaxpapers import core
from jaxpapers import dual_rate as dr
from tests.notebook_util import run_notebook


def test_smoke_experiment(tmp_path):
  metrics = train.train_and_evaluate(smoke.get_config(), tmp_path)
  res = json.loads((tmp_path / "results.json").read_text())
  assert "table_markdown" in res and "dual-rate" in res["table_markdown"]
  assert (tmp_path / "quality_vs_cost.png").exists() and (
    tmp_path / "samples.png"
  ).exists()
  methods = {r["method"] for r in metrics["rows"]}
  assert methods == {
    "baseline",
    "dual-rate",
    "dual-rate/front_loaded",
    "dual-rate/back_loaded",
  }
  for r in metrics["rows"]:
    # finite, counted
    assert r["fd_mean"] == r["fd_mean"] and r["mflops_per_sample"] > 0
  dual = {
    r["interval_K"]: r for r in metrics["rows"] if r["method"] == "dual-rate"
  }
  assert dual[2]["encoder_calls"] < dual[1]["encoder_calls"]
  assert dual[2]["mflops_per_sample"] < dual[1]["mflops_per_sample"]
  assert metrics["floor"]["fd"] >= 0
  # The held-out reference: two disjoint held-out splits of the samples' size;
  # every row also carries its FD against the train split, as does the floor.
  assert metrics["floor"]["splits"] == {
    "reference": ["heldout", 0, 64],
    "compared": ["heldout", 64, 128],
  }
  assert metrics["derived"]["floor_is_heldout"] == 1.0
  assert all(r["fd_train_mean"] >= 0 for r in metrics["rows"])
  assert "FD-proxy, train ref." in res["table_markdown"]
  # Every phase of the training seed is a resumable cell (a second call reads it
  # back instead of training), in PHASES order; the rows are theirs in that
  # order.
  cell = core.CellStore(tmp_path / "cells")
  names = [f"train_seed=0/{ph}" for ph in train.PHASES]
  assert (
    sorted(cell) == sorted(names) == metrics["cells_done"]
    and metrics["cells_missing"] == []
  )
  assert [r["fd_mean"] for n in names for r in cell[n]["rows"]] == [
    r["fd_mean"] for r in metrics["rows"]
  ]
  assert res["metrics"]["cells_missing"] == []
  # Every row is also a cell of the seed's row store (core.CellStore), read back
  # by a rerun instead of being sampled again.
  rows = core.CellStore(tmp_path / "train_seed0" / "rows")
  assert sorted(r["fd_mean"] for r in rows.to_dict().values()) == sorted(
    r["fd_mean"] for r in metrics["rows"]
  )


def test_rows_aggregate_over_training_seeds_against_hand_values():
  def row(method, k, fd, std, wall=None):
    return dict(
      method=method,
      steps=8,
      interval_K=k,
      refresh_kind="uniform" if k else None,
      sampler="ddim",
      mflops_per_sample=10.0,
      fd_mean=fd,
      fd_std=std,
      kid_mean=fd / 10,
      class_acc=0.5,
      wall_s=wall,
    )

  seed0 = [
    row("baseline", None, 10.0, 1.0, 2.0),
    row("dual-rate", 4, 4.0, 0.5),
    row("x", 2, 7.0, 0.3),
  ]
  seed1 = [row("baseline", None, 14.0, 3.0, 4.0), row("dual-rate", 4, 6.0, 1.5)]
  out = {r["method"]: r for r in dr.aggregate_rows([seed0, seed1])}
  b = out["baseline"]
  # np.std: ddof 0
  assert (b["fd_mean"], b["fd_std"], b["fd_sampling_std"]) == (12.0, 2.0, 2.0)
  assert (
    b["fd_train_seeds"] == [10.0, 14.0]
    and b["wall_s"] == 3.0
    and b["num_train_seeds"] == 2
  )
  np.testing.assert_allclose(b["fd_ci95"], core.ci95_halfwidth([10.0, 14.0]))
  assert (
    out["dual-rate"]["fd_std"] == 1.0 and out["dual-rate"]["kid_mean"] == 0.5
  )
  # A setting of one training seed keeps its sampling-seed std.
  assert out["x"]["fd_std"] == 0.3 and out["x"]["num_train_seeds"] == 1
  assert dr.aggregate_rows([seed0]) == seed0
  spread = evaluate._spread(
    {"0": {"a": 1.0, "b": None}, "1": {"a": 3.0, "b": 2.0}}
  )
  assert spread["a"] == {
    "mean": 2.0,
    "std": 1.0,
    "min": 1.0,
    "max": 3.0,
    "values": [1.0, 3.0],
  }
  assert spread["b"]["values"] == [2.0]


def test_derived_control_metrics_against_hand_values():
  def row(method, n, k, mflops, fd, std=1.0):
    return dict(
      method=method,
      steps=n,
      interval_K=k,
      mflops_per_sample=mflops,
      fd_mean=fd,
      fd_std=std,
    )

  s2 = np.sqrt(2.0)
  rows = [
    row("baseline", 8, None, 100.0, 5.0),
    row("dual-rate", 8, 1, 120.0, 6.0),
    row("dual-rate", 8, 4, 40.0, 6.0),
    row("dual-rate", 8, 8, 25.0, 7.0),
    row("no-features", 16, None, 23.0, 9.0),
    # dearer than every K > 1 row: never compared
    row("no-features", 32, None, 45.0, 8.0),
    row("fresh-only", 8, 4, 40.0, 10.0),
    row("fresh-only", 8, 8, 25.0, 7.0),
    row("dual-rate/front_loaded", 8, 4, 40.0, 5.0),
  ]
  d = evaluate.derived_metrics(
    {
      "rows": rows,
      "headline": {"flop_reduction_at_matched_quality": None},
      "floor": {"fd": 2.5},
    }
  )
  # K=4 (40): best no-feature at <= 40 is 9.0 -> +3/s2; K=8 (25): 9.0 -> +2/s2;
  # median 2.5/s2.
  np.testing.assert_allclose(d["features_gain_in_std"], 2.5 / s2, rtol=1e-9)
  np.testing.assert_allclose(
    d["stale_training_gain_in_std"], 2.0 / s2, rtol=1e-9
  )
  np.testing.assert_allclose(
    d["front_vs_uniform_gain_in_std"], 1.0 / s2, rtol=1e-9
  )
  assert (
    d["vs_mmd_baseline_gain_in_std"] is None
    and d["matched_quality_flop_reduction"] == 0.0
  )
  assert (
    d["baseline_best_fd_over_floor"] == 2.0
    and d["quality_regime_reached"] is None
  )


def test_matched_quality_target_over_the_baselines_samplers_against_hand_values():
  def row(method, k, mflops, fd, std=0.0):
    return dict(
      method=method,
      steps=8,
      interval_K=k,
      mflops_per_sample=mflops,
      fd_mean=fd,
      fd_std=std,
      wall_s=None,
    )

  rows = [
    row("baseline", None, 100.0, 5.0, 1.0),
    row("baseline/heun", None, 190.0, 3.0, 0.5),
    row("dual-rate", 1, 120.0, 3.3),
    row("dual-rate", 4, 40.0, 3.6),
    row("dual-rate/heun", 2, 60.0, 3.2),
    row("dual-rate/heun", 8, 20.0, 3.9),
  ]
  flops = {"dual": {"encoder": 10.0, "denoiser": 1.0}}
  # DDIM baseline only: target 5 + 1; cheapest baseline 100, cheapest dual-rate
  # K > 1 40.
  h = dr.matched_quality(rows, flops)
  assert (
    h["target_fd"] == 6.0
    and h["flop_reduction_at_matched_quality"] == 100.0 / 40.0
  )
  # With Heun on both sides: target 3.0 + 0.5; the baseline meets it only with
  # Heun (190), the pair with Heun at K = 2 (60); K = 1 rows never count.
  h = dr.matched_quality(
    rows, flops, ("baseline", "baseline/heun"), ("dual-rate", "dual-rate/heun")
  )
  assert (
    h["target_fd"] == 3.5
    and h["flop_reduction_at_matched_quality"] == 190.0 / 60.0
  )
  for floor, bar, reached in (
    (2.5, 1.2, True),
    (2.0, 1.2, False),
    (2.0, None, None),
  ):
    d = evaluate.derived_metrics(
      {
        "rows": rows,
        "headline": h,
        "floor": {"fd": floor},
        "quality_regime_bar": bar,
      }
    )
    assert (
      d["baseline_best_fd_over_floor"] == 3.0 / floor
      and d["quality_regime_reached"] is reached
    )


def test_notebook_describes_the_default_coupling():
  nb = json.loads(open("colab/dual_rate.ipynb").read())
  text = " ".join(
    "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
  )
  default = inspect.signature(dr.dual_rate_loss).parameters["coupling"].default
  assert default == "ancestral" and "ancestral" in text
  assert "same DDIM trajectory" not in text


@pytest.mark.notebook
def test_notebook_runs():
  run_notebook("colab/dual_rate.ipynb", timeout=300)


def test_benchmark_builds_the_experiments_networks():
  """The step benchmark trains the experiment's networks: same structure,
  parameters and parametrisation as ``dual_rate.build_networks`` (which honours
  ``cfg.parametrization``)."""
  import importlib.util
  import pathlib

  path = pathlib.Path(__file__).parents[2] / "benchmarks" / "dual_rate_step.py"
  spec = importlib.util.spec_from_file_location("dual_rate_step", path)
  bench = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(bench)
  cfg = smoke.get_config()
  cfg.parametrization = "x"
  ours = dr.build_networks(
    cfg, image_size=8, channels=1, num_classes=10, seed=3
  )
  theirs = bench._networks(cfg, 10, seed=3)
  for a, b in zip(ours, theirs):
    assert nnx.graphdef(a) == nnx.graphdef(b)
    la, lb = jax.tree.leaves(nnx.state(a)), jax.tree.leaves(nnx.state(b))
    assert len(la) == len(lb) and all(
      np.array_equal(x, y) for x, y in zip(la, lb)
    )
  base, pair = ours
  assert base.parametrization == "x" and pair.parametrization == "x"
  # The baseline is initialised from the seed, the pair from seed + 1.
  other = dr.build_networks(
    cfg, image_size=8, channels=1, num_classes=10, seed=4
  )[0]
  assert not all(
    np.array_equal(x, y)
    for x, y in zip(
      jax.tree.leaves(nnx.state(base)), jax.tree.leaves(nnx.state(other))
    )
  )


@pytest.mark.parametrize("run", ["quality", "heldout"])
def test_declared_report_renders_the_committed_tables(run):
  """The config's declared table renders the committed record's table, cell for
  cell (with the held-out reference: the train-reference FD beside the held-out
  one)."""
  path = (
    pathlib.Path(__file__).parents[2]
    / "experiments/dual_rate/results"
    / run
    / "results.json"
  )
  record = json.loads(path.read_text())
  tables, pngs = core.reporting.render(default.REPORT, record)
  assert pngs == [] and tables == record["table_markdown"].rstrip()
