"""SODA: Optimistic Dual Averaging (arXiv:2605.11172) as optax transformations.

The primary API is the wrapper :func:`soda`, which replaces weight decay of
any optax optimizer by the anchored ``1/(k+2)`` primal average
``x_{k+1} = x_k + u_k - (x_k - z_0)/(k+2)``. The standalone LMO-based
optimizers of the paper (:func:`moda`, :func:`soda_lmo`) and their building
blocks are also exported.
"""

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
from jaxpapers.soda._wrapper import SodaState, soda

__all__ = (
  "LmoDimensionNumbers",
  "OptimisticMomentumState",
  "SodaLmoState",
  "SodaState",
  "lmo_direction",
  "moda",
  "newton_schulz",
  "scale_by_lmo",
  "scale_by_optimistic_momentum",
  "soda",
  "soda_adamw",
  "soda_eval_params",
  "soda_lion",
  "soda_lmo",
  "soda_muon",
  "soda_nadam",
)
