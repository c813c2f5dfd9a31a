"""Baselines for temporal queries over prediction sequences (reconstructions).

* `boolean_ltlf`: threshold the (window-mean) scores, then Boolean LTLf with the
  same end-of-trace conventions as LogSTOP (strong next; G at the last block is
  its operand; nothing holds beyond the end).
* `robustness`: STL-style quantitative semantics of p - threshold:
  ! -> negation, & -> min, | -> max, G -> min over the suffix, F -> max,
  U -> max(psi(t), min(phi(t), U(t + w))).
* `exact_probability`: the probability that phi holds when every frame's
  propositions are independent Bernoullis with the given scores, computed by a
  forward pass of a deterministic automaton that reads the trace backwards.
* `mean_score`: mean over time of the product of the formula's atom scores
  (ignores the temporal structure).

References:
  arXiv:2510.06512 (LogSTOP) compares against temporal-logic baselines; the
  exact forms here are our reconstruction.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.logstop import _engine
from jaxpapers.logstop import _formula as F
from jaxpapers.logstop._logstop import _evaluate

__all__ = [
  "boolean_ltlf",
  "robustness",
  "exact_probability",
  "mean_score",
  "build_reverse_dfa",
]


def boolean_ltlf(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  threshold: float = 0.5,
  window: int = 1,
  length: ArrayLike | None = None,
) -> jax.Array:
  """Boolean LTLf truth at t = 0 of `formula` on thresholded scores; bool[...].

  An atom holds at t iff its window mean is >= `threshold`. Scores outside
  [0, 1] raise ValueError eagerly; the result is boolean, so under `jax.jit`
  wrap with `jax.experimental.checkify.checkify` to get the error.

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: proposition name -> local scores in [0, 1] of shape [..., T].
    threshold: an atom holds where its window mean is >= this.
    window: the window w >= 1 (static).
    length: optional per-trace lengths, broadcastable to the batch shape [...].

  Returns:
    bool array of shape [...]: whether each trace satisfies `formula`.
  """
  return _evaluate(
    formula, props, window, length, "bool", threshold, first_only=True
  )


def robustness(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  threshold: float = 0.5,
  window: int = 1,
  length: ArrayLike | None = None,
) -> jax.Array:
  """STL-style robustness at t = 0 of `formula` on `p - threshold`; f32[...].

  Positive means satisfied. Beyond the end of the trace the robustness is -inf
  (strong next); `true` is +inf. Scores outside [0, 1]: ValueError eagerly,
  NaN under `jax.jit` (checkify surfaces the error).

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: proposition name -> local scores in [0, 1] of shape [..., T].
    threshold: an atom's margin is its window mean minus this.
    window: the window w >= 1 (static).
    length: optional per-trace lengths, broadcastable to the batch shape [...].

  Returns:
    float32 array of shape [...] in [-inf, inf]: each trace's robustness.
  """
  return _evaluate(
    formula, props, window, length, "robust", threshold, first_only=True
  )


def mean_score(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  length: ArrayLike | None = None,
) -> jax.Array:
  """Naive heuristic: mean_t prod_{a in atoms(phi)} p_a[t]; f32[...].

  A trace of length 0 scores 0. Scores outside [0, 1]: ValueError eagerly, NaN
  under `jax.jit` (checkify surfaces the error).

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: proposition name -> local scores in [0, 1] of shape [..., T].
    length: optional per-trace lengths, broadcastable to the batch shape [...].

  Returns:
    float32 array of shape [...] in [0, 1].
  """
  formula = F.as_formula(formula)
  arrays, shape = _engine.prepare_props(formula, props)
  length = _engine.prepare_length(length, shape)
  ok = _engine.traced_ok(arrays, length, shape)
  prod = functools.reduce(jnp.multiply, arrays.values())
  T = shape[-1]
  if length is None:
    out = jnp.mean(prod, axis=-1)
  else:
    valid = jnp.arange(T) < length[..., None]
    out = jnp.sum(jnp.where(valid, prod, 0), -1) / jnp.maximum(length, 1)
  return out if ok is None else jnp.where(ok, out, jnp.nan)


# ------------------------------------------------------------ exact probability


def _temporal_entries(formula):
  """State entries: ('next', phi) for X-operands, ('rec', node) for U/F/G
  nodes."""
  entries = []
  seen = set()
  stack = [formula]
  while stack:
    f = stack.pop()
    if f in seen:
      continue
    seen.add(f)
    if isinstance(f, F.Next):
      entries.append(("next", f.arg))
    elif isinstance(f, (F.Until, F.Always, F.Eventually)):
      entries.append(("rec", f))
    stack.extend(F.children(f))
  entries.append(("root", formula))
  return tuple(entries)


@functools.lru_cache(maxsize=256)
def build_reverse_dfa(formula):
  """Deterministic automaton reading a trace backwards (from t = e to 0).

  The state after reading position t holds the truth values at t of every
  X-operand, every U/F/G node and the root. Before reading (t = e + 1),
  X-operands, U and F are False and G is True (its base case), so the automaton
  implements the LTLf end-of-trace rules exactly.

  Returns:
    (names, trans, accept, init): atom names (letter bit order), trans
    int[S, 2^k] next-state indices, accept bool[S] (root true), init state index
    0.
  """
  formula = F.as_formula(formula)
  names = F.atoms(formula)
  entries = _temporal_entries(formula)

  def step(state, letter):
    nxt = dict(zip(entries, state))
    memo = {}

    def ev(f):
      if f in memo:
        return memo[f]
      if isinstance(f, F.Atom):
        v = letter[f.name]
      elif isinstance(f, F.Const):
        v = f.value
      elif isinstance(f, F.Not):
        v = not ev(f.arg)
      elif isinstance(f, F.And):
        v = ev(f.left) and ev(f.right)
      elif isinstance(f, F.Or):
        v = ev(f.left) or ev(f.right)
      elif isinstance(f, F.Implies):
        v = (not ev(f.left)) or ev(f.right)
      elif isinstance(f, F.Next):
        v = nxt[("next", f.arg)]
      elif isinstance(f, F.Until):
        v = ev(f.right) or (ev(f.left) and nxt[("rec", f)])
      elif isinstance(f, F.Eventually):
        v = ev(f.arg) or nxt[("rec", f)]
      elif isinstance(f, F.Always):
        v = ev(f.arg) and nxt[("rec", f)]
      else:
        raise TypeError(f)
      memo[f] = v
      return v

    return tuple(bool(ev(node)) for _, node in entries)

  init = tuple(
    kind == "rec" and isinstance(node, F.Always) for kind, node in entries
  )
  # Letter index: bit j of the index is atom names[j] (little-endian).
  letters = [
    dict(zip(names, [(i >> j) & 1 == 1 for j in range(len(names))]))
    for i in range(2 ** len(names))
  ]
  states = {init: 0}
  order = [init]
  trans = []
  k = 0
  while k < len(order):
    s = order[k]
    row = []
    for letter in letters:
      t = step(s, letter)
      if t not in states:
        states[t] = len(order)
        order.append(t)
      row.append(states[t])
    trans.append(row)
    k += 1
  accept = np.array([s[-1] for s in order], bool)
  return names, np.array(trans, np.int32), accept, 0


def exact_probability(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  length: ArrayLike | None = None,
) -> jax.Array:
  """P(phi holds on the trace) under independent per-frame Bernoullis; f32[...].

  Every proposition a at every frame t is an independent Bernoulli(p_a[t]); the
  probability is computed exactly (per-frame semantics, w = 1) by a forward pass
  over the reversed trace of the automaton from `build_reverse_dfa`:
  O(T * S * 2^k) for S automaton states and k propositions. For w = 1 and
  formulas where each atom occurs once and no U/G/F is nested in another,
  LogSTOP equals log of this value (arXiv:2510.06512; checked in our tests).

  Scores outside [0, 1] (or NaN): ValueError eagerly; under `jax.jit` the
  probability of that trace is NaN (wrap with
  `jax.experimental.checkify.checkify` to get the error).

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: proposition name -> per-frame probabilities in [0, 1] of shape
      [..., T].
    length: optional per-trace lengths, broadcastable to the batch shape [...].

  Returns:
    float32 array of shape [...] in [0, 1]: the probability that each trace
    satisfies `formula`.
  """
  formula = F.as_formula(formula)
  arrays, shape = _engine.prepare_props(formula, props)
  length = _engine.prepare_length(length, shape)
  ok = _engine.traced_ok(arrays, length, shape)
  names, trans, accept, init = build_reverse_dfa(formula)
  if len(trans) * 2 ** len(names) > 2**22:
    raise ValueError(
      f"formula {formula} needs {len(trans)} automaton states x "
      f"{2 ** len(names)} letters; too large for the exact baseline"
    )
  out = _exact_jit(
    arrays,
    length,
    names=names,
    trans=_Hashable(trans),
    accept=_Hashable(accept),
  )
  return out if ok is None else jnp.where(ok, out, jnp.nan)


class _Hashable:
  """Wraps a numpy array so it can be a static jit argument."""

  def __init__(self, a):
    self.a = np.asarray(a)
    self._h = hash((self.a.shape, self.a.tobytes()))

  def __hash__(self):
    return self._h

  def __eq__(self, other):
    return (
      isinstance(other, _Hashable)
      and self.a.shape == other.a.shape
      and np.array_equal(self.a, other.a)
    )


@functools.partial(jax.jit, static_argnames=("names", "trans", "accept"))
def _exact_jit(arrays, length, *, names, trans, accept):
  trans, accept = trans.a, accept.a
  S, K = trans.shape
  some = next(iter(arrays.values()))
  shape, dtype = some.shape, some.dtype
  T = shape[-1]
  batch = shape[:-1]
  # Letter probabilities [..., T, K]: prod_j p_j or (1 - p_j) by bit j.
  letter_p = jnp.ones(shape + (K,), dtype)
  bits = (np.arange(K)[:, None] >> np.arange(len(names))[None, :]) & 1  # [K, k]
  for j, n in enumerate(names):
    p = arrays[n][..., None]
    letter_p = letter_p * jnp.where(bits[:, j] == 1, p, 1 - p)
  onehot = jnp.asarray(np.eye(S, dtype=np.float64)[trans], dtype)  # [S, K, S']
  dist0 = jnp.zeros(batch + (S,), dtype).at[..., 0].set(1.0)
  valid = (
    jnp.ones(shape, bool)
    if length is None
    else jnp.arange(T) < length[..., None]
  )
  xs = (jnp.moveaxis(letter_p, -2, 0), jnp.moveaxis(valid, -1, 0))

  def body(dist, x):
    lp, ok = x
    new = jnp.einsum("...s,...k,skr->...r", dist, lp, onehot)
    return jnp.where(ok[..., None], new, dist), None

  dist, _ = jax.lax.scan(body, dist0, xs, reverse=True)
  return jnp.sum(jnp.where(jnp.asarray(accept), dist, 0), -1)
