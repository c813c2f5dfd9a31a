"""Multi-host start-up, on the same code path as one host."""

from __future__ import annotations

import os

import jax

ENV_VAR = "JAXPAPERS_DISTRIBUTED"
_initialized = False


def maybe_initialize_distributed() -> bool:
  """Calls ``jax.distributed.initialize()`` once when ``$JAXPAPERS_DISTRIBUTED=1``.

  On TPU pods, SLURM and other clusters JAX reads the coordinator address and
  process ids from the environment. Returns whether it initialised.
  """
  global _initialized
  if _initialized or os.environ.get(ENV_VAR, "") in ("", "0"):
    return False
  jax.distributed.initialize()
  _initialized = True
  return True
