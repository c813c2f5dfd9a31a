"""Entropic optimal transport between small discrete distributions (ott-jax Sinkhorn)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

__all__ = ["pad_with_dummy_bucket", "entropic_ot_cost", "entropic_ot_plan"]

_VALUES = ("transport", "regularized", "plan")


def _require_ott():
  try:
    from ott.geometry import geometry
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn
  except ImportError as e:  # pragma: no cover - the sola extra carries it
    raise ImportError("jaxpapers.sola needs ott-jax: pip install 'jaxpapers[sola]'") from e
  return geometry, linear_problem, sinkhorn


def pad_with_dummy_bucket(p, p_mask, q, q_mask, cost, *, delta: float = 1e-6):
  """Gives padded slots a tiny shared mass so that no marginal entry is zero (no NaN gradients).

  Reconstruction (spec §3.4): real entries carry ``(1 - delta) * p / sum(p)``, the padded
  entries of each side share ``delta`` equally; the cost is 0 between two padded slots and 1
  between a padded and a real slot. Each side needs at least one padded slot.

  Args:
    p: float [..., M_T] teacher masses (any non-negative scale; renormalised over the mask).
    p_mask: bool [..., M_T], True on real entries.
    q: float [..., M_S]; q_mask: bool [..., M_S].
    cost: float [..., M_T, M_S].
    delta: the padded mass per side, in (0, 1).

  Returns:
    ``(a, b, C)``: marginals ``[..., M_T]``, ``[..., M_S]`` summing to 1 and the cost.
  """
  delta = V.check_float(
    delta, "delta", min_value=0.0, max_value=1.0, min_inclusive=False, max_inclusive=False
  )
  p = V.check_array(p, "p", dtype="float", nonempty=True)
  q = V.check_array(q, "q", dtype="float", nonempty=True)
  p_mask = V.check_array(p_mask, "p_mask", shape=p.shape, dtype="bool")
  q_mask = V.check_array(q_mask, "q_mask", shape=q.shape, dtype="bool")
  cost = V.check_array(cost, "cost", dtype="float", shape=p.shape + q.shape[-1:])

  def side(x, m):
    x = jnp.where(m, x, 0.0)
    tot = x.sum(-1, keepdims=True)
    n_pad = jnp.maximum((~m).sum(-1, keepdims=True), 1)
    return jnp.where(m, (1 - delta) * x / jnp.where(tot > 0, tot, 1.0), delta / n_pad)

  pad = (~p_mask)[..., :, None] | (~q_mask)[..., None, :]
  both = (~p_mask)[..., :, None] & (~q_mask)[..., None, :]
  c = jnp.where(pad, jnp.where(both, 0.0, 1.0), cost)
  return side(p, p_mask), side(q, q_mask), c


def entropic_ot_cost(
  a,
  b,
  cost,
  *,
  epsilon: float = 0.05,
  iters: int = 30,
  unroll: bool = True,
  value: str = "transport",
):
  r"""Entropic OT between ``a`` and ``b`` under ``cost``, batched over leading axes (ott-jax).

  Solves :math:`P_\varepsilon = \arg\min_{P \in U(a, b)} \langle C, P\rangle - \varepsilon H(P)`
  with a fixed number of log-domain Sinkhorn iterations (ott's ``Sinkhorn`` with
  ``min_iterations = max_iterations``: a ``lax.scan``, no convergence test).

  ``value='transport'`` returns :math:`\langle C, P_\varepsilon\rangle`, which is 0 when ``a``
  and ``b`` coincide on a zero-cost diagonal (the SOLA loss; reconstruction: the paper's exact
  objective is not public). ``value='regularized'`` returns ott's ``reg_ot_cost``, which adds
  the entropic term (:math:`\varepsilon\,\mathrm{KL}(P\,\|\,ab^\top)`).

  Args:
    a: float [..., n], non-negative, summing to 1 (use :func:`pad_with_dummy_bucket`: no zeros).
    b: float [..., m].
    cost: float [..., n, m].
    epsilon: entropic regularisation on the cost's scale (> 0).
    iters: Sinkhorn iterations (>= 1).
    unroll: differentiate by unrolling the iterations (True) or by ott's implicit
      differentiation (False; Danskin's theorem for the regularized value).
    value: ``'transport'`` or ``'regularized'``.

  Returns:
    float [...], one value per problem.

  Under jit: negative masses, masses not summing to 1, or a non-finite cost make the result NaN
  (eagerly: ValueError).
  """
  geometry, linear_problem, sinkhorn = _require_ott()
  epsilon = V.check_float(epsilon, "epsilon", min_value=0.0, min_inclusive=False)
  iters = V.check_int(iters, "iters", min_value=1)
  if value not in _VALUES:
    raise ValueError(f"value must be one of {list(_VALUES)}, got {value!r}")
  a = V.check_array(a, "a", dtype="float", nonempty=True)
  b = V.check_array(b, "b", dtype="float", nonempty=True)
  cost = V.check_array(cost, "cost", dtype="float")
  if a.shape[:-1] != b.shape[:-1] or cost.shape != a.shape + b.shape[-1:]:
    raise ValueError(
      f"cost must have shape a.shape + b.shape[-1:] = {a.shape + b.shape[-1:]} with a and b "
      f"sharing leading axes, got a {a.shape}, b {b.shape}, cost {cost.shape}"
    )
  ok = V.debug_check_values(
    (a >= 0).all()
    & (b >= 0).all()
    & jnp.isfinite(cost).all()
    & (jnp.abs(a.sum(-1) - 1) < 1e-3).all()
    & (jnp.abs(b.sum(-1) - 1) < 1e-3).all(),
    "a and b must be non-negative masses summing to 1 and cost must be finite",
  )
  # ott runs the iterations in blocks of ``inner_iterations`` (default 10) and only whole
  # blocks: with the default, iters < 10 would run no iteration at all (the plan of the zero
  # potentials, constant in a and b) and iters = 25 would run 20. The largest divisor of iters
  # up to 10 runs exactly ``iters`` (and keeps blocks of 10 when iters is a multiple of 10).
  inner = max(d for d in range(1, min(10, iters) + 1) if iters % d == 0)
  kw = dict(min_iterations=iters, max_iterations=iters, inner_iterations=inner)
  if unroll:
    solver = sinkhorn.Sinkhorn(**kw, implicit_diff=None)
  else:
    from ott.solvers.linear import implicit_differentiation

    solver = sinkhorn.Sinkhorn(**kw, implicit_diff=implicit_differentiation.ImplicitDiff())

  def one(ai, bi, ci):
    geom = geometry.Geometry(cost_matrix=ci, epsilon=epsilon)
    out = solver(linear_problem.LinearProblem(geom, a=ai, b=bi))
    if value == "regularized":
      return out.reg_ot_cost
    if value == "plan":
      return out.matrix
    return jnp.sum(out.matrix * ci)

  lead = a.shape[:-1]
  fn = one
  for _ in lead:
    fn = jax.vmap(fn)
  return V.poison_floats(fn(a, b, cost), ok)


def entropic_ot_plan(a, b, cost, *, epsilon: float = 0.05, iters: int = 30):
  """The Sinkhorn plan ``P_eps`` [..., n, m] of :func:`entropic_ot_cost` (same arguments)."""
  return entropic_ot_cost(a, b, cost, epsilon=epsilon, iters=iters, value="plan")
