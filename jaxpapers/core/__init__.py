"""Shared training infrastructure for every jaxpapers paper package.

* :class:`TrainState` and :func:`train_loop`: NNX models kept functional, a
  resumable step loop with a progress bar, periodic eval and metric history.
* :class:`Checkpointer`: orbax ``CheckpointManager`` with async saves and
  restores against abstract targets, verified against a digest of every array
  recorded when it was written (a corrupt checkpoint falls back to the one
  before).
* :func:`cached_json`, :func:`cached_arrays` (:mod:`jaxpapers.core.cache`): the
  one file cache of the harness (atomic, process-0 writes, verified reads; a
  corrupt file is recomputed with a warning);
  :mod:`jaxpapers.core.workdir_lock`: one run per workdir.
* :func:`make_mesh`, :func:`shard_batch`, :func:`replicate`: data parallelism
  with ``jax.jit`` over a ``NamedSharding`` mesh.
* :func:`write_results`, :func:`save_figure`: ``<workdir>/results.json`` and
  PNGs.
* :func:`config_view`, :func:`config_to_dataclass`, :func:`validate_choice`:
  typed configs with clear errors.
* :func:`resolve_data_dir` / :func:`locate_data_dir`: the one place that finds
  real datasets (and says where); :func:`resolve_inside`: names joined to a data
  root stay inside it.
* :mod:`app`: the entry every experiment binary calls (flags, distributed
  start-up, start-up log); :func:`is_main_process`; :class:`MetricWriter`
  (JSONL + TensorBoard, process 0 only).
* :class:`Sweep` / :func:`run_sweep`: grids of small runs, vmapped over a runs
  axis sharded over the mesh, stepped in ``lax.scan`` chunks with an orbax
  checkpoint per chunk; :class:`CellStore`: atomic per-cell results;
  :class:`CellRunner`: fills a store cell by cell within a CPU budget, or only
  reads it; :func:`fill_cells`: the resumable loop over a grid of named cells.
* :class:`Claim`, :func:`judge`: claims as data and their verdicts (held /
  partly / not reproduced / inconclusive), written into results.json by
  :func:`write_results`; :func:`markdown_table`, :func:`claims_table` and the
  standard plots (:func:`curves_plot`, :func:`grouped_bars`,
  :func:`scaling_plot`).
* :mod:`reporting`: tables and figures declared in a config
  (:class:`reporting.Report`: metric paths, formats, series, axes) and rendered
  from a results record by :func:`write_results` or, from a committed record, by
  ``experiments.report --render``.
* :mod:`rejudge`: a committed results record judged again under the claims of
  the committed lock (``experiments.reproduce --rejudge``); every measured
  number is kept.
* :mod:`stats`: noise that fits the measurement, on results (NumPy/SciPy
  float64): :func:`t_interval`, :func:`paired_difference`,
  :func:`log_ratio_interval`, :func:`paired_bootstrap`, :func:`sign_flip_test`,
  :func:`seed_summary` (a metric's seed mean, std and 95% half-width as a
  results entry), and for planning :func:`seeds_needed` and
  :func:`half_width_at`.
* :mod:`benchmark` and :mod:`timing`: the JSON record every script in
  ``benchmarks/`` writes (targets, host, raw rows), an interleaved side-by-side
  timer and a compile counter.
* Bad input: the project's policy (trace-time checks always; value checks raise
  eagerly and poison outputs with NaN under jit; documented values for
  degenerate input) is written in :mod:`jaxpapers.core.validation`, with its
  helpers :func:`check_array`, :func:`check_int`, :func:`check_float`,
  :func:`check_values`, :func:`poison`, :func:`is_concrete`, :func:`check_path`.
"""

from jaxpapers.core import app, reporting
from jaxpapers.core.cache import CorruptFileError, cached_arrays, cached_json
from jaxpapers.core.checkpoint import (
  Checkpointer,
  CorruptCheckpointError,
  abstract_like,
)
from jaxpapers.core.claims import (
  VERDICTS,
  Claim,
  Verdict,
  judge,
  judge_all,
  parse_claims,
)
from jaxpapers.core.config import (
  config_to_dataclass,
  config_view,
  validate_choice,
  validate_learning_rates,
  validate_positive,
  validate_seeds,
)
from jaxpapers.core.data import ENV_VAR as DATA_DIR_ENV_VAR
from jaxpapers.core.data import (
  DataLocation,
  locate_data_dir,
  resolve_data_dir,
  resolve_inside,
)
from jaxpapers.core.data_parallel import (
  host_local_batch_to_global,
  load_global_batch,
  process_batch_indices,
  process_batch_slice,
)
from jaxpapers.core.distributed import (
  is_main_process,
  maybe_initialize_distributed,
)
from jaxpapers.core.host_memory import HostMemory, reuse_host_memory
from jaxpapers.core.mesh import (
  DATA_AXIS,
  data_sharding,
  make_mesh,
  replicate,
  replicated_sharding,
  shard_batch,
)
from jaxpapers.core.metric_writer import MetricWriter, read_metrics
from jaxpapers.core.progress import progress
from jaxpapers.core.report import (
  MeanStd,
  PowerLawFit,
  ci95_halfwidth,
  claims_table,
  curves_plot,
  fit_power_law,
  grouped_bars,
  markdown_table,
  power_law_fit,
  scaling_plot,
)
from jaxpapers.core.results import (
  command_line,
  environment_info,
  git_info,
  read_results,
  save_figure,
  write_results,
)
from jaxpapers.core.stats import (
  BootstrapInterval,
  LogRatioInterval,
  SeedsNeeded,
  SignFlipResult,
  TInterval,
  cluster_bootstrap,
  half_width_at,
  log_ratio_interval,
  paired_bootstrap,
  paired_difference,
  seed_summary,
  seeds_needed,
  sign_flip_test,
  t_interval,
)
from jaxpapers.core.sweep import (
  CellRunner,
  CellStore,
  Sweep,
  SweepResult,
  fill_cells,
  run_sweep,
  runs_mesh,
)
from jaxpapers.core.train import TrainState, train_loop
from jaxpapers.core.validation import (
  check_array,
  check_float,
  check_int,
  check_path,
  check_values,
  is_concrete,
  poison,
)

__all__ = [
  # training state, loop, checkpoints
  "TrainState",
  "train_loop",
  "Checkpointer",
  "CorruptCheckpointError",
  "abstract_like",
  "cached_json",
  "cached_arrays",
  "CorruptFileError",
  # the experiment harness: app entry, sweep engine, metric and results writers
  "app",
  "reporting",
  "is_main_process",
  "maybe_initialize_distributed",
  "reuse_host_memory",
  "HostMemory",
  "MetricWriter",
  "read_metrics",
  "Sweep",
  "SweepResult",
  "run_sweep",
  "runs_mesh",
  "CellStore",
  "CellRunner",
  "fill_cells",
  "write_results",
  "read_results",
  "save_figure",
  "environment_info",
  "command_line",
  "git_info",
  "progress",
  # claims as data, tables and plots
  "Claim",
  "Verdict",
  "VERDICTS",
  "judge",
  "judge_all",
  "parse_claims",
  "MeanStd",
  "markdown_table",
  "claims_table",
  "curves_plot",
  "grouped_bars",
  "scaling_plot",
  "fit_power_law",
  "power_law_fit",
  "PowerLawFit",
  "ci95_halfwidth",
  # statistics on results: intervals, paired tests, seed counts
  "t_interval",
  "paired_difference",
  "log_ratio_interval",
  "paired_bootstrap",
  "cluster_bootstrap",
  "sign_flip_test",
  "seeds_needed",
  "seed_summary",
  "half_width_at",
  "TInterval",
  "LogRatioInterval",
  "BootstrapInterval",
  "SignFlipResult",
  "SeedsNeeded",
  # devices
  "DATA_AXIS",
  "make_mesh",
  "data_sharding",
  "replicated_sharding",
  "shard_batch",
  "replicate",
  "host_local_batch_to_global",
  "load_global_batch",
  "process_batch_indices",
  "process_batch_slice",
  # configs, data, validation
  "config_to_dataclass",
  "config_view",
  "validate_choice",
  "validate_positive",
  "validate_seeds",
  "validate_learning_rates",
  "DATA_DIR_ENV_VAR",
  "resolve_data_dir",
  "locate_data_dir",
  "DataLocation",
  "resolve_inside",
  "check_array",
  "check_float",
  "check_int",
  "check_path",
  "check_values",
  "is_concrete",
  "poison",
]
