"""Vectorised bottom-up evaluation of LTL formulas over [..., T] score arrays.

One engine serves three semantics, selected by a static `algebra` name:

* ``"log"``: LogSTOP log-scores (arXiv:2510.06512, Sec. 3), values in [-inf, 0];
* ``"bool"``: Boolean LTLf on thresholded window means (baseline);
* ``"robust"``: STL-style min/max robustness of ``mean - threshold`` (baseline).

Every subformula becomes an array of shape [..., T]. Atoms are window means (O(T) block
prefix sums), `X` is a shift by the window `w`, and `U`/`G` are reverse associative scans
with stride `w` over `w` interleaved chains (pad T to a multiple of w, reshape to [T/w, w]):
each step of `U` is an affine map ``y -> b (+) m (x) y`` in the algebra's semiring, and
composing those maps in blocks keeps float32 sums over long traces accurate (O(sqrt T)
roundings instead of O(T)). Positions t >= length are "beyond the end" and hold the bottom value
(-inf / False), which gives the end-of-trace rules of the paper.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as val
from jaxpapers.logstop import _formula as F

ALGEBRAS = ("log", "bool", "robust")


def log1mexp(x):
  """log(1 - exp(x)) for x <= 0, stable on both sides of -log 2.

  log1mexp(0) = -inf and log1mexp(-inf) = 0 exactly. x > 0 (a log-probability above 0) is
  outside the domain: ``ValueError`` eagerly, NaN under ``jax.jit`` (wrap with
  ``jax.experimental.checkify.checkify`` to get the error).
  """
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    x = x.astype(jnp.float32)
  val.debug_check_values(~(x > 0), "log1mexp needs x <= 0 (a log-probability); got x > 0")
  return jnp.where(
    x > -jnp.log(2.0).astype(x.dtype), jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x))
  )


def _bottom(algebra, dtype):
  if algebra == "bool":
    return False
  return -jnp.inf


def _top(algebra, dtype):
  if algebra == "bool":
    return True
  if algebra == "log":
    return 0.0
  return jnp.inf


def _window_mean(p, window: int, valid):
  """mean(p[t : t + min(w, L - t)]) for every t (garbage where t >= L); O(T) work.

  The window sums come from block prefix sums, not from one running cumulative sum: with
  blocks of w frames, the window starting at t = q w + r is the suffix of block q from r plus
  the first r frames of block q + 1, so every sum adds at most w numbers of the window's own
  magnitude (a float32 cumulative sum over T = 1e5 frames would lose the small windows to
  cancellation).
  """
  T = p.shape[-1]
  if window == 1:
    return p
  batch = p.shape[:-1]
  x = p if valid is None else jnp.where(valid, p, 0)
  nb = -(-T // window) + 1  # one extra block of zeros for the windows that run off the end
  x = jnp.pad(x, [(0, 0)] * len(batch) + [(0, nb * window - T)])
  x = x.reshape(*batch, nb, window)
  prefix = jnp.cumsum(x, axis=-1)  # prefix[q, r] = sum of block q up to r (inclusive)
  block = prefix[..., -1:]
  suffix = block - prefix + x  # suffix[q, r] = sum of block q from r
  head = jnp.pad(prefix[..., 1:, :-1], [(0, 0)] * len(batch) + [(0, 1), (1, 0)])
  total = (suffix + head).reshape(*batch, nb * window)[..., :T]
  t = jnp.arange(T)
  end = T if valid is None else jnp.minimum(jnp.sum(valid, axis=-1, keepdims=True), T)
  count = jnp.clip(jnp.minimum(t + window, end) - t, 1, window).astype(p.dtype)
  return total / count


def _affine_combine(algebra):
  """Composition of the maps y -> c (+) m (x) y of one semiring, for an associative scan.

  ``later`` holds the composed map of the positions after those of ``earlier``; the result is
  ``earlier o later``. Log algebra: (+) is logaddexp and (x) is +; bool: or / and; robust:
  max / min.
  """
  if algebra == "log":
    plus, times = jnp.logaddexp, jnp.add
  elif algebra == "bool":
    plus, times = jnp.logical_or, jnp.logical_and
  else:
    plus, times = jnp.maximum, jnp.minimum

  def combine(later, earlier):
    (m_l, c_l), (m_e, c_e) = later, earlier
    return times(m_e, m_l), plus(c_e, times(m_e, c_l))

  return combine


# Chains up to this many elements use one sequential scan (at most this many roundings).
_SEQUENTIAL_MAX = 1024


def _reverse_strided_assoc(combine, operands, window: int):
  """Reverse scan with stride w: out[t] = x[t] o x[t + w] o ... over w interleaved chains.

  Chains of n = ceil(T / w) <= 1024 elements use one sequential scan. Longer ones use a
  two-level (blocked) scan: each chain is cut into blocks of
  B = ceil(sqrt(n)); a sequential scan composes the suffixes inside every block (all blocks
  at once), a second one composes the block totals, and one more composition joins them. A
  float32 sum over n terms then carries O(sqrt(n)) roundings instead of O(n) (relative error
  about 1e-6 instead of 6e-4 for ``G a`` at T = 1e5), while compiling two small ``lax.scan``s
  (a full pairwise ``lax.associative_scan`` compiles log2(n) levels: seconds at T = 1e5).

  Args:
    combine: associative ``combine(later, earlier)`` on tuples of arrays.
    operands: list of (array [..., T], identity value); the identity values form the
      identity element of the composition (used for padding and as the initial carry).
    window: stride w.

  Returns:
    The last component of the composed suffix at every t, an array [..., T] (for an affine
    map ``y -> c (+) m (x) y`` this is the map applied to bottom).
  """
  T = operands[0][0].shape[-1]
  batch = operands[0][0].shape[:-1]
  n = -(-T // window)
  if n <= _SEQUENTIAL_MAX:  # short chains: one sequential scan (cheaper to compile)
    xs = []
    for a, ident in operands:
      a = jnp.pad(a, [(0, 0)] * len(batch) + [(0, n * window - T)], constant_values=ident)
      xs.append(jnp.moveaxis(a.reshape(*batch, n, window), -2, 0))  # [n, ..., w]
    ids = tuple(jnp.full(x.shape[1:], ident, x.dtype) for x, (_, ident) in zip(xs, operands))

    def body(later, earlier):
      out = combine(later, earlier)
      return out, out[-1]

    _, ys = jax.lax.scan(body, ids, tuple(xs), reverse=True)
    return jnp.moveaxis(ys, 0, -2).reshape(*batch, n * window)[..., :T]
  B = math.isqrt(n - 1) + 1  # ceil(sqrt(n))
  nb = -(-n // B)
  Tp = nb * B * window
  xs, ids = [], []
  for a, ident in operands:
    a = jnp.pad(a, [(0, 0)] * len(batch) + [(0, Tp - T)], constant_values=ident)
    # [..., nb, B, w] -> [B, nb, ..., w]: scan over positions in a block, all blocks at once.
    a = jnp.moveaxis(a.reshape(*batch, nb, B, window), (-3, -2), (1, 0))
    xs.append(a)
    ids.append(jnp.full(a.shape[1:], ident, a.dtype))

  def step(later, earlier):
    out = combine(later, earlier)
    return out, out

  _, suffix = jax.lax.scan(step, tuple(ids), tuple(xs), reverse=True)  # each [B, nb, ..., w]
  totals = tuple(x[0] for x in suffix)  # [nb, ..., w]
  ids_b = tuple(i[0] for i in ids)  # [..., w]
  _, after = jax.lax.scan(step, ids_b, totals, reverse=True)  # after[j] = block j onward
  # The composition of the blocks after block j: after[j + 1], identity for the last block.
  rest = tuple(jnp.concatenate([a[1:], i[None]], axis=0) for a, i in zip(after, ids_b))
  out = combine(tuple(r[None] for r in rest), suffix)[-1]  # [B, nb, ..., w]
  out = jnp.moveaxis(out, (0, 1), (-2, -3)).reshape(*batch, Tp)
  return out[..., :T]


def _shift(a, window: int, fill):
  """y[t] = a[t + w], `fill` beyond the end."""
  T = a.shape[-1]
  k = min(window, T)
  return jnp.pad(a[..., k:], [(0, 0)] * (a.ndim - 1) + [(0, k)], constant_values=fill)


def evaluate(
  formula, props: Mapping[str, jax.Array], window: int, length, algebra: str, threshold: float = 0.5
):
  """Suffix values of `formula` for every start t; shape [..., T].

  `props` must already be validated arrays of one float dtype and shape [..., T];
  `length` is None or an integer array broadcastable to the batch shape.
  """
  some = next(iter(props.values()))
  shape, dtype = some.shape, some.dtype
  T = shape[-1]
  if length is None:
    valid = None
  else:
    valid = jnp.arange(T) < jnp.asarray(length)[..., None]
    valid = jnp.broadcast_to(valid, shape)
  bottom = _bottom(algebra, dtype)
  top = _top(algebra, dtype)
  out_dtype = jnp.bool_ if algebra == "bool" else dtype

  def mask(x):
    if valid is None:
      return x
    return jnp.where(valid, x, bottom)

  def full(v):
    return jnp.full(shape, v, dtype=out_dtype)

  if algebra == "log":
    neg = log1mexp
    conj = jnp.add
    disj = lambda x, y: log1mexp(log1mexp(x) + log1mexp(y))
    always_step = lambda n, a: a + n
  elif algebra == "bool":
    neg = jnp.logical_not
    conj = jnp.logical_and
    disj = jnp.logical_or
    always_step = lambda n, a: a & n
  elif algebra == "robust":
    neg = jnp.negative
    conj = jnp.minimum
    disj = jnp.maximum
    always_step = lambda n, a: jnp.minimum(a, n)
  else:
    raise ValueError(f"algebra must be one of {ALGEBRAS}, got {algebra!r}")

  combine = _affine_combine(algebra)

  def until(a, b):
    # y(t) = b(t) (+) [a(t) (x) !b(t)] (x) y(t + w) (log; bool and robust drop the !b), an
    # affine map of y(t + w): composed by a blocked scan, applied to bottom.
    m = a + log1mexp(b) if algebra == "log" else a
    one = _top(algebra, dtype)
    c = _reverse_strided_assoc(combine, [(m, one), (b, bottom)], window)
    return jnp.minimum(c, 0.0) if algebra == "log" else c

  memo = {}

  def ev(f):
    if f in memo:
      return memo[f]
    if isinstance(f, F.Atom):
      m = _window_mean(props[f.name], window, valid)
      if algebra == "log":
        out = jnp.log(m)
      elif algebra == "bool":
        out = m >= threshold
      else:
        out = m - jnp.asarray(threshold, dtype)
    elif isinstance(f, F.Const):
      out = full(top if f.value else bottom)
    elif isinstance(f, F.Not):
      out = neg(ev(f.arg))
    elif isinstance(f, F.And):
      out = conj(ev(f.left), ev(f.right))
    elif isinstance(f, F.Or):
      out = disj(ev(f.left), ev(f.right))
    elif isinstance(f, F.Implies):
      out = disj(neg(ev(f.left)), ev(f.right))
    elif isinstance(f, F.Next):
      out = _shift(ev(f.arg), window, bottom)
    elif isinstance(f, F.Until):
      out = until(ev(f.left), ev(f.right))
    elif isinstance(f, F.Eventually):
      out = until(full(top), ev(f.arg))
    elif isinstance(f, F.Always):
      a = ev(f.arg)
      if valid is not None:
        a = jnp.where(valid, a, top)
      # y(t) = a(t) (x) y(t + w) with y = top beyond the end: a reverse blocked product.
      out = _reverse_strided_assoc(
        lambda later, earlier: (always_step(later[0], earlier[0]),), [(a, top)], window
      )
    else:
      raise TypeError(f"Not a formula: {f!r}")
    out = mask(out.astype(out_dtype))
    memo[f] = out
    return out

  return ev(formula)


@functools.partial(
  jax.jit, static_argnames=("formula", "window", "algebra", "threshold", "clip_eps")
)
def evaluate_jit(props, length, *, formula, window, algebra, threshold=0.5, clip_eps=None):
  if clip_eps is not None:
    props = {k: jnp.clip(v, clip_eps, 1.0 - clip_eps) for k, v in props.items()}
  return evaluate(formula, props, window, length, algebra, threshold)


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
  """Validates `props` for `formula`; returns (dict of float arrays, shape)."""
  if not isinstance(props, Mapping):
    raise TypeError(
      f"props must be a mapping from proposition name to an array of scores "
      f"[..., T], got {type(props).__name__}"
    )
  names = F.atoms(formula)
  missing = [n for n in names if n not in props]
  if missing:
    raise ValueError(
      f"props is missing scores for proposition(s) {missing} of formula "
      f"{formula}; got propositions {sorted(props)}"
    )
  if not names:
    if not props:
      raise ValueError(
        f"formula {formula} has no propositions, so props must contain at "
        f"least one array to fix the shape [..., T]"
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
  shape = None
  for n, v in arrays.items():
    if v.ndim < 1:
      raise ValueError(
        f"scores of proposition {n!r} must have shape [..., T] with T >= 1, got a scalar"
      )
    if shape is None:
      shape, first = tuple(v.shape), n
    elif tuple(v.shape) != shape:
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
