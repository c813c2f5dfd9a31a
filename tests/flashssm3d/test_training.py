"""The training recipe against float64 NumPy: optimizer, FLOP-budget step count,
batches, step."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import core
from jaxpapers import flashssm3d as fs


def _numpy_recipe(
  p, grads, lr, warmup, steps, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8
):
  """Clip to global norm 1, then AdamW under linear warm-up + cosine to 0.05 lr
  (float64)."""
  w = min(warmup, max(steps - 1, 1))
  total = max(steps, 2)

  def rate(t):
    if t < w:
      return lr * t / w
    frac = min(t - w, total - w) / (total - w)
    return 0.05 * lr + (lr - 0.05 * lr) * 0.5 * (1 + math.cos(math.pi * frac))

  p, mu, nu = (
    p.astype(np.float64),
    np.zeros_like(p, np.float64),
    np.zeros_like(p, np.float64),
  )
  for t, g in enumerate(grads):
    g = g.astype(np.float64)
    g = g * min(1.0, 1.0 / np.linalg.norm(g))
    mu, nu = b1 * mu + (1 - b1) * g, b2 * nu + (1 - b2) * g * g
    m_hat, v_hat = mu / (1 - b1 ** (t + 1)), nu / (1 - b2 ** (t + 1))
    p = p - rate(t) * (m_hat / (np.sqrt(v_hat) + eps) + wd * p)
  return p


@pytest.mark.parametrize("warmup,steps", [(2, 6), (20, 4), (0, 5)])
def test_train_optimizer_matches_numpy(warmup, steps):
  rng = np.random.default_rng(0)
  p0 = rng.normal(size=7).astype(np.float32)
  grads = [
    rng.normal(scale=s, size=7).astype(np.float32)
    for s in (3.0, 0.1, 2.0, 0.05, 1.0)
  ]
  tx = fs.train_optimizer(1e-2, warmup=warmup, steps=steps)
  p, state = jax.numpy.asarray(p0), tx.init(p0)
  for g in grads:
    u, state = tx.update(jax.numpy.asarray(g), state, p)
    p = p + u
  want = _numpy_recipe(p0, grads, 1e-2, warmup, steps)
  np.testing.assert_allclose(np.asarray(p), want, rtol=1e-5, atol=1e-7)
  assert not np.allclose(want, p0)  # the comparison is not vacuous


def test_steps_within_budget():
  # floor
  assert fs.steps_within_budget(10.0, 95.0, min_steps=1, max_steps=100) == 9
  assert fs.steps_within_budget(10.0, 100.0, min_steps=1, max_steps=100) == 10
  # at least min
  assert fs.steps_within_budget(10.0, 5.0, min_steps=2, max_steps=100) == 2
  # overspent
  assert fs.steps_within_budget(10.0, -50.0, min_steps=3, max_steps=100) == 3
  # at most max
  assert fs.steps_within_budget(10.0, 1e9, min_steps=1, max_steps=50) == 50
  # no usable count: min_steps
  for bad in (float("nan"), 0.0, -1.0, float("inf")):
    assert fs.steps_within_budget(bad, 100.0, min_steps=4, max_steps=50) == 4


def test_sample_batches_draws_the_seeded_indices():
  images = np.arange(5 * 2, dtype=np.float32).reshape(5, 2)
  targets = {"t": np.arange(5) * 10, "u": (np.arange(5) % 2).astype(bool)}
  batches = fs.sample_batches(images, targets, batch_size=3, seed=4)
  for step in (0, 1, 7):
    idx = np.random.default_rng((4, step)).choice(5, 3, replace=False)
    x, t = batches(step)
    np.testing.assert_array_equal(np.asarray(x), images[idx])
    np.testing.assert_array_equal(np.asarray(t["t"]), 10 * idx)
    np.testing.assert_array_equal(np.asarray(t["u"]), idx % 2 == 1)
    # pure in step
    np.testing.assert_array_equal(np.asarray(batches(step)[0]), np.asarray(x))
  assert not np.array_equal(
    np.asarray(batches(0)[0]), np.asarray(batches(1)[0])
  )
  # fewer examples than the batch: drawn with replacement
  x, _ = fs.sample_batches(
    images[:2], {"t": targets["t"][:2]}, batch_size=6, seed=0
  )(0)
  want = np.random.default_rng((0, 0)).choice(2, 6, replace=True)
  np.testing.assert_array_equal(np.asarray(x), images[want])


class _Tiny(nnx.Module):
  """A stand-in model: every output an affine function of the mean pixel
  (compiles in seconds)."""

  def __init__(self):
    self.w = nnx.Param(np.linspace(0.5, 1.5, 9, dtype=np.float32))
    self.b = nnx.Param(np.full((3,), 0.2, np.float32))

  def __call__(self, images):  # [B, S, H, W, 3]
    m = images.mean(-1, keepdims=True)  # [B, S, H, W, 1]
    pose = images.mean((2, 3, 4))[..., None] * self.w[...]  # [B, S, 9]
    depth = 1.0 + m * self.b[0]
    conf = 1.0 + jax.nn.softplus(m[..., 0] * self.b[1])
    points = m * self.w[...][:3] + self.b[2]
    return fs.Predictions(pose, depth, conf, points, conf, pose[None])


def test_train_step_is_one_adamw_update_on_the_distillation_loss():
  d = fs.scene_arrays(fs.render_scenes(jax.random.key(1), 2, 2, image_size=8))
  images, targets = d["images"], fs.ground_truth_targets(d)
  weights = fs.LossWeights(depth=0.5, grad=0.0)
  tx = fs.train_optimizer(1e-2, warmup=0, steps=3)
  state = core.TrainState.create(_Tiny(), tx)
  new, aux = jax.jit(fs.train_step(weights))(state, (images, targets))

  def loss(params):
    pred = nnx.merge(state.graphdef, params, state.rest)(images)
    return fs.distillation_loss(
      pred, targets, weights, pose_stages=pred.pose_stages
    )

  (total, _), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(
    state.params
  )
  updates, _ = tx.update(grads, state.opt_state, state.params)
  want = jax.tree.map(lambda p, u: p + u, state.params, updates)
  np.testing.assert_allclose(aux["total"], total, rtol=1e-6)
  assert aux["cam"] > 0 and aux["depth"] > 0 and int(new.step) == 1
  moved = 0.0
  for a, b, p in zip(
    *(jax.tree.leaves(t) for t in (new.params, want, state.params))
  ):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    moved = max(moved, float(np.abs(np.asarray(a) - np.asarray(p)).max()))
  assert moved > 0  # warm-up 0: the first step moves the parameters


def test_compile_step_runs_the_step_and_counts_every_scan_step():
  """A step whose scan applies L matrix products: the compiled step gives
  NumPy's float64 result and the count is L times one product's 2 n^3 FLOPs (XLA
  alone counts the body once)."""
  n, L = 8, 5
  rng = np.random.default_rng(0)
  w = rng.normal(size=(n, n)).astype(np.float32) / n

  def step(state, batch):
    h, _ = jax.lax.scan(lambda h, _: (h @ batch, None), state, None, length=L)
    return h, {"norm": jnp.sum(h * h)}

  s0 = rng.normal(size=(n, n)).astype(np.float32)
  compiled, flops = fs.compile_step(step, jnp.asarray(s0), jnp.asarray(w))
  # the state passed in is donated
  out, aux = compiled(jnp.asarray(s0), jnp.asarray(w))
  want = s0.astype(np.float64) @ np.linalg.matrix_power(w.astype(np.float64), L)
  np.testing.assert_allclose(np.float64(out), want, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(float(aux["norm"]), np.sum(want * want), rtol=1e-4)
  assert L * 2 * n**3 <= flops < L * 2 * n**3 + 4 * n * n + 64
  assert (
    fs.compile_step(step, jnp.asarray(s0), jnp.asarray(w), count=False)[1]
    is None
  )
