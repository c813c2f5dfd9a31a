"""The smoke experiment end to end (with resume) and the notebook."""

import json
import logging

import numpy as np
import pytest

from experiments.msretrieval import train
from experiments.msretrieval.configs import default, smoke
from jaxpapers import core
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch, caplog):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert {"frontier.png", "toy_regret.png"} <= set(rec["plots"])
  assert "**Objectives**" in rec["table_markdown"]
  # a smoke run judges nothing
  assert all(c["verdict"] is None for c in rec["claims"])
  assert set(metrics["objectives"]) == set(cfg.losses)
  for loss in cfg.losses:
    for pool in train.POOLS:
      o = metrics["objectives"][loss][pool]
      assert (
        0
        <= o["hr/cosine@1"]["mean"]
        <= o["hr/cosine@5"]["mean"]
        <= o["hr/cosine@20"]["mean"]
        <= 1
      )
      assert 0 <= o["fp/tanimoto"]["mean"] <= 1
  assert len(metrics["runs"]) == len(cfg.losses) * cfg.seeds
  # Random ranking: HR@k close to k / C (the pools hold no padding).
  r = metrics["baselines"]["random"]["mass"]["hr/random@20"]
  assert abs(r - 20 / cfg.eval_cands) < 0.3
  toy = metrics["toy"]
  assert (
    toy["dedup"]["lemma_violations"] == 0
    and toy["dedup"]["duplicates_left"] == 0
  )
  assert metrics["derived"]["toy_mean_regret_jaccard"] >= 0
  # Without ties the retrieval-optimal fingerprint has no regret; with them it
  # may.
  assert toy["dedup"]["mean_regret_oracle"] == 0.0
  assert (
    toy["raw"]["problems"]
    == toy["dedup"]["problems"] + toy["dedup"]["left_out"]
  )
  # Deduplicated pools: no fingerprint twice; the pools before deduplication are
  # reported.
  for pool in train.POOLS:
    assert metrics["data"]["pool_ties"][pool]["any_tied"] == 0.0
    assert pool in metrics["data"]["raw_pool_ties"]
  shuffled = metrics["derived"]["misalignment_z_hard_shuffled_all"]
  assert len(shuffled) == cfg.placebo_shuffles
  assert metrics["derived"]["misalignment_z_hard_shuffled"] == pytest.approx(
    np.median(shuffled)
  )
  # Resume: a rerun reads every cell back instead of training again; the cached
  # data, cut off (by a crash of the machine, say), is prepared again with a
  # warning naming it.
  monkeypatch.setattr(
    train, "_train", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
  )
  monkeypatch.setattr(
    train.M,
    "toy_regret_problems",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError),
  )
  data = tmp_path / "data.npz"
  data.write_bytes(data.read_bytes()[:1000])
  with caplog.at_level(logging.WARNING):
    again = train.train_and_evaluate(cfg, tmp_path)
  assert f"{data} is corrupt" in caplog.text
  assert again["derived"] == metrics["derived"]


def test_derived_metrics_and_claims_decide_as_written():
  """The pre-set rule on constructed summaries: agreement -> 0, a clear split ->
  held."""

  def summ(tan, hr, sd=0.01):
    return {
      "mass": {
        "fp/tanimoto": {"mean": tan, "std": sd},
        "hr/cosine@1": {"mean": hr, "std": sd},
      },
      "hard": {
        "fp/tanimoto": {"mean": tan, "std": sd},
        "hr/cosine@1": {"mean": hr, "std": sd},
      },
    }

  base = {
    "random": {p: {"hr/random@1": 0.02} for p in ("mass", "hard")},
    "prior": {p: {"hr/cosine@1": 0.03} for p in ("mass", "hard")},
    "nn_lookup": {p: {"hr/cosine@1": 0.1} for p in ("mass", "hard")},
  }
  dedup = {
    "mean_regret_jaccard": 0.02,
    "mean_regret_jaccard_ci95": 0.001,
    "mean_regret_bce_cosine": 0.03,
    "mean_regret_oracle": 0.0,
    "mean_regret_oracle_ci95": 0.0,
    "regret_high_minus_low": 0.05,
    "regret_high_minus_low_ci95": 0.01,
    "low_count": 100,
    "high_count": 100,
    "problems": 300,
    "duplicates_left": 0,
    "lemma_violations": 0,
  }
  raw = {
    "mean_regret_jaccard": 0.05,
    "duplicate_share": 0.4,
    "regret_high_minus_low": 0.1,
  }
  toy = {"dedup": dedup, "raw": raw}
  split = {"bce": summ(0.50, 0.20), "list_fp_cos": summ(0.40, 0.30)}
  d = train.derived_metrics(
    {"objectives": split, "seeds": 3, "baselines": base, "toy": toy}
  )
  se = np.sqrt(2 * 0.01**2 / 3)
  assert d["misalignment_z_mass"] == pytest.approx(0.1 / se)
  assert (
    d["best_tanimoto_loss_mass"] == "bce"
    and d["best_hr1_loss_mass"] == "list_fp_cos"
  )
  agree = {"bce": summ(0.50, 0.30), "list_fp_cos": summ(0.40, 0.20)}
  d2 = train.derived_metrics(
    {"objectives": agree, "seeds": 3, "baselines": base, "toy": toy}
  )
  assert d2["misalignment_z_mass"] == 0.0 and d2["kendall_tau_mass"] == 1.0
  # A shuffled-label control at 0.5 does not clear the rule; one at 3 makes the
  # claim vacuous.
  d["misalignment_z_mass_shuffled"] = 0.5
  verdicts = {
    v["claim_id"]: v["verdict"]
    for v in core.judge_all(default.CLAIMS, {"derived": d})
  }
  assert verdicts["misalignment_mass"] == "held"
  assert verdicts["toy_regret_positive"] == "held"
  assert verdicts["toy_regret_grows_with_sigma_max"] == "held"
  vac = {**d, "misalignment_z_mass_shuffled": 3.0}
  v = {
    v["claim_id"]: v for v in core.judge_all(default.CLAIMS, {"derived": vac})
  }
  assert v["misalignment_mass"]["verdict"] == "inconclusive"
  assert v["misalignment_mass"]["guard"] == "controls"
  # Ties left in the toy problems, or a tie-driven oracle regret, stop the toy
  # claims.
  tied = {**d, "toy_duplicates_left": 3, "toy_mean_regret_oracle": 0.01}
  v = {
    v["claim_id"]: v for v in core.judge_all(default.CLAIMS, {"derived": tied})
  }
  assert v["toy_regret_positive"]["guard"] == "requires"
  untied_oracle = {**d, "toy_mean_regret_oracle": 0.01}
  v = {
    v["claim_id"]: v
    for v in core.judge_all(default.CLAIMS, {"derived": untied_oracle})
  }
  assert v["toy_regret_positive"]["guard"] == "controls"
  verdicts2 = {
    v["claim_id"]: v["verdict"]
    for v in core.judge_all(default.CLAIMS, {"derived": d2})
  }
  assert verdicts2["misalignment_mass"] == "not reproduced"


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/msretrieval.ipynb", timeout=300)
