"""End-to-end smoke run of the experiment and execution of the notebook."""

import json

import numpy as np

from experiments.flashssm3d import train
from experiments.flashssm3d.configs import smoke


def test_smoke_experiment_end_to_end(tmp_path):
  cfg = smoke.get_config()
  res = train.train_and_evaluate(cfg, tmp_path)
  out = json.loads((tmp_path / "results.json").read_text())
  m = out["metrics"]
  for name in cfg.variants:
    assert 0.0 <= m[f"student_{name}/vs_gt/AUC@30"] <= 1.0
    assert np.isfinite(m[f"student_{name}/vs_gt/depth_AbsRel"])
    assert np.isfinite(m[f"student_{name}/vs_teacher/points_overall"])
  assert np.isfinite(m["teacher_T1/vs_gt/points_overall"])
  assert "| model | ref |" in out["table_markdown"]
  assert (tmp_path / "scaling.png").exists() and (tmp_path / "training_loss.png").exists()
  sc = res["scaling"]
  assert all(np.isfinite(sc["student_ssm"]["time_s"]))


def test_notebook_runs():
  from tests.notebook_util import run_notebook

  run_notebook("colab/flashssm3d.ipynb", timeout=300)
