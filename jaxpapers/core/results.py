"""The results writer: ``<workdir>/results.json`` (with claims and verdicts) and
PNG plots.

Writes go through ``etils.epath``, so a workdir may be a local folder or a
remote URL (``gs://...``) wherever epath supports it, and happen on process 0
only: on other processes of a multi-host run :func:`write_results` and
:func:`save_figure` return None without writing.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import io
import json
import os
import pathlib
import platform
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from absl import logging
from etils import epath

from jaxpapers.core import claims as claims_lib
from jaxpapers.core import registration

RESULTS_FILE = "results.json"
_PACKAGES = (
  "jax",
  "jaxlib",
  "flax",
  "optax",
  "orbax-checkpoint",
  "chex",
  "numpy",
  "ml-collections",
  "tensorflow-datasets",
  "jaxpapers",
)


def environment_info() -> dict[str, Any]:
  """Package versions, devices and host, for the record of a run.

  Returns:
    ``{'versions': {package: version or None}, 'python', 'platform',
    'processor', 'cpu_count', 'backend', 'device_kind', 'device_count',
    'local_device_count', 'process_count'}``.
  """
  versions = {}
  for name in _PACKAGES:
    try:
      versions[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      versions[name] = None
  devices = jax.devices()
  return {
    "versions": versions,
    "python": platform.python_version(),
    "platform": platform.platform(),
    "processor": platform.processor() or platform.machine(),
    "cpu_count": os.cpu_count(),
    "backend": jax.default_backend(),
    "device_kind": devices[0].device_kind,
    "device_count": jax.device_count(),
    "local_device_count": jax.local_device_count(),
    "process_count": jax.process_count(),
  }


def _to_jsonable(obj: Any) -> Any:
  """Converts configs, dataclasses, numpy and JAX values into JSON types."""
  if hasattr(obj, "to_dict") and callable(obj.to_dict):  # ConfigDict
    return _to_jsonable(obj.to_dict())
  if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
    return _to_jsonable(dataclasses.asdict(obj))
  if isinstance(obj, Mapping):
    return {str(k): _to_jsonable(v) for k, v in obj.items()}
  if isinstance(obj, (list, tuple)):
    return [_to_jsonable(v) for v in obj]
  if isinstance(obj, (jax.Array, np.ndarray, np.generic)):
    arr = np.asarray(obj)
    if arr.ndim == 0:
      return _to_jsonable(arr.item())
    return _to_jsonable(arr.tolist())
  if isinstance(obj, float):
    if np.isnan(obj) or np.isinf(obj):
      return str(obj)
    return obj
  if isinstance(obj, (str, int, bool)) or obj is None:
    return obj
  if isinstance(obj, pathlib.PurePath):
    return str(obj)
  return repr(obj)


# public name (e.g. for values added to committed results)
to_jsonable = _to_jsonable


def git_info(
  path: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
  """``{'commit': hash, 'dirty': bool}`` of the git checkout holding ``path``,
  else None.

  ``path`` defaults to this package's folder. ``dirty`` is True when a tracked
  file differs from the commit or an untracked (not ignored) file lies under
  ``jaxpapers/`` or ``experiments/`` (see
  :func:`jaxpapers.core.registration.git_state`). Never raises: outside a git
  checkout, without git, or on any error, returns None.

  Args:
    path: a file or folder inside the checkout (the nearest existing parent is
      used); None for this package's folder.

  Returns:
    ``{'commit': 40-hex str, 'dirty': bool}``, or None.
  """
  if path is not None:
    where = pathlib.Path(path)
    while not where.exists() and where != where.parent:
      where = where.parent
    if not where.exists():
      return None
    path = where
  state = registration.git_state(path)
  if state is None or len(state["commit"]) != 40:
    return None
  return {"commit": state["commit"], "dirty": state["dirty"]}


def command_line(argv: Sequence[str] | None = None) -> str:
  """The command that started this process, as a shell line.

  A module run with ``python -m pkg.mod`` is written as such (``sys.argv[0]``
  then holds the module's file path); a script as ``python <argv[0]> ...``.

  Args:
    argv: the arguments, like ``sys.argv`` (default ``sys.argv``).

  Returns:
    the shell-quoted command line.
  """
  if argv is not None and (
    isinstance(argv, (str, bytes))
    or not isinstance(argv, Sequence)
    or not all(isinstance(a, str) for a in argv)
  ):
    raise TypeError(
      f"argv must be a sequence of str (like sys.argv), got {argv!r}"
    )
  argv = list(sys.argv if argv is None else argv)
  spec = getattr(sys.modules.get("__main__"), "__spec__", None)
  name = getattr(spec, "name", None)
  if name:
    if name.endswith(".__main__"):
      name = name[: -len(".__main__")]
    head = ["python", "-m", name]
  else:
    head = ["python", *argv[:1]]
  return shlex.join(head + argv[1:])


def _is_writer() -> bool:
  return jax.process_index() == 0


def write_results(
  workdir: str | os.PathLike[str],
  *,
  metrics: Mapping[str, Any],
  config: Any,
  table_markdown: str | None = None,
  notes: str | None = None,
  wall_time_s: float | None = None,
  extra: Mapping[str, Any] | None = None,
  claims: Any = None,
  issue_verdicts: bool | None = None,
  report: Any = None,
  table_file: str | None = None,
) -> epath.Path | None:
  """Writes ``<workdir>/results.json`` and returns its path (None on processes
  other than 0).

  The file records the metrics, the claims with their verdicts, the full config,
  the registration of the claims (:mod:`jaxpapers.core.registration`:
  registered, post-hoc or not required), git (start and end commits and the
  start's dirty flag, which counts untracked code files; None outside a git
  checkout), start and end times, the exact command, package versions, the
  device kind and count, the wall time, the PNG plots present in ``workdir`` and
  an optional markdown table (what ``experiments.reproduce`` puts in REPORT.md).

  Args:
    workdir: the run's directory (created if needed): a local path or an epath
      URL.
    metrics: JSON-able metrics (numpy/JAX scalars and arrays are converted).
    config: the run's config (ConfigDict, dataclass or mapping).
    table_markdown: the measured table, as markdown.
    notes: free text (what was run, caveats).
    wall_time_s: the run's wall time in seconds.
    extra: any additional JSON-able fields.
    claims: the claims to judge (:class:`jaxpapers.core.claims.Claim` or dicts);
      default: the config's ``claims`` field, if any.
    issue_verdicts: False records the measured values without verdicts (smoke
      settings); default: the config's ``issue_verdicts`` field, else True.
    report: a :class:`jaxpapers.core.reporting.Report` rendered from the record:
      its figures as PNGs in ``workdir``, its tables as ``table_markdown``
      (unless that is given); default: the config's ``report`` field, if any. It
      is not copied into the record.
    table_file: a file name (e.g. ``'table.md'``) under ``workdir`` that also
      receives the record's ``table_markdown`` (given or rendered from
      ``report``) and a final newline, for a reader of the workdir; None, or a
      record without a table, writes no such file.

  Returns:
    The path of results.json, or None on processes other than 0.

  Raises:
    TypeError: ``metrics`` is not a mapping.
    ValueError: ``table_file`` is not a plain file name (empty, or holding a
      ``/``).
  """
  if not isinstance(metrics, Mapping):
    raise TypeError(
      f"metrics must be a mapping of metric names to JSON-able values, got "
      f"{type(metrics).__name__}: {metrics!r}"[:300]
    )
  if table_file is not None and (
    not isinstance(table_file, str)
    or "/" in table_file
    or table_file in {"", ".", ".."}
  ):
    raise ValueError(
      f"table_file must be a file name such as 'table.md', got {table_file!r}"
    )
  if not _is_writer():
    return None
  if claims is None:
    claims = _config_get(config, "claims")
  if issue_verdicts is None:
    issue_verdicts = bool(_config_get(config, "issue_verdicts", True))
  jmetrics = _to_jsonable(metrics)
  try:
    verdicts = claims_lib.judge_all(
      claims, jmetrics, issue_verdicts=issue_verdicts
    )
  # a malformed claim must not lose a finished run
  except (TypeError, ValueError) as e:
    logging.error("The claims could not be judged: %s", e)
    verdicts = [{"error": f"the claims could not be judged: {e}"}]
  try:
    run = registration.run_record(
      {"claims": claims, "issue_verdicts": issue_verdicts}
    )
  # malformed claims: recorded above as an error
  except (TypeError, ValueError) as e:
    run = registration.run_record({"claims": (), "issue_verdicts": False})
    run["registration"] = {
      "status": registration.POST_HOC,
      "why": (f"malformed claims: {e}"),
    }
  if report is None:
    report = _config_get(config, "report")
  jconfig = _to_jsonable(config)
  if isinstance(jconfig, dict):
    # the report's spec: code, not a setting of the run
    jconfig.pop("report", None)
  workdir = epath.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  record = {
    "claims": verdicts,
    "metrics": jmetrics,
    "config": jconfig,
    "table_markdown": table_markdown,
    "notes": notes,
    "wall_time_s": wall_time_s,
    "command": command_line(),
    # set by experiments.reproduce per child
    "run_id": os.environ.get("JAXPAPERS_RUN_ID"),
    "registration": run["registration"],
    "git": run["git"],
    "started_at": run["started_at"],
    "plots": sorted(p.name for p in workdir.glob("*.png")),
    "environment": environment_info(),
    "written_at": datetime.datetime.now(datetime.UTC).isoformat(
      timespec=("seconds")
    ),
  }
  if extra:
    record["extra"] = _to_jsonable(extra)
  if report is not None:
    from jaxpapers.core import reporting  # pylint: disable=import-outside-toplevel

    tables, _ = reporting.render(report, record, workdir)
    if table_markdown is None:
      record["table_markdown"] = tables or None
    record["plots"] = sorted(p.name for p in workdir.glob("*.png"))
  path = workdir / RESULTS_FILE
  write_json_atomic(path, record)
  if table_file is not None and record["table_markdown"]:
    (workdir / table_file).write_text(record["table_markdown"] + "\n")
  return path


def write_json_atomic(
  path: str | os.PathLike[str], record: Mapping[str, Any]
) -> None:
  """Writes ``record`` to ``path`` (laid out by :func:`format_json`) through a
  temporary file and a rename."""
  path = epath.Path(path)
  tmp = path.parent / (path.name + ".tmp")
  tmp.write_text(format_json(record))
  tmp.replace(path)


def format_json(value: Any, *, width: int = 100) -> str:
  """``value`` as JSON laid out to be read and diffed, yet small.

  One line each for: a list of numbers (or of such lists), an object or list
  whose entries are numbers, strings or such lists (a table row), and anything
  whose compact form fits in ``width`` characters. Any other object or list puts
  one entry per line, indented by two spaces. Keys keep their order; no spaces
  follow ``,`` and ``:``.

  Args:
    value: JSON types (dicts, lists, numbers, strings, booleans, None).
    width: the longest compact object or list written on one line.

  Returns:
    The text, ending in a newline; ``json.loads`` of it equals ``value``.
  """

  def compact(x):
    return json.dumps(x, separators=(",", ":"))

  def numeric(x):
    return isinstance(x, list) and all(
      not isinstance(v, (dict, str)) and (not isinstance(v, list) or numeric(v))
      for v in x
    )

  def row(x):
    values = x.values() if isinstance(x, dict) else x
    return all(not isinstance(v, (dict, list)) or numeric(v) for v in values)

  def lay_out(x, pad):
    flat = compact(x)
    if not isinstance(x, (dict, list)) or not x or len(flat) <= width or row(x):
      return flat
    inner = pad + "  "
    if isinstance(x, dict):
      keys = [
        k if isinstance(k, str) else next(iter(json.loads(compact({k: 0}))))
        for k in x
      ]
      rows = [
        f"{inner}{compact(k)}:{lay_out(v, inner)}"
        for k, v in zip(keys, x.values())
      ]
      return "{\n" + ",\n".join(rows) + "\n" + pad + "}"
    return (
      "[\n"
      + ",\n".join(inner + lay_out(v, inner) for v in x)
      + "\n"
      + pad
      + "]"
    )

  return lay_out(value, "") + "\n"


def _config_get(config: Any, name: str, default: Any = None) -> Any:
  if isinstance(config, Mapping) or hasattr(config, "get"):
    try:
      return config.get(name, default)
    except TypeError:
      pass
  return getattr(config, name, default)


def read_results(workdir: str | os.PathLike[str]) -> dict[str, Any]:
  """Reads ``<workdir>/results.json``.

  Args:
    workdir: the run's working directory.

  Returns:
    the parsed JSON record.
  """
  return json.loads((epath.Path(workdir) / RESULTS_FILE).read_text())


def save_figure(
  fig: Any, workdir: str | os.PathLike[str], name: str, *, dpi: int = 100
) -> epath.Path | None:
  """Saves a matplotlib figure as ``<workdir>/<name>.png`` and closes it.

  The PNG is stored as a palette image where that looks the same
  (:func:`palette_png`). Only process 0 writes; other processes close the figure
  and return None.

  Args:
    fig: a ``matplotlib.figure.Figure``.
    workdir: the folder (created if needed).
    name: a bare file stem such as ``'loss_curves'`` (no ``/``, no ``.png``).
    dpi: resolution of the PNG.

  Returns:
    the written file's path on process 0, None elsewhere.
  """
  # local: keep matplotlib off the import path of the library
  import matplotlib.pyplot as plt

  if not name or "/" in name or name.endswith(".png"):
    plt.close(fig)
    raise ValueError(
      f"name must be a bare file stem like 'loss_curves', got {name!r}"
    )
  if not _is_writer():
    plt.close(fig)
    return None
  workdir = epath.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  path = workdir / f"{name}.png"
  buf = io.BytesIO()
  fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
  plt.close(fig)
  data = buf.getvalue()
  path.write_bytes(palette_png(data) or data)
  return path


# the largest change of a pixel's channel (of 255) palette_png may make
PNG_MAX_ERR = 24


def palette_png(data: bytes) -> bytes | None:
  """A PNG as a palette image of the fewest colours that look the same, if
  smaller; or None.

  The palette of 32, 64, 128 or 256 colours (the first that fits) covers the
  colours by pixel count (Pillow's MAXCOVERAGE, no dithering); it fits when no
  pixel's channel moves by more than ``PNG_MAX_ERR`` of 255 (a series whose
  colour merged into another's would move far more), so each line keeps its
  colour. A matplotlib plot has few colours beyond its antialiasing: the palette
  image is typically a third of the size and looks the same.

  Args:
    data: the bytes of a PNG file.

  Returns:
    The bytes of the palette PNG; None when ``data`` is already a palette or
    grey image, has transparent pixels, needs more than 256 colours, or would
    not get smaller.
  """
  # local, as matplotlib: a dependency of the figures only
  from PIL import Image

  image = Image.open(io.BytesIO(data))
  if image.mode not in ("RGB", "RGBA"):
    return None
  if image.mode == "RGBA" and image.getchannel("A").getextrema() != (255, 255):
    return None
  rgb = image.convert("RGB")
  pixels = np.asarray(rgb, np.int16)
  for colours in (32, 64, 128, 256):
    palette = rgb.quantize(
      colours, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE
    )
    if (
      np.abs(np.asarray(palette.convert("RGB"), np.int16) - pixels).max()
      <= PNG_MAX_ERR
    ):
      out = io.BytesIO()
      palette.save(out, "PNG", optimize=True)
      return out.getvalue() if out.tell() < len(data) else None
  return None
