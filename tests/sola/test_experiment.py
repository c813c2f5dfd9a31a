"""The smoke experiment end to end (with resume) and the notebook."""

import json

import numpy as np
import pytest

from experiments.sola import input_pipeline, train
from experiments.sola.configs import smoke
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  # The four baselines in one program instead of four (a third of this test's
  # compilation); test_joint_baselines_program_gives_the_same_students (slow)
  # checks that both layouts give the same students, and the smoke config itself
  # (notebook, reproduce --quick) keeps one program per baseline, as the default
  # run does.
  cfg.joint_baselines = True
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert {"bpb.png", "curves.png"} <= set(rec["plots"])
  # a smoke run judges nothing
  assert all(c["verdict"] is None for c in rec["claims"])
  # every training path of every config runs here: the baselines, ALM-style,
  # SOLA and its ablations, and the same-tokenizer reference
  assert set(cfg.methods) == set(train.METHODS)
  for m in cfg.methods:
    r = metrics["methods"][m]
    assert len(r["bpb_eval"]["per_seed"]) == cfg.seeds
    assert np.isfinite(r["bpb_eval"]["mean"]) and 0 < r["bpb_eval"]["mean"] < 20
    # each distillation arm really adds its teacher term; the no-teacher arms
    # add none
    kd = r["final_train_kd"]["per_seed"]
    if m in ("ce", "same_tok_ce"):
      assert kd == [0.0] * cfg.seeds, m
    else:
      assert all(np.isfinite(kd)) and min(kd) > 0, (m, kd)
  # arms that differ in the loss give different students from the same
  # initialisations
  bpb = {
    m: tuple(metrics["methods"][m]["bpb_eval"]["per_seed"]) for m in cfg.methods
  }
  assert len(set(bpb.values())) == len(bpb), bpb
  d = metrics["derived"]
  want = metrics["methods"]["sola"]["bpb_eval"]["mean"] - min(
    metrics["methods"][m]["bpb_eval"]["mean"] for m in ("uld", "mined", "alm")
  )
  assert abs(d["sola_minus_best_ctkd_bpb"] - want) < 1e-9
  for name in ("alm", "none", "hard", "lexical", "same_tok_kd", "same_tok_ce"):
    assert (
      np.isfinite(d[f"sola_minus_{name}_bpb"])
      and d[f"sola_vs_{name}_noise"] >= 0
    )
  assert metrics["data"]["teacher_tokens_cached"] > 0
  # Resume: the teacher cache and every finished group are read back, nothing is
  # retrained.
  monkeypatch.setattr(
    train,
    "make_sweep",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained")),
  )
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["derived"] == metrics["derived"]


@pytest.mark.slow
def test_joint_baselines_program_gives_the_same_students(tmp_path):
  """The baselines in one vmapped program, every run computing every baseline
  loss (the layout of the first committed runs, ``joint_baselines=True``), give
  the same students as one program per loss (the default)."""
  cfg = smoke.get_config()
  cfg.methods = train.BASELINES
  sep = train.train_and_evaluate(cfg, tmp_path / "separate")
  joint = cfg.copy_and_resolve_references()
  joint.joint_baselines = True
  got = train.train_and_evaluate(joint, tmp_path / "joint")
  for m in train.BASELINES:
    for key in ("bpb_eval", "bpb_code", "final_train_kd"):
      np.testing.assert_allclose(
        got["methods"][m][key]["per_seed"],
        sep["methods"][m][key]["per_seed"],
        rtol=1e-5,
        err_msg=f"{m} {key}",
      )


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/sola.ipynb", timeout=300)


def test_ablation_claim_reads_sola_minus_no_support():
  """The ablations config's claim metric: SOLA minus the no-local-support row,
  noise 2 SE."""
  from experiments.sola.configs import ablations

  ms = lambda m, s: {"bpb_eval": {"mean": m, "std": s}}
  methods = {
    "sola": ms(3.0, 0.03),
    "sola_none": ms(3.1, 0.04),
    "same_tok_ce": ms(2.9, 0.0),
    "same_tok_kd": ms(2.5, 0.0),
  }
  d = train.derived_metrics(methods, 3)
  assert abs(d["sola_minus_none_bpb"] - (3.0 - 3.1)) < 1e-12
  assert (
    abs(d["sola_vs_none_noise"] - 2 * np.sqrt((0.03**2 + 0.04**2) / 3)) < 1e-12
  )
  assert abs(d["same_tok_kd_minus_ce_bpb"] - (2.5 - 2.9)) < 1e-12
  assert "sola_minus_best_ctkd_bpb" not in d  # no ULD / MinED rows in that run
  cfg = ablations.get_config()
  assert [c["metric"] for c in cfg.claims] == ["derived.sola_minus_none_bpb"]
  assert set(cfg.methods) <= set(train.METHODS)


def test_alm_config_claims_read_sola_minus_alm_and_best_of_three():
  """The ALM config's claims: SOLA minus ALM-style, and minus the best of ULD /
  MinED / ALM."""
  from experiments.sola.configs import alm

  ms = lambda m, s: {"bpb_eval": {"mean": m, "std": s}}
  methods = {
    "ce": ms(3.2, 0.02),
    "uld": ms(3.1, 0.01),
    "mined": ms(3.05, 0.03),
    "alm": ms(2.95, 0.02),
    "sola": ms(3.0, 0.03),
  }
  d = train.derived_metrics(methods, 3)
  assert d["best_ctkd_baseline"] == "alm"
  assert abs(d["sola_minus_alm_bpb"] - 0.05) < 1e-12
  assert abs(d["sola_minus_best_ctkd_bpb"] - 0.05) < 1e-12
  assert (
    abs(d["sola_vs_alm_noise"] - 2 * np.sqrt((0.03**2 + 0.02**2) / 3)) < 1e-12
  )
  assert abs(d["alm_minus_ce_bpb"] - (2.95 - 3.2)) < 1e-12
  cfg = alm.get_config()
  assert [c["metric"] for c in cfg.claims] == [
    "derived.sola_minus_alm_bpb",
    "derived.sola_minus_best_ctkd_bpb",
    "derived.sola_minus_ce_bpb",
  ]
  assert (
    set(cfg.methods) == {"ce", "uld", "mined", "alm", "sola"}
    and cfg.steps == 100
  )


def test_gemma3_config_swaps_only_the_teacher_and_unknown_teachers_fail():
  import pytest

  from experiments.sola.configs import alm, gemma3

  g, a = gemma3.get_config(), alm.get_config()
  assert g.teacher == "gemma3" and a.teacher == "smollm2"
  g.teacher = a.teacher
  assert g.to_dict() == a.to_dict()
  bad = alm.get_config()
  bad.teacher = "gpt2"
  with pytest.raises(
    ValueError, match=("teacher must be 'smollm2', 'gemma3' or 'random'")
  ):
    input_pipeline.load_teacher(bad, {"train": ["x"]})
