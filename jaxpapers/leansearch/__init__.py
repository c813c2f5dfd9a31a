"""LeanSearch v2: global premise retrieval (standard mode, reasoning mode,
metrics).

Standard mode (:class:`TwoStageRetriever`): dense top-M candidates
(:func:`dense_topk`, ``M = max(2k, 50)``) reranked by a pluggable scorer (the
shared small LM via :func:`lm_yes_no_scores`, BM25 via :func:`bm25_reranker`).
Reasoning mode (:class:`IterativeRetrieval`; with the offline proxies
:func:`proxy_reasoning`): sketch -> retrieve -> filter -> judge rounds fused by
:func:`discounted_fusion`. The reference's metrics: :func:`ndcg_single`,
:func:`recall_single`, :func:`premise_group_recall`, :func:`covered_at_k`. The
offline corpus is the Coq standard library (:func:`load_coq_stdlib`:
:func:`fetch_coq_stdlib` and :func:`parse_coq_tree`, cached;
:func:`premise_queries`, :func:`pack_premise_groups`) with a
hierarchy-informalisation proxy (:func:`informalize_proxy`); its file splits and
queries (:func:`file_split`, :func:`split_queries`, :func:`doc_query`,
:func:`premise_query_text`, :func:`available_mask`) and the premise baselines
that read no informal text (:func:`baseline_rankings`).
"""

from jaxpapers.leansearch._benchmark import (
  available_mask,
  baseline_rankings,
  doc_query,
  file_split,
  premise_query_text,
  rank_by_scores,
  split_queries,
)
from jaxpapers.leansearch._coq import (
  COQ_PACKAGE,
  Declaration,
  PremiseQuery,
  fetch_coq_stdlib,
  identifiers,
  load_coq_stdlib,
  pack_premise_groups,
  parse_coq_source,
  parse_coq_tree,
  premise_queries,
)
from jaxpapers.leansearch._informal import (
  dependencies,
  dependency_levels,
  doc_text,
  informal_name,
  informalize_proxy,
  split_identifier,
)
from jaxpapers.leansearch._metrics import (
  covered_at_k,
  discounted_fusion,
  ndcg_single,
  premise_group_recall,
  recall_single,
  target_positions,
)
from jaxpapers.leansearch._models import (
  DualEncoder,
  dual_encoder_embedder,
  e5_embedder,
  encode,
  hash_features,
  info_nce,
  lm_reranker,
  lm_yes_no_scores,
  train_dual_encoder,
)
from jaxpapers.leansearch._reasoning import (
  IterativeRetrieval,
  ProxyFilter,
  ProxyPlanner,
  ReasoningTrace,
  StableTopJudge,
  proxy_reasoning,
  split_statement,
)
from jaxpapers.leansearch._retrieve import (
  BM25Index,
  TwoStageRetriever,
  bm25_reranker,
  dense_topk,
  tokenize,
)

__all__ = [
  "COQ_PACKAGE",
  "available_mask",
  "baseline_rankings",
  "doc_query",
  "file_split",
  "premise_query_text",
  "rank_by_scores",
  "split_queries",
  "Declaration",
  "PremiseQuery",
  "fetch_coq_stdlib",
  "identifiers",
  "load_coq_stdlib",
  "pack_premise_groups",
  "parse_coq_source",
  "parse_coq_tree",
  "premise_queries",
  "dependencies",
  "dependency_levels",
  "doc_text",
  "informal_name",
  "informalize_proxy",
  "split_identifier",
  "covered_at_k",
  "discounted_fusion",
  "ndcg_single",
  "premise_group_recall",
  "recall_single",
  "target_positions",
  "DualEncoder",
  "dual_encoder_embedder",
  "e5_embedder",
  "encode",
  "hash_features",
  "info_nce",
  "lm_reranker",
  "lm_yes_no_scores",
  "train_dual_encoder",
  "IterativeRetrieval",
  "ProxyFilter",
  "ProxyPlanner",
  "ReasoningTrace",
  "StableTopJudge",
  "proxy_reasoning",
  "split_statement",
  "BM25Index",
  "TwoStageRetriever",
  "bm25_reranker",
  "dense_topk",
  "tokenize",
]
