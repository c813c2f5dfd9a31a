"""The results writer: ``<workdir>/results.json`` and PNG plots."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
from typing import Any, Mapping

import jax
import numpy as np

RESULTS_FILE = "results.json"
_PACKAGES = (
    "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "chex", "numpy",
    "ml-collections", "tensorflow-datasets", "jaxpapers",
)


def environment_info() -> dict[str, Any]:
  """Package versions, devices and host, for the record of a run."""
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


def write_results(
    workdir: str | os.PathLike[str],
    *,
    metrics: Mapping[str, Any],
    config: Any,
    table_markdown: str | None = None,
    notes: str | None = None,
    wall_time_s: float | None = None,
    extra: Mapping[str, Any] | None = None,
) -> pathlib.Path:
  """Writes ``<workdir>/results.json`` and returns its path.

  The file records the metrics, the full config, package versions, the device
  kind and count, the wall time, the PNG plots present in ``workdir`` and an
  optional markdown table (what ``experiments.reproduce`` puts in REPORT.md).

  Args:
    workdir: the run's directory (created if needed).
    metrics: JSON-able metrics (numpy/JAX scalars and arrays are converted).
    config: the run's config (ConfigDict, dataclass or mapping).
    table_markdown: the measured table, as markdown.
    notes: free text (what was run, caveats).
    wall_time_s: the run's wall time in seconds.
    extra: any additional JSON-able fields.
  """
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  record = {
      "metrics": _to_jsonable(metrics),
      "config": _to_jsonable(config),
      "table_markdown": table_markdown,
      "notes": notes,
      "wall_time_s": wall_time_s,
      "plots": sorted(p.name for p in workdir.glob("*.png")),
      "environment": environment_info(),
      "written_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
  }
  if extra:
    record["extra"] = _to_jsonable(extra)
  path = workdir / RESULTS_FILE
  tmp = path.with_suffix(".json.tmp")
  tmp.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
  os.replace(tmp, path)
  return path


def read_results(workdir: str | os.PathLike[str]) -> dict[str, Any]:
  """Reads ``<workdir>/results.json``."""
  return json.loads((pathlib.Path(workdir) / RESULTS_FILE).read_text())


def save_figure(fig: Any, workdir: str | os.PathLike[str], name: str, *, dpi: int = 120) -> pathlib.Path:
  """Saves a matplotlib figure as ``<workdir>/<name>.png`` and closes it."""
  import matplotlib.pyplot as plt  # local: keep matplotlib off the import path of the library

  if not name or "/" in name or name.endswith(".png"):
    raise ValueError(f"name must be a bare file stem like 'loss_curves', got {name!r}")
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  path = workdir / f"{name}.png"
  fig.savefig(path, dpi=dpi, bbox_inches="tight")
  plt.close(fig)
  return path
