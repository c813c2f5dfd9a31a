"""The one entry every experiment binary calls.

An experiment's ``main.py`` is::

  from jaxpapers.core import app

  if __name__ == "__main__":
    app.run("experiments.<paper>.train")  # its train_and_evaluate(config, workdir)

and runs as ``python -m experiments.<paper>.main --config=<file>
--workdir=<dir>``. The experiment is named by module so that it is imported
inside ``main``, after the distributed runtime has started: a module that
creates a JAX array at import time (a ``jnp`` default argument, a constant
table) starts the backend, after which ``jax.distributed.initialize()`` can no
longer run. ``app.run(callable)`` works too, for code that is known not to do
that.

Flags (defined by :func:`run`, never on import):

* ``--config``: an ``ml_collections`` config file, **locked** (existing fields
  can be overridden, ``--config.seed=1``; a misspelt field is an error).
* ``--workdir``: where results, plots, metrics and checkpoints go (required).
* ``--distributed=auto|on|off``: multi-host start-up, see
  :mod:`jaxpapers.core.distributed`. Unset, ``$JAXPAPERS_DISTRIBUTED`` decides,
  default ``auto`` (initialise only inside a detected multi-process job: SLURM,
  Open MPI, GKE TPU slices, Kubernetes indexed Jobs, or plain hosts given
  ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``).
* ``--reuse_host_memory`` (default on): keep freed host memory in the process so
  XLA:CPU reuses its temporary buffers instead of page-faulting fresh ones every
  step (:mod:`jaxpapers.core.host_memory`; glibc only, numerics unchanged).
* ``--restore_cells=<file>``: a snapshot of finished cells
  (:meth:`jaxpapers.core.CellStore.save_snapshot`) added to ``<workdir>/cells``
  before the run, so a long run resumes on another machine from its committed
  or copied cells (the workdir's own cells win).
* ``--post_hoc``: run a config whose claims are not registered (not in the
  committed ``claims.lock.json`` of the experiment); its verdicts are marked
  post-hoc. Without it such a run refuses to start (smoke runs, which issue no
  verdicts, need no registration); see :mod:`jaxpapers.core.registration`.

``main`` then, in this order: applies the host-memory setting, checks the
workdir, initialises the distributed runtime if asked (before anything touches a
JAX backend), imports the experiment, logs the host, process index/count, local
and global devices, backend, the mesh, package versions, workdir and config,
checks that every learning rate in the config is a finite number > 0
(:func:`jaxpapers.core.validate_learning_rates`), checks the claims'
registration and records the run's start commit, and calls
``train_and_evaluate(config, workdir)``.

**Workdir type.** ``train_and_evaluate`` receives an ``etils.epath.Path``. For a
local path it is ``os.PathLike`` and ``pathlib.Path(workdir)`` gives the same
folder, so experiment code written against ``pathlib`` keeps working. A remote
workdir (``gs://``, ``s3://``, ``az://``, ``hf://`` - any ``scheme://``) would
silently become a local folder under ``pathlib`` (``./gs:/bucket/run``), so the
app refuses it with a usage error unless the experiment declares that its code
writes through ``epath``/orbax only: ``app.run(fn, remote_workdir=True)``.

**Writes.** Only process 0 writes: the app itself writes only
``<workdir>/.jaxpapers.lock`` while the run lasts (removed at exit; see
:mod:`jaxpapers.core.workdir_lock`);
:class:`~jaxpapers.core.metric_writer.MetricWriter`, progress bars and
``core.train_loop``'s history are no-ops on the other processes, and the
results writer is process-0 aware. Checkpoints are written collectively by
orbax.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import re
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
from absl import app as absl_app
from absl import flags, logging
from etils import epath
from ml_collections import config_flags

from jaxpapers.core import config as config_lib
from jaxpapers.core import (
  distributed,
  host_memory,
  registration,
  sweep,
  workdir_lock,
)
from jaxpapers.core import mesh as mesh_lib

FLAGS = flags.FLAGS
TrainAndEvaluate = Callable[[Any, epath.Path], Any]
Target = TrainAndEvaluate | str

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def define_flags(
  flag_values: flags.FlagValues = FLAGS, argv: Sequence[str] | None = None
) -> None:
  """Defines ``--config`` (locked), ``--workdir`` and the harness flags once
  (module docstring).

  Args:
    flag_values: where to define them (the global ``FLAGS`` by default).
    argv: the command line the ``--config.<field>`` overrides are read from
      (``sys.argv`` when ``None``, as ``ml_collections`` does).

  Raises:
    flags.DuplicateFlagError: if another module already defined one of them with
      a different meaning (e.g. a binary that defines its own ``--workdir``).
  """
  if "config" not in flag_values:
    config_flags.DEFINE_config_file(
      "config",
      None,
      "Experiment config file (e.g. experiments/<paper>/configs/smoke.py); "
      "override fields with --config.<field>=<value>.",
      flag_values=flag_values,
      lock_config=True,
      sys_argv=None if argv is None else list(argv),
    )
    flags.mark_flag_as_required("config", flag_values=flag_values)
  if "workdir" not in flag_values:
    flags.DEFINE_string(
      "workdir",
      None,
      "Output directory: results.json, plots, metrics, checkpoints.",
      flag_values=flag_values,
    )
    flags.mark_flag_as_required("workdir", flag_values=flag_values)
  if "distributed" not in flag_values:
    flags.DEFINE_enum(
      "distributed",
      None,
      list(distributed.MODES),
      f"Multi-host start-up; unset: ${distributed.ENV_VAR}, else auto.",
      flag_values=flag_values,
    )
  if "post_hoc" not in flag_values:
    flags.DEFINE_bool(
      "post_hoc",
      False,
      (
        "Run even though the config's claims are not in the committed "
        "claims.lock.json; the run's verdicts are then marked post-hoc (see "
        "jaxpapers.core.registration)."
      ),
      flag_values=flag_values,
    )
  if "restore_cells" not in flag_values:
    flags.DEFINE_string(
      "restore_cells",
      None,
      (
        "A snapshot of finished cells (CellStore.save_snapshot, "
        ".json or .json.xz) added to <workdir>/cells before the run, "
        "so a run resumes on another machine."
      ),
      flag_values=flag_values,
    )
  if "reuse_host_memory" not in flag_values:
    flags.DEFINE_bool(
      "reuse_host_memory",
      True,
      (
        "Keep freed host memory (glibc mallopt) so XLA:CPU reuses its "
        "temporary buffers across steps; see jaxpapers.core.host_memory."
      ),
      flag_values=flag_values,
    )


def is_remote(path: str | os.PathLike[str]) -> bool:
  """Whether ``path`` is a URI such as ``gs://bucket/run`` (not a local
  path)."""
  match = _SCHEME.match(os.fspath(path))
  return bool(match) and match.group(1).lower() != "file"


def resolve_workdir(
  workdir: str | os.PathLike[str], *, remote_ok: bool = False
) -> epath.Path:
  """The ``--workdir`` value as an ``epath.Path``, never a mangled local folder.

  Args:
    workdir: a local path (``~`` is expanded, ``file://`` stripped) or a URI
      such as ``gs://bucket/run``.
    remote_ok: whether the experiment's code can write to a remote path
      (through ``epath`` or orbax only, no ``pathlib``/``open``).

  Returns:
    The path; nothing is created.

  Raises:
    ValueError: if ``workdir`` is empty, a URI while ``remote_ok`` is false, or
      a URI whose scheme ``etils.epath`` does not support.
  """
  value = (
    os.fspath(workdir) if isinstance(workdir, (str, os.PathLike)) else None
  )
  if not isinstance(value, str) or not value.strip():
    raise ValueError(
      f"workdir must be a non-empty path or URI, got {workdir!r}"
    )
  if is_remote(value):
    if not remote_ok:
      raise ValueError(
        f"--workdir={value} is a remote path, but this experiment writes "
        "through local file APIs (pathlib/open), which would create a local "
        "folder named like the URI. Give a local or mounted path (e.g. "
        "a gcsfuse mount) and copy the results there afterwards."
      )
    try:
      return epath.Path(value)
    except KeyError:
      raise ValueError(
        f"--workdir={value}: etils.epath supports no such scheme "
        "(it supports gs://, s3://, az://, hf://)"
      ) from None
  if value.startswith("file://"):
    value = value[len("file://") :]
  return epath.Path(os.path.expanduser(value))


def resolve_target(target: Target) -> TrainAndEvaluate:
  """The experiment function named by ``target``.

  Args:
    target: a callable ``(config, workdir) -> results``, or a module name
      (``"experiments.soda.train"``, whose ``train_and_evaluate`` is used) or
      ``"module:function"``.

  Raises:
    TypeError: if ``target`` is neither, or names something not callable.
    ImportError: if the module cannot be imported.
  """
  if callable(target):
    return target
  if not isinstance(target, str) or not target:
    raise TypeError(
      "target must be a callable (config, workdir) -> results or a module "
      f"name like 'experiments.soda.train', got {target!r}"
    )
  module_name, _, attr = target.partition(":")
  fn = getattr(
    importlib.import_module(module_name), attr or "train_and_evaluate", None
  )
  if not callable(fn):
    raise TypeError(
      f"{target!r} names no callable {attr or 'train_and_evaluate'}(config, "
      "workdir)"
    )
  return fn


def startup_info(
  config: Any = None, workdir: Any = None, *, config_file: str | None = None
) -> dict[str, Any]:
  """What a run starts on: host, processes, devices, backend, mesh, versions.

  Asking for devices starts the JAX backend, so call this only after
  :func:`jaxpapers.core.distributed.maybe_initialize_distributed`.
  """
  import flax  # local: only versions are needed
  import optax

  local = jax.local_devices()
  devices = jax.devices()
  mesh = mesh_lib.make_mesh()
  name = None
  if config is not None and hasattr(config, "get"):
    name = config.get("name", None)
  return {
    "host": socket.gethostname(),
    "process_index": jax.process_index(),
    "process_count": jax.process_count(),
    "backend": jax.default_backend(),
    "local_devices": {
      "count": len(local),
      "kinds": sorted({d.device_kind for d in local}),
    },
    "global_devices": {
      "count": len(devices),
      "kinds": sorted({d.device_kind for d in devices}),
    },
    "mesh": {
      "shape": dict(mesh.shape),
      "axis_types": [str(t) for t in getattr(mesh, "axis_types", ())],
    },
    "versions": {
      "jax": jax.__version__,
      "flax": flax.__version__,
      "optax": optax.__version__,
    },
    "workdir": None if workdir is None else str(workdir),
    "config_file": config_file,
    "config_name": name,
  }


def log_startup(info: dict[str, Any]) -> None:
  """Logs :func:`startup_info` with absl logging, one fact per line."""
  logging.info(
    "host %s, process %d of %d, backend %s",
    info["host"],
    info["process_index"],
    info["process_count"],
    info["backend"],
  )
  for key in ("local_devices", "global_devices"):
    logging.info(
      "%s: %d x %s",
      key.replace("_", " "),
      info[key]["count"],
      ", ".join(info[key]["kinds"]),
    )
  logging.info(
    "mesh %s (axis types %s)",
    info["mesh"]["shape"],
    ", ".join(info["mesh"]["axis_types"]),
  )
  logging.info(
    "versions: %s", ", ".join(f"{k} {v}" for k, v in info["versions"].items())
  )
  logging.info("workdir %s", info["workdir"])
  logging.info(
    "config %s%s",
    info["config_file"],
    f" (name {info['config_name']})" if info["config_name"] else "",
  )


def experiment_dir(target: Target, fn: TrainAndEvaluate) -> pathlib.Path | None:
  """The folder of the experiment's module (where its ``claims.lock.json``
  lives)."""
  name = (
    target.partition(":")[0]
    if isinstance(target, str)
    else getattr(fn, "__module__", None)
  )
  module = sys.modules.get(name) if name else None
  path = getattr(module, "__file__", None)
  return pathlib.Path(path).resolve().parent if path else None


def main(
  argv: Sequence[str],
  target: Target,
  *,
  remote_workdir: bool = False,
  flag_values: flags.FlagValues = FLAGS,
) -> None:
  """Runs one experiment from parsed flags (what :func:`run` calls).

  Args:
    argv: the positional arguments left by flag parsing (only the program name).
    target: the experiment, see :func:`resolve_target`; what it returns is
      dropped (absl would print a returned dict as an error).
    remote_workdir: whether the experiment may get a remote workdir.
    flag_values: where the flags were parsed (the global ``FLAGS`` by default).

  Raises:
    absl.app.UsageError: on stray positional arguments or an unusable workdir.
  """
  if len(argv) > 1:
    raise absl_app.UsageError(
      f"unexpected positional arguments: {list(argv[1:])}"
    )
  memory = (
    host_memory.reuse_host_memory()
    if flag_values.reuse_host_memory
    else host_memory.HostMemory(False, "--noreuse_host_memory")
  )
  try:
    workdir = resolve_workdir(flag_values.workdir, remote_ok=remote_workdir)
  except ValueError as e:
    raise absl_app.UsageError(str(e)) from None
  dist = distributed.initialize(flag_values.distributed)
  train_and_evaluate = resolve_target(target)
  config = flag_values.config
  config_file = config_flags.get_config_filename(flag_values["config"])
  logging.info(
    "distributed: mode %s, cluster %s, initialised %s",
    dist.mode,
    dist.cluster,
    dist.initialized,
  )
  logging.info(
    "host memory reuse: %s (%s)",
    "on" if memory.applied else "off",
    memory.reason,
  )
  log_startup(startup_info(config, workdir, config_file=config_file))
  # a negative rate would ascend the loss silently
  config_lib.validate_learning_rates(config)
  try:
    start = registration.begin_run(
      config,
      experiment_dir(target, train_and_evaluate),
      post_hoc=flag_values.post_hoc,
    )
  except registration.RegistrationError as e:
    raise absl_app.UsageError(str(e)) from None
  logging.info(
    "claims: %s (%s)",
    start["registration"]["status"],
    start["registration"].get("why", ""),
  )
  try:
    # one run per workdir: a second one refuses
    with workdir_lock.hold(workdir):
      if flag_values.restore_cells:
        added = sweep.CellStore(workdir / "cells").restore_snapshot(
          flag_values.restore_cells
        )
        logging.info(
          "restored %d cells from %s", added, flag_values.restore_cells
        )
      train_and_evaluate(config, workdir)
  except workdir_lock.WorkdirLockedError as e:
    raise absl_app.UsageError(str(e)) from None
  finally:
    registration.end_run()


def run(
  target: Target,
  *,
  remote_workdir: bool = False,
  argv: Sequence[str] | None = None,
) -> None:
  """Defines the flags, parses ``argv`` (``sys.argv`` by default) and runs
  :func:`main`.

  Args:
    target: the experiment: a module name such as ``"experiments.soda.train"``
      (its ``train_and_evaluate``, imported after distributed start-up),
      ``"module:function"``, or a callable ``(config, workdir) -> results``.
    remote_workdir: set it only if the experiment writes through ``epath`` or
      orbax alone, so a ``gs://`` workdir is safe (see the module docstring).
    argv: command line, program name first.
  """
  define_flags(argv=argv)
  absl_app.run(
    lambda args: main(args, target, remote_workdir=remote_workdir),
    argv=list(sys.argv if argv is None else argv),
  )
