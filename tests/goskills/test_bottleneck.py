"""Greedy budgeted coverage (eq. 6) against a set-based greedy and brute force;
coverage."""

import jax
import numpy as np
import pytest

import jaxpapers.goskills as S
from tests.goskills import reference as ref


def _instance(seed, p=9, n=20, r=7):
  rng = np.random.default_rng(seed)
  req = rng.random((n, r)) < 0.3
  cands = rng.choice(n, p, replace=False)
  roles = rng.integers(-1, 3, p)
  mask = rng.random(p) < 0.85
  vis = rng.random(r) < 0.6
  cost = rng.integers(20, 200, n)
  return cands, roles, mask, req, vis, cost


@pytest.mark.parametrize("seed", range(6))
def test_greedy_matches_set_reference(seed):
  cands, roles, mask, req, vis, cost = _instance(seed)
  got = np.asarray(
    S.budgeted_coverage(cands, roles, mask, req, vis, budget=4, mu=0.1)
  )
  assert got.tolist() == ref.greedy(cands, roles, mask, req, vis, 4, mu=0.1)
  got_k = S.budgeted_coverage(
    cands, roles, mask, req, vis, budget=6, cost=cost, token_budget=300
  )
  want_k = ref.greedy(
    cands, roles, mask, req, vis, 6, cost=cost, token_budget=300
  )
  assert np.asarray(got_k).tolist() == want_k
  assert cost[cands[[i for i in want_k if i >= 0]]].sum() <= 300


def test_forced_start_and_nested_budgets():
  req = np.eye(4, dtype=bool)
  vis = np.ones(4, bool)
  cands = np.array([0, 1, 2, 3])
  roles = np.array([1, 1, 0, 2])  # the START covers as much as the others
  picks = np.asarray(
    S.budgeted_coverage(cands, roles, np.ones(4, bool), req, vis, budget=3)
  )
  assert picks[0] == 2
  free = S.budgeted_coverage(
    cands, roles, np.ones(4, bool), req, vis, budget=3, force_start=False
  )
  assert np.asarray(free)[0] == 2  # START also has the highest priority
  roles2 = np.array([1, 1, 0, 2])
  req2 = req.copy()
  # a SUPPORT covering two requirements beats START unforced
  req2[0] = [1, 1, 0, 0]
  free2 = np.asarray(
    S.budgeted_coverage(
      cands, roles2, np.ones(4, bool), req2, vis, budget=3, force_start=False
    )
  )
  forced2 = np.asarray(
    S.budgeted_coverage(cands, roles2, np.ones(4, bool), req2, vis, budget=3)
  )
  assert free2[0] == 0 and forced2[0] == 2
  big = np.asarray(
    S.budgeted_coverage(cands, roles2, np.ones(4, bool), req2, vis, budget=4)
  )
  # greedy picks are nested in the budget
  np.testing.assert_array_equal(big[:3], forced2)


@pytest.mark.parametrize("seed", range(5))
def test_greedy_keeps_1_minus_1_over_e_of_optimum(seed):
  cands, _, _, req, vis, _ = _instance(seed + 10, p=8)
  roles = np.full(8, -1)
  picks = np.asarray(
    S.budgeted_coverage(
      cands,
      roles,
      np.ones(8, bool),
      req,
      vis,
      budget=3,
      mu=0.0,
      force_start=False,
    )
  )
  got = (
    (req[cands[picks[picks >= 0]]].any(0) & vis).sum()
    if (picks >= 0).any()
    else 0
  )
  assert got >= (1 - 1 / np.e) * ref.best_coverage(cands, req, vis, 3) - 1e-9


def test_budgeted_coverage_vmaps():
  insts = [_instance(s) for s in range(3)]
  req = insts[0][3]
  stack = [np.stack([x[i] for x in insts]) for i in (0, 1, 2, 4)]
  f = jax.vmap(
    lambda c, r, m, v: S.budgeted_coverage(c, r, m, req, v, budget=4)
  )
  got = np.asarray(f(*stack))
  for i, (c, r, m, _, v, _) in enumerate(insts):
    assert got[i].tolist() == ref.greedy(c, r, m, req, v, 4)


def test_visible_requirement_coverage():
  req = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], bool)
  sel = np.array([[0, -1], [3, 2], [1, 1]])
  vis = np.array([[1, 1, 0], [1, 0, 1], [0, 0, 0]], bool)
  got = np.asarray(S.visible_requirement_coverage(sel, req, vis))
  np.testing.assert_allclose(got, [0.5, 1.0, 1.0])
  assert np.asarray(S.role_priority(np.array([0, 1, 2, 3, -1]))).tolist() == [
    3,
    2,
    1,
    0,
    0,
  ]
