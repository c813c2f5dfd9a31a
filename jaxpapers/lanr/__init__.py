"""LAnR: latent abstraction for retrieval-augmented generation.

One LM encodes documents, produces retrieval vectors from the hidden state of a
[PRED] token, and decides with a small MLP over the same hidden states when
enough evidence has been retrieved. This package implements the heads, the
objectives (multi-positive InfoNCE, answer-entropy and oracle control labels),
the jitted multi-hop loop with adaptive stopping, the synthetic multi-hop QA
world of the experiment, the pipeline and stopping baselines, and what a loop
and its stopping rule achieve per question (``stop_outcomes``,
``next_hop_accuracy``). The paper has no public code: everything beyond the
abstract is a reconstruction (marked in each docstring).
"""

from jaxpapers.lanr._config import LAnRConfig
from jaxpapers.lanr._data import (
  KB,
  QA,
  WordTokenizer,
  bm25_scores,
  gold_prefixes,
  iterative_bm25_retrieve,
  make_kb,
  make_questions,
  pad_tokens,
  question_as_query_retrieve,
  support_recall,
)
from jaxpapers.lanr._eval import (
  bm25_diagnostics,
  next_hop_accuracy,
  stop_outcomes,
)
from jaxpapers.lanr._frozen import (
  cosine_scores,
  fit_whitening,
  frozen_scorers,
  whiten,
)
from jaxpapers.lanr._heads import (
  control_logits,
  doc_embedding,
  init_control_head,
  init_retrieval_heads,
  query_embedding,
  standardise,
)
from jaxpapers.lanr._loop import (
  LMFn,
  RetrievalTrace,
  append_tokens,
  at_hop,
  encode_documents,
  greedy_retrieve,
  lm_hidden_fn,
  lm_prefix_fn,
  multihop_retrieve,
  prefill_prefix,
  read_context,
  read_contexts,
  stop_hops,
)
from jaxpapers.lanr._losses import (
  answer_entropy,
  auroc,
  control_loss,
  entropy_labels,
  entropy_threshold_stop,
  info_nce,
)
from jaxpapers.lanr._reader import ReaderTexts
from jaxpapers.lanr._stats import auroc_interval
from jaxpapers.lanr._train import lanr_loss

__all__ = [
  "bm25_diagnostics",
  "next_hop_accuracy",
  "stop_outcomes",
  "LAnRConfig",
  "KB",
  "QA",
  "WordTokenizer",
  "bm25_scores",
  "gold_prefixes",
  "iterative_bm25_retrieve",
  "make_kb",
  "make_questions",
  "pad_tokens",
  "question_as_query_retrieve",
  "support_recall",
  "cosine_scores",
  "fit_whitening",
  "frozen_scorers",
  "whiten",
  "control_logits",
  "doc_embedding",
  "init_control_head",
  "init_retrieval_heads",
  "query_embedding",
  "standardise",
  "LMFn",
  "RetrievalTrace",
  "append_tokens",
  "at_hop",
  "encode_documents",
  "greedy_retrieve",
  "lm_hidden_fn",
  "lm_prefix_fn",
  "prefill_prefix",
  "multihop_retrieve",
  "read_context",
  "read_contexts",
  "stop_hops",
  "answer_entropy",
  "auroc",
  "control_loss",
  "entropy_labels",
  "entropy_threshold_stop",
  "info_nce",
  "auroc_interval",
  "ReaderTexts",
  "lanr_loss",
]
