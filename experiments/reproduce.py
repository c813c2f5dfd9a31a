r"""The main job: runs every paper's experiment and writes REPORT.md.

Usage::

  python -m experiments.reproduce --quick                 # every paper, smoke configs (minutes)
  python -m experiments.reproduce                         # every paper, CPU-scale defaults
  python -m experiments.reproduce --only=soda,panda --workdir=runs/reproduce

Each paper runs in its own process (``python -m experiments.<paper>.main``), so
one paper's failure or crash is reported and the others still run. Each writes
``<workdir>/<paper>/results.json``; this script gathers their tables, plots,
commands, hardware and wall times into ``<workdir>/REPORT.md``.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Sequence

from absl import app, flags, logging

_QUICK = flags.DEFINE_bool("quick", False, "Run the seconds-long smoke configs instead of the defaults.")
_ONLY = flags.DEFINE_list("only", [], "Comma-separated paper names to run (default: all found).")
_WORKDIR = flags.DEFINE_string("workdir", "runs/reproduce", "Where results and REPORT.md go.")
_TIMEOUT = flags.DEFINE_integer("timeout_per_paper", 3 * 3600, "Seconds before a paper's run is stopped.")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def discover(package_dir: pathlib.Path) -> list[str]:
  """Names of the experiment folders that have main.py and configs/default.py."""
  found = []
  for d in sorted(package_dir.iterdir()):
    if d.is_dir() and (d / "main.py").exists() and (d / "configs" / "default.py").exists():
      found.append(d.name)
  return found


def run_paper(
    name: str,
    *,
    package: str,
    package_dir: pathlib.Path,
    workdir: pathlib.Path,
    quick: bool,
    timeout_s: float,
    env: dict[str, str] | None = None,
) -> dict:
  """Runs one paper's binary in a subprocess and returns its record for the report."""
  config_name = "smoke" if quick else "default"
  config = package_dir / name / "configs" / f"{config_name}.py"
  paper_dir = workdir / name
  paper_dir.mkdir(parents=True, exist_ok=True)
  cmd = [sys.executable, "-m", f"{package}.{name}.main", f"--config={config}",
         f"--workdir={paper_dir}"]
  shown = (f"python -m {package}.{name}.main --config={package}/{name}/configs/{config_name}.py "
           f"--workdir={paper_dir}")
  log_path = paper_dir / "log.txt"
  record = {"name": name, "command": shown, "config": config_name, "log": str(log_path)}
  t0 = time.perf_counter()
  try:
    with log_path.open("w") as log:
      proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s,
                            env=env, cwd=package_dir.parent)
    record["returncode"] = proc.returncode
  except subprocess.TimeoutExpired:
    record["returncode"] = None
    record["error"] = f"stopped after the {timeout_s:.0f} s timeout"
  record["wall_time_s"] = time.perf_counter() - t0
  results_path = paper_dir / "results.json"
  if record["returncode"] == 0 and results_path.exists():
    record["status"] = "ok"
    record["results"] = json.loads(results_path.read_text())
  else:
    record["status"] = "failed"
    tail = log_path.read_text().splitlines()[-25:] if log_path.exists() else []
    if "error" not in record:
      record["error"] = (f"exit code {record['returncode']}" if record["returncode"] != 0
                         else "finished without writing results.json")
    record["log_tail"] = "\n".join(tail)
  return record


def _hardware() -> str:
  from jaxpapers.core import environment_info
  env = environment_info()
  return (f"{env['device_count']} x {env['device_kind']} ({env['backend']}), "
          f"{env['cpu_count']} CPU cores, {env['platform']}, Python {env['python']}, "
          f"jax {env['versions']['jax']}, flax {env['versions']['flax']}, "
          f"optax {env['versions']['optax']}")


def write_report(records: Sequence[dict], workdir: pathlib.Path, *, quick: bool,
                 wall_time_s: float) -> pathlib.Path:
  """Writes ``<workdir>/REPORT.md`` from the per-paper records."""
  now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  mode = "quick (smoke configs: a check that everything runs, not a reproduction)" if quick \
      else "default (CPU-scale reproductions)"
  lines = [
      "# jaxpapers reproduction report", "",
      f"- date: {now}",
      f"- mode: {mode}",
      f"- hardware: {_hardware()}",
      f"- total wall time: {wall_time_s:.1f} s", "",
  ]
  if not records:
    lines += ["No paper experiments are implemented yet (no `experiments/<paper>/configs/default.py` "
              "was found), so there is nothing to reproduce.", ""]
  else:
    lines += ["| paper | status | wall time (s) |", "|---|---|---|"]
    for r in records:
      lines.append(f"| [{r['name']}](#{r['name']}) | {r['status']} | {r['wall_time_s']:.1f} |")
    lines.append("")
  for r in records:
    lines += [f"## {r['name']}", "", f"Command: `{r['command']}`", ""]
    if r["status"] != "ok":
      lines += [f"**Failed**: {r['error']}. Last lines of `{r['name']}/log.txt`:", "", "```",
                r.get("log_tail", ""), "```", ""]
      continue
    res = r["results"]
    wall = res.get("wall_time_s")
    lines.append(f"Run wall time: {wall:.1f} s." if isinstance(wall, (int, float)) else "")
    lines.append("")
    if res.get("table_markdown"):
      lines += [res["table_markdown"].rstrip(), ""]
    else:
      lines += ["Metrics:", "", "```json", json.dumps(res.get("metrics", {}), indent=1)[:4000], "```", ""]
    if res.get("notes"):
      lines += [res["notes"].rstrip(), ""]
    for plot in res.get("plots", []):
      lines += [f"![{r['name']}: {plot}]({r['name']}/{plot})", ""]
  path = workdir / "REPORT.md"
  path.write_text("\n".join(lines))
  return path


def reproduce(
    *,
    quick: bool,
    only: Sequence[str] = (),
    workdir: str | os.PathLike[str] = "runs/reproduce",
    package: str = "experiments",
    package_dir: pathlib.Path | None = None,
    timeout_s: float = 3 * 3600,
    env: dict[str, str] | None = None,
) -> pathlib.Path:
  """Runs the selected papers and writes REPORT.md; returns its path."""
  from jaxpapers.core import progress

  package_dir = package_dir or ROOT / package
  workdir = pathlib.Path(workdir).resolve()
  workdir.mkdir(parents=True, exist_ok=True)
  names = discover(package_dir)
  unknown = sorted(set(only) - set(names))
  if unknown:
    raise ValueError(f"--only names unknown paper(s) {unknown}; available: {names}")
  if only:
    names = [n for n in names if n in only]
  if not names:
    logging.warning("No paper experiments found in %s.", package_dir)
  records = []
  t0 = time.perf_counter()
  bar = progress(names, desc="papers")
  for name in bar:
    bar.set_postfix_str(name)
    logging.info("Running %s (%s config)...", name, "smoke" if quick else "default")
    rec = run_paper(name, package=package, package_dir=package_dir, workdir=workdir,
                    quick=quick, timeout_s=timeout_s, env=env)
    if rec["status"] == "ok":
      logging.info("%s finished in %.1f s.", name, rec["wall_time_s"])
    else:
      logging.error("%s FAILED (%s); see %s. Continuing with the others.", name, rec["error"],
                    rec["log"])
    records.append(rec)
  report = write_report(records, workdir, quick=quick, wall_time_s=time.perf_counter() - t0)
  failed = [r["name"] for r in records if r["status"] != "ok"]
  logging.info("Wrote %s (%d ok, %d failed%s).", report, len(records) - len(failed), len(failed),
               f": {', '.join(failed)}" if failed else "")
  return report


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  report = reproduce(quick=_QUICK.value, only=_ONLY.value, workdir=_WORKDIR.value,
                     timeout_s=_TIMEOUT.value)
  print(f"Report: {report}")


if __name__ == "__main__":
  app.run(main)
