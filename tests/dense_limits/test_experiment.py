"""The smoke experiment end to end (with resume from the cell store) and the
notebook."""

import json

import pytest

from experiments.dense_limits import train
from experiments.dense_limits.configs import smoke
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert {"saturation.png", "compression.png", "bound.png"} <= set(rec["plots"])
  # a smoke run judges nothing
  assert all(c.get("verdict") is None for c in rec["claims"])
  d = metrics["derived"]
  assert (
    d["bumps"]["trivial_train_loss"] == 1.0
    or abs(d["bumps"]["trivial_train_loss"] - 1) < 1e-5
  )
  for w in cfg.widths:
    assert (
      len(metrics["cells"][f"bumps/dense_sum@1/w{w}"]["best_train"])
      == cfg.seeds
    )
    cell = metrics["cells"][f"bumps/dense@1/w{w}"]
    assert len(cell["best_train"]) == cfg.seeds
    if w >= cfg.compress_min_width:
      assert len(cell["compression"]["cut"][0]) == len(cfg.compress_ks)
  assert d["regularity"]["sdp_bracket_holds"]
  assert d["regularity"]["lb_over_exact_min"] <= 1.0 + 1e-6
  # Resume: a rerun reads every cell back instead of training again.
  monkeypatch.setattr(
    train, "cell_sweep", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
  )
  again = train.train_and_evaluate(cfg, tmp_path)
  assert (
    again["derived"]["bumps"]["B1"]["slope_dense"]
    == d["bumps"]["B1"]["slope_dense"]
  )
  assert {"slope_sum", "dense_gain_decades", "slope_gap"} <= set(
    d["bumps"]["B1"]
  )
  assert d["lipschitz"]["binds"]["1"] == (2.0**0.5 < d["lipschitz"]["target"])


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/dense_limits.ipynb", timeout=300)
