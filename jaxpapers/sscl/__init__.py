"""SSCL: semantic spatial consistency learning for dense CLIP adaptation.

"Semantic Spatial Consistency Learning" (NeurIPS 2026; no public paper text or
code beyond the abstract). Two objectives adapt CLIP's dense features: **CISC**
(Context-Invariant Spatiotemporal Consistency) makes the same anchor region
embed alike under varying context, and **SGSR** (Structure-Guided Semantic
Refinement) refines CLIP text-patch responses with a frozen vision foundation
model's patch affinities into text-conditioned dense pseudo-labels. Everything
beyond the abstract is a reconstruction (see each module docstring).

* SGSR: :func:`vfm_affinity`, :func:`refine_logits`, :func:`proxy_attention`,
  :func:`patch_text_logits`, :func:`dense_pseudolabels`, :func:`sgsr_targets`,
  :func:`dense_pseudolabel_ce`, :func:`dense_kl`;
* CISC: :func:`roi_align`, :func:`make_context_views`,
  :func:`region_consistency_loss`;
* the objective: :func:`sscl_loss`, :func:`keep_loss`, :class:`SSCLConfig`;
* evaluation: :func:`segment`, :func:`upsample_logits`,
  :func:`segmentation_miou`, :func:`region_embeddings`, :func:`feature_drift`,
  :func:`patch_labels`, :func:`linear_probe_accuracy`;
* the shapes-world benchmark and its fine-tuning arms: :func:`benchmark_data`,
  :func:`make_evaluate`, :func:`trivial_baselines`, :func:`vfm_features`,
  :func:`num_classes`, :data:`ARM_WEIGHTS`, :func:`finetune_batch`,
  :func:`teacher_targets`, :func:`arm_loss`, :func:`trainable_mask`,
  :func:`masked_adam`;
* tiny models and data: :class:`TinyCLIP`, :class:`TinyViT`,
  :class:`TinyTextEncoder`, :func:`dense_features`, :func:`handcrafted_vfm`,
  :func:`instance_vfm`, :func:`render_shapes_world`, :func:`tokenize`,
  :func:`class_prompts`, :func:`label_maps`.
"""

from jaxpapers.sscl._affinity import (
  proxy_attention,
  refine_logits,
  vfm_affinity,
)
from jaxpapers.sscl._benchmark import (
  VFMS,
  benchmark_data,
  make_evaluate,
  num_classes,
  trivial_baselines,
  vfm_features,
)
from jaxpapers.sscl._eval import (
  feature_drift,
  linear_probe_accuracy,
  patch_labels,
  region_embeddings,
  segment,
  segmentation_miou,
  upsample_logits,
)
from jaxpapers.sscl._finetune import (
  ARM_WEIGHTS,
  ARMS,
  LOSS_TERMS,
  arm_loss,
  finetune_batch,
  masked_adam,
  teacher_targets,
  trainable_mask,
)
from jaxpapers.sscl._losses import (
  CISC_MODES,
  SGSRTargets,
  SSCLConfig,
  dense_kl,
  dense_pseudolabel_ce,
  dense_pseudolabels,
  keep_loss,
  patch_text_logits,
  region_consistency_loss,
  sgsr_targets,
  sscl_loss,
)
from jaxpapers.sscl._models import (
  READOUTS,
  TinyCLIP,
  TinyTextEncoder,
  TinyViT,
  dense_features,
  handcrafted_vfm,
  instance_vfm,
)
from jaxpapers.sscl._roi import make_context_views, roi_align
from jaxpapers.sscl._shapes import (
  CLASS_SETS,
  COLOURS,
  MAX_LEN,
  MAX_OBJECTS,
  SHAPES,
  VOCAB,
  ShapesData,
  class_prompts,
  label_maps,
  render_shapes_world,
  tokenize,
)

__all__ = [
  "ARMS",
  "ARM_WEIGHTS",
  "LOSS_TERMS",
  "VFMS",
  "arm_loss",
  "benchmark_data",
  "finetune_batch",
  "make_evaluate",
  "masked_adam",
  "num_classes",
  "teacher_targets",
  "trainable_mask",
  "trivial_baselines",
  "vfm_features",
  "CISC_MODES",
  "CLASS_SETS",
  "COLOURS",
  "MAX_LEN",
  "MAX_OBJECTS",
  "READOUTS",
  "SHAPES",
  "SGSRTargets",
  "SSCLConfig",
  "ShapesData",
  "TinyCLIP",
  "TinyTextEncoder",
  "TinyViT",
  "VOCAB",
  "class_prompts",
  "dense_features",
  "dense_kl",
  "dense_pseudolabel_ce",
  "dense_pseudolabels",
  "feature_drift",
  "handcrafted_vfm",
  "instance_vfm",
  "label_maps",
  "linear_probe_accuracy",
  "patch_labels",
  "keep_loss",
  "make_context_views",
  "patch_text_logits",
  "proxy_attention",
  "refine_logits",
  "region_consistency_loss",
  "region_embeddings",
  "render_shapes_world",
  "roi_align",
  "segment",
  "segmentation_miou",
  "sgsr_targets",
  "sscl_loss",
  "tokenize",
  "upsample_logits",
  "vfm_affinity",
]
