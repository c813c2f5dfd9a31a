"""Vectorised bottom-up evaluation of LTL formulas over [..., T] score arrays.

One engine serves three semantics, selected by a static `algebra` name:

* ``"log"``: LogSTOP log-scores (arXiv:2510.06512, Sec. 3), values in [-inf, 0];
* ``"bool"``: Boolean LTLf on thresholded window means (baseline);
* ``"robust"``: STL-style min/max robustness of ``mean - threshold`` (baseline).

Every subformula becomes an array of shape [..., T]. Atoms are window means,
`X` is a shift by the window `w`, and `U`/`G` are reverse `lax.scan`s with stride
`w` over `w` interleaved chains (pad T to a multiple of w, reshape to
[T/w, w]). Positions t >= length are "beyond the end" and hold the bottom value
(-inf / False), which gives the end-of-trace rules of the paper.
"""

from __future__ import annotations

import functools
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
  """mean(p[t : t + min(w, L - t)]) for every t (garbage where t >= L)."""
  T = p.shape[-1]
  if window == 1:
    return p
  total = jnp.zeros_like(p)
  count = jnp.zeros_like(p)
  for k in range(window):
    shifted = jnp.pad(p[..., k:], [(0, 0)] * (p.ndim - 1) + [(0, min(k, T))])
    shifted = shifted[..., :T]
    ok = jnp.arange(T) + k < T
    if valid is not None:
      ok_valid = jnp.pad(
        valid[..., k:], [(0, 0)] * (p.ndim - 1) + [(0, min(k, T))], constant_values=False
      )[..., :T]
      ok = ok & ok_valid
    total = total + jnp.where(ok, shifted, 0)
    count = count + ok.astype(p.dtype)
  return total / jnp.maximum(count, 1)


def _reverse_strided_scan(step, init, operands, window: int):
  """y[t] = step(y[t + w], *x[t]) for t = T-1..0, y[t + w] = init beyond T.

  Args:
    step: elementwise function (next, *operands) -> value.
    init: carry value beyond the last position (per chain).
    operands: list of (array [..., T], pad value).
    window: stride w; the w residues mod w are independent chains.

  Returns:
    y with shape [..., T].
  """
  T = operands[0][0].shape[-1]
  Tp = -(-T // window) * window
  batch = operands[0][0].shape[:-1]
  xs = []
  for a, pad in operands:
    a = jnp.pad(a, [(0, 0)] * len(batch) + [(0, Tp - T)], constant_values=pad)
    a = a.reshape(*batch, Tp // window, window)
    xs.append(jnp.moveaxis(a, -2, 0))  # [T/w, ..., w]
  carry0 = jnp.full(batch + (window,), init, dtype=xs[0].dtype)

  def body(nxt, x):
    out = step(nxt, *x)
    return out, out

  _, ys = jax.lax.scan(body, carry0, tuple(xs), reverse=True)
  ys = jnp.moveaxis(ys, 0, -2).reshape(*batch, Tp)
  return ys[..., :T]


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
    # Clamp at 0: exp(b) + exp(rest) <= 1 exactly, but rounding may exceed it.
    until_step = lambda n, a, b: jnp.minimum(jnp.logaddexp(b, a + log1mexp(b) + n), 0.0)
    always_step = lambda n, a: a + n
  elif algebra == "bool":
    neg = jnp.logical_not
    conj = jnp.logical_and
    disj = jnp.logical_or
    until_step = lambda n, a, b: b | (a & n)
    always_step = lambda n, a: a & n
  elif algebra == "robust":
    neg = jnp.negative
    conj = jnp.minimum
    disj = jnp.maximum
    until_step = lambda n, a, b: jnp.maximum(b, jnp.minimum(a, n))
    always_step = lambda n, a: jnp.minimum(a, n)
  else:
    raise ValueError(f"algebra must be one of {ALGEBRAS}, got {algebra!r}")

  def until(a, b):
    return _reverse_strided_scan(until_step, bottom, [(a, bottom), (b, bottom)], window)

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
      out = _reverse_strided_scan(always_step, top, [(a, top)], window)
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
    if check_range and _is_concrete(v):
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
