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
* :mod:`app`: the entry every experiment binary calls (flags, distributed
  start-up, start-up log); :func:`is_main_process`; :class:`MetricWriter`
  (JSONL + TensorBoard, process 0 only).
* Bad input: the project's policy (trace-time checks always; value checks raise
  eagerly and poison outputs with NaN under jit; documented values for degenerate
  input) is written in :mod:`jaxpapers.core.validation`, with its helpers
  :func:`check_array`, :func:`check_int`, :func:`check_float`,
  :func:`check_values`, :func:`poison`, :func:`is_concrete`, :func:`check_path`.
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
from jaxpapers.core import app
from jaxpapers.core.distributed import is_main_process
from jaxpapers.core.metric_writer import MetricWriter, read_metrics
from jaxpapers.core.validation import (
    check_array, check_float, check_int, check_path, check_values, is_concrete, poison,
)

__all__ = [
    "Checkpointer", "abstract_like", "config_to_dataclass", "validate_choice",
    "validate_positive", "DATA_DIR_ENV_VAR", "resolve_data_dir", "DATA_AXIS",
    "data_sharding", "make_mesh", "replicate", "replicated_sharding", "shard_batch",
    "progress", "environment_info", "read_results", "save_figure", "write_results",
    "TrainState", "train_loop", "maybe_initialize_distributed",
    "app", "is_main_process", "MetricWriter", "read_metrics",
]

# Claims as data, verdicts, shared tables and plots.
from jaxpapers.core.claims import (  # noqa: E402
    Claim, Verdict, judge, judge_all, parse_claims, VERDICTS,
)
from jaxpapers.core.report import (  # noqa: E402
    MeanStd, claims_table, curves_plot, fit_power_law, grouped_bars, markdown_table, scaling_plot,
)
from jaxpapers.core.results import command_line, git_info  # noqa: E402

__all__ += [
    "Claim", "Verdict", "judge", "judge_all", "parse_claims", "VERDICTS", "MeanStd",
    "claims_table", "curves_plot", "fit_power_law", "grouped_bars", "markdown_table",
    "scaling_plot", "command_line", "git_info",
    "check_array", "check_float", "check_int", "check_path", "check_values", "is_concrete",
    "poison",
]
from jaxpapers.core.sweep import CellStore, Sweep, SweepResult, run_sweep, runs_mesh  # noqa: E402

__all__ += ["CellStore", "Sweep", "SweepResult", "run_sweep", "runs_mesh"]

from jaxpapers.core.data_parallel import (  # noqa: E402
    host_local_batch_to_global, load_global_batch, process_batch_indices, process_batch_slice,
)

__all__ += [
    "host_local_batch_to_global", "load_global_batch", "process_batch_indices",
    "process_batch_slice",
]
