"""LogSTOP scores against independent float64 oracles, brute force and
invariants."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import logstop as L
from jaxpapers.logstop import _engine
from tests.jit_util import count_traces
from tests.logstop import _oracles


def _random_trace(rng, T, names=_oracles.ATOMS, extremes=True):
  props = {}
  for n in names:
    p = rng.uniform(0.0, 1.0, size=T)
    if extremes:
      kind = rng.random(T)
      p = np.where(kind < 0.08, 0.0, np.where(kind > 0.92, 1.0, p))
    props[n] = p
  return props


def _assert_same(got, want, rtol=1e-10, atol=1e-12):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
  fin = np.isfinite(want)
  np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


def test_agrees_with_recursive_reference_float64():
  rng = np.random.default_rng(0)
  with jax.enable_x64(True):
    for case in range(16):
      T = int(rng.integers(1, 26))
      w = 1 + case % 4
      f = _oracles.random_formula(rng, 4)
      traces = [_random_trace(rng, T) for _ in range(3)]
      batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
      got = L.scores(f, batch, window=w)
      assert got.dtype == jnp.float64
      for i, props in enumerate(traces):
        memo = {}
        want = [
          _oracles.logstop_rec(f, props, t, T - 1, w, memo) for t in range(T)
        ]
        _assert_same(got[i], want)
        # The library's plain-Python scorer (used by the benchmark) agrees too.
        _assert_same(L.reference_scores(f, props, window=w), want)


EXACT_CLASS = [
  "a U b",
  "G a",
  "G a & F b",
  "F(a & X b)",
  "!(a U b)",
  "F a | G b",
  "F(a & X(b | c))",
  "(a & X b) U c",
]


@pytest.mark.parametrize("text", EXACT_CLASS)
def test_exact_class_equals_brute_force_probability(text):
  rng = np.random.default_rng(1)
  f = L.parse(text)
  k = len(L.atoms(f))
  with jax.enable_x64(True):
    for T in sorted(
      {9 // k} | ({1} if text in ("a U b", "G a & F b") else set())
    ):
      props = {n: rng.uniform(size=(3, T)) for n in L.atoms(f)}
      want = [
        _oracles.brute_force_probability(f, {n: v[i] for n, v in props.items()})
        for i in range(3)
      ]
      np.testing.assert_allclose(
        np.exp(L.score(f, props)), want, rtol=1e-10, atol=1e-13
      )
      np.testing.assert_allclose(
        L.exact_probability(f, props), want, rtol=1e-10, atol=1e-13
      )


def test_outside_exact_class_is_an_approximation():
  # G(F b) nests F inside G: LogSTOP is not the exact probability there.
  rng = np.random.default_rng(2)
  props = {"b": rng.uniform(size=6)}
  with jax.enable_x64(True):
    ls = float(np.exp(L.score("G F b", props)))
    exact = _oracles.brute_force_probability(L.parse("G F b"), props)
  assert abs(ls - exact) > 1e-3


def test_monotone_in_positive_atoms():
  rng = np.random.default_rng(3)
  with jax.enable_x64(True):
    for _ in range(8):
      f = _oracles.random_formula(rng, 3, positive=True)
      T, w = int(rng.integers(1, 15)), int(rng.integers(1, 4))
      props = _random_trace(rng, T)
      props = {n: np.stack([v, rng.uniform(size=T)]) for n, v in props.items()}
      up = {
        n: np.clip(v + rng.uniform(0, 0.3, size=v.shape), 0, 1)
        for n, v in props.items()
      }
      s0, s1 = (
        np.asarray(L.scores(f, props, window=w)),
        np.asarray(L.scores(f, up, window=w)),
      )
      assert np.all((s1 >= s0 - 1e-9) | np.isneginf(s0)), str(f)


def test_window_equals_downsampled_per_frame_semantics():
  # With window w the score at t=0 is the w=1 score of the block means.
  rng = np.random.default_rng(4)
  with jax.enable_x64(True):
    for _ in range(6):
      f = _oracles.random_formula(rng, 3)
      T, w = int(rng.integers(1, 20)), int(rng.integers(1, 5))
      props = _random_trace(rng, T)
      blocks = {
        n: np.array([v[i : i + w].mean() for i in range(0, T, w)])
        for n, v in props.items()
      }
      _assert_same(L.score(f, props, window=w), L.score(f, blocks, window=1))


def test_w1_atoms_are_per_frame_logs():
  p = np.array([0.2, 0.0, 1.0, 0.7])
  with np.errstate(divide="ignore"):
    np.testing.assert_allclose(
      np.asarray(L.scores("a", {"a": p})), np.log(p), rtol=1e-6
    )
  # X a at the last frame is -inf (strong next); G a at the last frame is a.
  s = np.asarray(L.scores("X a", {"a": p}))
  assert np.isneginf(s[-1]) and np.isneginf(s[0])
  np.testing.assert_allclose(
    np.asarray(L.scores("G a", {"a": p}))[-1], np.log(0.7), rtol=1e-6
  )


def test_length_padding_invariance():
  rng = np.random.default_rng(5)
  with jax.enable_x64(True):
    for _ in range(3):
      f = _oracles.random_formula(rng, 3)
      w = int(rng.integers(1, 5))
      lengths = rng.integers(1, 16, size=3)
      padded = {n: rng.uniform(size=(3, 16)) for n in _oracles.ATOMS}
      got = L.scores(f, padded, window=w, length=lengths)
      for i, Li in enumerate(lengths):
        want = L.scores(f, {n: v[i, :Li] for n, v in padded.items()}, window=w)
        _assert_same(got[i, :Li], want)
        assert np.all(np.isneginf(np.asarray(got[i, Li:])))


def test_vmap_and_batch_equal_loop_and_jit():
  rng = np.random.default_rng(6)
  f = L.parse("G(a -> F b) & (c U X b)")
  props = {
    n: rng.uniform(size=(5, 13)).astype(np.float32) for n in _oracles.ATOMS
  }
  batched = L.score(f, props, window=2)
  vm = jax.vmap(lambda p: L.score(f, p, window=2))(props)
  loop = np.array(
    [
      L.score(f, {n: v[i] for n, v in props.items()}, window=2)
      for i in range(5)
    ]
  )
  jitted = jax.jit(lambda p: L.score(f, p, window=2))(props)
  np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(vm), loop, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(jitted), loop, rtol=1e-6)
  # Traced length works under jit.
  lens = jnp.array([13, 5, 7, 1, 9])
  jl = jax.jit(lambda p, n: L.score(f, p, window=2, length=n))(props, lens)
  np.testing.assert_allclose(
    np.asarray(jl), np.asarray(L.score(f, props, window=2, length=lens))
  )


def test_one_compile_per_formula_length_window():
  rng = np.random.default_rng(7)
  text = "F(a & X b) U (c | G a)"
  with count_traces() as traces:
    for _ in range(3):
      props = {
        n: rng.uniform(size=(3, 11)).astype(np.float32) for n in _oracles.ATOMS
      }
      props["unused"] = rng.uniform(size=(7,))  # extra names are ignored
      L.score(text, props, window=3)
      L.score(L.parse(text.replace(" ", "  ")), props, window=3)
  assert traces["evaluate_jit"] == 1

  @jax.jit
  @chex.assert_max_traces(n=1)
  def user_fn(p):
    return L.score(text, p, window=3)

  for _ in range(3):
    user_fn(
      {n: rng.uniform(size=(3, 11)).astype(np.float32) for n in _oracles.ATOMS}
    )


def test_float32_close_to_float64():
  # Log-space agreement is ill-conditioned where a negation acts on a value near 0
  # (log1mexp has slope ~1/|x|), so compare probabilities exp(score), and log
  # scores where they are well conditioned.
  rng = np.random.default_rng(8)
  for _ in range(5):
    f = _oracles.random_formula(rng, 3)
    T, w = int(rng.integers(1, 20)), int(rng.integers(1, 4))
    props = _random_trace(rng, T)
    props = {
      n: np.where((v > 0) & (v < 1), np.clip(v, 0.05, 0.95), v)
      for n, v in props.items()
    }
    s32 = np.asarray(
      L.scores(f, {n: v.astype(np.float32) for n, v in props.items()}, window=w)
    )
    assert s32.dtype == np.float32
    with jax.enable_x64(True):
      s64 = np.asarray(L.scores(f, props, window=w))
    np.testing.assert_allclose(np.exp(s32), np.exp(s64), atol=1e-5)
    assert np.all(np.isneginf(s32) >= np.isneginf(s64))  # f64 -inf stays -inf
    ok = s64 > -8
    np.testing.assert_allclose(s32[ok], s64[ok], rtol=1e-3, atol=1e-4)


def test_clip_eps_gives_finite_gradients():
  p = {"a": jnp.array([0.0, 1.0, 0.5]), "b": jnp.array([1.0, 0.0, 0.0])}
  g = jax.grad(
    lambda q: L.score("a U b", {"a": q, "b": p["b"]}, clip_eps=1e-4)
  )(p["a"])
  assert np.all(np.isfinite(np.asarray(g)))


def test_adaptive_threshold_and_match():
  tau = L.adaptive_threshold("a U b", 4)
  half = np.full(4, 0.5)
  want = min(
    _oracles.logstop_rec(L.parse("a U b"), {"a": half, "b": half}, 0, 3, 1),
    np.log(0.5),
  )
  np.testing.assert_allclose(float(tau), want, rtol=1e-6)
  props = {
    "a": np.array([[0.9, 0.9, 0.1, 0.1], [0.1, 0.1, 0.1, 0.1]]),
    "b": np.array([[0.1, 0.1, 0.9, 0.1], [0.1, 0.1, 0.1, 0.1]]),
  }
  np.testing.assert_array_equal(
    np.asarray(L.match("a U b", props)), [True, False]
  )
  # G a on all-0.5 scores is far below log 0.5, so tau is that value, not log
  # 0.5.
  assert float(L.adaptive_threshold("G a", 10)) < np.log(0.5) - 1


@pytest.mark.parametrize(
  "bad,err,msg",
  [
    ({"a": np.ones(4)}, ValueError, "missing scores for proposition(s) ['b']"),
    ({"a": np.ones(4), "b": np.ones(5)}, ValueError, "same [..., T]"),
    ({"a": np.ones(4), "b": np.full(4, 1.5)}, ValueError, "must lie in [0, 1]"),
    (
      {"a": np.ones(4), "b": np.array([0.1, np.nan, 0.2, 0.3])},
      ValueError,
      "must lie in [0, 1]",
    ),
    ({"a": np.ones(()), "b": np.ones(())}, ValueError, "shape [..., T]"),
    ([0.1, 0.2], TypeError, "mapping"),
  ],
)
def test_input_validation(bad, err, msg):
  with pytest.raises(err) as e:
    L.scores("a U b", bad)
  assert msg in str(e.value)


def test_window_and_length_validation():
  p = {"a": np.ones(4)}
  with pytest.raises(ValueError, match="window"):
    L.score("a", p, window=0)
  with pytest.raises(TypeError, match="window"):
    L.score("a", p, window=1.5)
  with pytest.raises(ValueError, match="length"):
    L.score("a", p, length=5)
  with pytest.raises(ValueError, match="length"):
    L.score("a", p, length=np.array([1, 2]))
  with pytest.raises(TypeError, match="formula"):
    L.score(3, p)


def _np_window_mean(p, w, length):
  """float64 loop: mean(p[t : t + min(w, L - t)]) for t < L."""
  out = np.full(p.shape, np.nan)
  for t in range(length):
    out[t] = np.mean(np.asarray(p[t : min(t + w, length)], np.float64))
  return out


@pytest.mark.parametrize("w", [2, 3, 7, 40])
def test_window_mean_matches_float64_loop(w):
  """The O(T) block-prefix window mean (an atom's score is log of it) vs a
  float64 loop."""
  rng = np.random.default_rng(w)
  T = 37
  p = rng.uniform(size=(3, T)).astype(np.float32)
  p[1, ::3] = 1e-6  # small windows beside large ones: no cancellation allowed
  lengths = np.array([T, 23, 1])
  got = np.asarray(L.scores("a", {"a": p}, window=w, length=lengths))
  for i, n in enumerate(lengths):
    want = np.log(_np_window_mean(p[i], w, n))
    np.testing.assert_allclose(got[i, :n], want[:n], rtol=1e-6, atol=1e-6)
    assert np.all(np.isneginf(got[i, n:]))


@pytest.mark.parametrize(
  ("T", "w"),
  [(150, 16), (150, 31), (150, 32), (300, 64), (300, 79), (1100, 513)],
)
def test_wide_window_mean_matches_float64_loop(T, w):
  """Windows of 16 frames and more (sums of sums, `_window_sums`) vs a float64
  loop, with runs of small scores as wide as several windows beside large ones:
  a window inside a run keeps its digits (a difference of prefix sums would
  cancel them)."""
  rng = np.random.default_rng(T + w)
  p = rng.uniform(size=(3, T)).astype(np.float32)
  start = T // 3
  run = min(2 * w, T - start)
  p[:, start : start + run] = rng.uniform(1e-7, 2e-7, size=(3, run)).astype(
    np.float32
  )
  lengths = np.array([T, T - w // 2 - 1, 7])
  got = np.asarray(L.scores("a", {"a": p}, window=w, length=lengths))
  for i, n in enumerate(lengths):
    want = np.log(_np_window_mean(p[i], w, n))
    np.testing.assert_allclose(got[i, :n], want[:n], rtol=1e-6, atol=1e-6)
    assert np.all(np.isneginf(got[i, n:]))


@pytest.mark.parametrize("path", ["sums", "scans"])
@pytest.mark.parametrize("T", [40, 150])
def test_window_paths_agree_at_the_switch(T, path, monkeypatch):
  """Both window-mean paths (sliding sums, `_window_sums`; blocked scans along
  the view, `_scanned_window_means`, which windows of w >= T frames take) vs a
  float64 loop, at w = T - 1 (two steps per chain), T and T + 1 (one step), with
  runs of small scores beside large ones and traces cut short by `length`; each
  path is forced on both sides of the switch."""
  steps = 0 if path == "sums" else 10**9
  monkeypatch.setattr(_engine, "_SCANNED_WINDOWS_STEPS", steps)
  rng = np.random.default_rng(T)
  p = rng.uniform(size=(3, T)).astype(np.float32)
  p[:, T // 3 : T // 3 + 9] = rng.uniform(1e-7, 2e-7, size=(3, 9)).astype(
    np.float32
  )
  lengths = np.array([T, T - 5, 2])
  for w in (T - 1, T, T + 1):
    jax.clear_caches()  # the path is chosen while tracing
    got = np.asarray(L.scores("a", {"a": p}, window=w, length=lengths))
    for i, n in enumerate(lengths):
      want = np.log(_np_window_mean(p[i], w, n))
      np.testing.assert_allclose(got[i, :n], want[:n], rtol=1e-6, atol=1e-6)
      assert np.all(np.isneginf(got[i, n:]))
    for text in ("a U b", "G(a -> F b)"):
      f = L.parse(text)
      props = {"a": p[0].astype(np.float64), "b": p[1][::-1].astype(np.float64)}
      want = [_oracles.logstop_rec(f, props, t, T - 1, w, {}) for t in range(T)]
      got = L.scores(
        f, {k: v.astype(np.float32) for k, v in props.items()}, window=w
      )
      np.testing.assert_allclose(
        np.asarray(got, np.float64), want, rtol=2e-5, atol=1e-5
      )


def test_float32_long_trace_accuracy():
  """Pairwise accumulation: relative error <= 1e-4 at T = 1e5 in float32 (closed forms)."""
  T = 100_000
  p32 = np.float32(0.999)
  ga = np.asarray(L.score("G a", {"a": np.full(T, p32)}))
  want = T * np.log(np.float64(p32))  # -100.05
  assert abs(float(ga) - want) <= 1e-4 * abs(want), (float(ga), want)
  # a U b with constant a, b: b * sum_k r^k, r = a (1 - b), a geometric series
  # over T terms.
  a, b = np.float64(np.float32(0.9999)), np.float64(np.float32(1e-7))
  r = a * (1 - b)
  aub = np.asarray(
    L.score(
      "a U b", {"a": np.full(T, np.float32(a)), "b": np.full(T, np.float32(b))}
    )
  )
  want = np.log(b * (1 - r**T) / (1 - r))
  assert abs(float(aub) - want) <= 1e-4 * abs(want), (float(aub), want)
  # A window of 5 strides through T / 5 terms per chain.
  g5 = np.asarray(L.score("G a", {"a": np.full(T, p32)}, window=5))
  want = (T // 5) * np.log(np.float64(p32))
  assert abs(float(g5) - want) <= 1e-4 * abs(want), (float(g5), want)


def _assert_close(got, want):
  """-inf in the same places, probabilities to 1e-13 and log-scores to 1e-6
  (float64).

  The scan composes the U-maps in a different order from the recursion, so values near 0
  (probabilities near 1) differ by rounding (~1e-16 absolute); a negation there, log1mexp(l)
  with slope -1/|l|, turns that into a larger relative difference of its log-score. The
  probabilities are well conditioned.
  """
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
  np.testing.assert_allclose(np.exp(got), np.exp(want), rtol=1e-9, atol=1e-13)
  fin = np.isfinite(want)
  np.testing.assert_allclose(got[fin], want[fin], rtol=1e-6, atol=1e-12)


def test_long_chains_agree_with_recursive_reference():
  """Chains of 1-60 steps (every chunking: 1 to 8 chunks, padded or not) vs the
  recursion."""
  rng = np.random.default_rng(1)
  texts = [
    "a U (b & G c)",
    "G(a -> F b)",
    "(a U b) U c",
    "!(F(a & X b))",
    "X X a | G !c",
  ]
  with jax.enable_x64(True):
    for T, w in [(60, 1), (23, 2), (7, 3)]:
      traces = [_random_trace(rng, T) for _ in range(2)]
      batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
      formulas = tuple(L.parse(t) for t in texts)
      lengths = np.array([T, T // 2 + 1])
      # One program for all formulas; every position (t = 0 is checked by
      # test_score_at_0).
      got = jax.jit(
        lambda b, ln, w=w: _engine.evaluate_many(formulas, b, w, ln, "log")
      )(batch, lengths)
      for f, g in zip(formulas, got):
        for i, props in enumerate(traces):
          e = lengths[i] - 1
          want = [
            _oracles.logstop_rec(f, props, t, e, w, {}) for t in range(e + 1)
          ]
          _assert_close(g[i, : e + 1], want)
          assert np.all(np.isneginf(np.asarray(g[i, e + 1 :])))


def test_score_at_0_agrees_with_recursive_reference():
  """`score` evaluates chain 0 alone (block means, top-level U/G folded): vs the
  recursion."""
  rng = np.random.default_rng(12)
  with jax.enable_x64(True):
    for T, w in [(25, 1), (26, 4)]:
      formulas = [_oracles.random_formula(rng, 3) for _ in range(4)]
      formulas += [
        L.parse("G(a -> F b)"),
        L.parse("(a U b) | X !c"),
        L.parse("true U X a"),
      ]
      traces = [_random_trace(rng, T) for _ in range(3)]
      batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
      lengths = np.array([T, T - 5, 1])
      got = np.asarray(L.score_many(formulas, batch, window=w, length=lengths))
      assert got.shape == (len(formulas), 3)
      for j, f in enumerate(formulas):
        want = [
          _oracles.logstop_rec(f, props, 0, lengths[i] - 1, w, {})
          for i, props in enumerate(traces)
        ]
        _assert_close(got[j], want)


def test_score_many_equals_score_per_formula():
  rng = np.random.default_rng(13)
  props = {
    n: rng.uniform(size=(2, 3, 17)).astype(np.float32) for n in _oracles.ATOMS
  }
  texts = ["G(a -> F b)", "true", "F(a & X b & X X c)"]
  with count_traces() as traces:
    got = L.score_many(texts, props, window=2)
  assert traces["evaluate_jit"] == 1  # one program for every formula
  assert got.shape == (3, 2, 3) and got.dtype == np.float32
  for j, text in enumerate(texts):
    np.testing.assert_allclose(
      got[j], L.score(text, props, window=2), rtol=1e-6, atol=1e-6
    )


WINDOW_TEXTS = [
  "a",
  "a U b",
  "G(a -> F b)",
  "F(a & X b & X X c)",
  "!(a U X b) | G c",
]


@pytest.mark.parametrize("w", [1, 2, 7, 64])
def test_windows_agree_with_recursive_reference(w):
  """`scores` (every t) and `score_many` (t = 0) at w = 1, 2, 7, 64 vs the float64 recursion.

  T = 2 w + 5 is not a multiple of w (nor of the chunking), and the lengths cut
  the traces at w + 3 and below w (a window longer than the trace): an
  off-by-one in a window's first or last frame, in the count that divides it, or
  in the step of X / U / G changes the values.
  """
  rng = np.random.default_rng(200 + w)
  T = 2 * w + 5
  formulas = tuple(L.parse(t) for t in WINDOW_TEXTS)
  traces = [_random_trace(rng, T) for _ in range(3)]
  batch = {n: np.stack([tr[n] for tr in traces]) for n in _oracles.ATOMS}
  lengths = np.array([T, w + 3, max(1, w // 3)])
  with jax.enable_x64(True):
    every = jax.jit(
      lambda b, ln: _engine.evaluate_many(formulas, b, w, ln, "log")
    )(batch, lengths)
    first = np.asarray(L.score_many(formulas, batch, window=w, length=lengths))
  for j, f in enumerate(formulas):
    for i, props in enumerate(traces):
      e = int(lengths[i]) - 1
      want = [_oracles.logstop_rec(f, props, t, e, w, {}) for t in range(e + 1)]
      _assert_close(every[j][i, : e + 1], want)
      assert np.all(np.isneginf(np.asarray(every[j][i, e + 1 :])))
      _assert_close(first[j, i], want[0])


@pytest.mark.parametrize("w", [7, 64])
def test_window_longer_than_trace(w):
  """T = 5 < w without lengths: every atom is the mean of the rest of the trace,
  X is -inf."""
  rng = np.random.default_rng(300 + w)
  T = 5
  props = _random_trace(rng, T)
  with jax.enable_x64(True):
    got = np.asarray(L.scores("a", props, window=w))
    want = [
      np.log(np.mean(props["a"][t:]))
      if np.mean(props["a"][t:]) > 0
      else -np.inf
      for t in range(T)
    ]
    _assert_close(got, want)
    assert np.all(np.isneginf(np.asarray(L.scores("X a", props, window=w))))
    for text in ("G(a -> F b)", "a U b"):
      f = L.parse(text)
      want = [_oracles.logstop_rec(f, props, t, T - 1, w, {}) for t in range(T)]
      _assert_close(L.scores(f, props, window=w), want)
      _assert_close(L.score(f, props, window=w), want[0])


def test_log1p_of_a_negated_score_to_a_few_ulps():
  """An atom's negation log1p(-p) is computed from one log (Goldberg's formula):
  vs numpy.

  A plain log(1 - p) fails here: it returns 0 for p below half an ulp of 1 and
  loses all digits of -p for small p, which a later negation turns into -inf.
  """
  p = np.concatenate([np.logspace(-30, 0, 3001), np.linspace(0, 1, 1001)])
  for dtype in (np.float32, np.float64):
    with jax.enable_x64(dtype == np.float64):
      x = p.astype(dtype)
      got = np.asarray(_engine._log1p(jnp.asarray(-x)), np.float64)
      want = np.log1p(-x.astype(np.float64))
      np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
      fin = np.isfinite(want) & (want != 0)
      ulps = (
        np.abs(got[fin] - want[fin]) / np.abs(want[fin]) / np.finfo(dtype).eps
      )
      assert ulps.max() <= 4, (dtype, ulps.max())
      grad = jax.grad(lambda v: _engine._log1p(-v).sum())(
        jnp.asarray(x[x < 0.999])
      )
      np.testing.assert_allclose(
        grad, -1 / (1 - x[x < 0.999]), rtol=10 * np.finfo(dtype).eps
      )
