"""The sequential scan of `score` (t = 0, "prob" algebra): one step per block of w frames.

It pads the chain to whole loop iterations, reads the trace's end from a step counter and
carries only the values at k + 1, so these tests pick lengths that are not multiples of the
window or of the unrolled steps, ragged traces, X at the end of the trace, and compare with
the float64 recursion and with the blocked scans it replaces.
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


@pytest.mark.parametrize("mode", ["plain", "composed"])
@pytest.mark.parametrize("w", [1, 3, 7])
def test_sequential_first_values_equal_the_float64_recursion(w, mode, monkeypatch):
  """P(0) in float64 for lengths around the window and the unrolled loop (T = 5 w + 2 frames:
  the last block is short, and the chain of 6 steps is not a whole number of iterations at
  w = 1); ragged lengths 1 .. T and 0 (an empty trace scores 0). The composed scan (the carry
  moved by the composed maps of an iteration, as for chains longer than 4,096 steps) gives
  the same values."""
  monkeypatch.setattr(_engine, "sequential_mode", lambda *args: mode)
  rng = np.random.default_rng(70 + w)
  T = 5 * w + 2 if w > 1 else 45
  formulas = tuple(L.parse(t) for t in TEXTS)
  traces = [_random_trace(rng, T) for _ in range(5)]
  batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
  lengths = np.array([T, T - 1, w + 1, 1, 0])
  assert _engine.sequential_fits(formulas, -(-T // w), jnp.float64)
  with jax.enable_x64(True):
    got = jax.jit(lambda b, ln: _engine.evaluate_many(formulas, b, w, ln, "prob", first_only=True))(
      batch, lengths
    )
  for j, f in enumerate(formulas):
    for i, props in enumerate(traces):
      e = int(lengths[i]) - 1
      # The recursion's log1mexp leaves ~1e-17 where 1 - P is exactly 0 (hence atol).
      want = 0.0 if e < 0 else np.exp(_reference_at_0(f, props, e, w))
      np.testing.assert_allclose(float(got[j][i]), want, rtol=1e-12, atol=1e-16, err_msg=TEXTS[j])


def test_window_shifted_by_one_frame_would_fail():
  """The block means start at frame 0: a trace whose frames alternate between 0 and 1 gives
  exact, distinct answers for the right blocks and for blocks shifted by one frame."""
  w, T = 2, 12
  a = np.tile(np.array([1.0, 0.0], np.float32), T // 2)[None]  # block means 0.5 everywhere
  b = np.zeros((1, T), np.float32)
  b[0, 2] = 1.0  # block 1 = frames 2, 3: mean 0.5; the shifted block 1 (frames 3, 4) has 0
  # a U b at t = 0: 0.5 (block 0's b is 0) ... = P_a(0) Q_b(0) P_b(1) = 0.5 * 1 * 0.5.
  got = float(np.exp(L.score("a U b", {"a": a, "b": b}, window=w))[0])
  assert got == 0.25
  # Windows shifted by one frame (frames 1-2, 3-4, ...) would give b the mean 0.5 at t = 0
  # and the score 0.5. The same under jit:
  jitted = jax.jit(lambda p: L.score("a U b", p, window=w))({"a": a, "b": b})
  assert float(np.exp(jitted)[0]) == 0.25


@pytest.mark.parametrize("mode", ["plain", "composed"])
@pytest.mark.parametrize("T", [1, 33, 95])
def test_sequential_equals_blocked_float32(T, mode, monkeypatch):
  """float32 sequential scan vs the blocked scans at lengths around the unrolled loop."""
  monkeypatch.setattr(_engine, "sequential_mode", lambda *args: mode)
  rng = np.random.default_rng(T)
  formulas = tuple(L.parse(t) for t in TEXTS)
  batch = {n: rng.uniform(size=(6, T)).astype(np.float32) for n in _oracles.ATOMS}
  lengths = np.array([T, max(T - 1, 0), T // 2, 1, 0, T])
  run = lambda: jax.jit(
    lambda b, ln: _engine.evaluate_many(formulas, b, 1, ln, "prob", first_only=True)
  )(batch, lengths)
  seq = np.asarray(run())
  monkeypatch.setattr(_engine, "sequential_fits", lambda *args: False)
  blocked = np.asarray(run())
  np.testing.assert_allclose(seq, blocked, rtol=2e-6, atol=1e-30)


def test_sequential_mode_bounds_the_chain_length():
  f32, f = jnp.float32, (L.parse("a U b"),)
  assert _engine.sequential_mode(f, 4096, f32) == "plain"
  assert _engine.sequential_mode(f, 4097, f32) == "composed"  # 2 n eps > 2^-10
  # (1.5 + 1 / (2 U)) n eps against 2^-10: U = 30 at n = 5400 (fits), 25 at n = 5500 (not).
  assert _engine.sequential_mode(f, 5400, f32) == "composed"
  assert _engine.sequential_mode(f, 5500, f32) is None  # the blocked scans
  assert not _engine.sequential_fits(f, 5500, f32)
  assert not _engine.sequential_fits((L.parse("G F G F a"),), 500, f32)  # log space


@pytest.mark.parametrize("text", ["a U b", "F(a & X b & X X c)", "!(a U X b) | G c"])
def test_composed_scan_rounds_long_chains_no_worse_than_the_blocked_scans(text):
  """A chain of 5,000 steps in float32 whose value sums terms up to thousands of steps away
  (a and c near 1, b near 0): the composed scan (used at this length) within its bound of the
  float64 value and no further from it than the blocked scans it replaces (measured: 0.3 to
  0.6 of their error)."""
  rng = np.random.default_rng(3)
  T, N = 5000, 8
  p32 = {
    "a": (1 - rng.uniform(0, 1e-6, (N, T))).astype(np.float32),
    "b": rng.uniform(0, 2e-4, (N, T)).astype(np.float32),
    "c": (1 - rng.uniform(0, 1e-6, (N, T))).astype(np.float32),
  }
  f = (L.parse(text),)
  assert _engine.sequential_mode(f, T, jnp.float32) == "composed"
  seq = lambda p: np.asarray(_engine._sequential_first(f, p, 1, None, (), True)[0][0])
  with jax.enable_x64(True):
    want = seq({k: jnp.asarray(v, jnp.float64) for k, v in p32.items()})
  blocked = _engine._evaluate_blocked(f, p32, None, 1, "prob", 0.5, (N,), (N, T), True)[0]
  err = lambda got: np.max(np.abs(np.asarray(got) / want - 1))
  assert err(seq(p32)) <= 2.0**-10
  assert err(seq(p32)) <= err(blocked), (err(seq(p32)), err(blocked))
