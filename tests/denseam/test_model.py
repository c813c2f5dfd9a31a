"""Energy, its gradient, the unrolled dynamics and the losses against float64
NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import denseam as D
from tests.denseam import reference as R

RNG = np.random.default_rng(0)
K, N, B = 6, 5, 3
XI = (RNG.normal(size=(K, N)) / np.sqrt(N)).astype(np.float32)
X = RNG.normal(size=(B, N)).astype(np.float32)
MULT = {"alpha": 1.3, "gamma": 0.7, "beta_scale": 1.5}
KW = {"alpha": 1.3, "gamma": 0.7}


def _kw(energy, beta=2.0, n=3):
  return dict(energy_kind=energy, n=n, beta=beta * 1.5, **KW)


@pytest.mark.parametrize("energy", ["lse", "poly"])
@pytest.mark.parametrize("norm", ["none", "layernorm"])
def test_energy_matches_numpy(energy, norm):
  cfg = D.DenseAMConfig(energy=energy, n=3, beta=2.0, input_norm=norm)
  got = D.energy(XI, X, cfg, MULT)
  want = R.energy(XI, X, input_norm=norm, **_kw(energy))
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


def test_reference_gradient_is_the_finite_difference():
  """The hand-derived NumPy gradient itself agrees with finite differences
  (float64)."""
  for energy in ("lse", "poly"):
    fd = R.grad_fd(lambda z: R.energy(XI, z, **_kw(energy)), X)
    np.testing.assert_allclose(
      R.grad_identity(XI, X, **_kw(energy)), fd, atol=1e-7
    )


@pytest.mark.parametrize("energy", ["lse", "poly"])
@pytest.mark.parametrize("norm", ["none", "layernorm"])
def test_energy_grad_matches_numpy(energy, norm):
  cfg = D.DenseAMConfig(energy=energy, n=3, beta=2.0, input_norm=norm)
  got = np.asarray(D.energy_grad(XI, X, cfg, MULT))
  if norm == "none":
    want = R.grad_identity(XI, X, **_kw(energy))
  else:  # LayerNorm's Jacobian: finite differences of the float64 energy
    want = R.grad_fd(
      lambda z: R.energy(XI, z, input_norm=norm, **_kw(energy)), X
    )
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_gamma_alpha_and_beta_enter_where_the_equation_says():
  """A dropped or swapped multiplier changes the gradient: alpha appears in both
  maps."""
  cfg = D.DenseAMConfig(energy="poly", n=3)
  base = np.asarray(D.energy_grad(XI, X, cfg, {"alpha": 2.0, "gamma": 1.0}))
  swapped = np.asarray(D.energy_grad(XI, X, cfg, {"alpha": 1.0, "gamma": 2.0}))
  # poly n=3: grad = x - gamma alpha^(n) Xi^T ReLU(Xi x)^2 -> alpha=2 gives
  # 2^3 = 8x the drive.
  drive = X - R.grad_identity(XI, X, energy_kind="poly", n=3)
  np.testing.assert_allclose(X - base, 8 * drive, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(X - swapped, 2 * drive, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
  "energy,norm", [("lse", "none"), ("poly", "layernorm")]
)
def test_run_dynamics_matches_numpy_loop(energy, norm):
  cfg = D.DenseAMConfig(
    energy=energy, n=3, beta=2.0, dt=0.3, steps=3, input_norm=norm
  )
  clamp = np.array([True, False, False, True, False])
  x_t, trace = D.run_dynamics(XI, X, clamp, cfg, MULT)
  want_x, want_e = R.dynamics(
    XI, X, clamp, 3, 0.3, input_norm=norm, **_kw(energy)
  )
  np.testing.assert_allclose(np.asarray(x_t), want_x, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(np.asarray(trace), want_e, rtol=1e-4, atol=1e-5)
  # clamped units held
  np.testing.assert_array_equal(np.asarray(x_t)[:, clamp], X[:, clamp])


@pytest.mark.parametrize("energy,n", [("lse", 3), ("poly", 2)])
def test_energy_never_increases_for_small_dt(energy, n):
  """Descent on 100 random instances: ||Xi||_2 = 1 makes Lip(grad E) <= 2, so dt <= 0.5 descends."""
  key = jax.random.key(1)
  k1, k2, k3 = jax.random.split(key, 3)
  xis = jax.random.normal(k1, (100, 16, 8))
  xis = xis / jnp.linalg.norm(xis, ord=2, axis=(1, 2), keepdims=True)
  x0 = 2 * jax.random.normal(k2, (100, 4, 8))
  clamp = jax.random.bernoulli(k3, 0.3, (100, 4, 8))
  cfg = D.DenseAMConfig(energy=energy, n=n, beta=1.0, dt=0.5, steps=6)
  _, e = jax.jit(jax.vmap(lambda a, b, c: D.run_dynamics(a, b, c, cfg)))(
    xis, x0, clamp
  )
  e = np.asarray(e)  # [100, T+1, 4]
  assert np.all(np.diff(e, axis=1) <= 1e-5 * (1 + np.abs(e[:, :-1]))), (
    "energy rose"
  )
  assert np.all(e[:, -1] < e[:, 0] - 1e-3)  # and it does move


def _classify_batch():
  x0 = np.concatenate([X[:, :3], np.zeros((B, 2), np.float32)], axis=1)
  clamp = np.array([True, True, True, False, False])
  y = np.array([0, 1, 1], np.int32)
  return D.Batch(x0, clamp, y)


def test_classify_loss_matches_numpy():
  cfg = D.DenseAMConfig(
    energy="lse", beta=2.0, dt=0.5, steps=3, num_classes=2, readout_scale=3.0
  )
  batch = _classify_batch()
  loss, aux = D.loss_fn(XI * 3, batch, cfg, MULT)
  want, acc = R.classify_loss(XI * 3, *batch, 3, 0.5, 2, 3.0, **_kw("lse"))
  assert float(loss) == pytest.approx(want, rel=1e-5)
  assert float(aux["accuracy"]) == pytest.approx(acc)


def test_denoise_loss_is_the_mse_of_x_T():
  cfg = D.DenseAMConfig(energy="poly", n=3, dt=0.5, steps=2, task="denoise")
  clean = np.sign(X)
  loss, aux = D.loss_fn(XI, D.Batch(X, np.zeros(N, bool), clean), cfg, MULT)
  x_t, _ = R.dynamics(XI, X, np.zeros(N, bool), 2, 0.5, **_kw("poly"))
  assert float(loss) == pytest.approx(np.mean((x_t - clean) ** 2), rel=1e-5)
  assert float(aux["bit_error"]) == pytest.approx(
    np.mean(np.sign(x_t) != clean)
  )


def test_memory_gradient_collects_every_shared_use():
  """d loss / d Xi against float64 finite differences: Xi is used in both maps
  of all T steps."""
  cfg = D.DenseAMConfig(
    energy="lse", beta=2.0, dt=0.5, steps=3, num_classes=2, readout_scale=3.0
  )
  batch = _classify_batch()
  xi = (XI * 3).astype(np.float64)
  got = np.asarray(
    jax.grad(lambda w: D.loss_fn(w, batch, cfg, MULT)[0])(xi.astype(np.float32))
  )

  def f(w):
    return np.array(
      [R.classify_loss(w, *batch, 3, 0.5, 2, 3.0, **_kw("lse"))[0]]
    )

  want = R.grad_fd(f, xi, eps=1e-5)
  np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-5)
  # a non-trivial gradient, so the comparison has teeth
  assert np.abs(want).max() > 1e-3


def test_bfloat16_states_run_and_stay_finite():
  cfg = D.DenseAMConfig(energy="lse", steps=2)
  x_t, e = D.run_dynamics(
    XI.astype(jnp.bfloat16), X.astype(jnp.bfloat16), np.zeros(N, bool), cfg
  )
  assert x_t.dtype == jnp.bfloat16 and np.all(
    np.isfinite(np.asarray(e, np.float32))
  )


def test_repeated_calls_do_not_recompile():
  """Eager calls with the same config and shapes reuse one compiled program,
  whatever the multiplier values (they are traced arguments, not constants)."""
  from jaxpapers.denseam import _model

  cfg = D.DenseAMConfig(energy="lse", steps=3, dt=0.25)
  D.run_dynamics(XI, X, np.zeros(N, bool), cfg, {"alpha": 1.0})
  before = _model._dynamics_jit._cache_size()
  for a in (0.5, 2.0):
    D.run_dynamics(XI + a, X, np.zeros(N, bool), cfg, {"alpha": a, "gamma": a})
  assert _model._dynamics_jit._cache_size() == before
