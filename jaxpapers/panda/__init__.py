"""PANDA: Prior-guided AttentioNal Dual-path Architecture for two-stage
hypergraph networks.

A plugin for HGNN, HyperGCN, PhenomNN and the complex directed GeDi-HNN: the
main path mixes receiver-normalised GATv2 attention with the backbone's
structural prior through a learned per-incidence, per-head gate; a
non-normalised auxiliary path lets each sender add its own transformed message.
With the gate fixed to the prior and no auxiliary path, a GeDi+PANDA layer is
``X W_res + Q_N X W_u + b`` (GeDi's complex convolution).

References: PANDA (NeurIPS 2026; official code jainris/panda; arXiv id not yet
available); GeDi-HNN, Fiorini et al., "Let There Be Direction in Hypergraph
Neural Networks", TMLR 2024.
"""

from jaxpapers.panda._data import load_dataset, reduce_features
from jaxpapers.panda._models import (
  ABLATIONS,
  PandaGeDi,
  PandaHGNN,
  PandaHyperGCN,
  PandaPhenomNN,
  coalesced_graph,
  make_model,
)
from jaxpapers.panda._reference import (
  REFERENCE_ATTENTION_TYPES,
  load_reference_weights,
  reference_config,
  reference_stage_names,
)
from jaxpapers.panda._search import (
  SEARCH_ARMS,
  SEARCH_SPACE_ORDER,
  TRACED_TRIAL_HPARAMS,
  TrialCache,
  applicable_hparams,
  check_search_space,
  count_params,
  draw_trial,
  match_hidden,
  select_trial,
  structure_model_fn,
  trial_keys,
  trial_model_fn,
  trial_structure,
)
from jaxpapers.panda._stage import (
  PandaConfig,
  PandaLayer,
  PandaStage,
  StageAux,
  prior_table_layout,
  stage_prior_factors,
  stage_priors,
)
from jaxpapers.panda._train import (
  FAST_COMPILE,
  TRACED_MODEL_HPARAMS,
  best_val_test,
  eval_step,
  fit,
  init,
  make_trainer,
  sweep_fns,
  train_step,
  with_hparams,
)

__all__ = [
  "prior_table_layout",
  "ABLATIONS",
  "PandaGeDi",
  "PandaHGNN",
  "PandaHyperGCN",
  "PandaPhenomNN",
  "make_model",
  "coalesced_graph",
  "PandaConfig",
  "PandaLayer",
  "PandaStage",
  "StageAux",
  "stage_priors",
  "stage_prior_factors",
  "FAST_COMPILE",
  "best_val_test",
  "eval_step",
  "fit",
  "init",
  "make_trainer",
  "sweep_fns",
  "train_step",
  "with_hparams",
  "TRACED_MODEL_HPARAMS",
  "REFERENCE_ATTENTION_TYPES",
  "load_reference_weights",
  "reference_config",
  "reference_stage_names",
  # the equal-budget search: trial draws, structures and the cache of compiled
  # trial programs
  "SEARCH_ARMS",
  "SEARCH_SPACE_ORDER",
  "TRACED_TRIAL_HPARAMS",
  "TrialCache",
  "applicable_hparams",
  "check_search_space",
  "count_params",
  "match_hidden",
  "draw_trial",
  "select_trial",
  "structure_model_fn",
  "trial_keys",
  "trial_model_fn",
  "trial_structure",
  # the benchmark's datasets
  "load_dataset",
  "reduce_features",
]
