"""`dual_rate.fit`: the memoised training step, the teacher as an argument, data
parallelism."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxpapers import core
from jaxpapers import dual_rate as dr
from jaxpapers.dual_rate import _fit
from tests.dual_rate._util import tiny_single


def test_mmd_teacher_is_an_argument_not_an_hlo_constant():
  """A closed-over teacher would be baked into the step's program as constants
  (fatal for a full-size teacher); the step must take it as an argument."""
  teacher = tiny_single(seed=2)
  tg, tstate = nnx.split(teacher)
  pair = dr.MMDPair(tiny_single(seed=0), tiny_single(seed=1))
  state = core.TrainState.create(pair, optax.adam(1e-3))
  step = dr.fit_step(
    state.graphdef, dr.mmd_step_loss(tg, dr.NoiseSchedule(), 2, None)
  )
  batch = (jnp.zeros((2, 8, 8, 1)), None, jax.random.key(0))
  text = step.lower(state, batch, tstate).as_text()
  largest = max(v.size for v in jax.tree.leaves(tstate))
  sizes = [
    int(np.prod([int(d) for d in shape.split("x")]))
    for shape in re.findall(
      r"dense<\"0x[0-9A-Fa-f]+\"> : tensor<([0-9x]+)x[a-z0-9]+>", text
    )
  ]
  assert max(sizes, default=0) < largest, (max(sizes, default=0), largest)


def test_training_step_compiles_once_across_training_seeds():
  """Networks of two training seeds share one compiled step (same structure, the
  run's single loss and optimizer objects), and the reused program gives the
  values of a freshly compiled step (the factory without memoisation, a fresh
  optimizer object)."""

  def loss(m, x, c, k, consts):
    del consts
    return dr.diffusion_loss(m, x, c, k)

  tx = _fit._optimizer(1e-3, 10, 2, 0.9)
  assert _fit._optimizer(1e-3, 10, 2, 0.9) is tx
  batch = (
    jax.random.normal(jax.random.key(0), (4, 8, 8, 1)),
    jnp.zeros((4,), jnp.int32),
    jax.random.key(1),
  )
  states = [
    core.TrainState.create(tiny_single(seed=s, num_classes=3), tx)
    for s in (0, 1)
  ]
  step = dr.fit_step(states[0].graphdef, loss)
  assert dr.fit_step(states[1].graphdef, loss) is step
  outs = [step(s, batch, None) for s in states]
  assert step._cache_size() == 1
  fresh_tx = _fit._optimizer.__wrapped__(1e-3, 10, 2, 0.9)
  fresh = core.TrainState.create(tiny_single(seed=1, num_classes=3), fresh_tx)
  ref = dr.fit_step.__wrapped__(fresh.graphdef, lambda *a: loss(*a))(
    fresh, batch, None
  )
  for a, b in zip(
    jax.tree.leaves((outs[1][0].params, outs[1][1])),
    jax.tree.leaves((ref[0].params, ref[1])),
  ):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# Slow: two compilations of a training step (about 20 s on 2 idle cores).
@pytest.mark.slow
def test_data_parallel_fit_equals_single_device(tmp_path):
  """`fit` (configs/full.py) trains data-parallel over the mesh (8 fake CPU
  devices here) with a prefetching input pipeline; the result must equal the
  single-device, unprefetched run."""
  assert jax.device_count() == 8
  rng = np.random.default_rng(0)
  data = {
    "train_images": rng.uniform(-1, 1, (32, 8, 8, 1)).astype(np.float32),
    "train_labels": np.zeros((32,), np.int32),
  }

  def loss(m, x, c, k, consts):
    del c, consts
    return dr.diffusion_loss(m, x, None, k)

  out = []
  for dp in (False, True):
    model, _, _ = dr.fit(
      tiny_single(seed=0),
      loss,
      data["train_images"],
      data["train_labels"],
      name="dp",
      steps=3,
      learning_rate=1e-2,
      warmup_steps=1,
      ema_decay=0.5,
      batch_size=16,
      seed=0,
      workdir=tmp_path / str(dp),
      data_parallel=dp,
      prefetch=2 if dp else 0,
    )
    out.append(nnx.state(model, nnx.Param))
  sharding = jax.tree.leaves(out[1])[0].sharding
  assert len(sharding.device_set) == 8
  for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1])):
    # Adam steps of size ~lr; reduction-order round-off moves near-zero weights
    # by ~1e-6.
    np.testing.assert_allclose(
      np.asarray(a), np.asarray(b), rtol=1e-3, atol=5e-5
    )
