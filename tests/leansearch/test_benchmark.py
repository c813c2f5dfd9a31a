"""The benchmark's queries, leakage mask and premise baselines against
hand-worked answers."""

import numpy as np

import jaxpapers.leansearch as L

SRC_M = (
  "(** [foo_bar] says foo_bar is fine. *)\nLemma foo_bar : True.\nProof. "
  "trivial. Qed.\n"
  "Lemma later : True.\nProof. trivial. Qed.\n"
)
SRC_N = (
  "Lemma other : True.\nProof. trivial. Qed.\nLemma last : True.\nProof. "
  "trivial. Qed.\n"
)


def _decls():
  return L.parse_coq_source(SRC_M, module="M", file="M.v") + L.parse_coq_source(
    SRC_N, module="N", file="N.v"
  )


def test_doc_query_drops_the_name_and_bracketed_identifiers():
  decls = _decls()
  assert L.doc_query(decls[0]) == "says is fine."
  assert L.doc_query(decls[1]) == ""


def test_premise_query_text_is_statement_then_doc():
  decls = _decls()
  q = L.PremiseQuery(decl=0, groups=((1,),), names=("later",))
  assert (
    L.premise_query_text(decls, q) == f"{decls[0].statement} {decls[0].doc}"
  )
  q = L.PremiseQuery(decl=2, groups=((3,),), names=("last",))
  # no doc: no trailing space
  assert L.premise_query_text(decls, q) == decls[2].statement


def test_available_mask_matches_brute_force_leakage_rule():
  decls = _decls()
  rows = [0, 1, 3, 2]

  def reference(i, j):  # j is i itself or later in i's file: not retrievable
    return not (
      j == i
      or (decls[j].file == decls[i].file and decls[j].index >= decls[i].index)
    )

  expect = [[reference(i, j) for j in range(len(decls))] for i in rows]
  np.testing.assert_array_equal(L.available_mask(decls, rows), expect)
  # hand-worked: foo_bar sees N's two; later sees foo_bar and N's; last sees M's
  # and other
  np.testing.assert_array_equal(
    L.available_mask(decls, [0, 1, 3]),
    [[0, 0, 1, 1], [1, 0, 1, 1], [1, 1, 1, 0]],
  )


def test_rank_by_scores_puts_invalid_documents_last_and_breaks_ties_by_index():
  scores = np.array([[1.0, 3.0, 3.0, 9.0]])
  valid = np.array([[1, 1, 1, 0]], bool)
  np.testing.assert_array_equal(
    L.rank_by_scores(scores, valid, 4), [[1, 2, 0, 3]]
  )


def test_baseline_rankings_count_premise_groups_of_training_theorems():
  statements = ["add zero", "mul one", "add comm", "sub self", "unused"]
  # doc 2 is used by three training theorems, doc 1 by two, doc 0 by one (an
  # alias in doc 1's group), doc 3 and 4 by none.
  train = [
    L.PremiseQuery(0, ((2,), (1, 0)), ("a", "b")),
    L.PremiseQuery(0, ((2,),), ("a",)),
    L.PremiseQuery(0, ((2,), (1,)), ("a", "b")),
  ]
  valid = np.ones((2, 5), bool)
  valid[1, 2] = False  # the second query may not see doc 2
  out = L.baseline_rankings(
    statements, train, ["add comm", "sub"], valid, np.random.default_rng(0), 3
  )
  np.testing.assert_array_equal(out["frequency"], [[2, 1, 0], [1, 0, 3]])
  r = out["random"]
  assert (
    r.shape == (2, 3) and 2 not in r[1] and all(len(set(row)) == 3 for row in r)
  )
  expect_bm25 = L.BM25Index(statements).search(
    ["add comm", "sub"], 3, valid=valid
  )[0]
  np.testing.assert_array_equal(out["bm25_statements"], expect_bm25)
  # "add comm" matches its own statement first
  assert out["bm25_statements"][0, 0] == 2


def test_proxy_reasoning_wires_the_corpus_names_into_planner_and_filter():
  # foo_bar, later, other, last: every statement "Lemma <name> : True"
  decls = _decls()
  search = lambda queries, *, valid, k: (
    (np.zeros((len(queries), k), np.int32),) * 2
  )
  loop = L.proxy_reasoning(
    decls, search, k=2, big_loop=1, search_top_k=30, output_top_k=3
  )
  assert (
    loop.planner.names
    == loop.filter.names
    == {"foo_bar", "later", "other", "last"}
  )
  # a document's constants: its own name (True is no corpus name)
  assert loop.filter.doc_constants == [
    {"foo_bar"},
    {"later"},
    {"other"},
    {"last"},
  ]
  assert loop.planner.doc_statements == [d.statement for d in decls]
  assert (
    loop.search_top_k,
    loop.output_top_k,
    loop.big_loop,
    loop.judge.k,
  ) == (4, 3, 1, 2)
  assert loop.retriever is search


def test_file_split_takes_test_then_validation_files_from_one_permutation():
  files = [f"F{i}.v" for i in range(10)]
  train, val, test = L.file_split(
    files, np.random.default_rng(3), test_fraction=0.2
  )
  perm = np.random.default_rng(3).permutation(10)
  assert test == {files[i] for i in perm[:2]} and val == {files[perm[2]]}
  assert train == set(files) - test - val and len(train) == 7
  # < 3 files: no val
  train, val, test = L.file_split(files[:2], np.random.default_rng(0))
  assert (len(train), len(val), len(test)) == (1, 0, 1)


def test_split_queries_picks_documented_declarations_of_each_side():
  src = (
    "(** adds zero on the right side *)\nLemma add0 : True.\nProof. trivial. "
    "Qed.\n"
    "(** short *)\nLemma tiny : True.\nProof. trivial. Qed.\n"
  )
  use = (
    "(** uses both lemmas above here *)\nLemma both : True.\nProof. "
    "apply add0. apply tiny. Qed.\n"
  )
  decls = L.parse_coq_source(src, module="A", file="A.v")
  decls += L.parse_coq_source(
    src.replace("add0", "addz") + use, module="B", file=("B.v")
  )
  q = L.split_queries(
    decls, {"A.v"}, {"B.v"}, np.random.default_rng(0), min_doc_words=3
  )
  # "short" has one word
  assert q["single_train"] == [0] and q["single_test"] == [2, 4]
  assert q["p_train"] == [] and [p.decl for p in q["p_test"]] == [4]
  assert q["p_test"][0].names == ("add0", "tiny")
  capped = L.split_queries(
    decls,
    {"A.v"},
    {"B.v"},
    np.random.default_rng(0),
    min_doc_words=3,
    max_single=1,
  )
  assert len(capped["single_test"]) == 1 and capped["single_test"][0] in (2, 4)
