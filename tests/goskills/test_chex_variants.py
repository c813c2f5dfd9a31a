"""Transition matrix, PageRank, scores and the greedy bottleneck, jitted and
eager.

References are the GoS transcriptions and set-based loops of
``tests/goskills/reference.py``. Budgets, step counts and flags are static and
closed over; the graph pytree is traced.
"""

import functools

import chex
import numpy as np
from absl.testing import absltest, parameterized

import jaxpapers.goskills as S
from tests.goskills import reference as ref
from tests.goskills.test_bottleneck import _instance
from tests.goskills.test_graph_ppr import _random_graph


class GraphTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(
    ("self_loop", "self_loop"), ("uniform", "uniform")
  )
  def test_transition_matrix_is_the_gos_matrix(self, dangling):
    # some dangling rows
    g, edges = _random_graph(np.random.default_rng(71), n=10, e=9)
    got = self.variant(
      functools.partial(S.transition_matrix, dangling=dangling)
    )(g)
    chex.assert_shape(got, (10, 10))
    chex.assert_type(got, np.float32)
    want = ref.transition(10, edges, dangling=dangling).astype(np.float32)
    chex.assert_trees_all_close(got, want, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_personalized_pagerank_single_and_batched(self):
    rng = np.random.default_rng(72)
    g, edges = _random_graph(rng, n=10, e=25)
    t = np.asarray(S.transition_matrix(g))
    seeds = np.zeros((3, 10), np.float32)
    seeds[0, [1, 4]] = [1.0, 0.5]
    seeds[1, 0] = 2.0  # unnormalised: the function normalises
    seeds[2] = rng.random(10)
    fn = self.variant(
      functools.partial(S.personalized_pagerank, teleport=0.3, iters=40)
    )
    got = fn(t, seeds)
    chex.assert_shape(got, (3, 10))
    want = np.stack(
      [ref.ppr(ref.transition(10, edges), s, d=0.3, iters=40) for s in seeds]
    )
    chex.assert_trees_all_close(got, want.astype(np.float32), atol=2e-6)
    chex.assert_trees_all_close(
      fn(t, seeds[2]), want[2].astype(np.float32), atol=2e-6
    )


class ScoresTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_bm25_and_hybrid_scores(self):
    rng = np.random.default_rng(73)
    docs = (rng.integers(0, 3, (6, 8)) * (rng.random((6, 8)) < 0.5)).astype(
      np.float32
    )
    q = rng.integers(0, 2, (3, 8)).astype(np.float32)
    bm = self.variant(functools.partial(S.bm25_scores, k1=0.9, b=0.3))(q, docs)
    chex.assert_shape(bm, (3, 6))
    want = ref.bm25(q, docs, k1=0.9, b=0.3).astype(np.float32)
    chex.assert_trees_all_close(bm, want, rtol=1e-5, atol=1e-6)

    qe, se = rng.normal(size=(3, 4)), rng.normal(size=(6, 4))
    got = self.variant(functools.partial(S.hybrid_scores, alpha=0.3))(
      qe.astype(np.float32), se.astype(np.float32), want
    )
    cos = (qe / np.linalg.norm(qe, axis=1, keepdims=True)) @ (
      se / np.linalg.norm(se, axis=1, keepdims=True)
    ).T
    lo, hi = want.min(1, keepdims=True), want.max(1, keepdims=True)
    hyb = 0.3 * cos + 0.7 * (want - lo) / (hi - lo)
    chex.assert_trees_all_close(got, hyb.astype(np.float32), atol=1e-6)


class BottleneckTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_budgeted_coverage_is_the_set_greedy(self):
    cands, roles, mask, req, vis, cost = _instance(74)
    fn = functools.partial(S.budgeted_coverage, budget=4, mu=0.1)
    picks = self.variant(fn)(cands, roles, mask, req, vis)
    chex.assert_shape(picks, (4,))
    chex.assert_type(picks, np.int32)
    chex.assert_trees_all_equal(
      picks, np.int32(ref.greedy(cands, roles, mask, req, vis, 4))
    )
    fn = functools.partial(S.budgeted_coverage, budget=6, token_budget=300)
    picks = self.variant(fn)(cands, roles, mask, req, vis, cost=cost)
    want = ref.greedy(
      cands, roles, mask, req, vis, 6, cost=cost, token_budget=300
    )
    chex.assert_trees_all_equal(picks, np.int32(want))

  @chex.variants(with_jit=True, without_jit=True)
  def test_visible_coverage_and_role_priority(self):
    rng = np.random.default_rng(75)
    req = rng.random((8, 5)) < 0.4
    sel = np.array([[0, 3, -1], [5, -1, -1], [7, 2, 1]], np.int32)
    vis = rng.random((3, 5)) < 0.6
    vis[1] = False  # no visible requirement: coverage 1
    got = self.variant(S.visible_requirement_coverage)(sel, req, vis)
    want = []
    for s, v in zip(sel, vis):
      covered = set().union(*(set(np.nonzero(req[i])[0]) for i in s if i >= 0))
      visible = set(np.nonzero(v)[0])
      want.append(len(covered & visible) / len(visible) if visible else 1.0)
    chex.assert_shape(got, (3,))
    chex.assert_trees_all_close(got, np.float32(want))
    roles = np.array([[0, 1], [2, 3], [-1, 0]], np.int32)
    prio = self.variant(S.role_priority)(roles)
    chex.assert_trees_all_close(prio, np.float32([[3, 2], [1, 0], [0, 3]]))


if __name__ == "__main__":
  absltest.main()
