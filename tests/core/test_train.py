"""TrainState, sharded steps and resume equality."""

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxpapers import core
from tests.jit_util import count_traces


class MLP(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs):
    # No bias before BatchNorm: its gradient is zero analytically, and Adam
    # would amplify float round-off in it into +-lr steps.
    self.l1 = nnx.Linear(din, dhidden, use_bias=False, rngs=rngs)
    self.bn = nnx.BatchNorm(dhidden, rngs=rngs)
    self.l2 = nnx.Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    return self.l2(jax.nn.relu(self.bn(self.l1(x))))


def make_state(seed=0, tx=None):
  model = MLP(4, 16, 3, rngs=nnx.Rngs(seed))
  return core.TrainState.create(model, tx or optax.adam(1e-2))


def loss_fn(model, batch):
  logits = model(batch["x"])
  return optax.softmax_cross_entropy_with_integer_labels(
    logits, batch["y"]
  ).mean()


@jax.jit
def train_step(state, batch):
  loss, grads, rest = state.value_and_grad(loss_fn, batch)
  return state.apply_gradients(grads, rest=rest), {"loss": loss}


def batch_fn(step, batch_size=32):
  key = jax.random.fold_in(jax.random.key(123), step)
  kx, ky = jax.random.split(key)
  return {
    "x": jax.random.normal(kx, (batch_size, 4)),
    "y": jax.random.randint(ky, (batch_size,), 0, 3),
  }


def assert_trees_close(a, b, **kw):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw)


def test_create_splits_params_and_batch_stats():
  state = make_state()
  assert state.step.dtype == jnp.int32
  n_params = sum(x.size for x in jax.tree.leaves(state.params))
  # linear, bn scale/bias, linear
  assert n_params == 4 * 16 + 16 * 2 + 16 * 3 + 3
  # running mean/var live outside params
  assert sum(x.size for x in jax.tree.leaves(state.rest)) >= 32


def test_apply_gradients_matches_manual_sgd():
  state = make_state(tx=optax.sgd(0.1))
  batch = batch_fn(0)
  _, grads, _ = jax.jit(lambda s, b: s.value_and_grad(loss_fn, b))(state, batch)
  new, _ = train_step(state, batch)
  expected = jax.tree.map(lambda p, g: p - 0.1 * g, state.params, grads)
  assert_trees_close(new.params, expected, rtol=1e-6, atol=1e-7)
  assert int(new.step) == 1


def test_sharded_step_equals_single_device(num_devices):
  assert num_devices == 8, "tests expect 8 fake CPU devices (tests/conftest.py)"
  state = make_state()
  single = state
  for s in range(3):
    single, _ = train_step(single, batch_fn(s, 64))

  mesh = core.make_mesh()
  sharded = core.replicate(state, mesh)
  for s in range(3):
    batch = core.shard_batch(batch_fn(s, 64), mesh)
    assert batch["x"].sharding.spec == jax.sharding.PartitionSpec("data")
    sharded, _ = train_step(sharded, batch)
  leaf = jax.tree.leaves(sharded.params)[0]
  assert len(leaf.sharding.device_set) == 8
  assert_trees_close(single.params, sharded.params, rtol=2e-5, atol=2e-6)
  assert_trees_close(single.rest, sharded.rest, rtol=2e-5, atol=2e-6)


def test_shard_batch_rejects_indivisible_batch():
  mesh = core.make_mesh()
  with pytest.raises(ValueError, match=r"\['x'\].*divisible by the 8 devices"):
    core.shard_batch({"x": np.zeros((10, 2))}, mesh)


def test_make_mesh_validates_device_count():
  with pytest.raises(ValueError, match="num_devices"):
    core.make_mesh(99)
  assert core.make_mesh(2).shape["data"] == 2


def test_second_call_does_not_recompile():
  state = make_state()
  state, _ = train_step(state, batch_fn(0))
  batch = batch_fn(1)
  with count_traces() as traces:
    state, _ = train_step(state, batch)
  assert traces["train_step"] == 0


def test_trace_counter_sees_each_retrace():
  # The recompilation checks of the suite rely on tests.jit_util seeing every
  # trace.
  @functools.partial(jax.jit, static_argnames="n")
  def scaled(x, n):
    return x * n

  with count_traces() as traces:
    scaled(jnp.ones(3), n=1)
    scaled(jnp.ones(3), n=1)
    scaled(jnp.ones(3), n=2)
    scaled(jnp.ones(4), n=2)
  assert traces["scaled"] == 3


def test_resume_equals_uninterrupted(tmp_path):
  full, full_hist = core.train_loop(
    make_state(), train_step, batch_fn, num_steps=12, log_every=3
  )
  # Interrupted run: stops after 7 steps (checkpoints at 5 and 7) ...
  part, _ = core.train_loop(
    make_state(),
    train_step,
    batch_fn,
    num_steps=7,
    workdir=tmp_path,
    checkpoint_every=5,
    log_every=3,
  )
  assert int(part.step) == 7
  # ... and is resumed by a fresh process-like call from a fresh initial state.
  fresh = make_state(seed=0)
  resumed, hist = core.train_loop(
    fresh,
    train_step,
    batch_fn,
    num_steps=12,
    workdir=tmp_path,
    checkpoint_every=5,
    log_every=3,
  )
  assert int(resumed.step) == 12
  assert_trees_close(full.params, resumed.params, rtol=0, atol=0)
  assert_trees_close(full.opt_state, resumed.opt_state, rtol=0, atol=0)
  assert_trees_close(full.rest, resumed.rest, rtol=0, atol=0)
  # The interrupted run also logged its last step (7); that record is kept.
  assert [h["step"] for h in hist] == [3, 6, 7, 9, 12]
  assert [h["step"] for h in full_hist] == [3, 6, 9, 12]
  # A different seed would not match: the test can fail.
  other, _ = core.train_loop(
    make_state(seed=1), train_step, batch_fn, num_steps=12
  )
  assert not np.allclose(
    np.asarray(jax.tree.leaves(other.params)[0]),
    np.asarray(jax.tree.leaves(full.params)[0]),
  )


def test_train_loop_runs_eval_and_logs(tmp_path):
  calls = []

  def eval_fn(state):
    calls.append(int(state.step))
    return {"step_seen": state.step}

  _, hist = core.train_loop(
    make_state(),
    train_step,
    batch_fn,
    num_steps=4,
    eval_fn=eval_fn,
    eval_every=2,
    log_every=2,
  )
  assert calls == [2, 4]
  assert [h["eval/step_seen"] for h in hist] == [2, 4]
  assert all(np.isfinite(h["train/loss"]) for h in hist)


def test_history_is_written_by_process_0_only(tmp_path, monkeypatch):
  from jaxpapers.core import distributed

  _, hist0 = core.train_loop(
    make_state(),
    train_step,
    batch_fn,
    num_steps=4,
    workdir=tmp_path / "p0",
    checkpoint_every=2,
    log_every=2,
  )
  assert [
    r["step"] for r in core.read_metrics(tmp_path / "p0", "history.jsonl")
  ] == [2, 4]
  monkeypatch.setattr(distributed, "is_main_process", lambda: False)
  _, hist1 = core.train_loop(
    make_state(),
    train_step,
    batch_fn,
    num_steps=4,
    workdir=tmp_path / "p1",
    checkpoint_every=2,
    log_every=2,
  )
  assert not (tmp_path / "p1" / "history.jsonl").exists()
  assert not list((tmp_path / "p1").glob("events.out.*"))
  # same history
  assert [r["step"] for r in hist1] == [r["step"] for r in hist0] == [2, 4]


def test_history_is_on_disk_before_each_checkpoint_is_saved(
  tmp_path, monkeypatch
):
  """What a run killed right after a checkpoint leaves: every record up to that
  step."""
  seen = {}
  real_save = core.Checkpointer.save

  def save(self, step, tree, **kw):
    seen[int(step)] = [
      r["step"] for r in core.read_metrics(tmp_path, "history.jsonl")
    ]
    return real_save(self, step, tree, **kw)

  monkeypatch.setattr(core.Checkpointer, "save", save)
  core.train_loop(
    make_state(),
    train_step,
    batch_fn,
    num_steps=6,
    workdir=tmp_path,
    checkpoint_every=2,
    log_every=1,
  )
  assert seen == {2: [1, 2], 4: [1, 2, 3, 4], 6: [1, 2, 3, 4, 5, 6]}


def test_resume_after_a_cut_off_history_line_logs_every_step_once(
  tmp_path, caplog
):
  kw = dict(workdir=tmp_path, checkpoint_every=3, log_every=1)
  core.train_loop(make_state(), train_step, batch_fn, num_steps=4, **kw)
  with (tmp_path / "history.jsonl").open("a") as f:
    f.write('{"train/loss": 1.1, "st')  # a record cut off by a crash
  with caplog.at_level(logging.WARNING):
    _, hist = core.train_loop(
      make_state(), train_step, batch_fn, num_steps=6, **kw
    )
  assert "dropping its last line" in caplog.text
  assert [h["step"] for h in hist] == list(range(1, 7))
  on_disk = core.read_metrics(tmp_path, "history.jsonl")
  assert [r["step"] for r in on_disk] == list(range(1, 7))
  assert [r["train/loss"] for r in on_disk] == [h["train/loss"] for h in hist]
