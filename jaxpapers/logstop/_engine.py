"""Vectorised bottom-up evaluation of LTL formulas over [..., T] score arrays.

One engine serves three semantics, selected by a static `algebra` name:

* ``"log"``: LogSTOP log-scores (arXiv:2510.06512, Sec. 3), values in [-inf, 0];
* ``"bool"``: Boolean LTLf on thresholded window means (baseline);
* ``"robust"``: STL-style min/max robustness of ``mean - threshold`` (baseline).

Chains. The temporal operators step by the window w, so the positions t = k w + r
(r = 0..w-1) form w independent chains of n = ceil(T / w) steps k. `X` moves one step along a
chain; `U` is the affine recursion ``y(k) = b(k) (+) m(k) (x) y(k + 1)`` in the algebra's
semiring and `G` a product; atoms are window means. Positions t >= length are "beyond the
end" and hold the bottom value (-inf / False), which gives the end-of-trace rules of the paper.
Window means come from sums inside blocks of w frames (one sequential loop over the w frames of
every block, all blocks at once), so atoms cost O(T) too.

Layout. Every chain is cut into C chunks of L steps, both about sqrt(n) (`_chunking`), and
every [N, T] input (N traces) becomes one time-major view [L, C, R, N]: entry [l, q, r, i] is
step q L + l of chain r of trace i. Elementwise operators act on the view as it is (its four axes
are never merged, which keeps XLA's index arithmetic free of divisions), `X` is a shift by
one row, and `U` / `G` are reduce-then-scan:

1. one sequential ``lax.scan`` down the L rows (chunks, chains and traces are lanes) that
   composes the maps inside every chunk into the chunk's total;
2. one over the C chunk totals, which gives the value entering every chunk;
3. one more down the L rows that applies the maps step by step from that value.

Cost: O(T) work and 2 L + C = O(sqrt(T / w)) sequential steps per call, whatever w is; a float32
sum carries O(sqrt n) roundings, not O(n).

Fusion. XLA's CPU backend runs the transcendentals (log, exp, log1p) of a fusion that also
transposes much slower than in a plain elementwise loop. So the view of every input is formed
behind an optimization barrier (`_barrier`: without it XLA fused the logs of the atoms into the
transpose, then relaid the result out, about 2x the CPU time of ``score("a U b")``), and every
value of a temporal operator is written by its scan, never computed in the fusion that
transposes the result out of the view.

Scores at t = 0 only (``first_only``, what `score` returns) need chain r = 0 alone: R = 1,
atoms are block means and the other w - 1 chains are never formed, so a window costs less
than per-frame scoring; a temporal operator at the top of a formula (reached from the root
through Boolean connectives only) is folded, not scanned.

Negations. In the log algebra, every subformula carries its value and that of its negation
(log1mexp of it), each computed on first use: an atom's negation is log1p(-p), `!` swaps the
two, `|` and `->` are sums of negations (De Morgan), the negation of `F phi` is `G !phi`
(exactly: 1 - P_F(t) = (1 - p(t)) (1 - P_F(t + w))) and the operand !b of `U` is read off
directly, so log1mexp is evaluated only where a value has no cheaper form (about half as
often as by applying the definitions literally, and with fewer roundings).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as val
from jaxpapers.logstop import _formula as F

ALGEBRAS = ("log", "bool", "robust")


def log1mexp(x: ArrayLike) -> jax.Array:
  """log(1 - exp(x)) for x <= 0, stable on both sides of -log 2.

  log1mexp(0) = -inf and log1mexp(-inf) = 0 exactly. x > 0 (a log-probability above 0) is
  outside the domain: ``ValueError`` eagerly, NaN under ``jax.jit`` (wrap with
  ``jax.experimental.checkify.checkify`` to get the error).

  Args:
    x: log-probabilities in [-inf, 0], any shape; integers are taken as float32.

  Returns:
    The log of the complementary probability, same shape (and floating dtype) as x.
  """
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.float32)
  val.debug_check_values(~(x > 0), "log1mexp needs x <= 0 (a log-probability); got x > 0")
  return _log1mexp(x)


def _log1p(x):
  """log(1 + x) for x >= -1 from one log (Goldberg's formula, a few ulps).

  ``jnp.log1p`` lowers on XLA's CPU backend to code about four times as
  costly as ``jnp.log``; ``log(u) x / (u - 1)`` with u = 1 + x rounded cancels the rounding
  of u. The second ``where`` keeps the unused branch finite, so gradients stay finite too.
  """
  u = 1.0 + x
  exact = u == 1.0
  return jnp.where(exact, x, jnp.log(u) * (x / jnp.where(exact, 1.0, u - 1.0)))


def _log1mexp(x):
  return jnp.where(
    x > -jnp.log(2.0).astype(x.dtype), jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x))
  )


def _bottom(algebra):
  return False if algebra == "bool" else -jnp.inf


def _top(algebra):
  if algebra == "bool":
    return True
  return 0.0 if algebra == "log" else jnp.inf


def _semiring(algebra):
  """(plus, times, negate) of the algebra.

  log: (logaddexp, +, log1mexp); bool: (or, and, not); robust: (max, min, -).
  """
  if algebra == "log":
    return jnp.logaddexp, jnp.add, _log1mexp
  if algebra == "bool":
    return jnp.logical_or, jnp.logical_and, jnp.logical_not
  return jnp.maximum, jnp.minimum, jnp.negative


class _Maps(NamedTuple):
  """A family of maps composed along a chain (see `_suffix_values`).

  Attributes:
    combine: ``combine(later, earlier) -> earlier o later`` on tuples of arrays.
    apply: ``apply(maps, y)``: the maps applied to the value y.
    identity: the identity map, a tuple of scalars.
    end: the value past the end of the chain.
  """

  combine: Callable
  apply: Callable
  identity: tuple
  end: ArrayLike


def _until_maps(algebra) -> _Maps:
  """Affine maps y -> c (+) m (x) y: `U`'s step, (m, c) = (a (x) !b, b) (log) or (a, b)."""
  plus, times, _ = _semiring(algebra)

  def combine(later, earlier):
    (m_l, c_l), (m_e, c_e) = later, earlier
    return times(m_e, m_l), plus(c_e, times(m_e, c_l))

  def apply(maps, y):
    m, c = maps
    return plus(c, times(m, y))

  return _Maps(combine, apply, (_top(algebra), _bottom(algebra)), _bottom(algebra))


def _always_maps(algebra) -> _Maps:
  """Product maps y -> a (x) y: `G`'s step; past the end y = top (the empty product)."""
  _, times, _ = _semiring(algebra)
  return _Maps(
    lambda later, earlier: (times(earlier[0], later[0]),),
    lambda maps, y: times(maps[0], y),
    (_top(algebra),),
    _top(algebra),
  )


def _chunking(n: int) -> tuple[int, int]:
  """(L, C): C chunks of L steps for a chain of n steps, L C >= n, both about sqrt(n).

  C is a divisor of n between sqrt(n) / 2 and sqrt(n) when there is one: no padded steps, so
  the view is a plain transpose of the input, which XLA fuses into fewer passes (XLA's cost
  analysis of score: 44 bytes per frame against 85 for F(a & X b & X X c) at T = 1000).
  Else C = ceil(sqrt(n)) and L = ceil(n / C).
  """
  root = math.isqrt(n)
  for C in range(root, max(1, root // 2), -1):
    if n % C == 0:
      return n // C, C
  C = math.isqrt(n - 1) + 1 if n > 1 else 1
  return -(-n // C), C


def _chunk_totals(maps: _Maps, xs):
  """Every chunk's maps composed, by one sequential fold down the L rows: -> [C, R, N]."""

  def step(later, earlier):
    return maps.combine(later, earlier), None

  lanes = xs[0].shape[1:]
  ident = tuple(jnp.full(lanes, i, x.dtype) for i, x in zip(maps.identity, xs))
  totals, _ = jax.lax.scan(step, ident, xs, reverse=True)
  return totals


def _suffix_values(maps: _Maps, xs):
  """y(k) = (x(k) o x(k + 1) o ...)(end) at every step of the view.

  Reduce, then scan: the maps of every chunk are composed (`_chunk_totals`), a fold over the
  C totals gives the value entering every chunk from the right, and a second sequential scan
  down the L rows applies the maps one step at a time from that value (the recursion itself,
  all chunks at once). Every output row is written by the scan, so the (transcendental) apply
  never lands in the fusion that transposes the result out of the view, which XLA's CPU
  backend does not vectorise.

  Args:
    maps: the map family.
    xs: tuple of arrays [L, C, R, N], the maps at every step of the view.

  Returns:
    [L, C, R, N].
  """

  def fold(y, total):
    return maps.apply(total, y), y  # emits the value entering chunk q from the right

  lanes = xs[0].shape[1:]
  end = jnp.full(lanes[1:], maps.end, xs[-1].dtype)
  _, entering = jax.lax.scan(fold, end, _chunk_totals(maps, xs), reverse=True)  # [C, R, N]

  def step(y, x):
    y = maps.apply(x, y)
    return y, y

  _, ys = jax.lax.scan(step, entering, xs, reverse=True)
  return ys


def _first_value(maps: _Maps, xs):
  """y(0) of `_suffix_values` alone (row 0 of chunk 0), by folds: [L, C, R, N] -> [R, N]."""

  def fold(y, total):
    return maps.apply(total, y), None

  end = jnp.full(xs[0].shape[2:], maps.end, xs[-1].dtype)
  y, _ = jax.lax.scan(fold, end, _chunk_totals(maps, xs), reverse=True)
  return y


def _shift(x, fill):
  """y(k) = x(k + 1) on the view [L, C, R, N]: the next row; row 0 of the next chunk last."""
  nxt = jnp.concatenate([x[0, 1:], jnp.full((1,) + x.shape[2:], fill, x.dtype)])
  return jnp.concatenate([x[1:], nxt[None]])


def _extend(x, size: int, fill=0):
  """x [..., T] extended to [..., size] along the last axis with `fill` (a clamped gather).

  The same as ``jnp.pad``, written so that XLA's CPU backend still vectorises the fusions
  that read the result: a fusion reading its operand through a pad of the minor axis runs
  element by element (about 7x slower for the transcendentals of this engine).
  """
  T = x.shape[-1]
  if size == T:
    return x
  t = np.arange(size)
  return jnp.where(t < T, x[..., np.minimum(t, T - 1)], jnp.asarray(fill, x.dtype))


class _View(NamedTuple):
  """Shape of the view [L, C, R, N] of chains of n steps (see the module docstring)."""

  n: int
  L: int
  C: int
  R: int
  N: int

  def to_view(self, x):
    """[N, T'] (batch-major, frame k R + r; T' <= L C R, zeros past T') -> [L, C, R, N]."""
    L, C, R, N = self.L, self.C, self.R, self.N
    return _barrier(_extend(x, L * C * R).reshape(N, C, L, R).transpose(2, 1, 3, 0))

  def from_view(self, y, T: int):
    """[L, C, R, N] -> [N, T] (batch-major)."""
    return _barrier(y).transpose(3, 1, 0, 2).reshape(self.N, -1)[:, :T]


def _block_sums(x):
  """Sums inside the blocks of w frames of the view [L, C, w, N] (axis 2), both ways.

  Returns (head, suffix): head[.., r, :] = x[.., 0] + ... + x[.., r - 1] (0 at r = 0) and
  suffix[.., r, :] = x[.., r] + ... + x[.., w - 1], each accumulated by one sequential loop
  over the w frames of a block (all blocks and traces are lanes, read and written in place
  along axis 2, so nothing is transposed): O(T) work whatever w is, and no differences of
  partial sums (so a window of small scores beside large ones keeps its digits).
  """
  w = x.shape[2]

  def body(i, carry):
    head, suffix, acc_h, acc_s = carry
    head = jax.lax.dynamic_update_index_in_dim(head, acc_h, i, 2)
    acc_h = acc_h + jax.lax.dynamic_index_in_dim(x, i, 2, keepdims=False)
    acc_s = acc_s + jax.lax.dynamic_index_in_dim(x, w - 1 - i, 2, keepdims=False)
    suffix = jax.lax.dynamic_update_index_in_dim(suffix, acc_s, w - 1 - i, 2)
    return head, suffix, acc_h, acc_s

  zero = jnp.zeros(x.shape[:2] + x.shape[3:], x.dtype)
  init = (jnp.zeros_like(x), jnp.zeros_like(x), zero, zero)
  head, suffix, _, _ = jax.lax.fori_loop(0, w, body, init)
  return head, suffix


def _barrier(x):
  """x behind an optimization barrier: the transpose into the view stays a copy (see Fusion)."""
  return jax.lax.optimization_barrier(x)


def _atoms_in_view(props, names, window, lengths, first_only):
  """Window means of the atoms in the view, the validity mask and the view.

  Every frame goes to the view [L, C, w, N] of blocks of w frames (block k = step k of the
  chains). The mean of the window starting at frame k w + r is (the suffix of block k from r
  + the prefix of block k + 1 up to r - 1) / its length, cut at the end of the trace; with
  ``first_only`` only r = 0 is kept, the mean of block k.

  Args:
    props: name -> [N, T] array.
    names: the atoms to convert.
    window: w.
    lengths: int32[N] or None (every trace has length T).
    first_only: chain 0 only (R = 1) instead of every frame (R = w).

  Returns:
    (name -> means [L, C, R, N], valid bool[L, C, R, N] or None when all are valid, view).
  """
  N, T = next(iter(props.values())).shape
  w = window
  n = -(-T // w)
  L, C = _chunking(n)
  view = _View(n, L, C, 1 if first_only else w, N)
  end = jnp.full((N,), T, jnp.int32) if lengths is None else lengths
  k = jnp.arange(L)[:, None, None, None] + L * jnp.arange(C)[None, :, None, None]
  frame = k * w + jnp.arange(view.R)[None, None, :, None]  # [L, C, R, 1]
  end_v = end[None, None, None, :]
  count = jnp.clip(jnp.minimum(frame + w, end_v) - frame, 1, w)  # frames in its window
  means = {}
  for name in names:
    x = props[name]
    if w > 1 and first_only:
      # Block sums on the trace as it is ([N, n, w], w minor), so only n = T / w values per
      # trace are moved into the view.
      x = _extend(x, L * C * w)
      if lengths is not None:
        x = jnp.where(np.arange(L * C * w)[None, :] < end[:, None], x, 0)
      x = view.to_view(jnp.sum(x.reshape(N, L * C, w), axis=2))
    else:
      x = view.to_view(x)  # zeros past T
      if w > 1:
        if lengths is not None:
          x = jnp.where(frame < end_v, x, 0)
        head, suffix = _block_sums(x)
        x = suffix + _shift(head, 0)  # + frames kw + w .. kw + w + r - 1 of block k + 1
    if w > 1:
      x = x / count.astype(x.dtype)
    means[name] = x
  if lengths is None and L * C * w == T:  # every frame of the view is in the trace
    return means, None, view
  return means, frame < end_v, view


class _Both:
  """A subformula's value and its negation's, each an array computed on first use.

  ``pos`` / ``neg`` are given as zero-argument functions or left out (None) to be derived
  from the other by the algebra's negation.
  """

  def __init__(self, negate, pos=None, neg=None):
    self._negate = negate
    self._fn = {"pos": pos, "neg": neg}
    self._val = {}

  def _get(self, side, other):
    if side not in self._val:
      fn = self._fn[side]
      self._val[side] = fn() if fn is not None else self._negate(self._get(other, side))
    return self._val[side]

  def pos(self):
    return self._get("pos", "neg")

  def neg(self):
    return self._get("neg", "pos")


def _full_needed(formulas):
  """Subformulas needed at every position: the operands of X, U, F, G and below."""
  need, stack = set(), [(f, False) for f in formulas]
  while stack:
    f, full = stack.pop()
    if full:
      if f in need:
        continue
      need.add(f)
    below = full or isinstance(f, (F.Next, F.Until, F.Eventually, F.Always))
    stack.extend((c, below) for c in F.children(f))
  return need


def evaluate_many(
  formulas: Sequence[F.Formula],
  props: Mapping[str, jax.Array],
  window: int,
  length,
  algebra: str,
  threshold: float = 0.5,
  *,
  first_only: bool = False,
):
  """Values of several formulas on one batch of traces, sharing common subformulas.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    algebra: one of `ALGEBRAS`.
    threshold: atom threshold of the "bool" and "robust" algebras.
    first_only: return the values at t = 0 only.

  Returns:
    A tuple with one array per formula: [..., T], or [...] when `first_only`; bool for the
    "bool" algebra, the input dtype otherwise.
  """
  if algebra not in ALGEBRAS:
    raise ValueError(f"algebra must be one of {ALGEBRAS}, got {algebra!r}")
  some = next(iter(props.values()))
  shape, dtype = some.shape, some.dtype
  batch, T = shape[:-1], shape[-1]
  N = math.prod(batch)
  lengths = None
  if length is not None:
    lengths = jnp.broadcast_to(jnp.asarray(length, jnp.int32), batch).reshape(N)
  names = sorted({a for f in formulas for a in F.atoms(f)})
  flat = {k: props[k].reshape(N, T) for k in names} or {"": some.reshape(N, T)}
  means, valid, view = _atoms_in_view(flat, names, window, lengths, first_only)
  bottom, top = _bottom(algebra), _top(algebra)
  out_dtype = jnp.bool_ if algebra == "bool" else dtype
  _, conj, negate = _semiring(algebra)
  until_maps, always_maps = _until_maps(algebra), _always_maps(algebra)
  # With first_only, a subformula outside this set is needed at t = 0 alone ("first").
  full_needed = _full_needed(formulas) if first_only else frozenset()

  # Positions past the end are read by X, U and G (and returned): they must hold bottom
  # (top for G's operand, the empty product). Elsewhere they may hold anything.
  def below(x, first=False):
    if valid is None:
      return x
    return jnp.where(valid[0, 0, 0] if first else valid, x, bottom)

  def above(x):
    return x if valid is None else jnp.where(valid, x, top)

  def full(v, first):
    return jnp.full((N,) if first else (view.L, view.C, view.R, N), v, out_dtype)

  memo = {}

  def ev(f, first=False) -> _Both:
    """f on the view [L, C, R, N], or at t = 0 ([N], row 0 of chunk 0) when `first`."""
    key = (f, first)
    if key in memo:
      return memo[key]
    both = functools.partial(_Both, negate)
    if first and f in full_needed:
      a = ev(f)
      out = both(lambda: a.pos()[0, 0, 0], lambda: a.neg()[0, 0, 0])
    elif isinstance(f, F.Atom):
      m = means[f.name][0, 0, 0] if first else means[f.name]
      if algebra == "log":
        out = both(lambda: jnp.log(m), lambda: _log1p(-m))
      elif algebra == "bool":
        out = both(lambda: m >= threshold)
      else:
        out = both(lambda: m - jnp.asarray(threshold, dtype))
    elif isinstance(f, F.Const):
      hi, lo = (top, bottom) if f.value else (bottom, top)
      out = both(lambda: full(hi, first), lambda: full(lo, first))
    elif isinstance(f, F.Not):
      a = ev(f.arg, first)
      out = both(a.neg, a.pos)
    elif isinstance(f, F.And):
      a, b = ev(f.left, first), ev(f.right, first)
      out = both(lambda: conj(a.pos(), b.pos()))
    elif isinstance(f, F.Or):  # !(!a & !b)
      a, b = ev(f.left, first), ev(f.right, first)
      out = both(None, lambda: conj(a.neg(), b.neg()))
    elif isinstance(f, F.Implies):  # !(a & !b)
      a, b = ev(f.left, first), ev(f.right, first)
      out = both(None, lambda: conj(a.pos(), b.neg()))
    elif isinstance(f, F.Next):
      a = ev(f.arg)
      pick = (lambda y: y[0, 0, 0]) if first else (lambda y: y)
      out = both(
        lambda: pick(_shift(below(a.pos()), bottom)),
        lambda: pick(_shift(above(a.neg()), top)),
      )
    elif isinstance(f, (F.Until, F.Eventually)):
      left = ev(f.left) if isinstance(f, F.Until) else None
      right = ev(f.right if isinstance(f, F.Until) else f.arg)

      def until(left=left, right=right, first=first):
        # y(t) = b(t) (+) [a(t) (x) !b(t)] (x) y(t + w) (log; bool and robust drop the
        # !b); F phi = true U phi has a = top.
        b = right.pos()
        if algebra == "log":
          m = right.neg() if left is None else left.pos() + right.neg()
        else:
          m = jnp.full_like(b, top) if left is None else left.pos()
        xs = (m, below(b))
        y = _first_value(until_maps, xs)[0] if first else _suffix_values(until_maps, xs)
        return jnp.minimum(y, 0.0) if algebra == "log" else y

      if isinstance(f, F.Until):
        out = both(until)
      else:
        # !F phi = G !phi exactly, in every algebra (log: 1 - P_F(t) = (1 - p(t)) (1 -
        # P_F(t + w))): a sum of the operand's negations, not log1mexp of a value near 0.
        def eventually_neg(right=right, first=first):
          xs = (above(right.neg()),)
          if first:
            return _first_value(always_maps, xs)[0]
          return _suffix_values(always_maps, xs)

        out = both(until, eventually_neg)
    elif isinstance(f, F.Always):
      a = ev(f.arg)

      def always(a=a, first=first):
        xs = (above(a.pos()),)
        return _first_value(always_maps, xs)[0] if first else _suffix_values(always_maps, xs)

      out = both(always)
    else:
      raise TypeError(f"Not a formula: {f!r}")
    memo[key] = out
    return out

  results = []
  for f in formulas:
    if first_only:
      y = ev(f, first=True).pos()
      results.append(below(y.astype(out_dtype), first=True).reshape(batch))
    else:
      y = below(ev(f).pos().astype(out_dtype))
      results.append(view.from_view(y, T).reshape(shape))
  return tuple(results)


def evaluate(
  formula, props: Mapping[str, jax.Array], window: int, length, algebra: str, threshold: float = 0.5
):
  """Suffix values of `formula` for every start t; shape [..., T] (see `evaluate_many`)."""
  return evaluate_many((formula,), props, window, length, algebra, threshold)[0]


@functools.partial(
  jax.jit,
  static_argnames=("formulas", "window", "algebra", "threshold", "clip_eps", "first_only"),
)
def evaluate_jit(
  props, length, *, formulas, window, algebra, threshold=0.5, clip_eps=None, first_only=False
):
  """`evaluate_many` compiled once per (formulas, shapes, window, ...); stacked [F, ...]."""
  if clip_eps is not None:
    props = {k: jnp.clip(v, clip_eps, 1.0 - clip_eps) for k, v in props.items()}
  out = evaluate_many(formulas, props, window, length, algebra, threshold, first_only=first_only)
  return jnp.stack(out)


# ------------------------------------------------------------------ validation


def _is_concrete(x) -> bool:
  return not isinstance(x, jax.core.Tracer)


def validate_window(window) -> int:
  if isinstance(window, bool) or not isinstance(window, (int, np.integer)):
    raise TypeError(f"window must be a positive Python int, got {window!r}")
  if window < 1:
    raise ValueError(f"window must be >= 1, got {window}")
  return int(window)


@jax.jit
def _all_in_unit_jit(v):
  return jnp.all((v >= 0) & (v <= 1))


def _all_in_unit(v) -> bool:
  """All entries in [0, 1] (NaN fails), reduced on the array's device."""
  return bool(_all_in_unit_jit(v))


def prepare_props(formula, props, *, check_range=True):
  """Validates `props` for `formula` (or a tuple of formulas); returns (float arrays, shape)."""
  if not isinstance(props, Mapping):
    raise TypeError(
      f"props must be a mapping from proposition name to an array of scores "
      f"[..., T], got {type(props).__name__}"
    )
  formulas = formula if isinstance(formula, tuple) else (formula,)
  for f in formulas:
    missing = [n for n in F.atoms(f) if n not in props]
    if missing:
      raise ValueError(
        f"props is missing scores for proposition(s) {missing} of formula "
        f"{f}; got propositions {sorted(props)}"
      )
  names = tuple(sorted({n for f in formulas for n in F.atoms(f)}))
  if not names:
    if not props:
      what = ", ".join(str(f) for f in formulas)
      raise ValueError(
        f"formula {what} has no propositions, so props must contain at least one array to "
        f"fix the shape [..., T]"
      )
    names = (sorted(props)[0],)
  arrays = {}
  for n in names:
    v = props[n]
    if not hasattr(v, "dtype"):
      v = np.asarray(v)
    if not (
      jnp.issubdtype(v.dtype, jnp.floating)
      or jnp.issubdtype(v.dtype, jnp.integer)
      or v.dtype == np.bool_
    ):
      raise TypeError(f"scores of proposition {n!r} must be numeric, got dtype {v.dtype}")
    arrays[n] = v
  dtype = np.result_type(*[np.dtype(a.dtype) for a in arrays.values()], np.float32)
  if not np.issubdtype(dtype, np.floating):
    dtype = np.float32
  dtype = jax.dtypes.canonicalize_dtype(dtype)
  first = names[0]  # names is not empty, so neither is arrays
  shape = tuple(arrays[first].shape)
  for n, v in arrays.items():
    if v.ndim < 1:
      raise ValueError(
        f"scores of proposition {n!r} must have shape [..., T] with T >= 1, got a scalar"
      )
    if tuple(v.shape) != shape:
      raise ValueError(
        f"scores of proposition {n!r} have shape {tuple(v.shape)} but those of "
        f"{first!r} have shape {shape}; all propositions need the same [..., T]"
      )
  if shape[-1] < 1:
    raise ValueError(f"traces must have length T >= 1, got shape {shape}")
  for n, v in arrays.items():
    # A concrete JAX array is checked on its device (one boolean comes back); the whole array
    # is copied to the host only to name the first bad entry. Host data is checked in numpy.
    if check_range and _is_concrete(v) and (not isinstance(v, jax.Array) or not _all_in_unit(v)):
      a = np.asarray(v)
      bad = ~((a >= 0) & (a <= 1))
      if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
          f"scores of proposition {n!r} must lie in [0, 1]; found {a[idx]!r} at index {idx}"
        )
    arrays[n] = jnp.asarray(v, dtype=dtype)
  return arrays, shape


def traced_ok(arrays, length, shape, *, check_range=True):
  """Per-trace validity ``[...]`` of traced inputs (None when everything was checked eagerly).

  Scores must lie in [0, 1] (no NaN) and lengths in [0, T]. Registers a checkify
  ``debug_check``; callers poison the results of invalid traces with NaN.
  """
  oks = []
  if check_range:
    for _n, v in arrays.items():
      if not _is_concrete(v):
        oks.append(jnp.all((v >= 0) & (v <= 1), axis=-1))
  if length is not None and not _is_concrete(length):
    oks.append(jnp.broadcast_to((length >= 0) & (length <= shape[-1]), shape[:-1]))
  if not oks:
    return None
  ok = functools.reduce(jnp.logical_and, oks)
  val.debug_check_values(ok, f"scores must lie in [0, 1] (no NaN) and length in [0, T={shape[-1]}]")
  return ok


def prepare_length(length, shape):
  if length is None:
    return None
  if isinstance(length, (bool, np.bool_)):
    raise TypeError("length must be an int or an integer array, got a bool")
  length_arr = length if hasattr(length, "dtype") else np.asarray(length)
  if not jnp.issubdtype(length_arr.dtype, jnp.integer):
    raise TypeError(f"length must be integer-valued, got dtype {length_arr.dtype}")
  batch = shape[:-1]
  try:
    np.broadcast_shapes(tuple(length_arr.shape), batch)
    if len(length_arr.shape) > len(batch):
      raise ValueError
  except ValueError:
    raise ValueError(
      f"length must be a scalar or broadcast to the batch shape {batch}, got "
      f"shape {tuple(length_arr.shape)}"
    ) from None
  if _is_concrete(length_arr):
    a = np.asarray(length_arr)
    if (a < 0).any() or (a > shape[-1]).any():
      raise ValueError(f"length must lie in [0, T={shape[-1]}], got {a}")
  return jnp.asarray(length_arr, dtype=jnp.int32)
