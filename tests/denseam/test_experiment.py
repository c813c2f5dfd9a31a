"""The smoke experiment end to end (with resume from the cell store) and the
notebook."""

import json

import numpy as np
import pytest

from experiments.denseam import train
from experiments.denseam.configs import default, smoke
from jaxpapers.core import claims as claims_lib
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  # a smoke run judges nothing
  assert all(c.get("verdict") is None for c in rec["claims"])
  assert {"loss_vs_lr.png", "eta_star_vs_k.png", "coord_check.png"} <= set(
    rec["plots"]
  )
  assert "eta*(K) and the best loss per width" in rec["table_markdown"]
  for setting in cfg.settings:
    cell = metrics["grid"][setting]["K8"]
    assert np.asarray(cell["final_loss"]).shape == (len(cfg.lrs), cfg.seeds)
    s = metrics["summary"][setting]
    assert len(s["eta_star"]) == len(cfg.widths)
    assert min(cfg.lrs) <= min(s["eta_star"]) and max(s["eta_star"]) <= max(
      cfg.lrs
    )
  # At the base width the two parametrisations are the same model: identical
  # grids.
  np.testing.assert_allclose(
    metrics["grid"]["poly3:standard"]["K8"]["final_loss"],
    metrics["grid"]["poly3:derived"]["K8"]["final_loss"],
  )
  d = metrics["derived"]
  assert {
    "poly3_standard",
    "poly3_derived",
    "poly3_sp_over_derived_log_best_loss",
  } <= set(d)
  assert {"log_drift", "log_drift_hw", "abs_log_drift", "log_shrink"} <= set(
    d["poly3_derived"]
  )
  assert metrics["baselines"]["uniform_loss"] == pytest.approx(np.log(10))
  # Resume: a rerun on the same workdir reads every cell back instead of
  # training again.
  boom = lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed"))
  monkeypatch.setattr(train.D, "train_grid", boom)
  monkeypatch.setattr(train.D, "coord_check", boom)
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["derived"] == metrics["derived"]


def test_default_claims_are_well_formed_and_judge_the_derived_metrics():
  """The default config's claims parse and every metric path exists in a derived
  block."""
  cfg = default.get_config()

  def drift(m, hw):
    return {
      "log_drift": m,
      "log_drift_hw": hw,
      "abs_log_drift": abs(m),
      "log_shrink": -m,
    }

  fake = {
    "derived": {
      # interval [-0.1, 0.5] inside +-ln 2: held
      "lse_derived": drift(0.2, 0.3),
      "poly3_derived": drift(-0.9, 0.2),  # |drift| 0.9 in (ln 2, ln 4]: partly
      # shrinks 20x: drifts, and fails as a control
      "poly3_standard": drift(-3.0, 0.5),
      "poly3_sp_over_derived_log_best_loss": 1.0,
      "poly3_sp_over_derived_log_best_loss_hw": 0.2,
    },
    "baselines": {"uniform_loss": 2.3, "logreg_train_loss": 0.05},
    # The preconditions: each optimum inside the learning-rate grid, each model
    # learning, no seed's optimum on the grid's edge.
    "summary": {
      s: {
        "best_lr_grid": [cfg.lrs[4]] * len(cfg.widths),
        "best_loss": [0.1] * len(cfg.widths),
        "edge_fraction": 0.0,
      }
      for s in cfg.settings
    },
  }

  def judge(what):
    return {
      c.id: getattr(claims_lib.judge(c, fake), what)
      for c in claims_lib.parse_claims(cfg.claims)
    }

  assert judge("verdict") == {
    "lse_derived_eta_transfers": "held",
    "poly3_derived_eta_transfers": "partly",
    "poly3_standard_eta_drifts": "held",
    "poly3_standard_needs_rescaling": "held",
  }
  # Standard parametrisation transferring as well makes the derived claim
  # vacuous.
  fake["derived"]["poly3_standard"] = drift(0.1, 0.1)
  assert judge("guard")["poly3_derived_eta_transfers"] == "controls"
  assert judge("verdict")["poly3_standard_eta_drifts"] == "not reproduced"
  # does not learn
  fake["derived"]["poly3_standard"]["abs_log_drift"] = float("inf")
  assert judge("verdict")["poly3_derived_eta_transfers"] == "partly"
  # A seed's optimum on the grid's edge, an optimum on the grid's edge, or a
  # width that does not learn, leaves a claim untested.
  fake["summary"]["lse:derived"]["edge_fraction"] = 0.125
  fake["summary"]["poly3:derived"]["best_lr_grid"][-1] = cfg.lrs[-1]
  fake["summary"]["poly3:standard"]["best_loss"][1] = 2.5
  assert judge("guard") == {
    "lse_derived_eta_transfers": "requires",
    "poly3_derived_eta_transfers": "requires",
    "poly3_standard_eta_drifts": "requires",
    "poly3_standard_needs_rescaling": "requires",
  }


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/denseam.ipynb", timeout=300)
