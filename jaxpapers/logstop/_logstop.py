"""LogSTOP scores, the adaptive matching threshold and segment-max retrieval.

Semantics (arXiv:2510.06512, Sec. 3; restated from the public reference code).
For local scores p_a[t] in [0, 1], t = 0..e with e = T - 1, and a window w >= 1,
the log-score l_phi(t) in [-inf, 0] of phi on the suffix starting at t is::

  l_a(t)      = log mean(p_a[t : t + min(w, e - t + 1)])
  l_true(t)   = 0,  l_false(t) = -inf,  l_phi(t) = -inf for t > e
  l_!phi(t)   = log1mexp(l_phi(t)) = log(1 - exp l_phi(t))
  l_phi&psi   = l_phi + l_psi ;  phi | psi := !(!phi & !psi) ;  phi -> psi := !phi | psi
  l_Xphi(t)   = l_phi(t + w)  (-inf if t + w > e)
  l_phiUpsi(t) = logaddexp(l_psi(t), l_phi(t) + log1mexp(l_psi(t)) + l_phiUpsi(t + w))
  l_Gphi(t)   = l_phi(t) + l_Gphi(t + w),  l_Gphi(t) = l_phi(t) if t + w > e
  F phi       := true U phi

The score of a trace is l_phi(0). Conjunction multiplies (an independence
assumption), so the score is not idempotent (l_{a&a} = 2 l_a); never simplify
formulas before scoring. Cost: O(T |phi|) work whatever w is. The scores are computed as
probabilities (each with its complement, no transcendental per frame) and their logs taken
at the end; where a probability is too small for that (underflow) the batch is scored in log
space instead (see ``_engine``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from jaxpapers.logstop import _engine
from jaxpapers.logstop import _formula as F

__all__ = [
  "scores",
  "score",
  "score_many",
  "adaptive_threshold",
  "match",
  "segment_max_score",
  "segment_pairs",
]


def _evaluate(
  formula,
  props,
  window,
  length,
  algebra,
  threshold=0.5,
  clip_eps=None,
  check_range=True,
  first_only=False,
):
  """One formula's values: [..., T], or [...] at t = 0 when `first_only`."""
  return _evaluate_many(
    (formula,),
    props,
    window,
    length,
    algebra,
    threshold=threshold,
    clip_eps=clip_eps,
    check_range=check_range,
    first_only=first_only,
  )[0]


def _evaluate_many(
  formulas,
  props,
  window,
  length,
  algebra,
  threshold=0.5,
  clip_eps=None,
  check_range=True,
  first_only=False,
):
  """Stacked values of several formulas in one compiled program: [F, ..., T] or
  [F, ...]."""
  formulas = tuple(F.as_formula(f) for f in formulas)
  window = _engine.validate_window(window)
  arrays, shape = _engine.prepare_props(
    formulas, props, check_range=check_range
  )
  length = _engine.prepare_length(length, shape)
  if clip_eps is not None:
    clip_eps = float(clip_eps)
    if not 0.0 < clip_eps < 0.5:
      raise ValueError(f"clip_eps must be None or in (0, 0.5), got {clip_eps}")
  try:
    threshold = float(threshold)
  except TypeError:
    raise TypeError(
      f"threshold must be a static Python number, got {threshold!r}"
    ) from None
  if not np.isfinite(threshold):
    raise ValueError(f"threshold must be a finite number, got {threshold!r}")
  # The range check of traced scores is computed by the compiled program (in the
  # loop of the sequential scan where it runs), then registered with the length
  # check.
  out, in_range = _engine.evaluate_jit(
    arrays,
    length,
    formulas=formulas,
    window=window,
    algebra=algebra,
    threshold=threshold,
    clip_eps=clip_eps,
    first_only=first_only,
    check=_engine.traced_names(arrays, check_range=check_range),
  )
  ok = _engine.traced_ok(
    arrays, length, shape, check_range=check_range, in_range=in_range
  )
  return (
    out if ok is None else _poison(out, ok if first_only else ok[..., None])
  )


def _poison(out, ok):
  """NaN where ``ok`` is False for float results (bool results rely on
  checkify)."""
  if jnp.issubdtype(out.dtype, jnp.floating):
    return jnp.where(ok, out, jnp.nan)
  return out


def scores(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  window: int = 1,
  length: ArrayLike | None = None,
  clip_eps: float | None = None,
) -> jax.Array:
  """LogSTOP suffix log-scores l_phi(t) for every start t.

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: maps each proposition name of `formula` to local scores in [0, 1] of
      shape [..., T]; all arrays share one shape, leading axes are batch axes.
      Extra names are ignored.
    window: the window w >= 1 (static): atoms average w frames and X/U/G step
      by w. w = 1 is per-frame semantics.
    length: optional int or integer array broadcastable to the batch shape (may
      be traced); positions t >= length are beyond the end of the trace, so a
      padded batch scores like the unpadded traces.
    clip_eps: optional epsilon; scores are clipped to [eps, 1 - eps] before the
      logs, which keeps gradients finite. None (default) gives exact values.

  Returns:
    Log-scores in [-inf, 0], shape [..., T], float32 (float64 for float64 inputs
    with x64 enabled). exp of a score is a probability-like value in [0, 1].

  Raises:
    ValueError: for a missing proposition, scores outside [0, 1] or NaN (checked
      when the inputs are concrete), mismatched shapes, a bad window or length.
      Under `jax.jit` the scores of a trace with a value outside [0, 1] (or a
      traced length outside [0, T]) are NaN, never a plausible number; wrap the
      jitted function with `jax.experimental.checkify.checkify` to get the
      error.

  Validation under jit: the value checks are registered as checkify debug
  checks, so::

    from jax.experimental import checkify
    f = checkify.checkify(jax.jit(lambda p: logstop.score("G a", {"a": p})))
    err, out = f(p)
    err.throw()  # ValueError-like JaxRuntimeError naming "[0, 1]" for bad scores

  Eagerly, a JAX array is range-checked on its device (only a boolean is read
  back; the array is copied to the host only to report the first bad entry),
  numpy input on the host.

  References:
    arXiv:2510.06512, Sec. 3 (LogSTOP).
  """
  return _evaluate(formula, props, window, length, "log", clip_eps=clip_eps)


def score(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  window: int = 1,
  length: ArrayLike | None = None,
  clip_eps: float | None = None,
) -> jax.Array:
  """LogSTOP log-score l_phi(0) of each whole trace; shape [...].

  Works under `jax.jit` (the formula is static and each (formula, T, window)
  compiles once) and `jax.vmap`. Only the chain of positions 0, w, 2w, ... is
  evaluated, on block means of w frames, so a window w > 1 costs less than w =
  1.

  Args:
    formula: an LTL formula string (see `parse`) or a parsed `Formula`.
    props: proposition name -> local scores in [0, 1] of shape [..., T] (see
      `scores`).
    window: the window w >= 1 (static).
    length: optional per-trace lengths, broadcastable to the batch shape [...].
    clip_eps: optional epsilon for finite gradients (see `scores`).

  Returns:
    Log-scores in [-inf, 0], shape [...].

  Raises:
    ValueError, TypeError: as in `scores`.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxpapers import logstop
    >>> p = {"car": jnp.array([0.1, 0.9, 0.8]), "ped": jnp.array([0.0, 0.2, 0.9])}
    >>> float(jnp.exp(logstop.score("car U ped", p)))  # doctest: +SKIP
  """
  return _evaluate(
    formula, props, window, length, "log", clip_eps=clip_eps, first_only=True
  )


def score_many(
  formulas: Sequence[str | F.Formula],
  props: Mapping[str, ArrayLike],
  *,
  window: int = 1,
  length: ArrayLike | None = None,
  clip_eps: float | None = None,
) -> jax.Array:
  """LogSTOP log-scores l_phi(0) of several formulas on a batch of traces; shape
  [F, ...].

  One compiled program scores every (formula, trace) pair: subformulas that
  occur in several formulas (atoms above all) are computed once. Equal to
  stacking `score` per formula.

  Args:
    formulas: a non-empty sequence of F formula strings or parsed `Formula`s.
    props: maps each proposition of any of the formulas to scores in [0, 1] of
      shape [..., T] (see `scores`).
    window, length, clip_eps: as in `scores`.

  Returns:
    Log-scores [F, ...]: row i holds `score(formulas[i], props, ...)`.

  Raises:
    TypeError: `formulas` is a single string or formula, or not a sequence.
    ValueError: as in `scores`; under `jax.jit` a trace with a score outside
      [0, 1] gets NaN scores for every formula.

  Example:
    >>> import numpy as np
    >>> from jaxpapers import logstop
    >>> p = {"a": np.random.rand(8, 100), "b": np.random.rand(8, 100)}
    >>> logstop.score_many(["a U b", "G(a -> F b)"], p).shape
    (2, 8)
  """
  if isinstance(formulas, str | F.Formula) or not isinstance(
    formulas, Sequence
  ):
    raise TypeError(
      "formulas must be a sequence of formula strings or Formulas (use score "
      f"for one formula), got {type(formulas).__name__}"
    )
  if not formulas:
    raise ValueError(
      "formulas must contain at least one formula, got an empty sequence"
    )
  return _evaluate_many(
    formulas, props, window, length, "log", clip_eps=clip_eps, first_only=True
  )


def adaptive_threshold(
  formula: str | F.Formula,
  T: int,
  *,
  window: int = 1,
  length: ArrayLike | None = None,
  dtype: DTypeLike = jnp.float32,
) -> jax.Array:
  """Adaptive matching threshold tau_phi = min(l_phi(0) on all-0.5 scores, log
  0.5).

  Args:
    formula: formula string or `Formula`.
    T: trace length (int).
    window: the window w.
    length: optional per-trace lengths (shape [...]); then tau has that shape.
    dtype: float dtype of the computation.

  Returns:
    tau_phi, a scalar (or shape of `length`).
  """
  formula = F.as_formula(formula)
  if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
    raise ValueError(f"T must be a positive int, got {T!r}")
  if not jnp.issubdtype(dtype, jnp.floating):
    raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}")
  batch = () if length is None else tuple(np.shape(length))
  half = jnp.full(batch + (int(T),), 0.5, dtype=dtype)
  names = F.atoms(formula) or ("_",)
  s = score(formula, {n: half for n in names}, window=window, length=length)
  return jnp.minimum(s, jnp.log(jnp.asarray(0.5, dtype)))


def match(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  window: int = 1,
  length: ArrayLike | None = None,
) -> jax.Array:
  """Query matching: True where l_phi(0) > tau_phi (the adaptive threshold).

  Note the sign convention: LogSTOP scores are log-probabilities in [-inf, 0],
  so matching compares against tau_phi (about log 0.5 or lower), never 0.

  Args:
    formula: formula string or `Formula`.
    props: proposition name -> scores in [0, 1] of shape [..., T] (see
      `scores`).
    window: the window w.
    length: optional per-trace lengths, broadcastable to the batch shape [...].

  Returns:
    bool[...]: whether each trace matches the query.

  Bad values: scores outside [0, 1] raise ValueError eagerly. The result is
  boolean, so under `jax.jit` a bad trace gives False; wrap the jitted function
  with `jax.experimental.checkify.checkify` to get the error.
  """
  s = score(formula, props, window=window, length=length)
  tau = adaptive_threshold(
    formula,
    _trace_len(formula, props),
    window=window,
    length=length,
    dtype=s.dtype,
  )
  return s > tau


def _trace_len(formula, props):
  names = F.atoms(F.as_formula(formula)) or tuple(sorted(props))[:1]
  return int(np.shape(props[names[0]])[-1])


def segment_pairs(
  T: int, min_len: int, max_len: int, window: int = 1
) -> tuple[np.ndarray, np.ndarray]:
  """Candidate segments [s, e] for retrieval, as in the reference enumeration.

  For every start index i = 0..T - min_len the reference scores the trace
  truncated at e = min(T, i + max_len) - 1 and keeps the suffix scores at
  s = i, i + w, ... with e - s + 1 >= min_len. The union over i is returned.

  Args:
    T: the trace length.
    min_len, max_len: segment length bounds, 1 <= min_len <= max_len.
    window: the window w (segment starts step by w from each i).

  Returns:
    (ends int[E], mask bool[E, T]) where mask[j, s] marks the segment
    [s, ends[j]]; empty (E = 0) when T < min_len.
  """
  window = _engine.validate_window(window)
  for name, v in (("T", T), ("min_len", min_len), ("max_len", max_len)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  if min_len > max_len:
    raise ValueError(f"min_len ({min_len}) must be <= max_len ({max_len})")
  mask = {}
  for i in range(0, T - min_len + 1):
    e = min(T, i + max_len) - 1
    row = mask.setdefault(e, np.zeros(T, bool))
    for s in range(i, e - min_len + 2, window):
      row[s] = True
  if not mask:
    return np.zeros((0,), np.int32), np.zeros((0, T), bool)
  ends = np.array(sorted(mask), np.int32)
  return ends, np.stack([mask[e] for e in ends])


def segment_max_score(
  formula: str | F.Formula,
  props: Mapping[str, ArrayLike],
  *,
  window: int = 1,
  min_len: int = 1,
  max_len: int | None = None,
  semantics: str = "logstop",
) -> jax.Array:
  """Retrieval score: the best score over segments of bounded length.

  score = max over candidate segments [s, e] (min_len <= e - s + 1 <= max_len,
  enumerated as in the reference, see `segment_pairs`) of l_phi^{(e)}(s), the
  suffix score at s of the trace truncated at e. O(T^2 |phi|) work (vmap over e).

  Args:
    formula: formula string or `Formula`.
    props: scores [..., T] per proposition.
    window: the window w.
    min_len, max_len: segment length bounds (max_len defaults to T).
    semantics: "logstop" (default), "boolean" (thresholded LTLf, 1.0/0.0) or
      "robustness" (STL min/max robustness) for the baselines' segment max.

  Returns:
    f32[...] per trace; -inf when T < min_len. Under `jax.jit` a trace with a
    score outside [0, 1] gives NaN (checkify surfaces the error).
  """
  algebra = {"logstop": "log", "boolean": "bool", "robustness": "robust"}.get(
    semantics
  )
  if algebra is None:
    raise ValueError(
      "semantics must be one of 'logstop', 'boolean', 'robustness', "
      f"got {semantics!r}"
    )
  formula = F.as_formula(formula)
  window = _engine.validate_window(window)
  arrays, shape = _engine.prepare_props(formula, props)
  T = shape[-1]
  max_len = T if max_len is None else max_len
  ends, mask = segment_pairs(T, min_len, max_len, window)
  dtype = next(iter(arrays.values())).dtype
  ok = _engine.traced_ok(arrays, None, shape)
  if len(ends) == 0:
    out = jnp.full(shape[:-1], -jnp.inf, dtype)
  else:
    out = _segment_max_jit(
      arrays,
      jnp.asarray(ends),
      jnp.asarray(mask),
      formula=formula,
      window=window,
      algebra=algebra,
    )
  return out if ok is None else _poison(out, ok)


def _segment_max_impl(arrays, ends, mask, *, formula, window, algebra):
  batch = next(iter(arrays.values())).shape[:-1]

  def one_end(e):
    length = jnp.full(batch, e + 1, jnp.int32)
    v = _engine.evaluate(formula, arrays, window, length, algebra)
    return v.astype(next(iter(arrays.values())).dtype)  # [..., T]

  vals = jax.lax.map(one_end, ends)  # [E, ..., T]
  m = mask.reshape((mask.shape[0],) + (1,) * len(batch) + (mask.shape[1],))
  vals = jnp.where(m, vals, -jnp.inf)
  return jnp.max(vals, axis=(0, vals.ndim - 1))


_segment_max_jit = jax.jit(
  _segment_max_impl, static_argnames=("formula", "window", "algebra")
)
