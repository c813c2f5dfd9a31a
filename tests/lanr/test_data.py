"""The synthetic multi-hop world, tokenizer, padding and the BM25 pipeline baseline."""

import math

import numpy as np

from jaxpapers import lanr as L

KB = L.make_kb(0, n_people=20, n_cities=6, n_countries=3, n_companies=5)


def test_kb_one_fact_per_relation_and_deterministic():
  assert len(KB.docs) == 2 * 20 + 6 + 5
  for p in KB.people:
    assert ("born_in", p) in KB.index and ("works_at", p) in KB.index
  for i, (r, s, o) in enumerate(KB.facts):
    assert KB.index[(r, s)] == i and s in KB.docs[i] and o in KB.docs[i]
  again = L.make_kb(0, n_people=20, n_cities=6, n_countries=3, n_companies=5)
  assert again.docs == KB.docs
  assert L.make_kb(1, n_people=20, n_cities=6, n_countries=3, n_companies=5).docs != KB.docs


def test_questions_follow_the_chain_of_facts():
  qs = L.make_questions(KB, KB.people[:8], n_per_hop=5, seed=0)
  assert [q.hops for q in qs] == [1] * 5 + [2] * 5 + [3] * 5
  for q in qs:
    subj = q.person
    for g in q.gold:  # each hop's subject is the previous hop's object (the bridge entity)
      assert KB.facts[g][1] == subj
      subj = KB.facts[g][2]
    assert q.answer == subj and q.person in q.question
    assert q.answer not in q.question  # the bridge and the answer are not in the question


def test_word_tokenizer_and_padding():
  tok = L.WordTokenizer(["Ada was born in Rika."])
  ids = tok.encode("Ada was born in Rika.")
  assert tok.decode(ids) == "Ada was born in Rika ." and tok.encode("Zed") == [1]
  assert tok.token_to_id("[PRED]") == 2 and tok.token_to_id("[DOC]") == 3
  x, n = L.pad_tokens([[5, 6], [7]], width=3)
  np.testing.assert_array_equal(x, [[5, 6, 0], [7, 0, 0]])
  np.testing.assert_array_equal(n, [2, 1])


def test_bm25_matches_hand_computation():
  docs = ["a b b", "a c", "c c c d"]
  s = L.bm25_scores(["b a"], docs, k1=1.2, b=0.5)
  avg = 3.0
  N = 3

  def term(tf, dl, df):
    idf = math.log(1 + (N - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.5 + 0.5 * dl / avg))

  want = [term(2, 3, 1) + term(1, 3, 2), term(1, 2, 2), 0.0]
  np.testing.assert_allclose(s[0], want, rtol=1e-12)
  r = L.question_as_query_retrieve(["b a", "d"], docs, hops=2)
  np.testing.assert_array_equal(r[:, 0], [0, 2])
  np.testing.assert_array_equal(
    L.support_recall(np.array([[0, 1], [2, -1]]), [(1, 0), (2, 1)]), [1, 0]
  )
