"""Claim code of experiments/panda (train.py and search.py): mean PANDA -
vanilla gain over (dataset, backbone) pairs, its interval, per-pair paired
statistics and the ablations."""

import importlib
import math

import numpy as np
import pytest

MODULES = {
  "train": "experiments.panda.train",
  "search": "experiments.panda.search",
  # the search's trial draws and selection
  "search_lib": "jaxpapers.panda._search",
}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


@pytest.fixture(name="search")
def _search():
  return importlib.import_module(MODULES["search"])


@pytest.fixture(name="search_lib")
def _search_lib():
  return importlib.import_module(MODULES["search_lib"])


def _cell(test_mean, test_std=1.0):
  return {"test_mean": test_mean, "test_std": test_std}


def _cells():
  # PANDA - vanilla: cora|hgnn +2, cora|unigcn -1, telegram|hgnn +8 (mean 3, median 2).
  return {
    "cora|hgnn|vanilla": _cell(70.0),
    "cora|hgnn|panda": _cell(72.0),
    "cora|hgnn|vanilla_matched": _cell(71.0),
    "cora|hgnn|without_gate": _cell(71.5),
    "cora|unigcn|vanilla": _cell(60.0),
    "cora|unigcn|panda": _cell(59.0),
    "cora|unigcn|without_gate": _cell(61.0),
    "telegram|hgnn|vanilla": _cell(40.0),
    "telegram|hgnn|panda": _cell(48.0),
    "telegram|hgnn|vanilla_matched": _cell(45.0),
    "pubmed|hgnn|vanilla": _cell(50.0),  # no PANDA cell: not a pair
  }


def test_improvement(train):
  pairs = [
    "cora|hgnn",
    "telegram|hgnn",
    "pubmed|hgnn",
    "cora|unigcn",
    "pubmed|unigcn",
  ]
  imp = train.improvement(_cells(), pairs, ["hgnn", "unigcn", "hypergcn"])
  # pairs with both
  assert list(imp["deltas"]) == ["cora|hgnn", "telegram|hgnn", "cora|unigcn"]
  assert imp["mean_improvement_pp"] == pytest.approx(3.0)
  assert imp["per_backbone_improvement_pp"] == {
    "hgnn": pytest.approx(5.0),
    "unigcn": pytest.approx(-1.0),
    "hypergcn": None,
  }
  assert imp["cells_improved"] == 2


def test_derived_metrics(train):
  per_pair = {
    "a": {"outcome": "better"},
    "b": {"outcome": "tie"},
    "c": {"outcome": ("tie")},
  }
  d = train.derived_metrics({"per_cell": _cells(), "per_pair": per_pair})
  assert d["pairs"] == 3
  sd = np.std([2.0, -1.0, 8.0], ddof=1)  # sample std of the pair differences
  assert d["mean_improvement_ci95_pp"] == pytest.approx(
    1.96 * sd / math.sqrt(3)
  )
  # PANDA - matched
  assert d["mean_improvement_vs_matched_pp"] == pytest.approx((1.0 + 3.0) / 2)
  assert d["mean_matched_minus_vanilla_pp"] == pytest.approx((1.0 + 5.0) / 2)
  assert d["mean_improvement_without_telegram_pp"] == pytest.approx(
    (2.0 - 1.0) / 2
  )
  assert (d["pairs_better"], d["pairs_worse"], d["pairs_tie"]) == (1, 0, 2)
  ab = d["ablations"]["without_gate"]
  assert ab["panda_minus_ablation_pp"] == pytest.approx((0.5 - 2.0) / 2)
  assert ab["ci95_pp"] == pytest.approx(
    1.96 * np.std([0.5, -2.0], ddof=1) / math.sqrt(2)
  )
  assert (ab["pairs"], ab["pairs_panda_higher"]) == (2, 1)


def _split_cell(split_acc):
  return {
    "sweep": [{"lr": 0.1, "wd": 0.0, "val": [0.5], "test": split_acc}],
    "best_lr": 0.1,
    "best_wd": 0.0,
  }


def test_pair_statistics(train):
  cells = {
    # d = (2, 1, 4) pp: mean 7/3, sample std sqrt(7/3), t half-width 4.303 sqrt(7/3) / sqrt(3):
    # a tie; sign flips reaching |mean| 7/3: all + and all - (2 of 8).
    "cora|hgnn|panda": _split_cell([0.80, 0.82, 0.84]),
    "cora|hgnn|vanilla": _split_cell([0.78, 0.81, 0.80]),
    # d = (-2, -2.1, -1.9): clearly worse.
    "dblp|hgnn|panda": _split_cell([0.50, 0.50, 0.50]),
    "dblp|hgnn|vanilla": _split_cell([0.52, 0.521, 0.519]),
  }
  out = train.pair_statistics(cells)
  c = out["cora|hgnn"]
  assert c["diffs_pp"] == pytest.approx([2.0, 1.0, 4.0])
  assert c["diff_pp"] == pytest.approx(7 / 3)
  assert c["t95_pp"] == pytest.approx(
    4.302653 * math.sqrt(7 / 3) / math.sqrt(3), rel=1e-6
  )
  assert c["sign_flip_p"] == pytest.approx(0.25)
  assert c["outcome"] == "tie"
  assert out["dblp|hgnn"]["outcome"] == "worse"
  assert out["dblp|hgnn"]["diff_pp"] == pytest.approx(-2.0)


def test_best_point_by_validation(train):
  sweep = [
    {"lr": 0.1, "val": [0.5, 0.7], "test": [0.9, 0.9]},
    # mean val 0.7: the first maximum
    {"lr": 0.01, "val": [0.8, 0.6], "test": [0.1, 0.1]},
    {"lr": 0.001, "val": [0.7, 0.7], "test": [0.2, 0.2]},
  ]
  assert train._best_point(sweep)["lr"] == 0.01
  cell = {"sweep": sweep, "best_lr": 0.001, "best_wd": None}
  sweep[2]["wd"] = None
  # the stored choice
  np.testing.assert_allclose(train._selected_tests(cell), [20.0, 20.0])


def test_search_select(search_lib):
  # the search's selection (public as panda.select_trial)
  select = search_lib.select_trial
  trials = [{"val": [0.6, 0.8]}, {"val": [0.8, 0.6]}, {"val": [0.6, 0.6]}]
  assert select(trials) == 0  # ties within 1e-9: the first one
  trials[1]["val"] = [0.8, 0.61]
  assert select(trials) == 1


def test_search_final_cell(search):
  final = {
    "test_runs": [[80.0, 70.0], [90.0, 60.0]],  # [inits, splits], %
    "val_runs": [[1.0, 1.0], [1.0, 1.0]],
    "best_epoch_runs": [[1, 1], [1, 1]],
    "splits": 2,
    "inits": 2,
    "params": 10,
    "hp": {},
    "cpu_s": 1.0,
  }
  c = search.final_cell([{"val": [0.5], "cpu_s": 2.0}], final)
  assert c["test_mean"] == pytest.approx(75.0)
  assert c["test_std"] == pytest.approx(np.std([80, 70, 90, 60]))
  # per split, over the inits
  assert c["split_test"] == pytest.approx([0.85, 0.65])
