"""Entropic optimal transport between small discrete distributions (ott-jax
Sinkhorn)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

__all__ = ["pad_with_dummy_bucket", "entropic_ot_cost", "entropic_ot_plan"]

_VALUES = ("transport", "regularized", "plan")


def _implicit_transport(potentials, epsilon):
  r"""``(a, b, C) -> <C, P>`` with P the Sinkhorn plan, differentiated
  implicitly.

  ``potentials(a, b, C)`` returns the dual potentials (f, g); the plan is
  :math:`P = \exp((f \oplus g - C)/\varepsilon)` and the value :math:`V = \langle C, P\rangle`.
  At the solution the first-order conditions :math:`P\mathbf 1 = a`, :math:`P^\top\mathbf 1 = b`
  hold; their Jacobian in (f, g) is :math:`H/\varepsilon` with
  :math:`H = [\mathrm{diag}(r), P; P^\top, \mathrm{diag}(s)]` (r, s the plan's marginals), positive
  semi-definite with kernel (1, -1) (shifting f up and g down leaves P unchanged). With
  :math:`\lambda = H^{+} [(P \circ C)\mathbf 1; (P \circ C)^\top \mathbf 1]` the derivatives of V
  at the solution are :math:`\partial V/\partial a = \lambda_f`, :math:`\partial V/\partial b =
  \lambda_g` and :math:`\partial V/\partial C = P + P \circ (\lambda_f \oplus \lambda_g - C)/\varepsilon`.
  The system is solved densely after the symmetric scaling :math:`D^{-1/2} H D^{-1/2}`,
  :math:`D = \mathrm{diag}(r, s)` (unit diagonal, eigenvalues in [0, 2], whatever the 1e-6 dummy
  masses), plus the rank-one term :math:`v v^\top` on its unit kernel vector
  :math:`v \propto (\sqrt r, -\sqrt s)`: the right-hand side is orthogonal to the kernel, so the
  term changes nothing but the solvability. The potentials come from a finite number of
  iterations, so this is the converged problem's derivative evaluated at the last iterate.
  """

  def plan(a, b, c):
    f, g = potentials(a, b, c)
    return jnp.exp((f[:, None] + g[None, :] - c) / epsilon)

  @jax.custom_vjp
  def value(a, b, c):
    return jnp.sum(plan(a, b, c) * c)

  def fwd(a, b, c):
    p = plan(a, b, c)
    return jnp.sum(p * c), (p, c)

  def bwd(res, gbar):
    p, c = res
    n = p.shape[0]
    r, s = p.sum(1), p.sum(0)
    pc = p * c
    d = jnp.sqrt(jnp.concatenate([r, s]))
    h = jnp.block([[jnp.diag(r), p], [p.T, jnp.diag(s)]]) / (
      d[:, None] * d[None, :]
    )
    v = d * jnp.concatenate([jnp.ones_like(r), -jnp.ones_like(s)])
    v = v / jnp.linalg.norm(v)
    y = jnp.linalg.solve(
      h + v[:, None] * v[None, :], jnp.concatenate([pc.sum(1), pc.sum(0)]) / d
    )
    lam = y / d
    lf, lg = lam[:n], lam[n:]
    dc = p + p * (lf[:, None] + lg[None, :] - c) / epsilon
    return gbar * lf, gbar * lg, gbar * dc

  value.defvjp(fwd, bwd)
  return value


def _require_ott():
  try:
    from ott.geometry import geometry
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn
  except ImportError as e:  # pragma: no cover - the sola extra carries it
    raise ImportError(
      "jaxpapers.sola needs ott-jax: pip install 'jaxpapers[sola]'"
    ) from e
  return geometry, linear_problem, sinkhorn


def pad_with_dummy_bucket(
  p: ArrayLike,
  p_mask: ArrayLike,
  q: ArrayLike,
  q_mask: ArrayLike,
  cost: ArrayLike,
  *,
  delta: float = 1e-6,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Gives padded slots a tiny shared mass so that no marginal entry is zero (no
  NaN gradients).

  Reconstruction (spec §3.4): real entries carry ``(1 - delta) * p / sum(p)``,
  the padded entries of each side share ``delta`` equally; the cost is 0 between
  two padded slots and 1 between a padded and a real slot. Each side needs at
  least one padded slot.

  Args:
    p: float [..., M_T] teacher masses (any non-negative scale; renormalised
      over the mask).
    p_mask: bool [..., M_T], True on real entries.
    q: float [..., M_S] student masses (renormalised over ``q_mask``).
    q_mask: bool [..., M_S], True on real entries.
    cost: float [..., M_T, M_S].
    delta: the padded mass per side, in (0, 1).

  Returns:
    ``(a, b, C)``: marginals ``[..., M_T]``, ``[..., M_S]`` summing to 1 and the
    cost.
  """
  delta = V.check_float(
    delta,
    "delta",
    min_value=0.0,
    max_value=1.0,
    min_inclusive=False,
    max_inclusive=False,
  )
  p = V.check_array(p, "p", dtype="float", nonempty=True)
  q = V.check_array(q, "q", dtype="float", nonempty=True)
  p_mask = V.check_array(p_mask, "p_mask", shape=p.shape, dtype="bool")
  q_mask = V.check_array(q_mask, "q_mask", shape=q.shape, dtype="bool")
  cost = V.check_array(
    cost, "cost", dtype="float", shape=p.shape + q.shape[-1:]
  )

  def side(x, m):
    x = jnp.where(m, x, 0.0)
    tot = x.sum(-1, keepdims=True)
    n_pad = jnp.maximum((~m).sum(-1, keepdims=True), 1)
    return jnp.where(
      m, (1 - delta) * x / jnp.where(tot > 0, tot, 1.0), delta / n_pad
    )

  pad = (~p_mask)[..., :, None] | (~q_mask)[..., None, :]
  both = (~p_mask)[..., :, None] & (~q_mask)[..., None, :]
  c = jnp.where(pad, jnp.where(both, 0.0, 1.0), cost)
  return side(p, p_mask), side(q, q_mask), c


def entropic_ot_cost(
  a: ArrayLike,
  b: ArrayLike,
  cost: ArrayLike,
  *,
  epsilon: float = 0.05,
  iters: int = 30,
  unroll: bool = True,
  value: str = "transport",
) -> jax.Array:
  r"""Entropic OT between ``a`` and ``b`` under ``cost``, batched over leading
  axes (ott-jax).

  Solves :math:`P_\varepsilon = \arg\min_{P \in U(a, b)} \langle C, P\rangle -
  \varepsilon H(P)` with a fixed number of log-domain Sinkhorn iterations (ott's
  ``Sinkhorn`` with ``min_iterations = max_iterations``: a ``lax.scan``, no
  convergence test).

  ``value='transport'`` returns :math:`\langle C, P_\varepsilon\rangle`, which
  is 0 when ``a`` and ``b`` coincide on a zero-cost diagonal (the SOLA loss;
  reconstruction: the paper's exact objective is not public).
  ``value='regularized'`` returns ott's ``reg_ot_cost``, which adds the entropic
  term (:math:`\varepsilon\,\mathrm{KL}(P\,\|\,ab^\top)`).

  Args:
    a: float [..., n], non-negative, summing to 1 (use
      :func:`pad_with_dummy_bucket`: no zeros).
    b: float [..., m].
    cost: float [..., n, m].
    epsilon: entropic regularisation on the cost's scale (> 0).
    iters: Sinkhorn iterations (>= 1).
    unroll: differentiate by unrolling the iterations (True: the exact
      derivative of the ``iters`` iterations) or by implicit differentiation of
      the optimality conditions (False: the derivative at the converged
      solution, evaluated at the final potentials; a symmetric linear solve per
      problem, see the comment in the code; Danskin's theorem for the
      regularized value).
    value: ``'transport'`` or ``'regularized'``.

  Returns:
    float [...], one value per problem.

  Under jit: negative masses, masses not summing to 1, or a non-finite cost make
  the result NaN (eagerly: ValueError).
  """
  geometry, linear_problem, sinkhorn = _require_ott()
  epsilon = V.check_float(
    epsilon, "epsilon", min_value=0.0, min_inclusive=False
  )
  iters = V.check_int(iters, "iters", min_value=1)
  if value not in _VALUES:
    raise ValueError(f"value must be one of {list(_VALUES)}, got {value!r}")
  a = V.check_array(a, "a", dtype="float", nonempty=True)
  b = V.check_array(b, "b", dtype="float", nonempty=True)
  cost = V.check_array(cost, "cost", dtype="float")
  if a.shape[:-1] != b.shape[:-1] or cost.shape != a.shape + b.shape[-1:]:
    raise ValueError(
      "cost must have shape a.shape + b.shape[-1:] = "
      f"{a.shape + b.shape[-1:]} with a and b sharing leading axes, "
      f"got a {a.shape}, b {b.shape}, cost {cost.shape}"
    )
  ok = V.debug_check_values(
    (a >= 0).all()
    & (b >= 0).all()
    & jnp.isfinite(cost).all()
    & (jnp.abs(a.sum(-1) - 1) < 1e-3).all()
    & (jnp.abs(b.sum(-1) - 1) < 1e-3).all(),
    "a and b must be non-negative masses summing to 1 and cost must be finite",
  )
  # ott runs the iterations in blocks of ``inner_iterations`` (default 10) and
  # only whole blocks: with the default, iters < 10 would run no iteration at
  # all (the plan of the zero potentials, constant in a and b) and iters = 25
  # would run 20. The largest divisor of iters up to 10 runs exactly ``iters``
  # (and keeps blocks of 10 when iters is a multiple of 10).
  inner = max(d for d in range(1, min(10, iters) + 1) if iters % d == 0)
  if unroll:
    # min_iterations < max_iterations with a threshold no error can reach:
    # exactly ``iters`` iterations, as with min = max, but through ott's
    # while-loop path. With min = max (``force_scan``) ott 0.6.0's backward pass
    # of the checkpointed loop restarts its block counter at 0 and reads the
    # checkpoints in the wrong order (the initial potentials, then never-written
    # zeros, then the last ones), so the unrolled gradient was not the
    # derivative of the iterations: 15-20% off a float64 finite difference on
    # small problems (tested).
    solver = sinkhorn.Sinkhorn(
      min_iterations=0,
      max_iterations=iters,
      inner_iterations=inner,
      threshold=-1.0,
      implicit_diff=None,
    )
  elif value == "transport":
    # Implicit differentiation of <C, P> by a dense solve (see
    # ``_implicit_transport``); ott's own implicit system
    # (eps*log-preconditioned, non-symmetric, lineax NormalCG, no ridge)
    # returned non-finite output on float32 problems with the 1e-6 dummy masses,
    # and its symmetric CG variant still missed its tolerance on some.
    solver = sinkhorn.Sinkhorn(
      min_iterations=iters,
      max_iterations=iters,
      inner_iterations=inner,
      implicit_diff=None,
    )

    def potentials(ai, bi, ci):
      geom = geometry.Geometry(cost_matrix=ci, epsilon=epsilon)
      out = solver(linear_problem.LinearProblem(geom, a=ai, b=bi))
      return out.f, out.g

    fn = _implicit_transport(potentials, epsilon)
    for _ in a.shape[:-1]:
      fn = jax.vmap(fn)
    return V.poison_floats(fn(a, b, cost), ok)
  else:
    from ott.solvers.linear import implicit_differentiation

    solver = sinkhorn.Sinkhorn(
      min_iterations=iters,
      max_iterations=iters,
      inner_iterations=inner,
      implicit_diff=implicit_differentiation.ImplicitDiff(),
    )

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


def entropic_ot_plan(
  a: ArrayLike,
  b: ArrayLike,
  cost: ArrayLike,
  *,
  epsilon: float = 0.05,
  iters: int = 30,
) -> jax.Array:
  """The Sinkhorn plan ``P_eps`` of :func:`entropic_ot_cost`.

  Args:
    a: float [..., n] marginal, non-negative, summing to 1 (no zeros).
    b: float [..., m] marginal.
    cost: float [..., n, m].
    epsilon: entropic regularisation (> 0).
    iters: Sinkhorn iterations (>= 1).

  Returns:
    float [..., n, m], the entropic plan after ``iters`` Sinkhorn iterations.
  """
  return entropic_ot_cost(
    a, b, cost, epsilon=epsilon, iters=iters, value=("plan")
  )
