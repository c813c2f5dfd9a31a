"""Energy, gradient, dynamics and losses, jitted and eager, against the float64
NumPy reference.

The static config is closed over; the role multipliers are traced arguments
under jit.
"""

import functools

import chex
import numpy as np
from absl.testing import absltest, parameterized

from jaxpapers import denseam as D
from tests.denseam import reference as R

RNG = np.random.default_rng(31)
K, N, B = 5, 4, 3
XI = (RNG.normal(size=(K, N)) / np.sqrt(N)).astype(np.float32)
X = RNG.normal(size=(B, N)).astype(np.float32)
MULT = {"alpha": 1.2, "gamma": 0.8, "beta_scale": 1.5}
KW = {"alpha": 1.2, "gamma": 0.8}
NORMS = [("identity", "none"), ("layernorm", "layernorm")]


def _kw(energy, beta=2.0, n=3):
  return dict(energy_kind=energy, n=n, beta=beta * MULT["beta_scale"], **KW)


def _mult():
  return {k: np.float32(v) for k, v in MULT.items()}


class EnergyTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(*NORMS)
  def test_energy_of_both_families(self, norm):
    for energy in D.ENERGIES:
      cfg = D.DenseAMConfig(energy=energy, n=3, beta=2.0, input_norm=norm)
      got = self.variant(functools.partial(D.energy, cfg=cfg))(
        XI, X, mult=_mult()
      )
      chex.assert_shape(got, (B,))
      want = R.energy(XI, X, input_norm=norm, **_kw(energy))
      chex.assert_trees_all_close(
        got, want.astype(np.float32), rtol=2e-5, atol=2e-5
      )

  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(*NORMS)
  def test_energy_grad_of_both_families(self, norm):
    for energy in D.ENERGIES:
      cfg = D.DenseAMConfig(energy=energy, n=3, beta=2.0, input_norm=norm)
      got = self.variant(functools.partial(D.energy_grad, cfg=cfg))(
        XI, X, mult=_mult()
      )
      chex.assert_shape(got, (B, N))
      if norm == "none":
        want = R.grad_identity(XI, X, **_kw(energy))
      else:  # LayerNorm's Jacobian: finite differences of the float64 energy
        want = R.grad_fd(
          lambda z: R.energy(XI, z, input_norm=norm, **_kw(energy)), X
        )
      chex.assert_trees_all_close(
        got, want.astype(np.float32), rtol=1e-4, atol=1e-5
      )


class DynamicsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_run_dynamics_holds_clamped_units_and_traces_the_energy(self):
    cfg = D.DenseAMConfig(energy="lse", beta=2.0, dt=0.3, steps=3)
    clamp = np.array([True, False, False, True])
    fn = self.variant(functools.partial(D.run_dynamics, cfg=cfg))
    x_t, trace = fn(XI, X, clamp, mult=_mult())
    chex.assert_shape([x_t, trace], [(B, N), (cfg.steps + 1, B)])
    want_x, want_e = R.dynamics(XI, X, clamp, 3, 0.3, **_kw("lse"))
    chex.assert_trees_all_close(
      (x_t, trace),
      (want_x.astype(np.float32), want_e.astype(np.float32)),
      rtol=1e-4,
      atol=1e-5,
    )
    chex.assert_trees_all_equal(np.asarray(x_t)[:, clamp], X[:, clamp])

  @chex.variants(with_jit=True, without_jit=True)
  def test_classify_and_denoise_losses(self):
    cfg = D.DenseAMConfig(
      energy="lse", beta=2.0, dt=0.5, steps=3, num_classes=2, readout_scale=3.0
    )
    x0 = np.concatenate([X[:, :2], np.zeros((B, 2), np.float32)], axis=1)
    batch = D.Batch(
      x0, np.array([True, True, False, False]), np.array([0, 1, 1], np.int32)
    )
    loss, aux = self.variant(functools.partial(D.loss_fn, cfg=cfg))(
      XI * 3, batch, mult=_mult()
    )
    want, acc = R.classify_loss(XI * 3, *batch, 3, 0.5, 2, 3.0, **_kw("lse"))
    chex.assert_shape(loss, ())
    chex.assert_trees_all_close(
      (loss, aux["accuracy"]), (np.float32(want), np.float32(acc))
    )

    cfg = D.DenseAMConfig(energy="poly", n=3, dt=0.5, steps=2, task="denoise")
    clean = np.sign(X)
    batch = D.Batch(X, np.zeros(N, bool), clean)
    loss, aux = self.variant(functools.partial(D.loss_fn, cfg=cfg))(
      XI, batch, mult=_mult()
    )
    x_t, _ = R.dynamics(XI, X, np.zeros(N, bool), 2, 0.5, **_kw("poly"))
    want = (np.mean((x_t - clean) ** 2), np.mean(np.sign(x_t) != clean))
    chex.assert_trees_all_close(
      (loss, aux["bit_error"]), tuple(np.float32(w) for w in want), rtol=1e-5
    )


if __name__ == "__main__":
  absltest.main()
