"""Starting, freezing, killing and comparing runs of the fault-injection binary.

The binary is ``tests/faults/tiny_experiment.py`` on
``tests/faults/tiny_config.py``. Every run is a separate process group (so
``kill -9`` reaches anything it started), with two fake CPU devices and the test
session's XLA flags and compilation cache, so that every run compiles the same
programs and an interrupted run can be compared bit for bit with an
uninterrupted one.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = "tests/faults/tiny_config.py"
STEPS = 24  # tiny_config: training steps, one history record per step
CHECKPOINT_EVERY = 3
TIMEOUT = 300.0


def env() -> dict[str, str]:
  """The environment of a run: this one's, two CPU devices, the repository
  importable."""
  out = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith(("PYTEST_", "JAX_COORDINATOR"))
  }
  flags = [
    f
    for f in out.get("XLA_FLAGS", "").split()
    if not f.startswith("--xla_force_host_platform_device_count")
  ]
  out.update(
    JAX_PLATFORMS="cpu",
    XLA_FLAGS=" ".join([*flags, "--xla_force_host_platform_device_count=2"]),
    PYTHONPATH=os.pathsep.join(
      [str(ROOT), *filter(None, out.get("PYTHONPATH", "").split(":"))]
    ),
    JAXPAPERS_NO_PROGRESS="1",
    PYTHONUNBUFFERED="1",
  )
  # the session's cache (tests/conftest.py): the runs
  if "JAX_COMPILATION_CACHE_DIR" in out:
    # after the first compile nothing
    out["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
  return out


def start(workdir: pathlib.Path, *overrides: str) -> subprocess.Popen:
  """Starts the binary on ``workdir`` in a new process group; output goes to
  files beside it."""
  workdir.parent.mkdir(parents=True, exist_ok=True)
  log = workdir.parent / f"{workdir.name}.{time.monotonic_ns()}"
  cmd = [
    sys.executable,
    "-m",
    "tests.faults.tiny_experiment",
    f"--config={CONFIG}",
    f"--workdir={workdir}",
    *overrides,
  ]
  with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
    proc = subprocess.Popen(
      cmd, cwd=ROOT, env=env(), stdout=out, stderr=err, start_new_session=True
    )
  proc.log = log  # type: ignore[attr-defined]
  return proc


def stderr(proc: subprocess.Popen) -> str:
  return pathlib.Path(f"{proc.log}.err").read_text()  # type: ignore[attr-defined]


def wait(proc: subprocess.Popen, timeout: float = TIMEOUT) -> int:
  """Waits for ``proc``; kills its group at the timeout (and raises)."""
  try:
    return proc.wait(timeout=timeout)
  except subprocess.TimeoutExpired:
    kill(proc)
    raise AssertionError(
      f"the binary ran over {timeout} s:\n{stderr(proc)[-3000:]}"
    ) from None


def run(workdir: pathlib.Path, *overrides: str) -> str:
  """Runs the binary to completion; returns its stderr (asserting it exited
  0)."""
  proc = start(workdir, *overrides)
  rc = wait(proc)
  err = stderr(proc)
  assert rc == 0, f"the binary exited {rc}:\n{err[-4000:]}"
  return err


def kill(proc: subprocess.Popen) -> None:
  """``kill -9`` of the process group, then reaps it."""
  try:
    os.killpg(proc.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass
  proc.wait(timeout=30)


def freeze(proc: subprocess.Popen) -> None:
  """SIGSTOP of the process group: it stops where it is (and holds what it
  holds)."""
  os.killpg(proc.pid, signal.SIGSTOP)


def wait_for(
  predicate, proc: subprocess.Popen, timeout: float = TIMEOUT
) -> bool:
  """Polls ``predicate()`` until true (True) or ``proc`` ends first (False)."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if predicate():
      return True
    if proc.poll() is not None:
      return bool(predicate())
    time.sleep(0.005)
  raise AssertionError(f"timed out waiting:\n{stderr(proc)[-3000:]}")


def checkpoint_steps(workdir: pathlib.Path) -> list[int]:
  """The finished training checkpoints in ``workdir`` (orbax's committed step
  folders)."""
  d = workdir / "checkpoints"
  if not d.is_dir():
    return []
  return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit())


def history_lines(workdir: pathlib.Path) -> list[str]:
  path = workdir / "history.jsonl"
  return path.read_text().split("\n") if path.exists() else []


def outcome(workdir: pathlib.Path) -> dict[str, Any]:
  """What must be identical between runs: the results' metrics and the logged
  history.

  ``elapsed_s`` (wall time) is left out of the history records, and the config
  out of the results (a run may be given a different, number-neutral
  ``step_delay_s``).
  """
  results = json.loads((workdir / "results.json").read_text())
  history = [
    {k: v for k, v in json.loads(line).items() if k != "elapsed_s"}
    for line in (workdir / "history.jsonl").read_text().splitlines()
  ]
  return {"metrics": results["metrics"], "history": history}


def copy(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
  shutil.copytree(src, dst, symlinks=True)
  return dst
