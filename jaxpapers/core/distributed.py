"""Multi-host start-up, on the same code path as one host.

Every experiment binary (through :mod:`jaxpapers.core.app`) calls
:func:`maybe_initialize_distributed` first thing in ``main``, before anything
touches a JAX backend. Nothing here runs on import.

The mode comes from the binary's ``--distributed`` flag, else from
``$JAXPAPERS_DISTRIBUTED``, else ``auto``:

* ``off`` (also ``0``, ``false``, ``no``): one process, never initialise.
* ``on`` (also ``1``, ``true``, ``yes``): always call
  ``jax.distributed.initialize()``; errors propagate.
* ``auto`` (the default): initialise only when the environment describes a job
  of more than one process that ``jax.distributed.initialize()`` can start from
  (see :func:`detect_cluster`); on a laptop or a single-host machine nothing
  happens and nothing can fail.

Explicit settings for plain hosts (no cluster manager), read from the
environment and passed to ``jax.distributed.initialize``:

* ``JAX_COORDINATOR_ADDRESS``: ``host:port`` of process 0 (JAX reads it too).
* ``JAX_NUM_PROCESSES``: the number of processes in the job.
* ``JAX_PROCESS_ID``: this process's index, ``0 .. JAX_NUM_PROCESSES - 1``.

All three set (with more than one process) count as a detected cluster in
``auto`` mode. JAX's own variables (``JAX_COORDINATOR_PORT``,
``JAX_LOCAL_DEVICE_IDS``, ``JAX_COORDINATOR_BIND_ADDRESS``) keep their meaning.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

import jax
from absl import logging

ENV_VAR = "JAXPAPERS_DISTRIBUTED"
COORDINATOR_ADDRESS_ENV = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
MODES = ("auto", "on", "off")

_ALIASES = {
  "": "auto",
  "auto": "auto",
  "1": "on",
  "on": "on",
  "true": "on",
  "yes": "on",
  "0": "off",
  "off": "off",
  "false": "off",
  "no": "off",
}
_SLURM_VARS = (
  "SLURM_JOB_ID",
  "SLURM_STEP_NODELIST",
  "SLURM_NTASKS",
  "SLURM_PROCID",
  "SLURM_LOCALID",
)
_initialized = False


def resolve_mode(
  mode: str | None = None, environ: Mapping[str, str] | None = None
) -> str:
  """The distributed mode: ``mode`` if given, else ``$JAXPAPERS_DISTRIBUTED``,
  else ``auto``.

  Args:
    mode: ``"auto"``, ``"on"`` or ``"off"`` (or an alias: ``1/0``,
      ``true/false``, ``yes/no``); ``None`` defers to the environment.
    environ: the environment to read (``os.environ`` by default).

  Returns:
    One of :data:`MODES`.

  Raises:
    ValueError: if the value is not one of the accepted spellings.
  """
  environ = os.environ if environ is None else environ
  source = "mode" if mode is not None else f"${ENV_VAR}"
  raw = mode if mode is not None else environ.get(ENV_VAR, "")
  resolved = _ALIASES.get(str(raw).strip().lower())
  if resolved is None:
    raise ValueError(
      f"{source} must be one of auto|on|off (or 1/0, true/false), got {raw!r}"
    )
  return resolved


def _int_env(environ: Mapping[str, str], name: str) -> int | None:
  value = environ.get(name, "").strip()
  if not value:
    return None
  try:
    return int(value)
  except ValueError:
    raise ValueError(f"${name} must be an integer, got {value!r}") from None


def explicit_settings(
  environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
  """``jax.distributed.initialize`` keyword arguments given by the environment.

  Reads ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and
  ``JAX_PROCESS_ID``; unset ones are left out (JAX then detects them from the
  cluster, if any).

  Raises:
    ValueError: if a count or an id is not an integer, or the id is out of
      range.
  """
  environ = os.environ if environ is None else environ
  kwargs: dict[str, Any] = {}
  if address := environ.get(COORDINATOR_ADDRESS_ENV, "").strip():
    kwargs["coordinator_address"] = address
  num = _int_env(environ, NUM_PROCESSES_ENV)
  pid = _int_env(environ, PROCESS_ID_ENV)
  if num is not None:
    if num < 1:
      raise ValueError(f"${NUM_PROCESSES_ENV} must be >= 1, got {num}")
    kwargs["num_processes"] = num
  if pid is not None:
    if pid < 0 or (num is not None and pid >= num):
      raise ValueError(
        f"${PROCESS_ID_ENV} must be in [0, ${NUM_PROCESSES_ENV}), got {pid}"
      )
    kwargs["process_id"] = pid
  return kwargs


def detect_cluster(environ: Mapping[str, str] | None = None) -> str | None:
  """Names the multi-process job the environment describes, or ``None``.

  Checks, without any network call, the environment variables through which
  ``jax.distributed.initialize()`` finds its coordinator:

  * ``explicit``: ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES > 1`` and
    ``JAX_PROCESS_ID`` all set (plain hosts).
  * ``slurm``: ``SLURM_JOB_ID``, ``SLURM_STEP_NODELIST``, ``SLURM_NTASKS > 1``,
    ``SLURM_PROCID``, ``SLURM_LOCALID`` (inside ``srun``).
  * ``ompi``: ``OMPI_MCA_orte_hnp_uri`` with ``OMPI_COMM_WORLD_SIZE > 1``
    (``mpirun`` of Open MPI 4).
  * ``gketpu``: ``TPU_PROCESS_ADDRESSES`` or ``TPU_WORKER_HOSTNAMES`` listing
    more than one host (TPU slices on GKE).
  * ``k8s``: ``KUBERNETES_SERVICE_HOST`` and ``JOB_COMPLETION_INDEX`` (an
    indexed Job) with the ``kubernetes`` package installed.

  A one-process job of any kind returns ``None``: it needs no runtime. TPU VMs
  created with ``gcloud`` (pod slices without these variables) are found by JAX
  through the metadata server only; run them with ``--distributed=on``.
  """
  environ = os.environ if environ is None else environ

  def count(name: str) -> int:
    try:
      return int(environ.get(name, "1"))
    except ValueError:
      return 1

  explicit = (
    environ.get(COORDINATOR_ADDRESS_ENV)
    and environ.get(PROCESS_ID_ENV)
    and environ.get(NUM_PROCESSES_ENV)
  )
  if explicit and count(NUM_PROCESSES_ENV) > 1:
    return "explicit"
  if all(v in environ for v in _SLURM_VARS) and count("SLURM_NTASKS") > 1:
    return "slurm"
  if "OMPI_MCA_orte_hnp_uri" in environ and count("OMPI_COMM_WORLD_SIZE") > 1:
    return "ompi"
  hosts = (
    environ.get("TPU_PROCESS_ADDRESSES")
    or environ.get("TPU_WORKER_HOSTNAMES")
    or ""
  )
  if len([h for h in hosts.split(",") if h.strip()]) > 1:
    return "gketpu"
  if (
    "KUBERNETES_SERVICE_HOST" in environ
    and "JOB_COMPLETION_INDEX" in environ
    and importlib.util.find_spec("kubernetes") is not None
  ):
    return "k8s"
  return None


@dataclasses.dataclass(frozen=True)
class DistributedInfo:
  """What :func:`maybe_initialize_distributed` decided.

  Attributes:
    mode: the resolved mode (``auto``, ``on``, ``off``).
    initialized: whether ``jax.distributed.initialize`` was called (now or
      before).
    cluster: the detected environment (see :func:`detect_cluster`) or ``None``.
    kwargs: the explicit arguments passed to ``jax.distributed.initialize``.
  """

  mode: str
  initialized: bool
  cluster: str | None
  kwargs: Mapping[str, Any]


def maybe_initialize_distributed(
  mode: str | None = None, *, environ: Mapping[str, str] | None = None
) -> bool:
  """Calls ``jax.distributed.initialize()`` once, when the mode asks for it.

  Call it before anything creates a JAX array or asks for devices. With
  ``mode=None`` the mode is ``$JAXPAPERS_DISTRIBUTED`` (default ``auto``); see
  the module docstring for the modes and the environment variables read.

  Args:
    mode: ``"auto"``, ``"on"``, ``"off"`` or ``None``.
    environ: the environment to read (``os.environ`` by default).

  Returns:
    Whether the distributed runtime is initialised (by this call or an earlier
    one).
  """
  return initialize(mode, environ=environ).initialized


def initialize(
  mode: str | None = None, *, environ: Mapping[str, str] | None = None
) -> DistributedInfo:
  """Like :func:`maybe_initialize_distributed`, returning what was decided."""
  global _initialized
  environ = os.environ if environ is None else environ
  mode = resolve_mode(mode, environ)
  cluster = detect_cluster(environ)
  if _initialized or jax.distributed.is_initialized():
    return DistributedInfo(mode, True, cluster, {})
  if mode == "off" or (mode == "auto" and cluster is None):
    return DistributedInfo(mode, False, cluster, {})
  kwargs = explicit_settings(environ)
  # Multi-process CPU jobs need a cross-process collectives library; it only
  # affects the CPU client and must be chosen before a backend starts.
  try:
    if jax.config.values.get("jax_cpu_collectives_implementation") in (
      None,
      "none",
    ):
      jax.config.update("jax_cpu_collectives_implementation", "gloo")
  except AttributeError:  # pragma: no cover - option absent in this JAX
    pass
  logging.info(
    "jax.distributed.initialize(%s) (mode=%s, cluster=%s)",
    ", ".join(f"{k}={v!r}" for k, v in kwargs.items()),
    mode,
    cluster,
  )
  try:
    jax.distributed.initialize(**kwargs)
  except Exception as e:
    if mode == "auto":
      hint = (
        f" (detected a {cluster} job; run with --distributed=off or "
        f"{ENV_VAR}=off for one process)"
      )
    else:
      hint = (
        f" (outside a cluster JAX detects, set ${COORDINATOR_ADDRESS_ENV}, "
        f"${NUM_PROCESSES_ENV} and ${PROCESS_ID_ENV})"
      )
    raise RuntimeError(f"jax.distributed.initialize failed{hint}: {e}") from e
  _initialized = True
  return DistributedInfo(mode, True, cluster, kwargs)


def is_main_process() -> bool:
  """Whether this is process 0, the one that writes results, plots, metrics and
  logs.

  True on a single host. Reads ``jax.process_index()`` (which starts the backend
  if nothing has yet).

  Returns:
    whether ``jax.process_index() == 0``.
  """
  return jax.process_index() == 0
