"""Vectorised bottom-up evaluation of LTL formulas over [..., T] score arrays.

One engine serves four semantics, selected by a static `algebra` name:

* ``"prob"``: LogSTOP in linear space, the probabilities exp(l) of the
  log-scores, each with its complement (what `score` and `scores` evaluate
  first; see Linear space);
* ``"log"``: LogSTOP log-scores (arXiv:2510.06512, Sec. 3), values in [-inf, 0];
* ``"bool"``: Boolean LTLf on thresholded window means (baseline);
* ``"robust"``: STL-style min/max robustness of ``mean - threshold`` (baseline).

Chains. The temporal operators step by the window w, so the positions t = k w +
r (r = 0..w-1) form w independent chains of n = ceil(T / w) steps k. `X` moves
one step along a chain; `U` is the affine recursion ``y(k) = c(k) (+) m(k) (x)
y(k + 1)`` in the algebra's semiring and `G` a product; atoms are window means.
Positions t >= length are "beyond the end" and hold the bottom value (-inf / 0 /
False), which gives the end-of-trace rules of the paper.

Layout. Every chain is cut into C chunks of L <= 8 steps (`_chunking`), and
every [N, T] input (N traces) becomes one time-major view [L, C, R, N] (R = w
chains, or R = 1 for scores at t = 0 only): entry [l, q, r, i] is step q L + l
of chain r of trace i. Elementwise operators act on the view as it is, `X` is a
shift by one row, and `U` / `G` are reduce-then-scan: the L maps of every chunk
are composed by one unrolled expression (chunks, chains and traces are lanes),
the C chunk totals are scanned the same way one level up (`_suffix_rows`: chunks
of the totals, and so on), and a loop of L steps applies the maps down the rows
from the value entering every chunk. Scores at t = 0 need the total alone:
blocked reductions (`_reduce`). Work is O(T) for every w, the sequential steps
O(L log_L n), so no loop grows with T; a float32 sum carries O(log n) roundings.

Windows. The mean of the window starting at frame f is the sum of frames f ..
f + w - 1 over its length. The frames go once into frame-major order [F, N] (the
transpose that w = 1 makes into the view), where the frames ahead of f are the
rows below it, and sliding sums add contiguous rows: the sums of w // 8 frames,
then 8 of those (`_window_sums`; w = 64: 8 + 8 rows read per frame in 2 passes,
the second writing the view). A window of w >= T frames is the window of T
frames (every chain has one step), and chains of one step take blocked scans
along the frames of the view instead (`_scanned_window_means`: suffix sums, no
frame-major copy; cheaper there, measured). All terms are nonnegative and
nothing is subtracted (no differences of prefix sums, so a window of small
scores beside large ones keeps its digits). Scores at t = 0 (`first_only`) sum
blocks of w frames on the input as it is and keep chain 0 alone, so a window
costs less than w = 1.

Linear space. In the log algebra every frame costs transcendentals (log p,
log1p(-p) and a logaddexp per step of U); their cost on a CPU bounds an exact
log-space scorer (the benchmark measures it). The "prob" algebra multiplies
probabilities instead and takes one log per returned value. It carries every
subformula's value P and its complement Q = 1 - P, each as a sum of products of
nonnegative numbers without any subtraction (Q of ``a & b`` is Q_a + P_a Q_b, Q
of ``a U b`` follows Q(k) = Q_b (Q_a + P_a Q(k + 1)), ...), so a probability
near 1 keeps the digits of its complement. A product of many probabilities near
1 is rounded more coarsely than in log space, and each temporal level can
multiply that error by n, so deep temporal nesting stays in log space
(`underflow_threshold`, Rounding). What linear space cannot hold is a
probability below the smallest normal float (``tiny``): products are floored
(``_mul``: a product of two positive numbers is at least ``tiny``), so a value
is 0 exactly when its log-score is -inf, and each floored product perturbs the
result by at most ``tiny``. `underflow_threshold` bounds the sum of those
perturbations from the formula's nesting depth and n; a returned value below
that bound (``0 < P < tau``) has not got the digits of its log, and `log_scores`
recomputes the whole batch in the log algebra (one ``lax.cond``, so inputs that
never get there pay only the check).

Negations. In the log algebra, every subformula carries its value and that of
its negation (log1mexp of it), each computed on first use: an atom's negation is
log1p(-p), `!` swaps the two, `|` and `->` are sums of negations (De Morgan),
the negation of `F phi` is `G !phi` (exactly: 1 - P_F(t) = (1 - p(t)) (1 -
P_F(t + w))) and the operand !b of `U` is read off directly, so log1mexp is
evaluated only where a value has no cheaper form.

Fusion. XLA's CPU backend turns a transpose into a change of layout where it
can, and then every fusion reading the view reads the input with strides
(measured: 1.6x the time of ``score("F(a & X b & X X c)")``); so the view of
every input, and the result before it is transposed out, are materialised
row-major by a layout constraint (`_row_major`). Two more constraints save whole
passes (XLA's cost analysis, bytes moved per frame at [600, 500]): the
components of a composed map (an affine map's factor and offset) are stacked
into one materialised array (`_compose`), so one fusion reads the operands of
the maps once instead of XLA materialising the factor shared by both components
(``score("a U b")`` 48.6 -> 28.0 bytes per frame, ``score("F(a & X b & X X
c)")`` 104.6 -> 80.0); and a window mean at w > 1 is materialised, so the atom's
value and complement read it rather than each re-reading the sums it comes from.

Sequential scan (`score` at t = 0 in the "prob" algebra). The blocked scans
write every nested temporal operand's values at every step before the operator
above reads them (``G(a -> F b)``: the view, F b's values, then G's reduction).
`score` takes instead one ``lax.scan`` down the n steps of chain 0 on the
time-major view [n, N] (`_sequential_first`): each step evaluates every
subformula from the atoms' block means at k and a carry of constant size (the
values at k + 1 of the temporal subformulas and of X's operands), 32 steps per
loop iteration, so nothing of size T is written but the view. At w = 1 the loop
also takes the range check of traced scores (``0 <= v <= 1`` per frame, and-ed
into a carry), which then costs no pass over the inputs of its own
(`evaluate_many_checked`). The scan's rounding grows as 2 n eps (a step of an
affine recursion adds at most 2 eps to the relative error), so it is used while
that stays below 2^-10 (`sequential_fits`); longer chains take the blocked
scans. `scores` (every t) keeps the blocked scans: XLA's CPU backend fuses every
returned row of an unrolled loop body into its own expression, which recomputes
all the steps before it in the iteration (measured 4-5x the blocked scans' time
at T = 500), and ``lax.optimization_barrier`` does not reach its compiled
program.

Cost (measured by ``benchmarks/logstop_throughput.py``): the "prob" algebra
needs no transcendental per frame, so what is left is moving the frames into the
view and a few multiply-adds and comparisons per frame and operator. Its floors
are min / max of nonnegative floats, taken as integer min / max of their bits
(`_nonneg_max`): XLA's CPU backend wraps every float min / max in a NaN test and
a blend, 4 vector instructions instead of 1.
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
from jax.experimental.layout import Layout, with_layout_constraint
from jax.typing import ArrayLike

from jaxpapers.core import validation as val
from jaxpapers.logstop import _formula as F

ALGEBRAS = ("prob", "log", "bool", "robust")

# Steps composed by one unrolled expression in the blocked scans (`_compose`).
_BLOCK = 8


def log1mexp(x: ArrayLike) -> jax.Array:
  """log(1 - exp(x)) for x <= 0, stable on both sides of -log 2.

  log1mexp(0) = -inf and log1mexp(-inf) = 0 exactly. x > 0 (a log-probability
  above 0) is outside the domain: ``ValueError`` eagerly, NaN under ``jax.jit``
  (wrap with ``jax.experimental.checkify.checkify`` to get the error).

  Args:
    x: log-probabilities in [-inf, 0], any shape; integers are taken as float32.

  Returns:
    The log of the complementary probability, same shape (and floating dtype) as
    x.
  """
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.float32)
  val.debug_check_values(
    ~(x > 0), "log1mexp needs x <= 0 (a log-probability); got x > 0"
  )
  return _log1mexp(x)


def _log1p(x):
  """log(1 + x) for x >= -1 from one log (Goldberg's formula, a few ulps).

  ``jnp.log1p`` lowers on XLA's CPU backend to code about four times as costly
  as ``jnp.log``; ``log(u) x / (u - 1)`` with u = 1 + x rounded cancels the
  rounding of u. The second ``where`` keeps the unused branch finite, so
  gradients stay finite too.
  """
  u = 1.0 + x
  exact = u == 1.0
  return jnp.where(exact, x, jnp.log(u) * (x / jnp.where(exact, 1.0, u - 1.0)))


def _log1mexp(x):
  return jnp.where(
    x > -jnp.log(2.0).astype(x.dtype),
    jnp.log(-jnp.expm1(x)),
    jnp.log1p(-jnp.exp(x)),
  )


def _tiny(x):
  return jnp.asarray(jnp.finfo(x.dtype).tiny, x.dtype)


def _as_int(x):
  """The bits of a float array as signed integers of its width."""
  return jax.lax.bitcast_convert_type(
    x, jnp.dtype(f"int{jnp.dtype(x.dtype).itemsize * 8}")
  )


def _nonneg_max(x, y):
  """max(x, y) for floats x, y >= +0: the integer max of their bits.

  Nonnegative IEEE floats are ordered as their bit patterns read as signed
  integers, so one integer instruction replaces ``jnp.maximum``, which XLA's CPU
  backend lowers with a NaN test and a blend around every max (measured: 4
  vector instructions instead of 1). A NaN operand (bits above +inf) wins a max
  and loses a min; such traces are reported as NaN anyway (the range check of
  `traced_ok`).
  """
  return jax.lax.bitcast_convert_type(
    jnp.maximum(_as_int(x), _as_int(y)), x.dtype
  )


def _nonneg_min(x, y):
  """min(x, y) for floats x, y >= +0 (see `_nonneg_max`)."""
  return jax.lax.bitcast_convert_type(
    jnp.minimum(_as_int(x), _as_int(y)), x.dtype
  )


def _mul(x, y):
  """x y for x, y in {0} U [tiny, 1], floored so that a product of positives
  stays >= tiny.

  XLA's CPU backend flushes results below ``tiny`` to 0; the floor keeps "0
  exactly when a factor is 0", which makes a zero probability an exact -inf
  log-score, and adds at most ``tiny`` to the product. The operands are never
  negative, so the floor's min and max are integer ones (`_nonneg_max`).
  """
  return _nonneg_max(x * y, _nonneg_min(_nonneg_min(x, y), _tiny(x)))


def _positive(x):
  """x in [0, 1] with every positive value raised to at least ``tiny`` (see
  `_mul`).

  XLA's CPU backend reads subnormal scores as 0, in this algebra as in the log
  algebra.
  """
  return jnp.where(x > 0, _nonneg_max(x, _tiny(x)), jnp.zeros((), x.dtype))


def _bottom(algebra):
  if algebra == "bool":
    return False
  return 0.0 if algebra == "prob" else -jnp.inf


def _top(algebra):
  if algebra == "bool":
    return True
  return {"log": 0.0, "prob": 1.0}.get(algebra, jnp.inf)


def _semiring(algebra):
  """(plus, times, negate) of the algebra.

  prob: (+, floored x, 1 - x); log: (logaddexp, +, log1mexp); bool: (or, and,
  not); robust: (max, min, -).
  """
  if algebra == "prob":
    return jnp.add, _mul, lambda x: 1.0 - x
  if algebra == "log":
    return jnp.logaddexp, jnp.add, _log1mexp
  if algebra == "bool":
    return jnp.logical_or, jnp.logical_and, jnp.logical_not
  return jnp.maximum, jnp.minimum, jnp.negative


class _Maps(NamedTuple):
  """A family of maps composed along a chain (see `_suffix_values`).

  Attributes:
    combine: ``combine(first, then) -> then o first`` on tuples of arrays
      (``first`` is applied first).
    apply: ``apply(maps, y)``: the maps applied to the value y.
    identity: the identity map, a tuple of scalars.
    end: the value that enters the chain (past its end for a suffix scan).
  """

  combine: Callable
  apply: Callable
  identity: tuple
  end: ArrayLike


def _affine_maps(algebra, end=None) -> _Maps:
  """Affine maps y -> c (+) m (x) y: `U`'s step, (m, c) = (a (x) !b, b) (log) or (a, b)."""
  plus, times, _ = _semiring(algebra)

  def combine(first, then):
    (m_f, c_f), (m_t, c_t) = first, then
    return times(m_t, m_f), plus(c_t, times(m_t, c_f))

  def apply(maps, y):
    m, c = maps
    return plus(c, times(m, y))

  end = _bottom(algebra) if end is None else end
  return _Maps(combine, apply, (_top(algebra), _bottom(algebra)), end)


def _product_maps(algebra) -> _Maps:
  """Product maps y -> a (x) y: `G`'s step; past the end y = top (the empty
  product)."""
  _, times, _ = _semiring(algebra)
  return _Maps(
    lambda first, then: (times(then[0], first[0]),),
    lambda maps, y: times(maps[0], y),
    (_top(algebra),),
    _top(algebra),
  )


def _sum_maps() -> _Maps:
  """y -> x + y: suffix and prefix sums (`_scanned_window_means`)."""
  return _Maps(
    lambda first, then: (first[0] + then[0],), lambda m, y: m[0] + y, (0,), 0
  )


def _pad_rows(x, size: int, fill, axis: int):
  """x extended along `axis` to `size` with `fill` (a concatenate: `axis` is
  never minor)."""
  extra = size - x.shape[axis]
  if extra == 0:
    return x
  shape = list(x.shape)
  shape[axis] = extra
  return jnp.concatenate([x, jnp.full(shape, fill, x.dtype)], axis=axis)


def _blocks(n: int) -> tuple[int, int]:
  """(m, b): m blocks of b <= _BLOCK steps, m b >= n; b divides n when it can (no padding)."""
  for b in range(min(n, _BLOCK), _BLOCK // 2, -1):
    if n % b == 0:
      return n // b, b
  m = -(-n // _BLOCK)
  return m, -(-n // m)


def _split(maps: _Maps, xs, axis: int):
  """xs [.., n, ..] -> (m, b, [.., m, b, ..]) padded at the end with identity
  maps."""
  n = xs[0].shape[axis]
  m, b = _blocks(n)
  out = []
  for x, ident in zip(xs, maps.identity):
    x = _pad_rows(x, m * b, ident, axis)
    out.append(x.reshape(x.shape[:axis] + (m, b) + x.shape[axis + 1 :]))
  return m, b, tuple(out)


def _compose(maps: _Maps, xs, order, axis: int):
  """The maps at positions `order` (the order values flow through them) of axis
  `axis`, composed by one unrolled expression; that axis is dropped."""
  pick = lambda l: tuple(
    jax.lax.index_in_dim(x, l, axis, keepdims=False) for x in xs
  )
  total = pick(order[0])
  for l in order[1:]:
    total = maps.combine(total, pick(l))
  if len(total) == 1:
    return total
  # The components stacked and materialised as one array: XLA's CPU backend then
  # emits one fusion that reads the maps' operands once, where it otherwise
  # materialises the operands shared by the components (an affine map's factor
  # feeds both of its totals).
  stacked = _row_major(jnp.stack(total))
  return tuple(stacked[i] for i in range(len(total)))


def _reduce(maps: _Maps, xs, axis: int = 0):
  """All maps along `axis` composed (in suffix order, the last applied first):
  axis dropped."""
  while xs[0].shape[axis] > 1:
    _, b, xs = _split(maps, xs, axis)
    xs = _compose(maps, xs, range(b - 1, -1, -1), axis + 1)
  return tuple(jax.lax.index_in_dim(x, 0, axis, keepdims=False) for x in xs)


def _scan(maps: _Maps, xs, axis: int = 0, reverse: bool = True):
  """Every value of a chain of maps along `axis`, by a blocked scan.

  With ``reverse`` (a suffix scan) y(k) = (x(k) o x(k + 1) o ... o x(n -
  1))(end); else (a prefix scan) y(k) = (x(k) o ... o x(0))(end). Blocks of B
  steps are composed by one unrolled expression each (`_compose`), the block
  totals are scanned the same way, and the values entering every block from its
  neighbour flow back through the B steps.

  Args:
    maps: the map family.
    xs: tuple of arrays [..., n, ...] (`axis` is the chain), the maps at every
      step.
    axis: the chain axis (not the minor one).
    reverse: suffix (True) or prefix (False) scan.

  Returns:
    An array of the shape of xs[0].
  """
  n = xs[0].shape[axis]
  lanes = xs[0].shape[:axis] + xs[0].shape[axis + 1 :]
  dtype = xs[-1].dtype
  pick = lambda xs, l, ax: tuple(
    jax.lax.index_in_dim(x, l, ax, keepdims=False) for x in xs
  )
  if n <= _BLOCK:
    y, ys = jnp.full(lanes, maps.end, dtype), [None] * n
    for l in range(n - 1, -1, -1) if reverse else range(n):
      y = ys[l] = maps.apply(pick(xs, l, axis), y)
    return jnp.stack(ys, axis=axis)
  m, b, blocked = _split(maps, xs, axis)
  order = range(b - 1, -1, -1) if reverse else range(b)
  totals = _compose(maps, blocked, order, axis + 1)  # [.., m, ..]
  after = _scan(maps, totals, axis, reverse)  # the value leaving every block
  edge = jnp.expand_dims(jnp.full(lanes, maps.end, dtype), axis)
  if reverse:  # block j is entered by the value leaving block j + 1
    entering = jnp.concatenate(
      [jax.lax.slice_in_dim(after, 1, m, axis=axis), edge], axis
    )
  else:
    entering = jnp.concatenate(
      [edge, jax.lax.slice_in_dim(after, 0, m - 1, axis=axis)], axis
    )
  y, ys = entering, [None] * b
  for l in order:
    y = ys[l] = maps.apply(pick(blocked, l, axis + 1), y)
  out = jnp.stack(ys, axis=axis + 1)
  out = out.reshape(out.shape[:axis] + (m * b,) + out.shape[axis + 2 :])
  return jax.lax.slice_in_dim(out, 0, n, axis=axis)


def _chunking(n: int) -> tuple[int, int]:
  """(L, C): C chunks of L <= _BLOCK steps for a chain of n steps, L C >= n.

  L is a divisor of n in (_BLOCK / 2, _BLOCK] when there is one: no padded
  steps, so the view is a plain transpose of the input. Else L = _BLOCK (or n)
  and the last chunk is padded.
  """
  if n <= _BLOCK:
    return n, 1
  for L in range(_BLOCK, _BLOCK // 2, -1):
    if n % L == 0:
      return L, n // L
  return _BLOCK, -(-n // _BLOCK)


def _suffix_values(maps: _Maps, xs):
  """y(k) = (x(k) o x(k + 1) o ...)(end) at every step of the view [L, C, R, N].

  The L <= 8 maps of every chunk are composed by one unrolled expression, a
  blocked scan (`_suffix_rows`) of the C chunk totals gives the value entering
  every chunk from the right, and a ``fori_loop`` down the L rows (chunks,
  chains and traces are lanes) applies the maps step by step from it, writing
  each row over the maps' last component (XLA then allocates no zero-filled
  output of the view's size: 9.2 fewer bytes per frame in XLA's cost analysis of
  ``score("G(a -> F b)")`` and ``scores("a U b")`` at [60, 5000]). The rows are
  written by that loop, so no fusion recomputes a row's predecessors or applies
  the maps while it transposes the result out of the view.

  Args:
    maps: the map family.
    xs: tuple of arrays [L, C, R, N], the maps at every step of the view.

  Returns:
    [L, C, R, N].
  """
  L, C = xs[0].shape[:2]
  lanes = xs[0].shape[2:]
  end = jnp.full((1,) + lanes, maps.end, xs[-1].dtype)
  if C > 1:
    totals = _compose(maps, xs, range(L - 1, -1, -1), 0)  # [C, R, N]
    # the value leaving every chunk to the left
    leaving = _suffix_rows(maps, totals)
    entering = jnp.concatenate([leaving[1:], end])
  else:
    entering = end

  # The rows are written over the last component of the maps (each read at its
  # own step first): a ``lax.scan`` stacking them would zero-fill an output
  # buffer of the view's size first (one more pass).
  head = xs[:-1]

  def step(i, carry):
    y, out = carry
    row = L - 1 - i
    x = tuple(
      jax.lax.dynamic_index_in_dim(v, row, keepdims=False) for v in head
    )
    y = maps.apply(
      x + (jax.lax.dynamic_index_in_dim(out, row, keepdims=False),), y
    )
    return y, jax.lax.dynamic_update_index_in_dim(out, y, row, 0)

  return jax.lax.fori_loop(0, L, step, (entering, xs[-1]))[1]


def _suffix_rows(maps: _Maps, xs):
  """`_suffix_values` of maps in chain order along axis 0 ([n, ...], e.g. chunk
  totals).

  Short chains are one ``lax.scan``; longer ones are cut into the chunked layout
  [L, C, ...] (a transpose of 1 / L of the data the level above read) and
  scanned by `_suffix_values`.
  """
  n = xs[0].shape[0]
  if n <= 2 * _BLOCK:

    def step(y, x):
      y = maps.apply(x, y)
      return y, y

    end = jnp.full(xs[0].shape[1:], maps.end, xs[-1].dtype)
    return jax.lax.scan(step, end, xs, reverse=True)[1]
  L, C = _chunking(n)
  rest = xs[0].shape[1:]
  chunked = tuple(
    _row_major(_pad_rows(x, L * C, i, 0).reshape((C, L) + rest).swapaxes(0, 1))
    for x, i in zip(xs, maps.identity)
  )
  ys = _suffix_values(maps, chunked)
  return _row_major(ys.swapaxes(0, 1)).reshape((L * C,) + rest)[:n]


def _first_value(maps: _Maps, xs):
  """y(0) of `_suffix_values` alone, by blocked reductions: [L, C, R, N] -> [R, N]."""
  L = xs[0].shape[0]
  total = _reduce(maps, _compose(maps, xs, range(L - 1, -1, -1), 0), axis=0)
  return maps.apply(total, jnp.full(total[0].shape, maps.end, xs[-1].dtype))


def _shift(x, fill):
  """y(k) = x(k + 1) on the view [L, C, R, N]: the next row; row 0 of the next
  chunk last."""
  nxt = jnp.concatenate([x[0, 1:], jnp.full((1,) + x.shape[2:], fill, x.dtype)])
  return jnp.concatenate([x[1:], nxt[None]])


def _extend(x, size: int, fill=0):
  """x [..., T] extended to [..., size] along the last axis with `fill` (a
  clamped gather).

  The same as ``jnp.pad``, written so that XLA's CPU backend still vectorises
  the fusions that read the result: a fusion reading its operand through a pad
  of the minor axis runs element by element (about 7x slower for the
  transcendentals of this engine).
  """
  T = x.shape[-1]
  if size == T:
    return x
  t = np.arange(size)
  return jnp.where(
    t < T, x[..., np.minimum(t, T - 1)], jnp.asarray(fill, x.dtype)
  )


def _row_major(x):
  """x materialised in row-major order (see Fusion).

  Without the constraint XLA's CPU backend turns the transpose into the view
  into a change of layout, and every fusion that reads the view then reads the
  input with strides.
  """
  if not isinstance(x, jax.core.Tracer):  # eager: nothing to fuse
    return x
  return with_layout_constraint(x, Layout(major_to_minor=tuple(range(x.ndim))))


class _View(NamedTuple):
  """Shape of the view [L, C, R, N] of chains of n steps (see the module
  docstring)."""

  n: int
  L: int
  C: int
  R: int
  N: int

  def to_view(self, x):
    """[N, T'] (batch-major, frame k R + r; T' <= L C R, zeros past T') -> [L, C, R, N]."""
    L, C, R, N = self.L, self.C, self.R, self.N
    return _row_major(
      _extend(x, L * C * R).reshape(N, C, L, R).transpose(2, 1, 3, 0)
    )

  def from_view(self, y, T: int):
    """[L, C, R, N] -> [N, T] (batch-major)."""
    return _row_major(y).transpose(3, 1, 0, 2).reshape(self.N, -1)[:, :T]

  def map_out(self, y, T: int):
    """`from_view` of y, an elementwise map of materialised values of the view.

    With R > 1 chains the fusion that maps the values writes them in frame order
    ([C, L, R, N]: whole rows of R N values swapped, no pass of its own), and
    one 2D transpose of the T frames follows, which XLA's CPU backend emits
    faster than the 4D transpose of `from_view` (side by side,
    ``scores("a U b", window=64)`` at [60, 5,000] over w = 1: 1.31 -> 1.18 and
    1.31 -> 1.27 in two runs, the time per frame at w = 64 0.87 and 0.90 of
    before). Where y is not yet materialised (the log algebra's values, whose
    fusion would then be evaluated in that order) or is materialised first (the
    swap is then a pass of its own), it was slower, so `from_view` keeps the one
    fusion.
    """
    if self.R == 1:
      return self.from_view(y, T)
    frames = _row_major(y.swapaxes(0, 1)).reshape(-1, self.N)
    return _row_major(frames[:T].T)


def _window_means(x, w: int, count, view):
  """Means of the w frames from every frame, in the view [L, C, w, N]
  (`_window_sums`).

  The frames go once into frame-major order [F, N] (a transpose, as
  `_View.to_view`; zeros past T), where frame f + m is row f + m, so a window
  sum reads contiguous rows; the means are written into the view ([C, L] ->
  [L, C], whole rows of w N values) by the last pass.

  Args:
    x: [N, T] frames, zero past the end of each trace.
    w: the window.
    count: frames in each window, broadcastable to [L, C, w, N].
    view: the view (R = w).

  Returns:
    [L, C, w, N] window means.
  """
  N, T = x.shape
  if view.n <= _SCANNED_WINDOWS_STEPS:
    return _scanned_window_means(x, count, view)
  size = view.L * view.C * w
  # Frames from T on are zeros: sums of min(w, T) frames are the same, and the
  # view's frames past T take zeros (read only through the end-of-trace masks).
  width = min(w, T)
  xf = _row_major(_extend(x, T + width - 1).T)  # [T + width - 1, N]
  sums = _window_sums(xf, width, T)
  if size > T:
    sums = jnp.concatenate([sums, jnp.zeros((size - T, N), sums.dtype)])
  sums = sums.reshape(view.C, view.L, w, N).swapaxes(0, 1)
  return _row_major(sums / count)


# Chains of at most this many steps take `_scanned_window_means` (w >= T: one
# step). Side by side (``scores`` at w over w = 1, 6,000 traces of T = 50, one
# XLA thread, paired medians of 21 blocks): one step (w = 64, as w = 50) 0.94
# and 0.72 against 1.30 and 1.11 by the sliding sums for ``a U b`` and
# ``G(a -> F b)``; two steps (w = 25) 1.01 and 0.91 against 1.04 and 1.16,
# within the host's noise; at T = 500, w = 8 the sliding sums are the cheaper
# (0.98 and 1.00 against 1.23 and 1.18).
_SCANNED_WINDOWS_STEPS = 1


def _scanned_window_means(x, count, view):
  """`_window_means` by blocked scans along the w frames of every block of the
  view.

  The frames go into the view as at w = 1 (`_View.to_view`); the window from
  frame k w + r sums the suffix of block k from r (a suffix scan along axis 2)
  and, when there is a block k + 1, its head up to r - 1 (a prefix scan, shifted
  one step). O(log_8 w) passes over the view, nonnegative terms only.
  """
  x = view.to_view(x)  # zeros past T
  maps = _sum_maps()
  sums = _scan(maps, (x,), axis=2, reverse=True)
  if view.n > 1:
    # x[.., 0] + ... + x[.., r]
    prefix = _scan(maps, (x,), axis=2, reverse=False)
    zero = jnp.zeros(x.shape[:2] + (1,) + x.shape[3:], x.dtype)
    head = jnp.concatenate([zero, prefix[:, :, :-1]], axis=2)
    # + frames kw + w .. kw + w + r - 1 of block k + 1
    sums = sums + _shift(head, 0)
  return _row_major(sums / count)


def _window_sums(xf, w: int, size: int):
  """y[f] = xf[f] + xf[f + 1] + ... + xf[f + w - 1] for f < size (along axis 0).

  Below 16 frames, one pass adds w rows. Else the sums of b = w // 8 frames (the
  same way, materialised), then one pass adds 8 of them (b apart) and the w - 8
  b frames left: every level reads its input at fewer than 16 offsets, so a sum
  costs O(log w) additions and O(log_8 w) passes, all of nonnegative terms (no
  differences of prefix sums, which would cancel the digits of a window of small
  scores beside large ones). XLA's CPU backend fuses an operand read fewer than
  16 times into its reader, which would recompute the b-term sums 8 times; the
  layout constraint materialises them (w = 64: 8 + 8 reads per frame; 16 sums of
  4 frames, 4 + 16 reads, took 1.15-1.26x as long by the medians of blocks and
  1.3-1.5x by their minima: one atom, [60, 5,000], three runs side by side, one
  XLA thread).
  """
  pick = lambda y, start: jax.lax.slice_in_dim(y, start, start + size)
  if w < 16:
    return functools.reduce(jnp.add, [pick(xf, d) for d in range(w)])
  b = w // 8
  part = _row_major(_window_sums(xf, b, xf.shape[0] - b + 1))
  terms = [pick(part, d * b) for d in range(8)] + [
    pick(xf, d) for d in range(8 * b, w)
  ]
  return functools.reduce(jnp.add, terms)


def _atoms_in_view(props, names, window, lengths, first_only, chunking=None):
  """Window means of the atoms in the view, the validity mask and the view.

  Every frame goes to the view [L, C, w, N] of blocks of w frames (block k =
  step k of the chains). The mean of the window starting at frame k w + r is
  (the suffix of block k from r
  + the head of block k + 1 up to r - 1) / its length, cut at the end of the
    trace; with
  ``first_only`` only r = 0 is kept, the mean of block k.

  Args:
    props: name -> [N, T] array.
    names: the atoms to convert.
    window: w.
    lengths: int32[N] or None (every trace has length T).
    first_only: chain 0 only (R = 1) instead of every frame (R = w).
    chunking: (L, C) of the view; `_chunking` of the chain length by default.
      (1, n) gives the time-major view [1, n, R, N] of the sequential scan
      (`_sequential_first`).

  Returns:
    (name -> means [L, C, R, N], valid bool[L, C, R, N] or None when all are
    valid, view).
  """
  N, T = next(iter(props.values())).shape
  w = window
  n = -(-T // w)
  L, C = _chunking(n) if chunking is None else chunking
  view = _View(n, L, C, 1 if first_only else w, N)
  end = jnp.full((N,), T, jnp.int32) if lengths is None else lengths
  k = np.arange(L)[:, None, None, None] + L * np.arange(C)[None, :, None, None]
  frame = k * w + np.arange(view.R)[None, None, :, None]  # [L, C, R, 1]
  end_v = end[None, None, None, :]
  # frames in its window
  count = jnp.clip(jnp.minimum(frame + w, end_v) - frame, 1, w)
  means = {}
  for name in names:
    x = props[name]
    if w > 1 and first_only:
      # Block sums on the trace as it is ([N, n, w], w minor), so only n = T / w
      # values per trace are moved into the view. The whole blocks and the last,
      # partial one are summed apart and the sums padded with zeros: no padded
      # copy of the frames (a gather, which cost a pass of its own).
      if lengths is not None:
        x = jnp.where(np.arange(T)[None, :] < end[:, None], x, 0)
      whole = T // w
      sums = (
        [jnp.sum(x[:, : whole * w].reshape(N, whole, w), axis=2)]
        if whole
        else []
      )
      if T > whole * w:
        sums.append(jnp.sum(x[:, whole * w :], axis=1, keepdims=True))
      blocks = whole + (T > whole * w)
      if L * C > blocks:
        sums.append(jnp.zeros((N, L * C - blocks), x.dtype))
      x = view.to_view(
        jnp.concatenate(sums, axis=1) if len(sums) > 1 else sums[0]
      )
    else:
      if w > 1:
        if lengths is not None:
          x = jnp.where(np.arange(T)[None, :] < end[:, None], x, 0)
        x = _window_means(x, w, count.astype(x.dtype), view)
      else:
        x = view.to_view(x)  # zeros past T
    if w > 1 and first_only:
      x = _row_major(x / count.astype(x.dtype))
    means[name] = x
  # every frame of the view is in the trace
  if lengths is None and L * C * w == T:
    return means, None, view
  return means, frame < end_v, view


class _Both:
  """A subformula's value and its negation's, each an array computed on first
  use.

  ``pos`` / ``neg`` are given as zero-argument functions or left out (None) to
  be derived from the other by the algebra's negation.
  """

  def __init__(self, negate, pos=None, neg=None):
    self._negate = negate
    self._fn = {"pos": pos, "neg": neg}
    self._val = {}

  def _get(self, side, other):
    if side not in self._val:
      fn = self._fn[side]
      self._val[side] = (
        fn() if fn is not None else self._negate(self._get(other, side))
      )
    return self._val[side]

  def pos(self):
    return self._get("pos", "neg")

  def neg(self):
    return self._get("neg", "pos")


def _full_needed(formulas):
  """Subformulas needed at every position: the operands of X, U, F, G and
  below."""
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


def _temporal_depth(f) -> int:
  """The most U / F / G on a path from the root of f to a leaf."""
  own = isinstance(f, (F.Until, F.Eventually, F.Always))
  return own + max((_temporal_depth(c) for c in F.children(f)), default=0)


def _depth(f) -> int:
  return 1 + max((_depth(c) for c in F.children(f)), default=0)


def underflow_threshold(formula: F.Formula, n: int, dtype) -> float:
  """The least probability the "prob" algebra returns with the digits of its
  log.

  Underflow. Each floored product (`_mul`) or floored atom moves a value by at most tiny
  (the smallest normal float). A value reaches the result through at most 2 paths per
  Boolean level (a connective reads its operands' values and complements) and, per temporal
  operator above it, through the n steps of that operator's chain, with a factor <= 1 on
  each path (all products of probabilities). With at most 4 floored operations per node and
  step, the result is off by at most K tiny, K = 4 |phi| 2^depth (n + 1)^d (d: the temporal
  nesting depth); returned values above tau = K tiny / eps are within eps of their value
  relative to it, like a rounding.

  Rounding. A probability near 1 is rounded to the float grid near 1 (log space
  keeps the digits of its small log), so a product of n of them (`G` over
  `F`, ...) is off by up to n eps relative, and every further temporal level can
  multiply that by n (measured: G F G F a at n = 500 is off by 3e-3 in float32
  where log space is off by 1e-5). Linear space is used only while eps (n +
  1)^(d - 1) <= 2^-10.

  Args:
    formula: the formula (its size, depth and temporal nesting depth are used).
    n: steps of a chain (ceil(T / w)).
    dtype: the floating dtype of the computation.

  Returns:
    tau as a float; inf where linear space is not used for this formula and n
    (the rounding bound above fails, or tau would exceed 2^-8).
  """
  info = jnp.finfo(dtype)
  d = _temporal_depth(formula)
  log2n = math.log2(n + 1)
  if math.log2(float(info.eps)) + max(d - 1, 0) * log2n > -10:
    return math.inf
  log2k = 2 + math.log2(F.size(formula)) + _depth(formula) + d * log2n
  log2tau = math.log2(float(info.tiny)) - math.log2(float(info.eps)) + log2k
  return math.inf if log2tau > -8 else 2.0**log2tau


# ----------------------------------------------------- sequential scan ("prob")

# Steps of the sequential scan in one loop iteration (`_sequential_first`):
# XLA's CPU backend fuses them into one loop body, so the fixed cost of an
# iteration is paid once per this many steps.
_UNROLL = 32


def _unrolling(steps: int) -> tuple[int, int]:
  """(unroll, n): steps per loop iteration and the padded chain length n >=
  steps.

  A divisor of `steps` in [_UNROLL / 2, _UNROLL] when there is one, so that the
  chain needs no padding: the view is then a plain transpose of the input and
  the steps need no end-of-trace masks. Else as many iterations as `_UNROLL`
  steps need, evenly filled, and the chain padded.
  """
  if steps <= _UNROLL:
    return steps, steps
  for u in range(_UNROLL, _UNROLL // 2 - 1, -1):
    if steps % u == 0:
      return u, steps
  iters = -(-steps // _UNROLL)
  unroll = -(-steps // iters)
  return unroll, iters * unroll


def sequential_fits(formulas: Sequence[F.Formula], n: int, dtype) -> bool:
  """Whether `score` (t = 0) in the "prob" algebra runs the sequential scan on
  chains of n steps.

  A step of a recursion y = c + m y' (all terms >= 0) adds at most 2 eps to the
  relative error of y', so a chain of n steps evaluated step by step is off by
  at most 2 n eps relative, where the blocked scans are off by O(log n) eps: the
  sequential scan is used while 2 n eps <= 2^-10 (n <= 4096 in float32) and
  every formula is evaluated in linear space (`underflow_threshold` is finite);
  longer chains take the blocked scans.
  """
  if 2 * n * float(jnp.finfo(dtype).eps) > 2.0**-10:
    return False
  return all(math.isfinite(underflow_threshold(f, n, dtype)) for f in formulas)


def _sequential_first(formulas, props, window, lengths, check=()):
  """The "prob" algebra at t = 0 by one ``lax.scan`` down the n steps of chain
  0.

  The block means of the atoms are moved once into the time-major view [n, N]
  (the traces are the lanes of a step); each step evaluates every subformula at
  step k from the means at k and a carry of constant size [N] per entry: the
  values at k + 1 of the temporal subformulas and of the operands of ``X``. No
  intermediate of size T is written. `_UNROLL` steps form one loop iteration;
  the chain is padded past the end of the trace (fewer steps than there are
  iterations) so that every iteration holds as many steps.

  Args:
    formulas: parsed formulas.
    props: name -> [N, T] arrays of one float dtype (the atoms of `formulas`).
    window: w >= 1.
    lengths: int32[N] or None (every trace has length T).
    check: names of atoms whose frames are range-checked in the loop (w = 1
      only: there the view holds the frames themselves): ``0 <= v <= 1`` at
      every frame, False for NaN.

  Returns:
    (values, in_range): a tuple with one array [N] per formula, the probability
    at t = 0 (the value of the blocked "prob" evaluation, up to rounding);
    bool[N], whether every frame of the checked atoms lies in [0, 1] (None when
    `check` is empty).
  """
  N, T = next(iter(props.values())).shape
  w = window
  if check and w != 1:
    raise ValueError(f"the in-loop range check needs window 1, got {w}")
  steps = -(-T // w)
  unroll, n = _unrolling(steps)
  names = sorted(props)
  means, _, _ = _atoms_in_view(props, names, w, lengths, True, chunking=(1, n))
  dtype = next(iter(props.values())).dtype
  # [1, n, 1, N] -> [n, N], a bitcast
  rows = tuple(means[k].reshape(n, N) for k in names)
  end = None
  if lengths is not None or n * w != T:
    end = jnp.full((N,), T, jnp.int32) if lengths is None else lengths

  # Carry keys: (f, side) is the chain of temporal subformula f (side 0 its
  # probability, 1 the complement); ("next", f, side) is f's value as X f reads
  # it (0 past the end for P, 1 for Q); ("root", i) is formula i when it is not
  # temporal.
  def start(key):
    if key[0] == "next":
      return float(key[2])
    if key[0] == "root":
      return 0.0
    f, side = key
    # U, F: P = 0, Q = 1
    return 1.0 - side if isinstance(f, F.Always) else float(side)

  temporal = (F.Until, F.Eventually, F.Always)
  roots = [
    (f, 0) if isinstance(f, temporal) else ("root", i)
    for i, f in enumerate(formulas)
  ]

  def body_for(keys, requested):
    index = {key: i for i, key in enumerate(keys)}

    def body(state, x):
      carry, ok = state
      k, atom_rows = x
      # the range check of traced scores, fused into the loop
      for name in check:
        v = atom_rows[names.index(name)]
        ok = ok & (v >= 0) & (v <= 1)
      valid = None if end is None else k * w < end
      below = lambda v: (
        v if valid is None else jnp.where(valid, v, jnp.zeros((), dtype))
      )
      above = lambda v: (
        v if valid is None else jnp.where(valid, v, jnp.ones((), dtype))
      )
      memo = {}

      def prev(key):  # the value of key at step k + 1
        requested.add(key)
        return (
          carry[index[key]]
          if key in index
          else jnp.full((N,), start(key), dtype)
        )

      def ev(f, side):
        if (f, side) in memo:
          return memo[(f, side)]
        P = lambda g: ev(g, 0)
        Q = lambda g: ev(g, 1)
        if isinstance(f, F.Atom):
          m = atom_rows[names.index(f.name)]
          v = _positive(m) if side == 0 else 1.0 - m
        elif isinstance(f, F.Const):
          v = jnp.full((N,), float(f.value != bool(side)), dtype)
        elif isinstance(f, F.Not):
          v = ev(f.arg, 1 - side)
        elif isinstance(f, F.And):
          a, b = f.left, f.right
          v = _mul(P(a), P(b)) if side == 0 else Q(a) + _mul(P(a), Q(b))
        elif isinstance(f, F.Or):
          a, b = f.left, f.right
          v = P(a) + _mul(Q(a), P(b)) if side == 0 else _mul(Q(a), Q(b))
        elif isinstance(f, F.Implies):
          a, b = f.left, f.right
          v = Q(a) + _mul(P(a), P(b)) if side == 0 else _mul(P(a), Q(b))
        elif isinstance(f, F.Next):
          v = prev(("next", f.arg, side))
        elif isinstance(f, F.Until):
          a, b, y = f.left, f.right, prev((f, side))
          if side == 0:  # P(k) = P_b + P_a Q_b P(k + 1)
            v = below(P(b)) + _mul(_mul(P(a), Q(b)), y)
          else:  # Q(k) = Q_b Q_a + P_a Q_b Q(k + 1)
            v = below(_mul(Q(b), Q(a))) + _mul(above(_mul(P(a), Q(b))), y)
        elif isinstance(f, F.Eventually):
          b, y = f.arg, prev((f, side))
          v = below(P(b)) + _mul(Q(b), y) if side == 0 else _mul(above(Q(b)), y)
        elif isinstance(f, F.Always):
          a, y = f.arg, prev((f, side))
          v = _mul(above(P(a)), y) if side == 0 else below(Q(a)) + _mul(P(a), y)
        else:
          raise TypeError(f"Not a formula: {f!r}")
        memo[(f, side)] = v
        return v

      def carried(key):
        if key[0] == "next":
          v = ev(key[1], key[2])
          return below(v) if key[2] == 0 else above(v)
        if key[0] == "root":
          return ev(formulas[key[1]], 0)
        return ev(*key)

      return (tuple(carried(key) for key in keys), ok), None

    return body

  # The carry holds what a step reads at k + 1: the step is traced until the
  # keys it reads are all carried.
  keys = list(dict.fromkeys(roots))
  ok_shape = jax.ShapeDtypeStruct((N,), jnp.bool_)
  x_shape = (
    jax.ShapeDtypeStruct((), jnp.int32),
    tuple(jax.ShapeDtypeStruct((N,), dtype) for _ in rows),
  )
  while True:
    requested = set()
    carry = tuple(jax.ShapeDtypeStruct((N,), dtype) for _ in keys)
    jax.eval_shape(body_for(keys, requested), (carry, ok_shape), x_shape)
    new = sorted((key for key in requested if key not in keys), key=repr)
    if not new:
      break
    keys += new
  init = tuple(jnp.full((N,), start(key), dtype) for key in keys)
  xs = (jnp.arange(n, dtype=jnp.int32), rows)
  ok = jnp.ones((N,), jnp.bool_)
  (carry, ok), _ = jax.lax.scan(
    body_for(keys, set()), (init, ok), xs, reverse=True, unroll=unroll
  )
  zero = jnp.zeros((), dtype)
  values = tuple(
    carry[keys.index(key)]
    if end is None
    else jnp.where(end > 0, carry[keys.index(key)], zero)
    for key in roots
  )
  return values, (ok if check else None)


def in_unit(props: Mapping[str, jax.Array], names: Sequence[str]) -> jax.Array:
  """Per trace, whether every frame of the named arrays lies in [0, 1] (False
  for NaN).

  One pass over the inputs: a frame is bad unless 0 <= v <= 1, which is False
  for NaN on every backend. (A min / max reduction is not enough: XLA's CPU
  backend hands large reductions to a library whose min and max skip NaN, and a
  traced check by them missed a NaN score, measured at [600, 500].)

  Args:
    props: name -> [..., T] arrays of one shape.
    names: the non-empty names to check.

  Returns:
    bool [...].
  """
  bad = functools.reduce(
    jnp.logical_or, [~((props[n] >= 0) & (props[n] <= 1)) for n in names]
  )
  return ~jnp.any(bad, axis=-1)


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
  """Values of several formulas on one batch of traces, sharing common
  subformulas.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    algebra: one of `ALGEBRAS`.
    threshold: atom threshold of the "bool" and "robust" algebras.
    first_only: return the values at t = 0 only.

  Returns:
    A tuple with one array per formula: [..., T], or [...] when `first_only`;
    bool for the "bool" algebra, the input dtype otherwise ("prob":
    probabilities in [0, 1] up to rounding, 0 exactly where the log-score is
    -inf).
  """
  return evaluate_many_checked(
    formulas, props, window, length, algebra, threshold, first_only=first_only
  )[0]


def evaluate_many_checked(
  formulas: Sequence[F.Formula],
  props: Mapping[str, jax.Array],
  window: int,
  length,
  algebra: str,
  threshold: float = 0.5,
  *,
  first_only: bool = False,
  check: Sequence[str] = (),
):
  """`evaluate_many` and the range check of the arrays named in `check`
  (`in_unit`).

  The sequential scan of `score` at w = 1 checks every frame in its loop, where
  the frames are read anyway, so the check costs no pass of its own; elsewhere
  it is one more pass.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    algebra: one of `ALGEBRAS`.
    threshold: atom threshold of the "bool" and "robust" algebras.
    first_only: return the values at t = 0 only.
    check: names of `props` whose frames must lie in [0, 1].

  Returns:
    (values, in_range): the values as `evaluate_many` returns them; bool [...]
    per trace (`in_unit` of the arrays named in `check`), None when `check` is
    empty.
  """
  if algebra not in ALGEBRAS:
    raise ValueError(f"algebra must be one of {ALGEBRAS}, got {algebra!r}")
  some = next(iter(props.values()))
  shape, dtype = some.shape, some.dtype
  batch, T = shape[:-1], shape[-1]
  window, lengths, flat = _flat_inputs(formulas, props, window, length)
  N = math.prod(batch)
  names = sorted({a for f in formulas for a in F.atoms(f)})
  check = tuple(sorted(set(check)))
  if (
    algebra == "prob"
    and first_only
    and sequential_fits(formulas, -(-T // window), dtype)
  ):
    fused = check if window == 1 and set(check) <= set(names) else ()
    ys, ok = _sequential_first(formulas, flat, window, lengths, fused)
    if check and not fused:
      ok = in_unit(props, check).reshape(N)
    return tuple(y.reshape(batch) for y in ys), (
      None if ok is None else ok.reshape(batch)
    )
  in_range = in_unit(props, check) if check else None
  ys, view = _evaluate_blocked(
    formulas, flat, lengths, window, algebra, threshold, batch, first_only
  )
  if not first_only:
    ys = tuple(view.from_view(y, T).reshape(shape) for y in ys)
  return ys, in_range


def _flat_inputs(formulas, props, window: int, length):
  """(window, lengths, flat): the inputs of the engine as [N, T] arrays.

  A window of w >= T frames is the window of T frames: every chain has one step,
  the window from frame t holds the frames [t, T) and t + w is past the end; the
  view then holds the T frames alone (at T = 50, w = 64: 50 chains, not 64 with
  14 past the end). ``lengths`` is int32[N] or None; ``flat`` maps the atoms of
  `formulas` (or "" when there is none) to [N, T].
  """
  some = next(iter(props.values()))
  batch, T = some.shape[:-1], some.shape[-1]
  N = math.prod(batch)
  lengths = None
  if length is not None:
    lengths = jnp.broadcast_to(jnp.asarray(length, jnp.int32), batch).reshape(N)
  names = sorted({a for f in formulas for a in F.atoms(f)})
  flat = {k: props[k].reshape(N, T) for k in names} or {"": some.reshape(N, T)}
  return max(1, min(window, T)), lengths, flat


def probs_in_view(
  formulas: Sequence[F.Formula],
  props: Mapping[str, jax.Array],
  window: int,
  length,
  *,
  check: Sequence[str] = (),
) -> tuple[tuple[jax.Array, ...], _View, jax.Array | None]:
  """The "prob" algebra at every t, each formula's values left in the view.

  ``view.from_view(y, T).reshape(shape)`` moves one out (a transpose): a caller
  that maps the values elementwise (`log_scores_checked`) maps them before it,
  on contiguous rows.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    check: names of `props` whose frames must lie in [0, 1].

  Returns:
    (values [L, C, R, N] per formula, the view, in_range as
    `evaluate_many_checked`).
  """
  batch = next(iter(props.values())).shape[:-1]
  window, lengths, flat = _flat_inputs(formulas, props, window, length)
  check = tuple(sorted(set(check)))
  in_range = in_unit(props, check) if check else None
  ys, view = _evaluate_blocked(
    formulas, flat, lengths, window, "prob", 0.5, batch, False
  )
  return ys, view, in_range


# Traces are the minor axis (the vector lanes) of the view. `score` pads their
# number to a multiple of _LANES where that adds at most 1 / 8 of the work. Side
# by side (CPU time per call, T = 5,000, paired medians of 21 interleaved
# blocks, ``a U b`` / ``G(a -> F b)`` / ``F(a & X b & X X c)``): 60 traces
# padded to 64 took 0.98 / 0.99 / 0.90 of the time of 60 (0.98 / 0.98 / 0.87 and
# 1.00 / 0.97 / 0.94 in two runs padding to 16), 64 traces of their own 0.93 /
# 0.93 / 0.86; 100 traces padded to 104 1.03 / 1.01 / 0.94 (to 112, a multiple
# of 16: 1.09 / 1.04 / 1.13); 30 padded to 32 0.90 / 0.92 / 0.86.
_LANES = 8


def _padded_lanes(flat, lengths):
  """The inputs [N, T] with zero traces (of full length) added up to a multiple
  of _LANES."""
  N, T = next(iter(flat.values())).shape
  pad = -N % _LANES
  if pad == 0 or 8 * pad > N:
    return flat, lengths
  flat = {
    k: jnp.concatenate([v, jnp.zeros((pad, T), v.dtype)])
    for k, v in flat.items()
  }
  if lengths is not None:
    lengths = jnp.concatenate([lengths, jnp.full((pad,), T, lengths.dtype)])
  return flat, lengths


def _evaluate_blocked(
  formulas, flat, lengths, window, algebra, threshold, batch, first_only
) -> tuple[tuple[jax.Array, ...], _View]:
  """`evaluate_many` by the blocked scans on the flat inputs [N, T] (see the
  module docstring).

  Returns (values, view): the values at t = 0 ([...] each) with ``first_only``,
  else in the view ([L, C, R, N] each; `_View.from_view` moves them out).
  """
  names = sorted({a for f in formulas for a in F.atoms(f)})
  some = next(iter(flat.values()))
  dtype, N = some.dtype, some.shape[0]
  N0 = N
  if first_only:
    flat, lengths = _padded_lanes(flat, lengths)
    N = next(iter(flat.values())).shape[0]
  means, valid, view = _atoms_in_view(flat, names, window, lengths, first_only)
  bottom, top = _bottom(algebra), _top(algebra)
  out_dtype = jnp.bool_ if algebra == "bool" else dtype
  plus, conj, negate = _semiring(algebra)
  prob = algebra == "prob"
  affine, product = _affine_maps(algebra), _product_maps(algebra)
  # With first_only, a subformula outside this set is needed at t = 0 alone
  # ("first").
  full_needed = _full_needed(formulas) if first_only else frozenset()

  # Positions past the end are read by X, U and G (and returned): they must hold
  # bottom (top for G's operand, the empty product). Elsewhere they may hold
  # anything.
  def below(x, first=False):
    if valid is None:
      return x
    return jnp.where(valid[0, 0, 0] if first else valid, x, bottom)

  def above(x):
    return x if valid is None else jnp.where(valid, x, top)

  def full(v, first):
    return jnp.full(
      (N,) if first else (view.L, view.C, view.R, N), v, out_dtype
    )

  def chain(maps, xs, first):
    """The recursion's values: [L, C, R, N], or [N] at t = 0 when `first`."""
    return _first_value(maps, xs)[0] if first else _suffix_values(maps, xs)

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
      if prob:
        out = both(lambda: _positive(m), lambda: 1.0 - m)
      elif algebra == "log":
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
      # prob: 1 - P_a P_b = Q_a + P_a Q_b, a sum of products (no cancellation).
      neg = (lambda: a.neg() + conj(a.pos(), b.neg())) if prob else None
      out = both(lambda: conj(a.pos(), b.pos()), neg)
    elif isinstance(f, F.Or):  # !(!a & !b)
      a, b = ev(f.left, first), ev(f.right, first)
      pos = (lambda: a.pos() + conj(a.neg(), b.pos())) if prob else None
      out = both(pos, lambda: conj(a.neg(), b.neg()))
    elif isinstance(f, F.Implies):  # !(a & !b)
      a, b = ev(f.left, first), ev(f.right, first)
      pos = (lambda: a.neg() + conj(a.pos(), b.pos())) if prob else None
      out = both(pos, lambda: conj(a.pos(), b.neg()))
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

      def step(left=left, right=right):
        # The factor of y(t + w): a (x) !b (log, prob); a (bool, robust); F: a =
        # top.
        if algebra in ("log", "prob"):
          return right.neg() if left is None else conj(left.pos(), right.neg())
        return jnp.full_like(right.pos(), top) if left is None else left.pos()

      def until(right=right, first=first):
        # y(t) = b(t) (+) [a(t) (x) !b(t)] (x) y(t + w)
        y = chain(affine, (step(), below(right.pos())), first)
        return jnp.minimum(y, 0.0) if algebra == "log" else y

      # !F phi = G !phi exactly, in every algebra (log: 1 - P_F(t) = (1 - p(t))
      # (1 - P_F(t + w))): a product of the operand's negations, not the
      # negation of a value near 1. prob: 1 - P_U(t) = Q_b(t) (Q_a(t) + P_a(t)
      # (1 - P_U(t + w))).
      def until_neg(left=left, right=right, first=first):
        if left is None:
          return chain(product, (above(right.neg()),), first)
        c = below(conj(right.neg(), left.neg()))
        return chain(_affine_maps(algebra, end=top), (above(step()), c), first)

      if isinstance(f, F.Until):
        out = both(until, until_neg if prob else None)
      else:
        out = both(until, until_neg)
    elif isinstance(f, F.Always):
      a = ev(f.arg)

      def always(a=a, first=first):
        return chain(product, (above(a.pos()),), first)

      # prob: 1 - P_G(t) = Q_a(t) + P_a(t) (1 - P_G(t + w)), 0 past the end.
      def always_neg(a=a, first=first):
        return chain(affine, (a.pos(), below(a.neg())), first)

      out = both(always, always_neg if prob else None)
    else:
      raise TypeError(f"Not a formula: {f!r}")
    memo[key] = out
    return out

  if first_only:
    firsts = tuple(
      below(ev(f, first=True).pos().astype(out_dtype), first=True)[:N0].reshape(
        batch
      )
      for f in formulas
    )
    return firsts, view
  return tuple(below(ev(f).pos().astype(out_dtype)) for f in formulas), view


def evaluate(
  formula,
  props: Mapping[str, jax.Array],
  window: int,
  length,
  algebra: str,
  threshold: float = 0.5,
):
  """Suffix values of `formula` for every start t; shape [..., T] (see
  `evaluate_many`)."""
  return evaluate_many((formula,), props, window, length, algebra, threshold)[0]


def log_scores(
  formulas: Sequence[F.Formula],
  props: Mapping[str, jax.Array],
  window: int,
  length,
  *,
  first_only: bool = False,
) -> jax.Array:
  """LogSTOP log-scores from the "prob" algebra, the log algebra where linear
  space underflows.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    first_only: the values at t = 0 only.

  Returns:
    Log-scores [F, ..., T], or [F, ...] with `first_only` (see
    `log_scores_checked`).
  """
  return log_scores_checked(
    formulas, props, window, length, first_only=first_only
  )[0]


def log_scores_checked(
  formulas: Sequence[F.Formula],
  props: Mapping[str, jax.Array],
  window: int,
  length,
  *,
  first_only: bool = False,
  check: Sequence[str] = (),
) -> tuple[jax.Array, jax.Array | None]:
  """`log_scores` and the range check of the arrays named in `check`
  (`evaluate_many_checked`).

  The probabilities P of every formula come from the "prob" algebra; a value P
  with ``0 < P < tau`` (`underflow_threshold`) anywhere in the batch sends the
  whole batch to the log algebra (one ``lax.cond``), whose values replace
  exactly those entries.

  Args:
    formulas: parsed formulas.
    props: validated arrays of one float dtype and one shape [..., T].
    window: w >= 1.
    length: None or an integer array broadcastable to the batch shape [...].
    first_only: the values at t = 0 only.
    check: names of `props` whose frames must lie in [0, 1].

  Returns:
    (log-scores [F, ..., T], or [F, ...] with `first_only`; bool [...] whether
    every frame of the checked arrays lies in [0, 1], None when `check` is
    empty).
  """
  some = next(iter(props.values()))
  dtype, T = some.dtype, some.shape[-1]
  n = -(-T // window)
  taus = [underflow_threshold(f, n, dtype) for f in formulas]

  def in_log_space():
    return jnp.stack(
      evaluate_many(
        formulas, props, window, length, "log", first_only=first_only
      )
    )

  if all(math.isinf(t) for t in taus):
    return in_log_space(), (in_unit(props, check) if check else None)
  # Every t: the logs and the test for lost digits run on the view's contiguous
  # rows, and only the logs are transposed out of it (a fusion reading the view
  # across its rows to write [N, T] costs about a pass more than one reading it
  # along them).
  out_of_view: Callable[[jax.Array], jax.Array] = lambda y: y
  if first_only:
    probs, in_range = evaluate_many_checked(
      formulas, props, window, length, "prob", first_only=True, check=check
    )
  else:
    probs, view, in_range = probs_in_view(
      formulas, props, window, length, check=check
    )
    out_of_view = lambda y: view.map_out(y, T).reshape(some.shape)
  logs, lost = [], []
  for p, tau in zip(probs, taus):
    positive = p > 0
    logs.append(
      jnp.where(
        positive,
        jnp.log(jnp.where(positive, jnp.minimum(p, 1.0), 1.0)),
        -jnp.inf,
      )
    )
    lost.append(positive & (p < jnp.asarray(tau, dtype)))
  any_lost = functools.reduce(jnp.logical_or, [jnp.any(x) for x in lost])
  logs = jnp.stack([out_of_view(x) for x in logs])

  def redo():
    return jnp.where(
      jnp.stack([out_of_view(x) for x in lost]), in_log_space(), logs
    )

  return jax.lax.cond(any_lost, redo, lambda: logs), in_range


@functools.partial(
  jax.jit,
  static_argnames=(
    "formulas",
    "window",
    "algebra",
    "threshold",
    "clip_eps",
    "first_only",
    "check",
  ),
)
def evaluate_jit(
  props,
  length,
  *,
  formulas,
  window,
  algebra,
  threshold=0.5,
  clip_eps=None,
  first_only=False,
  check=(),
):
  """`evaluate_many` compiled once per (formulas, shapes, window, ...); stacked
  [F, ...].

  The "log" algebra goes through `log_scores` (linear space, the log algebra
  where it underflows). Returns (values, in_range): in_range is bool [...],
  whether every frame of the arrays named in `check` (a tuple of names of
  `props`) lies in [0, 1], or None when `check` is empty; it reads the inputs as
  given, before `clip_eps`.
  """
  in_range = None
  if clip_eps is not None:
    if check:  # checked before the clip, which would hide bad values
      in_range, check = in_unit(props, check), ()
    props = {k: jnp.clip(v, clip_eps, 1.0 - clip_eps) for k, v in props.items()}
  if algebra == "log":
    out, ok = log_scores_checked(
      formulas, props, window, length, first_only=first_only, check=check
    )
  else:
    out, ok = evaluate_many_checked(
      formulas,
      props,
      window,
      length,
      algebra,
      threshold,
      first_only=first_only,
      check=check,
    )
    out = jnp.stack(out)
  return out, (in_range if ok is None else ok)


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
  """Validates `props` for `formula` (or a tuple of formulas); returns (float
  arrays, shape)."""
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
        f"formula {what} has no propositions, so props must contain at least "
        "one array to fix the shape [..., T]"
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
      raise TypeError(
        f"scores of proposition {n!r} must be numeric, got dtype {v.dtype}"
      )
    arrays[n] = v
  dtype = np.result_type(
    *[np.dtype(a.dtype) for a in arrays.values()], np.float32
  )
  if not np.issubdtype(dtype, np.floating):
    dtype = np.float32
  dtype = jax.dtypes.canonicalize_dtype(dtype)
  first = names[0]  # names is not empty, so neither is arrays
  shape = tuple(arrays[first].shape)
  for n, v in arrays.items():
    if v.ndim < 1:
      raise ValueError(
        f"scores of proposition {n!r} must have shape [..., T] with T >= 1, "
        "got a scalar"
      )
    if tuple(v.shape) != shape:
      raise ValueError(
        f"scores of proposition {n!r} have shape {tuple(v.shape)} but those of "
        f"{first!r} have shape {shape}; all propositions need the same [..., T]"
      )
  if shape[-1] < 1:
    raise ValueError(f"traces must have length T >= 1, got shape {shape}")
  for n, v in arrays.items():
    # A concrete JAX array is checked on its device (one boolean comes back);
    # the whole array is copied to the host only to name the first bad entry.
    # Host data is checked in numpy.
    if (
      check_range
      and _is_concrete(v)
      and (not isinstance(v, jax.Array) or not _all_in_unit(v))
    ):
      a = np.asarray(v)
      bad = ~((a >= 0) & (a <= 1))
      if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
          f"scores of proposition {n!r} must lie in [0, 1]; "
          f"found {a[idx]!r} at index {idx}"
        )
    arrays[n] = jnp.asarray(v, dtype=dtype)
  return arrays, shape


def traced_names(arrays, *, check_range=True) -> tuple[str, ...]:
  """Names of the traced arrays, whose range the compiled program checks
  (`traced_ok`)."""
  return (
    tuple(k for k, v in arrays.items() if not _is_concrete(v))
    if check_range
    else ()
  )


def traced_ok(arrays, length, shape, *, check_range=True, in_range=None):
  """Per-trace validity ``[...]`` of traced inputs (None when everything was
  checked eagerly).

  Scores must lie in [0, 1] (no NaN) and lengths in [0, T]. Registers a checkify
  ``debug_check``; callers poison the results of invalid traces with NaN.
  ``in_range``, when given, is the range check of the arrays named by
  `traced_names` computed elsewhere (by `evaluate_jit`, which fuses it into its
  loop where it can); else it is `in_unit` here.
  """
  oks = []
  traced = traced_names(arrays, check_range=check_range)
  if in_range is not None:
    oks.append(in_range)
  elif traced:
    oks.append(in_unit(arrays, traced))
  if length is not None and not _is_concrete(length):
    oks.append(
      jnp.broadcast_to((length >= 0) & (length <= shape[-1]), shape[:-1])
    )
  if not oks:
    return None
  ok = functools.reduce(jnp.logical_and, oks)
  val.debug_check_values(
    ok, f"scores must lie in [0, 1] (no NaN) and length in [0, T={shape[-1]}]"
  )
  return ok


def prepare_length(length, shape):
  if length is None:
    return None
  if isinstance(length, (bool, np.bool_)):
    raise TypeError("length must be an int or an integer array, got a bool")
  length_arr = length if hasattr(length, "dtype") else np.asarray(length)
  if not jnp.issubdtype(length_arr.dtype, jnp.integer):
    raise TypeError(
      f"length must be integer-valued, got dtype {length_arr.dtype}"
    )
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
