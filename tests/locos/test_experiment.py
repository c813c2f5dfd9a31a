"""The experiment's smoke config end to end, and the notebook on its smoke
setting."""

import json

import pytest

from experiments.locos import train
from experiments.locos.configs import smoke
from tests.notebook_util import run_notebook


def test_smoke_config_writes_results(tmp_path):
  config = smoke.get_config()
  metrics = train.train_and_evaluate(config, str(tmp_path))
  res = json.loads((tmp_path / "results.json").read_text())
  assert (
    "toy/curves" in res["metrics"]
    and "| toy nonliteral |" in res["table_markdown"]
  )
  curve = metrics["toy/curves"]["nonliteral"]
  assert curve["ks"] == list(config.toy.ks)
  for name in ("locos", "wu", "contrastive", "random"):
    assert len(curve[name]["mean"]) == len(config.toy.ks)
  assert (tmp_path / "toy_ablation.png").exists()


@pytest.mark.notebook
def test_notebook_runs_on_smoke_setting():
  run_notebook("colab/locos.ipynb", timeout=300)
