"""FLOP counting: a lax.scan body must count once per step, not once in
total."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import flashssm3d as fs

W = jnp.full((16, 16), 0.01, jnp.float32)
H0 = jnp.ones((4, 16), jnp.float32)


def _step(h, _):
  return jnp.tanh(h @ W), None


def _scan(L, unroll=1):
  return lambda h: jax.lax.scan(_step, h, None, length=L, unroll=unroll)[0]


def _python_loop(L):
  def f(h):
    for _ in range(L):
      h = _step(h, None)[0]
    return h

  return f


def test_scan_of_L_steps_counts_L_times_one_step():
  one = fs.count_flops(_scan(1), H0)
  # one step: a [4,16]x[16,16] matmul (2*4*16*16 multiply-adds) plus the
  # elementwise tanh
  assert one >= 2 * 4 * 16 * 16
  for L in (10, 100):
    n = fs.count_flops(_scan(L), H0)
    np.testing.assert_allclose(n, L * one, rtol=0.02)
    # independent reference: XLA's count of the same computation written without
    # a loop
    np.testing.assert_allclose(
      n, fs.xla_flops(jax.jit(_python_loop(L)).lower(H0)), rtol=0.02
    )
    # what the correction is for: XLA alone counts the loop body once
    assert fs.xla_flops(jax.jit(_scan(L)).lower(H0)) < 2 * one


@pytest.mark.parametrize("unroll", [3, True])
def test_unrolled_scans_are_not_double_counted(unroll):
  ref = fs.xla_flops(jax.jit(_python_loop(10)).lower(H0))
  np.testing.assert_allclose(
    fs.count_flops(_scan(10, unroll), H0), ref, rtol=0.02
  )


def test_nested_scans_under_jit_and_grad_and_traced_input():
  one = fs.count_flops(_scan(1), H0)

  def nested(h):
    def outer(c, _):
      return jax.jit(_scan(5))(c), None

    return jax.lax.scan(outer, h, None, length=4)[0].sum()

  np.testing.assert_allclose(fs.count_flops(nested, H0), 20 * one, rtol=0.05)
  # the backward pass of a scan is a second scan: the gradient costs about 2-3x
  # the forward
  g = fs.count_flops(jax.grad(nested), H0)
  assert 2.0 * 20 * one < g < 4.0 * 20 * one
  traced = jax.jit(nested).trace(H0)
  total, xla = fs.count_flops(traced, with_xla=True)
  np.testing.assert_allclose(total, fs.count_flops(nested, H0), rtol=1e-6)
  assert xla < total / 5


def test_selective_scan_count_grows_linearly_with_length():
  rng = np.random.default_rng(0)

  def args(L):
    E, N = 8, 4
    return (
      jnp.asarray(rng.normal(size=(2, L, E)), jnp.float32),
      jnp.full((2, L, E), 0.1, jnp.float32),
      -jnp.ones((E, N), jnp.float32),
      jnp.asarray(rng.normal(size=(2, L, N)), jnp.float32),
      jnp.asarray(rng.normal(size=(2, L, N)), jnp.float32),
      jnp.ones((E,), jnp.float32),
    )

  f = lambda *a: fs.selective_scan(*a, method="scan")
  c16, c64 = fs.count_flops(f, *args(16)), fs.count_flops(f, *args(64))
  np.testing.assert_allclose(c64 / c16, 4.0, rtol=0.1)
  # per step the recurrence h = exp(dt A) h + (dt x) B; y = h C costs at least 5
  # M E N flops
  assert c16 >= 5 * 16 * 2 * 8 * 4
