"""Retrieval baselines and metrics against brute-force references; the
generator's labels."""

import jax
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from jaxpapers import bayes_memory as bm

rng = np.random.default_rng(0)
S = rng.normal(size=(30, 5)).astype(np.float32)
VALID = rng.random((30, 5)) < 0.8
VALID[:, 0] = True


def test_cosine_and_recency_and_random():
  ft = rng.normal(size=(3, 4, 8)).astype(np.float32)
  fq = rng.normal(size=(3, 8)).astype(np.float32)
  v = np.ones((3, 4), bool)
  v[2, 3] = False
  got = np.asarray(bm.cosine_scores(ft, fq, v))
  ref = np.einsum("qnd,qd->qn", ft, fq) / (
    np.linalg.norm(ft, axis=-1) * np.linalg.norm(fq, axis=-1)[:, None]
  )
  np.testing.assert_allclose(got[v], ref[v], rtol=1e-5)
  assert np.isneginf(got[2, 3])
  rec = np.asarray(bm.retrieval_scores("recency", valid=v))
  assert rec[2].argmax() == 2 and rec[0].argmax() == 3
  rnd = np.asarray(
    bm.retrieval_scores("random", valid=v, key=jax.random.key(0))
  )
  assert np.isneginf(rnd[2, 3]) and np.all((rnd[v] >= 0) & (rnd[v] < 1))


def test_bm25_prefers_the_matching_turn():
  turns = ["I love jazz concerts.", "My dog barks.", "Weather is nice."]
  s = bm.bm25_scores(turns, "any jazz concerts tonight?", n_max=4)
  assert s.argmax() == 0 and s[1] == 0 and np.isneginf(s[3])


def test_recall_and_stale_rate_against_brute_force():
  gold = rng.integers(-1, 5, size=30)
  gold[VALID[np.arange(30), np.maximum(gold, 0)] == False] = -1  # noqa: E712
  stale = rng.random((30, 5)) < 0.3
  for k in (1, 2):
    top = [
      sorted([i for i in range(5) if VALID[q, i]], key=lambda i: -S[q, i])[:k]
      for q in range(30)
    ]
    has = gold >= 0
    ref = np.mean([gold[q] in top[q] for q in range(30) if has[q]])
    assert float(bm.evidence_recall_at_k(S, gold, VALID, k)) == pytest.approx(
      ref
    )
    hs = [q for q in range(30) if (stale[q] & VALID[q]).any()]
    ref_s = np.mean([any(stale[q, i] for i in top[q]) for q in hs])
    assert float(bm.stale_retrieval_rate(S, stale, VALID, k)) == pytest.approx(
      ref_s
    )


def test_gate_auroc_matches_sklearn():
  g = np.round(rng.normal(size=40), 1).astype(np.float32)  # with ties
  y = rng.random(40) < 0.5
  assert float(bm.gate_auroc(g, y)) == pytest.approx(
    roc_auc_score(y, g), rel=1e-6
  )


def test_generated_labels_are_consistent():
  ds = bm.make_preference_dialogues(
    3, n_dialogues=40, n_turns=6, change_rate=0.6
  )
  n_changed = 0
  for d in ds:
    assert len(d.turns) == 6
    for q in d.queries:
      if not q.need_memory:
        assert q.gold_turn == -1 and q.y_alt is None
        continue
      cur = q.y.split(" ")
      # the gold turn names the value the reference names; y and y_alt differ in
      # it only
      diff = [
        w
        for w in q.y.replace("!", "").replace(".", "").split()
        if w not in q.y_alt
      ]
      assert diff and all(w in d.turns[q.gold_turn] for w in diff)
      for s in q.stale_turns:
        assert s < q.gold_turn  # a change follows the statement it supersedes
        assert (
          "switched" in d.turns[q.gold_turn]
          or "moved on" in d.turns[q.gold_turn]
        )
        n_changed += 1
      del cur
  assert n_changed > 10
  assert bm.make_preference_dialogues(
    3, n_dialogues=2
  ) == bm.make_preference_dialogues(3, n_dialogues=2)
