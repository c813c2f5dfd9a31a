"""LOCOS: write-aware retrieval-head detection (Gema, Alex & Minervini, arXiv
2607.01002).

Scores each attention head by the projection of its OV-circuit output onto the
answer token's unembedding direction, contrasting needle and off-needle source
positions (`detect_heads`, `phi_per_position`), next to the attention-based
baselines (Wu et al. retrieval score, contrastive attention, attention-spatial,
DLA), and measures what ablating the top heads does (`ablation_curve`; over real
probes as resumable cells, `ablation_cells`) and where it collapses retrieval
(`collapse_curves`). Models come from `jaxpapers.lm`.
"""

from jaxpapers.locos._ablation import (
  ablation_conditions,
  ablation_curve,
  bootstrap_ci,
  evaluate_probes,
  generate_texts,
  score_text,
  seed_blocks,
)
from jaxpapers.locos._cells import ablated_texts, ablation_cells
from jaxpapers.locos._collapse import collapse_curves, collapse_index
from jaxpapers.locos._needle import make_needle_probes
from jaxpapers.locos._probes import (
  LANDMARKS,
  NAMES,
  PROMPT_FORMATS,
  QUESTIONS,
  RELATIONS,
  SHOT_LANDMARKS,
  SHOT_NAMES,
  haystack_sentences,
  make_probes,
  parametric_probes,
  split_entities,
)
from jaxpapers.locos._scores import (
  Trial,
  TrialScore,
  aggregate,
  answer_steps,
  bucket_indices,
  contrast,
  detect_heads,
  jaccard_top_k,
  locos_scores,
  locos_trial,
  phi_per_position,
  random_heads,
  rank_heads,
  rouge1_recall,
  rouge_l,
  score_batch,
  score_generation,
  top_heads,
)
from jaxpapers.locos._toy import (
  ToyTask,
  ToyTokenizer,
  make_toy_trials,
  toy_batch,
  toy_lm_loss,
  toy_model_config,
)

__all__ = [
  "ablated_texts",
  "ablation_cells",
  "make_needle_probes",
  "ablation_conditions",
  "ablation_curve",
  "collapse_curves",
  "collapse_index",
  "seed_blocks",
  "bootstrap_ci",
  "evaluate_probes",
  "generate_texts",
  "score_text",
  "Trial",
  "TrialScore",
  "aggregate",
  "answer_steps",
  "bucket_indices",
  "contrast",
  "detect_heads",
  "jaccard_top_k",
  "locos_scores",
  "locos_trial",
  "phi_per_position",
  "random_heads",
  "rank_heads",
  "score_batch",
  "score_generation",
  "rouge1_recall",
  "rouge_l",
  "top_heads",
  "LANDMARKS",
  "NAMES",
  "PROMPT_FORMATS",
  "SHOT_LANDMARKS",
  "SHOT_NAMES",
  "haystack_sentences",
  "make_probes",
  "parametric_probes",
  "split_entities",
  "QUESTIONS",
  "RELATIONS",
  "ToyTask",
  "ToyTokenizer",
  "make_toy_trials",
  "toy_batch",
  "toy_lm_loss",
  "toy_model_config",
]
