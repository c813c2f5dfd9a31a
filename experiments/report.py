r"""Regenerates every number-bearing block of the READMEs from the committed
results.

Usage::

  python -m experiments.report            # rewrite the generated blocks in place
  python -m experiments.report --check    # exit 1 (and name them) if any block is stale

A README marks what is generated; everything between the markers is replaced::

  <!-- generated: verdicts -->             one row per paper: headline claim, verdict, counts
  <!-- /generated -->
  <!-- generated: claims lanr -->          the claims table of a results file, with the
  <!-- /generated -->                      registration (rules registered at, run at)
  <!-- generated: table lanr -->           the run's own results table (``table_markdown``)
  <!-- generated: figures lanr -->         links to the run's committed plots
  <!-- generated: changes lanr -->         verdicts changed by re-judging, with the reason
  <!-- generated: performance -->          the benchmarks' table (benchmarks/results/*.json)

With ``--render`` it re-renders, from each committed ``results.json``, the
figures its config declares (``config.report``, :mod:`jaxpapers.core.reporting`;
the config is the one its recorded command names) into the results folder;
``--render --check`` renders them into a scratch folder instead and exits 1 if a
declared path is missing or a figure is not among the record's ``plots`` (a
record whose ``table_markdown`` was written by older code, or from values since
compacted to 9 digits, is named, not failed).

and inline numbers in prose are spans::

  <!--value lanr claims.control_cuts_calls.measured .2f-->1.42<!--/value-->

A source is ``<paper>`` (``experiments/<paper>/results/results.json``),
``<paper>/<sub>`` (``experiments/<paper>/results/<sub>/results.json``) or a path
ending in ``.json``. A value path is a dotted path
(:func:`jaxpapers.core.claims.lookup`) into the results record, where
``claims.<id>`` is the judged claim with that id; its format is a Python format
spec, or ``s`` for text. Nothing else in a README is touched, so no number in a
block can be edited by hand without ``--check`` failing in CI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from absl import app, flags

from jaxpapers.core import claims as claims_lib
from jaxpapers.core import registration, reporting
from jaxpapers.core import report as report_lib

FLAGS = flags.FLAGS

ROOT = pathlib.Path(__file__).resolve().parents[1]
BEGIN = re.compile(r"^<!-- generated: (?P<spec>[^>]*?) -->$", re.M)
END = "<!-- /generated -->"
VALUE = re.compile(
  r"<!--value (?P<spec>[^>]*?)-->(?P<text>.*?)<!--/value-->", re.S
)


class ReportError(ValueError):
  """A malformed marker or a source that does not exist."""


def readmes(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
  """The READMEs that may hold generated blocks: the top level, the benchmarks'
  and every experiment's."""
  return [
    root / "README.md",
    root / "benchmarks" / "README.md",
    *sorted((root / "experiments").glob("*/README.md")),
  ]


def source_path(source: str, root: pathlib.Path = ROOT) -> pathlib.Path:
  """The results file named by a block's source (see the module docstring)."""
  if source.endswith(".json"):
    path = root / source
  else:
    paper, _, sub = source.partition("/")
    path = root / "experiments" / paper / "results" / sub / "results.json"
  if not path.exists():
    raise ReportError(
      f"source {source!r}: {path.relative_to(root)} does not exist"
    )
  return path


def _load(source: str, root: pathlib.Path) -> dict[str, Any]:
  return json.loads(source_path(source, root).read_text())


def _view(rec: Mapping[str, Any]) -> dict[str, Any]:
  view = dict(rec)
  view["claims"] = {
    c["claim_id"]: c for c in rec.get("claims", []) if "claim_id" in c
  }
  return view


def format_inline(value: Any, fmt: str) -> str:
  """An inline value: text as is, numbers with ``fmt``, None as ``–``."""
  if value is None:
    return "–"
  if fmt == "s" or isinstance(value, str):
    return str(value)
  if isinstance(value, int) and not isinstance(value, bool):
    return format(value, fmt)  # 'd' and ',' work on ints; '.2f' too
  return format(float(value), fmt)


# -------------------------------------------------------------------- renderers


def _headline(recs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
  """The paper's headline claim: the first tested claim that is not an
  oracle."""
  for r in recs:
    c = r.get("claim") or {}
    if c.get("metric") and not c.get("oracle"):
      return r
  return None


DECIDING_FILE = "DECIDING"


def deciding_results(root: pathlib.Path, paper: str) -> pathlib.Path:
  """The results file that decides ``paper``'s claims: ``results/results.json``,
  unless ``results/DECIDING`` names a sub-folder of ``results/`` (one line)
  whose run decides them, e.g. a registered re-run with more seeds beside the
  first run."""
  results = root / "experiments" / paper / "results"
  pointer = results / DECIDING_FILE
  if not pointer.exists():
    return results / "results.json"
  sub = pointer.read_text().strip()
  path = (results / sub / "results.json").resolve()
  if not sub or results.resolve() not in path.parents or not path.exists():
    raise ValueError(
      f"{pointer} must name a sub-folder of results/ with a results.json; "
      f"got {sub!r}"
    )
  return results / sub / "results.json"


def render_verdicts(root: pathlib.Path) -> str:
  """One row per paper: headline claim, paper's number, measured, verdict,
  counts, rules; each read from the paper's deciding results file
  (:func:`deciding_results`)."""
  rows = []
  papers = sorted(
    d.name for d in (root / "experiments").iterdir() if (d / "main.py").exists()
  )
  for paper in papers:
    path = deciding_results(root, paper)
    if not path.exists():
      rows.append(
        [f"[{paper}](experiments/{paper}/README.md)", "no committed run"]
        + ["–"] * 5
      )
      continue
    rec = json.loads(path.read_text())
    recs = [r for r in rec.get("claims", []) if "error" not in r]
    head = _headline(recs)
    counts = {
      v: sum(r.get("verdict") == v for r in recs) for v in claims_lib.VERDICTS
    }
    count_text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    desc = registration.describe(rec)
    if head is None:
      cells = ["no tested claim", "–", "–", "–"]
    else:
      claim = head["claim"]
      value = claim.get("paper_value")
      fmt, unit = claim.get("fmt", ".3g"), claim.get("unit", "")
      cells = [
        f"{shorten(claim.get('statement', ''))} (`{claim.get('id', '')}`)",
        report_lib.measured_cell(head),
        "–" if value is None else claims_lib.format_value(value, fmt, unit),
        report_lib.verdict_text(head),
      ]
    rows.append(
      [
        f"[{paper}](experiments/{paper}/README.md)",
        *cells,
        count_text,
        desc["status"],
      ]
    )
  return report_lib.markdown_table(
    [
      "paper",
      "headline claim",
      "measured",
      "paper",
      "verdict",
      "all claims",
      "rules",
    ],
    rows,
  )


def shorten(text: str, width: int = 90) -> str:
  """``text`` cut at a word boundary to at most ``width`` characters (with an
  ellipsis)."""
  text = " ".join(text.split())
  if len(text) <= width:
    return text
  return text[: width - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def render_claims(root: pathlib.Path, source: str) -> str:
  rec = _load(source, root)
  desc = registration.describe(rec)
  reg = rec.get("registration") or {}
  table = report_lib.claims_table(rec.get("claims", []), registration=desc)
  lines = [table, ""]
  lines.append(
    f"Rules: **{desc['status']}** "
    f"({reg.get('why', 'no registration recorded')}). Command: "
    f"`{rec.get('command') or 'not recorded'}`."
  )
  return "\n".join(lines)


def render_table(root: pathlib.Path, source: str) -> str:
  rec = _load(source, root)
  return (
    rec.get("table_markdown") or "(this run wrote no results table)"
  ).rstrip()


def render_figures(
  root: pathlib.Path, source: str, readme: pathlib.Path
) -> str:
  path = source_path(source, root)
  links = []
  for plot in json.loads(path.read_text()).get("plots") or []:
    png = path.parent / plot
    if png.exists():
      rel = os.path.relpath(png, readme.parent)
      links.append(
        f"![{pathlib.Path(plot).stem}]({pathlib.Path(rel).as_posix()})"
      )
  return "\n\n".join(links) or "(no committed plots)"


def render_changes(root: pathlib.Path, source: str) -> str:
  rec = _load(source, root)
  changes = rec.get("verdict_changes") or []
  if not changes:
    return "No verdict changed when the claims were last re-judged."
  rows = [
    [c["claim"], c["from"] or "–", c["to"], c["at"][:10], c["reason"]]
    for c in changes
  ]
  return report_lib.markdown_table(
    ["claim", "was", "now", "re-judged", "why"], rows
  )


def render_performance(root: pathlib.Path) -> str:
  try:
    from benchmarks import run_all  # pylint: disable=import-outside-toplevel
  except ImportError:
    return "(no benchmark results table yet)"
  return run_all.performance_table(root / "benchmarks" / "results").rstrip()


def render_block(
  spec: str, readme: pathlib.Path, root: pathlib.Path = ROOT
) -> str:
  """The content of one generated block, from its marker's spec
  (``kind args...``)."""
  kind, *args = spec.split()
  renderers: dict[str, Callable[..., str]] = {
    "verdicts": lambda: render_verdicts(root),
    "claims": lambda s: render_claims(root, s),
    "table": lambda s: render_table(root, s),
    "figures": lambda s: render_figures(root, s, readme),
    "changes": lambda s: render_changes(root, s),
    "performance": lambda: render_performance(root),
  }
  if kind not in renderers:
    raise ReportError(
      f"{readme.name}: unknown generated block {kind!r}; known: "
      f"{list(renderers)}"
    )
  try:
    return renderers[kind](*args)
  except TypeError:
    raise ReportError(
      f"{readme.name}: block {spec!r} has the wrong number of arguments"
    ) from None


def render_value(spec: str, root: pathlib.Path = ROOT) -> str:
  parts = spec.split()
  if len(parts) != 3:
    raise ReportError(
      f"value span {spec!r}: expected '<source> <path> <format>'"
    )
  source, path, fmt = parts
  try:
    value = claims_lib.lookup(_view(_load(source, root)), path)
  except KeyError as e:
    raise ReportError(f"value span {spec!r}: {e.args[0]}") from None
  return format_inline(value, fmt)


@dataclasses.dataclass(frozen=True)
class Stale:
  """A generated block or span whose text differs from what the results give."""

  readme: pathlib.Path
  spec: str


def regenerate(
  text: str, readme: pathlib.Path, root: pathlib.Path = ROOT
) -> tuple[str, list]:
  """``text`` with every block and span regenerated, and the specs that
  changed."""
  out, stale, pos = [], [], 0
  for m in BEGIN.finditer(text):
    if m.start() < pos:
      continue
    end = text.find("\n" + END, m.end())
    if end < 0:
      raise ReportError(
        f"{readme}: block {m.group('spec')!r} has no {END} line"
      )
    old = text[m.end() + 1 : end + 1] if end >= m.end() else ""
    new = render_block(m.group("spec"), readme, root).rstrip("\n") + "\n"
    if old != new:
      stale.append(Stale(readme, m.group("spec")))
    out.append(text[pos : m.end()] + "\n" + new)
    pos = end + 1
  out.append(text[pos:])
  text = "".join(out)

  def value(m: re.Match) -> str:
    new = render_value(m.group("spec"), root)
    if new != m.group("text"):
      stale.append(Stale(readme, "value " + m.group("spec")))
    return f"<!--value {m.group('spec')}-->{new}<!--/value-->"

  return VALUE.sub(value, text), stale


def run(*, check: bool, root: pathlib.Path = ROOT) -> list[Stale]:
  """Regenerates (or with ``check``, compares) every README; returns the stale
  blocks."""
  stale = []
  for readme in readmes(root):
    if not readme.exists():
      continue
    text = readme.read_text()
    new, changed = regenerate(text, readme, root)
    stale += changed
    if changed and not check:
      readme.write_text(new)
  return stale


# ------------------------------------------------------------- declared reports


def config_module(
  record: Mapping[str, Any], results: pathlib.Path, root: pathlib.Path = ROOT
):
  """The module name of the config that produced ``record`` (its command's
  ``--config``); ``experiments.<paper>.configs.default`` when the command names
  none."""
  for arg in shlex.split(record.get("command") or ""):
    if arg.startswith("--config=") and arg.endswith(".py"):
      return arg[len("--config=") : -len(".py")].replace("/", ".")
  paper = results.relative_to(root / "experiments").parts[0]
  return f"experiments.{paper}.configs.default"


def declared_report(
  record: Mapping[str, Any], results: pathlib.Path, root: pathlib.Path = ROOT
):
  """The :class:`jaxpapers.core.reporting.Report` of the config of ``record``,
  or None."""
  import importlib  # pylint: disable=import-outside-toplevel

  module = importlib.import_module(config_module(record, results, root))
  spec = module.get_config().get("report")
  return spec if isinstance(spec, reporting.Report) else None


def render_committed(*, check: bool, root: pathlib.Path = ROOT) -> list[str]:
  """Re-renders the declared figures of every committed results file (see the
  module docstring).

  Args:
    check: render into a scratch folder (the committed PNGs stay as they are).
    root: the repository root.

  Returns:
    The problems found, one line each: a declared path missing from a record, or
    a figure the record does not list among its plots.
  """
  problems = []
  for path in sorted((root / "experiments").glob("*/results/**/results.json")):
    if "cells" in path.relative_to(root).parts:
      continue
    record = json.loads(path.read_text())
    spec = declared_report(record, path, root)
    if spec is None:
      continue
    rel = path.relative_to(root)
    with tempfile.TemporaryDirectory() as tmp:
      try:
        tables, pngs = reporting.render(
          spec, record, tmp if check else path.parent
        )
      except (KeyError, ValueError, TypeError) as e:
        problems.append(f"{rel}: {e}")
        continue
    extra = sorted({p.name for p in pngs} - set(record.get("plots") or []))
    if extra:
      problems.append(
        f"{rel}: figures {extra} are not among the record's plots"
      )
    same = tables.rstrip() == (record.get("table_markdown") or "").rstrip()
    note = (
      ""
      if same
      else "; its tables render differently from the recorded table_markdown"
    )
    print(
      f"{rel}: {len(pngs)} figure(s) "
      f"{'checked' if check else 're-rendered'}{note}"
    )
  return problems


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  check = FLAGS.check
  if FLAGS.render:
    problems = render_committed(check=check)
    for p in problems:
      print(p, file=sys.stderr)
    sys.exit(1 if problems else 0)
  stale = run(check=check)
  for s in stale:
    print(
      f"{s.readme.relative_to(ROOT)}: {'stale' if check else 'regenerated'}: "
      f"{s.spec}"
    )
  if check and stale:
    print(
      f"{len(stale)} generated block(s) differ from the committed results; "
      "run python -m experiments.report",
      file=sys.stderr,
    )
    sys.exit(1)
  if not stale:
    print("every generated block is up to date")


if __name__ == "__main__":
  flags.DEFINE_bool(
    "check", False, "Write nothing; exit 1 if any block is stale."
  )
  flags.DEFINE_bool(
    "render", False, "Re-render the declared figures from committed results."
  )
  app.run(main)
