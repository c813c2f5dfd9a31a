"""Dual-Rate Diffusion: a sparse heavy context encoder and a light per-step
denoiser.

Ruhe, Hoogeboom, Bartosh, Heek, Mensink, Salimans. "Dual-Rate Diffusion:
Accelerating diffusion models with an interleaved heavy-light network",
arXiv:2605.18190 (NeurIPS 2026). No code is public; the networks, the
stale-context training objective, the refresh-set sampler and the combination
with Moment Matching Distillation (arXiv:2406.04103) are reconstructions.
"""

from jaxpapers.dual_rate._schedule import (
  NoiseSchedule,
  ancestral_step,
  ddim_step,
  edm_preconditioning,
  edm_sigma_to_t,
  eps_from_x,
  karras_sigmas,
  loss_weight,
  output_to_x,
  posterior,
  q_sample,
  v_from_x_eps,
  x_from_eps,
  x_from_v,
)

__all__ = [
  "NoiseSchedule",
  "ancestral_step",
  "ddim_step",
  "edm_preconditioning",
  "edm_sigma_to_t",
  "eps_from_x",
  "karras_sigmas",
  "loss_weight",
  "output_to_x",
  "posterior",
  "q_sample",
  "v_from_x_eps",
  "x_from_eps",
  "x_from_v",
]

from jaxpapers.dual_rate._networks import (
  ContextEncoder,
  DualRateModel,
  LightDenoiser,
  SingleNetwork,
  build_networks,
  count_params,
  timestep_embedding,
)
from jaxpapers.dual_rate._sampling import (
  REFRESH_KINDS,
  SAMPLERS,
  call_counts,
  component_flops,
  refresh_schedule,
  sample,
  sampling_cost,
  speedup,
  wall_time,
  xla_flops,
)
from jaxpapers.dual_rate._training import (
  COUPLINGS,
  diffusion_loss,
  dual_rate_loss,
  make_train_step,
  sample_staleness,
)

__all__ += [
  "ContextEncoder",
  "DualRateModel",
  "LightDenoiser",
  "SingleNetwork",
  "build_networks",
  "count_params",
  "timestep_embedding",
  "REFRESH_KINDS",
  "SAMPLERS",
  "call_counts",
  "component_flops",
  "refresh_schedule",
  "sample",
  "sampling_cost",
  "speedup",
  "wall_time",
  "xla_flops",
  "COUPLINGS",
  "diffusion_loss",
  "dual_rate_loss",
  "make_train_step",
  "sample_staleness",
]

from jaxpapers.dual_rate._data import (
  DATASETS,
  SHAPE_CLASSES,
  SourceImages,
  digits,
  load_imagenet64,
  load_numpy,
  load_tfds,
  num_classes,
  render_shapes,
  shapes,
  tfds_builder,
)
from jaxpapers.dual_rate._eval import (
  FeatureClassifier,
  classifier_accuracy,
  extract_features,
  fd_metric,
  frechet_distance,
  kernel_inception_distance,
  kid_metric,
  precision_recall_knn,
  train_classifier,
)
from jaxpapers.dual_rate._fdproxy import (
  FD_REFERENCES,
  FDProxy,
  fd_splits,
  measure_sampler,
)
from jaxpapers.dual_rate._fit import fit, fit_step, make_losses, mmd_step_loss
from jaxpapers.dual_rate._mmd import (
  MMDPair,
  last_refresh_index,
  mmd_losses,
  mmd_pair_loss,
)
from jaxpapers.dual_rate._quality import (
  aggregate_rows,
  gain_at_equal_cost,
  gain_in_std,
  matched_quality,
  paired_gain,
)
from jaxpapers.dual_rate._training import (
  EmaState,
  ema_tracker,
  find_ema,
  training_optimizer,
)

__all__ += [
  "EmaState",
  "ema_tracker",
  "find_ema",
  "training_optimizer",
  "MMDPair",
  "last_refresh_index",
  "mmd_losses",
  "mmd_pair_loss",
  "FeatureClassifier",
  "FDProxy",
  "FD_REFERENCES",
  "fd_splits",
  "measure_sampler",
  "matched_quality",
  "aggregate_rows",
  "gain_at_equal_cost",
  "gain_in_std",
  "paired_gain",
  "classifier_accuracy",
  "extract_features",
  "fd_metric",
  "frechet_distance",
  "kernel_inception_distance",
  "kid_metric",
  "precision_recall_knn",
  "train_classifier",
  "DATASETS",
  "SHAPE_CLASSES",
  "digits",
  "load_numpy",
  "load_tfds",
  "num_classes",
  "render_shapes",
  "shapes",
  "tfds_builder",
  "SourceImages",
  "load_imagenet64",
  "fit",
  "fit_step",
  "make_losses",
  "mmd_step_loss",
]
