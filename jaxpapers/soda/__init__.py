"""SODA: Optimistic Dual Averaging (arXiv:2605.11172) as optax transformations.

The primary API is the wrapper :func:`soda`, which replaces weight decay of any
optax optimizer by the anchored ``1/(k+2)`` primal average ``x_{k+1} = x_k +
u_k - (x_k - z_0)/(k+2)``. The standalone LMO-based optimizers of the paper
(:func:`moda`, :func:`soda_lmo`) and their building blocks are also exported,
with the paper's horizon study (:func:`horizon_optimizer`, :func:`wsd_schedule`,
:func:`digits_task`, :func:`lm_task`) and the functions that read its results
(:func:`best_run`, :func:`horizon_gaps`, :func:`wd_transfer`,
:func:`grid_edges`).
"""

from jaxpapers.soda._horizon import (
  GPT,
  DigitsMLP,
  digits_task,
  gpt_hidden_mask,
  horizon_optimizer,
  lm_task,
  load_token_shards,
  mlp_hidden_mask,
  read_token_shard,
  wsd_schedule,
)
from jaxpapers.soda._lmo import (
  LmoDimensionNumbers,
  OptimisticMomentumState,
  lmo_direction,
  newton_schulz,
  scale_by_lmo,
  scale_by_optimistic_momentum,
)
from jaxpapers.soda._standalone import (
  SodaLmoState,
  moda,
  soda_adamw,
  soda_eval_params,
  soda_lion,
  soda_lmo,
  soda_muon,
  soda_nadam,
)
from jaxpapers.soda._study import (
  best_run,
  grid_edges,
  horizon_gaps,
  wd_transfer,
)
from jaxpapers.soda._sweep import grid_mesh, horizon_hparams, horizon_sweep
from jaxpapers.soda._wrapper import SodaState, soda

__all__ = (
  "GPT",
  "DigitsMLP",
  "LmoDimensionNumbers",
  "OptimisticMomentumState",
  "SodaLmoState",
  "SodaState",
  "best_run",
  "digits_task",
  "gpt_hidden_mask",
  "grid_edges",
  "grid_mesh",
  "horizon_gaps",
  "horizon_hparams",
  "horizon_optimizer",
  "horizon_sweep",
  "lm_task",
  "lmo_direction",
  "load_token_shards",
  "mlp_hidden_mask",
  "moda",
  "newton_schulz",
  "read_token_shard",
  "scale_by_lmo",
  "scale_by_optimistic_momentum",
  "soda",
  "soda_adamw",
  "soda_eval_params",
  "soda_lion",
  "soda_lmo",
  "soda_muon",
  "soda_nadam",
  "wd_transfer",
  "wsd_schedule",
)
