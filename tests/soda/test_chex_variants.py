"""SODA's optax update steps and LMO directions, with and without ``jax.jit``.

Each optimizer is run a few steps with its ``update`` under the variant and
compared with a float64 NumPy recursion of the documented equations; the
directions with closed forms (the exact polar factor from an SVD, sign and norm
rescalings).
"""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers import soda

PARAMS = {
  "w": np.array([[0.5, -1.0], [2.0, 0.25]], np.float32),
  "b": np.array([0.3], np.float32),
}


def _grads(n, seed=0):
  rng = np.random.default_rng(seed)
  return [
    jax.tree.map(lambda p: rng.normal(size=p.shape).astype(np.float32), PARAMS)
    for _ in range(n)
  ]


def _flat(tree):
  return np.concatenate([np.ravel(tree["b"]), np.ravel(tree["w"])]).astype(
    np.float64
  )


def _run(test, opt, grads):
  """Applies ``opt`` to PARAMS with the variant-wrapped update; returns the
  final params."""
  step = test.variant(lambda p, s, g: opt.update(g, s, p))
  params, state = PARAMS, opt.init(PARAMS)
  for g in grads:
    updates, state = step(params, state, g)
    params = optax.apply_updates(params, updates)
  chex.assert_trees_all_equal_shapes_and_dtypes(params, PARAMS)
  return params


class SodaVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_soda_around_sgd_is_the_anchored_average(self):
    lr, grads = 0.1, _grads(4)
    for anchor in ("init", "zero"):
      got = _run(self, soda.soda(optax.sgd(lr), anchor=anchor), grads)
      z0 = _flat(PARAMS) if anchor == "init" else np.zeros(5)
      x = _flat(PARAMS)
      for k, g in enumerate(grads):
        x = x - lr * _flat(g) - (x - z0) / (k + 2)
      chex.assert_trees_all_close(_flat(got), x, rtol=1e-5, atol=1e-6)
    # The unrolled form of the "init" anchor: x_K = z_0 + sum_j (j + 2) /
    # (K + 1) u_j.
    K = len(grads)
    unrolled = _flat(PARAMS) + sum(
      (j + 2) / (K + 1) * -lr * _flat(g) for j, g in enumerate(grads)
    )
    got = _run(self, soda.soda(optax.sgd(lr)), grads)
    chex.assert_trees_all_close(_flat(got), unrolled, rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_soda_adamw_matches_float64_adam_plus_average(self):
    lr, b1, b2, eps = 0.05, 0.9, 0.99, 1e-8
    grads = _grads(3, seed=1)
    got = _run(self, soda.soda_adamw(lr, b1=b1, b2=b2, eps=eps), grads)
    x = z0 = _flat(PARAMS)
    m = v = np.zeros(5)
    for k, g in enumerate(grads):
      g = _flat(g)
      m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g**2
      u = (
        -lr
        * (m / (1 - b1 ** (k + 1)))
        / (np.sqrt(v / (1 - b2 ** (k + 1))) + eps)
      )
      x = x + u - (x - z0) / (k + 2)
    chex.assert_trees_all_close(_flat(got), x, rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_optimistic_momentum_both_inits(self):
    alpha, alpha_bar = 0.3, 0.6
    grads = _grads(3, seed=2)
    for init in ("grad", "zeros"):
      opt = soda.scale_by_optimistic_momentum(alpha, alpha_bar, init=init)
      step = self.variant(lambda s, g, opt=opt: opt.update(g, s))
      state = opt.init(PARAMS)
      m = None if init == "grad" else np.zeros(5)
      for k, g in enumerate(grads):
        out, state = step(state, g)
        g = _flat(g)
        if m is None:
          m = g  # m^0 = g^0, so the first output is g^0
        m = (1 - alpha) * m + alpha * g
        m_used = m if init == "grad" else m / (1 - (1 - alpha) ** (k + 1))
        want = (1 - alpha_bar) * m_used + alpha_bar * g
        chex.assert_trees_all_close(_flat(out), want, rtol=1e-5, atol=1e-7)

  @chex.variants(with_jit=True, without_jit=True)
  def test_newton_schulz_cubic_converges_to_the_polar_factor(self):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 3)).astype(np.float32)  # batch of tall matrices
    fn = self.variant(
      functools.partial(
        soda.newton_schulz, ns_steps=40, coeffs=(1.5, -0.5, 0.0)
      )
    )
    got = fn(x)
    u, _, vt = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    chex.assert_shape(got, x.shape)
    chex.assert_type(got, jnp.float32)
    chex.assert_trees_all_close(got, u @ vt, atol=2e-4)

  @chex.variants(with_jit=True, without_jit=True)
  def test_lmo_directions_closed_forms(self):
    rng = np.random.default_rng(4)
    d_in, d_out = 4, 3
    g = rng.normal(size=(d_in, d_out)).astype(np.float32)
    bias = rng.normal(size=5).astype(np.float32)

    @self.variant
    def directions(g, bias):
      return {
        "sign": soda.lmo_direction(g, "sign"),
        "colnorm": soda.lmo_direction(g, "colnorm"),
        "rownorm": soda.lmo_direction(g, "rownorm"),
        "bias_rms": soda.lmo_direction(bias, "bias_rms"),
      }

    got = directions(g, bias)
    g64, b64 = g.astype(np.float64), bias.astype(np.float64)
    want = {
      "sign": np.sign(g64) / d_in,
      "colnorm": g64
      / np.linalg.norm(g64, axis=1, keepdims=True)
      * np.sqrt(d_out),
      "rownorm": g64
      / np.linalg.norm(g64, axis=0, keepdims=True)
      / np.sqrt(d_in),
      "bias_rms": b64 / np.sqrt(np.mean(b64**2)),
    }
    chex.assert_trees_all_equal_shapes(got, want)
    chex.assert_trees_all_close(got, want, rtol=1e-5)
