"""One run per workdir: an advisory lock file naming the run that holds it.

Two runs writing one workdir would interleave their checkpoints, histories and
cells. The app entry (:mod:`jaxpapers.core.app`) therefore holds :func:`hold`
around the experiment::

  with workdir_lock.hold(workdir):
    train_and_evaluate(config, workdir)

The lock is the file ``<workdir>/.jaxpapers.lock``, holding ``{"pid", "host",
"started", "argv"}`` of its holder, and an exclusive ``flock`` on it for as long
as the holder runs (the kernel drops the ``flock`` when the process ends,
however it ends). A second run on the same workdir refuses with
:class:`WorkdirLockedError`, naming the holder's pid and host. A lock left by a
process that no longer runs (killed, crashed) is taken over, with a warning:

* on the same host, when the ``flock`` can be taken (its holder has exited) or
  the pid is gone;
* from another host it is never taken over (its pid cannot be checked from
  here): the error says which file to remove once that run is known to be dead.

Only process 0 of a multi-process job takes the lock (all processes of one job
share the workdir). A remote workdir (``gs://...``) is not locked. On release
the lock file is removed, and so is the workdir if the lock created it and
nothing else was written there.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

from absl import logging

try:
  import fcntl
except (
  ImportError
):  # pragma: no cover - Windows: the pid/host record alone decides
  fcntl = None

__all__ = ["LOCK_FILE", "WorkdirLock", "WorkdirLockedError", "hold"]

LOCK_FILE = ".jaxpapers.lock"


class WorkdirLockedError(RuntimeError):
  """Another run holds the workdir's lock.

  Attributes:
    path: the lock file.
    holder: what the lock file says of its holder (``pid``, ``host``,
      ``started``, ``argv``), or ``{}`` if it could not be read.
  """

  def __init__(self, path: str, holder: dict[str, Any], detail: str = ""):
    self.path, self.holder = path, holder
    who = (
      f"pid {holder.get('pid')} on host {holder.get('host')}"
      + (f", started {holder['started']}" if holder.get("started") else "")
      + (
        f" ({' '.join(map(str, holder['argv']))})" if holder.get("argv") else ""
      )
      if holder
      else "another process (its lock file could not be read)"
    )
    super().__init__(
      f"workdir {os.path.dirname(path)} is in use by {who}: "
      "two runs must not write one workdir. Wait for that run to finish, "
      f"or give this one another --workdir.{detail}"
    )


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # it exists, owned by someone else
    return True
  except OSError:
    return False
  return True


def _read_holder(fd: int) -> dict[str, Any]:
  os.lseek(fd, 0, os.SEEK_SET)
  data = b""
  while chunk := os.read(fd, 65536):
    data += chunk
  try:
    holder = json.loads(data.decode())
  except (UnicodeDecodeError, json.JSONDecodeError):
    return {}
  return holder if isinstance(holder, dict) else {}


class WorkdirLock:
  """The lock of one workdir; see the module docstring.

  Args:
    workdir: a local directory (created if needed, with its parents).

  Example::

    lock = WorkdirLock(workdir)
    lock.acquire()  # raises WorkdirLockedError if another live run holds it
    try:
      ...
    finally:
      lock.release()
  """

  def __init__(self, workdir: str | os.PathLike[str]):
    self.workdir = os.path.abspath(os.fspath(workdir))
    self.path = os.path.join(self.workdir, LOCK_FILE)
    self._fd: int | None = None
    self._created: list[str] = []

  @property
  def held(self) -> bool:
    return self._fd is not None

  def _make_dirs(self) -> None:
    missing, d = [], self.workdir
    while not os.path.isdir(d):
      missing.append(d)
      parent = os.path.dirname(d)
      if parent == d:
        break
      d = parent
    os.makedirs(self.workdir, exist_ok=True)
    self._created = missing  # deepest first

  def acquire(self) -> None:
    """Takes the lock, or raises :class:`WorkdirLockedError` naming its live
    holder.

    Raises:
      WorkdirLockedError: another process on this host that still runs holds it,
        or a process on another host does (whether it runs cannot be checked
        from here).
      RuntimeError: this object already holds it.
    """
    if self._fd is not None:
      raise RuntimeError(f"{self.path} is already held by this WorkdirLock")
    self._make_dirs()
    host, pid = socket.gethostname(), os.getpid()
    # retried only if the file is replaced between open and flock
    for _ in range(100):
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
      try:
        flocked = self._flock(fd)
        if flocked is False:
          raise WorkdirLockedError(self.path, _read_holder(fd))
        try:
          same_file = os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
          same_file = False
        # released (and removed) by its holder meanwhile: open the new one
        if not same_file:
          os.close(fd)
          continue
        holder = _read_holder(fd)
        if holder and (holder.get("host"), holder.get("pid")) != (host, pid):
          self._check_stale(holder, host, flocked)
        os.ftruncate(fd, 0)
        record = {
          "pid": pid,
          "host": host,
          "started": datetime.datetime.now(datetime.UTC).isoformat(
            timespec=("seconds")
          ),
          "argv": sys.argv,
        }
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(fd)
      except BaseException:
        os.close(fd)
        raise
      self._fd = fd
      return
    raise RuntimeError(f"could not take {self.path}: it keeps being replaced")

  @staticmethod
  def _flock(fd: int) -> bool | None:
    """True: taken; False: another open file holds it; None: unsupported
    here."""
    if fcntl is None:
      return None
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      return False
    except OSError as e:
      if e.errno in (
        errno.ENOLCK,
        errno.EOPNOTSUPP,
        errno.ENOSYS,
        errno.EINVAL,
      ):
        return None
      raise
    return True

  def _check_stale(
    self, holder: dict[str, Any], host: str, flocked: bool | None
  ) -> None:
    """Raises unless the lock file's previous holder is known to be gone."""
    other_pid = holder.get("pid")
    if holder.get("host") != host:
      raise WorkdirLockedError(
        self.path,
        holder,
        (
          f" If that run is no longer running, remove {self.path} and start "
          "again."
        ),
      )
    alive = isinstance(other_pid, int) and _pid_alive(other_pid)
    # no flock here: the pid is all there is to go by
    if alive and flocked is None:
      raise WorkdirLockedError(self.path, holder)
    logging.warning(
      (
        "taking over the stale lock %s of pid %s on host %s (started %s): "
        "that process %s"
      ),
      self.path,
      other_pid,
      holder.get("host"),
      holder.get("started"),
      "no longer holds it" if alive else "no longer runs",
    )

  def release(self) -> None:
    """Removes the lock file (and the workdir, if the lock created it and it is
    empty)."""
    if self._fd is None:
      return
    fd, self._fd = self._fd, None
    try:
      os.unlink(self.path)
    except FileNotFoundError:
      pass
    finally:
      os.close(fd)
    for d in self._created:
      try:
        os.rmdir(d)  # only if empty
      except OSError:
        break
    self._created = []

  def __enter__(self) -> WorkdirLock:
    self.acquire()
    return self

  def __exit__(self, *exc: Any) -> None:
    self.release()


@contextlib.contextmanager
def hold(workdir: Any) -> Iterator[WorkdirLock | None]:
  """Holds ``workdir``'s lock on process 0 for the duration of the block.

  Yields None, and locks nothing, on processes other than 0 and for a remote
  workdir.

  Raises:
    WorkdirLockedError: another run holds it (see :meth:`WorkdirLock.acquire`).
  """
  # local: importing this module starts no backend
  from jaxpapers.core import distributed

  if "://" in str(workdir) or not distributed.is_main_process():
    yield None
    return
  with WorkdirLock(os.fspath(workdir)) as lock:
    yield lock
