"""experiments.compact_results: renames, rounds, prunes and shrinks a results
folder, once."""

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
  xs = np.concatenate(
    [rng.normal(size=500) * 10.0 ** rng.integers(-12, 12, 500), [1 / 3]]
  )
  out = cr.round_floats([float(x) for x in xs])
  np.testing.assert_array_less(
    np.abs(np.array(out) - xs), 5e-9 * np.abs(xs) * (1 + 1e-12)
  )
  assert all(
    len(repr(abs(v)).split("e")[0].replace(".", "").strip("0")) <= 9
    for v in out
  )
  assert out[-1] == 0.333333333
  f32 = np.float32(rng.normal(size=200))  # 9 digits name a float32 exactly
  assert np.array_equal(
    np.float32(cr.round_floats(f32.astype(float).tolist())), f32
  )
  value = {
    "n": 3,
    "b": True,
    "s": "0.123456789",
    "i": 1234567891.0,
    "nan": float("nan"),
  }
  value["inf"] = float("-inf")
  again = cr.round_floats(value)
  assert again["i"] == 1234567891.0 and again["n"] == 3 and again["b"] is True
  assert (
    again["s"] == "0.123456789"
    and np.isnan(again["nan"])
    and again["inf"] == -np.inf
  )
  assert cr.round_floats(out) == out  # idempotent


def _results_folder(tmp_path):
  """experiments/dual_rate/results with legacy cells, a results.json and a
  figure."""
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
      "grids": {
        "baseline|8|1": grid,
        "dual-rate|8|2": grid,
        "baseline|4|1": grid,
      },
    }
    cache_lib.write_json(
      cells / core.CellStore.legacy_filename(name),
      {"name": name, "value": value},
    )
  (res / "results.json").write_text(
    json.dumps(
      {"metrics": {"x": 0.1 + 0.2, "curve": [1 / 3, 2 / 3]}, "config": config},
      indent=2,
    )
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
  plot_before = np.asarray(
    Image.open(res / "plot.png").convert("RGB"), np.int16
  )
  assert cr.compact_folder(res, check=True)  # something to do ...
  assert sorted(p.name for p in (res / "cells").iterdir())[0].startswith(
    "train_seed%3D"
  )
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
  assert sorted(store["train_seed=0/main"]["grids"]) == [
    "baseline|8|1",
    "dual-rate|8|2",
  ]
  assert store["train_seed=1/main"]["grids"] == {}
  shown = np.asarray(store["train_seed=0/main"]["grids"]["baseline|8|1"])
  # as written: kept to 3 decimals
  grid = np.linspace(-1, 1, 40 * 64).reshape(40, 8, 8, 1)
  np.testing.assert_allclose(shown, grid, rtol=0, atol=5e-4 + 1e-12)
  np.testing.assert_allclose(
    shown * 1000, np.round(shown * 1000), rtol=0, atol=1e-9
  )
  assert store["train_seed=0/main"]["rows"] == [
    {"fd_mean": 10.1545968, "steps": 4}
  ]
  rec = json.loads((res / "results.json").read_text())
  # Re-judging derives dual_rate's claims from its metrics: they are kept
  # exactly.
  assert rec["metrics"] == {"x": 0.1 + 0.2, "curve": [1 / 3, 2 / 3]}
  assert rec["config"]["tau"] == math.log(10)  # settings are kept exactly
  plot = Image.open(res / "plot.png")
  assert plot.mode == "P"
  assert (
    np.abs(np.asarray(plot.convert("RGB"), np.int16) - plot_before).max() <= 24
  )
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
  assert (
    text.endswith("\n")
    and '{"a":1,"b":[0.5,1.5],"c":"x"}' in text.splitlines()[2]
  )


def test_measured_floats_are_rounded_but_what_a_rule_reads_stays_exact(
  tmp_path,
):
  # no such experiment: nothing re-derived
  res = tmp_path / "experiments" / "alpha" / "results"
  res.mkdir(parents=True)
  record = {
    "claims": [
      {
        "claim": {
          "metric": "derived.gap",
          "requires": [
            {"metric": "summary.a.1", "minus": "summary/c", "why": ("a b")}
          ],
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
  (res / "bench.json").write_text(
    json.dumps({"config": {"lr": 1 / 3}, "time_s": 1 / 3})
  )
  cr.compact_folder(res)
  rec = json.loads((res / "results.json").read_text())
  assert rec["metrics"] == {
    "derived": {"gap": 1 / 3},  # what rules read: exact
    "summary": {"a": [0.666667, 1 / 7], "b": 0.111111},  # summary.a.1 is read
    "summary/c": 1 / 3,  # read too, as the requirement's "minus"
    # no string of the claims names it: METRIC_DIGITS
    "rows": [{"x": 0.333333, "n": 4}],
  }
  # extra: 9 digits (code reads it back)
  assert rec["extra"] == {"per_seed": [0.333333333]}
  assert rec["config"] == record["config"] and rec["claims"] == record["claims"]
  bench = json.loads((res / "bench.json").read_text())
  assert bench == {"config": {"lr": 1 / 3}, "time_s": 0.333333333}
  assert cr.compact_folder(res) == []


def test_soda_cells_lose_only_the_unread_training_curve(tmp_path):
  res = tmp_path / "experiments" / "soda" / "results"
  store = core.CellStore(res / "cells")
  run = {
    "family": "adamw",
    "horizon": 8,
    "hp": {"lr": 10**-2.5, "wd": 0.0},
    "seeds": 2,
    "steps": [4, 8],
    "curve": [[[0.5, 1 / 3], [0.75, 0.25]], [[0.5, 0.5], [1.0, 0.125]]],
    "train_curve": [[1 / 3, 1 / 7], [1 / 9, 1 / 11]],
  }
  store.put("digits/T8/adam", [run])
  cr.compact_folder(res)
  (got,) = core.CellStore(res / "cells")["digits/T8/adam"]
  assert got == cr.round_floats(
    {k: v for k, v in run.items() if k != "train_curve"}
  )


def _ec_cell(rng, n_pool, n_clusters, s_x, seed, ks):
  """A full evidence_coverage per-seed cell (every field ``train.run_cell``
  writes)."""
  curve = lambda: np.round(rng.uniform(0.1, 0.6, len(ks)), 3).tolist()
  floats = lambda: rng.normal(size=len(ks)).tolist()
  cell = {
    "n_pool": n_pool,
    "n_clusters": n_clusters,
    "s_x": s_x,
    "s_w": 0.0,
    "seed": seed,
  }
  cell.update(
    eta=0.01,
    tol=0.5,
    k_star=int(rng.choice(ks)),
    k_star_average=int(rng.choice(ks)),
  )
  cell["recall"] = np.sort(rng.uniform(size=len(ks))).tolist()
  for key in ("purity", "c_eff", "ambiguity", "delta"):
    cell[key] = floats()
  cell["prior"] = {"acc": 0.2, "mse": 4.5}
  cell["constant_mean"] = {"acc": 0.18, "mse": 4.4}
  for r in ("gd", "gd_ls", "ridge"):
    reader = {c: {"acc": curve(), "mse": floats()} for c in cr._EC_CONTEXTS}
    reader["k_peak"] = ks[int(np.argmax(reader["retrieved"]["acc"]))]
    reader["regime"] = "unclassified"
    reader["controller"] = {
      "tau": 0.9,
      "acc": 0.43,
      "k_geomean": 4.6,
      "best_fixed_k_acc": 0.44,
    }
    cell[r] = reader
  return cell


def test_evidence_coverage_per_seed_keeps_what_the_claims_and_the_report_read():
  from experiments.evidence_coverage import evaluate
  from experiments.evidence_coverage.configs import default

  ks = (1, 2, 4, 8, 16)
  settings = ((64, 8), (128, 8))
  config = default.get_config()
  config.update(
    settings=settings, ks=ks, s_x=(0.0, 1.0), s_w=(0.0,), seeds=2, n_boot=50
  )
  config.update(decline_tol=0.02, recall_rise=0.05, min_gain=0.01)
  rng = np.random.default_rng(0)
  cells = [
    _ec_cell(rng, p, j, sx, s, ks)
    for p, j in settings
    for sx in (0.0, 1.0)
    for s in range(2)
  ]
  metrics = {"cells": [{"x": 1}], "per_seed": cells, "derived": {}}
  cut = cr._evidence_coverage_metrics(metrics)["per_seed"]
  # dropped ...
  assert "purity" not in cut[0] and "mse" not in cut[0]["gd"]["retrieved"]
  assert len(json.dumps(cut)) < 0.6 * len(json.dumps(cells))
  # ... and the claims' values and the report's view are the same from the cut cells.
  assert evaluate.derived_metrics(cut, config) == evaluate.derived_metrics(
    cells, config
  )
  assert evaluate.shift_response(cut, config) == evaluate.shift_response(
    cells, config
  )
  record = lambda per_seed: {
    "metrics": {
      "cells": evaluate.summarize(cells, config),
      "per_seed": per_seed,
      "derived": {},
    },
    "config": {"ks": list(ks), "settings": [list(s) for s in settings]},
  }
  assert evaluate.report_view(record(cut)) == evaluate.report_view(
    record(cells)
  )


def test_a_metric_keeps_the_digits_a_derivation_or_a_table_needs():
  record = {
    "claims": [{"claim": {"metric": "derived.total", "noise": "other.kept"}}],
    "metrics": {
      "read": [1 / 3, 2 / 3],  # the derivation reads it at full precision
      # a table shows 8 decimals: 6 digits would change them
      "shown": 0.12345678912,
      "unread": {"x": 1 / 7},
      "other": {"kept": 1 / 9, "free": 1 / 9},
      "derived": {"total": 1.0},
    },
    "config": {},
  }
  derive = lambda r: {"total": 3 * r["metrics"]["read"][0]}
  table = lambda r: f"| {r['metrics']['shown']:.8f} |"
  out = cr._round_where_unchanged(record, [derive, table])
  assert out["read"] == [1 / 3, 2 / 3] and out["unread"] == {"x": 0.142857}
  # 9 digits keep the table (0.123457 would not)
  assert out["shown"] == 0.123456789
  # a claim's path stays exact
  assert out["other"] == {"kept": 1 / 9, "free": 0.111111}
  assert out["derived"] == {"total": 1.0}
  assert (
    cr._round_where_unchanged({**record, "metrics": out}, [derive, table])
    == out
  )


def test_config_claims_go_only_when_every_spec_is_a_judged_entry():
  spec = {
    "id": "c",
    "statement": "s",
    "metric": "m",
    "held": 1.0,
    "direction": ("higher"),
  }
  parsed = core.claims.parse_claims([spec])[0].to_dict()
  record = {
    "config": {"lr": 0.1, "claims": [spec]},
    "claims": [{"claim": parsed}],
    "metrics": {},
  }
  out = cr.drop_repeated_claims(record)
  assert out["config"] == {"lr": 0.1} and out["claims"] == record["claims"]
  assert "claims" in record["config"]  # the input is not mutated
  # the run judged a different rule: the run's spec stays
  other = {**parsed, "held": 2.0}
  assert cr.drop_repeated_claims({**record, "claims": [{"claim": other}]}) == {
    **record,
    "claims": [{"claim": other}],
  }
  assert cr.drop_repeated_claims({**record, "claims": []})["config"][
    "claims"
  ] == [spec]


def test_flashssm3d_per_seed_loses_only_the_derived_values_seeds_from_recomputes():
  extra = {
    "per_seed": {"0": {"a/vs_gt/ATE": 0.1, "derived/a/slack": 2.0}},
    "teacher": {"x": 1},
  }
  out = cr.UNREAD_EXTRA["flashssm3d"](extra)
  assert out == {"per_seed": {"0": {"a/vs_gt/ATE": 0.1}}, "teacher": {"x": 1}}
  assert "derived/a/slack" in extra["per_seed"]["0"]  # the input is not mutated
