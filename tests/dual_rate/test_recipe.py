"""The training recipe: the networks' optimizer and the joint MMD loss of a
student pair."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import dual_rate as dr
from tests.dual_rate._util import randomize, tiny_single


def _reference_optimizer(params, grads, *, lr, num_steps, warmup, decay):
  """float64 NumPy transcription of clip(1) -> AdamW(wd=0) with warmup-cosine -> EMA."""
  b1, b2, eps = 0.9, 0.999, 1e-8
  warmup = min(warmup, max(num_steps - 1, 1))
  total = max(num_steps, 2)
  p = np.asarray(params, np.float64)
  m, v, ema = np.zeros_like(p), np.zeros_like(p), p.copy()
  out = []
  for t, g in enumerate(grads):
    g = np.asarray(g, np.float64)
    g = g * min(1.0, 1.0 / np.linalg.norm(g))
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mhat, vhat = m / (1 - b1 ** (t + 1)), v / (1 - b2 ** (t + 1))
    if t < warmup:
      rate = lr * t / warmup
    else:
      rate = (
        lr
        * 0.5
        * (
          1
          + math.cos(
            math.pi * min(t - warmup, total - warmup) / (total - warmup)
          )
        )
      )
    p = p - rate * mhat / (np.sqrt(vhat) + eps)
    ema = decay * ema + (1 - decay) * p
    out.append((p.copy(), ema.copy()))
  return out


def test_training_optimizer_against_a_float64_reference():
  params = {"w": jnp.asarray([0.5, -1.0, 2.0])}
  grads = [
    [3.0, 4.0, 0.0],
    [0.1, -0.2, 0.05],
    [-0.3, 0.0, 0.4],
    [0.02, 0.01, -0.03],
  ]
  tx = dr.training_optimizer(0.1, 4, 2, 0.5)
  state = tx.init(params)
  ref = _reference_optimizer(
    params["w"], grads, lr=0.1, num_steps=4, warmup=2, decay=0.5
  )
  for g, (p_ref, ema_ref) in zip(grads, ref):
    updates, state = tx.update({"w": jnp.asarray(g)}, state, params)
    params = jax.tree.map(lambda a, u: a + u, params, updates)
    np.testing.assert_allclose(params["w"], p_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
      dr.find_ema(state)["w"], ema_ref, rtol=1e-5, atol=1e-7
    )
  # The first step's learning rate is 0 (warmup from 0): the parameters moved
  # only after it.
  assert not np.allclose(ref[0][0], ref[-1][0])
  np.testing.assert_allclose(ref[0][0], [0.5, -1.0, 2.0])


@pytest.mark.parametrize(
  "kw, match",
  [
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(num_steps=0), "num_steps"),
    (dict(warmup_steps=-1), "warmup_steps"),
    (dict(ema_decay=1.0), "decay"),
  ],
)
def test_training_optimizer_names_a_bad_setting(kw, match):
  args = (
    dict(learning_rate=1e-3, num_steps=10, warmup_steps=2, ema_decay=0.9) | kw
  )
  with pytest.raises(ValueError, match=match):
    dr.training_optimizer(**args)


def _grads(fn, pair):
  graphdef, params = nnx.split(pair)
  return jax.jit(jax.grad(lambda p: fn(nnx.merge(graphdef, p))))(params)


def test_mmd_pair_loss_is_the_sum_and_its_gradients_do_not_mix():
  """The joint loss is L_eta + L_phi, and L_eta reaches only the student, L_phi
  only the auxiliary denoiser (each stops the gradient into the other network),
  so one gradient step on the sum is one step of each update; a dropped
  stop_gradient mixes them."""
  teacher = randomize(tiny_single(seed=2), seed=2)
  pair = dr.MMDPair(
    randomize(tiny_single(seed=0), seed=0),
    randomize(tiny_single(seed=1), seed=1),
  )
  x = jax.random.uniform(jax.random.key(0), (4, 8, 8, 1), minval=-1, maxval=1)
  key = jax.random.key(1)
  kw = dict(num_student_steps=2)
  loss, met = jax.jit(
    lambda p: dr.mmd_pair_loss(p, teacher, x, None, key, **kw)
  )(pair)
  np.testing.assert_allclose(
    loss, met["student_loss"] + met["aux_loss"], rtol=1e-6
  )
  assert set(met) == {"student_loss", "aux_loss", "moment_gap"}

  pick = lambda name: (
    lambda p: dr.mmd_pair_loss(p, teacher, x, None, key, **kw)[1][name]
  )
  ref_s, ref_a = (
    _grads(pick("student_loss"), pair),
    _grads(pick("aux_loss"), pair),
  )
  assert all(not np.any(v) for v in jax.tree.leaves(ref_s["aux"]))
  assert all(not np.any(v) for v in jax.tree.leaves(ref_a["student"]))
  assert any(np.any(v) for v in jax.tree.leaves(ref_s["student"]))
  assert any(np.any(v) for v in jax.tree.leaves(ref_a["aux"]))


def test_mmd_student_loss_vanishes_when_the_auxiliary_equals_the_teacher():
  """L_eta = sg(x_aux - x_teacher) . x_tilde: zero, with zero gradient, once the
  auxiliary denoiser matches the teacher (the moment condition holds)."""
  teacher = randomize(tiny_single(seed=2), seed=2)
  pair = dr.MMDPair(
    randomize(tiny_single(seed=0), seed=0), nnx.merge(*nnx.split(teacher))
  )
  x = jax.random.uniform(jax.random.key(0), (4, 8, 8, 1), minval=-1, maxval=1)
  _, met = dr.mmd_pair_loss(
    pair, teacher, x, None, jax.random.key(3), num_student_steps=3
  )
  assert float(met["student_loss"]) == 0.0 and float(met["moment_gap"]) == 0.0
  g = _grads(
    lambda p: dr.mmd_pair_loss(p, teacher, x, None, jax.random.key(3))[1][
      "student_loss"
    ],
    pair,
  )
  # zero up to XLA's reassociation round-off
  for leaf in jax.tree.leaves(g["student"]):
    np.testing.assert_allclose(leaf, 0.0, atol=1e-6)
