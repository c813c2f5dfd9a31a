"""Transition matrix (GoS eqs. 1-2) and personalized PageRank (eq. 3) against
GoS transcribed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.goskills as S
from tests.goskills import reference as ref


def _random_graph(rng, n=16, e=40, keep=0.8):
  """One shape for every test here (n, e fixed), so they share compiled
  programs."""
  src = rng.integers(0, n, e)
  dst = rng.integers(0, n, e)
  typ = rng.integers(0, 6, e)
  w = rng.uniform(0.1, 2.0, e)
  mask = rng.random(e) < keep
  req = rng.random((n, 4)) < 0.3
  g = S.skill_graph(
    src, dst, typ, req, np.zeros(n, int), np.full(n, 50), weight=w, emask=mask
  )
  edges = [
    (int(s), int(d), int(t), float(x))
    for s, d, t, x, m in zip(src, dst, typ, w, mask)
    if m
  ]
  return g, edges


@pytest.mark.parametrize("dangling", ["self_loop", "uniform"])
def test_transition_matrix_matches_gos(dangling):
  rng = np.random.default_rng(0)
  # sparse: some rows are empty (dangling)
  g, edges = _random_graph(rng, keep=0.25)
  want = ref.transition(16, edges, dangling=dangling)
  got = np.asarray(S.transition_matrix(g, dangling=dangling))
  np.testing.assert_allclose(got, want, atol=1e-6)
  w64 = ref.transition(16, edges, normalize=False)
  # rows with no out-weight: the case `dangling` decides
  assert (w64.sum(1) == 0).any()
  np.testing.assert_allclose(want.sum(1), 1.0, rtol=1e-12)
  np.testing.assert_allclose(
    np.asarray(S.transition_weights(g)), w64, rtol=1e-6
  )


def test_reverse_factor_direction_and_unknown_types():
  # One dependency edge 0 -> 1 (reverse 1.0), one workflow 1 -> 2 (reverse 0.5),
  # one validates 3 -> 2 (reverse 0: GoS has no factor for it).
  g = S.skill_graph(
    [0, 1, 3],
    [1, 2, 2],
    [0, 1, 4],
    np.zeros((4, 1), bool),
    [0] * 4,
    [1] * 4,
    weight=[2.0, 1.0, 1.0],
  )
  w = np.asarray(S.transition_weights(g))
  assert w[0, 1] == 2.0 and w[1, 0] == 2.0
  assert w[1, 2] == 1.0 and w[2, 1] == 0.5
  assert w[3, 2] == 1.0 and w[2, 3] == 0.0


def test_typed_adjacency_matches_edges():
  rng = np.random.default_rng(1)
  g, edges = _random_graph(rng)
  a = np.asarray(S.typed_adjacency(g))
  want = np.zeros_like(a)
  for s, d, t, _ in edges:
    want[t, s, d] = True
  np.testing.assert_array_equal(a, want)


def test_ppr_matches_gos_loop_single_and_batched():
  rng = np.random.default_rng(2)
  g, edges = _random_graph(rng)
  t64 = ref.transition(16, edges)
  seeds = np.zeros((3, 16))
  seeds[0, [3, 5, 7]] = [1.0, 0.5, 1 / 3]
  seeds[1, 0] = 1.0
  seeds[2, :] = rng.random(16)
  t = S.transition_matrix(g)
  batched = np.asarray(S.personalized_pagerank(t, seeds))
  for i in range(3):
    want = ref.ppr(t64, seeds[i])
    np.testing.assert_allclose(batched[i], want, atol=2e-6)
    single = np.asarray(S.personalized_pagerank(t, seeds[i]))
    np.testing.assert_allclose(single, batched[i], atol=1e-7)
  # Early stop: with iters=1 the result is one update of p, renormalised.
  one = np.asarray(S.personalized_pagerank(t, seeds[1], iters=1))
  np.testing.assert_allclose(one, ref.ppr(t64, seeds[1], iters=1), atol=1e-6)


def test_ppr_fixed_point_closed_form():
  t = jnp.asarray([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.0, 0.0, 1.0]])
  p = np.array([1.0, 0.0, 0.0])
  got = np.asarray(S.personalized_pagerank(t, p, tol=0.0, iters=400))
  tt = np.asarray(t, float)
  want = 0.2 * np.linalg.solve(np.eye(3) - 0.8 * tt.T, p)
  np.testing.assert_allclose(got, want / want.sum(), atol=1e-6)


def test_ppr_zero_seed_and_rank_weights():
  t = jnp.eye(3)
  # the program above
  zero = S.personalized_pagerank(t, np.zeros(3), tol=0.0, iters=400)
  np.testing.assert_array_equal(np.asarray(zero), 0.0)
  w = np.asarray(S.rank_seed_weights(3))
  np.testing.assert_allclose(
    w, np.array([1, 1 / 2, 1 / 3]) / (11 / 6), rtol=1e-6
  )


def test_ppr_does_not_recompile():
  f = jax.jit(S.personalized_pagerank)
  t = jnp.eye(4)
  f(t, jnp.ones(4))
  n0 = f._cache_size()
  f(t * 1.0, jnp.arange(4.0))
  assert f._cache_size() == n0
