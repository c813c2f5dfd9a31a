"""FLOP counting that multiplies a ``lax.scan`` body by its trip count.

XLA's ``cost_analysis()`` counts the body of a loop once: a ``lax.scan`` of
``L`` steps reports about the FLOPs of a single step, so a budget measured on a
scan-based model (the SSM student with ``method='scan'`` or ``'chunked'``) is
undercounted by up to a factor ``L``. :func:`count_flops` corrects this on the
jaxpr: for every scan equation with body ``f``, length ``L`` and unroll factor
``u``,

    flops(program) = XLA(program) + Σ_scans [ L · flops(f) − c(L, u) · XLA(f) ]

where ``c(L, u)`` is the number of body copies XLA actually sees in the lowered
loop (``u`` in the loop plus ``L mod u`` peeled iterations, or ``L`` for a fully
unrolled scan) and ``flops(f)`` applies the same rule recursively (nested
scans). Sub-programs of other primitives (``jit``, ``remat``, ``custom_vjp``,
``cond``, ``while``) are searched for scans; a ``while_loop`` with a
data-dependent trip count is counted once, like XLA does (its trip count is
unknown).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.extend as jex

__all__ = ["count_flops", "xla_flops"]


def xla_flops(
  lowered_or_compiled: jax.stages.Lowered | jax.stages.Compiled,
) -> float:
  """``flops`` of a ``jax.jit(...).lower(...)`` (or ``.compile()``) result as
  XLA counts them.

  Loop bodies are counted once (see :func:`count_flops`).

  Args:
    lowered_or_compiled: the result of ``jax.jit(f).lower(*args)`` or of its
      ``.compile()``.

  Returns:
    The ``flops`` entry of XLA's cost analysis; NaN when the backend has no cost
    model.
  """
  if not callable(getattr(lowered_or_compiled, "cost_analysis", None)):
    raise TypeError(
      "lowered_or_compiled must be a jax.jit(f).lower(...) or .compile() "
      f"result, got {type(lowered_or_compiled).__name__}"
    )
  try:
    ca = lowered_or_compiled.cost_analysis()
  except Exception:  # pragma: no cover - backend without cost analysis
    return float("nan")
  if isinstance(ca, (list, tuple)):
    ca = ca[0] if ca else {}
  if not ca:
    return float("nan")
  return float(ca.get("flops", float("nan")))


def _closed_flops(closed) -> float:
  avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in closed.in_avals]
  return xla_flops(jax.jit(jex.core.jaxpr_as_fun(closed)).lower(*avals))


def _copies_seen_by_xla(length: int, unroll) -> int:
  u = int(unroll)  # unroll=True arrives as the length, False as 1
  if u <= 0 or u >= length:
    return length
  return u + length % u


def _correction(jaxpr) -> float:
  """FLOPs missing from XLA's count of ``jaxpr`` (open jaxpr) because of
  scans."""
  extra = 0.0
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "scan":
      body = eqn.params["jaxpr"]
      length = int(eqn.params["length"])
      once = _closed_flops(body)
      full = once + _correction(body.jaxpr)
      extra += (
        length * full
        - _copies_seen_by_xla(length, eqn.params.get("unroll", 1)) * once
      )
    else:
      for sub in jex.core.jaxprs_in_params(eqn.params):
        extra += _correction(sub)
  return extra


def count_flops(
  fn: Callable[..., Any] | jax.stages.Traced, *args: Any, with_xla: bool = False
) -> float | tuple[float, float]:
  """FLOPs of ``fn(*args)`` with every ``lax.scan`` body counted ``length``
  times.

  ``XLA(program) + Σ_scans [L · flops(body) − (copies XLA saw) · XLA(body)]``,
  recursively (nested scans); the per-program counts are XLA's HLO cost analysis
  of the *lowered*
  (unoptimised) programs, so the result is deterministic and does not depend on
                the
  optimisation passes.

  Args:
    fn: a function of positional array pytrees (jitted or not; close over static
      arguments), or an already traced ``jax.jit(f).trace(*args)`` (then pass no
      ``args``; its lowering is reused, nothing is traced twice).
    *args: its arguments (arrays, pytrees of arrays, or
      ``jax.ShapeDtypeStruct``).
    with_xla: also return XLA's own count (scan bodies once), for comparison.

  Returns:
    ``float`` FLOPs of one call (NaN if the backend has no cost model); with
    ``with_xla`` the pair ``(flops, xla_flops)``.

  Example:
    >>> step = lambda h, _: (jnp.tanh(h @ w), None)
    >>> count_flops(lambda h: jax.lax.scan(step, h, None, length=100)[0], h0)  # ~ 100 steps
  """
  if isinstance(fn, jax.stages.Traced):
    if args:
      raise ValueError(
        "count_flops(traced) takes no args: the traced call already has them"
      )
    closed, base = fn.jaxpr, xla_flops(fn.lower())
  else:
    if not callable(fn):
      raise TypeError(
        f"fn must be callable or a jax.stages.Traced, got {type(fn).__name__}"
      )
    closed = jax.make_jaxpr(fn)(*args)
    base = _closed_flops(closed)
  total = base + _correction(closed.jaxpr)
  return (total, base) if with_xla else total
