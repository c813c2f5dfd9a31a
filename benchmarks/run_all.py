"""Runs every benchmark in ``benchmarks/`` and renders their results as one markdown table.

  python -m benchmarks.run_all --quick          # every benchmark's quick mode (minutes)
  python -m benchmarks.run_all --only=cs_clip_loss,margins_throughput
  python -m benchmarks.run_all --table          # only print the table of benchmarks/results/

Each benchmark runs as its own process (``python -m benchmarks.<name> [--quick]``), one at a
time, from the repository root, and writes ``benchmarks/results/<name>.json`` (the record of
:mod:`jaxpapers.core.benchmark`: command, host, raw rows, and a summary of measured values
against their targets). A run of every benchmark also writes ``benchmarks/results/run_all.json``
with each benchmark's wall and CPU time and exit status; its summary is the total time of the
quick mode (target: 5 minutes on 2 CPU cores), as wall time and as the CPU time of the
benchmarks' processes (which a shared host does not inflate the way it does the wall time). :func:`performance_table` renders the summaries of all
records as one deterministic markdown table, for the README.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import resource
import subprocess
import sys
import time

from jaxpapers.core import benchmark as bench

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME = "run_all"
# The quick mode of every benchmark together, on 2 CPU cores.
QUICK_BUDGET_S = 300.0


def benchmark_names() -> list[str]:
  """The benchmark modules of ``benchmarks/`` (every ``*.py`` but this one and ``_*.py``), sorted."""
  here = pathlib.Path(__file__).resolve().parent
  return sorted(p.stem for p in here.glob("*.py") if not p.stem.startswith("_") and p.stem != NAME)


def _fmt(value: float) -> str:
  if not math.isfinite(value):
    return str(value)
  if value.is_integer() and abs(value) < 1e15:  # counts: 0 compiles, 388 bytes/token
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


def performance_table(results_dir: str | os.PathLike = "benchmarks/results") -> str:
  """One markdown table of every benchmark record's summary in ``results_dir``.

  Columns: benchmark (marked ``(quick)`` for a record of the quick mode), what, measured,
  target, met, command. Records are sorted by benchmark name, entries kept in the order the
  benchmark wrote them; numbers have a fixed format
  (3 significant figures, ``x`` for ratios), so the same files always give the same text.

  Args:
    results_dir: a folder of ``<name>.json`` records (:mod:`jaxpapers.core.benchmark`).

  Returns:
    The markdown table (header and one line per summary entry), ending with a newline.

  Raises:
    FileNotFoundError: the folder does not exist.
    ValueError: a file is not a benchmark record (names the file and the missing key).
  """
  folder = pathlib.Path(results_dir)
  if not folder.is_dir():
    raise FileNotFoundError(f"results_dir {str(folder)!r} is not a folder of benchmark records")
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
          raise ValueError(f"a summary entry of {rec['benchmark']!r} has no {key!r}: {item}")
      unit = item.get("unit", "x")
      value = _fmt(float(item["value"]))
      suffix = "x" if unit == "x" else f" {unit}" if unit else ""
      measured = f"{value}{suffix}"
      target = f"{item['target']}{suffix}"
      met = "yes" if item["met"] else "**no**"
      label = rec["benchmark"] + (" (quick)" if rec.get("quick") else "")
      lines.append(
        f"| {_cell(label)} | {_cell(item['name'])} | {measured} | {_cell(target)} "
        f"| {met} | `{_cell(rec['command'])}` |"
      )
  return "\n".join(lines) + "\n"


def _children_cpu_s() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def run(names: list[str], *, quick: bool, timeout: float) -> list[dict]:
  """Runs each benchmark in its own process, one at a time.

  Returns:
    One ``{"benchmark", "exit", "seconds", "cpu_seconds"}`` per benchmark: its exit status
    (or ``"timeout"``), wall time and the CPU time of its process (user + system, all threads).
  """
  rows = []
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
  for name in names:
    cmd = [sys.executable, "-m", f"benchmarks.{name}"] + (["--quick"] if quick else [])
    print(f"== {' '.join(cmd[1:])}", flush=True)
    start, cpu = time.perf_counter(), _children_cpu_s()
    try:
      proc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=timeout, check=False)
      status = proc.returncode
    except subprocess.TimeoutExpired:
      status = "timeout"
    seconds, cpu = time.perf_counter() - start, _children_cpu_s() - cpu
    print(f"== {name}: exit {status}, {seconds:.1f} s ({cpu:.1f} CPU s)", flush=True)
    rows.append({"benchmark": name, "exit": status, "seconds": seconds, "cpu_seconds": cpu})
  return rows


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
  p.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark")
  p.add_argument("--table", action="store_true", help="only print the table of the records")
  p.add_argument("--results_dir", default=str(bench.RESULTS_DIR))
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
      raise SystemExit(f"--only names unknown benchmarks {unknown}; known: {names}")
    names = wanted
  host = bench.host_info()
  rows = run(names, quick=args.quick, timeout=args.timeout)
  total = sum(r["seconds"] for r in rows)
  cpu = sum(r["cpu_seconds"] for r in rows)
  failed = [r["benchmark"] for r in rows if r["exit"] != 0]
  print(f"== {len(rows)} benchmarks in {total:.0f} s ({cpu:.0f} CPU s); failed: {failed or 'none'}")
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
          "every benchmark's quick mode, one after another, CPU time of their processes",
          cpu,
          f"<= {budget:g}",
          unit="s",
          note="user + system time of all threads; a shared host inflates the wall time (time "
          "spent waiting for a core) far more than this; on an idle 2-core host the wall time "
          "lies between half of it and all of it while the benchmarks keep a core busy",
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
