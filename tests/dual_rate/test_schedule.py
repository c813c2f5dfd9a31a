"""Schedule, parametrisations and sampler steps against float64 closed forms."""

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import dual_rate as dr


def _np_logsnr_cosine(t):
  return np.clip(-2 * np.log(np.tan(np.pi * t / 2)), -15, 15)


def test_cosine_logsnr_closed_form_and_vp():
  sched = dr.NoiseSchedule()
  t = np.linspace(0.0, 1.0, 101)
  lam = np.asarray(sched.logsnr(t), np.float64)
  with np.errstate(divide="ignore"):
    ref = _np_logsnr_cosine(t)
  np.testing.assert_allclose(lam, ref, rtol=1e-5, atol=1e-4)
  a, s = sched.alpha_sigma(t)
  np.testing.assert_allclose(
    np.asarray(a) ** 2 + np.asarray(s) ** 2, 1.0, atol=1e-6
  )
  # alpha^2/sigma^2 = e^lambda away from the clip.
  mid = slice(10, 90)
  np.testing.assert_allclose(
    np.log(np.asarray(a)[mid] ** 2 / np.asarray(s)[mid] ** 2),
    ref[mid],
    atol=1e-4,
  )
  # cosine: alpha_t = cos(pi t/2) exactly in the interior.
  np.testing.assert_allclose(
    np.asarray(a)[mid], np.cos(np.pi * t[mid] / 2), atol=1e-6
  )
  # Finite gradient at the ends.
  g = jax.grad(lambda tt: sched.logsnr(tt).sum())(jnp.array([0.0, 1.0]))
  assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize(
  "kind,shift",
  [("cosine", 0.0), ("cosine", 2 * math.log(0.5)), ("linear", 1.0)],
)
def test_t_from_logsnr_inverts(kind, shift):
  sched = dr.NoiseSchedule(kind=kind, shift=shift)
  t = jnp.linspace(0.05, 0.95, 19)
  np.testing.assert_allclose(sched.t_from_logsnr(sched.logsnr(t)), t, atol=2e-5)


def test_linear_schedule_and_shift():
  sched = dr.NoiseSchedule(kind="linear", shift=1.0)
  np.testing.assert_allclose(sched.logsnr(0.5), 1.0, atol=1e-6)
  np.testing.assert_allclose(sched.logsnr(0.25), 8.5, atol=1e-5)


def test_bad_schedule_raises():
  with pytest.raises(ValueError, match="kind"):
    dr.NoiseSchedule(kind="quadratic")
  with pytest.raises(ValueError, match="logsnr_min"):
    dr.NoiseSchedule(logsnr_min=3.0, logsnr_max=1.0)


class ConversionVariantsTest(chex.TestCase):
  """The parametrisation conversions and loss weights, with and without
  ``jax.jit``."""

  @chex.variants(with_jit=True, without_jit=True)
  def test_parametrisation_conversions_roundtrip(self):
    rng = np.random.default_rng(0)
    x, eps = rng.normal(size=(2, 2, 3, 3, 1))
    t = np.array([0.3, 0.8])
    sched = dr.NoiseSchedule()
    a, s = (np.asarray(u, np.float64) for u in sched.alpha_sigma(t))
    ab, sb = a[:, None, None, None], s[:, None, None, None]
    z = ab * x + sb * eps
    v = ab * eps - sb * x
    f32 = lambda u: jnp.asarray(u, jnp.float32)
    q_sample = self.variant(functools.partial(dr.q_sample, schedule=sched))
    chex.assert_trees_all_close(q_sample(f32(x), t, f32(eps)), z, atol=1e-5)
    chex.assert_trees_all_close(dr.v_from_x_eps(x, eps, a, s), v, atol=1e-6)
    for fn, (first, second), want in (
      (dr.x_from_v, (z, v), x),
      (dr.eps_from_x, (z, x), eps),
      (dr.x_from_eps, (z, eps), x),
    ):
      # alpha, sigma: [B]
      got = self.variant(fn)(f32(first), f32(second), f32(a), f32(s))
      chex.assert_trees_all_close(got, want, atol=2e-5)
    zf = f32(z)
    for p, out in (("x", x), ("v", v), ("eps", eps)):
      to_x = functools.partial(
        dr.output_to_x, schedule=sched, parametrization=p
      )
      chex.assert_trees_all_close(
        self.variant(to_x)(f32(out), zf, t), x, atol=1e-4
      )
    with pytest.raises(ValueError, match="parametrization"):
      dr.output_to_x(zf, zf, t, sched, "score")

  @chex.variants(with_jit=True, without_jit=True)
  def test_loss_weights_match_parametrisation_losses(self):
    rng = np.random.default_rng(1)
    x, eps, xh = rng.normal(size=(3, 5))
    lam = 1.3
    a, s = (
      math.sqrt(1 / (1 + math.exp(-lam))),
      math.sqrt(1 / (1 + math.exp(lam))),
    )
    z = a * x + s * eps
    eh = (z - a * xh) / s
    vh, v = a * eh - s * xh, a * eps - s * x
    base = np.sum((xh - x) ** 2)
    weight = lambda name: self.variant(
      functools.partial(dr.loss_weight, weighting=name)
    )
    lams = jnp.asarray([lam, lam], jnp.float32)
    want_v, want_eps = (
      np.full(2, np.sum((vh - v) ** 2)),
      np.full(2, np.sum((eh - eps) ** 2)),
    )
    chex.assert_trees_all_close(weight("v")(lams) * base, want_v, rtol=1e-5)
    chex.assert_trees_all_close(weight("eps")(lams) * base, want_eps, rtol=1e-5)
    chex.assert_trees_all_close(weight("x")(lams), np.ones(2, np.float32))

  @chex.variants(with_jit=True, without_jit=True)
  def test_edm_sigma_to_t_inverts_sigma_over_alpha(self):
    sig = np.asarray(dr.karras_sigmas(5), np.float64)[:5]
    sched = dr.NoiseSchedule()
    t = self.variant(functools.partial(dr.edm_sigma_to_t, schedule=sched))(
      jnp.asarray(sig, jnp.float32)
    )
    a, s = (np.asarray(u, np.float64) for u in sched.alpha_sigma(t))
    chex.assert_trees_all_close(s / a, sig, rtol=1e-4)
    # lambda(t) = -2 log sigma_edm (the cosine schedule's closed form, away from
    # its clip).
    chex.assert_trees_all_close(
      _np_logsnr_cosine(np.asarray(t, np.float64)),
      -2 * np.log(sig),
      rtol=1e-3,
      atol=1e-3,
    )


def test_posterior_closed_form_and_monte_carlo():
  sched = dr.NoiseSchedule()
  t, s = 0.7, 0.4
  lt, ls = (_np_logsnr_cosine(np.float64(u)) for u in (t, s))
  at, st = np.sqrt(1 / (1 + np.exp(-lt))), np.sqrt(1 / (1 + np.exp(lt)))
  as_, ss = np.sqrt(1 / (1 + np.exp(-ls))), np.sqrt(1 / (1 + np.exp(ls)))
  ats = at / as_
  s2ts = st**2 - ats**2 * ss**2
  x, z = np.array([0.5, -1.0]), np.array([0.2, 0.9])
  mean_ref = ats * ss**2 / st**2 * z + as_ * s2ts / st**2 * x
  var_ref = s2ts * ss**2 / st**2
  mean, var = dr.posterior(
    jnp.asarray(z, jnp.float32), jnp.asarray(x, jnp.float32), t, s, sched
  )
  np.testing.assert_allclose(mean, mean_ref, rtol=1e-5)
  np.testing.assert_allclose(var, var_ref, rtol=1e-4)
  # Monte Carlo: z_s ~ q(z_s|x), z_t ~ q(z_t|z_s) has E[z_s | z_t] linear with these coefficients.
  rng = np.random.default_rng(0)
  n = 200_000
  zs = as_ * x[0] + ss * rng.normal(size=n)
  zt = ats * zs + np.sqrt(s2ts) * rng.normal(size=n)
  resid = zs - (ats * ss**2 / st**2 * zt + as_ * s2ts / st**2 * x[0])
  assert abs(resid.mean()) < 5e-3 and abs(resid.var() - var_ref) < 5e-3


def test_ddim_and_ancestral_steps():
  sched = dr.NoiseSchedule()
  rng = np.random.default_rng(2)
  x, eps = (
    rng.normal(size=(2, 4)).astype(np.float32),
    rng.normal(size=(2, 4)).astype(np.float32),
  )
  t, s = 0.9, 0.35
  zt = dr.q_sample(x, t, eps, sched)
  # With the true x, DDIM moves along the same-eps trajectory exactly.
  np.testing.assert_allclose(
    dr.ddim_step(zt, x, t, s, sched), dr.q_sample(x, s, eps, sched), atol=1e-5
  )
  key = jax.random.key(0)
  mean, var = dr.posterior(zt, x, t, s, sched)
  xi = jax.random.normal(key, zt.shape)
  np.testing.assert_allclose(
    dr.ancestral_step(zt, x, t, s, sched, key),
    mean + jnp.sqrt(var) * xi,
    atol=1e-6,
  )


def test_karras_grid_and_edm_preconditioning():
  sig = np.asarray(dr.karras_sigmas(5), np.float64)
  i = np.arange(5)
  ref = (80 ** (1 / 7) + i / 4 * (0.002 ** (1 / 7) - 80 ** (1 / 7))) ** 7
  np.testing.assert_allclose(sig[:5], ref, rtol=1e-5)
  assert sig[5] == 0.0
  sched = dr.NoiseSchedule()
  t = dr.edm_sigma_to_t(jnp.asarray(sig[:5], jnp.float32), sched)
  a, s = sched.alpha_sigma(t)
  np.testing.assert_allclose(np.asarray(s / a), ref, rtol=1e-4)
  # EDM with sigma_data = 1 equals v-prediction: c_skip = alpha^2, c_out =
  # sigma_t, c_in x_edm = z.
  c_skip, c_out, c_in, c_noise = dr.edm_preconditioning(s / a, sigma_data=1.0)
  np.testing.assert_allclose(c_skip, a**2, rtol=1e-5)
  np.testing.assert_allclose(c_out, s, rtol=1e-5)
  np.testing.assert_allclose(c_in / a, 1.0, rtol=1e-5)
  np.testing.assert_allclose(c_noise, np.log(ref) / 4, rtol=1e-4, atol=1e-6)
