"""Baselines and retrieval scoring against plain-Python oracles."""

import jax
import numpy as np
import pytest

from jaxpapers import logstop as L
from tests.logstop import _oracles

FORMULAS = [
  "a U b",
  "G(a -> F b)",
  "F(a & X b) | !c",
  "G F a",
  "a U (G b)",
  "X X c & (b U a)",
  "(a -> b) U (c & X !a)",
]


def test_boolean_ltlf_matches_plain_evaluator_on_thresholded_scores():
  rng = np.random.default_rng(0)
  T, n = 7, 40
  props = {k: rng.uniform(size=(n, T)) for k in _oracles.ATOMS}
  for text in FORMULAS:
    f = L.parse(text)
    got = np.asarray(L.boolean_ltlf(f, props, threshold=0.6))
    want = [
      _oracles.bool_rec(f, {k: v[i] >= 0.6 for k, v in props.items()}, 0, T - 1)
      for i in range(n)
    ]
    np.testing.assert_array_equal(got, want)


def _robust_rec(f, p, t, e):
  if t > e:
    return -np.inf
  r = lambda g, s=t: _robust_rec(g, p, s, e)
  if isinstance(f, L.Atom):
    return p[f.name][t] - 0.5
  if isinstance(f, L.Const):
    return np.inf if f.value else -np.inf
  if isinstance(f, L.Not):
    return -r(f.arg)
  if isinstance(f, L.And):
    return min(r(f.left), r(f.right))
  if isinstance(f, L.Or):
    return max(r(f.left), r(f.right))
  if isinstance(f, L.Implies):
    return max(-r(f.left), r(f.right))
  if isinstance(f, L.Next):
    return r(f.arg, t + 1)
  if isinstance(f, L.Eventually):
    return max(r(f.arg, s) for s in range(t, e + 1))
  if isinstance(f, L.Always):
    return min(r(f.arg, s) for s in range(t, e + 1))
  if isinstance(f, L.Until):  # max over s of min(psi(s), min_{t<=u<s} phi(u))
    return max(
      min([r(f.right, s)] + [r(f.left, u) for u in range(t, s)])
      for s in range(t, e + 1)
    )
  raise TypeError(f)


def test_robustness_matches_max_min_definition():
  rng = np.random.default_rng(1)
  T, n = 6, 10
  props = {k: rng.uniform(size=(n, T)) for k in _oracles.ATOMS}
  for text in FORMULAS:
    f = L.parse(text)
    got = np.asarray(L.robustness(f, props))
    want = [
      _robust_rec(f, {k: v[i] for k, v in props.items()}, 0, T - 1)
      for i in range(n)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # Sign agrees with the Boolean semantics when no value sits at the
    # threshold.
    np.testing.assert_array_equal(got > 0, np.asarray(L.boolean_ltlf(f, props)))


@pytest.mark.parametrize("text", FORMULAS)
def test_exact_probability_equals_brute_force(text):
  rng = np.random.default_rng(2)
  f = L.parse(text)
  T = 9 // len(L.atoms(f))
  props = {k: rng.uniform(size=(2, T)) for k in L.atoms(f)}
  with jax.enable_x64(True):
    got = np.asarray(L.exact_probability(f, props))
  want = [
    _oracles.brute_force_probability(f, {k: v[i] for k, v in props.items()})
    for i in range(2)
  ]
  np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


def test_exact_probability_on_boolean_traces_is_boolean_truth_and_length_works():
  rng = np.random.default_rng(3)
  f = L.parse("G(a -> F b)")
  props = {k: (rng.random((20, 8)) < 0.5).astype(np.float32) for k in "ab"}
  got = np.asarray(L.exact_probability(f, props))
  np.testing.assert_array_equal(
    got, np.asarray(L.boolean_ltlf(f, props)).astype(float)
  )
  lengths = rng.integers(0, 9, size=20)
  got_l = np.asarray(L.exact_probability(f, props, length=lengths))
  want_l = [
    float(
      Li > 0
      and _oracles.bool_rec(f, {k: v[i] for k, v in props.items()}, 0, Li - 1)
    )
    for i, Li in enumerate(lengths)
  ]
  np.testing.assert_array_equal(got_l, want_l)


def test_mean_score():
  p = {
    "a": np.array([0.5, 1.0, 0.2]),
    "b": np.array([0.4, 0.5, 1.0]),
    "c": np.zeros(3),
  }
  np.testing.assert_allclose(
    float(L.mean_score("a U b", p)), (0.2 + 0.5 + 0.2) / 3, rtol=1e-6
  )
  np.testing.assert_allclose(
    float(L.mean_score("a U b", p, length=2)), 0.35, rtol=1e-6
  )


def _reference_segment_max(f, props, w, min_len, max_len):
  """The reference retrieval loop: fresh memo per start index, strided
  starts."""
  T = len(next(iter(props.values())))
  best = -np.inf
  for start in range(0, T - min_len + 1):
    end = min(T, start + max_len)
    s_all = L.reference_scores(
      f, {k: v[:end] for k, v in props.items()}, window=w
    )
    for s in range(start, end - min_len + 1, w):
      best = max(best, s_all[s])
  return best


@pytest.mark.parametrize(
  "w,min_len,max_len", [(1, 1, 12), (1, 3, 5), (2, 2, 6), (3, 4, 4)]
)
def test_segment_max_matches_reference_enumeration(w, min_len, max_len):
  rng = np.random.default_rng(4)
  f = L.parse("a U (b & X c)")
  T = 12
  props = {k: rng.uniform(size=(3, T)) for k in "abc"}
  with jax.enable_x64(True):
    got = np.asarray(
      L.segment_max_score(f, props, window=w, min_len=min_len, max_len=max_len)
    )
  want = [
    _reference_segment_max(
      f, {k: v[i] for k, v in props.items()}, w, min_len, max_len
    )
    for i in range(3)
  ]
  np.testing.assert_allclose(got, want, rtol=1e-10)


def test_segment_pairs_fixture_and_baseline_semantics():
  ends, mask = L.segment_pairs(6, 2, 3, 1)
  pairs = {
    (int(s), int(e))
    for j, e in enumerate(ends)
    for s in np.flatnonzero(mask[j])
  }
  # Reference: starts i=0..4, e=min(6, i+3)-1, s in i..e-1: windows ending at
  # 2..5.
  assert pairs == {
    (0, 2),
    (1, 2),
    (1, 3),
    (2, 3),
    (2, 4),
    (3, 4),
    (3, 5),
    (4, 5),
  }
  p = {"a": np.array([[0.0, 0.0, 1.0, 1.0, 1.0, 0.0]])}
  assert (
    float(
      L.segment_max_score(
        "G a", p, min_len=3, max_len=3, semantics=("boolean")
      )[0]
    )
    == 1.0
  )
  assert (
    float(
      L.segment_max_score(
        "G a", p, min_len=4, max_len=4, semantics=("boolean")
      )[0]
    )
    == 0.0
  )
  assert (
    float(
      L.segment_max_score(
        "G a", p, min_len=3, max_len=3, semantics=("robustness")
      )[0]
    )
    == 0.5
  )
  with pytest.raises(ValueError, match="semantics"):
    L.segment_max_score("G a", p, min_len=3, semantics="fuzzy")
  with pytest.raises(ValueError, match="min_len"):
    L.segment_max_score("G a", p, min_len=4, max_len=3)
