"""Independent float64 oracles for the LogSTOP tests (plain Python, no JAX)."""

import itertools
import math

import numpy as np

from jaxpapers.logstop import _formula as F

NEG_INF = float("-inf")
ATOMS = ("a", "b", "c")


def _log(x):
  return math.log(x) if x > 0 else NEG_INF


def _log1mexp(x):
  if x == NEG_INF:
    return 0.0
  if x > -math.log(2.0):
    return _log(-math.expm1(x))
  return math.log1p(-math.exp(x))


def _logaddexp(x, y):
  m = max(x, y)
  if m == NEG_INF:
    return NEG_INF
  return m + math.log1p(math.exp(-abs(x - y)))


def logstop_rec(f, trace, t, e, w, memo=None):
  """LogSTOP by direct recursion on the operator expansions.

  Until is expanded as psi | (phi & !psi & X(phi U psi)) with exclusive branches,
  G as phi & X G phi with its last-block base case, F as true U phi,
  | and -> by De Morgan, as the paper's reference scorer does. `memo` (fresh per
  trace) caches (subformula, t).
  """
  if memo is None:
    memo = {}
  key = (f, t)
  if key not in memo:
    memo[key] = _logstop_rec(f, trace, t, e, w, memo)
  return memo[key]


def _logstop_rec(f, trace, t, e, w, memo):
  rec = lambda g, s: logstop_rec(g, trace, s, e, w, memo)
  if t > e:
    return NEG_INF
  if isinstance(f, F.Atom):
    k = min(w, e - t + 1)
    return _log(sum(trace[f.name][t : t + k]) / k)
  if isinstance(f, F.Const):
    return 0.0 if f.value else NEG_INF
  if isinstance(f, F.Not):
    return _log1mexp(rec(f.arg, t))
  if isinstance(f, F.And):
    return rec(f.left, t) + rec(f.right, t)
  if isinstance(f, F.Or):
    return rec(F.Not(F.And(F.Not(f.left), F.Not(f.right))), t)
  if isinstance(f, F.Implies):
    return rec(F.Or(F.Not(f.left), f.right), t)
  if isinstance(f, F.Next):
    return rec(f.arg, t + w) if t + w <= e else NEG_INF
  if isinstance(f, F.Eventually):
    return rec(F.Until(F.Const(True), f.arg), t)
  if isinstance(f, F.Until):
    b = rec(f.right, t)
    a = rec(f.left, t)
    nxt = rec(f, t + w) if t + w <= e else NEG_INF
    return min(_logaddexp(b, a + _log1mexp(b) + nxt), 0.0)  # a log-probability
  if isinstance(f, F.Always):
    a = rec(f.arg, t)
    if t + w > e:
      return a
    return a + rec(f, t + w)
  raise TypeError(f)


def bool_rec(f, trace, t, e):
  """Boolean LTLf (strong next, nothing holds beyond the end) on 0/1 traces."""
  if t > e:
    return False
  if isinstance(f, F.Atom):
    return bool(trace[f.name][t])
  if isinstance(f, F.Const):
    return f.value
  if isinstance(f, F.Not):
    return not bool_rec(f.arg, trace, t, e)
  if isinstance(f, F.And):
    return bool_rec(f.left, trace, t, e) and bool_rec(f.right, trace, t, e)
  if isinstance(f, F.Or):
    return bool_rec(f.left, trace, t, e) or bool_rec(f.right, trace, t, e)
  if isinstance(f, F.Implies):
    return (not bool_rec(f.left, trace, t, e)) or bool_rec(f.right, trace, t, e)
  if isinstance(f, F.Next):
    return bool_rec(f.arg, trace, t + 1, e)
  if isinstance(f, F.Eventually):
    return any(bool_rec(f.arg, trace, s, e) for s in range(t, e + 1))
  if isinstance(f, F.Always):
    return all(bool_rec(f.arg, trace, s, e) for s in range(t, e + 1))
  if isinstance(f, F.Until):
    for s in range(t, e + 1):
      if bool_rec(f.right, trace, s, e):
        return True
      if not bool_rec(f.left, trace, s, e):
        return False
    return False
  raise TypeError(f)


def brute_force_probability(f, probs):
  """Exact P(f) under independent Bernoulli(probs[a][t]) by enumerating
  traces."""
  names = F.atoms(f)
  T = len(next(iter(probs.values())))
  total = 0.0
  for bits in itertools.product([0, 1], repeat=T * len(names)):
    arr = np.array(bits).reshape(len(names), T)
    trace = {n: arr[i] for i, n in enumerate(names)}
    if bool_rec(f, trace, 0, T - 1):
      weight = 1.0
      for i, n in enumerate(names):
        p = np.asarray(probs[n], np.float64)
        weight *= float(np.prod(np.where(arr[i] == 1, p, 1 - p)))
      total += weight
  return total


def random_formula(rng, depth, atoms=ATOMS, positive=False):
  """A random formula over `atoms` with every operator (only monotone ones if
  positive)."""
  if depth == 0 or rng.random() < 0.2:
    if not positive and rng.random() < 0.1:
      return F.Const(bool(rng.integers(2)))
    return F.Atom(str(rng.choice(atoms)))
  if positive:
    ops = ["and", "or", "X", "U", "G", "F"]
  else:
    ops = ["not", "and", "or", "->", "X", "U", "G", "F"]
  op = ops[rng.integers(len(ops))]
  sub = lambda: random_formula(rng, depth - 1, atoms, positive)
  if op == "not":
    return F.Not(sub())
  if op == "X":
    return F.Next(sub())
  if op == "G":
    return F.Always(sub())
  if op == "F":
    return F.Eventually(sub())
  cls = {"and": F.And, "or": F.Or, "->": F.Implies, "U": F.Until}[op]
  return cls(sub(), sub())
