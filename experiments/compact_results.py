r"""Rewrites committed results folders small and with readable names;
idempotent.

Usage::

  python -m experiments.compact_results                    # every experiments/*/results
  python -m experiments.compact_results experiments/dual_rate/results
  python -m experiments.compact_results --check            # exit 1 if a file would change
  python -m experiments.compact_results --rename_only DIR  # only move cells to their names

What it does under each folder (a second run changes nothing):

1. **Cell names.** Every cell file (a :class:`jaxpapers.core.CellStore` record)
   moves to ``CellStore.filename(name)`` (``train_seed=0~main.json`` instead of
   the percent-encoded ``train_seed%3D0%2Fmain.json``): renamed as it is, or
   rewritten through the store (digest and all) when its value changes.
2. **Digits.** Measured floats keep 9 significant digits where code may read
   them back: a float32 value is kept exactly (9 digits name it), a float64 one
   to 5e-9 relative. That is a cell's value, the ``extra`` of a ``results.json``
   and all but the ``config`` of any other JSON file. Each top-level entry of a
   results record's ``metrics`` keeps the fewest of 6 (``METRIC_DIGITS``: 5e-6
   relative), 9 or all its digits with which the record's declared tables render
   the same and, in an experiment whose derived values re-judging recomputes
   from its metrics, the re-derived block is the same (``reproduce --rejudge``
   then derives the same numbers); a record whose experiment re-derives but
   cannot from it keeps all. Kept exactly, as a rule may compare to them:
   settings (``config``), claims, ``metrics.derived`` and every metric path that
   a claim of the file or of the experiment's ``claims.lock.json`` names (its
   ``metric``, ``minus``, ``noise``, controls, ...). Integral floats, NaN and
   infinities are kept exactly.
3. **Layout.** Other JSON files take
   :func:`jaxpapers.core.results.format_json`'s layout (the one
   ``write_results`` writes): numeric lists and short objects on one line.
4. **Values nothing reads.** ``UNREAD`` names, per experiment, the parts of a
   cell that no code reads (neither the report, the re-judging, nor a resumed
   run), ``UNREAD_METRICS`` the parts of a results record's metrics that neither
   the claims' derivation nor the report reads, ``UNREAD_EXTRA`` the same for
   its ``extra``: they are dropped (or, for sample images, kept at the precision
   a figure draws).
5. **Claims said twice.** A results record's ``config.claims`` repeats the claim
   specs that its judged ``claims`` entries carry (and the experiment's
   ``claims.lock.json`` holds, with the hash the ``registration`` block names);
   when every one of them is there, the copy in ``config`` is dropped.
   Re-judging reads the lock's or the judged entries' specs, never it.
6. **Figures.** A PNG becomes a palette PNG of the fewest colours (32 to 256)
   that move no pixel's channel by more than 24 of 255, if that is smaller
   (:func:`jaxpapers.core.results.palette_png`, which ``core.save_figure``
   applies too).

With ``--rename_only`` only step 1 runs (a folder whose values must stay byte
for byte).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from absl import app, flags

from jaxpapers.core import cache as cache_lib
from jaxpapers.core import claims as claims_lib
from jaxpapers.core import results as results_lib
from jaxpapers.core.sweep import CellStore

ROOT = pathlib.Path(__file__).resolve().parent

# what a resumed run or a re-derivation may read back: a float32 exactly
DIGITS = 9
METRIC_DIGITS = 6  # the metrics of a results record that nothing reads exactly

_CHECK = flags.DEFINE_bool(
  "check", False, "Change nothing; exit 1 if a file would change."
)
_RENAME_ONLY = flags.DEFINE_bool(
  "rename_only",
  False,
  "Only move cell files to their readable names (values untouched).",
)


def round_floats(value: Any, digits: int = DIGITS) -> Any:
  """``value`` with every non-integral finite float rounded to ``digits``
  significant digits.

  Args:
    value: JSON types (nested dicts and lists of numbers, strings, booleans,
      None).
    digits: significant digits kept; the relative change is at most
      ``0.5 * 10**(1 - digits)``.

  Returns:
    A new value of the same structure; ints, integral floats, NaN and infinities
    unchanged.
  """
  if isinstance(value, float):
    if not math.isfinite(value) or value.is_integer():
      return value
    return float(f"{value:.{digits}g}")
  if isinstance(value, dict):
    return {k: round_floats(v, digits) for k, v in value.items()}
  if isinstance(value, list):
    return [round_floats(v, digits) for v in value]
  return value


# the parts of a results.json that hold measurements
MEASURED = ("metrics", "extra")


def _claim_paths(value: Any) -> set[str]:
  """Every string in claims: among them, each metric path a rule reads
  (``metric``, ``minus``, ``noise``, a control's path, ...); the others name no
  metric and are passed over."""
  if isinstance(value, str):
    return {value}
  if isinstance(value, dict):
    return set().union(*map(_claim_paths, value.values())) if value else set()
  if isinstance(value, list):
    return set().union(*map(_claim_paths, value)) if value else set()
  return set()


def _keys_of(metrics: Any, path: str) -> list | None:
  """The keys :func:`jaxpapers.core.claims.lookup` walks for ``path``, or None
  if absent."""
  cur, rest, keys = metrics, path, []
  while rest:
    if isinstance(cur, dict):
      found = [k for k in cur if rest == k or rest.startswith(k + ".")]
      if not found:
        return None
      key = max(found, key=len)
    elif isinstance(cur, list):
      key = rest.split(".", 1)[0]
      if not key.lstrip("-").isdigit() or not -len(cur) <= int(key) < len(cur):
        return None
      key = int(key)
    else:
      return None
    cur = cur[key]
    keys.append(key)
    rest = rest[len(str(key)) + 1 :]
  return keys


def _round_metrics(metrics: Any, keep: set[str]) -> Any:
  """``metrics`` rounded, but for ``derived`` and the paths in ``keep`` (what
  rules read)."""
  if not isinstance(metrics, dict):
    return round_floats(metrics)
  out = {
    k: v if k == "derived" else round_floats(v) for k, v in metrics.items()
  }
  return _restore(metrics, out, keep)


def _restore(exact: dict, rounded: dict, keep: set[str]) -> dict:
  """``rounded`` (a rounded copy of the metrics ``exact``) with the paths in
  ``keep`` exact."""
  out = copy.deepcopy(rounded)
  for path in sorted(keep):
    keys = _keys_of(exact, path)
    if not keys or keys[0] == "derived":
      continue
    src, parent = exact, out
    for k in keys[:-1]:
      src, parent = src[k], parent[k]
    parent[keys[-1]] = src[keys[-1]]
  return out


def _rederiver(paper: str) -> Callable[[dict, dict], Any] | None:
  """``f(metrics, config) -> derived`` when re-judging recomputes the paper's
  ``metrics.derived`` from its metrics, else None."""
  from experiments import reproduce  # pylint: disable=import-outside-toplevel
  from jaxpapers.core import rejudge  # pylint: disable=import-outside-toplevel

  # pylint: disable-next=protected-access
  train = reproduce._import("experiments", ROOT, f"{paper}.train")
  if train is None or not rejudge.derives_from_metrics(train):
    return None
  return lambda metrics, config: rejudge.derive(train, metrics, config)[0]


def _rederived(paper: str) -> bool:
  """Whether re-judging recomputes the paper's ``metrics.derived`` from its
  metrics."""
  return _rederiver(paper) is not None


_FAILURES = (KeyError, ValueError, TypeError, IndexError, AttributeError)


def _round_where_unchanged(
  record: dict,
  checks: Sequence[Callable[[dict], Any]],
  keep: set[str] = frozenset(),
) -> dict:
  """``record['metrics']`` with each top-level entry rounded to
  ``METRIC_DIGITS`` (else to ``DIGITS``, else kept exact): the fewest digits
  with which every check gives the same output as with the record as it is.

  Args:
    record: a results record.
    checks: functions of a record whose outputs must not change: the
      re-derivation of ``metrics.derived`` (so re-judging derives the same
      numbers) and the rendering of the declared tables (so a re-rendered table
      shows the same numbers).
    keep: metric paths kept exactly besides (those a rule reads).

  Returns:
    The new metrics.
  """
  metrics = record["metrics"]
  if not isinstance(metrics, dict):
    return metrics
  want = [_canonical(check(copy.deepcopy(record))) for check in checks]
  out = dict(metrics)
  for key, value in metrics.items():
    if key == "derived":
      continue
    for digits in (METRIC_DIGITS, DIGITS):
      rounded = round_floats(value, digits)
      trial = {**record, "metrics": {**out, key: rounded}}
      try:
        same = all(
          _canonical(c(copy.deepcopy(trial))) == w for c, w in zip(checks, want)
        )
      except _FAILURES:
        same = False
      if same:
        out[key] = rounded
        break
  return _restore(metrics, out, set(keep) | _claim_paths(record.get("claims")))


def _checks(record: dict, path: pathlib.Path, paper: str | None) -> list | None:
  """The checks of :func:`_round_where_unchanged` for a results record; None
  when the experiment re-derives its claims' values but cannot from this record
  (it then keeps its derived block on re-judging, and its metrics stay exact, as
  they did)."""
  out = []
  derive = _rederiver(paper) if paper is not None else None
  if derive is not None:
    check = lambda r: derive(r["metrics"], r.get("config") or {})
    try:
      check(copy.deepcopy(record))
    except _FAILURES:
      return None
    out.append(check)
  from experiments import report  # pylint: disable=import-outside-toplevel
  from jaxpapers.core import reporting  # pylint: disable=import-outside-toplevel

  try:
    spec = report.declared_report(record, path, ROOT.parent)
    tables = lambda r: reporting.render(spec, r)[0]
    if spec is not None:
      tables(copy.deepcopy(record))
      out.append(tables)
  except (*_FAILURES, ImportError):
    pass  # no declared report, or one that does not render from this record
  return out


def _canonical(value: Any) -> str:
  """``value`` as sorted JSON text (NaN spelled out): equal exactly when the
  values are."""
  return json.dumps(value, sort_keys=True, default=str)


def _round_measured(record: Any, keep: set[str] = frozenset()) -> Any:
  """A JSON file's value with its measured floats rounded (see the module
  docstring).

  Args:
    record: the file's value.
    keep: metric paths kept exactly (besides ``metrics.derived`` and those the
      file's own claims name): the ones a registered rule reads.
  """
  if not isinstance(record, dict):
    return round_floats(record)
  if "metrics" in record:
    keep = set(keep) | _claim_paths(record.get("claims"))
    out = {
      k: round_floats(v) if k in MEASURED else v for k, v in record.items()
    }
    out["metrics"] = _round_metrics(record["metrics"], keep)
    return out
  return {k: v if k == "config" else round_floats(v) for k, v in record.items()}


# ------------------------------------------------------ values nothing reads --


def drop_repeated_claims(record: dict) -> dict:
  """``record`` without ``config.claims`` when each of those specs is also a
  judged entry's.

  Args:
    record: a ``results.json`` value.

  Returns:
    The record with ``config.claims`` removed if every spec in it, parsed as a
    claim, equals the ``claim`` of one of the record's ``claims`` entries
    (compared as canonical JSON); else ``record`` itself.
  """
  config = record.get("config")
  if not isinstance(config, dict) or "claims" not in config:
    return record
  specs = config["claims"]
  judged = {
    _canonical(c["claim"])
    for c in record.get("claims") or []
    if isinstance(c, dict) and isinstance(c.get("claim"), dict)
  }
  try:
    parsed = claims_lib.parse_claims(specs)
  except (TypeError, ValueError):  # specs this version cannot read: keep them
    return record
  if any(_canonical(c.to_dict()) not in judged for c in parsed):
    return record
  return {
    **record,
    "config": {k: v for k, v in config.items() if k != "claims"},
  }


def _dual_rate_cell(name: str, value: Any, results: dict | None) -> Any:
  """A dual_rate cell keeps only the sample grids its samples figure shows.

  ``train.write_results`` draws the grids of
  ``evaluate.sample_grid_keys(config)`` from the first training seed's record;
  the other grids (every row of every seed) are read by nothing.
  """
  from ml_collections import ConfigDict  # pylint: disable=import-outside-toplevel

  from experiments.dual_rate import evaluate  # pylint: disable=import-outside-toplevel

  if not isinstance(value, dict) or not value.get("grids") or not results:
    return value
  config = ConfigDict(results.get("config") or {})
  seeds = tuple(config.get("train_seeds", ()))
  seed = name.split("/")[0].removeprefix("train_seed=")
  if not seeds or not seed.isdigit():
    return value
  shown = {"|".join(map(str, k)) for k in evaluate.sample_grid_keys(config)}
  first = int(seed) == seeds[0]
  grids = {
    k: _pixels(g) for k, g in value["grids"].items() if first and k in shown
  }
  return {**value, "grids": grids}


def _pixels(grid: Any) -> Any:
  """Image values in [-1, 1] to ``GRID_DECIMALS`` decimals: the figure draws
  them at 8 bits (steps of 2/255), so a value moves by at most a sixteenth of a
  step."""
  if isinstance(grid, float):
    return round(grid, GRID_DECIMALS) if math.isfinite(grid) else grid
  if isinstance(grid, list):
    return [_pixels(v) for v in grid]
  return grid


GRID_DECIMALS = 3


def _soda_cell(name: str, value: Any, results: dict | None) -> Any:
  """A SODA cell without its runs' ``train_curve``: the training-loss curve
  (chunk means) is stored by the run but read by nothing (the rows, claims and
  figures read ``curve``, the evaluation curve)."""
  del name, results
  if not isinstance(value, list):
    return value
  return [
    {k: v for k, v in r.items() if k != "train_curve"}
    if isinstance(r, dict)
    else r
    for r in value
  ]


# Experiment -> f(cell name, cell value, the results.json beside the cells
# folder or None).
UNREAD: dict[str, Callable[[str, Any, dict | None], Any]] = {
  "dual_rate": _dual_rate_cell,
  "soda": _soda_cell,
}


# The fields of an evidence_coverage per-seed cell that something reads: its
# setting and seed (both), what ``train.derived_metrics`` (the claims' values)
# reads, and what ``train.report_view`` (the tables and figures) reads. The rest
# (purity, c_eff, ambiguity, delta, the readers' MSE curves, the step size and
# tolerance) keeps its seed mean and std in ``metrics.cells``.
_EC_SEED_KEYS = (
  "n_pool",
  "n_clusters",
  "s_x",
  "s_w",
  "seed",
  "recall",
  "k_star",
  "k_star_average",
)
_EC_READER_KEYS = ("k_peak", "regime")
_EC_CONTEXTS = (
  "retrieved",
  "oracle",
  "shuffled_labels",
  "other_query",
  "random",
)


def _evidence_coverage_metrics(metrics: dict) -> dict:
  """``metrics.per_seed`` cut to the fields the claims and the report read (see
  above)."""
  per_seed = metrics.get("per_seed")
  if not isinstance(per_seed, list):
    return metrics

  def cut(cell: dict) -> dict:
    out = {k: cell[k] for k in _EC_SEED_KEYS if k in cell}
    if isinstance(cell.get("prior"), dict):
      out["prior"] = {"acc": cell["prior"]["acc"]}
    for r, rv in cell.items():
      if not (isinstance(rv, dict) and "controller" in rv):
        continue  # not a reader
      reader = {c: {"acc": rv[c]["acc"]} for c in _EC_CONTEXTS if c in rv}
      reader.update({k: rv[k] for k in _EC_READER_KEYS if k in rv})
      ctrl = rv["controller"]
      reader["controller"] = {
        k: ctrl[k] for k in ("acc", "best_fixed_k_acc") if k in ctrl
      }
      out[r] = reader
    return out

  return {
    **metrics,
    "per_seed": [cut(c) if isinstance(c, dict) else c for c in per_seed],
  }


# Experiment -> f(metrics of a results.json) without the values nothing reads.
UNREAD_METRICS: dict[str, Callable[[dict], dict]] = {
  "evidence_coverage": _evidence_coverage_metrics,
}


def _flashssm3d_extra(extra: dict) -> dict:
  """FlashSSM-3D's ``extra`` without each seed's ``derived/`` values in
  ``per_seed``: a run that adds seeds to this one (``seeds_from``) reads the
  measured metrics and derives again."""
  per_seed = extra.get("per_seed")
  if not isinstance(per_seed, dict):
    return extra
  kept = {
    seed: {k: v for k, v in m.items() if not k.startswith("derived/")}
    if isinstance(m, dict)
    else m
    for seed, m in per_seed.items()
  }
  return {**extra, "per_seed": kept}


# Experiment -> f(a results record's ``extra``): the same, without what nothing
# reads.
UNREAD_EXTRA: dict[str, Callable[[dict], dict]] = {
  "flashssm3d": _flashssm3d_extra,
}


# --------------------------------------------------------------- the rewrite --


@dataclasses.dataclass(frozen=True)
class Change:
  """One file rewritten (or that would be, under ``check``)."""

  path: pathlib.Path
  what: str
  bytes_before: int
  bytes_after: int


def _is_cell_record(rec: Any) -> bool:
  return (
    isinstance(rec, dict)
    and isinstance(rec.get("name"), str)
    and "value" in rec
    and set(rec) <= {"name", "value", cache_lib.DIGEST_KEY}
  )


def _paper_of(path: pathlib.Path) -> str | None:
  """``<paper>`` of a path under ``.../<paper>/results/...`` (the last such
  ``results``)."""
  parts = path.resolve().parts
  i = len(parts) - 1 - parts[::-1].index("results") if "results" in parts else 0
  return parts[i - 1] if i > 0 else None


def _compact_cells(
  folder: pathlib.Path, *, rename_only: bool, check: bool, results: dict | None
) -> list[Change]:
  store = CellStore(folder)
  prune = UNREAD.get(_paper_of(folder) or "")
  files: dict[str, list[pathlib.Path]] = {}  # cell name -> the files holding it
  for f in sorted(folder.glob(f"*{CellStore.SUFFIX}")):
    rec = _read(f)
    if _is_cell_record(rec):
      files.setdefault(rec["name"], []).append(f)
  changes = []
  for name, value in store.items():
    new = value
    if not rename_only:
      new = round_floats(prune(name, value, results) if prune else value)
    target = folder / CellStore.filename(name)
    holders = files.get(name, [])
    if holders == [target] and new == value:
      continue
    before = sum(f.stat().st_size for f in holders)
    if check:
      pass
    elif new == value and len(holders) == 1 and not target.exists():
      holders[0].rename(target)  # the same bytes under the readable name
    else:
      store.put(name, new)
    after = before if check else target.stat().st_size
    what = "renamed" if holders != [target] else "compacted"
    if holders != [target] and new != value:
      what = "renamed, compacted"
    changes.append(Change(target, what, before, after))
  return changes


def _read(path: pathlib.Path) -> Any:
  try:
    return json.loads(path.read_text())
  # absent, unreadable or not JSON
  except (OSError, ValueError, UnicodeDecodeError):
    return None


def compact_folder(
  folder: str | pathlib.Path, *, rename_only: bool = False, check: bool = False
) -> list[Change]:
  """Rewrites one results folder (see the module docstring); returns what
  changed.

  Args:
    folder: an ``experiments/<paper>/results`` folder (or any folder below one).
    rename_only: only move cell files to ``CellStore.filename(name)``.
    check: change nothing; return what would change (cell sizes are not
      estimated).

  Returns:
    One :class:`Change` per file rewritten, in path order.
  """
  folder = pathlib.Path(folder)
  changes = []
  cell_dirs = set()
  for path in sorted(folder.rglob("*.json")):
    if _is_cell_record(_read(path)):
      cell_dirs.add(path.parent)
  for d in sorted(cell_dirs):
    results = _read(d.parent / results_lib.RESULTS_FILE)
    changes += _compact_cells(
      d, rename_only=rename_only, check=check, results=results
    )
  if rename_only:
    return changes
  paper = _paper_of(folder)
  lock = ROOT / paper / "claims.lock.json" if paper else None
  keep = (
    _claim_paths(_read(lock)) if lock is not None and lock.exists() else set()
  )
  prune_metrics = UNREAD_METRICS.get(paper or "")
  prune_extra = UNREAD_EXTRA.get(paper or "")
  for path in sorted(folder.rglob("*.json")):
    if path.parent in cell_dirs and _is_cell_record(_read(path)):
      continue
    text = path.read_text()
    value = _read(path)
    if value is None:
      continue
    is_results = path.name == results_lib.RESULTS_FILE and isinstance(
      value, dict
    )
    if is_results:
      value = drop_repeated_claims(value)
      if prune_extra is not None and isinstance(value.get("extra"), dict):
        value = {**value, "extra": prune_extra(value["extra"])}
    if (
      is_results
      and prune_metrics is not None
      and isinstance(value.get("metrics"), dict)
    ):
      value = {**value, "metrics": prune_metrics(value["metrics"])}
    checks = (
      _checks(value, path.resolve(), paper)
      if is_results and "metrics" in value
      else None
    )
    if is_results and "metrics" in value:
      metrics = (
        value["metrics"]
        if checks is None
        else _round_where_unchanged(value, checks, keep)
      )
      new = results_lib.format_json(
        {**_round_measured(value), "metrics": metrics}
      )
    else:
      new = results_lib.format_json(_round_measured(value, keep))
    if new != text:
      changes.append(
        Change(path, "compacted", len(text.encode()), len(new.encode()))
      )
      if not check:
        cache_lib.atomic_write(path, new)
  for path in sorted(folder.rglob("*.png")):
    data = path.read_bytes()
    new = results_lib.palette_png(data)
    if new is not None:
      changes.append(Change(path, "palette", len(data), len(new)))
      if not check:
        cache_lib.atomic_write(path, new)
  return changes


def main(argv: Sequence[str]) -> None:
  folders = [pathlib.Path(a) for a in argv[1:]] or sorted(
    ROOT.glob("*/results")
  )
  for f in folders:
    if not f.is_dir():
      raise app.UsageError(f"not a folder: {f}")
  total = []
  for f in folders:
    changes = compact_folder(
      f, rename_only=_RENAME_ONLY.value, check=_CHECK.value
    )
    for c in changes:
      print(f"{c.what}: {c.path} ({c.bytes_before} -> {c.bytes_after} bytes)")
    total += changes
  verb = "would change" if _CHECK.value else "changed"
  before = sum(c.bytes_before for c in total)
  after = sum(c.bytes_after for c in total)
  print(f"{verb} {len(total)} files ({before} -> {after} bytes)")
  if _CHECK.value and total:
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)
