"""Claim code of experiments/leansearch: paired per-query gains pooled over
splits."""

import importlib
import math

import numpy as np
import pytest

MODULES = {
  "evaluate": "experiments.leansearch.evaluate",
  "benchmark": "jaxpapers.leansearch._benchmark",
}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="benchmark")
def _benchmark():
  return importlib.import_module(MODULES["benchmark"])


def _cells():
  def split(hier, flat, premise, flat_premise, single_other):
    single = lambda v: {"standard": {"ndcg": v}, **single_other}
    return {
      "hier": {"single": single(hier), "premise": premise},
      "flat": {"single": single(flat), "premise": flat_premise},
    }

  p0 = {
    "random": {"recall": [0.0, 0.0, 0.0]},
    "frequency": {"recall": [0.1, 0.1, 0.1]},
    "bm25_statements": {"recall": [0.9, 0.9, 0.0]},
    "dense": {"recall": [0.5, 0.5, 0.4]},
    "standard": {"recall": [0.5, 0.5, 0.5]},
    "reasoning_first_round": {"recall": [0.2, 0.2, 0.2]},
    "reasoning_dense": {"recall": [0.3, 0.3, 0.3]},
    "reasoning": {"recall": [1.0, 0.6, 0.5]},
  }
  p1 = {
    "random": {"recall": [0.0, 0.0]},
    "frequency": {"recall": [0.1, 0.1]},
    "bm25_statements": {"recall": [0.4, 0.4]},
    "dense": {"recall": [0.5, 0.5]},
    "standard": {"recall": [0.5, 0.5]},
    "reasoning_first_round": {"recall": [0.2, 0.2]},
    "reasoning_dense": {"recall": [0.3, 0.3]},
    "reasoning": {"recall": [0.4, 0.9]},
  }
  f0 = {
    "dense": {"recall": [0.0, 0.0, 0.0]},
    "standard": {"recall": [0.0, 0.0, 0.0]},
  }
  f1 = {"dense": {"recall": [0.0, 0.0]}, "standard": {"recall": [0.0, 0.0]}}
  o0 = {"bm25": {"ndcg": [0.3, 0.3, 0.3]}, "dense": {"ndcg": [0.1, 0.2, 0.3]}}
  o1 = {"bm25": {"ndcg": [0.3, 0.3]}, "dense": {"ndcg": [0.4, 0.5]}}
  return [
    split([0.5, 0.7, 0.9], [0.4, 0.8, 0.6], p0, f0, o0),
    split([0.2, 0.6], [0.2, 0.3], p1, f1, o1),
  ]


def test_ci_is_normal_half_width(evaluate):
  x = [0.1, -0.1, 0.3, 0.0, 0.3]
  assert evaluate._ci(x) == pytest.approx(
    1.96 * math.sqrt(0.128 / 4) / math.sqrt(5)
  )
  assert math.isnan(evaluate._ci([1.0]))


def test_derived_metrics(evaluate):
  d = evaluate.derived_metrics(_cells())
  # hier - flat nDCG per query over both splits: (0.1, -0.1, 0.3, 0, 0.3).
  assert d["hier_gain_ndcg10"] == pytest.approx(0.12)
  assert d["hier_gain_ndcg10_ci"] == pytest.approx(
    1.96 * math.sqrt(0.128 / 4) / math.sqrt(5)
  )
  assert (
    d["hier_gain_ndcg10_bm25"] == 0.0 and d["hier_gain_ndcg10_dense"] == 0.0
  )
  # The strongest of every other stage and ablation by its mean over all
  # queries: BM25 0.52 (standard 0.5, dense 0.48; the mean of the split means
  # would make standard and BM25 tie at 0.5), so reasoning - BM25 per query:
  # (0.1, -0.3, 0.5, 0, 0.5).
  assert d["best_baseline"] == "bm25_statements"
  assert d["best_baseline_recall10"] == pytest.approx(0.52)
  assert d["reasoning_recall10"] == pytest.approx(0.68)
  assert d["reasoning_gain_recall10"] == pytest.approx(0.16)
  assert d["reasoning_gain_recall10_ci"] == pytest.approx(
    1.96 * math.sqrt(0.472 / 4) / math.sqrt(5)
  )
  assert d["reasoning_minus_dense"] == pytest.approx(0.68 - 0.48)
  assert d["reasoning_minus_reasoning_dense"] == pytest.approx(0.68 - 0.3)
  assert d["reasoning_minus_standard_flat"] == pytest.approx(0.68)
  assert d["n_single_queries"] == 5 and d["n_premise_queries"] == 5


def test_the_strongest_system_may_be_a_stage_or_an_ablation(evaluate):
  cells = _cells()
  # The dense first stage alone becomes the strongest (0.9 everywhere): it is
  # the reference.
  for c in cells:
    c["hier"]["premise"]["dense"]["recall"] = [0.9] * len(
      c["hier"]["premise"]["dense"]["recall"]
    )
  d = evaluate.derived_metrics(cells)
  assert d["best_baseline"] == "dense"
  assert d["reasoning_gain_recall10"] == pytest.approx(0.68 - 0.9)
  # A flat-text ablation or reasoning over dense alone counts as well.
  for c in cells:
    n = len(c["flat"]["premise"]["standard"]["recall"])
    c["flat"]["premise"]["standard"]["recall"] = [1.0] * n
  assert evaluate.derived_metrics(cells)["best_baseline"] == "standard_flat"
  for c in cells:
    n = len(c["hier"]["premise"]["reasoning_dense"]["recall"])
    c["hier"]["premise"]["reasoning_dense"]["recall"] = [1.0] * n
    c["flat"]["premise"]["standard"]["recall"] = [0.0] * n
  assert evaluate.derived_metrics(cells)["best_baseline"] == "reasoning_dense"


def test_premise_recall_reads_the_named_variant(evaluate):
  cells = _cells()
  np.testing.assert_array_equal(
    evaluate.premise_recall(cells, "dense"), [0.5, 0.5, 0.4, 0.5, 0.5]
  )
  np.testing.assert_array_equal(
    evaluate.premise_recall(cells, "dense_flat"), [0.0] * 5
  )


def test_per_query_values_and_rejudge_recompute_the_derived_block(evaluate):
  cells = _cells()
  for c in cells:  # what a split cell holds beyond the per-query values
    for v in ("hier", "flat"):
      for s in ("bm25", "dense", "standard"):
        c[v]["single"][s]["recall"] = [0.0] * len(
          c[v]["single"]["standard"]["ndcg"]
        )
      for r in c[v]["premise"].values():
        r["covered"] = [0.0] * len(r["recall"])
    c["hier"]["loss_first"] = 1.0
  kept = [evaluate.per_query_values(c) for c in cells]
  assert "covered" not in kept[0]["hier"]["premise"]["dense"]
  assert "recall" not in kept[0]["hier"]["single"]["dense"]
  metrics = {"per_query": kept, "derived": {"stale": 1}}
  assert evaluate.rejudge_metrics(metrics, {}) == evaluate.derived_metrics(
    _cells()
  )


def test_rank_by_scores_best_first(benchmark):
  scores = np.array([[0.2, 0.9, 0.5, 0.95], [0.3, 0.3, 0.1, 0.0]])
  valid = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
  np.testing.assert_array_equal(
    benchmark.rank_by_scores(scores, valid, 2), [[1, 2], [0, 1]]
  )
