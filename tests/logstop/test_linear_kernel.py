"""The linear-space kernel ("prob" algebra) and its log-space fallback.

`score` / `scores` multiply probabilities (each with its complement) and take
one log per result; a result below `underflow_threshold` is recomputed in log
space. These tests compare the "prob" values with exp of the float64 recursion,
check that values a float32 product cannot hold send the batch to the log-space
path (eagerly and under jit), and that exact zeros stay exact (-inf) without it.
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
]


def _reference(f, props, e, w):
  return np.array(
    [_oracles.logstop_rec(f, props, t, e, w, {}) for t in range(e + 1)]
  )


@pytest.mark.parametrize("w", [1, 2, 7, 64])
def test_prob_values_and_complements_equal_the_float64_recursion(w):
  """P = exp(l) and its complement Q = 1 - exp(l), every t, ragged lengths and w
  > T.

  Q is checked against -expm1(l) from the recursion: a kernel computing Q as 1 -
  P would lose every digit of Q where P is close to 1 (the complement is a sum
  of products instead).
  """
  rng = np.random.default_rng(400 + w)
  T = 2 * w + 5
  formulas = tuple(L.parse(t) for t in TEXTS)
  nots = tuple(L.Not(f) for f in formulas)
  traces = [_random_trace(rng, T) for _ in range(3)]
  batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
  lengths = np.array([T, w + 3, max(1, w // 3)])
  with jax.enable_x64(True):
    probs = jax.jit(
      lambda b, ln: _engine.evaluate_many(formulas + nots, b, w, ln, "prob")
    )(batch, lengths)
    first = jax.jit(
      lambda b, ln: _engine.evaluate_many(
        formulas, b, w, ln, "prob", first_only=True
      )
    )(batch, lengths)
  for j, f in enumerate(formulas):
    for i, props in enumerate(traces):
      e = int(lengths[i]) - 1
      want = _reference(f, props, e, w)
      p, q = np.asarray(probs[j][i]), np.asarray(probs[len(formulas) + j][i])
      # -inf is an exact 0; the recursion's log1mexp leaves ~1e-17 where 1 - P
      # is exactly 0.
      assert np.all(p[: e + 1][np.isneginf(want)] == 0)
      np.testing.assert_allclose(
        p[: e + 1], np.exp(want), rtol=1e-12, atol=1e-16
      )
      np.testing.assert_allclose(
        q[: e + 1], -np.expm1(want), rtol=1e-12, atol=1e-16
      )
      assert np.all(p[e + 1 :] == 0)
      np.testing.assert_allclose(
        float(first[j][i]), np.exp(want[0]), rtol=1e-12, atol=0
      )


def _underflowing_batch(T=60):
  """In trace 0, `G a` at t = 0 is 1e-3^T (far below float32's smallest normal)
  and `a U b` (b = 0 but at the last frame) about as small; trace 1 holds no
  small value."""
  a = np.stack([np.full(T, 1e-3), np.full(T, 0.99)]).astype(np.float32)
  b = np.stack([np.zeros(T), np.full(T, 0.5)]).astype(np.float32)
  b[0, -1] = 0.5
  return {"a": a, "b": b}


@pytest.mark.parametrize("text", ["G a", "a U b", "!(F !a)", "G a & F b"])
def test_fallback_engages_where_float32_products_underflow(text):
  """Eagerly, under jit, every t and t = 0, vs the float64 recursion.

  !(F !a) is G a: its complement is the product of the a's; the recursion
  (log1mexp of a log-score that rounds to 0) returns -inf there, so it is
  compared with G a's recursion.
  """
  f = L.parse(text)
  props = _underflowing_batch()
  T = props["a"].shape[1]
  # The linear kernel alone cannot hold trace 0's value: it is below the
  # underflow bound.
  p = np.asarray(_engine.evaluate_many((f,), props, 1, None, "prob")[0])
  tau = _engine.underflow_threshold(f, T, jnp.float32)
  assert 0 < p[0, 0] < tau
  same = L.parse("G a") if text == "!(F !a)" else f
  want = [
    _reference(
      same, {n: v[i].astype(np.float64) for n, v in props.items()}, T - 1, 1
    )
    for i in range(2)
  ]
  # far below the bound: a plain log(P) would be wrong
  assert want[0][0] < np.log(tau) - 50
  eager = np.asarray(L.scores(f, props))
  jitted = np.asarray(jax.jit(lambda q: L.scores(f, q))(props))
  first = np.asarray(jax.jit(lambda q: L.score(f, q))(props))
  for got in (eager, jitted):
    for i in range(2):
      np.testing.assert_allclose(got[i], want[i], rtol=2e-5)
  np.testing.assert_allclose(first, [w[0] for w in want], rtol=2e-5)


def test_fallback_in_one_trace_leaves_the_others_linear():
  """Only the entries that lost their digits take the log-space values."""
  f = L.parse("G a")
  props = _underflowing_batch()
  got = np.asarray(_engine.log_scores((f,), props, 1, None)[0])
  linear = np.asarray(_engine.evaluate_many((f,), props, 1, None, "prob")[0])
  np.testing.assert_allclose(
    got[1], np.log(np.minimum(linear[1], 1)), rtol=1e-6
  )
  logspace = np.asarray(_engine.evaluate_many((f,), props, 1, None, "log")[0])
  lost = (linear[0] > 0) & (
    linear[0] < _engine.underflow_threshold(f, 60, jnp.float32)
  )
  assert lost.any() and not lost.all()
  np.testing.assert_allclose(got[0][lost], logspace[0][lost], rtol=1e-6)
  np.testing.assert_allclose(got[0][~lost], np.log(linear[0][~lost]), rtol=1e-6)
  # Most of those entries are far off in linear space: the fallback is what
  # makes them right.
  assert np.mean(np.abs(np.log(linear[0][lost]) - logspace[0][lost]) > 1) > 0.5


def test_exact_zeros_and_ones_stay_exact_without_the_fallback():
  """Zeros and ones in the scores give exact -inf / 0 in linear space (no lost
  digits)."""
  rng = np.random.default_rng(11)
  T = 40
  props = {
    n: rng.uniform(size=(4, T)).astype(np.float32) for n in _oracles.ATOMS
  }
  for v in props.values():
    v[rng.random(v.shape) < 0.2] = 0.0
    v[rng.random(v.shape) < 0.2] = 1.0
  for text in TEXTS:
    f = L.parse(text)
    linear = np.asarray(_engine.evaluate_many((f,), props, 1, None, "prob")[0])
    tau = _engine.underflow_threshold(f, T, jnp.float32)
    # the fallback is not needed
    assert not np.any((linear > 0) & (linear < tau)), text
    got = np.asarray(L.scores(f, props))
    for i in range(4):
      want = _reference(
        f, {n: v[i].astype(np.float64) for n, v in props.items()}, T - 1, 1
      )
      # -inf where the recursion is -inf; where 1 - P is exactly 0 the
      # recursion's log1mexp of a rounded log-score leaves about 1e-17 (a
      # log-score below -35) instead.
      assert np.all(np.isneginf(got[i][np.isneginf(want)])), text
      assert np.all(want[np.isneginf(got[i])] < -35), text
      fin = np.isfinite(want) & (want > -8)
      np.testing.assert_allclose(
        got[i][fin], want[fin], rtol=1e-4, atol=1e-5, err_msg=text
      )


def test_floored_product_and_positive():
  tiny = np.finfo(np.float32).tiny
  x = jnp.asarray([0.0, tiny, 1e-30, 0.5, 1.0], jnp.float32)
  y = jnp.asarray([0.7, tiny, 1e-30, 0.0, 1.0], jnp.float32)
  got = np.asarray(_engine._mul(x, y))
  np.testing.assert_array_equal(
    got, np.array([0.0, tiny, tiny, 0.0, 1.0], np.float32)
  )
  small = jnp.asarray([0.0, 1e-30, 0.25], jnp.float32)
  np.testing.assert_array_equal(
    np.asarray(jax.jit(_engine._positive)(small)),
    np.array([0, 1e-30, 0.25], np.float32),
  )


def test_underflow_threshold_grows_with_length_and_nesting():
  f32 = jnp.float32
  ga, gfa = L.parse("G a"), L.parse("G F a")
  assert _engine.underflow_threshold(ga, 10, f32) < _engine.underflow_threshold(
    ga, 1000, f32
  )
  assert _engine.underflow_threshold(
    ga, 1000, f32
  ) < _engine.underflow_threshold(gfa, 1000, f32)
  assert _engine.underflow_threshold(ga, 1000, f32) < 1e-25
  with jax.enable_x64(True):
    assert _engine.underflow_threshold(ga, 1000, jnp.float64) < 1e-250
  # Rounding: a G over an F over a G ... loses n eps per level in linear space.
  assert np.isfinite(
    _engine.underflow_threshold(L.parse("G(a -> F b)"), 5000, f32)
  )
  assert np.isinf(_engine.underflow_threshold(L.parse("G F G F a"), 500, f32))
  deep = L.parse("G F G F G F G F G F a")
  assert np.isinf(_engine.underflow_threshold(deep, 49, f32))  # log space only
  p = {"a": np.full((2, 50), 0.5, np.float32)}
  want = _reference(deep, {"a": np.full(50, 0.5)}, 49, 1)[0]
  np.testing.assert_allclose(
    np.asarray(L.score(deep, p)), [want, want], rtol=1e-5
  )


def test_composed_affine_maps_equal_the_float64_composition_under_jit():
  """`_compose` stacks the factor and offset of the composed maps into one array
  (one fusion); both components, in order, against the maps composed one by one
  in float64."""
  rng = np.random.default_rng(3)
  m, c = rng.uniform(size=(2, 7, 3, 5))
  maps = _engine._affine_maps("prob")
  compose = jax.jit(
    lambda m, c: _engine._compose(maps, (m, c), range(6, -1, -1), 0)
  )
  got_m, got_c = compose(
    jnp.asarray(m, jnp.float32), jnp.asarray(c, jnp.float32)
  )
  # y -> c(0) + m(0) (c(1) + m(1) (... (c(6) + m(6) y))): factor prod m, offset
  # at y = 0.
  want_m, want_c = np.ones((3, 5)), np.zeros((3, 5))
  for l in range(6, -1, -1):
    want_m, want_c = m[l] * want_m, c[l] + m[l] * want_c
  np.testing.assert_allclose(np.asarray(got_m), want_m, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(got_c), want_c, rtol=1e-5)
