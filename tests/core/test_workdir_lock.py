"""core.workdir_lock: one run per workdir, the holder named, stale locks taken
over."""

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap

import jax
import pytest
from absl import app as absl_app
from absl import flags

from jaxpapers.core import app, distributed, workdir_lock
from jaxpapers.core.workdir_lock import (
  LOCK_FILE,
  WorkdirLock,
  WorkdirLockedError,
)

HOST = socket.gethostname()


def _dead_pid() -> int:
  proc = subprocess.run(
    [sys.executable, "-c", "import os; print(os.getpid())"],
    check=True,
    capture_output=True,
    text=True,
  )
  return int(proc.stdout)


def test_second_lock_refuses_naming_the_holder_and_release_cleans_up(tmp_path):
  workdir = tmp_path / "a" / "run"
  with WorkdirLock(workdir) as lock:
    holder = json.loads((workdir / LOCK_FILE).read_text())
    assert (holder["pid"], holder["host"]) == (os.getpid(), HOST) and holder[
      "started"
    ]
    with pytest.raises(
      WorkdirLockedError, match=(rf"in use by pid {os.getpid()} on host {HOST}")
    ):
      WorkdirLock(workdir).acquire()
    assert lock.held
  # created by the lock, left empty: removed
  assert not (tmp_path / "a").exists()
  workdir.mkdir(parents=True)
  with WorkdirLock(workdir):
    (workdir / "results.json").write_text("{}")
  # only the lock goes
  assert sorted(p.name for p in workdir.iterdir()) == ["results.json"]


def test_a_lock_held_by_another_live_process_refuses(tmp_path):
  holder = subprocess.Popen(
    [
      sys.executable,
      "-c",
      textwrap.dedent(f"""
      import importlib.util, sys
      # The module alone (it needs no JAX): the holder is up in a fraction of a second.
      spec = importlib.util.spec_from_file_location("workdir_lock", {workdir_lock.__file__!r})
      lock = importlib.util.module_from_spec(spec)
      spec.loader.exec_module(lock)
      with lock.WorkdirLock({str(tmp_path)!r}):
        print("held", flush=True)
        sys.stdin.read()
    """),
    ],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
  )
  try:
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(
      WorkdirLockedError, match=(rf"in use by pid {holder.pid} on host {HOST}")
    ):
      WorkdirLock(tmp_path).acquire()
  finally:
    holder.communicate("", timeout=30)
  with WorkdirLock(tmp_path):  # released by its holder
    pass


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path, caplog):
  pid = _dead_pid()
  (tmp_path / LOCK_FILE).write_text(
    json.dumps({"pid": pid, "host": HOST, "started": ("x")})
  )
  with caplog.at_level(logging.WARNING), WorkdirLock(tmp_path):
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
  assert (
    f"taking over the stale lock {tmp_path / LOCK_FILE} of pid {pid}"
    in caplog.text
  )


def test_a_lock_from_another_host_is_not_taken_over(tmp_path):
  record = {
    "pid": 1,
    "host": "some-other-host",
    "started": ("2026-01-01T00:00:00+00:00"),
  }
  (tmp_path / LOCK_FILE).write_text(json.dumps(record))
  with pytest.raises(
    WorkdirLockedError, match=(r"pid 1 on host some-other-host.*remove .*lock")
  ):
    WorkdirLock(tmp_path).acquire()
  # left as it was
  assert json.loads((tmp_path / LOCK_FILE).read_text()) == record


def test_hold_locks_on_process_0_only_and_never_a_remote_workdir(
  tmp_path, monkeypatch
):
  with workdir_lock.hold(tmp_path) as lock:
    assert lock is not None and lock.held
  with workdir_lock.hold("gs://bucket/run") as lock:
    assert lock is None
  monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
  with workdir_lock.hold(tmp_path / "p1") as lock:
    assert lock is None
  assert not (tmp_path / "p1").exists()


def test_the_app_refuses_a_second_run_on_a_workdir_before_it_starts(
  tmp_path, monkeypatch
):
  monkeypatch.setattr(distributed, "_initialized", False)
  config = tmp_path / "cfg.py"
  config.write_text(
    "import ml_collections\ndef get_config():\n  return "
    "ml_collections.ConfigDict()\n"
  )
  workdir = tmp_path / "run"
  argv = [
    "prog",
    f"--config={config}",
    f"--workdir={workdir}",
    "--distributed=off",
  ]
  fv = flags.FlagValues()
  app.define_flags(fv, argv=argv)
  fv(argv)
  ran = []
  with WorkdirLock(workdir):
    with pytest.raises(
      absl_app.UsageError,
      match=(f"workdir {workdir} is in use by pid {os.getpid()}"),
    ):
      app.main(["prog"], lambda c, w: ran.append(w), flag_values=fv)
  assert ran == []
  app.main(
    ["prog"],
    lambda c, w: ran.append(w) or (w / "out.txt").write_text("x"),
    flag_values=fv,
  )
  assert ran == [workdir] and sorted(p.name for p in workdir.iterdir()) == [
    "out.txt"
  ]
