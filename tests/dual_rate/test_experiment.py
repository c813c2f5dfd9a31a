"""The smoke experiment end to end, and the notebook on its smoke setting."""

import json

from experiments.dual_rate import train
from experiments.dual_rate.configs import smoke
from tests.notebook_util import run_notebook


def test_smoke_experiment(tmp_path):
  metrics = train.train_and_evaluate(smoke.get_config(), tmp_path)
  res = json.loads((tmp_path / "results.json").read_text())
  assert "table_markdown" in res and "dual-rate" in res["table_markdown"]
  assert (tmp_path / "quality_vs_cost.png").exists() and (tmp_path / "samples.png").exists()
  methods = {r["method"] for r in metrics["rows"]}
  assert methods == {"baseline", "dual-rate", "mmd-baseline", "mmd-dual-rate"}
  for r in metrics["rows"]:
    assert r["fd_mean"] == r["fd_mean"] and r["mflops_per_sample"] > 0  # finite, counted
  dual = {r["interval_K"]: r for r in metrics["rows"] if r["method"] == "dual-rate"}
  assert dual[2]["encoder_calls"] < dual[1]["encoder_calls"]
  assert dual[2]["mflops_per_sample"] < dual[1]["mflops_per_sample"]
  assert metrics["floor"]["fd"] >= 0


def test_notebook_runs():
  run_notebook("colab/dual_rate.ipynb", timeout=300)
