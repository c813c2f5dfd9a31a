"""The jittable metrics, fusion, dense top-k and InfoNCE, with and without
``jax.jit``.

Each result is checked against a float64 transcription of the definition (the
group metrics and fusion against the references of ``test_metrics``).
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

import jaxpapers.leansearch as L
from tests.leansearch.test_metrics import _pack, _ref_fusion, _ref_score_one


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


class LeansearchVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_positions_recall_and_ndcg(self):
    retrieved = np.array(
      [[4, 2, 7, 2], [1, 3, 5, -1], [9, 8, 6, 0], [5, 5, 5, 5]], np.int32
    )
    target = np.array([2, 5, 3, 5], np.int32)
    k = 2

    @self.variant
    def metrics(retrieved, target):
      pos = L.target_positions(retrieved, target)
      return pos, L.recall_single(pos, k), L.ndcg_single(pos, k)

    pos, rec, ndcg = metrics(retrieved, target)
    # First occurrence, 1-based, 0 for a miss.
    want_pos = np.array([2, 3, 0, 1])
    want_rec = ((want_pos >= 1) & (want_pos <= k)).astype(np.float64)
    want_ndcg = np.where(
      want_rec > 0, 1.0 / np.log2(np.maximum(want_pos, 1) + 1.0), 0.0
    )
    chex.assert_shape((pos, rec, ndcg), (4,))
    chex.assert_type(pos, jnp.int32)
    chex.assert_type((rec, ndcg), jnp.float32)
    chex.assert_trees_all_equal(pos, want_pos.astype(np.int32))
    chex.assert_trees_all_close((rec, ndcg), (want_rec, want_ndcg), rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_group_recall_and_covered_match_reference(self):
    rng = np.random.default_rng(3)
    groups = [
      [
        {"kind": "original", "docs": [3, 11]},
        {"kind": "alternative", "docs": [5]},
      ],
      [
        {"kind": "original", "docs": [0]},
        {"kind": "original", "docs": [7, 8, 9]},
      ],
      [
        {"kind": "alternative", "docs": [1]},
        {"kind": "alternative", "docs": [2, 4]},
      ],
      [],
      [{"kind": "original", "docs": [6]}],
    ]
    retrieved = np.stack([rng.permutation(12)[:6] for _ in groups]).astype(
      np.int32
    )
    retrieved[1, 2] = 0  # make sure some groups are hit
    alias, mask, alt = _pack(groups)
    k = 4
    fn = self.variant(
      lambda r, a, m, g: (
        L.premise_group_recall(r, a, m, k),
        L.covered_at_k(r, a, m, g, k),
      )
    )
    recall, covered = fn(retrieved, alias, mask, alt)
    want = np.array(
      [_ref_score_one(list(r), g, k) for r, g in zip(retrieved, groups)]
    )
    chex.assert_shape((recall, covered), (len(groups),))
    chex.assert_type((recall, covered), jnp.float32)
    chex.assert_trees_all_close(
      (recall, covered), (want[:, 0], want[:, 1]), rtol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_discounted_fusion_matches_reference(self):
    rng = np.random.default_rng(0)
    n_docs, top_k = 15, 6
    lists = np.stack([rng.permutation(n_docs)[:5] for _ in range(3)]).astype(
      np.int32
    )
    lists[1, 3:] = -1  # a shorter list
    fn = self.variant(
      functools.partial(L.discounted_fusion, n_docs=n_docs, top_k=top_k)
    )
    ids, scores = fn(lists, lists >= 0)
    want_ids, want_scores = _ref_fusion(lists.tolist(), n_docs, top_k)
    chex.assert_shape((ids, scores), (top_k,))
    chex.assert_type(ids, jnp.int32)
    chex.assert_type(scores, jnp.float32)
    chex.assert_trees_all_equal(ids, np.array(want_ids, np.int32))
    chex.assert_trees_all_close(scores, np.array(want_scores), rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_dense_topk_matches_float64(self):
    rng = np.random.default_rng(1)
    q = _unit(rng.normal(size=(5, 4)))
    d = _unit(rng.normal(size=(9, 4)))
    valid = rng.random((5, 9)) > 0.3
    m = 3
    fn = self.variant(functools.partial(L.dense_topk, m=m))
    scores, ids = fn(q.astype(np.float32), d.astype(np.float32), valid=valid)
    s64 = np.where(valid, q @ d.T, -np.inf)
    want_ids = np.argsort(-s64, axis=1, kind="stable")[:, :m]
    chex.assert_shape((scores, ids), (5, m))
    chex.assert_type(ids, jnp.int32)
    chex.assert_trees_all_equal(ids, want_ids.astype(np.int32))
    chex.assert_trees_all_close(
      scores, np.take_along_axis(s64, want_ids, 1), atol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_info_nce_matches_float64(self):
    rng = np.random.default_rng(2)
    q, p, n = (_unit(rng.normal(size=s)) for s in [(4, 3), (4, 3), (2, 3)])
    tau = 0.2
    fn = self.variant(functools.partial(L.info_nce, tau=tau))
    got = fn(q.astype(np.float32), p.astype(np.float32), n.astype(np.float32))
    logits = q @ np.concatenate([p, n]).T / tau
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -np.mean(np.diag(log_softmax))
    chex.assert_shape(got, ())
    chex.assert_type(got, jnp.float32)
    chex.assert_trees_all_close(got, want, rtol=1e-5)
    # Without the extra negatives the denominator has only the batch.
    got_pos = fn(q.astype(np.float32), p.astype(np.float32))
    logits = q @ p.T / tau
    want_pos = -np.mean(
      np.diag(logits - np.log(np.exp(logits).sum(1, keepdims=True)))
    )
    chex.assert_trees_all_close(got_pos, want_pos, rtol=1e-5)
    self.assertGreater(abs(want - want_pos), 1e-3)
