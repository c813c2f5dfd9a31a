"""Per-step metrics: JSONL always, TensorBoard event files when ``tensorboardX``
is installed.

::

  with MetricWriter(workdir) as writer:          # <workdir>/metrics.jsonl (+ events.out.*)
    writer.write(step, {"train/loss": loss, "eval/acc": acc})

Each ``write(step, metrics)`` appends one line ``{"step": step, **metrics}``
(JAX and numpy scalars become Python numbers, arrays become lists). Scalars also
go to TensorBoard through ``tensorboardX`` (the TensorFlow-free extra ``pip
install jaxpapers[tensorboard]``) when it is importable.

Only process 0 writes: on the other processes of a multi-host job the writer is
disabled and every method is a no-op (nothing is created). Paths go through
``etils.epath``, so a ``gs://`` directory works where epath does; a remote file
cannot be appended to, so there the whole file is rewritten on each
:meth:`MetricWriter.flush` (local files are appended to).

**Durability.** A local file gets each record as one ``write`` of one whole line
to a file opened for appending, unbuffered: a record is in the file as soon as
``write`` returns, and a process killed at any moment (``kill -9``) leaves whole
lines. :meth:`MetricWriter.flush` also ``fsync``s, which a training loop calls
before each checkpoint save, so the records up to a checkpoint survive a machine
crash too. Should a file still end in a cut-off line (a crash of the machine, an
older writer), a resumed writer drops that line with a warning
(``read_metrics(..., allow_torn_tail=True)``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from absl import logging
from etils import epath

from jaxpapers.core import distributed

METRICS_FILE = "metrics.jsonl"


def _scalarize(metrics: Mapping[str, Any]) -> dict[str, Any]:
  out = {}
  for k, v in metrics.items():
    arr = np.asarray(v)
    out[str(k)] = arr.item() if arr.ndim == 0 else arr.tolist()
  return out


def _is_remote(path: epath.Path) -> bool:
  return "://" in str(path)


def read_metrics(
  logdir: str | os.PathLike[str],
  filename: str = METRICS_FILE,
  *,
  allow_torn_tail: bool = False,
) -> list[dict[str, Any]]:
  """The records of ``<logdir>/<filename>`` in file order; ``[]`` if it does not
  exist.

  Reading is allowed on every process (only writing is process 0's).

  Args:
    logdir: the directory.
    filename: the JSONL file inside it.
    allow_torn_tail: drop, with a warning naming the file, a last line that was
      cut off while being appended (it has no final newline and is not a JSON
      record), instead of raising; what a resumed run does. Any other bad line
      still raises.

  Returns:
    one dict per line (``{"step": ..., **metrics}``), in file order.

  Raises:
    ValueError: naming the file and line when a line is not a JSON record.
  """
  path = epath.Path(logdir) / filename
  if not path.exists():
    return []
  text = path.read_bytes().decode(errors="replace")
  lines = text.split("\n")
  records = []
  for i, line in enumerate(lines, start=1):
    if not line.strip("\0 \t\r"):
      continue
    try:
      record = json.loads(line)
      if not isinstance(record, dict):
        raise json.JSONDecodeError("not a JSON object", line, 0)
    except json.JSONDecodeError as e:
      if allow_torn_tail and i == len(lines):  # the text after the last newline
        logging.warning(
          (
            "%s: dropping its last line, cut off while it was written (%d "
            "characters, %s)"
          ),
          path,
          len(line),
          e.msg,
        )
        break
      raise ValueError(
        f"{path}: line {i} is not a JSON record ({e.msg}); "
        "the file is corrupt or was cut off"
      ) from e
    records.append(record)
  return records


def _append(fd: int, data: bytes) -> None:
  """Appends ``data`` with one ``write`` (a regular file takes it whole),
  looping if short."""
  view = memoryview(data)
  while view:
    view = view[os.write(fd, view) :]


class MetricWriter:
  """Writes ``{"step": step, **metrics}`` records to JSONL and TensorBoard.

  Args:
    logdir: the directory (created on process 0); ``str``, ``os.PathLike`` or
      an ``epath.Path`` (``gs://...`` included).
    filename: the JSONL file inside ``logdir``.
    tensorboard: ``True`` requires ``tensorboardX``; ``False`` writes JSONL
      only; ``None`` (default) uses TensorBoard when ``tensorboardX`` imports.
    resume_step: ``None`` starts afresh (an existing file is replaced); an int
      keeps the existing records with ``step <= resume_step`` (a resumed run;
      a last line cut off mid-write is dropped with a warning) and TensorBoard
      drops its events after that step.
    enabled: ``None`` (default) writes on process 0 only; ``True``/``False``
      force it.

  Raises:
    ImportError: if ``tensorboard=True`` and ``tensorboardX`` is missing.
    ValueError: if ``filename`` is not a bare file name.
  """

  def __init__(
    self,
    logdir: str | os.PathLike[str],
    *,
    filename: str = METRICS_FILE,
    tensorboard: bool | None = None,
    resume_step: int | None = None,
    enabled: bool | None = None,
  ):
    if not filename or "/" in filename:
      raise ValueError(
        "filename must be a bare file name like 'metrics.jsonl', "
        f"got {filename!r}"
      )
    self.logdir = epath.Path(logdir)
    self.path = self.logdir / filename
    self.enabled = (
      distributed.is_main_process() if enabled is None else bool(enabled)
    )
    self._pending: list[str] = []
    # everything in the file (remote paths rewrite it whole)
    self._lines: list[str] = []
    # local files: appended to, one os.write per record
    self._fd: int | None = None
    self._tb = None
    self._closed = False
    if not self.enabled:
      return
    self.logdir.mkdir(parents=True, exist_ok=True)
    if resume_step is not None:
      records = read_metrics(self.logdir, filename, allow_torn_tail=True)
      self._lines = [
        json.dumps(r) + "\n" for r in records if r.get("step", 0) <= resume_step
      ]
    self._rewrite()
    if not _is_remote(self.path):
      self._fd = os.open(
        os.fspath(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
      )
    self._tb = self._open_tensorboard(tensorboard, resume_step)

  def _rewrite(self) -> None:
    tmp = self.path.parent / (self.path.name + ".tmp")
    tmp.write_text("".join(self._lines))
    tmp.replace(self.path)

  def _open_tensorboard(
    self, tensorboard: bool | None, resume_step: int | None
  ) -> Any:
    if tensorboard is False:
      return None
    try:
      import tensorboardX  # optional extra
    except ImportError:
      if tensorboard:
        raise ImportError(
          "tensorboard=True needs tensorboardX: pip install "
          "'jaxpapers[tensorboard]'"
        ) from None
      return None
    scheme = (
      str(self.logdir).split("://")[0] if _is_remote(self.logdir) else None
    )
    # tensorboardX would make a local folder of the URI
    if scheme not in (None, "gs", "s3"):
      if tensorboard:
        raise ValueError(
          f"tensorboardX cannot write to {scheme}:// paths (only gs://, s3://)"
        )
      logging.warning(
        (
          "TensorBoard events disabled for %s: tensorboardX writes local, "
          "gs:// and s3:// paths only"
        ),
        self.logdir,
      )
      return None
    purge = None if resume_step is None else resume_step + 1
    try:
      return tensorboardX.SummaryWriter(
        logdir=str(self.logdir), purge_step=purge
      )
    except Exception as e:  # e.g. a remote scheme tensorboardX cannot write
      if tensorboard:
        raise
      logging.warning("TensorBoard events disabled for %s: %s", self.logdir, e)
      return None

  @property
  def tensorboard(self) -> bool:
    """Whether TensorBoard event files are being written."""
    return self._tb is not None

  def write(self, step: int, metrics: Mapping[str, Any]) -> None:
    """Records ``metrics`` at ``step`` (one JSONL line; scalars also to
    TensorBoard).

    A no-op on processes other than 0.

    Args:
      step: the integer step.
      metrics: name -> value; arrays are converted to Python scalars or lists.

    Raises:
      TypeError: if ``step`` is not an int or ``metrics`` not a mapping.
      ValueError: after :meth:`close`, or if ``metrics`` has a ``step`` key.
    """
    if not self.enabled:
      return
    if self._closed:
      raise ValueError(f"MetricWriter for {self.path} is closed")
    arr = np.asarray(step)
    if (
      isinstance(step, bool)
      or arr.ndim
      or not np.issubdtype(arr.dtype, np.integer)
    ):
      raise TypeError(f"step must be an integer scalar, got {step!r}")
    step = int(arr)
    if not isinstance(metrics, Mapping):
      raise TypeError(
        f"metrics must be a mapping name -> value, got {type(metrics).__name__}"
      )
    if "step" in metrics:
      raise ValueError(
        "metrics must not contain a 'step' key; pass the step as `step`"
      )
    record = {"step": step, **_scalarize(metrics)}
    line = json.dumps(record) + "\n"
    self._lines.append(line)
    if self._fd is not None:
      _append(self._fd, line.encode())
    else:
      self._pending.append(line)
    if self._tb is not None:
      for k, v in record.items():
        if (
          k != "step"
          and isinstance(v, (int, float))
          and not isinstance(v, bool)
        ):
          self._tb.add_scalar(k, v, step)

  def flush(self) -> None:
    """Makes every record so far durable: on disk (``fsync``) or rewritten
    remotely.

    Local records are visible in the file as soon as :meth:`write` returns; this
    also survives a crash of the machine. Call it before saving a checkpoint.
    """
    if not self.enabled or self._closed:
      return
    if self._fd is not None:
      os.fsync(self._fd)
    elif self._pending:
      self._rewrite()
    self._pending.clear()
    if self._tb is not None:
      self._tb.flush()

  def close(self) -> None:
    """Flushes and closes the files; further writes raise. Idempotent."""
    if not self.enabled or self._closed:
      return
    self.flush()
    if self._fd is not None:
      os.close(self._fd)
      self._fd = None
    if self._tb is not None:
      self._tb.close()
    self._closed = True

  def __enter__(self) -> MetricWriter:
    return self

  def __exit__(self, *exc: Any) -> None:
    self.close()
