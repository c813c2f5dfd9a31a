"""Experiment binaries: one folder per paper, plus ``reproduce`` (the main job).

Setting ``JAXPAPERS_DISTRIBUTED=1`` makes every binary call
``jax.distributed.initialize()`` before anything else touches JAX, so the same
command runs on each host of a multi-host job.
"""

from jaxpapers.core.distributed import maybe_initialize_distributed as _maybe_init

_maybe_init()
