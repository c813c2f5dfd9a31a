"""Bad-input battery for ``jaxpapers.leansearch``: malformed calls, eagerly and
under jit."""

import jax
import numpy as np
import pytest

import jaxpapers.leansearch as L
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

I32 = np.int32
RET = np.array([[1, 2, 3], [4, 5, 6]], I32)
ALIAS = np.array([[[1, -1]], [[7, 4]]], I32)
MASK = np.ones((2, 1), bool)
BAD_ALIAS = np.array([[[1, -3]], [[7, 4]]], I32)
Q = np.eye(3, 4, dtype=np.float32)
D = np.eye(5, 4, dtype=np.float32)
HOST = "host-side (text, files or Python control flow)"
DECL = L.Declaration(
  "a", "M.a", "Lemma", "Lemma a : True", "", "M", (), "", "M.v", 0
)


def _enc():
  return L.DualEncoder(
    n_buckets=16, dim=4, hidden=4, rngs=__import__("flax").nnx.Rngs(0)
  )


def _ret():
  return L.TwoStageRetriever(
    embed_fn=lambda t: D[: len(t)], doc_emb=D, doc_text=["x"] * 5, k=2
  )


def _loop(**kw):
  f = lambda *a, **k: None
  return L.IterativeRetrieval(f, f, f, f, n_docs=5, **kw)


CASES = [
  Case(
    "ndcg_single",
    L.ndcg_single,
    (np.array([1, -2], I32), 10),
    match=("positions must"),
    jit=("nan"),
  ),
  Case(
    "ndcg_single",
    L.ndcg_single,
    (np.array([1.0]), 10),
    error=TypeError,
    match="positions must have a integer",
    id="ndcg-float",
  ),
  Case(
    "ndcg_single",
    L.ndcg_single,
    (np.array([1], I32), 0),
    match=("k must be >= 1"),
    id=("ndcg-k"),
  ),
  Case(
    "recall_single",
    L.recall_single,
    (np.array([[1]], I32), 5),
    match=("positions must have rank 1"),
  ),
  Case(
    "recall_single",
    L.recall_single,
    (np.array([-1], I32), 5),
    match="positions must",
    jit="nan",
    id="recall-neg",
  ),
  Case(
    "target_positions",
    L.target_positions,
    (RET, np.array([1, -1], I32)),
    match="target must hold",
    jit="nan",
    jit_check=lambda out: np.testing.assert_array_equal(out, -1),
  ),
  Case(
    "premise_group_recall",
    L.premise_group_recall,
    (RET, BAD_ALIAS, MASK, 2),
    match="ids >= 0",
    jit="nan",
  ),
  Case(
    "premise_group_recall",
    L.premise_group_recall,
    (RET, ALIAS[:1], MASK, 2),
    match=r"group_alias must have shape \[Q=2",
    id="pgr-rows",
  ),
  Case(
    "premise_group_recall",
    L.premise_group_recall,
    (RET, ALIAS, MASK.astype(I32), 2),
    error=TypeError,
    match="group_mask must have a bool",
    id="pgr-mask",
  ),
  Case(
    "covered_at_k",
    L.covered_at_k,
    (RET, ALIAS, MASK, np.ones((2, 2), bool), 2),
    match="group_is_alt must have shape",
  ),
  Case(
    "covered_at_k",
    L.covered_at_k,
    (RET, BAD_ALIAS, MASK, MASK, 2),
    match="ids >= 0",
    jit="nan",
    id="cov-val",
  ),
  Case(
    "discounted_fusion",
    L.discounted_fusion,
    (RET, RET > 0, 5, 3),
    match=r"lists must hold ids in \[0, 5\)",
    jit="nan",
  ),
  Case(
    "discounted_fusion",
    L.discounted_fusion,
    (RET, RET > 0, 10, 11),
    match="top_k must be <= 10",
    id="fusion-topk",
  ),
  Case("dense_topk", L.dense_topk, (Q, D[:, :3], 2), match="must share d"),
  Case(
    "dense_topk",
    L.dense_topk,
    (Q, D, 6),
    match="m must be <= 5",
    id=("dense-m"),
  ),
  Case(
    "dense_topk",
    L.dense_topk,
    (Q, D, 2),
    {"valid": np.ones((3, 4), bool)},
    match="valid must have shape",
    id="dense-valid",
  ),
  Case(
    "info_nce", L.info_nce, (Q, D[:3]), {"tau": 0.0}, match=("tau must be > 0")
  ),
  Case(
    "info_nce",
    L.info_nce,
    (Q, D[:2]),
    match="d_pos must have shape",
    id=("info_nce-shape"),
  ),
  Case(
    "DualEncoder",
    lambda ids: _enc()(ids),
    (np.array([[1, 99]], I32),),
    match=r"ids must lie in \[0, 16\)",
    jit="nan",
  ),
  Case(
    "hash_features",
    L.hash_features,
    ("one string",),
    error=TypeError,
    match="texts must be a sequence",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "encode",
    lambda: L.encode(_enc(), np.zeros((2, 3))),
    error=TypeError,
    match="ids must have a integer",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "train_dual_encoder",
    L.train_dual_encoder,
    (jax.random.key(0), np.ones((3, 2), I32), np.ones((2, 2), I32)),
    match="same non-zero number of pairs",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dual_encoder_embedder",
    lambda: L.dual_encoder_embedder(_enc())("x"),
    error=TypeError,
    match="texts must be a sequence",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "e5_embedder",
    L.e5_embedder,
    (),
    {"query": "yes"},
    error=TypeError,
    match="query must be a bool",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "lm_yes_no_scores",
    L.lm_yes_no_scores,
    (None, None, None, "q", []),
    match="docs must be a non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "lm_reranker",
    lambda: L.lm_reranker(None, None, None)("q", [], []),
    match="docs must be a non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "BM25Index",
    L.BM25Index,
    ([],),
    match="texts must be a non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bm25_reranker",
    lambda: L.bm25_reranker(L.BM25Index(["a b", "c d"]))(
      "zz", np.array([5]), []
    ),
    error=IndexError,
    match="index 5",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "TwoStageRetriever",
    lambda: L.TwoStageRetriever(embed_fn=None, doc_emb=D, doc_text=["x"], k=2),
    match="doc_text must have one text per doc_emb row",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "TwoStageRetriever",
    lambda: _ret().search("q"),
    error=TypeError,
    match="queries must be a sequence",
    jit=None,
    jit_reason=HOST,
    id="two-stage-str",
  ),
  Case(
    "IterativeRetrieval",
    lambda: _loop(big_loop=-1),
    match="big_loop must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "IterativeRetrieval",
    lambda: L.IterativeRetrieval(1, 1, 1, 1, n_docs=3),
    error=TypeError,
    match="planner must be callable",
    jit=None,
    jit_reason=HOST,
    id="loop-callable",
  ),
  Case(
    "IterativeRetrieval",
    lambda: _loop(search_top_k=3, output_top_k=9),
    match="output_top_k must be <= 5",
    jit=None,
    jit_reason=HOST,
    id="loop-topk",
  ),
  Case(
    "ProxyPlanner",
    L.ProxyPlanner,
    ([],),
    {"prf": -1},
    match="prf must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "ProxyFilter",
    L.ProxyFilter,
    ([],),
    {"names": frozenset(), "keep_top": -1},
    match="keep_top must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "StableTopJudge",
    L.StableTopJudge,
    (0,),
    match="k must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "split_statement",
    L.split_statement,
    (None,),
    error=TypeError,
    match="statement must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "parse_coq_source",
    L.parse_coq_source,
    (b"Lemma",),
    error=TypeError,
    match="text must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "parse_coq_tree",
    L.parse_coq_tree,
    ("/nonexistent/coq",),
    error=FileNotFoundError,
    match="root must be a folder",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "premise_queries",
    L.premise_queries,
    ([],),
    {"min_premises": 3, "max_premises": 2},
    match="max_premises must be >= 3",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "pack_premise_groups",
    L.pack_premise_groups,
    ([],),
    match="queries must hold at least one premise query",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "pack_premise_groups",
    L.pack_premise_groups,
    ([L.PremiseQuery(decl=0, groups=((1,),), names=("a",))],),
    {"max_aliases": 0},
    match="max_aliases must be >= 1",
    jit=None,
    jit_reason=HOST,
    id="pack_premise_groups-max_aliases",
  ),
  Case(
    "fetch_coq_stdlib",
    L.fetch_coq_stdlib,
    (None,),
    error=TypeError,
    match="cache_dir must be a path",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dependency_levels",
    L.dependency_levels,
    ([[3]],),
    match=r"deps\[0\] must hold node indices in \[0, 1\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dependencies",
    L.dependencies,
    ([DECL],),
    {"max_deps": -1},
    match="max_deps must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "informalize_proxy",
    L.informalize_proxy,
    ([DECL],),
    {"hierarchical": 1},
    error=TypeError,
    match="hierarchical must be a bool",
    jit=None,
    jit_reason=HOST,
  ),
]

PQ = L.PremiseQuery(decl=3, groups=((0,),), names=("a",))
CASES += [
  Case(
    "doc_query",
    L.doc_query,
    ("a doc",),
    error=TypeError,
    match="Declaration",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "premise_query_text",
    L.premise_query_text,
    ([DECL], PQ),
    match="query.decl must index",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "available_mask",
    L.available_mask,
    ([DECL], [0, 1]),
    match="rows must index",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "rank_by_scores",
    L.rank_by_scores,
    (np.zeros((2, 3)), np.ones((2, 4), bool), 2),
    match="scores and valid must both have shape",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "rank_by_scores",
    L.rank_by_scores,
    (np.zeros((2, 3)), np.ones((2, 3), bool), 4),
    match="k must be in",
    jit=None,
    jit_reason=HOST,
    id="k",
  ),
  Case(
    "proxy_reasoning",
    L.proxy_reasoning,
    ([], print),
    match="at least one declaration",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "baseline_rankings",
    L.baseline_rankings,
    (["a", "b"], [], ["q"], np.ones((1, 3), bool), np.random.default_rng(0), 1),
    match="valid must have shape",
    jit=None,
    jit_reason=HOST,
  ),
]
CASES += [
  Case(
    "file_split",
    L.file_split,
    ([], np.random.default_rng(0)),
    match="at least one file",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "split_queries",
    L.split_queries,
    ([DECL], {"M.v"}, set(), np.random.default_rng(0)),
    match="no test queries",
    jit=None,
    jit_reason=HOST,
  ),
]
CASES.append(
  Case(
    "load_coq_stdlib",
    L.load_coq_stdlib,
    (123,),
    error=TypeError,
    match="cache_dir must be a path",
    jit=None,
    jit_reason=HOST,
  )
)
EXEMPT = {
  "Declaration": "a frozen dataclass record",
  "PremiseQuery": "a frozen dataclass record",
  "ReasoningTrace": "a frozen dataclass record",
  "identifiers": (
    "total on str (a regex scan); a non-str raises Python's TypeError"
  ),
  "split_identifier": "total on str (a regex scan)",
  "tokenize": "total on str (a regex scan)",
  "informal_name": "reads two str fields of a Declaration",
  "doc_text": "a string template over a Declaration",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(L, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_query_without_groups_scores_zero_recall_and_is_covered():
  alias = np.full((1, 2, 2), -1, I32)
  mask = np.zeros((1, 2), bool)
  ret = np.array([[0, 1]], I32)
  assert float(L.premise_group_recall(ret, alias, mask, 2)[0]) == 0.0
  assert float(L.covered_at_k(ret, alias, mask, mask, 2)[0]) == 1.0


def test_fusion_of_empty_lists_is_all_padding():
  lists = np.full((2, 3), -1, I32)
  ids, sc = L.discounted_fusion(lists, lists >= 0, 4, 4)
  assert (np.asarray(ids) == -1).all() and (np.asarray(sc) == 0).all()


def test_k_beyond_list_length_uses_the_whole_list():
  assert float(L.premise_group_recall(RET, ALIAS, MASK, 50)[1]) == 1.0


@pytest.mark.parametrize(
  "text", ["", "(* only a comment *)", "Lemma unterminated : True"]
)
def test_parser_degenerate_sources(text):
  d = L.parse_coq_source(text)
  assert len(d) == (1 if text.startswith("Lemma") else 0)
