"""The VP process, sampler steps and embeddings, jitted and eager, against
float64 closed forms.

The schedule (a frozen dataclass), the parametrisation name and the step count
are static and closed over; data, times and keys are traced under jit.
"""

import functools

import chex
import jax
import numpy as np
from absl.testing import absltest, parameterized

from jaxpapers import dual_rate as dr

RNG = np.random.default_rng(41)
B, SHAPE = 3, (3, 2, 2, 1)
X = RNG.normal(size=SHAPE).astype(np.float32)
EPS = RNG.normal(size=SHAPE).astype(np.float32)
T = np.array([0.2, 0.55, 0.9], np.float32)
S = np.array([0.1, 0.3, 0.9], np.float32)
SCHEDULES = [
  ("cosine", dr.NoiseSchedule()),
  (
    "linear_shifted",
    dr.NoiseSchedule(kind="linear", logsnr_min=-8.0, logsnr_max=8.0, shift=0.5),
  ),
]


def np_alpha_sigma(t, schedule):
  """float64 alpha_t, sigma_t broadcast to [B, 1, 1, 1]."""
  t = np.asarray(t, np.float64)
  if schedule.kind == "cosine":
    lam = -2.0 * np.log(np.tan(0.5 * np.pi * t)) + schedule.shift
  else:
    lam = (
      schedule.logsnr_max
      + t * (schedule.logsnr_min - schedule.logsnr_max)
      + schedule.shift
    )
  lam = np.clip(lam, schedule.logsnr_min, schedule.logsnr_max)
  a2 = 1.0 / (1.0 + np.exp(-lam))
  return np.sqrt(a2)[:, None, None, None], np.sqrt(1.0 - a2)[
    :, None, None, None
  ]


class ProcessTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(*SCHEDULES)
  def test_q_sample_and_the_parametrisations(self, schedule):
    z = self.variant(functools.partial(dr.q_sample, schedule=schedule))(
      X, T, EPS
    )
    a, s = np_alpha_sigma(T, schedule)
    want_z = a * X + s * EPS
    chex.assert_shape(z, SHAPE)
    chex.assert_trees_all_close(
      z, want_z.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    want_v = a * EPS - s * X
    a32, s32 = (
      a[:, 0, 0, 0].astype(np.float32),
      s[:, 0, 0, 0].astype(np.float32),
    )
    v = self.variant(dr.v_from_x_eps)(X, EPS, a32, s32)
    chex.assert_trees_all_close(
      v, want_v.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    # Each parametrisation's output maps back to the data x.
    outputs = {"x": X, "v": want_v.astype(np.float32), "eps": EPS}
    for name, out in outputs.items():
      fn = self.variant(
        functools.partial(
          dr.output_to_x, schedule=schedule, parametrization=name
        )
      )
      chex.assert_trees_all_close(
        fn(out, want_z.astype(np.float32), T), X, rtol=1e-4, atol=2e-5
      )

  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(*SCHEDULES)
  def test_posterior_and_ddim_step(self, schedule):
    z, x_hat = EPS, X
    mean, var = self.variant(
      functools.partial(dr.posterior, schedule=schedule)
    )(z, x_hat, T, S)
    a_t, s_t = np_alpha_sigma(T, schedule)
    a_s, s_s = np_alpha_sigma(S, schedule)
    a_ts = a_t / a_s
    s2_ts = s_t**2 - a_ts**2 * s_s**2
    want_mean = a_ts * s_s**2 / s_t**2 * z + a_s * s2_ts / s_t**2 * x_hat
    want_var = s2_ts * s_s**2 / s_t**2
    chex.assert_shape(var, (B, 1, 1, 1))
    chex.assert_trees_all_close(
      (mean, var),
      (want_mean.astype(np.float32), want_var.astype(np.float32)),
      atol=1e-5,
    )
    got = self.variant(functools.partial(dr.ddim_step, schedule=schedule))(
      z, x_hat, T, S
    )
    want = a_s * x_hat + s_s * (z - a_t * x_hat) / s_t
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_ancestral_step_is_the_posterior_mean_plus_scaled_noise(self):
    schedule = dr.NoiseSchedule()
    key = jax.random.key(3)
    fn = self.variant(functools.partial(dr.ancestral_step, schedule=schedule))
    got = fn(EPS, X, T, S, key=key)
    mean, var = dr.posterior(EPS, X, T, S, schedule)
    xi = np.asarray(jax.random.normal(key, SHAPE), np.float64)
    want = (
      np.asarray(mean, np.float64) + np.sqrt(np.asarray(var, np.float64)) * xi
    )
    chex.assert_trees_all_close(
      got, want.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    chex.assert_type(got, np.float32)


class GridAndEmbeddingTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_karras_grid_and_edm_preconditioning(self):
    n, lo, hi, rho = 5, 0.01, 20.0, 7.0
    grid = self.variant(
      functools.partial(
        dr.karras_sigmas, n, sigma_min=lo, sigma_max=hi, rho=rho
      )
    )()
    i = np.arange(n) / (n - 1)
    want = np.append(
      (hi ** (1 / rho) + i * (lo ** (1 / rho) - hi ** (1 / rho))) ** rho, 0.0
    )
    chex.assert_shape(grid, (n + 1,))
    chex.assert_trees_all_close(grid, want.astype(np.float32), rtol=1e-5)
    sigma = np.array([0.1, 1.0, 7.0], np.float32)
    sd = 0.5
    got = self.variant(
      functools.partial(dr.edm_preconditioning, sigma_data=sd)
    )(sigma)
    s = sigma.astype(np.float64)
    want = (
      sd**2 / (s**2 + sd**2),
      s * sd / np.sqrt(s**2 + sd**2),
      1 / np.sqrt(s**2 + sd**2),
    )
    want += (np.log(s) / 4,)
    chex.assert_trees_all_close(
      tuple(got), tuple(w.astype(np.float32) for w in want), rtol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_timestep_embedding_is_sines_then_cosines(self):
    dim = 6
    got = self.variant(
      functools.partial(dr.timestep_embedding, dim=dim, scale=10.0)
    )(T)
    freqs = np.exp(-np.log(10_000.0) * np.arange(dim // 2) / (dim // 2))
    args = 10.0 * T.astype(np.float64)[:, None] * freqs[None]
    chex.assert_shape(got, (B, dim))
    chex.assert_type(got, np.float32)
    want = np.concatenate([np.sin(args), np.cos(args)], -1).astype(np.float32)
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
  absltest.main()
