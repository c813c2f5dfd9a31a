"""Runs every benchmark in ``benchmarks/`` and renders their results as one
markdown table.

  python -m benchmarks.run_all --quick          # every benchmark's quick mode (minutes)
  python -m benchmarks.run_all --only=cs_clip_loss,margins_throughput
  python -m benchmarks.run_all --table          # only print the table of benchmarks/results/

Each benchmark runs as its own process, one at a time, from the repository root,
exactly as ``python -m benchmarks.<name> [--quick]`` does, and writes
``benchmarks/results/<name>.json`` (the record of
:mod:`jaxpapers.core.benchmark`: command, host, raw rows, and a summary of
measured values against their targets). On Linux the process is forked from this
one after it has imported NumPy, JAX, Flax and optax (and before any JAX backend
starts), so the few seconds of CPU those imports cost are paid once rather than
once per benchmark; each benchmark still has a process of its own (its JAX
backend, configuration and compiled programs). ``--no_fork`` starts a fresh
interpreter per benchmark instead. A run of every benchmark also writes
``benchmarks/results/run_all.json`` with each benchmark's wall and CPU time and
exit status; its summary is the total time of the quick mode (target: 5 minutes
on 2 CPU cores), as wall time and as the CPU time of the benchmarks' processes
(which a shared host does not inflate the way it does the wall time).
:func:`performance_table` renders the summaries of all records as one
deterministic markdown table, for the README.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pathlib
import resource
import runpy
import signal
import subprocess
import sys
import time
import traceback

from jaxpapers.core import benchmark as bench

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME = "run_all"
# The quick mode of every benchmark together, on 2 CPU cores.
QUICK_BUDGET_S = 300.0
# Imported once by this process before it forks the benchmarks (none of them
# starts a backend).
PRELOAD = (
  "numpy",
  "jax",
  "jax.numpy",
  "optax",
  "flax.nnx",
  "jaxpapers.core.benchmark",
)


def benchmark_names() -> list[str]:
  """The benchmark modules of ``benchmarks/`` (every ``*.py`` but this one and
  ``_*.py``), sorted."""
  here = pathlib.Path(__file__).resolve().parent
  return sorted(
    p.stem
    for p in here.glob("*.py")
    if not p.stem.startswith("_") and p.stem != NAME
  )


def _fmt(value: float) -> str:
  if not math.isfinite(value):
    return str(value)
  # counts: 0 compiles, 388 bytes/token
  if value.is_integer() and abs(value) < 1e15:
    return f"{int(value):,}"
  a = abs(value)
  if a >= 1000:
    return f"{value:,.0f}"
  if a >= 100:
    return f"{value:.0f}"
  if a >= 10:
    return f"{value:.1f}"
  if a >= 0.01 or a == 0:
    return f"{value:.2f}"
  return f"{value:.2g}"


def _cell(text: str) -> str:
  return str(text).replace("|", "\\|").replace("\n", " ")


def performance_table(
  results_dir: str | os.PathLike = "benchmarks/results",
) -> str:
  """One markdown table of every benchmark record's summary in ``results_dir``.

  Columns: benchmark (marked ``(quick)`` for a record of the quick mode), what,
  measured, target, met, command. Records are sorted by benchmark name, entries
  kept in the order the benchmark wrote them; numbers have a fixed format (3
  significant figures, ``x`` for ratios), so the same files always give the same
  text.

  Args:
    results_dir: a folder of ``<name>.json`` records
      (:mod:`jaxpapers.core.benchmark`).

  Returns:
    The markdown table (header and one line per summary entry), ending with a
    newline.

  Raises:
    FileNotFoundError: the folder does not exist.
    ValueError: a file is not a benchmark record (names the file and the missing
      key).
  """
  folder = pathlib.Path(results_dir)
  if not folder.is_dir():
    raise FileNotFoundError(
      f"results_dir {str(folder)!r} is not a folder of benchmark records"
    )
  records = []
  for path in sorted(folder.glob("*.json")):
    try:
      rec = json.loads(path.read_text())
    except json.JSONDecodeError as e:
      raise ValueError(f"{path} is not valid JSON: {e}") from None
    for key in ("benchmark", "command", "summary"):
      if not isinstance(rec, dict) or key not in rec:
        raise ValueError(f"{path} is not a benchmark record: no {key!r} key")
    records.append(rec)
  records.sort(key=lambda r: r["benchmark"])
  lines = [
    "| benchmark | what | measured | target | met | command |",
    "|---|---|---|---|---|---|",
  ]
  for rec in records:
    for item in rec["summary"]:
      for key in ("name", "value", "target", "met"):
        if key not in item:
          raise ValueError(
            f"a summary entry of {rec['benchmark']!r} has no {key!r}: {item}"
          )
      unit = item.get("unit", "x")
      value = _fmt(float(item["value"]))
      suffix = "x" if unit == "x" else f" {unit}" if unit else ""
      measured = f"{value}{suffix}"
      target = f"{item['target']}{suffix}"
      met = "yes" if item["met"] else "**no**"
      label = rec["benchmark"] + (" (quick)" if rec.get("quick") else "")
      lines.append(
        f"| {_cell(label)} | {_cell(item['name'])} | {measured} | "
        f"{_cell(target)} | {met} | `{_cell(rec['command'])}` |"
      )
  return "\n".join(lines) + "\n"


def _children_cpu_s() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def _can_fork() -> bool:
  return sys.platform.startswith("linux") and hasattr(os, "fork")


def _process_age_s() -> float:
  """Wall seconds since this process started (Linux: ``/proc``)."""
  with open("/proc/self/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
  with open("/proc/uptime") as f:
    uptime = float(f.read().split()[0])
  # field 22: start time, ticks
  return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")


def preload() -> dict:
  """Imports :data:`PRELOAD` into this process.

  Returns:
    A row for the record: the wall and CPU seconds of this process so far
    (interpreter start and every import, which the forked benchmarks then
    share).
  """
  for module in PRELOAD:
    importlib.import_module(module)
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return {
    "benchmark": "(run_all itself: interpreter start and imports of "
    + ", ".join(PRELOAD)
    + ")",
    "exit": 0,
    "seconds": _process_age_s(),
    "cpu_seconds": usage.ru_utime + usage.ru_stime,
  }


def _forked(name: str, args: list[str], timeout: float) -> int | str:
  """Runs ``benchmarks.<name>`` as ``__main__`` in a forked child; its exit
  status."""
  sys.stdout.flush()
  sys.stderr.flush()
  pid = os.fork()
  # the child: a process group of its own, so that a timeout ends its children
  # too
  if pid == 0:
    code = 1
    try:
      os.setpgrp()
      os.chdir(ROOT)
      sys.argv = [str(ROOT / "benchmarks" / f"{name}.py"), *args]
      runpy.run_module(
        f"benchmarks.{name}", run_name="__main__", alter_sys=True
      )
      code = 0
    except SystemExit as e:
      code = e.code if isinstance(e.code, int) else int(e.code is not None)
    except BaseException:
      traceback.print_exc()
    finally:
      sys.stdout.flush()
      sys.stderr.flush()
      os._exit(code)
  deadline = time.monotonic() + timeout
  while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      return os.waitstatus_to_exitcode(status)
    if time.monotonic() > deadline:
      os.killpg(pid, signal.SIGKILL)
      os.waitpid(pid, 0)
      return "timeout"
    time.sleep(0.1)


def _fresh(name: str, args: list[str], timeout: float) -> int | str:
  """Runs ``python -m benchmarks.<name>`` in a fresh interpreter; its exit
  status."""
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT), env.get("PYTHONPATH", "")])
  )
  cmd = [sys.executable, "-m", f"benchmarks.{name}", *args]
  try:
    return subprocess.run(
      cmd, cwd=ROOT, env=env, timeout=timeout, check=False
    ).returncode
  except subprocess.TimeoutExpired:
    return "timeout"


def run(
  names: list[str], *, quick: bool, timeout: float, fork: bool = True
) -> list[dict]:
  """Runs each benchmark in its own process, one at a time.

  Args:
    names: benchmark module names (``benchmarks.<name>``).
    quick: pass ``--quick``.
    timeout: seconds per benchmark; a benchmark past it is killed (exit
      ``"timeout"``).
    fork: fork each from this process (Linux; :func:`preload` first) rather than
      start a fresh interpreter. This process must not have started a JAX
      backend.

  Returns:
    One ``{"benchmark", "exit", "seconds", "cpu_seconds"}`` per benchmark: its
    exit status (or ``"timeout"``), wall time and the CPU time of its process
    (user + system, all threads).
  """
  fork = fork and _can_fork()
  args = ["--quick"] if quick else []
  rows = []
  for name in names:
    print(f"== benchmarks.{name} {' '.join(args)}", flush=True)
    start, cpu = time.perf_counter(), _children_cpu_s()
    status = (_forked if fork else _fresh)(name, args, timeout)
    seconds, cpu = time.perf_counter() - start, _children_cpu_s() - cpu
    print(
      f"== {name}: exit {status}, {seconds:.1f} s ({cpu:.1f} CPU s)", flush=True
    )
    rows.append(
      {
        "benchmark": name,
        "exit": status,
        "seconds": seconds,
        "cpu_seconds": cpu,
      }
    )
  return rows


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--only",
    default="",
    help=("comma-separated benchmark names (default: all)"),
  )
  p.add_argument(
    "--timeout", type=float, default=600.0, help=("seconds per benchmark")
  )
  p.add_argument(
    "--table", action="store_true", help=("only print the table of the records")
  )
  p.add_argument("--results_dir", default=str(bench.RESULTS_DIR))
  p.add_argument(
    "--no_fork",
    action="store_true",
    help=("a fresh interpreter per benchmark (no preload)"),
  )
  return p.parse_args(argv)


def main(argv=None) -> int:
  args = parse_args(argv)
  if args.table:
    print(performance_table(args.results_dir), end="")
    return 0
  names = benchmark_names()
  if args.only:
    wanted = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
      raise SystemExit(
        f"--only names unknown benchmarks {unknown}; known: {names}"
      )
    names = wanted
  fork = not args.no_fork and _can_fork()
  loaded = [preload()] if fork else []
  rows = run(names, quick=args.quick, timeout=args.timeout, fork=fork)
  # after the runs: it starts a JAX backend, which a fork must not hold
  host = bench.host_info()
  rows = loaded + rows
  total = sum(r["seconds"] for r in rows)
  cpu = sum(r["cpu_seconds"] for r in rows)
  failed = [r["benchmark"] for r in rows if r["exit"] != 0]
  print(
    f"== {len(rows)} benchmarks in {total:.0f} s ({cpu:.0f} CPU s); failed: "
    f"{failed or 'none'}"
  )
  if not args.only:  # a record of the whole run
    budget = QUICK_BUDGET_S if args.quick else None
    summary = (
      [
        bench.summary(
          "every benchmark's quick mode, one after another, wall time",
          total,
          f"<= {budget:g}",
          unit="s",
          note=f"failed: {', '.join(failed)}" if failed else None,
        ),
        bench.summary(
          (
            "every benchmark's quick mode, one after another, "
            "CPU time of their processes"
          ),
          cpu,
          f"<= {budget:g}",
          unit="s",
          note=(
            "user + system time of all threads, with the imports run_all pays "
            "once (the preload row); a shared host inflates the wall time "
            "(time spent waiting for a core) far more than this; "
            "on an idle 2-core host the wall time lies between half of it and "
            "all of it while the benchmarks keep a core busy"
          ),
        ),
      ]
      if budget
      else []
    )
    bench.write(NAME, args, rows=rows, summary=summary, host=host, argv=argv)
  print(performance_table(args.results_dir), end="")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
