"""The synthetic multi-hop world, tokenizer, padding and the BM25 pipeline
baseline."""

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
  assert (
    L.make_kb(1, n_people=20, n_cities=6, n_countries=3, n_companies=5).docs
    != KB.docs
  )


def test_questions_follow_the_chain_of_facts():
  qs = L.make_questions(KB, KB.people[:8], n_per_hop=5, seed=0)
  assert [q.hops for q in qs] == [1] * 5 + [2] * 5 + [3] * 5
  for q in qs:
    subj = q.person
    # each hop's subject is the previous hop's object (the bridge entity)
    for g in q.gold:
      assert KB.facts[g][1] == subj
      subj = KB.facts[g][2]
    assert q.answer == subj and q.person in q.question
    # the bridge and the answer are not in the question
    assert q.answer not in q.question


def test_word_tokenizer_and_padding():
  tok = L.WordTokenizer(["Ada was born in Rika."])
  ids = tok.encode("Ada was born in Rika.")
  assert tok.decode(ids) == "Ada was born in Rika ." and tok.encode("Zed") == [
    1
  ]
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


def test_groups_share_no_entity_or_document():
  kb = L.make_kb(
    3, n_people=10, n_cities=4, n_countries=2, n_companies=3, n_groups=2
  )
  g = kb.groups
  assert len(kb.people_of(0)) == len(kb.people_of(1)) == 10
  assert (
    len(kb.cities) == 8 and len(kb.countries) == 4 and len(kb.companies) == 6
  )
  for name in (kb.cities, kb.countries, kb.companies):
    assert sorted(g[e] for e in name) == [0] * (len(name) // 2) + [1] * (
      len(name) // 2
    )
  for _, s, o in kb.facts:  # every fact links two entities of one group
    assert g[s] == g[o]
  qa = L.make_questions(kb, kb.people_of(0), n_per_hop=5, seed=0)
  qb = L.make_questions(kb, kb.people_of(1), n_per_hop=5, seed=1)
  ents = lambda qs: {e for q in qs for d in q.gold for e in KB_facts(kb, d)}
  assert ents(qa) and ents(qb) and not ents(qa) & ents(qb)
  assert not {d for q in qa for d in q.gold} & {d for q in qb for d in q.gold}
  # one group is the old single-group world
  one = L.make_kb(3, n_people=10, n_cities=4, n_countries=2, n_companies=3)
  assert set(one.groups.values()) == {0} and len(one.docs) == 2 * 10 + 4 + 3


def KB_facts(kb, d):
  return kb.facts[d][1:]


def test_iterative_bm25_requeries_with_the_bridge():
  docs = [
    "ada was born in rika",  # 0: hop 1 of the question
    # 1: hop 2, reachable only through the bridge "rika"
    "rika is a city in zolia",
    "ada works at acme",  # 2: shares "ada" with the question
    "bo was born in tul",  # 3: shares "was born" with the question
  ]
  bridge = ["rika", "zolia", "acme", "tul"]
  q = ["where was ada born"]
  # The question alone never reaches document 1 (no shared word): top-2 is 0,
  # then 3.
  np.testing.assert_array_equal(
    L.question_as_query_retrieve(q, docs, hops=2), [[0, 3]]
  )
  # Re-query with the bridge alone: "rika" is in documents 0 and 1; 0 is taken.
  r = L.iterative_bm25_retrieve(q, docs, bridge, hops=2, keep_question=False)
  np.testing.assert_array_equal(r, [[0, 1]])
  # Question + bridge (hand BM25, N = 4, avgdl = 5, every df = 2, idf = ln 2):
  # document 3 scores 2 ln2 (was, born at dl 5), 2 scores 2.5 / 2.275 ln2 (ada),
  # 1 scores 2.5 / 2.725 ln2 (rika).
  r = L.iterative_bm25_retrieve(q, docs, bridge, hops=3, keep_question=True)
  np.testing.assert_array_equal(r[:, :2], [[0, 3]])
  # hop 3 re-queries with document 3's bridge "tul": only ada's words
  assert r[0, 2] == 2
  s = L.bm25_scores(["where was ada born rika"], docs)[0]
  np.testing.assert_allclose(
    s[1:], np.log(2) * np.array([2.5 / 2.725, 2.5 / 2.275, 2.0])
  )


def test_gold_prefixes_enumerate_every_prefix_with_its_next_document():
  qs = [L.QA("q0", "a", (3,), "p"), L.QA("q1", "b", (1, 4, 0), "r")]
  rows = L.gold_prefixes(qs, 5)
  assert [(r["q"], r["t"], r["docs"], r["next_doc"]) for r in rows] == [
    (0, 0, (), 3),
    (0, 1, (3,), -1),
    (1, 0, (), 1),
    (1, 1, (1,), 4),
    (1, 2, (1, 4), 0),
    (1, 3, (1, 4, 0), -1),
  ]
  assert [r["sufficient"] for r in rows] == [
    False,
    True,
    False,
    False,
    False,
    True,
  ]
  assert [r["hops"] for r in rows] == [1, 1, 3, 3, 3, 3]
  np.testing.assert_array_equal(
    rows[4]["in_context"], [False, True, False, False, True]
  )
  assert not rows[2]["in_context"].any()
