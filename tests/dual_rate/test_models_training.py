"""Networks and the stale-context training objective."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxpapers import dual_rate as dr
from tests.dual_rate._util import randomize, tiny_dual, tiny_single

_randomize_zero_inits = randomize


def test_shapes_and_validation():
  m = tiny_dual(num_classes=3)
  z = jnp.zeros((2, 8, 8, 1))
  es = jax.eval_shape  # traces without compiling
  h = es(lambda z: m.encode(z, 0.5, jnp.array([0, 2])), z)
  assert h.shape == (2, 2, 2, 8)
  assert (
    es(lambda z, h: m.denoise(z, jnp.array([0.2, 0.3]), h, 0.5), z, h).shape
    == z.shape
  )
  assert es(lambda z: tiny_single()(z, 0.1), z).shape == z.shape
  with pytest.raises(ValueError, match="z must be"):
    es(lambda z: m.encode(z, 0.5), jnp.zeros((2, 8, 8)))
  with pytest.raises(ValueError, match="t must be"):
    es(lambda z: m.encode(z, jnp.zeros((3,))), z)
  with pytest.raises(ValueError, match="parametrization"):
    tiny_dual(parametrization="score")
  f = dr.component_flops(m, jnp.zeros((1, 8, 8, 1)))
  assert f["encoder"] > 0 and f["denoiser"] > 0


def test_denoiser_uses_features_and_staleness():
  m = _randomize_zero_inits(tiny_dual())
  g, st = nnx.split(m)
  z = jax.random.normal(jax.random.key(0), (2, 8, 8, 1))
  h = jax.jit(lambda z: nnx.merge(g, st).encode(z, 0.5))(z)
  den = jax.jit(
    lambda h, tau, dl: nnx.merge(g, st).denoise(
      z, jnp.full((2,), 0.4), h, jnp.full((2,), tau), None, dl
    )
  )
  a = den(h, 0.5, 1.0)
  assert not np.allclose(a, den(h + 1.0, 0.5, 1.0))
  assert not np.allclose(a, den(h, 0.7, 1.0))
  assert not np.allclose(a, den(h, 0.5, 0.0))


def test_staleness_distribution():
  k = np.asarray(
    dr.sample_staleness(jax.random.key(0), 20000, max_staleness=4, p_fresh=0.4)
  )
  assert set(np.unique(k)) == {0, 1, 2, 3}
  np.testing.assert_allclose((k == 0).mean(), 0.4, atol=0.02)
  np.testing.assert_allclose(
    [(k == j).mean() for j in (1, 2, 3)], 0.2, atol=0.02
  )
  assert np.all(
    np.asarray(
      dr.sample_staleness(jax.random.key(0), 10, max_staleness=1, p_fresh=0.0)
    )
    == 0
  )


def test_fresh_only_loss_equals_composite_diffusion_loss():
  """With K_max = 1 (tau = t) every coupling reduces to the standard loss of the
  composite network D(z_t, t, E(z_t, t), t); check against a direct computation
  with the same draws."""
  m = _randomize_zero_inits(tiny_dual())
  sched = dr.NoiseSchedule()
  x = jax.random.normal(jax.random.key(3), (4, 8, 8, 1))
  key = jax.random.key(7)
  k_t, _, k_eps, _, _ = jax.random.split(key, 5)
  t = jax.random.uniform(k_t, (4,))
  eps = jax.random.normal(k_eps, x.shape)
  a, s = (
    np.asarray(u, np.float64)[:, None, None, None] for u in sched.alpha_sigma(t)
  )
  z = a * np.asarray(x, np.float64) + s * np.asarray(eps, np.float64)
  g, st = nnx.split(m)
  v_hat = np.asarray(
    jax.jit(lambda z, t: nnx.merge(g, st)(z, t))(
      jnp.asarray(z, jnp.float32), t
    ),
    np.float64,
  )
  v = a * np.asarray(eps, np.float64) - s * np.asarray(x, np.float64)
  ref = np.mean(np.mean((v_hat - v) ** 2, axis=(1, 2, 3)))
  for coupling in dr.COUPLINGS:
    loss, _ = jax.jit(
      lambda st, x: dr.dual_rate_loss(
        nnx.merge(g, st),
        x,
        None,
        key,
        schedule=sched,
        max_staleness=1,
        coupling=coupling,
      )
    )(st, x)
    np.testing.assert_allclose(float(loss), ref, rtol=2e-3)


def test_couplings_are_on_one_trajectory():
  """DDIM coupling: z_t and z_tau share eps. Ancestral coupling: z_t has the marginal q(z_t|x)
  (checked by moments over many draws)."""
  sched = dr.NoiseSchedule()
  x = jnp.full((1,), 0.7)
  tau, t = 0.8, 0.5
  n = 100_000
  keys = jax.random.split(jax.random.key(0), 2)
  z_tau = dr.q_sample(
    jnp.broadcast_to(x, (n,)), tau, jax.random.normal(keys[0], (n,)), sched
  )
  mean, var = dr.posterior(z_tau, jnp.broadcast_to(x, (n,)), tau, t, sched)
  z_t = mean + jnp.sqrt(var) * jax.random.normal(keys[1], (n,))
  a_t, s_t = (float(u) for u in sched.alpha_sigma(t))
  assert (
    abs(float(z_t.mean()) - a_t * 0.7) < 0.01
    and abs(float(z_t.std()) - s_t) < 0.01
  )


@pytest.mark.parametrize("coupling", dr.COUPLINGS)
def test_joint_gradients_reach_encoder_and_denoiser(coupling):
  m = _randomize_zero_inits(tiny_dual(num_classes=2))
  x = jax.random.normal(jax.random.key(1), (8, 8, 8, 1))
  graphdef, params = nnx.split(m)

  def lf(p):
    return dr.dual_rate_loss(
      nnx.merge(graphdef, p),
      x,
      jnp.arange(8) % 2,
      jax.random.key(2),
      max_staleness=4,
      p_fresh=0.25,
      coupling=coupling,
      rollout_frac=0.5,
    )[0]

  g = jax.jit(jax.grad(lf))(params)
  g_enc = optax.global_norm(nnx.state(nnx.merge(graphdef, g).encoder))
  g_den = optax.global_norm(nnx.state(nnx.merge(graphdef, g).denoiser))
  assert float(g_enc) > 0 and float(g_den) > 0 and np.isfinite(float(g_enc))


def test_train_step_reduces_loss():
  m = tiny_dual()
  x = (
    0.5
    * jnp.sign(jax.random.normal(jax.random.key(0), (1, 8, 8, 1)))
    * jnp.ones((16, 1, 1, 1))
  )
  tx = optax.adam(3e-3)
  graphdef, p = nnx.split(m)
  step = dr.make_train_step(
    graphdef,
    lambda mm, x, c, k: dr.dual_rate_loss(mm, x, c, k, max_staleness=2),
    tx,
  )
  o, e = tx.init(p), jax.tree.map(jnp.copy, p)
  losses = []
  for i in range(40):
    p, o, e, met = step(p, o, e, x, None, jax.random.key(i % 4))
    losses.append(float(met["loss"]))
  assert np.mean(losses[-8:]) < 0.8 * np.mean(losses[:8])


def test_rollout_coupling_has_no_shared_eps_leak_and_no_feature_control():
  """'rollout' with rollout_frac = 0 rolls nothing out, so it must be the
  ancestral coupling (same draws), not the shared-eps DDIM pair that leaks x.
  And the no-feature control ignores the encoder entirely: its loss does not
  change when the encoder's parameters do."""
  m = _randomize_zero_inits(tiny_dual())
  g, st = nnx.split(m)
  x = jax.random.normal(jax.random.key(4), (8, 8, 8, 1))
  key = jax.random.key(5)

  @jax.jit
  def losses(st):
    def lf(**k):
      return dr.dual_rate_loss(
        nnx.merge(g, st), x, None, key, max_staleness=4, p_fresh=0.0, **k
      )

    return [
      lf(coupling="rollout", rollout_frac=0.0)[0],
      lf(coupling="ancestral")[0],
      lf(coupling="ddim")[0],
      lf(use_features=False)[0],
    ]

  roll0, anc, ddim, nofeat = (float(v) for v in losses(st))
  np.testing.assert_allclose(roll0, anc, rtol=1e-6)
  assert abs(roll0 - ddim) > 1e-3 * abs(ddim) and abs(
    nofeat - anc
  ) > 1e-3 * abs(anc)
  other = nnx.split(_randomize_zero_inits(tiny_dual(), seed=9))[1]
  other["denoiser"] = st["denoiser"]  # same denoiser, another encoder
  assert float(losses(other)[3]) == nofeat
