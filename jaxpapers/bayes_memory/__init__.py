"""Bayes-factor memory access and selection for long dialogues.

A reimplementation of "Memory Retrieval for Changing Preferences" (arXiv 2606.02976): the
utility of a history turn is the log Bayes factor log p(y | m_i, x) - log p(y | x) of the
reference response under a frozen LM (`jaxpapers.lm`), one signal for both memory access (does
any turn help?) and selection (which turns?). A small utility model distilled from these
factors selects turns at inference, when y is unknown, without extra LM passes. The factors of
one dialogue share most of their tokens (y and the contrast y' share their prompt, the questions
share the memory block); `score_rows_shared` runs each shared token prefix once and scores the
rows against its cached keys and values (a prefix tree, `build_prefix_tree`). Only the
abstract is public: everything beyond the scoring rule is a reconstruction (see the module
docstrings and experiments/bayes_memory/README.md).
"""

from jaxpapers.bayes_memory._baselines import (
  RETRIEVERS,
  bm25_scores,
  cosine_scores,
  evidence_recall_at_k,
  gate_auroc,
  mean_pooled_features,
  random_scores,
  recency_scores,
  retrieval_scores,
  stale_retrieval_rate,
)
from jaxpapers.bayes_memory._data import (
  PLACEBO_TURN,
  SLOT_NAMES,
  Dialogue,
  Query,
  WordTokenizer,
  make_preference_dialogues,
)
from jaxpapers.bayes_memory._evaluate import (
  BASELINE_RETRIEVERS,
  GREEDY_METHODS,
  METHODS,
  ORACLE_METHODS,
  choose_contexts,
  selection_metrics,
)
from jaxpapers.bayes_memory._evidence import (
  SCORING,
  access_signal_metrics,
  question_arrays,
  score_dialogues,
)
from jaxpapers.bayes_memory._prefix import (
  PrefixTree,
  build_prefix_tree,
  row_tokens,
  score_rows_shared,
  tree_logprobs,
)
from jaxpapers.bayes_memory._rows import (
  Row,
  dialogue_rows,
  pooled_text_features,
  score_rows_bucketed,
  subset_rows,
)
from jaxpapers.bayes_memory._scoring import (
  CHATML_TEMPLATE,
  MODELS,
  LogprobFn,
  ScoringBatch,
  access_and_select,
  build_loo_batch,
  build_scoring_batch,
  encode_rows,
  load_model,
  log_bayes_factors,
  loo_log_bayes_factors,
  make_logprob_fn,
  memory_block,
  sequence_logprobs,
)
from jaxpapers.bayes_memory._selection import (
  GreedySelection,
  SetScorer,
  greedy_select,
  make_set_scorer,
)
from jaxpapers.bayes_memory._utility import (
  AccessGate,
  UtilityModel,
  fit_leave_one_seed_out,
  gate_loss,
  pair_features,
  predict_utilities,
  train_utility_model,
  utility_distillation_loss,
  utility_regression_loss,
)

__all__ = [
  "BASELINE_RETRIEVERS",
  "GREEDY_METHODS",
  "METHODS",
  "ORACLE_METHODS",
  "choose_contexts",
  "selection_metrics",
  "SCORING",
  "fit_leave_one_seed_out",
  "score_dialogues",
  "question_arrays",
  "access_signal_metrics",
  "PrefixTree",
  "build_prefix_tree",
  "row_tokens",
  "score_rows_shared",
  "tree_logprobs",
  "RETRIEVERS",
  "bm25_scores",
  "cosine_scores",
  "evidence_recall_at_k",
  "gate_auroc",
  "mean_pooled_features",
  "random_scores",
  "recency_scores",
  "retrieval_scores",
  "stale_retrieval_rate",
  "PLACEBO_TURN",
  "SLOT_NAMES",
  "Dialogue",
  "Query",
  "WordTokenizer",
  "make_preference_dialogues",
  "Row",
  "dialogue_rows",
  "pooled_text_features",
  "score_rows_bucketed",
  "subset_rows",
  "CHATML_TEMPLATE",
  "MODELS",
  "LogprobFn",
  "ScoringBatch",
  "access_and_select",
  "build_loo_batch",
  "build_scoring_batch",
  "encode_rows",
  "load_model",
  "log_bayes_factors",
  "loo_log_bayes_factors",
  "make_logprob_fn",
  "memory_block",
  "sequence_logprobs",
  "GreedySelection",
  "SetScorer",
  "greedy_select",
  "make_set_scorer",
  "AccessGate",
  "UtilityModel",
  "gate_loss",
  "pair_features",
  "predict_utilities",
  "train_utility_model",
  "utility_distillation_loss",
  "utility_regression_loss",
]
