"""Runs N local processes that form one JAX distributed job on fake CPU devices.

Two processes with two fake CPU devices each form one four-device job, the same
way several hosts form one job on a cluster: each process calls
``jax.distributed.initialize(coordinator_address="127.0.0.1:<port>",
num_processes=N, process_id=i)`` and uses the ``gloo`` CPU collectives.

Two entry points:

* :func:`launch` starts any command once per process, with the
  ``JAX_COORDINATOR_ADDRESS``/``JAX_NUM_PROCESSES``/``JAX_PROCESS_ID`` variables
  that ``jaxpapers.core.app`` reads and the fake-device settings in the
  environment (an experiment binary started this way initialises itself).
* :func:`run_function` runs ``module:function(**kwargs)`` in every process of
  a job this module initialises, and returns each process's JSON-able result.

Every process runs in its own process group with its output in log files; when
one fails or the time runs out, all the groups are killed and the error shows
every process's log tail. No process outlives the call.

Run as ``python -m tests.multiprocess_util --target=module:function ...`` it is
the worker :func:`run_function` starts.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Variables that would make a worker believe it is part of another job.
_SCRUBBED_PREFIXES = (
  "SLURM_",
  "OMPI_",
  "PMI_",
  "TPU_",
  "MEGASCALE_",
  "PYTEST_",
)
_SCRUBBED = (
  "JAXPAPERS_DISTRIBUTED",
  "JAX_COORDINATOR_ADDRESS",
  "JAX_NUM_PROCESSES",
  "JAX_PROCESS_ID",
  "JAX_LOCAL_DEVICE_IDS",
  "JAX_COORDINATOR_PORT",
  "KUBERNETES_SERVICE_HOST",
  "JOB_COMPLETION_INDEX",
  "CUDA_VISIBLE_DEVICES",
)
_LOG_TAIL = 4000


class MultiprocessError(AssertionError):
  """A worker failed or the job timed out; the message holds every process's log
  tail."""


@dataclasses.dataclass
class ProcessRun:
  """What one process of a finished job left behind.

  Attributes:
    process_id: its index in the job.
    returncode: its exit status (0: success).
    stdout: everything it printed to stdout.
    stderr: everything it printed to stderr (absl logs, progress bars).
    output: the JSON value it returned (:func:`run_function` only), else
      ``None``.
  """

  process_id: int
  returncode: int
  stdout: str
  stderr: str
  output: Any = None


def free_port() -> int:
  """A TCP port on 127.0.0.1 that nothing listens on right now."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def worker_env(
  process_id: int,
  num_processes: int,
  port: int,
  *,
  devices_per_process: int,
  env: Mapping[str, str | None] | None = None,
) -> dict[str, str]:
  """The environment of process ``process_id`` of a local CPU job.

  The parent's environment without any cluster variables, plus: CPU platform,
  ``devices_per_process`` fake devices, the repository on ``PYTHONPATH``, the
  three ``JAX_*`` variables ``jaxpapers.core.distributed`` reads, and progress
  bars off. ``env`` overrides these last (a ``None`` value removes a variable).
  """
  out = {
    k: v
    for k, v in os.environ.items()
    if k not in _SCRUBBED and not k.startswith(_SCRUBBED_PREFIXES)
  }
  xla_flags = [
    f
    for f in out.get("XLA_FLAGS", "").split()
    if not f.startswith("--xla_force_host_platform_device_count")
  ]
  xla_flags.append(
    f"--xla_force_host_platform_device_count={devices_per_process}"
  )
  python_path = [str(ROOT)] + [
    p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p
  ]
  out.update(
    JAX_PLATFORMS="cpu",
    XLA_FLAGS=" ".join(xla_flags),
    PYTHONPATH=os.pathsep.join(python_path),
    JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
    JAX_NUM_PROCESSES=str(num_processes),
    JAX_PROCESS_ID=str(process_id),
    JAXPAPERS_NO_PROGRESS="1",
    PYTHONUNBUFFERED="1",
  )
  for k, v in (env or {}).items():
    if v is None:
      out.pop(k, None)
    else:
      out[k] = str(v)
  return out


def _live_members(pgid: int) -> list[int]:
  """The running (not zombie) processes of group ``pgid``; ``[]`` where /proc is
  absent."""
  pids = []
  for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
    try:
      fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
      continue
    if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
      pids.append(int(stat.parent.name))
  return pids


def _kill_group(proc: subprocess.Popen, wait: float = 10.0) -> None:
  """SIGKILLs the process group of ``proc`` and waits until none of it runs."""
  try:
    os.killpg(proc.pid, signal.SIGKILL)  # the process and anything it started
  except (ProcessLookupError, PermissionError):
    pass
  try:
    proc.wait(timeout=wait)
  except (
    subprocess.TimeoutExpired
  ):  # pragma: no cover - SIGKILL does not wait on anything
    pass
  deadline = time.monotonic() + wait  # signals are delivered asynchronously
  while _live_members(proc.pid) and time.monotonic() < deadline:
    time.sleep(0.02)


def _tail(text: str) -> str:
  return text if len(text) <= _LOG_TAIL else "..." + text[-_LOG_TAIL:]


def launch(
  argv: Sequence[str] | Callable[[int], Sequence[str]],
  *,
  num_processes: int = 2,
  devices_per_process: int = 2,
  timeout: float = 180.0,
  env: Mapping[str, str | None] | None = None,
  cwd: str | os.PathLike[str] = ROOT,
  log_dir: str | os.PathLike[str] | None = None,
) -> list[ProcessRun]:
  """Starts ``num_processes`` processes of one job and waits for all of them.

  Args:
    argv: the command (the same for every process, which tells itself apart by
      ``$JAX_PROCESS_ID``), or ``process_id -> command``.
    num_processes: processes in the job.
    devices_per_process: fake CPU devices of each.
    timeout: seconds for the whole job.
    env: environment overrides for every process (``None`` values remove).
    cwd: the processes' working directory (the repository root by default).
    log_dir: where ``process_<i>.out``/``.err`` go (a temporary folder by
      default).

  Returns:
    One :class:`ProcessRun` per process, in process order, all with return code
    0.

  Raises:
    MultiprocessError: as soon as one process exits non-zero (the others are
      killed, as they would wait for it forever), or at the timeout; the message
      gives each process's status and log tail. A job whose coordinator port was
      taken meanwhile ("address already in use") is retried on a new port.
    ValueError: if ``num_processes`` or ``devices_per_process`` is below 1.
  """
  if num_processes < 1 or devices_per_process < 1:
    raise ValueError(
      f"num_processes and devices_per_process must be >= 1, got "
      f"{num_processes} and {devices_per_process}"
    )
  for attempt in range(3):
    try:
      return _launch_once(
        argv, num_processes, devices_per_process, timeout, env, cwd, log_dir
      )
    except MultiprocessError as e:
      # The free port was taken between choosing it and the coordinator binding
      # it.
      if attempt == 2 or "already in use" not in str(e).lower():
        raise
  raise AssertionError("unreachable")  # pragma: no cover


def _launch_once(
  argv, num_processes, devices_per_process, timeout, env, cwd, log_dir
):
  with tempfile.TemporaryDirectory(prefix="multiprocess_logs_") as tmp:
    logs = pathlib.Path(log_dir or tmp)
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    procs: list[subprocess.Popen] = []
    failure = None
    with contextlib.ExitStack() as files:
      try:
        for i in range(num_processes):
          cmd = [str(a) for a in (argv(i) if callable(argv) else argv)]
          out = files.enter_context(open(logs / f"process_{i}.out", "w"))
          err = files.enter_context(open(logs / f"process_{i}.err", "w"))
          procs.append(
            subprocess.Popen(
              cmd,
              cwd=cwd,
              stdin=subprocess.DEVNULL,
              stdout=out,
              stderr=err,
              env=worker_env(
                i,
                num_processes,
                port,
                devices_per_process=devices_per_process,
                env=env,
              ),
              start_new_session=True,
            )
          )  # its own process group, killed as a whole
        deadline = time.monotonic() + timeout
        while failure is None:
          codes = [p.poll() for p in procs]
          if all(c == 0 for c in codes):
            break
          if any(c not in (None, 0) for c in codes):
            failure = "a process failed"
          elif time.monotonic() > deadline:
            failure = f"timed out after {timeout:.0f} s"
          else:
            time.sleep(0.05)
      finally:
        for p in procs:  # also reaps anything a finished process left running
          _kill_group(p)
    runs = [
      ProcessRun(
        i,
        p.returncode,
        (logs / f"process_{i}.out").read_text(),
        (logs / f"process_{i}.err").read_text(),
      )
      for i, p in enumerate(procs)
    ]
  if failure is not None:
    report = "\n".join(
      f"--- process {r.process_id}: exit status {r.returncode}\n"
      f"[stdout]\n{_tail(r.stdout)}\n[stderr]\n{_tail(r.stderr)}"
      for r in runs
    )
    raise MultiprocessError(f"{num_processes}-process job {failure}:\n{report}")
  return runs


def run_function(
  target: str,
  kwargs: Mapping[str, Any] | None = None,
  *,
  num_processes: int = 2,
  devices_per_process: int = 2,
  timeout: float = 180.0,
  env: Mapping[str, str | None] | None = None,
) -> list[ProcessRun]:
  """Runs ``module:function(**kwargs)`` in every process of one job.

  Each process sets up ``devices_per_process`` fake CPU devices and the ``gloo``
  CPU collectives, calls ``jax.distributed.initialize`` (when
  ``num_processes > 1``), imports ``module``, calls the function and records
  what it returns (a JSON-able value) in :attr:`ProcessRun.output`.

  Args:
    target: ``"package.module:function"``, importable from the repository root
      (test modules are: ``"tests.core.test_multihost:_worker"``). The module
      must not create JAX arrays on import.
    kwargs: JSON-able keyword arguments, the same for every process (a
      process reads its index from ``jax.process_index()``).
    num_processes, devices_per_process, timeout, env: as for :func:`launch`.

  Returns:
    One :class:`ProcessRun` per process, with ``output`` set.

  Raises:
    MultiprocessError: as for :func:`launch`.
  """
  module, _, function = target.partition(":")
  if not module or not function:
    raise ValueError(f"target must be 'module:function', got {target!r}")
  with tempfile.TemporaryDirectory(prefix="multiprocess_out_") as tmp:
    payload = pathlib.Path(tmp) / "kwargs.json"
    payload.write_text(json.dumps(dict(kwargs or {})))

    def argv(i: int) -> list[str]:
      return [
        sys.executable,
        "-m",
        "tests.multiprocess_util",
        f"--target={target}",
        f"--kwargs={payload}",
        f"--output={pathlib.Path(tmp) / f'output_{i}.json'}",
        f"--devices={devices_per_process}",
      ]

    runs = launch(
      argv,
      num_processes=num_processes,
      devices_per_process=devices_per_process,
      timeout=timeout,
      env=env,
    )
    for r in runs:
      r.output = json.loads(
        (pathlib.Path(tmp) / f"output_{r.process_id}.json").read_text()
      )
  return runs


def _worker(args: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--target", required=True)
  parser.add_argument(
    "--kwargs", required=True, help=("a JSON file of keyword arguments")
  )
  parser.add_argument(
    "--output", required=True, help=("where the JSON result goes")
  )
  parser.add_argument("--devices", type=int, required=True)
  opts = parser.parse_args(args)

  import jax  # after the environment is set: the backend starts below

  jax.config.update("jax_num_cpu_devices", opts.devices)
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  num_processes = int(os.environ["JAX_NUM_PROCESSES"])
  if num_processes > 1:
    jax.distributed.initialize(
      coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
      num_processes=num_processes,
      process_id=int(os.environ["JAX_PROCESS_ID"]),
    )
  module, _, function = opts.target.partition(":")
  fn = getattr(importlib.import_module(module), function)
  result = fn(**json.loads(pathlib.Path(opts.kwargs).read_text()))
  out = pathlib.Path(opts.output)
  tmp = out.with_suffix(".tmp")
  tmp.write_text(json.dumps(result))
  os.replace(tmp, out)
  if num_processes > 1:
    jax.distributed.shutdown()


if __name__ == "__main__":
  _worker()
