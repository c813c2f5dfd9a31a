"""Width multipliers, presets, the init law and the width-scaled Adam against
closed forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpapers import denseam as D


def test_multipliers_are_the_power_laws():
  p = D.Parametrization(
    base_width=8,
    sigma0=2.0,
    alpha0=3.0,
    gamma0=5.0,
    a=0.5,
    b=0.25,
    c=1.0,
    d=2.0,
    g=1.5,
    e=0.5,
    beta_rule="power",
  )
  m = p.multipliers(32)  # K / K0 = 4
  assert m["alpha"] == pytest.approx(3.0 * 4**-0.5)
  assert m["init_std"] == pytest.approx(2.0 * 4**-0.25)
  assert m["lr_scale"] == pytest.approx(1 / 4)
  assert m["eps_scale"] == pytest.approx(1 / 16)
  assert m["gamma"] == pytest.approx(5.0 * 4**-1.5)
  assert m["beta_scale"] == pytest.approx(2.0)
  # At the base width every multiplier is its base value.
  m0 = p.multipliers(8)
  assert (m0["alpha"], m0["gamma"], m0["init_std"], m0["lr_scale"]) == (
    3.0,
    5.0,
    2.0,
    1.0,
  )
  sl = p.replace(beta_rule="sqrtlog").multipliers(64)
  assert sl["beta_scale"] == pytest.approx(
    math.sqrt(math.log(64) / math.log(8))
  )


def test_presets():
  for k in (16, 1024):
    assert set(D.Parametrization.standard(16).multipliers(k).values()) == {1.0}
    assert D.Parametrization.hypothesis_lse(16).multipliers(
      k
    ) == D.Parametrization.standard(16).multipliers(k)
  hp = D.Parametrization.hypothesis_poly(3, base_width=16).multipliers(256)
  assert hp["gamma"] == pytest.approx(1 / 16) and hp[
    "eps_scale"
  ] == pytest.approx(1 / 16)
  assert hp["alpha"] == 1.0 and hp["lr_scale"] == 1.0
  with pytest.raises(NotImplementedError, match="arXiv 2605.10164"):
    D.Parametrization.from_paper()


def test_derived_presets():
  """LSE: only Adam's eps follows 1/K; polynomial: gamma and eps follow 1/K; lr
  never moves."""
  lse = D.Parametrization.derived("lse", base_width=16).multipliers(256)
  assert lse == {
    "alpha": 1.0,
    "gamma": 1.0,
    "beta_scale": 1.0,
    "init_std": 1.0,
    "lr_scale": 1.0,
    "eps_scale": pytest.approx(1 / 16),
  }
  poly = D.Parametrization.derived("poly", 10, base_width=16)
  assert poly.name == "derived_poly10"
  m = poly.multipliers(64)
  assert m["gamma"] == pytest.approx(1 / 4) and m["eps_scale"] == pytest.approx(
    1 / 4
  )
  assert (m["alpha"], m["init_std"], m["lr_scale"], m["beta_scale"]) == (
    1.0,
    1.0,
    1.0,
    1.0,
  )
  with pytest.raises(ValueError, match="energy must be 'lse' or 'poly'"):
    D.Parametrization.derived("relu")


def test_init_memories_has_the_prescribed_std():
  p = D.Parametrization(base_width=16, sigma0=1.5, b=0.5)
  xi = D.init_memories(jax.random.key(0), 256, 64, p)
  assert xi.shape == (256, 64) and xi.dtype == jnp.float32
  xi = np.asarray(xi, np.float64)
  want = 1.5 * (256 / 16) ** -0.5 / math.sqrt(64)
  assert xi.std() == pytest.approx(want, rel=0.02)
  assert abs(xi.mean()) < 3 * want / math.sqrt(xi.size)


def test_make_optimizer_first_step_is_scaled_adam():
  """Adam's first step is -lr g / (|g| + eps) per entry, with lr and eps scaled by width."""
  p = D.Parametrization(base_width=4, c=1.0, d=1.0, eps0=1e-3)
  g = jnp.array([1e-4, -2e-3, 0.5])
  opt = D.make_optimizer(p, 8, 0.1)  # K/K0 = 2: lr 0.05, eps 5e-4
  upd, _ = opt.update(g, opt.init(jnp.zeros(3)))
  want = (
    -0.05
    * np.asarray(g, np.float64)
    / (np.abs(np.asarray(g, np.float64)) + 5e-4)
  )
  np.testing.assert_allclose(np.asarray(upd), want, rtol=1e-5)


def test_make_optimizer_takes_a_traced_learning_rate():
  p = D.Parametrization.standard(4)

  @jax.jit
  def first_update(lr):
    opt = D.make_optimizer(p, 4, lr)
    return opt.update(jnp.ones(2), opt.init(jnp.zeros(2)))[0]

  np.testing.assert_allclose(
    np.asarray(first_update(jnp.float32(0.3))), -0.3, rtol=1e-5
  )
  assert isinstance(D.make_optimizer(p, 4, 0.1), optax.GradientTransformation)
