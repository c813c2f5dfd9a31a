"""The bottleneck: a bounded set of atomic payloads by greedy budgeted coverage.

Given candidate skills ``C`` with roles, choose ``X ⊆ C`` (reconstruction,
grounded in the abstract's "bottlenecks the selected group plan into a bounded
set of atomic payloads")::

    f(X) = |(∪_{s in X} Req(s)) ∩ V|  +  mu * sum_{s in X} prio(role(s))               (6)
    prio: START 3 > SUPPORT 2 > CHECK 1 > none 0

subject to ``|X| <= B`` (or ``sum_{s in X} c_s <= token_budget``). Greedy adds
the candidate with the largest marginal gain (gain per token under a token
budget), ties to the lowest candidate position, and stops when no candidate adds
anything. The coverage term is monotone submodular and the priority term
modular, so the cardinality greedy keeps at least ``(1 - 1/e)`` of the optimum
of (6) (tested by enumeration). With ``force_start`` the first pick is
restricted to START candidates (exactly one START in the contract). Greedy picks
for budget ``B`` are the first ``B`` picks for any larger budget (nested), so
one call with the largest budget serves every smaller one.

Bad input: shapes, dtypes and static options raise at trace time; values (ids in
``[0, n)``, roles in -1..3, non-negative costs) raise eagerly and give -1 picks
/ NaN coverage under jit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

ROLES = ("START", "SUPPORT", "CHECK", "AVOID")
START, SUPPORT, CHECK, AVOID = range(4)
NO_ROLE = -1
PRIORITY = (3.0, 2.0, 1.0, 0.0)  # START, SUPPORT, CHECK, AVOID; no role: 0


def role_priority(roles: jax.Array) -> jax.Array:
  """prio(role) of eq. (6): START 3, SUPPORT 2, CHECK 1, AVOID and no role (-1)
  0.

  Args:
    roles: integer array of roles (any shape).

  Returns:
    float32 priorities, ``roles``-shaped.
  """
  roles = V.check_array(roles, "roles", dtype="int")
  # index -1 -> last entry (no role)
  table = jnp.asarray(PRIORITY + (0.0,), jnp.float32)
  return table[jnp.where(roles < 0, 4, jnp.clip(roles, 0, 3))]


def budgeted_coverage(
  cands: ArrayLike,
  roles: ArrayLike,
  cand_mask: ArrayLike,
  req: ArrayLike,
  visible: ArrayLike,
  *,
  budget: int,
  mu: float = 0.1,
  cost: ArrayLike | None = None,
  token_budget: int | None = None,
  force_start: bool = True,
) -> jax.Array:
  """Greedy maximisation of eq. (6) for one candidate set (``jax.vmap`` it over
  tasks).

  Args:
    cands: ``[P]`` int skill ids of the candidates (entries under ``~cand_mask``
      ignored).
    roles: ``[P]`` int roles (:data:`ROLES` index, or -1 for none).
    cand_mask: ``[P]`` bool, which candidates may be chosen.
    req: ``[n, R]`` bool requirement matrix of the library.
    visible: ``[R]`` bool visible requirements ``V`` of the task.
    budget: the maximum number of picks ``B`` (static, >= 1).
    mu: weight of the role priority (>= 0).
    cost: ``[n]`` payload tokens, needed with ``token_budget``.
    token_budget: if set, a knapsack budget on ``sum c_s`` (greedy by gain per
      token, skipping candidates that no longer fit); ``budget`` still caps the
      count.
    force_start: restrict the first pick to START candidates when any is
      available.

  Returns:
    ``[budget]`` int32 candidate *positions* into ``cands`` in pick order, -1
    padded.

  Under jit: out-of-range ids or roles make every pick -1.
  """
  cands = V.check_array(cands, "cands", ndim=1, dtype="int")
  p = cands.shape[0]
  roles = V.check_array(roles, "roles", shape=(p,), dtype="int")
  cand_mask = V.check_array(cand_mask, "cand_mask", shape=(p,), dtype="bool")
  req = V.check_array(req, "req", ndim=2, dtype="intbool")
  n, r = req.shape
  visible = V.check_array(visible, "visible", shape=(r,), dtype="intbool")
  budget = V.check_int(budget, "budget", min_value=1)
  mu = V.check_float(mu, "mu", min_value=0.0)
  if not isinstance(force_start, bool):
    raise TypeError(f"force_start must be a bool, got {force_start!r}")
  if token_budget is not None:
    token_budget = V.check_int(token_budget, "token_budget", min_value=1)
    if cost is None:
      raise ValueError("token_budget needs cost, the [n] payload tokens")
  if cost is not None:
    cost = V.check_array(cost, "cost", shape=(n,), dtype="real")
  picks, flags = _greedy(
    cands,
    roles,
    cand_mask,
    req.astype(bool),
    visible.astype(bool),
    None if cost is None else cost.astype(jnp.float32),
    budget=budget,
    mu=mu,
    token_budget=token_budget,
    force_start=force_start,
  )
  ok = V.check_values(flags[0], f"cands must lie in [0, n={n})")
  ok = ok & V.check_values(flags[1], "roles must be in -1..3")
  ok = ok & V.check_values(flags[2], "cost must be finite and >= 0")
  return V.poison(picks, ok)


@functools.partial(
  jax.jit, static_argnames=("budget", "mu", "token_budget", "force_start")
)
def _greedy(
  cands,
  roles,
  cand_mask,
  req,
  visible,
  cost,
  *,
  budget,
  mu,
  token_budget,
  force_start,
):
  n, r = req.shape
  p = cands.shape[0]
  flags = (
    (~cand_mask | ((cands >= 0) & (cands < n))).all(),
    ((roles >= -1) & (roles <= 3)).all(),
    jnp.bool_(True)
    if cost is None
    else (jnp.isfinite(cost) & (cost >= 0)).all(),
  )
  ids = jnp.clip(cands, 0, n - 1)
  creq = req[ids] & visible[None, :]  # [P, R]
  bonus = mu * role_priority(roles)
  ccost = None if cost is None else cost[ids]
  is_start = roles == START

  def step(k, c):
    covered, chosen, spent, picks = c
    gain = (creq & ~covered[None, :]).sum(-1).astype(jnp.float32) + bonus
    elig = cand_mask & ~chosen & (gain > 0)
    value = gain
    if token_budget is not None:
      # budgeted_coverage requires cost with token_budget
      assert ccost is not None
      elig = elig & (spent + ccost <= token_budget)
      value = gain / jnp.maximum(ccost, 1e-6)
    if force_start:
      only = elig & is_start
      elig = jnp.where((k == 0) & only.any(), only, elig)
    best = jnp.argmax(jnp.where(elig, value, -jnp.inf))
    any_ = elig.any()
    pick = jnp.where(any_, best, -1)
    covered = jnp.where(any_, covered | creq[best], covered)
    chosen = chosen.at[best].set(chosen[best] | any_)
    if ccost is not None:
      spent = spent + jnp.where(any_, ccost[best], 0.0)
    return covered, chosen, spent, picks.at[k].set(pick)

  init = (
    jnp.zeros((r,), bool),
    jnp.zeros((p,), bool),
    jnp.float32(0.0),
    jnp.full((budget,), -1, jnp.int32),
  )
  return jax.lax.fori_loop(0, budget, step, init)[3], flags


def visible_requirement_coverage(
  selected: ArrayLike, req: ArrayLike, visible: ArrayLike
) -> jax.Array:
  """Visible-requirement coverage ``|(∪_{s in X} Req(s)) ∩ V| / |V|``.

  Args:
    selected: ``[..., B]`` int skill ids, -1 for an empty slot.
    req: ``[n, R]`` bool requirement matrix.
    visible: ``[..., R]`` bool visible requirements (same leading axes as
      ``selected``).

  Returns:
    ``[...]`` float32 coverage in [0, 1]; a task with no visible requirement
    scores 1.

  Under jit: ids outside ``[-1, n)`` make the output NaN.
  """
  sel = V.check_array(selected, "selected", ndim=range(1, 8), dtype="int")
  req = V.check_array(req, "req", ndim=2, dtype="intbool")
  n, r = req.shape
  vis = V.check_array(visible, "visible", dtype="intbool")
  if vis.shape != sel.shape[:-1] + (r,):
    raise ValueError(
      f"visible must have shape {sel.shape[:-1] + (r,)} (selected's leading "
      f"axes + [R]), got {vis.shape}"
    )
  cov, flag = _coverage(sel, req.astype(bool), vis.astype(bool))
  return V.poison(
    cov, V.check_values(flag, f"selected must lie in [-1, n={n})")
  )


@jax.jit
def _coverage(sel, req, vis):
  n = req.shape[0]
  got = (req[jnp.clip(sel, 0, n - 1)] & (sel >= 0)[..., None]).any(-2)
  nv = vis.sum(-1)
  cov = jnp.where(nv > 0, (got & vis).sum(-1) / jnp.maximum(nv, 1), 1.0).astype(
    jnp.float32
  )
  return cov, ((sel >= -1) & (sel < n)).all()
