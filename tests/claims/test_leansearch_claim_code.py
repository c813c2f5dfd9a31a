"""Claim code of experiments/leansearch: paired per-query gains pooled over splits."""

import importlib
import math

import numpy as np
import pytest

MODULES = {"train": "experiments.leansearch.train"}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _cells():
  def split(hier, flat, premise):
    return {
      "hier": {"single": {"standard": {"ndcg": hier}}, "premise": premise},
      "flat": {"single": {"standard": {"ndcg": flat}}},
    }

  p0 = {
    "standard": {"recall": [0.5, 0.5, 0.5]},
    "bm25_statements": {"recall": [0.9, 0.9, 0.0]},
    "frequency": {"recall": [0.1, 0.1, 0.1]},
    "reasoning": {"recall": [1.0, 0.6, 0.5]},
  }
  p1 = {
    "standard": {"recall": [0.5, 0.5]},
    "bm25_statements": {"recall": [0.4, 0.4]},
    "frequency": {"recall": [0.1, 0.1]},
    "reasoning": {"recall": [0.4, 0.9]},
  }
  return [split([0.5, 0.7, 0.9], [0.4, 0.8, 0.6], p0), split([0.2, 0.6], [0.2, 0.3], p1)]


def test_ci_is_normal_half_width(train):
  x = [0.1, -0.1, 0.3, 0.0, 0.3]
  assert train._ci(x) == pytest.approx(1.96 * math.sqrt(0.128 / 4) / math.sqrt(5))
  assert math.isnan(train._ci([1.0]))


def test_derived_metrics(train):
  d = train.derived_metrics(_cells())
  # hier - flat nDCG per query over both splits: (0.1, -0.1, 0.3, 0, 0.3).
  assert d["hier_gain_ndcg10"] == pytest.approx(0.12)
  assert d["hier_gain_ndcg10_ci"] == pytest.approx(1.96 * math.sqrt(0.128 / 4) / math.sqrt(5))
  # Best baseline by its mean over all queries: BM25 0.52 (standard 0.5; the mean of the split
  # means would tie them at 0.5), so reasoning - BM25 per query: (0.1, -0.3, 0.5, 0, 0.5).
  assert d["best_baseline"] == "bm25_statements"
  assert d["reasoning_gain_recall10"] == pytest.approx(0.16)
  assert d["reasoning_gain_recall10_ci"] == pytest.approx(
    1.96 * math.sqrt(0.472 / 4) / math.sqrt(5)
  )
  assert d["n_single_queries"] == 5 and d["n_premise_queries"] == 5


def test_rank_by_scores_best_first(train):
  scores = np.array([[0.2, 0.9, 0.5, 0.95], [0.3, 0.3, 0.1, 0.0]])
  valid = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
  np.testing.assert_array_equal(train._rank_by_scores(scores, valid, 2), [[1, 2], [0, 1]])


def _premise(**means):
  return {f"{k}/recall": {"mean": v, "std": 0.0} for k, v in means.items()}


def test_dense_first_stage_gain_is_against_the_best_baseline(train):
  # best of (standard 0.25, bm25 0.23, frequency 0.07) is standard: 0.34 - 0.25.
  summary = {"premise": _premise(dense=0.34, standard=0.25, bm25_statements=0.23, frequency=0.07)}
  assert train.dense_first_stage_gain(summary) == pytest.approx(0.09)
  summary = {"premise": _premise(dense=0.34, standard=0.10, bm25_statements=0.30, frequency=0.07)}
  assert train.dense_first_stage_gain(summary) == pytest.approx(0.04)


def test_rejudge_adds_the_dense_gain_and_refuses_unequal_splits(train):
  summary = {"premise": _premise(dense=0.3, standard=0.2, bm25_statements=0.1, frequency=0.0)}
  metrics = {"summary": summary, "derived": {"a": 1}, "per_split": [{"n_premise": 200}] * 3}
  assert train.rejudge_metrics(metrics, {}) == {"a": 1, "dense_gain_recall10": pytest.approx(0.1)}
  metrics["per_split"] = [{"n_premise": 200}, {"n_premise": 100}]
  with pytest.raises(ValueError, match="different sizes"):
    train.rejudge_metrics(metrics, {})
