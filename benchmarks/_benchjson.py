"""The JSON record every benchmark writes to ``benchmarks/results/<name>.json``.

Shape (read by the collection of all benchmarks)::

  {"benchmark": name, "command": "python -m benchmarks.<name> ...", "quick": bool,
   "host": {"cpu_count", "platform", "jax", "jaxlib", "backend", "device_kind", "xla_flags",
            "load_average", "shared_host"},
   "rows": [raw measurements], "summary": [{"name", "value", "unit", "target", "met",
   "note"}], ...extra}
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import jax

from jaxpapers.core import results as results_lib

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

SHARED_HOST = (
  "timings on a CPU host that may be shared with other jobs: the ratios, measured side by side "
  "in one process with repeats, are the meaningful part; load_average gives the load"
)


def default_path(name: str) -> str:
  """``benchmarks/results/<name>.json`` in this checkout."""
  return os.path.join(RESULTS_DIR, f"{name}.json")


def command(name: str, argv: Sequence[str] | None) -> str:
  """The command line of this run: ``python -m benchmarks.<name> <args>``."""
  if argv is None:
    return results_lib.command_line()
  return shlex.join(["python", "-m", f"benchmarks.{name}", *argv])


def host_info(load: tuple | None = None) -> dict[str, Any]:
  env = results_lib.environment_info()
  return {
    "cpu_count": os.cpu_count(),
    "platform": platform.platform(),
    "processor": env["processor"],
    "python": platform.python_version(),
    "jax": jax.__version__,
    "jaxlib": env["versions"].get("jaxlib"),
    "backend": env["backend"],
    "device_kind": env["device_kind"],
    "device_count": env["device_count"],
    "xla_flags": os.environ.get("XLA_FLAGS", ""),
    "load_average": {"start": list(load[0]), "end": list(load[1])} if load else None,
    "shared_host": SHARED_HOST,
  }


def record(
  name: str,
  *,
  quick: bool,
  rows: list,
  summary: list,
  argv: Sequence[str] | None = None,
  load: tuple | None = None,
  **extra: Any,
) -> dict[str, Any]:
  """The benchmark's record (see the module docstring); ``extra`` is added at the top level."""
  for item in summary:
    missing = {"name", "value", "unit", "target", "met"} - set(item)
    if missing:
      raise ValueError(f"summary item {item.get('name')!r} lacks {sorted(missing)}")
  return {
    "benchmark": name,
    "command": command(name, argv),
    "quick": bool(quick),
    "host": host_info(load),
    "git": results_lib.git_info(),
    **extra,
    "rows": rows,
    "summary": summary,
  }


def write(rec: dict[str, Any], path: str) -> None:
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  results_lib.write_json_atomic(path, results_lib.to_jsonable(rec))


def print_summary(rec: dict[str, Any], file=sys.stdout) -> None:
  print(
    f"\n{rec['benchmark']} ({'quick' if rec['quick'] else 'full'}): {rec['command']}", file=file
  )
  for s in rec["summary"]:
    met = {True: "met", False: "NOT met", None: "-"}[s["met"]]
    print(f"  {s['name']}: {s['value']:.4g}{s['unit']} (target {s['target']}: {met})", file=file)
    if s.get("note"):
      print(f"      {s['note']}", file=file)
