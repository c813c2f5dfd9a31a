"""experiments.compact_results: renames, rounds, prunes and shrinks a results folder, once."""

import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from experiments import compact_results as cr
from jaxpapers import core
from jaxpapers.core import cache as cache_lib


def test_round_floats_keeps_9_significant_digits_and_exact_values():
  rng = np.random.default_rng(0)
  xs = np.concatenate([rng.normal(size=500) * 10.0 ** rng.integers(-12, 12, 500), [1 / 3]])
  out = cr.round_floats([float(x) for x in xs])
  np.testing.assert_array_less(np.abs(np.array(out) - xs), 5e-9 * np.abs(xs) * (1 + 1e-12))
  assert all(len(repr(abs(v)).split("e")[0].replace(".", "").strip("0")) <= 9 for v in out)
  assert out[-1] == 0.333333333
  f32 = np.float32(rng.normal(size=200))  # 9 digits name a float32 exactly
  assert np.array_equal(np.float32(cr.round_floats(f32.astype(float).tolist())), f32)
  value = {"n": 3, "b": True, "s": "0.123456789", "i": 1234567891.0, "nan": float("nan")}
  value["inf"] = float("-inf")
  again = cr.round_floats(value)
  assert again["i"] == 1234567891.0 and again["n"] == 3 and again["b"] is True
  assert again["s"] == "0.123456789" and np.isnan(again["nan"]) and again["inf"] == -np.inf
  assert cr.round_floats(out) == out  # idempotent


def _results_folder(tmp_path):
  """experiments/dual_rate/results with legacy cells, a results.json and a figure."""
  res = tmp_path / "experiments" / "dual_rate" / "results"
  cells = res / "cells"
  cells.mkdir(parents=True)
  grid = np.linspace(-1, 1, 40 * 64).reshape(40, 8, 8, 1).tolist()
  config = {
    "train_seeds": [0, 1],
    "baseline_steps": [4, 8],
    "dual_steps": [8],
    "dual_intervals": [1, 2],
    "mmd_steps": [],
    "mmd_dual_steps": [],
    "mmd_dual_interval": 2,
    "tau": math.log(10),
  }
  for seed in (0, 1):
    name = f"train_seed={seed}/main"
    value = {
      "rows": [{"fd_mean": 10.154596821670262, "steps": 4}],
      "grids": {"baseline|8|1": grid, "dual-rate|8|2": grid, "baseline|4|1": grid},
    }
    cache_lib.write_json(
      cells / core.CellStore.legacy_filename(name), {"name": name, "value": value}
    )
  (res / "results.json").write_text(
    json.dumps({"metrics": {"x": 0.1 + 0.2, "curve": [1 / 3, 2 / 3]}, "config": config}, indent=2)
  )
  fig, ax = plt.subplots(figsize=(3, 2))
  ax.plot([0, 1, 2], [0, 1, 0.5], "C1-o", label="a")
  ax.legend()
  fig.savefig(res / "plot.png", dpi=80)
  plt.close(fig)
  (res / "table.md").write_text("| a |\n")
  return res


def test_a_folder_is_renamed_rounded_pruned_and_then_left_alone(tmp_path):
  res = _results_folder(tmp_path)
  plot_before = np.asarray(Image.open(res / "plot.png").convert("RGB"), np.int16)
  assert cr.compact_folder(res, check=True)  # something to do ...
  assert sorted(p.name for p in (res / "cells").iterdir())[0].startswith("train_seed%3D")
  changes = cr.compact_folder(res)
  assert {c.path.name: c.what for c in changes} == {
    "train_seed=0~main.json": "renamed, compacted",
    "train_seed=1~main.json": "renamed, compacted",
    "results.json": "compacted",
    "plot.png": "palette",
  }
  assert sorted(p.name for p in (res / "cells").iterdir()) == [
    "train_seed=0~main.json",
    "train_seed=1~main.json",
  ]
  store = core.CellStore(res / "cells")
  # The samples figure reads the first seed's grids of its shown rows only.
  assert sorted(store["train_seed=0/main"]["grids"]) == ["baseline|8|1", "dual-rate|8|2"]
  assert store["train_seed=1/main"]["grids"] == {}
  assert store["train_seed=0/main"]["rows"] == [{"fd_mean": 10.1545968, "steps": 4}]
  rec = json.loads((res / "results.json").read_text())
  # Re-judging derives dual_rate's claims from its metrics: they are kept exactly.
  assert rec["metrics"] == {"x": 0.1 + 0.2, "curve": [1 / 3, 2 / 3]}
  assert rec["config"]["tau"] == math.log(10)  # settings are kept exactly
  plot = Image.open(res / "plot.png")
  assert plot.mode == "P"
  assert np.abs(np.asarray(plot.convert("RGB"), np.int16) - plot_before).max() <= 24
  assert (res / "table.md").read_text() == "| a |\n"
  # A second run (or a check) finds nothing to do.
  assert cr.compact_folder(res, check=True) == []
  assert cr.compact_folder(res) == []


def test_rename_only_moves_cells_and_changes_no_value(tmp_path):
  res = _results_folder(tmp_path)
  results_text = (res / "results.json").read_text()
  png = (res / "plot.png").read_bytes()
  before = core.CellStore(res / "cells").to_dict()
  changes = cr.compact_folder(res, rename_only=True)
  assert sorted(c.what for c in changes) == ["renamed", "renamed"]
  assert core.CellStore(res / "cells").to_dict() == before
  assert sorted(p.name for p in (res / "cells").iterdir()) == [
    "train_seed=0~main.json",
    "train_seed=1~main.json",
  ]
  assert (res / "results.json").read_text() == results_text and (
    res / "plot.png"
  ).read_bytes() == png
  assert cr.compact_folder(res, rename_only=True) == []


@pytest.mark.parametrize("width", [10, 100])
def test_format_json_round_trips_and_puts_rows_on_one_line(width):
  value = {
    "rows": [{"a": 1, "b": [0.5, 1.5], "c": "x"}] * 6,
    "nested": {"deep": {"deeper": [[1, 2], [3, 4]]}, "s": ["p", "q"]},
    "nan": float("nan"),
    3: None,
  }
  text = core.results.format_json(value, width=width)
  back = json.loads(text)
  assert back["rows"] == value["rows"] and back["nested"] == value["nested"]
  assert np.isnan(back["nan"]) and back["3"] is None
  assert text.endswith("\n") and '{"a":1,"b":[0.5,1.5],"c":"x"}' in text.splitlines()[2]


def test_measured_floats_are_rounded_but_what_a_rule_reads_stays_exact(tmp_path):
  res = tmp_path / "experiments" / "alpha" / "results"  # no such experiment: nothing re-derived
  res.mkdir(parents=True)
  record = {
    "claims": [
      {
        "claim": {
          "metric": "derived.gap",
          "requires": [{"metric": "summary.a.1", "minus": "summary/c", "why": "a b"}],
        }
      }
    ],
    "metrics": {
      "derived": {"gap": 1 / 3},
      "summary": {"a": [2 / 3, 1 / 7], "b": 1 / 9},
      "summary/c": 1 / 3,
      "rows": [{"x": 1 / 3, "n": 4}],
    },
    "extra": {"per_seed": [1 / 3]},
    "config": {"tau": math.log(10)},
  }
  (res / "results.json").write_text(json.dumps(record))
  (res / "bench.json").write_text(json.dumps({"config": {"lr": 1 / 3}, "time_s": 1 / 3}))
  cr.compact_folder(res)
  rec = json.loads((res / "results.json").read_text())
  assert rec["metrics"] == {
    "derived": {"gap": 1 / 3},  # what rules read: exact
    "summary": {"a": [0.666666667, 1 / 7], "b": 0.111111111},  # summary.a.1 is read
    "summary/c": 1 / 3,  # read too, as the requirement's "minus"
    "rows": [{"x": 0.333333333, "n": 4}],  # no string of the claims names it
  }
  assert rec["extra"] == {"per_seed": [0.333333333]}
  assert rec["config"] == record["config"] and rec["claims"] == record["claims"]
  bench = json.loads((res / "bench.json").read_text())
  assert bench == {"config": {"lr": 1 / 3}, "time_s": 0.333333333}
  assert cr.compact_folder(res) == []
