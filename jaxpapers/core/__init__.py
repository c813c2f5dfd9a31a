"""Shared training infrastructure for every jaxpapers paper package.

* :class:`TrainState` and :func:`train_loop`: NNX models kept functional, a
  resumable step loop with a progress bar, periodic eval and metric history.
* :class:`Checkpointer`: orbax ``CheckpointManager`` with async saves and
  restores against abstract targets.
* :func:`make_mesh`, :func:`shard_batch`, :func:`replicate`: data parallelism
  with ``jax.jit`` over a ``NamedSharding`` mesh.
* :func:`write_results`, :func:`save_figure`: ``<workdir>/results.json`` and PNGs.
* :func:`config_to_dataclass`, :func:`validate_choice`: typed configs with
  clear errors.
* :func:`resolve_data_dir`: the one place that finds real datasets.
"""

from jaxpapers.core.checkpoint import Checkpointer, abstract_like
from jaxpapers.core.config import config_to_dataclass, validate_choice, validate_positive
from jaxpapers.core.data import ENV_VAR as DATA_DIR_ENV_VAR, resolve_data_dir
from jaxpapers.core.distributed import maybe_initialize_distributed
from jaxpapers.core.mesh import (
    DATA_AXIS, data_sharding, make_mesh, replicate, replicated_sharding, shard_batch,
)
from jaxpapers.core.progress import progress
from jaxpapers.core.results import environment_info, read_results, save_figure, write_results
from jaxpapers.core.train import TrainState, train_loop

__all__ = [
    "Checkpointer", "abstract_like", "config_to_dataclass", "validate_choice",
    "validate_positive", "DATA_DIR_ENV_VAR", "resolve_data_dir", "DATA_AXIS",
    "data_sharding", "make_mesh", "replicate", "replicated_sharding", "shard_batch",
    "progress", "environment_info", "read_results", "save_figure", "write_results",
    "TrainState", "train_loop", "maybe_initialize_distributed",
]
from jaxpapers.core.sweep import CellStore, Sweep, SweepResult, run_sweep, runs_mesh  # noqa: E402

__all__ += ["CellStore", "Sweep", "SweepResult", "run_sweep", "runs_mesh"]
