r"""Declared tables and figures, rendered from a results record.

An experiment does not build markdown or call matplotlib: its config declares a
:class:`Report` (tables and figures whose cells and series are *paths* into the
record that :func:`jaxpapers.core.write_results` writes), and the harness
renders it. ``write_results`` renders the config's ``report`` field: the figures
become ``<workdir>/<name>.png`` and the tables the record's ``table_markdown``.
``python -m experiments.report --render`` re-renders them from a committed
``results.json``, with no run (``--check``: render to a scratch folder and fail
on a missing path or a figure the record does not list).

Paths
  A path is dotted (:func:`jaxpapers.core.claims.lookup`): ``metrics.summary.lse.best_loss``,
  optionally reduced (``metrics.runs.acc|mean``, ``|std``, ``|min``, ``|max``, ``|sum``, ``|len``),
  ``config.widths``, ``claims.<id>.measured`` (the judged claim with that id), list items by
  index (``metrics.rows.0``); a key holding dots or slashes (``hr/cosine@1``) is matched whole.
  Inside an expanded row, series or panel a path is read relative to that entry first, then
  to the enclosing entries, then to the record; ``key`` is the entry's key (``key0``,
  ``key1``, ... for each ``*`` level), ``label`` its display name (``labels[key]``) and
  ``index`` its position (an entry's own field of that name comes first). A path
  found nowhere raises :class:`KeyError` naming the path. With ``view=`` a report also sees
  ``view.<...>``: the mapping a named pure function (``"experiments.soda.train:report_view"``)
  returns for the record, for shapes a path cannot select (the best run per horizon).

Templates
  Text fields (titles, labels, headers, template cells) hold ``{path}`` or ``{path:fmt}``
  (``{{`` for a brace): ``"{key}: K = {config.widths.0}"``, ``"{acc.mean:.3f} ± {acc.std:.3f}"``.
  None and NaN print ``-``; a list prints its items joined by ``/``.

Expansion
  ``over`` names a mapping or list whose entries become rows (:class:`Table`), series
  (:class:`Series`) or panels (:class:`Panel`); ``*`` segments expand intermediate levels
  (``metrics.tasks.*.rows``: every row of every task; ``metrics.summary.*``: every entry of
  every entry). ``keys`` picks and orders entries by
  key, ``where`` keeps those whose relative paths equal the given values. A :class:`Series`
  with ``points`` draws one point per entry instead (x = the entry's ``x`` path or its key).

Columns can be written compactly: ``columns("setting={key};
best=best.mean:.3f±best.std")`` (:func:`columns`).

Figure kinds (``Panel.kind``): ``line`` (lines/markers, ``err`` (or an interval
``lo`` / ``hi``) as error bars or with ``band`` as a shaded band), ``scatter``,
``bars`` (grouped bars over the x labels), ``hbars`` (horizontal bars: one bar
per y label), ``scaling`` (log-log with the fitted exponent ± its standard error
in the legend, :func:`jaxpapers.core.report.fit_power_law`); new kinds with
:func:`register_kind`.

Example::

  from jaxpapers.core import reporting as R

  REPORT = R.Report(
    tables=(
      R.Table(
        title="**digits** ({config.seeds} seeds)",
        over="metrics.summary",  # {setting: {best_loss: {mean, std}, eta: ...}}
        columns=(
          R.Column("setting", "{key}"),
          R.Column("best loss", "best_loss.mean", ".3f", err="best_loss.std"),
          R.Column("eta*", "{eta:.2g}"),
        ),
      ),
    ),
    figures=(
      R.Figure(
        "loss_vs_lr",
        R.Panel(
          over="metrics.summary",  # one panel per setting
          title="{key}",
          xlabel="learning rate",
          logx=True,
          series=(R.Series(y="loss", x="config.lrs", label="K={key}", over="by_width"),),
          hlines=(R.Line("metrics.baselines.uniform_loss", label="uniform"),),
        ),
      ),
    ),
  )

  def get_config():
    c = ml_collections.ConfigDict()
    ...
    c.report = REPORT  # write_results renders it; it is not copied into results.json

and by hand: ``reporting.render(REPORT, record, workdir)`` returns
``(markdown, [png paths])``; ``render_table(table, record)`` one table's
markdown; ``render_figure(fig, record, workdir)`` one PNG. Images a record does
not hold (generated samples) are drawn from the run's arrays by
:func:`save_image_grids`.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers.core import claims as claims_lib
from jaxpapers.core import report as report_lib

# ------------------------------------------------------------------------ specs


@dataclasses.dataclass(frozen=True)
class Column:
  """One table column.

  Args:
    header: the column title (a template, read against the record).
    value: a path of the cell's value (formatted with ``fmt``), or a template
      with ``{...}``.
    fmt: the format spec of a path's value (``'.3f'``, ``'.1%'``, ``'d'``).
    err: a path of a spread printed as ``value ± err`` (same format; a NaN
      spread is left out).
    missing: the text of a cell whose path is absent (None: an absent path is an
      error).
    over: one column per item of this list (read against the record, e.g.
      ``config.widths``): ``[i]`` in ``header``, ``value`` and ``err`` becomes
      the item's index, ``[v]`` its text (``Column("width [v]", "loss.[i]",
      over="config.widths")``).
  """

  header: str
  value: str
  fmt: str = ".3g"
  err: str | None = None
  missing: str | None = None
  over: str | None = None


def columns(spec: str, **kwargs: Any) -> tuple[Column, ...]:
  """Columns written compactly: ``'header=value:fmt±err; ...'``, one column per
  ``;`` item.

  The last ``=`` outside braces ends the header (a template too:
  ``K={config.k}``). ``value`` is a path (``:fmt`` its format, ``±err`` the path
  of its spread) or a template (holding ``{``; taken whole); a bare ``header``
  is also the path. Example::

    columns("setting={key}; K; best loss=best.mean:.3f±best.std; acc=acc:.1%")

  Args:
    spec: the items, separated by ``;``.
    **kwargs: further :class:`Column` fields for every column (``missing='-'``).

  Returns:
    The columns, in order.
  """
  out = []
  for item in spec.split(";"):
    depth, cut = 0, len(item)
    for i, ch in enumerate(item):  # the last '=' outside braces
      depth += (ch == "{") - (ch == "}")
      cut = i if ch == "=" and depth == 0 else cut
    header, value = item[:cut].strip(), item[cut + 1 :].strip()
    value, fmt, err = value or header, ".3g", None
    if "{" not in value:
      value, _, err = (p.strip() for p in value.partition("±"))
      value, _, fmt = (p.strip() for p in value.partition(":"))
    out.append(Column(header, value, fmt or ".3g", err=err or None, **kwargs))
  return tuple(out)


@dataclasses.dataclass(frozen=True)
class Table:
  """A markdown table: one row per entry of ``over`` (or per path of ``rows``).

  Args:
    columns: the columns; none (and no rows): the table is its ``title`` alone,
      a paragraph.
    over: a path (with optional ``*`` levels) whose entries are the rows.
    rows: instead of ``over``, explicit row paths (each row's key is its last
      segment); neither: the table is its ``extra_rows``.
    keys: keep only these entry keys, in this order.
    where: keep entries whose relative path equals the value
      (``{'family': 'adamw'}``).
    labels: display names by key, available to templates as ``{label}``.
    title: a template paragraph printed above the table (e.g. ``'**digits**'``).
    extra_rows: rows appended as given (templates read against the record), e.g.
      a reference.
    when: a path that must exist (and not be None/False) for the table to be
      rendered (``'!path'``: must not); the same for every ``when`` below.
    each: one copy of the table per entry of this path (e.g. per budget), read
      in that entry (``over``, templates) first.
  """

  columns: tuple[Column, ...]
  over: str | None = None
  rows: tuple[str, ...] = ()
  keys: tuple[Any, ...] | None = None
  where: Mapping[str, Any] | None = None
  labels: Mapping[str, str] | None = None
  title: str = ""
  extra_rows: tuple[tuple[str, ...], ...] = ()
  when: str | None = None
  each: str | None = None


@dataclasses.dataclass(frozen=True)
class Series:
  """One drawn series of a panel.

  Args:
    y: a path of the values (a list, or a scalar with ``points``), a number, or
      a tuple of paths/numbers (one value each).
    x: a path of the abscissae (default: 0..n-1, or the labels with ``points``);
      or a tuple of values (numbers, or text labels: the bars' groups).
    label: a legend template (``'{key}'``); '' draws no legend entry.
    err: a path (or tuple of paths) of the half-widths (error bars, or a band
      with ``band``).
    lo: instead of ``err``, a path (or tuple of paths) of an interval's lower
      ends (a 95 % interval around the mean, not symmetric): drawn from ``lo``
      to ``hi`` (``line`` kind).
    hi: the interval's upper ends (with ``lo``).
    band: draw ``err`` (or ``lo`` / ``hi``) as a shaded band; a 2-D ``y``
      [seeds, T] gets its seed-std band.
    style: a matplotlib format string (``'o-'``, ``'s--'``, ``':'``).
    color: a matplotlib colour; default: the next of the cycle.
    over: one series per entry of this path.
    points: one point per entry of this path (y, x and err read relative to the
      entry; x may be a template such as ``'{key}'``).
    keys: keep only these entries of ``over`` / ``points``, in this order.
    where: keep the entries whose relative path equals the value.
    labels: display names by key (``{label}``).
    when: a path that must exist (and not be None/False) for the series to be
      drawn; with ``over`` / ``points``, read in each entry (only the entries
      that hold an arm).
    annotate: True writes the label beside each point (``line`` kind) instead of
      in the legend; a template (with ``points``) writes it, read in each entry,
      beside that point.
    xerr: a path (or tuple of paths) of horizontal half-widths (``line`` kind).
    sort: with ``points``, order the points by this path, read in each entry (a
      line's order); a ``points`` series with no entry is not drawn.
  """

  y: str | float | tuple[Any, ...]
  x: str | tuple[Any, ...] | None = None
  label: str = ""
  err: str | tuple[Any, ...] | None = None
  lo: str | tuple[Any, ...] | None = None
  hi: str | tuple[Any, ...] | None = None
  band: bool = False
  style: str = "o-"
  color: str | None = None
  over: str | None = None
  points: str | None = None
  keys: tuple[Any, ...] | None = None
  where: Mapping[str, Any] | None = None
  labels: Mapping[str, str] | None = None
  when: str | None = None
  annotate: bool | str = False
  xerr: str | tuple[Any, ...] | None = None
  sort: str | None = None


@dataclasses.dataclass(frozen=True)
class Line:
  """A reference line across a panel: horizontal at ``y`` (``vertical``: at x =
  ``y``).

  Args:
    y: a path or a number.
    label: a legend template ('' for none).
    style: the line style (``':'``, ``'--'``, ``'-'``).
    color: the colour.
    vertical: draw at x = ``y`` instead.
    when: a path that must exist (and not be None/False) for the line to be
      drawn.
  """

  y: str | float
  label: str = ""
  style: str = ":"
  color: str = "gray"
  vertical: bool = False
  when: str | None = None


@dataclasses.dataclass(frozen=True)
class Panel:
  """One axes (or, with ``over``, one axes per entry).

  Args:
    series: the series.
    kind: ``'line'``, ``'scatter'``, ``'bars'``, ``'hbars'``, ``'scaling'`` or a
      registered kind (:func:`register_kind`).
    title: template.
    xlabel: template.
    ylabel: template.
    logx: log scale on x.
    logy: log scale on y.
    lines: reference lines.
    over: one panel per entry of this path (its entries are the series' first
      scope).
    keys: keep only these entries of ``over``, in this order.
    labels: display names by key (``{label}``).
    diagonal: draw y = x (with ``diagonal > 0``: and a band of that half-width
      around it).
    legend: draw the legend (when any series or line has a label).
    xticks: put the ticks at the x values of the first series (no minor ticks).
    ylim: (low, high) of the y axis, None for matplotlib's choice.
    when: a path that must exist (and not be None/False) for the panel to be
      drawn; with ``over``, read in each entry (an entry without it, such as a
      protocol that did not run, gets no panel).
  """

  series: tuple[Series, ...]
  kind: str = "line"
  title: str = ""
  xlabel: str = ""
  ylabel: str = ""
  logx: bool = False
  logy: bool = False
  lines: tuple[Line, ...] = ()
  over: str | None = None
  keys: tuple[Any, ...] | None = None
  labels: Mapping[str, str] | None = None
  diagonal: float | None = None
  legend: bool = True
  xticks: bool = False
  ylim: tuple[float, float] | None = None
  when: str | None = None


@dataclasses.dataclass(frozen=True)
class Figure:
  """One PNG, ``<workdir>/<name>.png``: its panels side by side (``ncols`` per
  row).

  Args:
    name: the file stem.
    panels: the panels (each may expand into several).
    size: inches of one panel.
    ncols: panels per row (default: all in one row).
    when: a path that must exist (and not be None/False) for the figure to be
      drawn; a figure whose panels all fail their own ``when`` is not drawn
      either.
    title: a template drawn above all panels (the figure's title), '' for none.
  """

  name: str
  panels: tuple[Panel, ...]
  size: tuple[float, float] = (5.0, 3.8)
  ncols: int | None = None
  when: str | None = None
  title: str = ""

  def __init__(
    self, name, *panels, size=(5.0, 3.8), ncols=None, when=None, title=("")
  ):
    if len(panels) == 1 and isinstance(panels[0], (tuple, list)):
      panels = tuple(panels[0])
    for i, p in enumerate(panels):
      if not isinstance(p, Panel):
        raise TypeError(
          f"Figure {name!r}: panels[{i}] must be a Panel, got {p!r}"[:200]
        )
    object.__setattr__(self, "name", name)
    object.__setattr__(self, "panels", tuple(panels))
    object.__setattr__(self, "size", tuple(size))
    object.__setattr__(self, "ncols", ncols)
    object.__setattr__(self, "when", when)
    object.__setattr__(self, "title", title)


@dataclasses.dataclass(frozen=True)
class Report:
  """Everything an experiment reports: tables (joined into ``table_markdown``)
  and figures.

  Args:
    tables: the tables, in order (blank lines between them).
    figures: the figures.
    view: ``"module:function"``: a pure function ``record -> mapping`` whose
      result is readable as ``view.<...>`` (for selections a path cannot
      express).
  """

  tables: tuple[Table, ...] = ()
  figures: tuple[Figure, ...] = ()
  view: str | None = None


# ------------------------------------------------------------------------ scope


class Scope:
  """Where paths resolve: a chain of entries (innermost first), then the record.

  Args:
    record: the results record (``claims`` as a list, as written, or by id).
    frames: ``(value, names)`` pairs, innermost first; ``names`` are ``key``,
      ``label``, ...
  """

  def __init__(
    self, record: Mapping[str, Any], frames: Sequence[tuple[Any, Mapping]] = ()
  ):
    self.record = record
    self.frames = tuple(frames)

  def child(self, value: Any, names: Mapping[str, Any]) -> Scope:
    """A scope with one more (innermost) entry."""
    return Scope(self.record, ((value, names), *self.frames))

  def get(self, path: str) -> Any:
    """The value at ``path`` (see the module docstring).

    Raises:
      KeyError: naming ``path`` when no entry and not the record holds it.
    """
    if not isinstance(path, str) or not path:
      raise KeyError(f"a path must be a non-empty string, got {path!r}")
    if "|" in path:
      path, *ops = (p.strip() for p in path.split("|"))
      return reduce_value(self.get(path), ops, path)
    for value, names in self.frames:
      if isinstance(value, (Mapping, list, tuple)):
        try:
          return claims_lib.lookup(value, path)
        except (KeyError, IndexError):
          pass
      if path in names:
        return names[path]
    try:
      return claims_lib.lookup(self.record, path)
    except (KeyError, IndexError) as e:
      where = " (nor in the entries being expanded)" if self.frames else ""
      raise KeyError(
        f"metric path {path!r} is not in the results record{where}: {e}"
      ) from None

  def has(self, path: str | None) -> bool:
    """Whether ``path`` resolves to something other than None/False (None path:
    True); ``'!path'``: whether it does not."""
    if path is None:
      return True
    if path.startswith("!"):
      return not self.has(path[1:])
    try:
      v = self.get(path)
    except KeyError:
      return False
    return v is not None and v is not False


_REDUCERS: dict[str, Callable[[np.ndarray], Any]] = {
  "mean": np.mean,
  "std": np.std,  # over seeds, ddof = 0 (as the experiments' mean ± std tables)
  "min": np.min,
  "max": np.max,
  "sum": np.sum,
  "len": len,
}


def reduce_value(value: Any, ops: Sequence[str], path: str = "") -> Any:
  """``value`` (a list of numbers) reduced by each of ``ops`` in turn
  (``'mean'``, ``'std'``, ``'min'``, ``'max'``, ``'sum'``, ``'len'``); a path
  ``'x|mean'`` reads this way.

  Returns:
    A float (an int for ``len``).
  """
  for op in ops:
    if op not in _REDUCERS:
      raise KeyError(
        f"metric path {path!r}: unknown reducer {op!r}; known: "
        f"{sorted(_REDUCERS)}"
      )
    if op == "len":
      value = len(value)
      continue
    arr = np.asarray(
      [np.nan if v is None else _number(v) for v in value], np.float64
    )
    value = float(_REDUCERS[op](arr))
  return value


def record_view(
  record: Mapping[str, Any], view: str | None = None
) -> dict[str, Any]:
  """``record`` with ``claims`` keyed by claim id and, with ``view``, a ``view``
  entry.

  Args:
    record: a results record.
    view: ``"module:function"`` of a pure ``record -> mapping`` function, or
      None.

  Returns:
    A shallow copy of ``record``.
  """
  out = dict(record)
  claims = record.get("claims")
  if isinstance(claims, list):
    out["claims"] = {
      c["claim_id"]: c
      for c in claims
      if isinstance(c, Mapping) and "claim_id" in c
    }
  if view:
    out["view"] = resolve_function(view)(record)
  return out


def resolve_function(name: str) -> Callable[..., Any]:
  """The function named ``"package.module:function"``."""
  module, sep, attr = name.partition(":")
  if not sep or not module or not attr:
    raise ValueError(f"view must be 'package.module:function', got {name!r}")
  return getattr(importlib.import_module(module), attr)


def _entries(value: Any, path: str) -> list[tuple[Any, Any]]:
  if isinstance(value, Mapping):
    return list(value.items())
  if isinstance(value, (list, tuple)):
    return list(enumerate(value))
  raise KeyError(
    f"over path {path!r} must name a mapping or a list, "
    f"got {type(value).__name__}"
  )


def expand(
  scope: Scope,
  over: str,
  *,
  keys: Sequence[Any] | None = None,
  where: Mapping[str, Any] | None = None,
  labels: Mapping[str, str] | None = None,
) -> Iterator[Scope]:
  """The child scopes of the entries of ``over`` (``*`` segments expand
  intermediate levels).

  Args:
    scope: where ``over`` is resolved.
    over: the path; each ``*`` adds a level: ``a.*.b``: every entry of ``b``
      under every entry of ``a``; ``a.*``: every entry of every entry of ``a``.
    keys: keep only entries whose key (its ``str``) is one of these, in this
      order.
    where: keep entries whose relative path equals the value.
    labels: display names by key (``label``); default the key.

  Yields:
    One scope per entry: its value innermost, with ``key`` (the last level's
    key; ``key0``, ``key1`` for each level), ``label`` and ``index`` (0, 1, ...
    among those kept).
  """
  parts = [p.strip(".") for p in over.split("*")]
  if not parts[0]:
    raise KeyError(f"over path {over!r} must not start with '*'")
  entries: list[tuple[tuple[Any, ...], Any]] = [((), None)]
  for part in parts:
    entries = [
      (ks + (k,), v)
      for ks, node in entries
      for k, v in _entries(
        scope.get(part) if node is None else _lookup(node, part, over), over
      )
    ]
  if keys is not None:
    by_key = {str(ks[-1]): (ks, v) for ks, v in entries}
    entries = [by_key[str(k)] for k in keys if str(k) in by_key]
  kept = 0
  for ks, v in entries:
    names = {f"key{j}": k for j, k in enumerate(ks)}
    names.update(
      key=ks[-1], label=(labels or {}).get(str(ks[-1]), ks[-1]), index=kept
    )
    child = scope.child(v, names)
    if where and any(_safe_get(child, p) != want for p, want in where.items()):
      continue
    kept += 1
    yield child


def _lookup(node: Any, path: str, over: str) -> Any:
  if not path:
    return node
  try:
    return claims_lib.lookup(node, path)
  except (KeyError, IndexError) as e:
    raise KeyError(f"over path {over!r}: {e}") from None


def _safe_get(scope: Scope, path: str) -> Any:
  try:
    return scope.get(path)
  except KeyError:
    return None


# -------------------------------------------------------------------- templates


def format_value(value: Any, fmt: str | None = None) -> str:
  """One value as text: None/NaN ``-``, text as is, lists joined by ``/``,
  numbers by ``fmt``.

  Args:
    value: a number, string, bool, None or a list of them.
    fmt: a format spec; None: :func:`jaxpapers.core.report.format_cell`'s
      default.

  Returns:
    The text.
  """
  if isinstance(value, (list, tuple)):
    return "/".join(format_value(v, fmt) for v in value)
  value = _number(value)
  if value is None or isinstance(value, str) or fmt is None:
    return (
      report_lib.format_cell(value)
      if fmt is None
      else ("-" if value is None else value)
    )
  if isinstance(value, (bool, np.bool_)):
    return str(bool(value))
  if isinstance(value, (numbers.Real, np.generic)):
    if (
      isinstance(value, (numbers.Integral, np.integer))
      and fmt[-1:] not in "eEfFgG%"
    ):
      return format(int(value), fmt)
    v = float(value)
    return "-" if math.isnan(v) else format(v, fmt)
  return str(value)


def fill(template: str, scope: Scope) -> str:
  """``template`` with each ``{path}`` / ``{path:fmt}`` replaced (``{{`` and
  ``}}``: braces).

  Raises:
    KeyError: naming a path that does not resolve.
    ValueError: on an unclosed brace.
  """
  out, i, n = [], 0, len(template)
  while i < n:
    c = template[i]
    if template.startswith("{{", i) or template.startswith("}}", i):
      out.append(c)
      i += 2
      continue
    if c != "{":
      out.append(c)
      i += 1
      continue
    j = template.find("}", i)
    if j < 0:
      raise ValueError(f"template {template!r}: unclosed '{{' at {i}")
    path, _, fmt = template[i + 1 : j].partition(":")
    out.append(format_value(scope.get(path.strip()), fmt or None))
    i = j + 1
  return "".join(out)


# ----------------------------------------------------------------------- tables


def _rows(table: Table, scope: Scope) -> Iterator[Scope]:
  if table.over is not None:
    yield from expand(
      scope, table.over, keys=table.keys, where=table.where, labels=table.labels
    )
    return
  for i, path in enumerate(table.rows):
    key = path.rsplit(".", 1)[-1]
    label = (table.labels or {}).get(key, key)
    yield scope.child(scope.get(path), {"key": key, "label": label, "index": i})


# as write_results writes them
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _number(value: Any) -> Any:
  """``value``, with the text a results record holds for NaN and infinities as
  floats."""
  return _NONFINITE.get(value, value) if isinstance(value, str) else value


def _cell(col: Column, scope: Scope) -> str:
  if col.missing is not None:
    try:
      return _cell(dataclasses.replace(col, missing=None), scope)
    except KeyError:
      return col.missing
  if "{" in col.value:
    return fill(col.value, scope)
  value = _number(scope.get(col.value))
  if col.err is None or value is None:
    return format_value(value, col.fmt)
  err = _number(scope.get(col.err))
  if isinstance(err, float) and not math.isfinite(err):
    err = None  # no spread measured (one seed): the value alone
  return str(report_lib.MeanStd(value, err, fmt=col.fmt))


def _expand_column(col: Column, scope: Scope) -> list[Column]:
  if col.over is None:
    return [col]
  items = scope.get(col.over)
  if not isinstance(items, (list, tuple)):
    raise KeyError(
      f"Column over path {col.over!r} must name a list, got {items!r}"[:200]
    )

  def sub(text, i, v):
    return (
      None
      if text is None
      else text.replace("[i]", str(i)).replace("[v]", format_value(v))
    )

  return [
    dataclasses.replace(
      col,
      header=sub(col.header, i, v),
      value=sub(col.value, i, v),
      err=sub(col.err, i, v),
      over=None,
    )
    for i, v in enumerate(items)
  ]


def render_table(
  table: Table, record: Mapping[str, Any], *, view: str | None = None
) -> str:
  """One table as markdown (its title, a blank line, the table); '' when
  ``when`` fails.

  Args:
    table: the spec.
    record: the results record.
    view: the report's ``view`` function name, if any.

  Returns:
    The markdown, without a trailing newline.

  Raises:
    KeyError: naming a metric path that is not in the record.
  """
  scope = Scope(record_view(record, view))
  return _render_table(table, scope)


def _render_table(table: Table, scope: Scope) -> str:
  if not scope.has(table.when):
    return ""
  if table.each is not None:
    one = dataclasses.replace(table, each=None)
    parts = [_render_table(one, entry) for entry in expand(scope, table.each)]
    return "\n\n".join(p for p in parts if p)
  if table.over is not None and table.rows:
    raise ValueError(
      "a Table takes over= (a path to expand) or rows= (paths), not both"
    )
  if (
    not table.columns
    and table.over is None
    and not table.rows
    and not table.extra_rows
  ):
    return fill(table.title, scope)
  columns = [e for c in table.columns for e in _expand_column(c, scope)]
  headers = [fill(c.header, scope) for c in columns]
  rows = [[_cell(c, row) for c in columns] for row in _rows(table, scope)]
  for extra in table.extra_rows:
    if len(extra) != len(headers):
      raise ValueError(
        f"extra row {extra!r} has {len(extra)} cells, expected {len(headers)}"
      )
    rows.append([fill(t, scope) for t in extra])
  text = report_lib.markdown_table(headers, rows)
  title = fill(table.title, scope) if table.title else ""
  return f"{title}\n\n{text}" if title else text


# ---------------------------------------------------------------------- figures

PlotKind = Callable[[Any, Panel, list[dict[str, Any]]], None]
_KINDS: dict[str, PlotKind] = {}


def register_kind(name: str) -> Callable[[PlotKind], PlotKind]:
  """Registers a plot kind: ``fn(ax, panel, series)`` draws the resolved
  ``series``.

  Each resolved series is a dict with ``x`` ([n] array, or labels for bars),
  ``y`` ([n] or [seeds, n]), ``err`` ([n] half-widths, [2, n] distances below
  and above ``y`` from a series' ``lo`` / ``hi``, or None), ``label``,
  ``color``, ``style``, ``band`` and ``notes`` (None, or one text per point).

  Args:
    name: the kind's name (``Panel.kind``).

  Returns:
    A decorator that registers and returns ``fn``.
  """

  def deco(fn: PlotKind) -> PlotKind:
    _KINDS[name] = fn
    return fn

  return deco


def _array(value: Any, path: Any) -> np.ndarray:
  try:
    if isinstance(value, (list, tuple)):
      return np.asarray(
        [np.nan if v is None else _number(v) for v in value], np.float64
      )
    return np.asarray(np.nan if value is None else _number(value), np.float64)
  except ValueError as e:
    raise ValueError(f"series path {path!r}: not numeric: {e}") from None


def _value(spec: Any, scope: Scope) -> Any:
  """A path's value, a template's text, a number as is, or a tuple of those as a
  list."""
  if isinstance(spec, tuple):
    return [_value(v, scope) for v in spec]
  if isinstance(spec, str) and "{" in spec:
    return fill(spec, scope)
  return scope.get(spec) if isinstance(spec, str) else spec


def _spread(
  s: Series, y: np.ndarray, read: Callable[[Any], Any]
) -> np.ndarray | None:
  """The series' error bars: ``err`` ([n] half-widths), or ``lo`` / ``hi`` as
  [2, n] distances below and above ``y`` (an interval the value lies in; a NaN
  end draws no bar)."""
  if (s.lo is None) != (s.hi is None):
    raise ValueError(
      f"Series {s.y!r}: lo and hi go together, got lo={s.lo!r}, hi={s.hi!r}"
    )
  if s.lo is None:
    return None if s.err is None else _array(read(s.err), s.err)
  if s.err is not None:
    raise ValueError(
      f"Series {s.y!r}: give err (half-widths) or lo and hi, not both"
    )
  lo, hi = _array(read(s.lo), s.lo), _array(read(s.hi), s.hi)
  if lo.shape != y.shape or hi.shape != y.shape:
    raise ValueError(
      f"Series {s.y!r}: lo {lo.shape} and hi {hi.shape} must have the shape "
      f"of y {y.shape}"
    )
  with np.errstate(invalid="ignore"):
    return np.stack([np.maximum(y - lo, 0.0), np.maximum(hi - y, 0.0)])


def _one_series(s: Series, scope: Scope, color: str) -> dict[str, Any]:
  y = _array(_value(s.y, scope), s.y)
  n = y.shape[-1] if y.ndim else 1
  x = (
    np.arange(n)
    if s.x is None
    else list(s.x)
    if isinstance(s.x, tuple)
    else scope.get(s.x)
  )
  return {
    "x": x
    if isinstance(x, np.ndarray)
    else list(x)
    if isinstance(x, (list, tuple))
    else [x],
    "y": y,
    "err": _spread(s, y, lambda spec: _value(spec, scope)),
    "label": fill(s.label, scope),
    "color": s.color or color,
    "style": s.style,
    "band": s.band,
    "annotate": bool(s.annotate),
    "xerr": None if s.xerr is None else _array(_value(s.xerr, scope), s.xerr),
  }


def _point_series(s: Series, scope: Scope, color: str) -> dict[str, Any] | None:
  assert s.points is not None
  entries = [
    e
    for e in expand(
      scope, s.points, keys=s.keys, where=s.where, labels=s.labels
    )
    if e.has(s.when)
  ]
  if not entries:
    return None
  if s.sort is not None:
    entries.sort(key=lambda e: _value(s.sort, e))
  notes = isinstance(s.annotate, str)
  y = _array([_value(s.y, e) for e in entries], s.y)
  return {
    "x": [e.get("label") if s.x is None else _value(s.x, e) for e in entries],
    "y": y,
    "err": _spread(s, y, lambda spec: [_value(spec, e) for e in entries]),
    "label": fill(s.label, scope),
    "color": s.color or color,
    "style": s.style,
    "band": s.band,
    "annotate": s.annotate is True,
    "notes": [fill(str(s.annotate), e) for e in entries] if notes else None,
    "xerr": None,
  }


def resolve_series(panel: Panel, scope: Scope) -> list[dict[str, Any]]:
  """The drawn series of one panel, each a dict (see :func:`register_kind`)."""
  out = []
  for s in panel.series:
    if s.over is None and s.points is None and not scope.has(s.when):
      continue
    if s.over is not None:
      for e in expand(
        scope, s.over, keys=s.keys, where=s.where, labels=s.labels
      ):
        if e.has(s.when):  # read in each entry (relative first)
          out.append(_one_series(s, e, f"C{len(out) % 10}"))
    elif s.points is not None:
      drawn = _point_series(s, scope, f"C{len(out) % 10}")
      out += [drawn] if drawn is not None else []
    else:
      out.append(_one_series(s, scope, f"C{len(out) % 10}"))
  return out


def _numeric_x(ax, x: Any) -> np.ndarray:
  """``x`` as floats; labels (text) become positions 0..n-1 with those tick
  labels."""
  try:
    return np.asarray(x, np.float64)
  except (TypeError, ValueError):
    pos = np.arange(len(x), dtype=np.float64)
    ax.set_xticks(pos, [str(v) for v in x])
    return pos


@register_kind("line")
def _draw_lines(ax, panel: Panel, series: list[dict[str, Any]]) -> None:
  del panel
  for s in series:
    x, y, label = _numeric_x(ax, s["x"]), s["y"], s["label"] or None
    if s.get("annotate") and label:
      for xi, yi in zip(np.atleast_1d(x), np.atleast_1d(y)):
        ax.annotate(label, (xi, yi), fontsize=7)
      label = None
    for xi, yi, note in zip(
      np.atleast_1d(x), np.atleast_1d(y), s.get("notes") or ()
    ):
      ax.annotate(
        note, (xi, yi), fontsize=7, xytext=(2, 2), textcoords=("offset points")
      )
    if y.ndim == 2:  # [seeds, T]: the mean, with the seed-std band
      mean = y.mean(0)
      ax.plot(x, mean, s["style"], color=s["color"], label=label, ms=3)
      if y.shape[0] > 1:
        sd = y.std(0)
        ax.fill_between(
          x, mean - sd, mean + sd, color=s["color"], alpha=0.2, lw=0
        )
    elif s["err"] is not None and s["band"]:
      # lo / hi: [2, n]
      below, above = (s["err"], s["err"]) if s["err"].ndim < 2 else s["err"]
      ax.plot(x, y, s["style"], color=s["color"], label=label, ms=3)
      ax.fill_between(
        x, y - below, y + above, color=s["color"], alpha=0.2, lw=0
      )
    elif s["err"] is not None or s.get("xerr") is not None:
      ax.errorbar(
        x,
        y,
        yerr=s["err"],
        xerr=s.get("xerr"),
        fmt=s["style"],
        color=s["color"],
        label=label,
        capsize=3,
        ms=4,
      )
    else:
      ax.plot(x, y, s["style"], color=s["color"], label=label, ms=3)


@register_kind("scatter")
def _draw_scatter(ax, panel: Panel, series: list[dict[str, Any]]) -> None:
  del panel
  for s in series:
    ax.scatter(
      _numeric_x(ax, s["x"]), s["y"], s=8, color=s["color"], label=s["label"]
    )


@register_kind("bars")
def _draw_bars(ax, panel: Panel, series: list[dict[str, Any]]) -> None:
  del panel
  groups = [str(g) for g in series[0]["x"]] if series else []
  for i, s in enumerate(series):
    if [str(g) for g in s["x"]] != groups:
      raise ValueError(
        f"bars: series {i} has groups {s['x']}, the first has {groups}"
      )
  report_lib.grouped_bars(
    groups,
    {
      s["label"] or f"series {i}": (s["y"], s["err"])
      for i, s in enumerate(series)
    },
    ax=ax,
  )


@register_kind("hbars")
def _draw_hbars(ax, panel: Panel, series: list[dict[str, Any]]) -> None:
  del panel
  n = max(len(series), 1)
  for j, s in enumerate(series):
    pos = np.arange(len(s["x"])) + (j - (n - 1) / 2) * 0.8 / n
    ax.barh(
      pos,
      np.nan_to_num(s["y"]),
      0.8 / n,
      xerr=s["err"],
      color=s["color"],
      capsize=2,
      label=s["label"] or None,
    )
    ax.set_yticks(np.arange(len(s["x"])), [str(v) for v in s["x"]], fontsize=7)
  ax.invert_yaxis()


@register_kind("scaling")
def _draw_scaling(ax, panel: Panel, series: list[dict[str, Any]]) -> None:
  del panel
  report_lib.scaling_plot(
    {s["label"]: (np.asarray(s["x"], np.float64), s["y"]) for s in series},
    ax=ax,
  )


def _draw_panel(ax, panel: Panel, scope: Scope) -> None:
  if panel.kind not in _KINDS:
    raise ValueError(
      f"unknown Panel.kind {panel.kind!r}; known: {sorted(_KINDS)}"
    )
  series = resolve_series(panel, scope)
  _KINDS[panel.kind](ax, panel, series)
  for line in panel.lines:
    if not scope.has(line.when):
      continue
    v = float(_value(line.y, scope))
    draw = ax.axvline if line.vertical else ax.axhline
    draw(
      v,
      color=line.color,
      ls=line.style,
      lw=0.8,
      label=fill(line.label, scope) or None,
    )
  if panel.diagonal is not None:
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    if panel.diagonal > 0:
      d = panel.diagonal
      ax.fill_between(
        [lo, hi],
        [lo - d, hi - d],
        [lo + d, hi + d],
        color="gray",
        alpha=0.15,
        lw=0,
      )
  if panel.logx:
    ax.set_xscale("log")
  if panel.logy:
    ax.set_yscale("log")
  if panel.xticks and series:
    xs = [float(v) for v in series[0]["x"]]
    ax.set_xticks(xs, [f"{v:g}" for v in xs], minor=False)
    ax.set_xticks([], minor=True)
  if panel.ylim is not None:
    ax.set_ylim(*panel.ylim)
  ax.set(
    xlabel=fill(panel.xlabel, scope),
    ylabel=fill(panel.ylabel, scope),
    title=fill(panel.title, scope),
  )
  if panel.legend and ax.get_legend_handles_labels()[1]:
    ax.legend(fontsize=7)


def _panel_scopes(fig: Figure, scope: Scope) -> list[tuple[Panel, Scope]]:
  out = []
  for p in fig.panels:
    if p.over is None:
      out += [(p, scope)] if scope.has(p.when) else []
    else:
      out += [
        (p, e)
        for e in expand(scope, p.over, keys=p.keys, labels=p.labels)
        if e.has(p.when)
      ]
  return out


def render_figure(
  fig: Figure,
  record: Mapping[str, Any],
  workdir: str | os.PathLike[str],
  *,
  view: str | None = None,
  dpi: int = 100,
) -> Any:
  """Draws ``fig`` from ``record`` into ``<workdir>/<fig.name>.png``.

  Args:
    fig: the spec.
    record: the results record.
    workdir: the folder of the PNG.
    view: the report's ``view`` function name, if any.
    dpi: resolution.

  Returns:
    The PNG's path (None on processes other than 0, or when ``fig.when`` fails).

  Raises:
    KeyError: naming a metric path that is not in the record.
  """
  return _render_figure(fig, Scope(record_view(record, view)), workdir, dpi=dpi)


def _render_figure(
  fig: Figure, scope: Scope, workdir, *, dpi: int = 100
) -> Any:
  import matplotlib  # pylint: disable=import-outside-toplevel

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

  from jaxpapers.core import results as results_lib  # pylint: disable=import-outside-toplevel

  if not scope.has(fig.when):
    return None
  panels = _panel_scopes(fig, scope)
  if not panels and any(p.when is not None for p in fig.panels):
    return None  # every panel's own `when` failed: nothing to draw
  if not panels:
    raise ValueError(f"figure {fig.name!r} has no panel to draw")
  ncols = min(fig.ncols or len(panels), len(panels))
  nrows = -(-len(panels) // ncols)
  w, h = fig.size
  figure, axes = plt.subplots(
    nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False
  )
  try:
    for ax, (panel, s) in zip(axes.flat, panels):
      _draw_panel(ax, panel, s)
    for ax in list(axes.flat)[len(panels) :]:
      ax.axis("off")
    if fig.title:
      figure.suptitle(fill(fig.title, scope))
    figure.tight_layout()
  except BaseException:
    plt.close(figure)
    raise
  return results_lib.save_figure(figure, workdir, fig.name, dpi=dpi)


def render(
  report: Report,
  record: Mapping[str, Any],
  workdir: str | os.PathLike[str] | None = None,
) -> tuple[str, list[Any]]:
  """Renders every table and (with ``workdir``) every figure of ``report``.

  Args:
    report: the spec.
    record: the results record (as :func:`jaxpapers.core.write_results` writes
      it).
    workdir: where the PNGs go; None renders the tables only.

  Returns:
    ``(markdown, paths)``: the tables joined by blank lines, and the PNGs
    written.

  Raises:
    KeyError: naming a metric path that is not in the record.
  """
  if not isinstance(report, Report):
    raise TypeError(
      f"report must be a reporting.Report, got {type(report).__name__}"
    )
  scope = Scope(record_view(record, report.view))
  parts = [_render_table(t, scope) for t in report.tables]
  paths = []
  if workdir is not None:
    for fig in report.figures:
      path = _render_figure(fig, scope, workdir)
      if path is not None:
        paths.append(path)
  return "\n\n".join(p for p in parts if p), paths


# ----------------------------------------------------------------------- images


def image_grid(images: Any, cols: int) -> np.ndarray:
  """Tiles images into one RGB canvas, a one-pixel black gap between them.

  Args:
    images: [N, H, W, C] values in [-1, 1] (clipped), C = 1 (grey) or 3.
    cols: images per row.

  Returns:
    [rows * (H + 1), cols * (W + 1), 3] float64 in [0, 1], rows = ceil(N / cols).
  """
  s = np.clip((np.asarray(images, np.float64) + 1.0) / 2.0, 0.0, 1.0)
  if s.ndim != 4 or s.shape[-1] not in (1, 3):
    raise ValueError(f"images must be [N, H, W, 1 or 3], got shape {s.shape}")
  if s.shape[-1] == 1:
    s = np.repeat(s, 3, axis=-1)
  n, h, w, _ = s.shape
  canvas = np.zeros((-(-n // cols) * (h + 1), cols * (w + 1), 3))
  for i in range(n):
    r, c = divmod(i, cols)
    canvas[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] = s[i]
  return canvas


def save_image_grids(
  workdir: str | os.PathLike[str],
  name: str,
  grids: Mapping[str, Any],
  *,
  cols: int = 8,
  size: tuple[float, float] = (3.2, 3.4),
  dpi: int = 100,
) -> Any:
  """Draws image grids side by side into ``<workdir>/<name>.png`` (e.g.
  generated samples).

  Images are arrays a results record does not hold, so this is the one figure a
  run draws from its own arrays rather than from a declared :class:`Report`.

  Args:
    workdir: the folder of the PNG.
    name: the file stem.
    grids: title -> [N, H, W, C] images in [-1, 1] (:func:`image_grid`), in
      panel order.
    cols: images per row of each grid.
    size: inches of one panel.
    dpi: resolution.

  Returns:
    The PNG's path (None on processes other than 0).
  """
  import matplotlib  # pylint: disable=import-outside-toplevel

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

  from jaxpapers.core import results as results_lib  # pylint: disable=import-outside-toplevel

  if not grids:
    raise ValueError(f"save_image_grids({name!r}): grids is empty")
  n = len(grids)
  figure, axes = plt.subplots(
    1, n, figsize=(size[0] * n, size[1]), squeeze=False
  )
  for ax, (title, images) in zip(axes[0], grids.items()):
    ax.imshow(image_grid(images, cols))
    ax.set_title(title, fontsize=8)
    ax.axis("off")
  return results_lib.save_figure(figure, workdir, name, dpi=dpi)
