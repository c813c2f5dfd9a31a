"""Bad-input battery for ``jaxpapers.logstop``: malformed calls, eagerly and
under jit."""

import math

import jax
import numpy as np
import pytest

from jaxpapers import logstop as ls
from jaxpapers.logstop import _engine
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
BAD = F32([0.2, 1.7, 0.4])  # a probability above 1
GOOD = F32([0.2, 0.7, 0.4])
RANGE = r"must lie in \[0, 1\]"
PARSE = "formula parsing and AST construction happen on the host"
WINDOWS = "NumPy float64 window means that prepare inputs on the host"
QMTP = "reads and scores the benchmark's files on the host"


def _one(fn, formula="a", **kw):
  """fn(formula, {"a": p}) with p a traced argument under jit."""
  return lambda p: fn(formula, {"a": p}, **kw)


CASES = [
  # scores: value checks give NaN under jit, bool results need checkify
  Case("score", _one(ls.score), (BAD,), match=RANGE, jit="nan"),
  Case(
    "score",
    _one(ls.score, "F a"),
    (F32([0.2, np.nan, 0.4]),),
    match=RANGE,
    jit="nan",
    id="score-nan",
  ),
  Case(
    "score",
    _one(ls.score, "a & b"),
    (GOOD,),
    match=r"missing scores for proposition\(s\) \['b'\]",
    id="score-missing",
  ),
  Case(
    "score",
    _one(ls.score, window=0),
    (GOOD,),
    match="window must be >= 1",
    id=("score-window"),
  ),
  Case(
    "score",
    lambda p: ls.score("a", {"a": p}, length=np.array(5)),
    (GOOD,),
    match=r"length must lie in \[0, T=3\]",
    id="score-length",
  ),
  Case("scores", _one(ls.scores, "G a"), (BAD,), match=RANGE, jit="nan"),
  Case(
    "scores",
    _one(ls.scores),
    (np.array(["x", "y"]),),
    error=TypeError,
    match="must be numeric",
    jit=None,
    jit_reason="a string array cannot be a jit argument",
    id="scores-dtype",
  ),
  Case(
    "score_many",
    lambda p: ls.score_many(["a", "G a"], {"a": p}),
    (BAD,),
    match=RANGE,
    jit="nan",
  ),
  Case(
    "score_many",
    lambda p: ls.score_many("a U b", {"a": p, "b": p}),
    (GOOD,),
    error=TypeError,
    match="formulas must be a sequence",
    id="score_many-one-formula",
  ),
  Case(
    "score_many",
    lambda p: ls.score_many([], {"a": p}),
    (GOOD,),
    match="at least one formula",
    id="score_many-empty",
  ),
  Case(
    "score_many",
    lambda p: ls.score_many(["a", "a & b"], {"a": p}),
    (GOOD,),
    match=r"missing scores for proposition\(s\) \['b'\] of formula \(a & b\)",
    id="score_many-missing",
  ),
  Case(
    "exact_probability",
    _one(ls.exact_probability, "F a"),
    (BAD,),
    match=RANGE,
    jit=("nan"),
  ),
  Case("mean_score", _one(ls.mean_score), (BAD,), match=RANGE, jit="nan"),
  Case(
    "robustness", _one(ls.robustness, "G a"), (BAD,), match=RANGE, jit=("nan")
  ),
  Case(
    "boolean_ltlf",
    _one(ls.boolean_ltlf, "F a"),
    (BAD,),
    match=RANGE,
    jit=("checkify"),
  ),
  Case("match", _one(ls.match, "F a"), (BAD,), match=RANGE, jit="checkify"),
  Case(
    "segment_max_score",
    _one(ls.segment_max_score, "F a"),
    (BAD,),
    match=RANGE,
    jit=("nan"),
  ),
  Case(
    "segment_max_score",
    _one(ls.segment_max_score, "F a", semantics="fuzzy"),
    (GOOD,),
    match="semantics must be one of",
    id="segment_max_score-semantics",
  ),
  Case(
    "adaptive_threshold",
    ls.adaptive_threshold,
    ("F a", 0),
    match="T must be a positive int",
    jit=None,
    jit_reason="all arguments are static (formula, T)",
  ),
  Case(
    "segment_pairs",
    ls.segment_pairs,
    (5, 1, 3),
    {"window": 0},
    match="window must be >= 1",
    jit=None,
    jit_reason="static NumPy enumeration of segments",
  ),
  Case(
    "segment_pairs",
    ls.segment_pairs,
    (5, 4, 3),
    match=r"min_len \(4\) must be <= max_len",
    jit=None,
    jit_reason="static NumPy enumeration of segments",
    id="segment_pairs-order",
  ),
  Case("log1mexp", ls.log1mexp, (F32([0.5]),), match="x <= 0", jit="nan"),
  Case(
    "reference_scores",
    ls.reference_scores,
    ("a", {"a": [0.2, 1.7]}),
    match=RANGE,
    jit=None,
    jit_reason="plain-Python float64 reference scorer",
  ),
  Case(
    "reference_scores",
    ls.reference_scores,
    ("a & b", {"a": [0.2]}),
    match="missing scores",
    jit=None,
    jit_reason="plain-Python float64 reference scorer",
    id="reference_scores-missing",
  ),
  # window means and the QMTP benchmark (host side: NumPy inputs, files)
  Case(
    "block_means",
    ls.block_means,
    ({"a": GOOD}, 0),
    match="window must be >= 1",
    jit=None,
    jit_reason=WINDOWS,
  ),
  Case(
    "sliding_means",
    ls.sliding_means,
    (GOOD, 0),
    match="window must be >= 1",
    jit=None,
    jit_reason=WINDOWS,
  ),
  Case(
    "centred_means",
    ls.centred_means,
    (GOOD, -1),
    match="radius must be >= 0",
    jit=None,
    jit_reason=WINDOWS,
  ),
  Case(
    "parse_query",
    ls.parse_query,
    ("(car) Until",),
    match="not in the benchmark's syntax",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "load_qmtp",
    ls.load_qmtp,
    ("no/such/qmtp_dir",),
    error=FileNotFoundError,
    match="data_dir must be an existing directory",
    jit=None,
    jit_reason=QMTP,
  ),
  Case(
    "evaluate_qmtp",
    ls.evaluate_qmtp,
    ([],),
    match="samples must hold at least one",
    jit=None,
    jit_reason=QMTP,
  ),
  Case(
    "evaluate_qmtp",
    lambda: ls.evaluate_qmtp([], smoothing_radius=-1),
    match="smoothing_radius must be >= 0",
    jit=None,
    jit_reason=QMTP,
    id="evaluate_qmtp-radius",
  ),
  # formulas and parsing (host side)
  Case(
    "parse",
    ls.parse,
    ("G (a ->",),
    match="Cannot parse formula at column 8",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "parse",
    ls.parse,
    (["a"],),
    error=TypeError,
    match="formula must be a str",
    jit=None,
    jit_reason=PARSE,
    id="parse-type",
  ),
  Case(
    "as_formula",
    ls.as_formula,
    (3,),
    error=TypeError,
    match="formula must be a str or",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "atoms",
    ls.atoms,
    (None,),
    error=TypeError,
    match="formula must be a str or",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "size", ls.size, ("a U",), match="Cannot parse", jit=None, jit_reason=PARSE
  ),
  Case(
    "build_reverse_dfa",
    ls.build_reverse_dfa,
    ("F (a",),
    match="Cannot parse",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Atom", ls.Atom, ("",), match="non-empty string", jit=None, jit_reason=PARSE
  ),
  Case(
    "Const",
    ls.Const,
    (1,),
    error=TypeError,
    match="Const value must be a bool",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Not",
    ls.Not,
    ("a",),
    error=TypeError,
    match=r"Not.arg must be a Formula node",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "And",
    ls.And,
    (ls.Atom("a"), "b"),
    error=TypeError,
    match=r"And.right must be a Formula",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Or",
    ls.Or,
    (1, ls.Atom("a")),
    error=TypeError,
    match=r"Or.left must be a Formula",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Implies",
    ls.Implies,
    (ls.Atom("a"), None),
    error=TypeError,
    match=r"Implies.right must be a Formula",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Next",
    ls.Next,
    ("X a",),
    error=TypeError,
    match=r"Next.arg must be a Formula",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Until",
    ls.Until,
    (ls.Atom("a"), 2.0),
    error=TypeError,
    match=r"Until.right must be",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Always",
    ls.Always,
    ("a",),
    error=TypeError,
    match=r"Always.arg must be",
    jit=None,
    jit_reason=PARSE,
  ),
  Case(
    "Eventually",
    ls.Eventually,
    ("a",),
    error=TypeError,
    match=r"Eventually.arg must be",
    jit=None,
    jit_reason=PARSE,
  ),
]

EXEMPT = {
  "Formula": "a typing.Union alias of the node classes, not a function",
  "QMTPSample": (
    "a frozen record of one loaded sample, built and checked by load_qmtp"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(ls, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_letter_operator_glued_to_a_name_is_one_proposition():
  assert ls.atoms("Fa") == ("Fa",)
  assert ls.atoms("F a") == ("a",)


def test_segment_max_with_trace_shorter_than_min_len_is_minus_inf():
  out = ls.segment_max_score("F a", {"a": GOOD}, min_len=5, max_len=6)
  assert float(out) == -math.inf


def test_bad_trace_is_poisoned_alone_under_jit():
  p = np.stack([BAD, GOOD])
  out = np.asarray(jax.jit(lambda p: ls.score("F a", {"a": p}))(p))
  assert np.isnan(out[0]) and np.isfinite(out[1])


def test_log1mexp_endpoints():
  assert (
    float(ls.log1mexp(0.0)) == -math.inf
    and float(ls.log1mexp(-math.inf)) == 0.0
  )


def test_checkify_reports_bad_scores_under_jit():
  """The documented jit path: checkify turns the registered check into an
  error."""
  from jax.experimental import checkify

  f = checkify.checkify(jax.jit(lambda p: ls.score("G a", {"a": p})))
  for bad in (BAD, F32([0.2, np.nan, 0.4]), F32([-0.1, 0.5, 0.5])):
    err, out = f(bad)
    assert np.isnan(np.asarray(out))
    with pytest.raises(Exception, match=RANGE):
      err.throw()
  err, out = f(GOOD)
  err.throw()  # no error for valid scores
  assert np.isfinite(np.asarray(out))


def test_eager_jax_array_checked_without_host_copy(monkeypatch):
  """A valid JAX array is range-checked on its device: numpy never sees the
  scores."""
  import jax.numpy as jnp

  p = jnp.asarray(GOOD)
  seen = []
  real = np.asarray
  monkeypatch.setattr(
    np, "asarray", lambda a, *x, **k: seen.append(a is p) or real(a, *x, **k)
  )
  ls.score("G a", {"a": p})
  monkeypatch.undo()
  assert not any(seen)
  with pytest.raises(ValueError, match=r"found .*1\.7.* at index \(1,\)"):
    ls.score("G a", {"a": jnp.asarray(BAD)})


def test_bad_values_in_a_large_batch_are_poisoned_under_jit():
  """At [600, 500] XLA's CPU backend hands reductions to a library whose min /
  max skip NaN: a NaN there once gave a plausible score. Exactly the bad traces
  are NaN, for either atom."""
  rng = np.random.default_rng(5)
  p = {n: rng.uniform(size=(600, 500)).astype(np.float32) for n in "ab"}
  bad = {}
  for i, (name, value, t) in enumerate(
    (n, v, t)
    for n in "ab"
    for v in (np.nan, -1e-30, 1.0000001, np.inf)
    for t in (0, 250, 499)
  ):
    p[name][7 * i + 1, t] = value
    bad[7 * i + 1] = (name, value, t)
  out = np.asarray(jax.jit(lambda q: ls.score("a U b", q))(p))
  assert sorted(np.flatnonzero(np.isnan(out))) == sorted(bad), bad
  assert np.all(np.isfinite(np.delete(out, list(bad))))


@pytest.mark.parametrize(
  "window, clip_eps, sequential",
  [(1, None, True), (1, None, False), (3, None, True), (1, 0.01, True)],
  ids=["loop", "blocked", "window", "clip"],
)
def test_every_range_check_path_poisons_exactly_the_bad_traces(
  window, clip_eps, sequential, monkeypatch
):
  """The range check of traced scores runs in the loop of the sequential scan
  (w = 1), as a pass of its own elsewhere (blocked scans, w > 1, and before
  ``clip_eps``, which would clip a bad value into range): each must catch NaN, a
  negative, a value above 1 and inf, in every atom, at the first, a middle and
  the last frame, including past a trace's length."""
  if not sequential:
    monkeypatch.setattr(_engine, "sequential_fits", lambda *args: False)
  rng = np.random.default_rng(6)
  T = 40
  p = {n: rng.uniform(size=(30, T)).astype(np.float32) for n in "abc"}
  bad = {}
  cases = [
    (n, v, t)
    for n in "abc"
    for v in (np.nan, -0.5, 1.5, np.inf)
    for t in (0, 17, T - 1)
  ]
  for i, (name, value, t) in enumerate(cases[:29]):
    p[name][i, t] = value
    bad[i] = (name, value, t)
  lengths = np.full(30, T, np.int32)
  lengths[::4] = 10  # bad frames past the end of a trace still poison it
  f = jax.jit(
    lambda q, ln: ls.score_many(
      ["a U b", "F(a & X b & X X c)"],
      q,
      window=window,
      length=ln,
      clip_eps=clip_eps,
    )
  )
  out = np.asarray(f(p, lengths))
  for row in out:
    assert sorted(np.flatnonzero(np.isnan(row))) == sorted(bad), bad
  assert np.all(~np.isnan(out[:, 29]))
