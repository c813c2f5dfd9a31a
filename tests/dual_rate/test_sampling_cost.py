"""Samplers (K = 1 equivalence, call counts, compile-once) and the cost
counter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import dual_rate as dr
from tests.dual_rate._util import tiny_dual, tiny_single
from tests.jit_util import count_traces

SCHED = dr.NoiseSchedule()


def _model():
  m = tiny_dual(seed=1)
  # give the zero-initialised output layer weights so the model is not trivial
  m.denoiser.out.kernel.value = 0.05 * jax.random.normal(
    jax.random.key(5), m.denoiser.out.kernel.value.shape
  )
  return m


def _jitted(m):
  """Jitted encoder / denoiser / composite of ``m`` (eager NNX calls compile op
  by op: slow)."""
  g, st = nnx.split(m)
  b = lambda t, z: jnp.full((z.shape[0],), t, jnp.float32)
  enc = jax.jit(lambda z, t: nnx.merge(g, st).encode(z, b(t, z)))
  den = jax.jit(
    lambda z, t, h, tau, dl: nnx.merge(g, st).denoise(
      z, b(t, z), h, b(tau, z), None, dl
    )
  )
  return enc, den


def _composite(m):
  g, st = nnx.split(m)
  return jax.jit(
    lambda z, t: nnx.merge(g, st)(z, jnp.full((z.shape[0],), t, jnp.float32))
  )


def _reference_sampler(m, key, shape, n, sampler):
  """Ordinary sampler of the composite network f(z, t) = D(z, t, E(z, t), t),
  written as a python loop with the closed-form float64 step formulas."""
  k_init, k_loop = jax.random.split(key)
  z = np.asarray(jax.random.normal(k_init, shape), np.float64)
  ts = np.linspace(1.0, 0.0, n + 1)
  lam = lambda t: float(SCHED.logsnr(t))
  f = _composite(m)
  for i in range(n):
    t, s = ts[i], ts[i + 1]
    lt, ls = lam(t), lam(s)
    a_t, s_t = np.sqrt(1 / (1 + np.exp(-lt))), np.sqrt(1 / (1 + np.exp(lt)))
    a_s, s_s = np.sqrt(1 / (1 + np.exp(-ls))), np.sqrt(1 / (1 + np.exp(ls)))
    v = np.asarray(f(jnp.asarray(z, jnp.float32), t), np.float64)
    x_hat = a_t * z - s_t * v
    eps_hat = (z - a_t * x_hat) / s_t
    if sampler == "ddim":
      z = a_s * x_hat + s_s * eps_hat
    else:
      s2ts = s_t**2 - (a_t / a_s) ** 2 * s_s**2
      mean = (a_t / a_s) * s_s**2 / s_t**2 * z + a_s * s2ts / s_t**2 * x_hat
      xi = np.asarray(
        jax.random.normal(jax.random.fold_in(k_loop, i), shape), np.float64
      )
      z = mean + np.sqrt(s2ts * s_s**2 / s_t**2) * xi
  return x_hat


@pytest.mark.parametrize("sampler", ["ddim", "ancestral"])
def test_k1_fresh_features_equals_ordinary_sampler(sampler):
  m = _model()
  shape, n = (3, 8, 8, 1), 6
  got = dr.sample(
    m,
    jax.random.key(0),
    shape,
    num_steps=n,
    refresh=np.ones(n, bool),
    sampler=sampler,
    schedule=SCHED,
  )
  ref = _reference_sampler(m, jax.random.key(0), shape, n, sampler)
  np.testing.assert_allclose(np.asarray(got), ref, atol=2e-3, rtol=1e-3)


def test_heun_k1_matches_reference():
  """Heun with refresh every step: E at the first evaluation of each step, both
  Heun evaluations read that h (spec §3.4), against a float64 python-loop
  reference."""
  m = _model()
  shape, n = (2, 8, 8, 1), 3
  got = dr.sample(
    m, jax.random.key(1), shape, num_steps=n, sampler="heun", schedule=SCHED
  )
  sig = np.asarray(dr.karras_sigmas(n), np.float64)
  x = sig[0] * np.asarray(
    jax.random.normal(jax.random.split(jax.random.key(1))[0], shape), np.float64
  )
  enc, den = _jitted(m)

  def D(x, s, h, t_h):
    t = float(dr.edm_sigma_to_t(jnp.float32(s), SCHED))
    z = x / np.sqrt(1 + s**2)
    v = np.asarray(
      den(
        jnp.asarray(z, jnp.float32),
        t,
        h,
        t_h,
        float(SCHED.logsnr(t) - SCHED.logsnr(t_h)),
      ),
      np.float64,
    )
    a_t, s_t = (float(u) for u in SCHED.alpha_sigma(t))
    return a_t * z - s_t * v

  for i in range(n):
    t_i = float(dr.edm_sigma_to_t(jnp.float32(sig[i]), SCHED))
    h = enc(jnp.asarray(x / np.sqrt(1 + sig[i] ** 2), jnp.float32), t_i)
    d = (x - D(x, sig[i], h, t_i)) / sig[i]
    xe = x + (sig[i + 1] - sig[i]) * d
    if sig[i + 1] > 0:
      xe = x + (sig[i + 1] - sig[i]) * 0.5 * (
        d + (xe - D(xe, sig[i + 1], h, t_i)) / sig[i + 1]
      )
    x = xe
  np.testing.assert_allclose(np.asarray(got), x, atol=5e-3, rtol=2e-3)


def test_reuse_changes_samples_and_first_refresh_required():
  m = _model()
  a = dr.sample(
    m,
    jax.random.key(0),
    (2, 8, 8, 1),
    num_steps=8,
    refresh=dr.refresh_schedule(8, interval=1),
  )
  b = dr.sample(
    m,
    jax.random.key(0),
    (2, 8, 8, 1),
    num_steps=8,
    refresh=dr.refresh_schedule(8, interval=4),
  )
  assert not np.allclose(a, b)
  with pytest.raises(ValueError, match="refresh\\[0\\]"):
    dr.sample(
      m,
      jax.random.key(0),
      (2, 8, 8, 1),
      num_steps=4,
      refresh=np.array([False, True, True, True]),
    )
  with pytest.raises(ValueError, match="refresh must be"):
    dr.sample(
      m, jax.random.key(0), (2, 8, 8, 1), num_steps=4, refresh=np.ones(5, bool)
    )
  with pytest.raises(ValueError, match="sampler"):
    dr.sample(m, jax.random.key(0), (2, 8, 8, 1), num_steps=4, sampler="dpm")


def test_refresh_schedules():
  for kind in dr.REFRESH_KINDS:
    for n, k in [(16, 4), (8, 2), (7, 3), (5, 8)]:
      r = dr.refresh_schedule(n, interval=k, kind=kind)
      assert (
        r.dtype == bool and r.shape == (n,) and r[0] and r.sum() == -(-n // k)
      )
  assert list(
    np.nonzero(dr.refresh_schedule(16, interval=4, kind="front_loaded"))[0]
  ) == [
    0,
    1,
    4,
    9,
  ]
  assert list(np.nonzero(dr.refresh_schedule(16, interval=4))[0]) == [
    0,
    4,
    8,
    12,
  ]


@pytest.mark.parametrize("sampler", dr.SAMPLERS)
def test_call_counts_match_hand_count_and_compile_once(sampler):
  m = _model()
  n = 8
  with count_traces() as traces:
    for interval, kind in [
      (1, "uniform"),
      (4, "uniform"),
      (3, "front_loaded"),
      (8, "back_loaded"),
    ]:
      r = dr.refresh_schedule(n, interval=interval, kind=kind)
      _, info = dr.sample(
        m,
        jax.random.key(0),
        (2, 8, 8, 1),
        num_steps=n,
        refresh=r,
        sampler=sampler,
        return_info=True,
      )
      hand = {
        "encoder_calls": int(r.sum()),
        "denoiser_calls": 2 * n - 1 if sampler == "heun" else n,
      }
      assert (
        {k: int(v) for k, v in info.items()}
        == hand
        == dr.call_counts(r, sampler=sampler)
      )
  assert traces["_sample_jit"] <= 1  # one compile serves every refresh schedule
  _, info = dr.sample(
    tiny_single(),
    jax.random.key(0),
    (2, 8, 8, 1),
    num_steps=n,
    sampler=sampler,
    return_info=True,
  )
  assert int(info["encoder_calls"]) == 0 and int(info["denoiser_calls"]) == (
    2 * n - 1 if sampler == "heun" else n
  )


def test_xla_flops_hand_count_and_sampling_cost():
  # A bias-free two-layer linear map: FLOPs = 2 B (d_in d_h + d_h d_out),
  # exactly.
  class Lin(nnx.Module):
    def __init__(self):
      self.a = nnx.Linear(12, 20, use_bias=False, rngs=nnx.Rngs(0))
      self.b = nnx.Linear(20, 5, use_bias=False, rngs=nnx.Rngs(0))

    def __call__(self, x):
      return self.b(self.a(x))

  lin = Lin()
  assert dr.xla_flops(lambda x: lin(x), jnp.ones((3, 12))) == 2 * 3 * (
    12 * 20 + 20 * 5
  )
  # sampling_cost = n_E C_E + n_D C_D with the hand counts
  r = dr.refresh_schedule(8, interval=4)
  c = dr.sampling_cost({"encoder": 100.0, "denoiser": 10.0}, r)
  assert c == {"encoder_calls": 2, "denoiser_calls": 8, "flops": 280.0}
  assert (
    dr.sampling_cost({"network": 50.0}, r, sampler="heun")["flops"] == 15 * 50.0
  )
  # spec §3.5: C_D = 0.1 C_E with K = 4 gives about 3.1x
  assert (
    abs(dr.speedup(1.0, 0.1, dr.refresh_schedule(64, interval=4)) - 1.1 / 0.35)
    < 1e-9
  )


def test_component_flops_ratio_and_single_network():
  m = tiny_dual()
  f = dr.component_flops(m, jnp.zeros((1, 8, 8, 1)))
  assert f["encoder"] > 0 and f["denoiser"] > 0
  f2 = dr.component_flops(m, jnp.zeros((2, 8, 8, 1)))
  np.testing.assert_allclose(f2["encoder"], 2 * f["encoder"], rtol=0.05)
  assert (
    dr.component_flops(tiny_single(), jnp.zeros((1, 8, 8, 1)))["network"] > 0
  )
