"""End-to-end smoke run of the SODA experiment, its resume path, and the notebook."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments.soda import evaluate as evaluation
from experiments.soda import grid as soda_grid
from experiments.soda import models, train
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
    "digits_horizons.png",
  }
  digits = {(r["family"], r.get("wd")): r for r in record["metrics"]["digits"]["rows"]}
  assert ("soda_adamw", None) in digits and ("adamw", 1.0) in digits
  for r in digits.values():
    assert 0.0 <= r["accuracy"] <= 1.0
    assert r["metric"] == r["nll"] and 0.0 < r["nll"] < 5.0  # the claims' metric: test NLL
  trivial = record["metrics"]["digits"]["trivial"]
  np.testing.assert_allclose(trivial["class_prior_nll"], np.log(10.0), atol=0.01)
  # One horizon: the same weight decay is best at both ends, so moving it costs nothing.
  assert record["metrics"]["derived"]["digits_adamw_wd_transfer_penalty_in_std"] == 0.0
  lm_rows = record["metrics"]["lm"]["rows"]
  assert all(np.isfinite(r["metric"]) and r["metric"] < 9.0 for r in lm_rows)
  # Every (task, horizon, group) is a stored cell; a rerun on the same workdir reads them back.
  assert sorted(p.name for p in (tmp_path / "cells").glob("*.json")) == [
    "digits~T60~adam.json",
    "lm~T20~adam.json",
  ]
  again = train.train_and_evaluate(config, str(tmp_path))
  assert again["digits"]["rows"] == metrics["digits"]["rows"]


@pytest.mark.slow
def test_extended_grid_reuses_the_earlier_stages_and_refuses_a_changed_one(tmp_path, monkeypatch):
  """Each grid stage trains in its own cell; the cells of earlier stages are read back."""
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
  d.cell_stages = (("", {"adamw": (3e-3,), "soda_adamw": (3e-3,)}),)
  first = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"]["rows"]
  d.soda_adamw_lrs = (1e-3, 3e-3)
  d.cell_stages += (("+ext", {"soda_adamw": (1e-3,)}),)
  ext = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"]["rows"]
  d.soda_adamw_lrs = (3e-4, 1e-3, 3e-3)
  d.cell_stages += (("+ext2", {"soda_adamw": (3e-4,)}),)
  ext2 = train.train_and_evaluate(config, str(tmp_path / "a"))["digits"]["rows"]
  # Each run trains only the cell of the stage it adds.
  assert computed == ["digits/T60/adam", "digits/T60/adam+ext", "digits/T60/adam+ext2"]
  assert sorted(p.name for p in (tmp_path / "a" / "cells").glob("*.json")) == [
    "digits~T60~adam+ext.json",
    "digits~T60~adam+ext2.json",
    "digits~T60~adam.json",
  ]
  assert ext[: len(first)] == first  # the earlier stages' cells, read back as stored
  assert ext2[: len(ext)] == ext
  # The added run equals the same run trained in one cell with the whole grid.
  del d.cell_stages
  whole = train.train_and_evaluate(config, str(tmp_path / "b"))["digits"]["rows"]
  (a,) = [r for r in ext2 if r["family"] == "soda_adamw" and r["lr"] == 3e-4]
  (b,) = [r for r in whole if r["family"] == "soda_adamw" and r["lr"] == 3e-4]
  np.testing.assert_allclose(a["per_seed"], b["per_seed"], rtol=1e-4)
  # A stored cell whose runs differ from the config's is an error naming the cell.
  with pytest.raises(ValueError, match="digits/T60/adam"):
    train.train_and_evaluate(config, str(tmp_path / "a"))


def test_wd_transfer_penalty_and_gap_by_hand():
  """The claim metrics on a hand-made grid (lower is better, two horizons, two lrs)."""
  from ml_collections import ConfigDict

  def row(t, fam, lr, m, s, wd=None):
    r = {"horizon": t, "family": fam, "lr": lr, "metric": m, "metric_std": s}
    return r if wd is None else {**r, "wd": wd}

  rows = [
    row(100, "adamw", 0.1, 1.0, 0.3, 0.0),  # best at T=100: wd 0
    row(100, "adamw", 0.1, 1.5, 0.4, 1.0),
    row(100, "adamw", 0.2, 1.2, 0.1, 1.0),  # best lr for wd 1 at T=100
    row(1000, "adamw", 0.1, 0.9, 0.6, 0.0),  # wd 0 at T=1000 (its best lr)
    row(1000, "adamw", 0.2, 2.0, 0.1, 0.0),
    row(1000, "adamw", 0.2, 0.5, 0.8, 1.0),  # best at T=1000: wd 1
    row(100, "soda_adamw", 0.1, 1.1, 0.0),
    row(1000, "soda_adamw", 0.1, 0.6, 0.0),
  ]
  cfg = ConfigDict({"horizons": (100, 1000)})
  tr = evaluation._wd_transfer(rows, cfg, "adamw")
  assert tr["best_wd_by_horizon"] == {"100": 0.0, "1000": 1.0}
  # At T=1000 with T=100's wd 0: 0.9 vs the best 0.5, over sqrt(0.8^2 + 0.6^2) = 1.
  np.testing.assert_allclose(tr["penalty_at_longest_in_std"], 0.4)
  # At T=100 with T=1000's wd 1: 1.2 vs 1.0, over sqrt(0.3^2 + 0.1^2).
  np.testing.assert_allclose(tr["penalty_at_shortest_in_std"], 0.2 / np.sqrt(0.1))
  claims = evaluation._claims(rows, cfg, "adamw", "soda_adamw")
  # SODA - best base, signed so > 0 favours SODA: -0.1/0.3 at T=100, -0.1/0.8 at T=1000.
  np.testing.assert_allclose([c["gap_in_seed_std"] for c in claims], [-1 / 3, -0.125])
  derived = evaluation.derived_metrics({"digits": {"claims": claims, "wd_transfer": [tr]}})
  np.testing.assert_allclose(derived["digits_adamw_worst_gap_in_std"], -1 / 3)
  np.testing.assert_allclose(derived["digits_adamw_wd_transfer_penalty_in_std"], 0.2 / np.sqrt(0.1))
  assert derived["digits_adamw_beats_wd0_fraction"] == 0.5  # 1.1 > 1.0 but 0.6 < 0.9


def test_digits_muon_mask_is_the_hidden_kernels():
  """Muon (and SODA(Muon)) act on fc1/fc2 kernels, not on the output layer or biases."""
  from flax import nnx

  params = nnx.split(models.MLP(8, rngs=nnx.Rngs(0)))[1]
  mask = models.mlp_hidden_mask(params)
  flat = {
    "/".join(str(k.key) for k in path if hasattr(k, "key")): m
    for path, m in jax.tree_util.tree_leaves_with_path(mask)
  }
  assert flat == {
    "fc1/bias": False,
    "fc1/kernel": True,
    "fc2/bias": False,
    "fc2/kernel": True,
    "out/bias": False,
    "out/kernel": False,
  }


def test_arm_selection_matches_standalone_optimizer():
  """A grouped run that selects an arm follows that arm's own optimizer."""
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
    train.wsd(3e-3, 60, cfg.warmup_frac, cfg.cooldown_frac),
    b1=cfg.b1,
    b2=cfg.b2,
    weight_decay=0.1,
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


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/soda.ipynb", timeout=300)


def _write_shard(path, tokens):
  """A token shard in the reference layout: 256 int32 (magic, version, n, zeros), uint16 ids."""
  header = np.zeros(256, "<i4")
  header[:3] = 20240520, 1, len(tokens)
  path.write_bytes(header.tobytes() + np.asarray(tokens).astype("<u2").tobytes())


def test_token_shards_read_back_and_feed_the_lm(tmp_path):
  """The shard layout (256-int32 header, uint16 ids), its errors, and the LM reading it."""
  import pytest

  rng = np.random.default_rng(0)
  train_ids = [rng.integers(0, 300, n) for n in (500, 400)]
  for i, t in enumerate(train_ids):
    _write_shard(tmp_path / f"toy_train_{i:06d}.bin", t)
  _write_shard(tmp_path / "toy_val_000000.bin", rng.integers(0, 300, 200))
  raw = (tmp_path / "toy_train_000000.bin").read_bytes()
  assert np.frombuffer(raw[:12], "<i4").tolist() == [20240520, 1, 500]
  assert len(raw) == 1024 + 2 * 500
  joined = models.load_token_shards(tmp_path, "train")
  np.testing.assert_array_equal(joined, np.concatenate(train_ids))
  np.testing.assert_array_equal(models.load_token_shards(tmp_path, "train", 600), joined[:600])
  (tmp_path / "bad_val_000001.bin").write_bytes(np.zeros(256, "<i4").tobytes())
  with pytest.raises(ValueError, match="magic"):
    models.load_token_shards(tmp_path, "val")
  with pytest.raises(FileNotFoundError, match="test"):
    models.load_token_shards(tmp_path, "test")
  (tmp_path / "bad_val_000001.bin").unlink()

  cfg = smoke.get_config().lm
  cfg.data_dir, cfg.vocab, cfg.max_train_tokens, cfg.max_val_tokens = str(tmp_path), 384, 0, 0
  setup = models.lm_task(cfg)
  assert setup["num_chars"] == 1100
  params = setup["init_params"](jax.random.key(0))
  assert params["embed"]["embedding"][...].shape == (384, cfg.d_model)
  # The unigram predictor: add-one-smoothed train frequencies, in bits per val token.
  freq = np.bincount(np.concatenate(train_ids), minlength=384) + 1.0
  val = models.load_token_shards(tmp_path, "val")
  np.testing.assert_allclose(
    setup["trivial"]["unigram_bits"], -np.mean(np.log2(freq[val] / freq.sum())), rtol=1e-9
  )


def test_split_muon_groups_follow_their_own_optimizer():
  """A run of the Muon group and of the SODA(Muon) group (one family each) follows
  ``optax.contrib.muon`` and ``soda(muon, mask=hidden kernels)`` built directly."""
  from jaxpapers import soda as soda_lib

  cfg = smoke.get_config().digits
  setup = models.digits_task(cfg)
  sched = lambda peak: train.wsd(peak, 60.0, cfg.warmup_frac, cfg.cooldown_frac)
  dims = lambda p: jax.tree.map(
    lambda h: optax.contrib.MuonDimensionNumbers() if h else None, models.mlp_hidden_mask(p)
  )

  def muon(wd):
    return optax.contrib.muon(
      sched(0.03),
      weight_decay=wd,
      adam_learning_rate=sched(3e-3),
      adam_b1=cfg.b1,
      adam_b2=cfg.b2,
      adam_weight_decay=0.0,
      muon_weight_dimension_numbers=dims,
    )

  refs = {"muon": muon(0.3), "soda_muon": soda_lib.soda(muon(0.0), mask=models.mlp_hidden_mask)}
  for family, ref in refs.items():
    assert soda_grid.GROUPS[family] == (family,)
    hp = {"lr": 0.03, "adam_lr": 3e-3, **({"wd": 0.3} if family == "muon" else {})}
    hps, keys = soda_grid.group_grid([(family, hp)], [0], 0, 60, (family,))
    sweep = train.setup_sweep(
      setup,
      families=(family,),
      cfg=cfg,
    )
    one = jax.tree.map(lambda x: x[0], hps)
    state = sweep.init_fn(one, keys[0], None)
    params = setup["init_params"](jax.random.fold_in(keys[0], 0))
    opt = ref.init(params)

    @jax.jit
    def ref_step(params, opt, i, key=keys[0], ref=ref):
      batch = setup["batch_fn"](jax.random.fold_in(jax.random.fold_in(key, 1), i))
      upd, opt = ref.update(jax.grad(setup["loss_fn"])(params, batch), opt, params)
      return optax.apply_updates(params, upd), opt

    step = jax.jit(lambda s, i, one=one, sweep=sweep: sweep.step_fn(s, one, keys[0], i, None)[0])
    for i in range(3):
      state = step(state, jnp.int32(i))
      params, opt = ref_step(params, opt, jnp.int32(i))
    for a, b in zip(jax.tree.leaves(state[0]), jax.tree.leaves(params)):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_muon_claims_use_the_muon_horizons():
  """With ``muon_horizons`` set, the Muon claims compare the ends of those horizons."""
  from ml_collections import ConfigDict

  cfg = ConfigDict({"horizons": (100, 300, 1000), "muon_horizons": (100, 1000), "num_seeds": 5})
  cfg.muon_num_seeds = 3
  assert soda_grid.group_horizons(cfg, "adam") == (100, 300, 1000)
  assert soda_grid.group_horizons(cfg, "soda_muon") == (100, 1000)
  assert (soda_grid.group_seeds(cfg, "adam"), soda_grid.group_seeds(cfg, "muon")) == (5, 3)
  rows = [
    {"horizon": t, "family": f, "lr": 0.1, "metric": m, "metric_std": 0.1, "wd": wd}
    for t, f, m, wd in (
      (100, "muon", 1.0, 0.0),
      (100, "muon", 1.2, 1.0),
      (1000, "muon", 0.9, 0.0),
      (1000, "muon", 0.5, 1.0),
    )
  ] + [
    {"horizon": t, "family": "soda_muon", "lr": 0.1, "metric": m, "metric_std": 0.1}
    for t, m in ((100, 1.1), (1000, 0.5))
  ]
  tr = evaluation._wd_transfer(rows, cfg, "muon")
  assert tr["best_wd_by_horizon"] == {"100": 0.0, "1000": 1.0}
  np.testing.assert_allclose(tr["penalty_at_longest_in_std"], 0.4 / np.sqrt(0.02))
  claims = evaluation._claims(rows, cfg, "muon", "soda_muon")
  assert [c["horizon"] for c in claims] == [100, 1000]


def test_choose_data_parallel_and_grid_mesh():
  """Devices per run: the idle devices of runs-only sharding, never two runs' state per device."""
  import pytest

  got = [
    train.choose_data_parallel(r, d, b)
    for r, d, b in [
      (30, 8, 64),
      (8, 8, 64),
      (6, 8, 64),
      (3, 8, 64),
      (2, 8, 64),
      (1, 8, 64),
      (1, 8, 4),
      (2, 6, 48),
      (2, 6, 64),  # 3 does not divide the batch
      (1, 6, 4),
    ]
  ]
  assert got == [1, 1, 1, 2, 4, 8, 4, 3, 2, 2]
  assert train.grid_mesh(30, 1, 64) is None  # runs-only: core.runs_mesh
  # 8 fake devices: 3 runs -> 2 devices each, on 3 of the 4 runs-axis rows (no padded run).
  assert dict(train.grid_mesh(3, 0, 8).shape) == {"runs": 3, "data": 2}
  assert dict(train.grid_mesh(3, 4, 8).shape) == {"runs": 2, "data": 4}
  # The batch constraint: split over 'data' when the axis divides, else left to the compiler.
  mesh = train.grid_mesh(2, 4, 8)
  split = jax.jit(train.data_constraint(mesh))
  assert split(jnp.ones((8, 3))).sharding.spec[0] == "data"
  assert split(jnp.ones((6, 3))).shape == (6, 3)
  with pytest.raises(ValueError, match="data_parallel=3 must divide"):
    train.grid_mesh(3, 3, 8)
  with pytest.raises(ValueError, match="data_parallel must be an int"):
    train.grid_mesh(3, -1, 8)


def test_data_parallel_grid_equals_single_device():
  """Two SODA(AdamW) LM runs on a (2 runs x 4 data) mesh of the 8 fake devices, with gradient
  accumulation over two microbatches, train like the same runs on one device with the whole
  batch; the data-parallel step all-reduces its gradients (each device holds a quarter of the
  batch) and the runs-only step communicates nothing."""
  from jax.sharding import NamedSharding
  from jax.sharding import PartitionSpec as P

  from jaxpapers import core

  cfg = smoke.get_config().lm
  cfg.batch_size, cfg.val_windows, cfg.eval_batch = 8, 8, 4
  setup = models.lm_task(cfg)
  families = ("soda_adamw",)
  hp, keys = soda_grid.group_grid(
    [(f, {"lr": lr}) for f in families for lr in (1e-2, 3e-3)], [0], 0, 6, families
  )

  def sweep(mesh, microbatches=1):
    return train.setup_sweep(
      setup,
      families=families,
      cfg=cfg,
      mesh=mesh,
      microbatches=microbatches,
    )

  dp_mesh = train.grid_mesh(2, 4, cfg.batch_size)
  single = core.runs_mesh(2, devices=jax.devices()[:1])
  ref = sweep(single).run(hp, keys, num_steps=6, show_progress=False)
  got = sweep(dp_mesh, microbatches=2).run(hp, keys, num_steps=6, show_progress=False)
  np.testing.assert_allclose(got.history, ref.history, rtol=2e-5, atol=1e-6)
  np.testing.assert_allclose(got.evals, ref.evals, rtol=2e-5, atol=1e-6)
  for a, b in zip(jax.tree.leaves(got.state[0]), jax.tree.leaves(ref.state[0])):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
  assert np.ptp(ref.history[:, -1]) > 0  # the two runs differ: the comparison is per run

  def compiled_step(mesh):
    eng = sweep(mesh)
    step = jax.vmap(lambda st, h, k: eng.step_fn(st, h, k, jnp.int32(0), None))
    state = jax.eval_shape(jax.vmap(lambda h, k: eng.init_fn(h, k, None)), hp, keys)
    shard = NamedSharding(mesh, P(mesh.axis_names[0]))
    return jax.jit(step, in_shardings=shard).lower(state, hp, keys).compile().as_text()

  assert "all-reduce" in compiled_step(dp_mesh)
  assert "all-reduce" not in compiled_step(core.runs_mesh(2))


def test_full_config_traces_on_a_data_parallel_mesh(tmp_path):
  """``configs/full.py`` as written (GPT-2 small, batch 64 x 1024 in 16 microbatches, chunked
  validation) traces one data-parallel step of its AdamW group on the 8 fake devices: shapes
  and the batch split are consistent (abstract evaluation only, nothing is computed)."""
  from experiments.soda.configs import full

  config = full.get_config()
  cfg = config.lm
  for t in cfg.horizons:
    assert t % cfg.chunk == 0
  assert cfg.batch_size % cfg.microbatches == 0 and cfg.val_windows % cfg.eval_batch == 0
  rng = np.random.default_rng(0)
  _write_shard(tmp_path / "x_train_000001.bin", rng.integers(0, 50257, 4096))
  _write_shard(tmp_path / "x_val_000000.bin", rng.integers(0, 50257, 2048))
  cfg.data_dir = str(tmp_path)
  setup = models.lm_task(cfg)
  assert 1.62e8 < setup["num_params"] < 1.64e8  # GPT-2 small (124M) + an untied 50304 x 768 head
  families = soda_grid.GROUPS["adam"][:2]
  runs = [r for r in soda_grid.family_grid(cfg) if r[0] in families][:2]
  hp, keys = soda_grid.group_grid(runs, [0], 0, cfg.horizons[0], families)
  mesh = train.grid_mesh(2, cfg.data_parallel, cfg.batch_size)
  assert dict(mesh.shape) == {"runs": 2, "data": 4}
  eng = train.setup_sweep(
    setup,
    families=families,
    cfg=cfg,
    mesh=mesh,
    microbatches=cfg.microbatches,
  )
  state = jax.eval_shape(jax.vmap(lambda h, k: eng.init_fn(h, k, None)), hp, keys)
  step = jax.vmap(lambda st, h, k: eng.step_fn(st, h, k, jnp.int32(0), None))
  _, loss = jax.eval_shape(step, state, hp, keys)
  assert loss.shape == (2,)
  ev = jax.eval_shape(jax.vmap(lambda st, h, k: eng.eval_fn(st, h, k, None)), state, hp, keys)
  assert ev.shape == (2,)
