"""The smoke config end to end, and the notebook on its smoke setting."""

import json

import numpy as np
import pytest

from experiments.panda import train
from experiments.panda.configs import default, smoke
from jaxpapers import core, panda
from jaxpapers.core import reporting
from tests.notebook_util import run_notebook


def test_smoke_experiment_writes_results(tmp_path):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  res = json.loads((tmp_path / "results.json").read_text())
  assert res["metrics"]["cells"] == len(cfg.backbones)
  assert "PANDA - vanilla" in res["table_markdown"]
  for key, cell in metrics["per_cell"].items():
    assert 0.0 <= cell["test_mean"] <= 100.0, key
  assert (tmp_path / "panda_improvement.png").exists()
  # resume: a rerun finds every cell done and recomputes nothing
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["per_cell"] == metrics["per_cell"]
  # tabulating another process's cells elsewhere: report_only computes nothing,
  # and a missing source workdir is an error naming it
  merged_dir = tmp_path / "merged"
  cfg.merge_cells_from = (str(tmp_path),)
  cfg.report_only = True
  merged = train.train_and_evaluate(cfg, merged_dir)
  assert merged["per_cell"] == metrics["per_cell"]
  cells = core.CellStore(tmp_path / "cells").to_dict()
  assert len(cells) == len(cfg.backbones) * len(cfg.arms)
  assert core.CellStore(merged_dir / "cells").to_dict() == cells
  # a folder holding a single cells.json (as the committed results/ do) merges
  # too
  legacy = tmp_path / "legacy"
  legacy.mkdir()
  (legacy / "cells.json").write_text(json.dumps(cells))
  cfg.merge_cells_from = (str(legacy),)
  assert (
    train.train_and_evaluate(cfg, tmp_path / "merged2")["per_cell"]
    == metrics["per_cell"]
  )
  assert core.CellStore(tmp_path / "merged2" / "cells").to_dict() == cells
  # and such a folder, used as the workdir itself, resumes from its cells.json
  cfg.merge_cells_from = ()
  assert (
    train.train_and_evaluate(cfg, legacy)["per_cell"] == metrics["per_cell"]
  )
  cfg.merge_cells_from = (str(tmp_path / "nowhere"),)
  with pytest.raises(FileNotFoundError, match="nowhere"):
    train.train_and_evaluate(cfg, merged_dir)


@pytest.mark.notebook
def test_notebook_runs():
  run_notebook("colab/panda.ipynb", timeout=300)


def test_cell_timing_separates_compile_from_run():
  # 3 sweep points: the first call compiles and runs (10 s), the two later ones
  # only run (3 s each)
  cell = dict(first_call_s=10.0, wall_s=16.0, test_mean=50.0, test_std=1.0)
  compile_s, ms_per_epoch = train._timing(cell, epochs=100, points=3)
  assert compile_s == pytest.approx(7.0)
  assert ms_per_epoch == pytest.approx(30.0)
  assert (
    train._timing(dict(first_call_s=5.0, wall_s=5.0), epochs=10, points=1)
    is None
  )
  # the declared report reads the timings of the record's per-cell metrics
  cells = {
    "d|hgnn|vanilla": cell,
    "d|hgnn|panda": dict(cell, wall_s=22.0, test_mean=52.5),
  }
  config = dict(
    backbones=["hgnn"],
    arms=["vanilla", "panda"],
    lrs=[0.1, 0.2, 0.3],
    weight_decays=[0.0],
    epochs=100,
    num_splits=3,
  )
  metrics = dict(
    per_cell=cells,
    majority_test_acc={"d": {}},
    per_pair={},
    per_backbone_improvement_pp={"hgnn": 2.5},
    mean_improvement_pp=2.5,
    cells=1,
    cells_improved=1,
  )
  record = dict(metrics=metrics, config=config, notes="n")
  table, _ = reporting.render(default.REPORT, record)
  assert "| d | 50.0 ± 1.0 | 52.5 ± 1.0 |" in table
  assert (
    "Mean PANDA - vanilla (pp): hgnn: +2.50; all: "
    "+2.50 over 1 cells (1 improved)"
  ) in table
  assert "| d | hgnn | 7.0 | 4.0 | 30 | 60 | 2.0x |" in table
  assert "all 3 vmapped splits" in table


def test_matched_arm_reaches_panda_parameter_count():
  """The capacity control: the widened vanilla arm has at least PANDA's
  parameters, minimally."""
  from jaxpapers import hypergraph as hg

  cfg = smoke.get_config()
  d = hg.as_undirected(
    hg.make_synthetic(
      0, num_classes=3, nodes_per_class=10, n_intra=2, n_inter=1
    )
  )
  n = lambda arm, **kw: panda.count_params(
    train._model_fn(cfg, "hgnn", arm, d, **kw)
  )
  h = train.matched_hidden(cfg, "hgnn", d)
  assert (
    n("vanilla", hidden=h)
    >= n("panda")
    > n("vanilla", hidden=h - 1)
    > n("vanilla")
  )
  assert n("vanilla_matched") == n("vanilla", hidden=h)
  cells = {
    f"d|hgnn|{a}": dict(test_mean=v)
    for a, v in (("vanilla", 50.0), ("panda", 56.0), ("vanilla_matched", 53.0))
  }
  der = train.derived_metrics(dict(per_cell=cells))
  assert der["mean_improvement_vs_matched_pp"] == pytest.approx(3.0)
  assert der["mean_matched_minus_vanilla_pp"] == pytest.approx(3.0)
  assert der["mean_improvement_without_telegram_pp"] == pytest.approx(6.0)


def test_empty_dataset_list_is_an_error_not_an_empty_result(tmp_path):
  config = smoke.get_config()
  config.synthetic_fallback = ()
  with pytest.raises(ValueError, match="config.synthetic_fallback is empty"):
    train.train_and_evaluate(config, str(tmp_path))
  assert not (tmp_path / "results.json").exists()


def test_pair_statistics_against_hand_computed_paired_values():
  """Split-wise paired differences of the selected sweep points, t interval and
  sign flips."""
  import itertools

  def cell(best_lr, tests_by_lr):
    return dict(
      best_lr=best_lr,
      best_wd=0.0,
      sweep=[
        dict(lr=lr, wd=0.0, val=[0.5] * 3, test=t)
        for lr, t in tests_by_lr.items()
      ],
    )

  cells = {
    "a|gedi|vanilla": cell(
      0.1, {0.1: [0.50, 0.60, 0.70], 0.2: [0.9, 0.9, 0.9]}
    ),
    "a|gedi|panda": cell(0.2, {0.1: [0.0, 0.0, 0.0], 0.2: [0.60, 0.71, 0.82]}),
    "b|hgnn|vanilla": cell(0.1, {0.1: [0.50, 0.50, 0.50]}),
    "b|hgnn|panda": cell(0.1, {0.1: [0.40, 0.60, 0.50]}),
    # no PANDA cell: not a pair
    "c|hgnn|vanilla": cell(0.1, {0.1: [0.5, 0.5, 0.5]}),
  }
  st = train.pair_statistics(cells)
  assert sorted(st) == ["a|gedi", "b|hgnn"]
  d = np.array([10.0, 11.0, 12.0])  # 0.60-0.50, 0.71-0.60, 0.82-0.70, in pp
  a = st["a|gedi"]
  np.testing.assert_allclose(a["diffs_pp"], d, atol=1e-9)
  np.testing.assert_allclose(a["diff_pp"], d.mean())
  np.testing.assert_allclose(
    a["t95_pp"], 4.302652729911275 * d.std(ddof=1) / np.sqrt(3)
  )
  flips = [abs(np.dot(s, d)) / 3 for s in itertools.product((1, -1), repeat=3)]
  assert a["sign_flip_p"] == np.mean(np.array(flips) >= d.mean() - 1e-9) == 0.25
  assert a["outcome"] == "better"  # 11 > 4.30 * 1 / sqrt(3) = 2.48
  assert st["b|hgnn"]["outcome"] == "tie" and st["b|hgnn"][
    "diff_pp"
  ] == pytest.approx(0.0)
  der = train.derived_metrics(
    dict(
      per_cell={
        k: dict(test_mean=float(np.mean(_selected(v))))
        for k, v in cells.items()
      },
      per_pair=st,
    )
  )
  assert (der["pairs_better"], der["pairs_worse"], der["pairs_tie"]) == (
    1,
    0,
    1,
  )


def _selected(cell):
  return [
    100 * t
    for z in cell["sweep"]
    if z["lr"] == cell["best_lr"]
    for t in z["test"]
  ]


def test_resume_from_committed_cells_file_computes_only_the_missing_cells(
  tmp_path, monkeypatch
):
  """A run seeded from a committed ``cells.json`` keeps those cells bit for bit,
  runs the rest."""
  cfg = smoke.get_config()
  cfg.backbones = ("gedi", "hgnn")
  ds = cfg.synthetic_fallback[0]

  def fake_cell(key, value):
    sweep = [
      dict(
        lr=0.01, wd=5e-4, val=[value, value / 3], test=[value / 7, 0.1 + 0.2]
      )
    ]
    return dict(
      dataset=ds,
      backbone=key.split("|")[1],
      arm=key.split("|")[2],
      test_mean=100 * value,
      test_std=1 / 3,
      val_mean=2 / 3,
      best_lr=0.01,
      best_wd=5e-4,
      splits=2,
      params=7,
      sweep=sweep,
      first_call_s=1e-300,
      wall_s=1.7976931348623157e308,
    )

  seeded = {
    f"{ds}|gedi|vanilla": fake_cell(f"{ds}|gedi|vanilla", 0.4123456789012345)
  }
  seeded[f"{ds}|gedi|panda"] = fake_cell(f"{ds}|gedi|panda", 0.5987654321098765)
  committed = tmp_path / "results"
  committed.mkdir()
  (committed / "cells.json").write_text(json.dumps(seeded, indent=1))
  calls = []

  def run_cell(config, data, backbone, arm, checkpoint_dir=None):
    calls.append(f"{data.name}|{backbone}|{arm}")
    return fake_cell(calls[-1], 0.25)

  monkeypatch.setattr(train, "run_cell", run_cell)
  cfg.merge_cells_from = (str(committed),)
  workdir = tmp_path / "run"
  metrics = train.train_and_evaluate(cfg, workdir)
  # seeded ones not rerun
  assert sorted(calls) == [f"{ds}|hgnn|panda", f"{ds}|hgnn|vanilla"]

  def floats(x):  # every number as its exact bit pattern
    if isinstance(x, dict):
      return {k: floats(v) for k, v in x.items()}
    if isinstance(x, list):
      return [floats(v) for v in x]
    return float(x).hex() if isinstance(x, float) else x

  # read back from the cell files
  on_disk = core.CellStore(workdir / "cells").to_dict()
  for k, v in seeded.items():
    assert floats(on_disk[k]) == floats(v), k
  assert (
    metrics["per_cell"][f"{ds}|gedi|panda"]["test_mean"]
    == 100 * 0.5987654321098765
  )
  # a second, unseeded run over the same workdir computes nothing
  calls.clear()
  cfg.merge_cells_from = ()
  train.train_and_evaluate(cfg, workdir)
  assert calls == []


def test_ablation_differences_against_hand_computed_values():
  """PANDA - ablation per pair, its mean and 1.96 std / sqrt(n) over the pairs
  that have both."""
  cells = {
    "a|gedi|panda": dict(test_mean=60.0),
    "a|gedi|without_aux": dict(test_mean=55.0),
    "a|gedi|prior_only": dict(test_mean=62.0),
    "b|hgnn|panda": dict(test_mean=50.0),
    "b|hgnn|without_aux": dict(test_mean=49.0),
    "b|hgnn|vanilla": dict(test_mean=40.0),
    "c|hgnn|without_aux": dict(test_mean=10.0),  # no PANDA cell: not a pair
  }
  abl = train.derived_metrics(dict(per_cell=cells))["ablations"]
  assert sorted(abl) == ["prior_only", "without_aux"]
  d = np.array([5.0, 1.0])
  assert abl["without_aux"]["panda_minus_ablation_pp"] == pytest.approx(3.0)
  assert abl["without_aux"]["ci95_pp"] == pytest.approx(
    1.96 * d.std(ddof=1) / np.sqrt(2)
  )
  assert (
    abl["without_aux"]["pairs"],
    abl["without_aux"]["pairs_panda_higher"],
  ) == (2, 2)
  assert abl["prior_only"]["panda_minus_ablation_pp"] == pytest.approx(-2.0)
  # one pair: no interval, the claim is inconclusive
  assert abl["prior_only"]["ci95_pp"] is None
  from experiments.panda.configs import ablations
  from jaxpapers.core import claims

  metrics = dict(derived=dict(ablations=abl))
  verdicts = {
    c["id"]: claims.judge(c, metrics).verdict
    for c in ablations.get_config().claims
  }
  assert verdicts["needs_aux"] == claims.INCONCLUSIVE  # 3.0 +- 7.8 straddles 0
  assert verdicts["needs_gate"] == claims.INCONCLUSIVE  # not run: missing


def _telegram_only(root):
  """A data folder holding a tiny file in Telegram's format (6 nodes, 2
  classes)."""
  import scipy.sparse

  folder = root / "hypergraph" / "telegram"
  folder.mkdir(parents=True)
  adj = scipy.sparse.coo_matrix(
    ([1.0] * 5, ([0, 1, 2, 3, 4], [1, 2, 3, 4, 5])), shape=(6, 6)
  )
  scipy.sparse.save_npz(folder / "telegram_adj.npz", adj.tocsr())
  np.save(folder / "telegram_labels.npy", np.array([0, 0, 0, 1, 1, 1]))
  return root


@pytest.fixture
def no_shared_data(tmp_path, monkeypatch):
  from jaxpapers.core import data as core_data

  monkeypatch.setattr(core_data, "_SIBLING_SHARED", tmp_path / "no_shared")
  monkeypatch.delenv(core.DATA_DIR_ENV_VAR, raising=False)


def test_a_data_dir_in_the_environment_that_does_not_exist_is_an_error(
  tmp_path, monkeypatch, no_shared_data
):
  """Never a silent switch to ../shared/data or to the synthetic sets."""
  from experiments.panda.configs import default

  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(tmp_path / "nowhere"))
  with pytest.raises(
    FileNotFoundError, match=(r"\$JAXPAPERS_DATA_DIR = '.*nowhere' was given")
  ):
    train.load_datasets(default.get_config())
  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(_telegram_only(tmp_path / "d")))
  with pytest.raises(
    FileNotFoundError, match=(r"missing data file: .*texas\.npz")
  ):
    # the folder lacks the default's datasets
    train.load_datasets(default.get_config())


def test_the_run_records_which_data_it_used(
  tmp_path, monkeypatch, no_shared_data
):
  from experiments.panda.configs import default

  config = default.get_config()
  data, source = train.load_datasets(config)
  assert list(data) == list(config.synthetic_fallback)
  assert source.startswith(
    "synthetic (make_synthetic; no data_dir or $JAXPAPERS_DATA_DIR given"
  )
  config.datasets = ("telegram",)
  root = _telegram_only(tmp_path / "d")
  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(root))
  data, source = train.load_datasets(config)
  assert list(data) == ["telegram"] and data["telegram"].num_nodes == 6
  # no local path
  assert source == "hypergraph/ in the data folder found as $JAXPAPERS_DATA_DIR"
  config.data_dir = str(root)
  assert train.load_datasets(config)[1] == f"{root}/hypergraph"  # as given
