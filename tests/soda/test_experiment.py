"""End-to-end smoke run of the SODA experiment, its resume path, and the
notebook."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.soda import grid as soda_grid
from experiments.soda import train
from experiments.soda.configs import smoke
from jaxpapers import soda
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
    "digits_horizons.png",
  }
  digits = {
    (r["family"], r.get("wd")): r for r in record["metrics"]["digits"]["rows"]
  }
  assert ("soda_adamw", None) in digits and ("adamw", 1.0) in digits
  for r in digits.values():
    assert 0.0 <= r["accuracy"] <= 1.0
    # the claims' metric: test NLL
    assert r["metric"] == r["nll"] and 0.0 < r["nll"] < 5.0
  trivial = record["metrics"]["digits"]["trivial"]
  np.testing.assert_allclose(
    trivial["class_prior_nll"], np.log(10.0), atol=0.01
  )
  # One horizon: the same weight decay is best at both ends, so moving it costs
  # nothing.
  assert (
    record["metrics"]["derived"]["digits_adamw_wd_transfer_penalty_in_std"]
    == 0.0
  )
  lm_rows = record["metrics"]["lm"]["rows"]
  assert all(np.isfinite(r["metric"]) and r["metric"] < 9.0 for r in lm_rows)
  # Every (task, horizon, group) is a stored cell; a rerun on the same workdir
  # reads them back.
  assert sorted(p.name for p in (tmp_path / "cells").glob("*.json")) == [
    "digits~T60~adam.json",
    "lm~T20~adam.json",
  ]
  again = train.train_and_evaluate(config, str(tmp_path))
  assert again["digits"]["rows"] == metrics["digits"]["rows"]


@pytest.mark.slow
def test_extended_grid_reuses_the_earlier_stages_and_refuses_a_changed_one(
  tmp_path, monkeypatch
):
  """Each grid stage trains in its own cell; the cells of earlier stages are
  read back."""
  computed = []
  get_or_compute = train.core.CellStore.get_or_compute

  def recording(self, name, compute, *args, **kwargs):
    def wrapped(*a, **k):
      computed.append(name)
      return compute(*a, **k)

    return get_or_compute(self, name, wrapped, *args, **kwargs)

  monkeypatch.setattr(train.core.CellStore, "get_or_compute", recording)
  config = smoke.get_config()
  config.lm.enabled = False
  d = config.digits
  d.cell_stages = (("", (("adamw", (3e-3,)), ("soda_adamw", (3e-3,)))),)
  first = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"][
    "rows"
  ]
  d.soda_adamw_lrs = (1e-3, 3e-3)
  d.cell_stages += (("+ext", (("soda_adamw", (1e-3,)),)),)
  ext = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"]["rows"]
  d.soda_adamw_lrs = (3e-4, 1e-3, 3e-3)
  d.cell_stages += (("+ext2", (("soda_adamw", (3e-4,)),)),)
  ext2 = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"]["rows"]
  # Each run trains only the cell of the stage it adds.
  assert computed == [
    "digits/T60/adam",
    "digits/T60/adam+ext",
    "digits/T60/adam+ext2",
  ]
  assert sorted(p.name for p in (tmp_path / "a" / "cells").glob("*.json")) == [
    "digits~T60~adam+ext.json",
    "digits~T60~adam+ext2.json",
    "digits~T60~adam.json",
  ]
  # the earlier stages' cells, read back as stored
  assert ext[: len(first)] == first
  assert ext2[: len(ext)] == ext
  # The added run equals the same run trained in one cell with the whole grid.
  d.cell_stages = ()
  whole = train.train_and_evaluate(config, str(tmp_path / "b"))["digits"][
    "rows"
  ]
  (a,) = [r for r in ext2 if r["family"] == "soda_adamw" and r["lr"] == 3e-4]
  (b,) = [r for r in whole if r["family"] == "soda_adamw" and r["lr"] == 3e-4]
  np.testing.assert_allclose(a["per_seed"], b["per_seed"], rtol=1e-4)
  # A stored cell whose runs differ from the config's is an error naming the
  # cell.
  with pytest.raises(ValueError, match="digits/T60/adam"):
    train.train_and_evaluate(config, str(tmp_path / "a"))


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/soda.ipynb", timeout=300)


def _write_shard(path, tokens):
  """A token shard in the reference layout: 256 int32 (magic, version, n,
  zeros), uint16 ids."""
  header = np.zeros(256, "<i4")
  header[:3] = 20240520, 1, len(tokens)
  path.write_bytes(
    header.tobytes() + np.asarray(tokens).astype("<u2").tobytes()
  )


def test_full_config_traces_on_a_data_parallel_mesh(tmp_path):
  """``configs/full.py`` as written (GPT-2 small, batch 64 x 1024 in 16
  microbatches, chunked validation) traces one data-parallel step of its AdamW
  group on the 8 fake devices: shapes and the batch split are consistent
  (abstract evaluation only, nothing is computed)."""
  from experiments.soda.configs import full

  config = full.get_config()
  cfg = config.lm
  for t in cfg.horizons:
    assert t % cfg.chunk == 0
  assert (
    cfg.batch_size % cfg.microbatches == 0
    and cfg.val_windows % cfg.eval_batch == 0
  )
  rng = np.random.default_rng(0)
  _write_shard(tmp_path / "x_train_000001.bin", rng.integers(0, 50257, 4096))
  _write_shard(tmp_path / "x_val_000000.bin", rng.integers(0, 50257, 2048))
  cfg.data_dir = str(tmp_path)
  setup = train.task_setup("lm", cfg)
  # GPT-2 small (124M) + an untied 50304 x 768 head
  assert 1.62e8 < setup["num_params"] < 1.64e8
  families = soda_grid.GROUPS["adam"][:2]
  runs = [r for r in soda_grid.family_grid(cfg) if r[0] in families][:2]
  hp, keys = soda.horizon_hparams(runs, [0], 0, cfg.horizons[0], families)
  mesh = soda.grid_mesh(2, cfg.data_parallel, cfg.batch_size)
  assert dict(mesh.shape) == {"runs": 2, "data": 4}
  opt = {k: cfg[k] for k in ("b1", "b2", "warmup_frac", "cooldown_frac")}
  eng = soda.horizon_sweep(
    setup, families=families, **opt, mesh=mesh, microbatches=cfg.microbatches
  )
  state = jax.eval_shape(
    jax.vmap(lambda h, k: eng.init_fn(h, k, None)), hp, keys
  )
  step = jax.vmap(lambda st, h, k: eng.step_fn(st, h, k, jnp.int32(0), None))
  _, loss = jax.eval_shape(step, state, hp, keys)
  assert loss.shape == (2,)
  ev = jax.eval_shape(
    jax.vmap(lambda st, h, k: eng.eval_fn(st, h, k, None)), state, hp, keys
  )
  assert ev.shape == (2,)


def test_muon_groups_use_the_muon_horizons_and_seeds():
  from ml_collections import ConfigDict

  cfg = ConfigDict(
    {"horizons": (100, 300, 1000), "muon_horizons": (100, 1000), "num_seeds": 5}
  )
  cfg.muon_num_seeds = 3
  assert soda_grid.group_horizons(cfg, "adam") == (100, 300, 1000)
  assert soda_grid.group_horizons(cfg, "soda_muon") == (100, 1000)
  assert soda_grid.base_horizons(cfg, "muon") == (100, 1000)
  assert (
    soda_grid.group_seeds(cfg, "adam"),
    soda_grid.group_seeds(cfg, "muon"),
  ) == (5, 3)
