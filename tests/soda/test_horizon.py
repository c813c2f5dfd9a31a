"""The horizon study's library pieces: schedule, optimizer families, tasks, the
grid sweep."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpapers import soda
from jaxpapers.soda import _sweep

# The digits and smoke LM settings of experiments/soda/configs (b1, b2, warmup,
# cooldown).
DIGITS_OPT = dict(b1=0.9, b2=0.999, warmup_frac=0.0, cooldown_frac=0.3)
LM_OPT = dict(b1=0.9, b2=0.99, warmup_frac=0.05, cooldown_frac=0.3)
LM = dict(
  d_model=16, num_layers=1, num_heads=2, context=16, batch_size=4, val_windows=8
)


def test_digits_muon_mask_is_the_hidden_kernels():
  """Muon (and SODA(Muon)) act on fc1/fc2 kernels, not on the output layer or
  biases."""
  from flax import nnx

  params = nnx.split(soda.DigitsMLP(8, rngs=nnx.Rngs(0)))[1]
  mask = soda.mlp_hidden_mask(params)
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

  hp = {
    "lr": jnp.float32(3e-3),
    "wd": jnp.float32(0.1),
    "total": jnp.float32(60),
    "adam_lr": jnp.float32(0.0),
  }
  tx = soda.horizon_optimizer("adamw", hp, **DIGITS_OPT)
  ref = optax.adamw(
    soda.wsd_schedule(3e-3, 60, 0.0, 0.3),
    b1=0.9,
    b2=0.999,
    weight_decay=0.1,
  )
  p = {"w": jnp.ones((3, 2))}
  g = {"w": jnp.full((3, 2), 0.5)}
  u1, _ = tx.update(g, tx.init(p), p)
  u2, _ = ref.update(g, ref.init(p), p)
  np.testing.assert_allclose(u1["w"], u2["w"], rtol=1e-6)
  sched = soda.wsd_schedule(jnp.float32(1.0), jnp.float32(100), 0.0, 0.3)
  np.testing.assert_allclose(
    [float(sched(jnp.asarray(k))) for k in (0, 69, 70, 85, 99, 100)],
    [1.0, 1.0, 1.0, 0.5, 1 / 30, 0.0],
    atol=1e-6,
  )


def _write_shard(path, tokens):
  """A token shard in the reference layout: 256 int32 (magic, version, n,
  zeros), uint16 ids."""
  header = np.zeros(256, "<i4")
  header[:3] = 20240520, 1, len(tokens)
  path.write_bytes(
    header.tobytes() + np.asarray(tokens).astype("<u2").tobytes()
  )


def test_token_shards_read_back_and_feed_the_lm(tmp_path):
  """The shard layout (256-int32 header, uint16 ids), its errors, and the LM
  reading it."""

  rng = np.random.default_rng(0)
  train_ids = [rng.integers(0, 300, n) for n in (500, 400)]
  for i, t in enumerate(train_ids):
    _write_shard(tmp_path / f"toy_train_{i:06d}.bin", t)
  _write_shard(tmp_path / "toy_val_000000.bin", rng.integers(0, 300, 200))
  raw = (tmp_path / "toy_train_000000.bin").read_bytes()
  assert np.frombuffer(raw[:12], "<i4").tolist() == [20240520, 1, 500]
  assert len(raw) == 1024 + 2 * 500
  joined = soda.load_token_shards(tmp_path, "train")
  np.testing.assert_array_equal(joined, np.concatenate(train_ids))
  np.testing.assert_array_equal(
    soda.load_token_shards(tmp_path, "train", 600), joined[:600]
  )
  (tmp_path / "bad_val_000001.bin").write_bytes(np.zeros(256, "<i4").tobytes())
  with pytest.raises(ValueError, match="magic"):
    soda.load_token_shards(tmp_path, "val")
  with pytest.raises(FileNotFoundError, match="test"):
    soda.load_token_shards(tmp_path, "test")
  (tmp_path / "bad_val_000001.bin").unlink()

  setup = soda.lm_task(**LM, data_dir=str(tmp_path), vocab=384)
  assert setup["num_chars"] == 1100
  params = setup["init_params"](jax.random.key(0))
  assert params["embed"]["embedding"][...].shape == (384, LM["d_model"])
  # The unigram predictor: add-one-smoothed train frequencies, in bits per val
  # token.
  freq = np.bincount(np.concatenate(train_ids), minlength=384) + 1.0
  val = soda.load_token_shards(tmp_path, "val")
  np.testing.assert_allclose(
    setup["trivial"]["unigram_bits"],
    -np.mean(np.log2(freq[val] / freq.sum())),
    rtol=1e-9,
  )


def test_split_muon_groups_follow_their_own_optimizer():
  """A run of the Muon group and of the SODA(Muon) group (one family each)
  follows ``optax.contrib.muon`` and ``soda(muon, mask=hidden kernels)`` built
  directly."""
  setup = soda.digits_task(hidden=32)
  sched = lambda peak: soda.wsd_schedule(peak, 60.0, 0.0, 0.3)
  dims = lambda p: jax.tree.map(
    lambda h: optax.contrib.MuonDimensionNumbers() if h else None,
    soda.mlp_hidden_mask(p),
  )

  def muon(wd):
    return optax.contrib.muon(
      sched(0.03),
      weight_decay=wd,
      adam_learning_rate=sched(3e-3),
      adam_b1=0.9,
      adam_b2=0.999,
      adam_weight_decay=0.0,
      muon_weight_dimension_numbers=dims,
    )

  refs = {
    "muon": muon(0.3),
    "soda_muon": soda.soda(muon(0.0), mask=soda.mlp_hidden_mask),
  }
  for family, ref in refs.items():
    hp = {
      "lr": 0.03,
      "adam_lr": 3e-3,
      **({"wd": 0.3} if family == "muon" else {}),
    }
    hps, keys = soda.horizon_hparams([(family, hp)], [0], 0, 60, (family,))
    sweep = soda.horizon_sweep(setup, families=(family,), **DIGITS_OPT)
    one = jax.tree.map(lambda x: x[0], hps)
    state = sweep.init_fn(one, keys[0], None)
    params = setup["init_params"](jax.random.fold_in(keys[0], 0))
    opt = ref.init(params)

    @jax.jit
    def ref_step(params, opt, i, key=keys[0], ref=ref):
      batch = setup["batch_fn"](
        jax.random.fold_in(jax.random.fold_in(key, 1), i)
      )
      upd, opt = ref.update(
        jax.grad(setup["loss_fn"])(params, batch), opt, params
      )
      return optax.apply_updates(params, upd), opt

    step = jax.jit(
      lambda s, i, one=one, sweep=sweep: sweep.step_fn(
        s, one, keys[0], i, None
      )[0]
    )
    for i in range(3):
      state = step(state, jnp.int32(i))
      params, opt = ref_step(params, opt, jnp.int32(i))
    for a, b in zip(jax.tree.leaves(state[0]), jax.tree.leaves(params)):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_choose_data_parallel_and_grid_mesh():
  """Devices per run: the idle devices of runs-only sharding, never two runs'
  state per device."""

  got = [
    _sweep.choose_data_parallel(r, d, b)
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
  assert soda.grid_mesh(30, 1, 64) is None  # runs-only: core.runs_mesh
  # 8 fake devices: 3 runs -> 2 devices each, on 3 of the 4 runs-axis rows (no
  # padded run).
  assert dict(soda.grid_mesh(3, 0, 8).shape) == {"runs": 3, "data": 2}
  assert dict(soda.grid_mesh(3, 4, 8).shape) == {"runs": 2, "data": 4}
  # The batch constraint: split over 'data' when the axis divides, else left to
  # the compiler.
  mesh = soda.grid_mesh(2, 4, 8)
  split = jax.jit(_sweep.data_constraint(mesh))
  assert split(jnp.ones((8, 3))).sharding.spec[0] == "data"
  assert split(jnp.ones((6, 3))).shape == (6, 3)
  with pytest.raises(ValueError, match="data_parallel=3 must divide"):
    soda.grid_mesh(3, 3, 8)
  with pytest.raises(ValueError, match="data_parallel must be an int"):
    soda.grid_mesh(3, -1, 8)


def test_data_parallel_grid_equals_single_device():
  """Two SODA(AdamW) LM runs on a (2 runs x 4 data) mesh of the 8 fake devices,
  with gradient accumulation over two microbatches, train like the same runs on
  one device with the whole batch; the data-parallel step all-reduces its
  gradients (each device holds a quarter of the batch) and the runs-only step
  communicates nothing."""
  from jax.sharding import NamedSharding
  from jax.sharding import PartitionSpec as P

  from jaxpapers import core

  setup = soda.lm_task(
    **{**LM, "batch_size": 8, "val_windows": 8, "eval_batch": 4}
  )
  families = ("soda_adamw",)
  hp, keys = soda.horizon_hparams(
    [(f, {"lr": lr}) for f in families for lr in (1e-2, 3e-3)],
    [0],
    0,
    6,
    families,
  )

  def sweep(mesh, microbatches=1):
    return soda.horizon_sweep(
      setup, families=families, **LM_OPT, mesh=mesh, microbatches=microbatches
    )

  dp_mesh = soda.grid_mesh(2, 4, 8)
  single = core.runs_mesh(2, devices=jax.devices()[:1])
  ref = sweep(single).run(hp, keys, num_steps=6, show_progress=False)
  got = sweep(dp_mesh, microbatches=2).run(
    hp, keys, num_steps=6, show_progress=False
  )
  np.testing.assert_allclose(got.history, ref.history, rtol=2e-5, atol=1e-6)
  np.testing.assert_allclose(got.evals, ref.evals, rtol=2e-5, atol=1e-6)
  for a, b in zip(jax.tree.leaves(got.state[0]), jax.tree.leaves(ref.state[0])):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
  # the two runs differ: the comparison is per run
  assert np.ptp(ref.history[:, -1]) > 0

  def compiled_step(mesh):
    eng = sweep(mesh)
    step = jax.vmap(lambda st, h, k: eng.step_fn(st, h, k, jnp.int32(0), None))
    state = jax.eval_shape(
      jax.vmap(lambda h, k: eng.init_fn(h, k, None)), hp, keys
    )
    shard = NamedSharding(mesh, P(mesh.axis_names[0]))
    return (
      jax.jit(step, in_shardings=shard)
      .lower(state, hp, keys)
      .compile()
      .as_text()
    )

  assert "all-reduce" in compiled_step(dp_mesh)
  assert "all-reduce" not in compiled_step(core.runs_mesh(2))


def test_gpt_is_causal_and_starts_as_the_identity_stack():
  """A later token never changes an earlier position's logits; zero-initialised
  output projections make every block the identity at init (logits =
  head(ln_f(embed + pos)))."""
  from flax import nnx

  model = soda.GPT(
    vocab=11, d=8, layers=2, heads=2, context=6, rngs=nnx.Rngs(0)
  )
  x = jnp.asarray([[1, 2, 3, 4, 5, 6]])
  y = x.at[0, 4].set(9)
  np.testing.assert_allclose(model(x)[0, :4], model(y)[0, :4], rtol=1e-6)
  assert not np.allclose(model(x)[0, 4], model(y)[0, 4])
  h = model.embed(x) + model.pos[...][:6]
  np.testing.assert_allclose(
    model(x), model.head(model.ln_f(h)), rtol=1e-5, atol=1e-6
  )


def test_digits_trivial_predictors_match_numpy():
  """The class-prior NLL and majority accuracy, recomputed from sklearn's digits
  in float64."""
  from sklearn.datasets import load_digits

  task = soda.digits_task(num_train=1000, data_seed=0)
  _, y = load_digits(return_X_y=True)
  y = y[np.random.default_rng(0).permutation(len(y))]
  prior = np.bincount(y[:1000], minlength=10) / 1000
  assert task["trivial"]["class_prior_nll"] == pytest.approx(
    -np.log(prior[y[1000:]]).mean()
  )
  majority = (y[1000:] == np.argmax(prior)).mean()
  assert task["trivial"]["majority_accuracy"] == pytest.approx(majority)
