"""The sequential scan of `score` (t = 0, "prob" algebra): one step per block of
w frames.

It pads the chain to whole loop iterations, reads the trace's end from a step
counter and carries only the values at k + 1, so these tests pick lengths that
are not multiples of the window or of the unrolled steps, ragged traces, X at
the end of the trace, and compare with the float64 recursion and with the
blocked scans it replaces.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import logstop as L
from jaxpapers.logstop import _engine
from tests.logstop import _oracles
from tests.logstop.test_scores import _random_trace

TEXTS = [
  "a U b",
  "G(a -> F b)",
  "F(a & X b & X X c)",
  "!(a U X b) | G c",
  "!(F a) & (b -> G !c)",
  "X X a",
  "a & b",
  "G F (a U !c)",
  "true U (X c)",
]


def _reference_at_0(f, props, e, w):
  return _oracles.logstop_rec(f, props, 0, e, w, {})


@pytest.mark.parametrize("w", [1, 3, 7])
def test_sequential_first_values_equal_the_float64_recursion(w):
  """P(0) in float64 for lengths around the window and the unrolled loop (T = 5
  w + 2 frames: the last block is short, and the chain of 6 steps is not a whole
  number of iterations at w = 1); ragged lengths 1 .. T and 0 (an empty trace
  scores 0)."""
  rng = np.random.default_rng(70 + w)
  T = 5 * w + 2 if w > 1 else 45
  formulas = tuple(L.parse(t) for t in TEXTS)
  traces = [_random_trace(rng, T) for _ in range(5)]
  batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
  lengths = np.array([T, T - 1, w + 1, 1, 0])
  assert _engine.sequential_fits(formulas, -(-T // w), jnp.float64)
  with jax.enable_x64(True):
    got = jax.jit(
      lambda b, ln: _engine.evaluate_many(
        formulas, b, w, ln, "prob", first_only=True
      )
    )(batch, lengths)
  for j, f in enumerate(formulas):
    for i, props in enumerate(traces):
      e = int(lengths[i]) - 1
      # The recursion's log1mexp leaves ~1e-17 where 1 - P is exactly 0 (hence
      # atol).
      want = 0.0 if e < 0 else np.exp(_reference_at_0(f, props, e, w))
      np.testing.assert_allclose(
        float(got[j][i]), want, rtol=1e-12, atol=1e-16, err_msg=TEXTS[j]
      )


def test_window_shifted_by_one_frame_would_fail():
  """The block means start at frame 0: a trace whose frames alternate between 0
  and 1 gives exact, distinct answers for the right blocks and for blocks
  shifted by one frame."""
  w, T = 2, 12
  # block means 0.5 everywhere
  a = np.tile(np.array([1.0, 0.0], np.float32), T // 2)[None]
  b = np.zeros((1, T), np.float32)
  # block 1 = frames 2, 3: mean 0.5; the shifted block 1 (frames 3, 4) has 0
  b[0, 2] = 1.0
  # a U b at t = 0: 0.5 (block 0's b is 0) ... = P_a(0) Q_b(0) P_b(1) = 0.5 *
  # 1 * 0.5.
  got = float(np.exp(L.score("a U b", {"a": a, "b": b}, window=w))[0])
  assert got == 0.25
  # Windows shifted by one frame (frames 1-2, 3-4, ...) would give b the mean
  # 0.5 at t = 0 and the score 0.5. The same under jit:
  jitted = jax.jit(lambda p: L.score("a U b", p, window=w))({"a": a, "b": b})
  assert float(np.exp(jitted)[0]) == 0.25


@pytest.mark.parametrize("T", [1, 33, 95])
def test_sequential_equals_blocked_float32(T, monkeypatch):
  """float32 sequential scan vs the blocked scans at lengths around the unrolled
  loop."""
  rng = np.random.default_rng(T)
  formulas = tuple(L.parse(t) for t in TEXTS)
  batch = {
    n: rng.uniform(size=(6, T)).astype(np.float32) for n in _oracles.ATOMS
  }
  lengths = np.array([T, max(T - 1, 0), T // 2, 1, 0, T])
  run = lambda: jax.jit(
    lambda b, ln: _engine.evaluate_many(
      formulas, b, 1, ln, "prob", first_only=True
    )
  )(batch, lengths)
  seq = np.asarray(run())
  monkeypatch.setattr(_engine, "sequential_fits", lambda *args: False)
  blocked = np.asarray(run())
  np.testing.assert_allclose(seq, blocked, rtol=2e-6, atol=1e-30)


def test_sequential_fits_bounds_the_chain_length():
  f32, f = jnp.float32, (L.parse("a U b"),)
  assert _engine.sequential_fits(f, 4096, f32)
  # 2 n eps > 2^-10: the blocked scans
  assert not _engine.sequential_fits(f, 4097, f32)
  # log space
  assert not _engine.sequential_fits((L.parse("G F G F a"),), 500, f32)


@pytest.mark.parametrize("T, w", [(100, 1), (97, 1), (200, 4)])
def test_sequential_without_lengths_equals_the_float64_recursion(T, w):
  """No `length`: a chain whose step count has a divisor in [16, 32] (100, 50
  steps) runs unpadded and without end-of-trace masks; 97 steps (a prime) pad
  the chain."""
  rng = np.random.default_rng(T + w)
  formulas = tuple(L.parse(t) for t in TEXTS)
  traces = [_random_trace(rng, T) for _ in range(3)]
  batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
  with jax.enable_x64(True):
    got = jax.jit(
      lambda b: _engine.evaluate_many(
        formulas, b, w, None, "prob", first_only=True
      )
    )(batch)
  for j, f in enumerate(formulas):
    for i, props in enumerate(traces):
      want = np.exp(_reference_at_0(f, props, T - 1, w))
      np.testing.assert_allclose(
        float(got[j][i]), want, rtol=1e-12, atol=1e-16, err_msg=TEXTS[j]
      )


def test_unrolling_prefers_a_divisor_and_pads_least():
  for steps in range(1, 2000):
    unroll, n = _engine._unrolling(steps)
    assert n % unroll == 0 and n >= steps, steps
    assert unroll <= _engine._UNROLL
    if any(
      steps % u == 0 for u in range(_engine._UNROLL // 2, _engine._UNROLL + 1)
    ):
      assert n == steps, steps  # no padding where a divisor exists
    # fewer padded steps than loop iterations
    assert n - steps < n // unroll, steps
  assert _engine._unrolling(500) == (25, 500)
  assert _engine._unrolling(10) == (10, 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integer_min_max_of_nonnegative_floats_equal_numpy(dtype):
  """The floored product and the floor of an atom use integer min / max of the
  bits: equal to the float ones on every pair of nonnegative values (0,
  subnormals, tiny, 1, inf)."""
  info = np.finfo(dtype)
  v = np.array(
    [
      0.0,
      info.smallest_subnormal,
      info.tiny / 2,
      info.tiny,
      2 * info.tiny,
      1e-30,
      0.25,
      0.5,
      1 - info.eps,
      1.0,
      3.0,
      np.inf,
    ],
    dtype,
  )
  x, y = np.meshgrid(v, v)
  with jax.enable_x64(dtype == np.float64):
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    np.testing.assert_array_equal(
      np.asarray(_engine._nonneg_max(jx, jy)), np.maximum(x, y)
    )
    np.testing.assert_array_equal(
      np.asarray(_engine._nonneg_min(jx, jy)), np.minimum(x, y)
    )
    p = v[v <= 1]
    px, py = np.meshgrid(p, p)
    got = np.asarray(jax.jit(_engine._mul)(jnp.asarray(px), jnp.asarray(py)))
    floor = np.minimum(np.minimum(px, py), info.tiny)
    want = np.maximum(px * py, floor)
    # XLA's CPU backend flushes subnormal products to 0 where numpy keeps them;
    # the floor decides those entries in both, and exact zeros stay exact.
    want = np.where(want < info.tiny, floor, want)
    np.testing.assert_array_equal(got, want)
    # On its domain {0} U [tiny, 1] a product is 0 exactly when a factor is,
    # else >= tiny.
    dom = ((px == 0) | (px >= info.tiny)) & ((py == 0) | (py >= info.tiny))
    zero = (px == 0) | (py == 0)
    np.testing.assert_array_equal((got == 0)[dom], zero[dom])
    assert np.all(got[dom & ~zero] >= info.tiny)
