"""Claim code of experiments/cs_clip: seed-paired differences of the fine-tuning arms."""

import importlib
import types

import numpy as np
import pytest

MODULES = {"train": "experiments.cs_clip.train"}

T3 = 4.303  # t_{0.975, 2}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _evals(ht_relation, r1=0.0, ht_entity=0.0):
  out = {m: 0.0 for m in ("ht_all", "relation_foil_acc", "ht_ties")}
  out.update(ht_relation=ht_relation, r1=r1, ht_entity=ht_entity)
  return out


# Per seed 0, 1, 2 (half-truth relation accuracy, R@1).
ARMS = {
  "clip_ft": ([0.5, 0.8, 0.6], [0.30, 0.40, 0.50]),
  "negclip_ft": ([0.7, 0.7, 0.7], [0.30, 0.30, 0.30]),
  "cs_ft": ([0.6, 0.7, 0.9], [0.25, 0.40, 0.40]),
}
CLIP = [0.5, 0.6, 0.95]  # pre-trained weak-order encoder, per seed (mean 0.683, median 0.6)


def _grid(order=(2, 0, 1)):
  """Runs listed out of seed order, so that only sorting by seed pairs them."""
  pre = [
    {"encoder": "weak_order", "seed": s, "evals": _evals(CLIP[s], ht_entity=0.1)} for s in order
  ]
  pre += [{"encoder": "bow", "seed": s, "evals": _evals(0.5)} for s in order]
  ft = []
  for i, (arm, (ht, r1)) in enumerate(ARMS.items()):
    o = order[i:] + order[:i]  # a different order per arm
    ft += [
      {"encoder": "weak_order", "seed": s, "arm": arm, "evals": _evals(ht[s], r1[s])} for s in o
    ]
  return {"pretrain": pre, "finetune": ft}


def _cfg():
  return types.SimpleNamespace(encoders=("weak_order", "bow"), arms=tuple(ARMS))


def test_summarize_orders_every_model_by_seed(train):
  s = train.summarize(_cfg(), _grid())
  w = s["weak_order"]
  assert w["clip"]["ht_relation"] == CLIP
  for arm, (ht, r1) in ARMS.items():
    assert w[arm]["ht_relation"] == ht, arm
    assert w[arm]["r1"] == r1, arm
  assert "cs_ft" not in s["bow"]


def test_derived_metrics(train):
  summary = train.summarize(_cfg(), _grid())
  d = train.derived_metrics(summary, {"relation": 0.5, "entity": 0.5, "all": 0.5})
  assert d["baseline_ht_relation"] == pytest.approx((0.5 + 0.6 + 0.95) / 3)
  sd = np.std(CLIP, ddof=1)
  assert d["baseline_ht_relation_ci"] == pytest.approx(T3 * sd / np.sqrt(3))
  assert d["bow_baseline_ht_relation"] == pytest.approx(0.5)
  assert d["chance_ht_relation"] == 0.5
  # cs_ft - clip_ft per seed: (0.1, -0.1, 0.3): mean 0.1, sample std 0.2.
  assert d["cs_minus_clip_ft_ht_relation"] == pytest.approx(0.1)
  assert d["cs_minus_clip_ft_ht_relation_ci"] == pytest.approx(T3 * 0.2 / np.sqrt(3))
  # R@1 per seed: (-0.05, 0, -0.1): mean -0.05, sample std 0.05.
  assert d["cs_minus_clip_ft_r1"] == pytest.approx(-0.05)
  assert d["cs_minus_clip_ft_r1_ci"] == pytest.approx(T3 * 0.05 / np.sqrt(3))
  # cs_ft - negclip_ft per seed: (-0.1, 0, 0.2): mean 1/30.
  assert d["cs_minus_negclip_ft_ht_relation"] == pytest.approx(0.1 / 3)
  sd = np.sqrt(((-0.1 - 1 / 30) ** 2 + (1 / 30) ** 2 + (0.2 - 1 / 30) ** 2) / 2)
  assert d["cs_minus_negclip_ft_ht_relation_ci"] == pytest.approx(T3 * sd / np.sqrt(3))


def test_the_cs_models_own_accuracy_for_the_chance_guard(train):
  w = {
    "clip": {"ht_relation": [0.40, 0.40, 0.38], "ht_entity": [0.8, 0.8, 0.8]},
    "clip_ft": {"ht_relation": [0.38, 0.42, 0.37], "r1": [0.3] * 3, "ht_entity": [0.8] * 3},
    "cs_ft": {"ht_relation": [0.52, 0.54, 0.48], "r1": [0.3] * 3, "ht_entity": [0.9] * 3},
  }
  out = train.derived_metrics({"weak_order": w}, {"relation": 0.513})
  assert out["cs_ht_relation"] == pytest.approx((0.52 + 0.54 + 0.48) / 3)
  sd = np.std([0.52, 0.54, 0.48], ddof=1)
  assert out["cs_ht_relation_ci"] == pytest.approx(4.303 * sd / np.sqrt(3))
  again = train.rejudge_metrics({"summary": {"weak_order": w}, "chance": {"relation": 0.5}}, {})
  assert again["cs_ht_relation"] == out["cs_ht_relation"]
