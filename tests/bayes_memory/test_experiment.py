"""The smoke experiment end to end (with resume from the cell store), and the
notebook."""

import json
import math

import numpy as np
import pytest

from experiments.bayes_memory import train
from experiments.bayes_memory.configs import default, full, smoke
from jaxpapers import bayes_memory as bm
from jaxpapers import core
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert {"accuracy.png", "reads_vs_accuracy.png"} <= set(rec["plots"])
  assert "| distilled_gated |" in rec["table_markdown"]
  # smoke: measured, not judged
  assert all(c["verdict"] is None for c in rec["claims"])
  d = metrics["derived"]
  assert set(d["accuracy"]) == set(bm.METHODS + bm.GREEDY_METHODS)
  for m, a in d["accuracy"].items():
    assert 0.0 <= a <= 1.0, m
  # structural facts that hold for any model
  assert (
    d["read_fraction"]["no_memory"] == 0.0
    and d["read_fraction"]["all_memory"] == 1.0
  )
  assert d["turns_read_fraction"]["recency"] == 1.0 / cfg.n_turns
  assert (
    d["read_fraction"]["oracle_bf_gated"] <= d["read_fraction"]["oracle_bf"]
  )
  # the oracle picks the turn with the largest answer likelihood: none of the
  # single-turn selectors can have a higher mean log-likelihood
  ll = d["loglik_per_token"]
  for m in ("random", "recency", "bm25", "similarity", "distilled"):
    assert ll["oracle_bf"] >= ll[m] - 1e-9, m
  # the greedy set only adds turns that raise log p(y): at least the top-1
  # turn's likelihood
  assert ll["oracle_bf_greedy"] >= ll["oracle_bf"] - 1e-6
  assert sum(d["greedy_set_size"]["histogram"]) == d["n_questions"]
  n_cells = len(list((tmp_path / "cells").iterdir()))
  assert n_cells == len(cfg.seeds) * cfg.n_dialogues
  # Resume: a rerun reads every dialogue's LM scores back instead of scoring
  # again.
  monkeypatch.setattr(
    train,
    "score_dialogues",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError),
  )
  cfg.score_missing = False  # analyse the stored cells only: here all of them
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["derived"]["n_dialogues_analysed"] == cfg.n_dialogues
  np.testing.assert_equal(again["derived"]["accuracy"], d["accuracy"])


def test_scored_dialogues_keeps_indices_complete_for_every_seed():
  cfg = smoke.get_config()
  cfg.n_dialogues = 4
  store = {"s0-d0", "s1-d0", "s0-d1", "s1-d2", "s0-d3", "s1-d3"}
  assert train.scored_dialogues(store, lambda s, i: f"s{s}-d{i}", cfg) == [0, 3]


def _decisive_derived(**change):
  """A derived block on which every claim of the default config holds."""
  d = {
    "n_questions": 204,
    "min_seed": 3,
    "tau_placebo": math.log(10.0),
    "accuracy_gold_turn_lo": 0.8,
    "accuracy": {"distilled": 0.7},
    "accuracy_ci": {"distilled": 0.07},
    "acc_gain_distilled_vs_best_retriever": 0.1,
    "acc_gain_distilled_vs_best_retriever_ci": 0.05,
    "acc_gain_oracle_vs_best_retriever": 0.2,
    "acc_gain_oracle_vs_best_retriever_ci": 0.05,
    "read_fraction": {"distilled_gated": 0.8, "distilled_placebo_gated": 0.7},
    "acc_gain_gated_vs_ungated": 0.0,
    "acc_gain_gated_vs_ungated_ci": 0.01,
    "distilled_gain_ratio": 0.8,
    "distilled_gain_ratio_ci": 0.1,
    "acc_gain_placebo_gated_vs_ungated": 0.0,
    "acc_gain_placebo_gated_vs_ungated_ci": 0.01,
  }
  d.update(change)
  return {"derived": d}


def _verdicts(metrics):
  return {c["id"]: core.judge(c, metrics) for c in default.get_config().claims}


def test_the_default_claims_hold_on_the_registered_setup():
  v = _verdicts(_decisive_derived())
  assert {k: x.verdict for k, x in v.items()} == dict.fromkeys(v, "held")
  assert v["oracle_bf_beats_retrievers"].oracle


def test_another_gate_question_count_or_seen_seeds_decide_nothing():
  for change in ({"n_questions": 84}, {"n_questions": 300}, {"min_seed": 0}):
    v = _verdicts(_decisive_derived(**change))
    assert all(
      x.verdict == "inconclusive" and x.guard == "requires" for x in v.values()
    ), change
  v = _verdicts(_decisive_derived(tau_placebo=1.0))
  placebo = {"placebo_access_reads_less", "placebo_access_no_loss"}
  for cid, x in v.items():
    assert (x.verdict, x.guard) == (
      ("inconclusive", "requires") if cid in placebo else ("held", "rule")
    )


def test_a_reader_that_cannot_use_the_gold_turn_decides_no_selection_claim():
  v = _verdicts(_decisive_derived(accuracy_gold_turn_lo=0.55))
  for cid in (
    "distilled_beats_retrievers",
    "oracle_bf_beats_retrievers",
    "distilled_keeps_gain",
  ):
    assert (v[cid].verdict, v[cid].guard) == ("inconclusive", "requires")
  assert v["access_reads_less"].verdict == "held"


def test_full_config_registers_its_own_question_count():
  cfg = full.get_config()
  n = len(cfg.seeds) * cfg.n_dialogues * cfg.n_queries
  req = [
    r for r in cfg.claims[0]["requires"] if r["metric"] == "derived.n_questions"
  ]
  assert {r["value"] for r in req} == {n} and min(cfg.seeds) >= 3


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/bayes_memory.ipynb", timeout=300)


@pytest.mark.slow
def test_shared_prompt_scoring_gives_the_row_path_scores():
  cfg = smoke.get_config()
  model = bm.load_model(cfg.model, seed=cfg.seed)
  fn = bm.make_logprob_fn(model[1], model[0], max_targets=cfg.max_targets)
  ds = bm.make_preference_dialogues(
    0, n_dialogues=2, n_turns=cfg.n_turns, n_queries=2
  )
  cfg.greedy_k = 0
  rows = train.score_dialogues(ds, model, fn, cfg)
  cfg.scoring = "shared"
  shared = train.score_dialogues(ds, model, fn, cfg)
  for a, b in zip(rows, shared):
    for k in ("lp_y", "lp_alt"):
      np.testing.assert_allclose(b[k], a[k], rtol=1e-5, atol=1e-5)
    assert b["padded_tokens"] < a["padded_tokens"]
