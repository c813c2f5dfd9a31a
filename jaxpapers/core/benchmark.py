"""The record every script in ``benchmarks/`` writes, and an interleaved
side-by-side timer.

A benchmark measures a method against the reference or the obvious alternative,
side by side in one process, and writes one JSON record
(``benchmarks/results/<name>.json`` by default)::

  {"benchmark": "<name>", "command": "<the exact command line>", "quick": bool,
   "host": {"cpu_count": ..., "platform": ..., "jax": ..., "shared_host": "<load note>", ...},
   "rows": [{...raw measurements...}, ...],
   "summary": [{"name": "<what>", "value": <number>, "unit": "x", "target": ">= 1.5",
                "met": true, "note": "<optional>"}, ...]}

``summary`` holds the numbers a reader compares with the targets (ratios where
possible, which survive a shared host better than absolute times); ``rows``
holds everything measured. ``python -m benchmarks.run_all --quick`` runs every
benchmark's ``--quick`` mode and renders the summaries into one table.

Example::

  from jaxpapers.core import benchmark as bench

  def parse_args(argv=None):
    return bench.parser("my_bench", __doc__).parse_args(argv)

  def main(argv=None):
    args = parse_args(argv)
    t = bench.side_by_side({"ours": ours, "reference": ref}, repeats=3 if args.quick else 7)
    ratio = t["reference"].best / t["ours"].best
    bench.write(
      "my_bench", args, rows=[{"case": k, **v.as_dict()} for k, v in t.items()],
      summary=[bench.summary("ours vs reference, speed-up", ratio, ">= 2")],
    )
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import pathlib
import platform
import re
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import jax

from jaxpapers.core.results import _to_jsonable, command_line

RESULTS_DIR = pathlib.Path("benchmarks") / "results"
_TARGET = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")
_OPS = {
  ">=": lambda a, b: a >= b,
  "<=": lambda a, b: a <= b,
  "==": lambda a, b: a == b,
  ">": lambda a, b: a > b,
  "<": lambda a, b: a < b,
}


def default_out(name: str) -> pathlib.Path:
  """``benchmarks/results/<name>.json`` (relative to the working directory, the
  repository)."""
  return RESULTS_DIR / f"{name}.json"


def parser(name: str, doc: str | None = None) -> argparse.ArgumentParser:
  """An argument parser with the two flags every benchmark has: ``--quick`` and
  ``--out``.

  Args:
    name: the benchmark's name (its module name in ``benchmarks/``).
    doc: the description shown by ``--help`` (the module docstring).

  Returns:
    An ``argparse.ArgumentParser``; add the benchmark's own flags to it.
  """
  p = argparse.ArgumentParser(
    prog=f"python -m benchmarks.{name}",
    description=doc,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  p.add_argument(
    "--quick",
    action="store_true",
    help=(
      "small sizes and few repeats (seconds): the mode benchmarks.run_all "
      "--quick runs"
    ),
  )
  p.add_argument(
    "--out",
    default=str(default_out(name)),
    help=("where to write the JSON record (%(default)s)"),
  )
  return p


def _load() -> list[float] | None:
  try:
    return [round(x, 2) for x in os.getloadavg()]
  except OSError:  # not available on this platform
    return None


def host_info() -> dict[str, Any]:
  """The machine a benchmark ran on: CPUs, platform, versions, devices and the
  load average."""
  try:
    usable = len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    usable = os.cpu_count()
  load = _load()
  return {
    "cpu_count": os.cpu_count(),
    "usable_cpus": usable,
    "platform": platform.platform(),
    "processor": platform.processor() or platform.machine(),
    "python": platform.python_version(),
    "jax": jax.__version__,
    "backend": jax.default_backend(),
    "device_kind": jax.devices()[0].device_kind,
    "device_count": jax.device_count(),
    "xla_flags": os.environ.get("XLA_FLAGS", ""),
    "load_average_at_start": load,
    "shared_host": (
      (
        f"1/5/15-minute load average {load} on {usable} usable CPUs when the "
        "benchmark started: above the CPU count, other processes shared the "
        "cores and absolute times are slower than on an idle machine; "
        "ratios are measured side by side in one process"
      )
      if load is not None
      else "load average unavailable"
    ),
  }


def target_met(value: float, target: str) -> bool:
  """Whether ``value`` satisfies ``target`` (``'>= 1.5'``, ``'<= 5'``,
  ``'> 1'``, ``'< 20'``, ``'== 0'``).

  A NaN or infinite value meets no target.

  Raises:
    ValueError: when ``target`` is not ``<op> <number>``.
  """
  m = _TARGET.match(target) if isinstance(target, str) else None
  if m is None:
    raise ValueError(
      "target must be '<op> <number>' with op one of >=, <=, ==, >, <; "
      f"got {target!r}"
    )
  if not math.isfinite(value):
    return False
  return bool(_OPS[m.group(1)](value, float(m.group(2))))


def summary(
  name: str,
  value: float,
  target: str,
  *,
  unit: str = "x",
  note: str | None = None,
) -> dict[str, Any]:
  """One summary entry: what was measured, the number, its target and whether it
  is met.

  Args:
    name: what the number is (``'fused loss vs per-slot loop, speed-up'``).
    value: the measured number.
    target: the rule, ``'<op> <number>'`` (see :func:`target_met`).
    unit: ``'x'`` for ratios, else the unit of ``value`` (``'ms'``,
      ``'GB'``, ...).
    note: optional context (why a target cannot be met here, what the number
      excludes).

  Returns:
    ``{"name", "value", "unit", "target", "met"}`` plus ``"note"`` when given.
  """
  if not isinstance(name, str) or not name:
    raise ValueError(f"name must be a non-empty str, got {name!r}")
  value = float(value)
  out = {"name": name, "value": value, "unit": unit, "target": target}
  out["met"] = target_met(value, target)
  if note:
    out["note"] = note
  return out


def write(
  name: str,
  args: argparse.Namespace,
  *,
  rows: Sequence[Mapping[str, Any]],
  summary: Sequence[Mapping[str, Any]],
  host: Mapping[str, Any] | None = None,
  argv: Sequence[str] | None = None,
  extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
  """Writes the benchmark's JSON record to ``args.out`` (creating its folder)
  and prints it.

  Args:
    name: the benchmark's name.
    args: the parsed arguments (``args.quick``, ``args.out``).
    rows: the raw measurements, one mapping per measured case.
    summary: entries made with :func:`summary`.
    host: :func:`host_info` taken when the benchmark started (default: taken
      now).
    argv: the command's arguments after the program (default ``sys.argv[1:]``).
    extra: further top-level entries (the benchmark's configuration, its wall
      time); they may not replace the record's own keys.

  Returns:
    The record as written.

  Raises:
    ValueError: a summary entry lacks a key of :func:`summary`, or ``extra``
      names a key of the record.
  """
  for item in summary:
    missing = {"name", "value", "unit", "target", "met"} - set(item)
    if missing:
      raise ValueError(
        f"summary entry {item.get('name')!r} lacks {sorted(missing)}"
      )
  host = dict(host_info() if host is None else host)
  host["load_average_at_end"] = _load()
  command = command_line(None if argv is None else [sys.argv[0], *argv])
  # the flags change what is measured, so the command names them
  if host.get("xla_flags"):
    command = f"XLA_FLAGS={shlex.quote(host['xla_flags'])} {command}"
  record = {
    "benchmark": name,
    "command": command,
    "quick": bool(args.quick),
    "host": host,
    "rows": _to_jsonable(list(rows)),
    "summary": _to_jsonable(list(summary)),
  }
  clash = sorted(set(extra or {}) & set(record))
  if clash:
    raise ValueError(
      f"extra must not replace the record's own keys, got {clash}"
    )
  record.update(_to_jsonable(dict(extra or {})))
  out = pathlib.Path(args.out)
  out.parent.mkdir(parents=True, exist_ok=True)
  out.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
  print(json.dumps(record["summary"], indent=1))
  print(f"wrote {out}", file=sys.stderr)
  return record


@dataclasses.dataclass(frozen=True)
class Timing:
  """Timed calls of one function: wall and process-CPU seconds of each
  repeat."""

  wall: tuple[float, ...]
  cpu: tuple[float, ...]

  @property
  def best(self) -> float:
    """The smallest wall time (s): the least disturbed repeat on a shared
    host."""
    return min(self.wall)

  @property
  def median(self) -> float:
    return statistics.median(self.wall)

  def as_dict(self) -> dict[str, float]:
    return {
      "best_s": self.best,
      "median_s": self.median,
      "cpu_best_s": min(self.cpu),
      "repeats": len(self.wall),
    }


def side_by_side(
  fns: Mapping[str, Callable[[], Any]],
  repeats: int = 5,
  *,
  warm_up: bool = True,
) -> dict[str, Timing]:
  """Times functions of no arguments in interleaved rounds, warm-up excluded.

  Each function is called once first (compilation, not timed; ``warm_up=False``
  when the caller has already called each once); then ``repeats`` rounds call
  every function once each, in turn, so that a burst of load on a shared machine
  hits all of them alike. Every call waits for its outputs
  (``jax.block_until_ready``).

  Args:
    fns: name -> function returning a pytree of arrays (or anything
      ``block_until_ready`` takes).
    repeats: timed rounds (>= 1).

  Returns:
    name -> :class:`Timing`.
  """
  if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
    raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
  if not fns:
    raise ValueError("fns must name at least one function")
  if warm_up:
    for fn in fns.values():
      jax.block_until_ready(fn())
  wall = {k: [] for k in fns}
  cpu = {k: [] for k in fns}
  for _ in range(repeats):
    for k, fn in fns.items():
      w0, c0 = time.perf_counter(), time.process_time()
      jax.block_until_ready(fn())
      cpu[k].append(time.process_time() - c0)
      wall[k].append(time.perf_counter() - w0)
  return {k: Timing(tuple(wall[k]), tuple(cpu[k])) for k in fns}


def timing_row(
  case: str, timings: Mapping[str, Timing], **info: Any
) -> dict[str, Any]:
  """One ``rows`` entry: ``{"case": case, **info, "<name>_best_s": ..., ...}``
  for each timing."""
  row = {"case": case, **info}
  for name, t in timings.items():
    row.update({f"{name}_{k}": v for k, v in t.as_dict().items()})
  return row


_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@dataclasses.dataclass
class CompileCount:
  """XLA compilations seen inside a :func:`count_compilations` block (``count``,
  ``seconds``)."""

  count: int = 0
  seconds: float = 0.0


@contextlib.contextmanager
def count_compilations() -> Iterator[CompileCount]:
  """Counts the XLA backend compilations of every program run inside the block.

  Example::

    with bench.count_compilations() as c:
      for batch in fresh_batches:  # same shapes as a call made before the block
        step(batch)
    assert c.count == 0  # no recompilation
  """
  counter = CompileCount()

  def listener(event: str, duration_secs: float, **_: Any) -> None:
    if event == _COMPILE_EVENT:
      counter.count += 1
      counter.seconds += duration_secs

  jax.monitoring.register_event_duration_secs_listener(listener)
  try:
    yield counter
  finally:
    jax.monitoring.unregister_event_duration_listener(listener)
