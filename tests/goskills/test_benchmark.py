"""The skill-access benchmark: anchor scores, every method's contract and their
evaluation."""

import hashlib

import numpy as np
import pytest

import jaxpapers.goskills as S
from tests.goskills import reference as ref

# the smoke run's settings (shared compiled programs)
CFG = S.GoSkillsConfig(budget=5)


def _fake_embed(texts, query):
  """float64 vectors from a hash of each text; queries and passages on different
  sides."""
  seed = lambda t: int(
    hashlib.sha256(f"{query}:{t}".encode()).hexdigest()[:8], 16
  )
  return np.stack(
    [np.random.default_rng(seed(t)).normal(size=6) for t in texts]
  )


def test_anchor_scores_against_float64_numpy(small_world):
  lib, tasks, _ = small_world
  got = np.asarray(S.anchor_scores(lib, tasks, _fake_embed, alpha=0.3))
  docs = [f"{t.name} {t.purpose}" for t in lib.texts]
  vocab = S.build_vocab(docs)
  bm = ref.bm25(S.term_counts(tasks.texts, vocab), S.term_counts(docs, vocab))
  lo, hi = bm.min(1, keepdims=True), bm.max(1, keepdims=True)
  bm = np.where(hi > lo, (bm - lo) / np.where(hi > lo, hi - lo, 1), 0.0)
  unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)
  cos = unit(_fake_embed(tasks.texts, True)) @ unit(_fake_embed(docs, False)).T
  np.testing.assert_allclose(got, 0.3 * cos + 0.7 * bm, atol=2e-5)


def test_candidate_pool_size():
  assert S.candidate_pool_size(CFG) == 4 * (1 + 4 + 2)
  assert (
    S.candidate_pool_size(
      S.GoSkillsConfig(plan_size=2, max_support=1, max_check=0)
    )
    == 4
  )


@pytest.fixture(name="contracts", scope="module")
def _contracts(small_world):
  lib, tasks, scores = small_world
  return S.method_contracts(lib, tasks, scores, CFG, np.random.default_rng(0))


def test_method_contracts_against_numpy(small_world, contracts):
  lib, tasks, scores = small_world
  t, n = scores.shape
  assert set(contracts) == set(S.METHODS)
  order = np.argsort(-scores, axis=1, kind="stable")
  np.testing.assert_array_equal(contracts["load_all"][0], order)
  np.testing.assert_array_equal(contracts["flat"][0], order[:, :5])
  gs = S.goskills_retrieve(lib.graph, scores, tasks.visible, CFG)[0]
  np.testing.assert_array_equal(contracts["goskills"][0], np.asarray(gs.ids))
  np.testing.assert_array_equal(contracts["goskills"][1], np.asarray(gs.roles))
  assert contracts["no_roles"][0] is contracts["goskills"][0]
  assert contracts["no_roles"][1] is None and contracts["no_roles"][2] is None
  # start_only: GoSkills' picks, START kept, every other role dropped, no AVOID
  ids, roles, avoid = contracts["start_only"]
  np.testing.assert_array_equal(ids, contracts["goskills"][0])
  np.testing.assert_array_equal(
    roles == S.START, contracts["goskills"][1] == S.START
  )
  assert set(np.unique(roles)) <= {S.START, S.NO_ROLE} and avoid.shape == (t, 0)
  # the random baseline: rng's first draws, B distinct skills per task
  rng = np.random.default_rng(0)
  want = np.stack([rng.choice(n, 5, replace=False) for _ in range(t)])
  np.testing.assert_array_equal(contracts["random"][0], want)
  # popular: one input-independent list
  pop = contracts["popular"][0]
  assert (pop == pop[0]).all() and len(set(pop[0])) == 5
  # flat_root: START = the rule's root, then the flat ranking without it
  root = np.asarray(
    S.top_group_root(
      lib.graph,
      scores,
      tasks.visible,
      depth=2,
      max_support=4,
      max_check=2,
      max_avoid=2,
    )
  )
  ids, roles, _ = contracts["flat_root"]
  np.testing.assert_array_equal(ids[:, 0], root)
  for i in range(t):
    np.testing.assert_array_equal(
      ids[i, 1:], [j for j in order[i] if j != root[i]][:4]
    )
  for m in ("flat_bottleneck", "gos_bottleneck"):
    np.testing.assert_array_equal(contracts[m][0][:, 0], root)
    # START labelled where the rule found one (a root of -1 leaves an empty
    # contract)
    np.testing.assert_array_equal(contracts[m][1][:, 0] == S.START, root >= 0)
    assert (contracts[m][1][:, 1:] == -1).all()


def test_evaluate_methods_coverage_against_numpy(small_world, contracts):
  lib, tasks, scores = small_world
  res = S.evaluate_methods(
    contracts,
    lib,
    tasks,
    scores,
    budgets=(3, 5),
    rng=np.random.default_rng(1),
    p_decoy=0.5,
  )
  assert set(res) == set(S.METHODS)
  req, vis = np.asarray(lib.graph.req), np.asarray(tasks.visible)

  def coverage(ids):
    got = np.array([req[[j for j in row if j >= 0]].any(0) for row in ids])
    nv = vis.sum(1)
    return np.where(nv > 0, (got & vis).sum(1) / np.maximum(nv, 1), 1.0).mean()

  for m in ("flat", "goskills", "random", "flat_root"):
    for b in (3, 5):
      assert res[m][str(b)]["coverage"] == pytest.approx(
        coverage(contracts[m][0][:, :b])
      )
      assert set(res[m][str(b)]) == set(S.METRICS)
  assert res["load_all"]["3"] == res["load_all"]["5"]
  assert res["load_all"]["5"]["coverage"] == pytest.approx(
    coverage(contracts["load_all"][0])
  )
  # no_roles reads GoSkills' payloads in another order: the same coverage and
  # tokens
  for b in ("3", "5"):
    assert res["no_roles"][b]["coverage"] == res["goskills"][b]["coverage"]
  with pytest.raises(ValueError, match="missing"):
    S.evaluate_methods(
      {},
      lib,
      tasks,
      scores,
      budgets=(3,),
      rng=np.random.default_rng(0),
      p_decoy=0.5,
    )
