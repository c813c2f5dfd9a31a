"""CS-CLIP: half-truths in dual encoders and component-supervised fine-tuning.

Kargi, Uselis, Oh, "Half-Truths Break Similarity-Based Retrieval"
(arXiv:2602.23906; reference code kargibora/CS-CLIP). A dual encoder often
scores "c + a wrong detail" above the correct shorter caption c (a
*half-truth*); CS-CLIP decomposes captions into entity and relation units,
builds one minimally edited foil per unit, and fine-tunes with a multi-caption
loss so that each unit beats its foil, keeping plain dual-encoder inference.

* losses: :func:`cs_clip_loss` and its terms (:func:`clip_loss`,
  :func:`negclip_loss`, :func:`component_loss`, :func:`alignment_loss`,
  :func:`rank_loss`, :func:`text_margin_loss`, :func:`paraphrase_loss`),
  configured by :class:`CSLossConfig`;
* metrics: :func:`half_truth_accuracy`, :func:`pairwise_caption_accuracy` and
  their per-item outcomes (:func:`half_truth_outcomes`,
  :func:`pairwise_caption_outcomes`), image <-> text R@1 hits
  (:func:`retrieval_hits`);
* synthetic proxy data: :func:`render_scenes`, :func:`units_and_foils`,
  :func:`half_truth_pairs`, :func:`training_captions`, :func:`half_truth_set`,
  :func:`tokenize`;
* per-item outcomes: :func:`pack_bits`, :func:`unpack_bits`,
  :func:`item_seed_interval`;
* the benchmark: :func:`benchmark_data`, the arms' loss terms
  (:func:`arm_weights`, :func:`finetune_terms`) and :func:`heldout_metrics`;
* tiny Flax NNX towers: :class:`ImageEncoder`, :class:`TextEncoder`,
  :class:`DualEncoder`.
"""

from jaxpapers.cs_clip._benchmark import (
  ARMS,
  BATCH_FIELDS,
  TEST_FIELDS,
  arm_weights,
  benchmark_data,
  finetune_terms,
  heldout_metrics,
)
from jaxpapers.cs_clip._losses import (
  ALIGN_TYPES,
  COMP_TYPES,
  RANK_REDUCTIONS,
  TERMS,
  CSLossConfig,
  alignment_loss,
  clip_loss,
  component_loss,
  cs_clip_loss,
  negclip_loss,
  paraphrase_loss,
  rank_loss,
  text_margin_loss,
)
from jaxpapers.cs_clip._metrics import (
  half_truth_accuracy,
  half_truth_outcomes,
  pairwise_caption_accuracy,
  pairwise_caption_outcomes,
  retrieval_hits,
)
from jaxpapers.cs_clip._models import (
  TEXT_KINDS,
  DualEncoder,
  ImageEncoder,
  TextEncoder,
)
from jaxpapers.cs_clip._scenes import (
  COLOURS,
  INVERSE,
  RELATIONS,
  SHAPES,
  Scene,
  SceneBatch,
  partner,
  render_scenes,
)
from jaxpapers.cs_clip._stats import item_seed_interval, pack_bits, unpack_bits
from jaxpapers.cs_clip._units import (
  MAX_LEN,
  U_MAX,
  VOCAB,
  HalfTruthSet,
  TrainingCaptions,
  entity_foil,
  half_truth_pairs,
  half_truth_set,
  relation_foil,
  relation_holds,
  tokenize,
  training_captions,
  units_and_foils,
)

__all__ = [
  "item_seed_interval",
  "pack_bits",
  "unpack_bits",
  "ARMS",
  "BATCH_FIELDS",
  "TEST_FIELDS",
  "arm_weights",
  "benchmark_data",
  "finetune_terms",
  "heldout_metrics",
  "ALIGN_TYPES",
  "COLOURS",
  "COMP_TYPES",
  "CSLossConfig",
  "DualEncoder",
  "HalfTruthSet",
  "INVERSE",
  "ImageEncoder",
  "MAX_LEN",
  "RANK_REDUCTIONS",
  "RELATIONS",
  "SHAPES",
  "Scene",
  "SceneBatch",
  "TERMS",
  "TEXT_KINDS",
  "TextEncoder",
  "TrainingCaptions",
  "U_MAX",
  "VOCAB",
  "alignment_loss",
  "clip_loss",
  "component_loss",
  "cs_clip_loss",
  "entity_foil",
  "half_truth_accuracy",
  "half_truth_outcomes",
  "half_truth_pairs",
  "half_truth_set",
  "negclip_loss",
  "pairwise_caption_accuracy",
  "pairwise_caption_outcomes",
  "paraphrase_loss",
  "partner",
  "rank_loss",
  "relation_foil",
  "relation_holds",
  "render_scenes",
  "retrieval_hits",
  "text_margin_loss",
  "tokenize",
  "training_captions",
  "units_and_foils",
]
