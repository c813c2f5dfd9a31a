"""Selective scan: lax.scan vs a naive recurrence, associative and chunked vs
lax.scan."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import flashssm3d as fs


def _inputs(rng, lead, L, E, N):
  x = rng.normal(size=lead + (L, E))
  dt = np.log1p(np.exp(rng.normal(size=lead + (L, E)) - 1.0))
  A = -np.exp(rng.normal(size=(E, N)) * 0.5)
  B = rng.normal(size=lead + (L, N))
  C = rng.normal(size=lead + (L, N))
  D = rng.normal(size=(E,))
  return x, dt, A, B, C, D


def _naive(x, dt, A, B, C, D, reverse=False):
  L, E = x.shape
  h = np.zeros((E, A.shape[1]))
  y = np.zeros_like(x)
  order = range(L - 1, -1, -1) if reverse else range(L)
  for t in order:
    h = np.exp(dt[t][:, None] * A) * h + (dt[t] * x[t])[:, None] * B[t][None, :]
    y[t] = h @ C[t] + D * x[t]
  return y


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_equals_naive_recurrence(reverse):
  rng = np.random.default_rng(0)
  args = _inputs(rng, (), 13, 4, 3)
  with jax.enable_x64(True):
    y = fs.selective_scan(*map(jnp.asarray, args), reverse=reverse)
  np.testing.assert_allclose(
    np.asarray(y), _naive(*args, reverse=reverse), atol=1e-12
  )


def test_parallel_methods_equal_lax_scan():
  rng = np.random.default_rng(1)
  args = [jnp.asarray(a, jnp.float32) for a in _inputs(rng, (2,), 37, 8, 4)]

  @jax.jit
  def all_methods(*a):  # one compilation for every method and direction
    return {
      # 37 = 4 * 8 + 5
      (m, r): fs.selective_scan(*a, reverse=r, method=m, chunk_size=8)
      for m in fs.SCAN_METHODS
      for r in (False, True)
    }

  ys = all_methods(*args)
  for (method, reverse), y in ys.items():
    np.testing.assert_allclose(
      np.asarray(y),
      np.asarray(ys["scan", reverse]),
      atol=1e-5,
      rtol=1e-5,
      err_msg=method,
    )
  with pytest.raises(ValueError, match="method"):
    fs.selective_scan(*args, method="fft")


def test_scan_order_permutations():
  S, gh, gw, ns = 3, 2, 3, 2
  T = ns + gh * gw
  col = fs.scan_order(S, (gh, gw), kind="col", num_special=ns)
  np.testing.assert_array_equal(
    col, [0, 1, 2, 5, 3, 6, 4, 7]
  )  # (0,0),(1,0),(0,1),(1,1),(0,2),(1,2)
  pm = fs.scan_order(S, (gh, gw), kind="position_major", num_special=ns)
  assert sorted(pm.tolist()) == list(range(S * T))
  # camera token of every view first
  np.testing.assert_array_equal(pm[:S], [0, T, 2 * T])
  np.testing.assert_array_equal(
    fs.scan_order(S, (gh, gw), kind="frame_major", num_special=ns),
    np.arange(S * T),
  )
  with pytest.raises(ValueError, match="kind"):
    fs.scan_order(S, (gh, gw), kind="diag")


# module level of what test_parallel_methods_equal_lax_scan and
@pytest.mark.slow
# test_models_data.py::test_student_frames_communicate check on the scan and the
# whole model
def test_bissm_methods_agree_and_bidirectional():
  m = fs.BiSSM(8, state=4, rngs=nnx.Rngs(0))
  x = jax.random.normal(jax.random.key(1), (2, 21, 8))
  graphdef, state = nnx.split(m)
  f = jax.jit(lambda s, v: nnx.merge(graphdef, s)(v))
  y = f(state, x)
  assert y.shape == x.shape
  m.method = "associative"
  graphdef2, state2 = nnx.split(m)
  y2 = jax.jit(lambda s, v: nnx.merge(graphdef2, s)(v))(state2, x)
  # float32: outputs reach ~1e2, so the two summation orders differ by ~1e-7
  # relative
  np.testing.assert_allclose(
    np.asarray(y2), np.asarray(y), rtol=1e-5, atol=1e-5
  )
  # bidirectional: the first output depends on the last input, the last output
  # on the first; batch elements are independent (forward mode: one compilation,
  # two tangents)
  jvp = jax.jit(lambda t: jax.jvp(lambda v: f(state, v), (x,), (t,))[1])
  last = np.asarray(jvp(jnp.zeros_like(x).at[0, -1].set(1.0)))
  first = np.asarray(jvp(jnp.zeros_like(x).at[0, 0].set(1.0)))
  assert np.abs(last[0, 0]).sum() > 0 and np.abs(first[0, -1]).sum() > 0
  assert np.abs(last[1]).sum() == 0 and np.abs(first[1]).sum() == 0


def _max_intermediate(closed):
  """Largest array (elements) produced by any equation, sub-programs
  included."""
  sizes = [0]
  for eqn in closed.jaxpr.eqns:
    sizes += [
      int(np.prod(v.aval.shape))
      for v in eqn.outvars
      if hasattr(v.aval, "shape")
    ]
    for sub in jax.extend.core.jaxprs_in_params(eqn.params):
      sizes.append(_max_intermediate(jax.extend.core.ClosedJaxpr(sub, ())))
  return max(sizes)


# the reverse direction of the chunked scan is also checked against
# lax.scan (float32) above
@pytest.mark.parametrize(
  "reverse", [False, pytest.param(True, marks=pytest.mark.slow)]
)
def test_chunked_equals_sequential_float64_and_holds_one_chunk(reverse):
  rng = np.random.default_rng(2)
  L, E, N, cs = 45, 4, 16, 8  # 45 is not a multiple of the chunk
  args = _inputs(rng, (2,), L, E, N)
  with jax.enable_x64(True):
    a64 = [jnp.asarray(a) for a in args]
    y = fs.selective_scan(
      *a64, reverse=reverse, method="chunked", chunk_size=cs
    )
    assert y.dtype == jnp.float64
    closed = jax.make_jaxpr(
      lambda *a: fs.selective_scan(
        *a, reverse=reverse, method="chunked", chunk_size=cs
      )
    )(*a64)
    closed_assoc = jax.make_jaxpr(
      lambda *a: fs.selective_scan(*a, method=("associative"))
    )(*a64)
  ref = np.stack(
    [
      _naive(
        args[0][i],
        args[1][i],
        args[2],
        args[3][i],
        args[4][i],
        args[5],
        reverse=reverse,
      )
      for i in (0, 1)
    ]
  )
  np.testing.assert_allclose(np.asarray(y), ref, atol=1e-12)
  full_state = L * 2 * E * N
  # nothing larger than one chunk's [chunk, M, E, N] state or the (padded)
  # [L, M, N] inputs
  padded_inputs = 48 * 2 * max(E, N)
  assert (
    _max_intermediate(closed)
    <= max(cs * 2 * E * N, padded_inputs)
    < full_state / 2
  )
  # the associative scan holds all of it
  assert _max_intermediate(closed_assoc) >= full_state


def test_bfloat16_inputs_accumulate_the_state_in_float32():
  """A slowly decaying state summing many small increments: a bf16 state would
  drop them."""
  L, E, N = 512, 2, 2
  x = np.ones((L, E))
  dt = np.full((L, E), 0.01)
  A = np.full((E, N), -0.01)
  B = np.ones((L, N))
  C = np.ones((L, N))
  D = np.zeros((E,))
  ref = _naive(x, dt, A, B, C, D)
  bf = [jnp.asarray(a, jnp.bfloat16) for a in (x, dt, A, B, C, D)]
  ys = jax.jit(
    lambda *a: [
      fs.selective_scan(*a, method=m, chunk_size=64) for m in fs.SCAN_METHODS
    ]
  )(*bf)  # one compilation for the three methods
  for method, y in zip(fs.SCAN_METHODS, ys):
    assert y.dtype == jnp.bfloat16, method
    np.testing.assert_allclose(
      np.asarray(y, np.float64), ref, rtol=1e-2, err_msg=method
    )
