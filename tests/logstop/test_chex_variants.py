"""LogSTOP's jittable scorers, with and without ``jax.jit``, against the float64
oracles.

The formula, the window and the threshold are static (closed over); the
proposition scores and the per-trace lengths are traced.
"""

import functools
import math

import chex
import jax.numpy as jnp
import numpy as np

from jaxpapers import logstop as L
from tests.logstop import _oracles

FORMULA = L.parse("(a & X b) U c")


def _props(seed, B, T, names=_oracles.ATOMS):
  rng = np.random.default_rng(seed)
  return {n: rng.uniform(0.02, 0.98, size=(B, T)) for n in names}


def _f32(props):
  return {n: p.astype(np.float32) for n, p in props.items()}


class LogstopVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_suffix_scores_match_recursive_oracle(self):
    B, T, w = 2, 7, 2
    props = _props(0, B, T)
    got = self.variant(functools.partial(L.scores, FORMULA, window=w))(
      _f32(props)
    )
    chex.assert_shape(got, (B, T))
    chex.assert_type(got, jnp.float32)
    want = np.array(
      [
        [
          _oracles.logstop_rec(
            FORMULA, {n: p[i] for n, p in props.items()}, t, T - 1, w, memo
          )
          for t in range(T)
        ]
        for i in range(B)
        for memo in [{}]
      ]
    )
    chex.assert_trees_all_close(got, want, rtol=2e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_score_with_traced_lengths_equals_truncated_traces(self):
    B, T = 3, 6
    formula = L.parse("F c & G(a | b)")  # depends on every frame up to the end
    props = _props(1, B, T)
    length = np.array([6, 4, 1], np.int32)
    got = self.variant(functools.partial(L.score, formula))(
      _f32(props), length=length
    )
    chex.assert_shape(got, (B,))
    want = [
      _oracles.logstop_rec(
        formula, {a: p[i, :n] for a, p in props.items()}, 0, n - 1, 1
      )
      for i, n in enumerate(length.tolist())
    ]
    chex.assert_trees_all_close(got, np.array(want), rtol=2e-5, atol=1e-6)
    # The lengths are read: scoring the full traces gives another answer for the
    # short ones.
    full = L.score(formula, _f32(props))
    self.assertGreater(abs(float(full[1]) - want[1]), 1e-3)

  @chex.variants(with_jit=True, without_jit=True)
  def test_exact_probability_equals_brute_force(self):
    formula = L.parse("G a & F b")
    props = _props(2, 2, 4, names=("a", "b"))
    got = self.variant(functools.partial(L.exact_probability, formula))(
      _f32(props)
    )
    chex.assert_shape(got, (2,))
    want = [
      _oracles.brute_force_probability(
        formula, {n: p[i] for n, p in props.items()}
      )
      for i in range(2)
    ]
    chex.assert_trees_all_close(got, np.array(want), rtol=1e-5, atol=1e-7)

  @chex.variants(with_jit=True, without_jit=True)
  def test_boolean_ltlf_and_mean_score(self):
    B, T = 4, 5
    props = _props(3, B, T)
    threshold = 0.5
    fn = self.variant(
      lambda p: (
        L.boolean_ltlf(FORMULA, p, threshold=threshold),
        L.mean_score(FORMULA, p),
      )
    )
    truth, mean = fn(_f32(props))
    chex.assert_shape((truth, mean), (B,))
    chex.assert_type(truth, jnp.bool_)
    want_truth = [
      _oracles.bool_rec(
        FORMULA, {n: p[i] >= threshold for n, p in props.items()}, 0, T - 1
      )
      for i in range(B)
    ]
    chex.assert_trees_all_equal(truth, np.array(want_truth))
    # mean_t prod_a p_a[t] over the formula's atoms.
    want_mean = np.mean(props["a"] * props["b"] * props["c"], axis=-1)
    chex.assert_trees_all_close(mean, want_mean, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_log1mexp_on_both_sides_of_minus_log_2(self):
    x = np.array(
      [-1e-7, -0.3, -math.log(2.0), -0.9, -5.0, -40.0, 0.0, -np.inf], np.float32
    )
    got = self.variant(L.log1mexp)(x)
    chex.assert_shape(got, x.shape)
    chex.assert_type(got, jnp.float32)
    want = np.array([_oracles._log1mexp(float(v)) for v in x])
    chex.assert_trees_all_close(got, want, rtol=1e-5)
