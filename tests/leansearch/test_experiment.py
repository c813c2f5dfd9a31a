"""The smoke experiment end to end (with resume), the claim inputs, and the
notebook."""

import json

import numpy as np
import pytest

from experiments.leansearch import evaluate, train
from experiments.leansearch.configs import default, smoke
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert "Global premise retrieval" in rec["table_markdown"]
  assert {"single_query.png", "premise.png", "rounds.png"} <= set(rec["plots"])
  assert metrics["corpus"]["files"] == 3
  s = metrics["summary"]
  for key, v in {**s["single"], **s["premise"]}.items():
    assert 0.0 <= v["mean"] <= 1.0, key
  # One recall per round (rounds after an early stop repeat the final ranking).
  for name in ("reasoning", "reasoning_dense"):
    assert len(s[f"{name}_rounds"]["mean"]) == cfg.big_loop + 1
  assert s["premise"]["reasoning_first_round/recall"]["mean"] == pytest.approx(
    s["reasoning_rounds"]["mean"][0]
  )
  d = metrics["derived"]
  assert d["best_baseline"] in evaluate.COMPARED
  assert {c["claim_id"] for c in rec["claims"]} == {
    c["id"] for c in default.CLAIMS
  }
  # Every stage and ablation sits in the reasoning claim's table.
  claim = next(
    c for c in rec["claims"] if c["claim_id"].startswith("reasoning")
  )
  assert len(claim["baselines"]) == len(evaluate.COMPARED)
  assert all(v is not None for v in claim["baselines"].values())
  # The derived block is recomputed from the per-query values the results keep.
  assert evaluate.rejudge_metrics(metrics, rec["config"]) == d
  # Resume: a rerun reads every split back instead of training again.
  monkeypatch.setattr(
    train.L,
    "train_dual_encoder",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError),
  )
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["derived"] == metrics["derived"]


def _cell(h_std, f_std, prem):
  single = lambda v: {
    s: {"ndcg": v, "recall": v} for s in evaluate.SINGLE_SYSTEMS
  }
  zeros = [0.0] * len(prem["reasoning"])
  full = {
    s: zeros
    for s in (*evaluate.COMPARED, "reasoning")
    if not s.endswith("_flat")
  }
  full.update(prem)
  flat = {s: {"recall": zeros} for s in ("dense", "standard")}
  return {
    "hier": {
      "single": single(h_std),
      "premise": {k: {"recall": v} for k, v in full.items()},
    },
    "flat": {"single": single(f_std), "premise": flat},
  }


def test_derived_metrics_pair_per_query_and_pick_the_best_baseline():
  c1 = _cell(
    [1.0, 0.5],
    [0.5, 0.5],
    {
      "reasoning": [1.0, 0.5],
      "standard": [0.5, 0.5],
      "bm25_statements": [1.0, 0.0],
      "frequency": [0.0, 0.0],
    },
  )
  c2 = _cell(
    [0.0],
    [0.5],
    {
      "reasoning": [0.0],
      "standard": [0.5],
      "bm25_statements": [1.0],
      "frequency": [0.0],
    },
  )
  d = evaluate.derived_metrics([c1, c2])
  diffs = np.array([0.5, 0.0, -0.5])
  assert d["hier_gain_ndcg10"] == pytest.approx(0.0)
  assert d["hier_gain_ndcg10_ci"] == pytest.approx(
    1.96 * diffs.std(ddof=1) / np.sqrt(3)
  )
  # bm25 has the best mean (2/3 > 1/2 > 0): reasoning - bm25 per query =
  # [0, 0.5, -1].
  assert d["best_baseline"] == "bm25_statements"
  assert d["reasoning_gain_recall10"] == pytest.approx(
    np.mean([0.0, 0.5, -1.0])
  )
  assert d["n_single_queries"] == 3


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/leansearch.ipynb", timeout=300)
