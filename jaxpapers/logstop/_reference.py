"""A plain-Python recursive LogSTOP scorer (float64), for benchmarks and checks.

Implements the semantics of arXiv:2510.06512, Sec. 3 directly by recursion on
(subformula, t), memoised per call (a fresh memo per trace, unlike the public
reference code whose shared default memo returns stale values across traces).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence

from jaxpapers.logstop import _formula as F

_NEG_INF = float("-inf")


def _log(x):
  return math.log(x) if x > 0 else _NEG_INF


def _log1mexp(x):
  return _log(1.0 - math.exp(x)) if x != _NEG_INF else 0.0


def reference_scores(
  formula: str | F.Formula,
  props: Mapping[str, Sequence[float]],
  *,
  window: int = 1,
) -> list[float]:
  """Suffix log-scores l_phi(t), t = 0..T-1, of ONE trace, in plain Python.

  Args:
    formula: formula string or `Formula`.
    props: maps proposition names to sequences of floats in [0, 1] (length T).
    window: the window w >= 1.

  Returns:
    A list of T floats.

  Raises:
    ValueError: a missing proposition, scores outside [0, 1] or NaN, traces of
      different lengths or T = 0, or a bad window.
  """
  f0 = F.as_formula(formula)
  names = F.atoms(f0)
  if isinstance(window, bool) or not isinstance(window, int) or window < 1:
    raise ValueError(f"window must be an int >= 1, got {window!r}")
  missing = [n for n in names if n not in props]
  if missing:
    raise ValueError(
      f"props is missing scores for proposition(s) {missing} of formula {f0}"
    )
  if not names and not props:
    raise ValueError(
      "props must contain at least one trace to fix its length T"
    )
  trace = {n: [float(v) for v in props[n]] for n in names}
  lengths = {len(v) for v in trace.values()} or {
    len(next(iter(props.values())))
  }
  if len(lengths) != 1 or 0 in lengths:
    raise ValueError(
      f"all traces must have one length T >= 1, got lengths {sorted(lengths)}"
    )
  for n, v in trace.items():
    if not all(0.0 <= x <= 1.0 for x in v):
      raise ValueError(
        f"scores of proposition {n!r} must lie in [0, 1] (no NaN)"
      )
  T = (
    len(next(iter(trace.values())))
    if trace
    else len(next(iter(props.values())))
  )
  e = T - 1
  w = int(window)
  memo = {}
  # formula hashing is O(|phi|); key the memo by a node index instead
  node_ids = {}

  def ls(f, t):
    if t > e:
      return _NEG_INF
    i = node_ids.get(id(f))
    if i is None:
      i = node_ids[id(f)] = len(node_ids)
    key = (i, t)
    if key in memo:
      return memo[key]
    if isinstance(f, F.Atom):
      k = min(w, e - t + 1)
      r = _log(sum(trace[f.name][t : t + k]) / k)
    elif isinstance(f, F.Const):
      r = 0.0 if f.value else _NEG_INF
    elif isinstance(f, F.Not):
      r = _log1mexp(ls(f.arg, t))
    elif isinstance(f, F.And):
      r = ls(f.left, t) + ls(f.right, t)
    elif isinstance(f, F.Or):
      r = _log1mexp(_log1mexp(ls(f.left, t)) + _log1mexp(ls(f.right, t)))
    elif isinstance(f, F.Implies):
      r = _log1mexp(
        _log1mexp(_log1mexp(ls(f.left, t))) + _log1mexp(ls(f.right, t))
      )
    elif isinstance(f, F.Next):
      r = ls(f.arg, t + w) if t + w <= e else _NEG_INF
    elif isinstance(f, (F.Until, F.Eventually)):
      a = 0.0 if isinstance(f, F.Eventually) else ls(f.left, t)
      b = ls(f.right if isinstance(f, F.Until) else f.arg, t)
      rest = a + _log1mexp(b) + ls(f, t + w)
      r = min(_log(math.exp(b) + math.exp(rest)), 0.0)
    elif isinstance(f, F.Always):
      r = ls(f.arg, t) + (ls(f, t + w) if t + w <= e else 0.0)
    else:
      raise TypeError(f)
    memo[key] = r
    return r

  # Evaluate from the end so the recursion depth stays bounded.
  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(max(limit, 10000))
  try:
    out = [0.0] * T
    for t in range(T - 1, -1, -1):
      out[t] = ls(f0, t)
  finally:
    sys.setrecursionlimit(limit)
  return out
