"""The numbers the claim guards read that re-judging derives from committed metrics.

Each is checked against a hand-computed value, so that a swapped operand, a best <-> worst
selection or a wrong logarithm fails here.
"""

import json
import pathlib

import numpy as np
import pytest

from experiments import reproduce
from experiments.cs_clip import train as cs_clip_train
from experiments.dense_limits import train as dense_limits_train
from experiments.leansearch import train as leansearch_train

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("loss", [1.0, 2.302, 1e-3])
def test_the_constant_predictors_width_slope_is_zero(loss):
  assert dense_limits_train.constant_slope((16, 64, 256, 512), loss) == pytest.approx(0, abs=1e-12)


def test_dense_limits_rejudge_adds_the_constant_slope_per_task_and_keeps_the_rest():
  metrics = {"derived": {"bumps": {"trivial_train_loss": 1.0, "slope_dense": -0.002}, "x": 1}}
  out = dense_limits_train.rejudge_metrics(metrics, {"tasks": ["bumps"], "widths": [16, 64]})
  assert out["bumps"]["slope_dense"] == -0.002 and out["x"] == 1
  assert out["bumps"]["slope_constant"] == pytest.approx(0.0, abs=1e-12)
  assert "slope_constant" not in metrics["derived"]["bumps"]  # the input is not modified


def _premise(**means):
  return {f"{k}/recall": {"mean": v, "std": 0.0} for k, v in means.items()}


def test_dense_first_stage_gain_is_against_the_best_baseline():
  # best of (standard 0.25, bm25 0.23, frequency 0.07) is standard: 0.34 - 0.25.
  summary = {"premise": _premise(dense=0.34, standard=0.25, bm25_statements=0.23, frequency=0.07)}
  assert leansearch_train.dense_first_stage_gain(summary) == pytest.approx(0.09)
  summary = {"premise": _premise(dense=0.34, standard=0.10, bm25_statements=0.30, frequency=0.07)}
  assert leansearch_train.dense_first_stage_gain(summary) == pytest.approx(0.04)


def test_leansearch_rejudge_refuses_unequal_splits():
  summary = {"premise": _premise(dense=0.3, standard=0.2, bm25_statements=0.1, frequency=0.0)}
  metrics = {"summary": summary, "derived": {"a": 1}, "per_split": [{"n_premise": 200}] * 3}
  out = leansearch_train.rejudge_metrics(metrics, {})
  assert out == {"a": 1, "dense_gain_recall10": pytest.approx(0.1)}
  metrics["per_split"] = [{"n_premise": 200}, {"n_premise": 100}]
  with pytest.raises(ValueError, match="different sizes"):
    leansearch_train.rejudge_metrics(metrics, {})


def test_cs_clip_derived_has_the_methods_own_accuracy_for_the_chance_guard():
  w = {
    "clip": {"ht_relation": [0.40, 0.40, 0.38], "ht_entity": [0.8, 0.8, 0.8]},
    "clip_ft": {"ht_relation": [0.38, 0.42, 0.37], "r1": [0.3] * 3, "ht_entity": [0.8] * 3},
    "cs_ft": {"ht_relation": [0.52, 0.54, 0.48], "r1": [0.3] * 3, "ht_entity": [0.9] * 3},
  }
  out = cs_clip_train.derived_metrics({"weak_order": w}, {"relation": 0.513})
  assert out["cs_ht_relation"] == pytest.approx((0.52 + 0.54 + 0.48) / 3)
  sd = np.std([0.52, 0.54, 0.48], ddof=1)
  assert out["cs_ht_relation_ci"] == pytest.approx(4.303 * sd / np.sqrt(3))
  assert out["cs_minus_clip_ft_ht_relation"] == pytest.approx((0.14 + 0.12 + 0.11) / 3)
  again = cs_clip_train.rejudge_metrics(
    {"summary": {"weak_order": w}, "chance": {"relation": 0.5}}, {}
  )
  assert again["cs_ht_relation"] == out["cs_ht_relation"]


@pytest.mark.parametrize("paper", ["cs_clip", "dense_limits", "leansearch"])
def test_rejudge_hooks_recompute_the_committed_derived_values(paper):
  """Every value the committed run derived is derived again, identically, from its metrics."""
  rec = json.loads((ROOT / "experiments" / paper / "results" / "results.json").read_text())
  train = reproduce._import("experiments", ROOT / "experiments", f"{paper}.train")
  derived, by = reproduce._derive(train, rec["metrics"], rec["config"])
  assert by.endswith("rejudge_metrics")

  def flat(d, pre=""):
    for k, v in d.items():
      if isinstance(v, dict):
        yield from flat(v, f"{pre}{k}.")
      else:
        yield f"{pre}{k}", v

  old = dict(flat(rec["metrics"]["derived"]))
  new = dict(flat(derived))
  assert set(old) <= set(new)
  for k, v in old.items():
    assert new[k] == (pytest.approx(v, rel=1e-9, abs=1e-12) if isinstance(v, float) else v), k
