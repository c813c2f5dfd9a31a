"""Hyperparameter transfer for Dense Associative Memories (arXiv 2605.10164).

A DenseAM (energy ``E(x) = 1/2 ||x||^2 - gamma Phi(alpha Xi g(x))`` with a
log-sum-exp or rectified-polynomial Lagrangian, unrolled gradient-descent
dynamics that reuse the memories ``Xi`` in every step and in both the up and the
down map), exponent-based width parametrisations with the Adam optimiser, and
the tools that test whether a tuned learning rate transfers across the number of
memories K: vmapped learning-rate sweeps on the shared sweep engine, the fitted
optimum and coordinate checks.

The paper's own exponents were not available to us:
:meth:`Parametrization.standard` is exact, :meth:`Parametrization.derived` is a
prescription derived here by dimensional analysis of the update size (not read
from the paper; its docstring has the derivation), the ``hypothesis_*`` presets
are earlier reconstructions, and :meth:`Parametrization.from_paper` raises
``NotImplementedError``.

Example::

  from jaxpapers import denseam as dam
  train, test = dam.load_digits_task("classify", seed=0)
  cfg = dam.DenseAMConfig(energy="poly", n=3, steps=4)
  p = dam.Parametrization.derived("poly", 3, base_width=16)
  losses = dam.lr_sweep(jax.random.key(0), [16, 64, 256], lrs, cfg, p, train, steps=200, seeds=3)
  eta_star = dam.optimal_lr(losses.mean(-1), lrs)          # [3]: flat in K if the rule holds
"""

from jaxpapers.denseam._data import digits_baselines, load_digits_task
from jaxpapers.denseam._model import (
  ENERGIES,
  INPUT_NORMS,
  TASKS,
  Batch,
  DenseAMConfig,
  energy,
  energy_grad,
  loss_fn,
  run_dynamics,
)
from jaxpapers.denseam._param import (
  BETA_RULES,
  Parametrization,
  init_memories,
  make_optimizer,
)
from jaxpapers.denseam._settings import parse_setting
from jaxpapers.denseam._summary import (
  log_drift,
  seed_mean,
  transfer_metrics,
  transfer_summary,
)
from jaxpapers.denseam._transfer import (
  coord_check,
  lr_sweep,
  optimal_lr,
  train_grid,
)

__all__ = [
  "BETA_RULES",
  "ENERGIES",
  "INPUT_NORMS",
  "TASKS",
  "Batch",
  "DenseAMConfig",
  "Parametrization",
  "coord_check",
  "digits_baselines",
  "energy",
  "energy_grad",
  "init_memories",
  "load_digits_task",
  "log_drift",
  "loss_fn",
  "lr_sweep",
  "make_optimizer",
  "optimal_lr",
  "parse_setting",
  "run_dynamics",
  "seed_mean",
  "train_grid",
  "transfer_metrics",
  "transfer_summary",
]
