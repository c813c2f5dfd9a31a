r"""The main job: runs every paper's experiment and writes REPORT.md.

Usage::

  python -m experiments.reproduce --quick                 # every paper, smoke configs (minutes)
  python -m experiments.reproduce                         # every paper, CPU-scale defaults
  python -m experiments.reproduce --only=soda,panda --workdir=runs/reproduce
  python -m experiments.reproduce --rejudge=panda,dual_rate   # re-judge committed results

Each paper runs in its own process (``python -m experiments.<paper>.main``), so
one paper's failure or crash is reported and the others still run. Each writes
``<workdir>/<paper>/results.json``; this script gathers their tables, plots,
commands, hardware and wall times into ``<workdir>/REPORT.md``, which starts
with one table of claim -> paper's number -> measured -> verdict for every
paper. The process exits non-zero when any paper fails to run, and says which.

With ``--quick`` the smoke runs only show that the code runs: they issue no
verdict, and the claims table shows the verdicts of the *committed* default runs
(``experiments/<paper>/results/results.json``), with the commit that measured
them, or "no committed run". Without ``--quick`` the verdicts come from the
fresh default runs.

``--rejudge`` applies the claims of the committed ``claims.lock.json`` (the
entry of the config that produced each file; and the experiment's
``train.rejudge_metrics(metrics, config)`` or one-argument
``train.derived_metrics``, if any) to every committed
``results/**/results.json`` with a claims block, and writes the claims block and
the registration status (*rejudged* unless the run was registered under the same
rules) back into the file; no measured number changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence

from absl import app, flags, logging

from jaxpapers import core
from jaxpapers.core import claims as claims_lib
from jaxpapers.core import registration, report
from jaxpapers.core import rejudge as rejudge_lib
from jaxpapers.core import results as results_lib

_QUICK = flags.DEFINE_bool(
  "quick", False, "Run the seconds-long smoke configs instead of the defaults."
)
_ONLY = flags.DEFINE_list(
  "only", [], "Comma-separated paper names to run (default: all found)."
)
_WORKDIR = flags.DEFINE_string(
  "workdir", "runs/reproduce", "Where results and REPORT.md go."
)
_TIMEOUT = flags.DEFINE_integer(
  "timeout_per_paper", 3 * 3600, "Seconds before a paper's run is stopped."
)
_REJUDGE = flags.DEFINE_list(
  "rejudge",
  [],
  (
    "Re-judge these papers' committed results files (all: "
    "every paper) under their committed claims.lock.json, "
    "then exit (runs nothing)."
  ),
)
_PACKAGE = flags.DEFINE_string(
  "package", "experiments", "The package holding the paper folders."
)
_PACKAGE_DIR = flags.DEFINE_string(
  "package_dir", "", "Its folder (default: next to this file)."
)

ROOT = pathlib.Path(__file__).resolve().parents[1]


def discover(package_dir: pathlib.Path) -> list[str]:
  """Names of the experiment folders that have main.py and
  configs/default.py."""
  found = []
  for d in sorted(package_dir.iterdir()):
    if (
      d.is_dir()
      and (d / "main.py").exists()
      and (d / "configs" / "default.py").exists()
    ):
      found.append(d.name)
  return found


RUN_ID_ENV = "JAXPAPERS_RUN_ID"
"""Environment variable through which :func:`run_paper` gives each child run a fresh id."""


def _file_identity(path: pathlib.Path) -> tuple[int, int, int] | None:
  """(inode, size, mtime in ns) of ``path``, or None if it does not exist."""
  try:
    st = path.stat()
  except FileNotFoundError:
    return None
  return (st.st_ino, st.st_size, st.st_mtime_ns)


def _fresh_results(
  path: pathlib.Path, *, before: tuple[int, int, int] | None, run_id: str
) -> tuple[dict | None, str | None]:
  """Reads the results.json a child run wrote, refusing one it did not write.

  A results file counts as written by this invocation when it did not exist
  before the child started, or when it was replaced since (another inode, size
  or modification time), and, if it records a ``run_id``, that id is the one
  this invocation gave the child.

  Args:
    path: ``<workdir>/<paper>/results.json``.
    before: :func:`_file_identity` of ``path`` taken just before the child
      started.
    run_id: the id passed to the child in ``$JAXPAPERS_RUN_ID``.

  Returns:
    ``(results, None)`` for a fresh, readable file, else ``(None, reason)``.
  """
  after = _file_identity(path)
  if after is None:
    return None, "finished without writing results.json"
  if before is not None and after == before:
    return None, (
      f"stale results.json: exit code 0, but {path} is the file that was "
      "there before the run started; this run did not write it"
    )
  try:
    results = json.loads(path.read_text())
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    return None, f"unreadable results.json ({path}: {e})"
  if not isinstance(results, dict):
    return None, (
      f"unreadable results.json ({path} holds a {type(results).__name__}, "
      "not an object)"
    )
  recorded = results.get("run_id")
  if recorded is not None and recorded != run_id:
    return None, (
      f"stale results.json: {path} records run_id {recorded!r}, "
      f"not this run's {run_id!r}"
    )
  return results, None


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
  """Runs one paper's binary in a subprocess and returns its record for the
  report.

  The paper is ``ok`` only when the binary exits 0 *and*
  ``<workdir>/<name>/results.json`` was written by this run: the child gets a
  fresh id in ``$JAXPAPERS_RUN_ID``, and a file that is unchanged since before
  the start, or that records another ``run_id``, is reported as ``failed`` with
  the error "stale results.json".
  """
  config_name = "smoke" if quick else "default"
  config = package_dir / name / "configs" / f"{config_name}.py"
  paper_dir = workdir / name
  paper_dir.mkdir(parents=True, exist_ok=True)
  cmd = [
    sys.executable,
    "-m",
    f"{package}.{name}.main",
    f"--config={config}",
    f"--workdir={paper_dir}",
  ]
  shown = (
    f"python -m {package}.{name}.main "
    f"--config={package}/{name}/configs/{config_name}.py --workdir={paper_dir}"
  )
  log_path = paper_dir / "log.txt"
  results_path = paper_dir / "results.json"
  run_id = uuid.uuid4().hex
  child_env = dict(os.environ if env is None else env, **{RUN_ID_ENV: run_id})
  record = {
    "name": name,
    "command": shown,
    "config": config_name,
    "log": str(log_path),
    "run_id": run_id,
  }
  before = _file_identity(results_path)
  t0 = time.perf_counter()
  try:
    with log_path.open("w") as log:
      proc = subprocess.run(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        timeout=timeout_s,
        env=child_env,
        cwd=package_dir.parent,
      )
    record["returncode"] = proc.returncode
  except subprocess.TimeoutExpired:
    record["returncode"] = None
    record["error"] = f"stopped after the {timeout_s:.0f} s timeout"
  record["wall_time_s"] = time.perf_counter() - t0
  if record["returncode"] == 0:
    results, reason = _fresh_results(results_path, before=before, run_id=run_id)
    if results is not None:
      record["status"] = "ok"
      record["results"] = results
      return record
    record["error"] = reason
  elif "error" not in record:
    record["error"] = f"exit code {record['returncode']}"
  record["status"] = "failed"
  tail = log_path.read_text().splitlines()[-25:] if log_path.exists() else []
  record["log_tail"] = "\n".join(tail)
  return record


def _import(package: str, package_dir: pathlib.Path, module: str):
  """Imports ``<package>.<module>`` with ``package_dir``'s parent on sys.path;
  None if absent."""
  import importlib  # pylint: disable=import-outside-toplevel

  parent = str(package_dir.resolve().parent)
  if parent not in sys.path:
    sys.path.insert(0, parent)
  loaded = sys.modules.get(package)
  here = pathlib.Path(getattr(loaded, "__file__", None) or "").resolve().parent
  if loaded is not None and here != package_dir.resolve():
    for key in [
      k for k in sys.modules if k == package or k.startswith(package + ".")
    ]:
      # a package of the same name from another folder (tests)
      del sys.modules[key]
    importlib.invalidate_caches()
  try:
    return importlib.import_module(f"{package}.{module}")
  except ModuleNotFoundError as e:
    if e.name and (
      f"{package}.{module}".startswith(e.name)
      or e.name.startswith(f"{package}.")
    ):
      return None
    raise


def declared_claims(
  name: str, *, package: str, package_dir: pathlib.Path
) -> list:
  """The claims declared in ``<paper>/configs/default.py``
  (``get_config().claims``), or []."""
  mod = _import(package, package_dir, f"{name}.configs.default")
  if mod is None or not hasattr(mod, "get_config"):
    return []
  return claims_lib.parse_claims(mod.get_config().get("claims"))


def committed_results_path(
  name: str, package_dir: pathlib.Path
) -> pathlib.Path:
  return package_dir / name / "results" / "results.json"


def results_files(name: str, package_dir: pathlib.Path) -> list[pathlib.Path]:
  """Every committed ``results.json`` under ``<paper>/results/`` (the main one
  first)."""
  out = []
  for path in sorted((package_dir / name / "results").rglob("results.json")):
    rec = json.loads(path.read_text())
    if isinstance(rec, dict) and "metrics" in rec:
      out.append(path)
  main = committed_results_path(name, package_dir)
  if main.exists() and main not in out:
    out.insert(0, main)
  return out


def rejudge_file(
  path: pathlib.Path,
  name: str,
  *,
  package: str = "experiments",
  package_dir: pathlib.Path,
) -> dict:
  """Re-judges one committed results file under the paper's committed claims
  lock.

  The claims come from the lock entry of the config that produced the file (its
  registration, else the ``--config=.../configs/<name>.py`` of its command); see
  :func:`jaxpapers.core.rejudge.rejudge_record`. Every measured number is kept.

  Returns:
    The new record (also written to ``path``).

  Raises:
    FileNotFoundError: if the paper has no committed claims lock.
  """
  rec = json.loads(path.read_text())
  lock_file = package_dir / name / registration.LOCK_FILE
  lock = registration.committed_lock(lock_file) if lock_file.exists() else None
  if lock is None:
    raise FileNotFoundError(
      f"rejudge: {name} has no committed {registration.LOCK_FILE}; "
      f"register the claims (python -m experiments.register {name}) and "
      "commit the lock first"
    )
  out = rejudge_lib.rejudge_record(
    rec,
    lock=lock,
    train=_import(package, package_dir, f"{name}.train"),
    by_main=f"-m {package}.{name}.main " in (rec.get("command") or "") + " ",
    command=f"python -m experiments.reproduce --rejudge={name}",
    path=path,
  )
  results_lib.write_json_atomic(path, out)
  return out


def rejudge(
  name: str,
  *,
  package: str = "experiments",
  package_dir: pathlib.Path | None = None,
) -> list[pathlib.Path]:
  """Re-judges every committed results file of a paper (see
  :func:`rejudge_file`).

  Returns:
    The paths rewritten.

  Raises:
    FileNotFoundError: if the paper has no committed results or no committed
      lock.
  """
  package_dir = package_dir or ROOT / package
  paths = results_files(name, package_dir)
  if not paths:
    raise FileNotFoundError(
      f"rejudge: {name} has no committed results "
      f"({committed_results_path(name, package_dir)} does not exist)"
    )
  for path in paths:
    rejudge_file(path, name, package=package, package_dir=package_dir)
  return paths


def claims_rows(
  records: Sequence[dict],
  *,
  quick: bool,
  package: str,
  package_dir: pathlib.Path,
) -> list[list[str]]:
  """Rows paper | claim | paper's number | measured | verdict | measured in, for every paper."""
  rows = []
  for r in records:
    name = r["name"]
    if quick:
      path = committed_results_path(name, package_dir)
      res = json.loads(path.read_text()) if path.exists() else None
      where = (
        None
        if res is None
        else f"{rejudge_lib.measured_in(res)} (committed default run)"
      )
      missing = "no committed run"
    else:
      res = r.get("results") if r["status"] == "ok" else None
      where = (
        None if res is None else f"{rejudge_lib.measured_in(res)} (this run)"
      )
      missing = "run failed"
    recs = (res or {}).get("claims") or []
    if res is not None and "claims" not in res:
      missing = (
        "committed run not judged" if quick else "the run wrote no claims"
      )
    if not recs:
      try:
        declared = declared_claims(
          name, package=package, package_dir=package_dir
        )
      except Exception as e:  # pylint: disable=broad-except
        rows.append(
          [name, f"claims could not be read: {e}", "-", "–", "-", "-", "-", "-"]
        )
        continue
      if not declared:
        rows.append([name, "no claims declared", "-", "–", "-", "-", "-", "-"])
      for c in declared:
        cd = c.to_dict()
        rows.append(
          [
            name,
            f"{c.statement} (`{c.id}`)",
            report.paper_cell(cd),
            "–",
            missing,
            "-",
            "-",
            "-",
          ]
        )
      continue
    desc = registration.describe(res)
    for rec in recs:
      cd = rec.get("claim", {})
      rows.append(
        [
          name,
          f"{cd.get('statement', '')} (`{cd.get('id', '')}`)",
          report.paper_cell(cd),
          report.measured_cell(rec)
          + (" (upper bound)" if cd.get("oracle") else ""),
          report.verdict_text(rec),
          desc["status"],
          desc["registered_at"],
          where,
        ]
      )
  return rows


def _hardware() -> str:
  env = core.environment_info()
  return (
    f"{env['device_count']} x {env['device_kind']} ({env['backend']}), "
    f"{env['cpu_count']} CPU cores, {env['platform']}, Python {env['python']}, "
    f"jax {env['versions']['jax']}, flax {env['versions']['flax']}, "
    f"optax {env['versions']['optax']}"
  )


_CLAIMS_HEADER = (
  "paper",
  "claim",
  "paper's number",
  "measured",
  "verdict",
  "rules",
  "registered at",
  "measured in",
)


def write_report(
  records: Sequence[dict],
  workdir: pathlib.Path,
  *,
  quick: bool,
  wall_time_s: float,
  package: str = "experiments",
  package_dir: pathlib.Path | None = None,
) -> pathlib.Path:
  """Writes ``<workdir>/REPORT.md`` from the per-paper records; it opens with
  the claims table."""
  package_dir = package_dir or ROOT / package
  now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
  mode = (
    "quick (smoke configs: a check that everything runs, not a reproduction)"
    if quick
    else "default (CPU-scale reproductions)"
  )
  commit = rejudge_lib.commit_label(results_lib.git_info(package_dir))
  lines = [
    "# jaxpapers reproduction report",
    "",
    f"- date: {now}",
    f"- mode: {mode}",
    f"- code: commit {commit or 'unknown (not a git checkout)'}",
    f"- hardware: {_hardware()}",
    f"- total wall time: {wall_time_s:.1f} s",
    "",
  ]
  if records:
    lines += _claims_section(
      records, quick=quick, package=package, package_dir=package_dir
    )
    lines += [
      "## Runs",
      "",
      "| paper | status | wall time (s) |",
      "|---|---|---|",
    ]
    for r in records:
      lines.append(
        f"| [{r['name']}](#{r['name']}) | {r['status']} | "
        f"{r['wall_time_s']:.1f} |"
      )
    lines.append("")
  else:
    lines += [
      (
        "No paper experiments are implemented yet (no "
        "`experiments/<paper>/configs/default.py` was found), "
        "so there is nothing to reproduce."
      ),
      "",
    ]
  for r in records:
    lines += _paper_section(r, quick=quick)
  path = workdir / "REPORT.md"
  path.write_text("\n".join(lines))
  return path


def _claims_section(
  records: Sequence[dict],
  *,
  quick: bool,
  package: str,
  package_dir: pathlib.Path,
) -> list[str]:
  """The report's "Claims" lines: where the verdicts come from, the table, the
  failed papers."""
  if quick:
    where = [
      "The smoke runs below only show that the code runs; "
      "they issue no verdict. The measured values and verdicts here are "
      "those of the committed default runs "
      f"(`{package}/<paper>/results/results.json`), "
      "with the commit that measured them.",
    ]
  else:
    where = [
      "Measured values and verdicts from this run's default configs; "
      "each rule was declared in the paper's `configs/default.py` before the "
      "run.",
    ]
  rows = claims_rows(
    records, quick=quick, package=package, package_dir=package_dir
  )
  lines = [
    "## Claims",
    "",
    *where,
    "",
    core.markdown_table(list(_CLAIMS_HEADER), rows),
    "",
  ]
  failed = [r["name"] for r in records if r["status"] != "ok"]
  if failed:
    lines += [f"**Failed to run: {', '.join(failed)}.**", ""]
  return lines


def _paper_section(r: dict, *, quick: bool) -> list[str]:
  """One paper's report lines: its command, then its failure or its claims,
  table and plots."""
  lines = [f"## {r['name']}", "", f"Command: `{r['command']}`", ""]
  if r["status"] != "ok":
    return lines + [
      f"**Failed**: {r['error']}. Last lines of `{r['name']}/log.txt`:",
      "",
      "```",
      r.get("log_tail", ""),
      "```",
      "",
    ]
  res = r["results"]
  if res.get("claims") and not quick:  # a smoke run's own values are no verdict
    lines += [
      core.claims_table(res["claims"], registration=registration.describe(res)),
      "",
    ]
  wall = res.get("wall_time_s")
  lines.append(
    f"Run wall time: {wall:.1f} s." if isinstance(wall, (int, float)) else ""
  )
  lines.append("")
  if res.get("table_markdown"):
    lines += [res["table_markdown"].rstrip(), ""]
  else:
    metrics = json.dumps(res.get("metrics", {}), indent=1)[:4000]
    lines += ["Metrics:", "", "```json", metrics, "```", ""]
  if res.get("notes"):
    lines += [res["notes"].rstrip(), ""]
  for plot in res.get("plots", []):
    lines += [f"![{r['name']}: {plot}]({r['name']}/{plot})", ""]
  return lines


def reproduce(
  *,
  quick: bool,
  only: Sequence[str] = (),
  workdir: str | os.PathLike[str] = "runs/reproduce",
  package: str = "experiments",
  package_dir: pathlib.Path | None = None,
  timeout_s: float = 3 * 3600,
  env: dict[str, str] | None = None,
) -> Outcome:
  """Runs the selected papers and writes REPORT.md; returns its path and the
  failed papers."""
  package_dir = package_dir or ROOT / package
  workdir = pathlib.Path(workdir).resolve()
  workdir.mkdir(parents=True, exist_ok=True)
  names = discover(package_dir)
  unknown = sorted(set(only) - set(names))
  if unknown:
    raise ValueError(
      f"--only names unknown paper(s) {unknown}; available: {names}"
    )
  if only:
    names = [n for n in names if n in only]
  if not names:
    logging.warning("No paper experiments found in %s.", package_dir)
  records = []
  t0 = time.perf_counter()
  bar = core.progress(names, desc="papers")
  for name in bar:
    bar.set_postfix_str(name)
    logging.info(
      "Running %s (%s config)...", name, "smoke" if quick else "default"
    )
    rec = run_paper(
      name,
      package=package,
      package_dir=package_dir,
      workdir=workdir,
      quick=quick,
      timeout_s=timeout_s,
      env=env,
    )
    if rec["status"] == "ok":
      logging.info("%s finished in %.1f s.", name, rec["wall_time_s"])
    else:
      logging.error(
        "%s FAILED (%s); see %s. Continuing with the others.",
        name,
        rec["error"],
        rec["log"],
      )
    records.append(rec)
  report_path = write_report(
    records,
    workdir,
    quick=quick,
    wall_time_s=time.perf_counter() - t0,
    package=package,
    package_dir=package_dir,
  )
  failed = [r["name"] for r in records if r["status"] != "ok"]
  logging.info(
    "Wrote %s (%d ok, %d failed%s).",
    report_path,
    len(records) - len(failed),
    len(failed),
    f": {', '.join(failed)}" if failed else "",
  )
  return Outcome(report_path, tuple(failed))


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What :func:`reproduce` did: the report's path and the papers that failed to
  run."""

  report: pathlib.Path
  failed: tuple[str, ...]


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  package_dir = pathlib.Path(_PACKAGE_DIR.value) if _PACKAGE_DIR.value else None
  if _REJUDGE.value:
    names = _REJUDGE.value
    if names == ["all"]:
      names = discover(package_dir or ROOT / _PACKAGE.value)
    for name in names:
      for path in rejudge(
        name, package=_PACKAGE.value, package_dir=package_dir
      ):
        print(f"Re-judged {name}: {path}")
    return
  out = reproduce(
    quick=_QUICK.value,
    only=_ONLY.value,
    workdir=_WORKDIR.value,
    timeout_s=_TIMEOUT.value,
    package=_PACKAGE.value,
    package_dir=package_dir,
  )
  text = out.report.read_text()
  if "## Claims" in text:
    print(text[text.index("## Claims") : text.index("## Runs")].rstrip())
  print(f"Report: {out.report}")
  if out.failed:
    print(f"FAILED to run: {', '.join(out.failed)}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)
