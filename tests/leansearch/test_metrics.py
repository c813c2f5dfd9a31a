"""Metrics and fusion against float64 transcriptions of the reference's
definitions."""

import math

import numpy as np
import pytest

import jaxpapers.leansearch as L


def _ref_score_one(retrieved, groups, k):
  """The reference's per-query group recall and Covered@k, over names
  (float64)."""
  seen = set(retrieved[:k])
  orig = [g for g in groups if g["kind"] == "original"]
  alt = [g for g in groups if g["kind"] == "alternative"]
  hit = lambda g: any(d in seen for d in g["docs"])
  n_hit = sum(map(hit, orig)) + sum(map(hit, alt))
  main_done = all(map(hit, orig)) if orig else True
  alt_all = len(alt) > 0 and all(map(hit, alt))
  return n_hit / max(len(groups), 1), float(main_done or alt_all)


def _pack(groups_per_query, G=4, A=3):
  Q = len(groups_per_query)
  alias = np.full((Q, G, A), -1, np.int32)
  mask = np.zeros((Q, G), bool)
  alt = np.zeros((Q, G), bool)
  for q, gs in enumerate(groups_per_query):
    for g, grp in enumerate(gs):
      alias[q, g, : len(grp["docs"])] = grp["docs"]
      mask[q, g] = True
      alt[q, g] = grp["kind"] == "alternative"
  return alias, mask, alt


def test_single_query_hand_cases():
  pos = np.array([1, 2, 3, 10, 11, 0], np.int32)
  want = np.array([1.0, 1 / math.log2(3), 0.5, 1 / math.log2(11), 0.0, 0.0])
  np.testing.assert_allclose(L.ndcg_single(pos, 10), want, rtol=1e-6)
  np.testing.assert_array_equal(L.recall_single(pos, 10), [1, 1, 1, 1, 0, 0])
  # k is inclusive: position k counts, k + 1 does not (off-by-one).
  assert float(L.recall_single(np.array([5], np.int32), 5)[0]) == 1.0
  assert float(L.ndcg_single(np.array([6], np.int32), 5)[0]) == 0.0


def test_target_positions_first_occurrence_and_miss():
  ret = np.array([[4, 2, 9], [1, 1, 3], [7, 8, 5]], np.int32)
  np.testing.assert_array_equal(
    L.target_positions(ret, np.array([9, 1, 0])), [3, 1, 0]
  )


@pytest.mark.parametrize("k", [1, 2, 5])
def test_group_recall_and_covered_match_reference_random(k):
  rng = np.random.default_rng(k)
  groups_per_query, rets = [], []
  for _ in range(40):
    gs = []
    for _ in range(rng.integers(0, 5)):
      docs = list(rng.choice(12, size=rng.integers(1, 4), replace=False))
      gs.append(
        {
          "kind": "alternative" if rng.random() < 0.3 else "original",
          "docs": docs,
        }
      )
    groups_per_query.append(gs)
    rets.append(rng.permutation(12)[:6])
  alias, mask, alt = _pack(groups_per_query)
  ret = np.stack(rets).astype(np.int32)
  rec = np.asarray(L.premise_group_recall(ret, alias, mask, k))
  cov = np.asarray(L.covered_at_k(ret, alias, mask, alt, k))
  for q in range(40):
    r, c = _ref_score_one(list(ret[q]), groups_per_query[q], k)
    assert rec[q] == pytest.approx(r, abs=1e-6)
    assert cov[q] == c


def test_covered_conventions():
  # Query 0: no original groups and an unhit alternative -> covered (reference
  # convention). Query 1: no groups at all -> covered, recall 0. Query 2: one
  # original hit, one missed, the alternative missed -> not covered. Query 3:
  # original missed but every alternative hit -> covered.
  gq = [
    [{"kind": "alternative", "docs": [7]}],
    [],
    [
      {"kind": "original", "docs": [1]},
      {"kind": "original", "docs": [8]},
      {"kind": "alternative", "docs": [6]},
    ],
    [
      {"kind": "original", "docs": [9]},
      {"kind": "alternative", "docs": [3, 1]},
    ],
  ]
  alias, mask, alt = _pack(gq)
  ret = np.tile(np.array([1, 2, 3, 4], np.int32), (4, 1))
  np.testing.assert_array_equal(
    L.covered_at_k(ret, alias, mask, alt, 4), [1, 1, 0, 1]
  )
  np.testing.assert_allclose(
    L.premise_group_recall(ret, alias, mask, 4), [0, 0, 1 / 3, 0.5]
  )


def test_group_hit_through_any_alias_counts_once():
  alias = np.array([[[5, 6, -1], [7, -1, -1]]], np.int32)
  mask = np.ones((1, 2), bool)
  # both aliases of group 0: still one group hit
  ret = np.array([[6, 5, 1]], np.int32)
  assert float(L.premise_group_recall(ret, alias, mask, 3)[0]) == pytest.approx(
    0.5
  )
  # Padding -1 in alias never matches padding -1 in retrieved.
  ret = np.array([[-1, -1, -1]], np.int32)
  assert float(L.premise_group_recall(ret, alias, mask, 3)[0]) == 0.0


def _ref_fusion(lists, n_docs, top_k):
  score = {}
  for lst in lists:
    i = 0
    for d in lst:
      if d < 0:
        continue
      score[d] = score.get(d, 0.0) + 1.0 / math.log2(i + 2)
      i += 1
  order = sorted(score, key=lambda d: (-score[d], d))[:top_k]
  return order, [score[d] for d in order]


def test_discounted_fusion_matches_reference_and_has_no_duplicates():
  rng = np.random.default_rng(0)
  lists = np.stack([rng.choice(30, 8, replace=False) for _ in range(6)]).astype(
    np.int32
  )
  lists[2, 5:] = -1
  ids, sc = L.discounted_fusion(lists, lists >= 0, 30, 12)
  want_ids, want_sc = _ref_fusion(lists.tolist(), 30, 12)
  np.testing.assert_array_equal(np.asarray(ids), want_ids)
  np.testing.assert_allclose(np.asarray(sc), want_sc, rtol=1e-6)
  ids, _ = L.discounted_fusion(lists, lists >= 0, 30, 30)
  ids = np.asarray(ids)
  real = ids[ids >= 0]
  assert (
    len(set(real.tolist())) == len(real) == len(set(lists[lists >= 0].tolist()))
  )
  assert (ids[len(real) :] == -1).all()


def test_fusion_rank_discount_is_log2_i_plus_2():
  # One list [a, b]: a gets 1/log2(2) = 1, b gets 1/log2(3).
  ids, sc = L.discounted_fusion(
    np.array([[3, 1]], np.int32), np.ones((1, 2), bool), 5, 2
  )
  np.testing.assert_array_equal(ids, [3, 1])
  np.testing.assert_allclose(sc, [1.0, 1 / math.log2(3)], rtol=1e-6)
