"""Type-checks ``jaxpapers/`` with pyright and holds every file to its recorded error count.

  .venv/bin/python .ci/typecheck.py            # check against .ci/pyright_baseline.json
  .venv/bin/python .ci/typecheck.py --update   # record today's counts (they may only fall)
  .venv/bin/python .ci/typecheck.py --list     # print every error

Pyright (``[tool.pyright]`` in pyproject.toml, standard mode) runs over the
library. The library was written before a type checker ran on it, so some files
still carry errors; the baseline records, per file and per pyright rule, how
many. The check fails when any file gains an error of any rule, or when a file
that the baseline does not name has one: new code is held to zero, old code can
only get better. ``--update`` refuses to raise a count, so the baseline is a
ratchet, never a way to accept a new error.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "pyright_baseline.json"

Counts = dict[str, dict[str, int]]


def run_pyright() -> list[dict]:
  """Runs pyright on the library; returns its error diagnostics (JSON
  ``generalDiagnostics``)."""
  exe = pathlib.Path(sys.executable).with_name("pyright")
  cmd = [
    str(exe) if exe.exists() else "pyright",
    "--outputjson",
    "--pythonpath",
    sys.executable,
  ]
  proc = subprocess.run(
    cmd, cwd=ROOT, capture_output=True, text=True, check=False
  )
  try:
    report = json.loads(proc.stdout)
  except json.JSONDecodeError:
    sys.exit(
      "pyright did not print a JSON report (exit "
      f"{proc.returncode}):\n{proc.stderr}"
    )
  return [d for d in report["generalDiagnostics"] if d["severity"] == "error"]


def count(diagnostics: list[dict]) -> Counts:
  """Groups errors as {file relative to the repository: {rule: count}}."""
  out: Counts = collections.defaultdict(lambda: collections.defaultdict(int))
  for d in diagnostics:
    path = os.path.relpath(d["file"], ROOT)
    out[path][d.get("rule", "error")] += 1
  return {f: dict(sorted(r.items())) for f, r in sorted(out.items())}


def regressions(now: Counts, baseline: Counts) -> list[str]:
  """Lines naming each (file, rule) whose error count rose above the
  baseline's."""
  lines = []
  for path, rules in now.items():
    for rule, n in rules.items():
      allowed = baseline.get(path, {}).get(rule, 0)
      if n > allowed:
        lines.append(f"{path}: {n} {rule} error(s), {allowed} allowed")
  return lines


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--update", action="store_true", help=("record the (lower) counts")
  )
  parser.add_argument("--list", action="store_true", help="print every error")
  args = parser.parse_args()

  diagnostics = run_pyright()
  now = count(diagnostics)
  baseline: Counts = (
    json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
  )
  total = sum(sum(r.values()) for r in now.values())
  allowed = sum(sum(r.values()) for r in baseline.values())
  if args.list:
    for d in diagnostics:
      line = d["range"]["start"]["line"] + 1
      print(
        f"{os.path.relpath(d['file'], ROOT)}:{line}: "
        f"{d['message']} ({d.get('rule', '')})"
      )
  bad = regressions(now, baseline)
  if args.update:
    if bad and BASELINE.exists():
      print(
        "refusing to raise the baseline:\n  " + "\n  ".join(bad),
        file=sys.stderr,
      )
      return 1
    BASELINE.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    print(
      f"pyright: {total} errors recorded in {len(now)} files (was {allowed})"
    )
    return 0
  print(
    f"pyright: {total} errors in {len(now)} files; "
    f"the baseline allows {allowed}"
  )
  if bad:
    print("new type errors:\n  " + "\n  ".join(bad), file=sys.stderr)
    print("run with --list to see them", file=sys.stderr)
    return 1
  if total < allowed:
    print(
      "fewer errors than recorded: run .ci/typecheck.py --update to lower the "
      "baseline"
    )
  return 0


if __name__ == "__main__":
  sys.exit(main())
