"""End-to-end smoke run of the SODA experiment, its resume path, and the notebook."""

import json

import numpy as np
import optax

from experiments.soda import train
from experiments.soda.configs import smoke
from tests import notebook_util


def test_smoke_run_writes_results_and_resumes(tmp_path):
  config = smoke.get_config()
  metrics = train.train_and_evaluate(config, str(tmp_path))
  record = json.loads((tmp_path / "results.json").read_text())
  assert "| T |" in record["table_markdown"]
  assert set(record["plots"]) >= {
    "digits_wd_sweep.png",
    "lm_wd_sweep.png",
    "digits_curves.png",
    "lm_curves.png",
  }
  digits = {(r["family"], r.get("wd")): r for r in record["metrics"]["digits"]["rows"]}
  assert ("soda_adamw", None) in digits and ("adamw", 1.0) in digits
  for r in digits.values():
    assert 0.0 <= r["metric"] <= 1.0
  lm_rows = record["metrics"]["lm"]["rows"]
  assert all(np.isfinite(r["metric"]) and r["metric"] < 9.0 for r in lm_rows)
  # Every (task, horizon, group) is a stored cell; a rerun on the same workdir reads them back.
  assert sorted(p.name for p in (tmp_path / "cells").glob("*.json")) == [
    "digits%2FT60%2Fadam.json",
    "lm%2FT20%2Fadam.json",
  ]
  again = train.train_and_evaluate(config, str(tmp_path))
  assert again["digits"]["rows"] == metrics["digits"]["rows"]


def test_arm_selection_matches_standalone_optimizer():
  """A grouped run that selects an arm follows that arm's own optimizer."""
  import jax
  import jax.numpy as jnp

  cfg = smoke.get_config().digits
  hp = {
    "lr": jnp.float32(3e-3),
    "wd": jnp.float32(0.1),
    "total": jnp.float32(60),
    "adam_lr": jnp.float32(0.0),
  }
  tx = train.make_tx("adamw", hp, cfg)
  ref = optax.adamw(
    train.wsd(3e-3, 60, cfg.warmup_frac, cfg.cooldown_frac), b1=cfg.b1, b2=cfg.b2, weight_decay=0.1
  )
  p = {"w": jnp.ones((3, 2))}
  g = {"w": jnp.full((3, 2), 0.5)}
  u1, _ = tx.update(g, tx.init(p), p)
  u2, _ = ref.update(g, ref.init(p), p)
  np.testing.assert_allclose(u1["w"], u2["w"], rtol=1e-6)
  sched = train.wsd(jnp.float32(1.0), jnp.float32(100), 0.0, 0.3)
  np.testing.assert_allclose(
    [float(sched(jnp.asarray(k))) for k in (0, 69, 70, 85, 99, 100)],
    [1.0, 1.0, 1.0, 0.5, 1 / 30, 0.0],
    atol=1e-6,
  )
  del jax


def test_notebook_runs():
  notebook_util.run_notebook("colab/soda.ipynb", timeout=300)
