r"""Shared tables and standard plots for the experiments' results.

Tables: :func:`markdown_table` (headers, rows, number formatting, ``mean ± std``
cells via :class:`MeanStd`) and :func:`claims_table` (claim -> paper -> measured
-> verdict, from the ``claims`` block that :func:`jaxpapers.core.write_results`
writes). On the command line, ``python -m jaxpapers.core.report
<results.json> ...`` prints the claims tables of results files.

Plots (each returns a matplotlib figure; save it with
:func:`jaxpapers.core.save_figure`): :func:`curves_plot` (curves with seed
bands), :func:`grouped_bars` (grouped bars with error bars) and
:func:`scaling_plot` (log-log axes with the fitted slope and its standard error
in the legend, from :func:`fit_power_law`). :func:`power_law_fit`: a measured
scaling curve's exponent over its usable points, with its 95% interval and the
number of points.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
  from matplotlib.axes import Axes

  # a Figure, or the SubFigure holding a given ax
  from matplotlib.figure import FigureBase

from jaxpapers.core.claims import format_value


@dataclasses.dataclass(frozen=True)
class MeanStd:
  """A ``mean ± std`` table cell.

  Each argument is kept as the field of the same name.

  Args:
    mean: the mean.
    std: the spread (std over seeds or a CI half-width); None prints the mean
      alone.
    fmt: format spec of both numbers (e.g. ``'.3f'``).
    scale: multiplies both (100 for percentages).
    suffix: appended after the std (``'%'``).
  """

  mean: float
  std: float | None = None
  fmt: str = ".3f"
  scale: float = 1.0
  suffix: str = ""

  def __post_init__(self):
    for name in ("mean", "std"):
      v = getattr(self, name)
      if v is None:
        continue
      if (
        isinstance(v, (bool, np.bool_))
        or not isinstance(v, (numbers.Real, np.generic))
        # np.ndim, without converting v to an array
        or getattr(v, "ndim", 0) != 0
      ):
        raise TypeError(
          f"MeanStd.{name} must be a real scalar or None, got {v!r}"
        )
    if self.std is not None and float(self.std) < 0:
      raise ValueError(f"MeanStd.std must be >= 0 (a spread), got {self.std!r}")

  def __str__(self) -> str:
    if self.mean is None or (
      isinstance(self.mean, float) and math.isnan(self.mean)
    ):
      return "-"
    m = format(self.scale * float(self.mean), self.fmt)
    if self.std is None:
      return m + self.suffix
    return (
      f"{m} ± {format(self.scale * float(self.std), self.fmt)}{self.suffix}"
    )


def format_cell(value: Any, fmt: str = ".3g") -> str:
  """One table cell: None/NaN -> ``-``, bools and ints as is, other reals with
  ``fmt``."""
  if value is None:
    return "-"
  if isinstance(value, (bool, np.bool_)):
    return str(bool(value))
  if isinstance(value, (numbers.Integral, np.integer)):
    return str(int(value))
  if isinstance(value, (numbers.Real, np.floating)):
    v = float(value)
    return "-" if math.isnan(v) else format(v, fmt)
  return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(
  headers: Sequence[str],
  rows: Sequence[Sequence[Any]],
  *,
  fmt: str | Sequence[str] = (".3g"),
) -> str:
  """A GitHub markdown table.

  Args:
    headers: column titles.
    rows: one sequence of cells per row, each as long as ``headers``; cells are
      strings, numbers (formatted with ``fmt``), None (``-``) or
      :class:`MeanStd`.
    fmt: one format spec for every number, or one per column.

  Returns:
    The table, lines joined by newlines, without a trailing newline.

  Raises:
    ValueError: if a row's length differs from the headers'.
  """
  fmts = [fmt] * len(headers) if isinstance(fmt, str) else list(fmt)
  if len(fmts) != len(headers):
    raise ValueError(
      f"fmt must be one spec or one per column ({len(headers)}), "
      f"got {len(fmts)}"
    )
  lines = [
    "| " + " | ".join(str(h) for h in headers) + " |",
    "|" + "---|" * len(headers),
  ]
  for i, row in enumerate(rows):
    row = list(row)
    if len(row) != len(headers):
      raise ValueError(
        f"rows[{i}] has {len(row)} cells, expected {len(headers)} (the headers)"
      )
    lines.append(
      "| " + " | ".join(format_cell(c, f) for c, f in zip(row, fmts)) + " |"
    )
  return "\n".join(lines)


def measured_cell(rec: Mapping[str, Any]) -> str:
  """The measured cell of a claims-block record: value ± noise and unit, or
  '–'."""
  claim = rec.get("claim", {})
  fmt, unit = claim.get("fmt", ".3g"), claim.get("unit", "")
  x = rec.get("measured")
  if x is None:
    return "–"
  s = format_value(x, fmt)
  h = rec.get("noise")
  if h:
    s += f" ± {format_value(h, fmt.replace('+', ''))}"
  return f"{s} {unit}".rstrip()


def paper_cell(claim: Mapping[str, Any]) -> str:
  """The paper's-number cell of a claim dict: its text, else its value, else
  '-'."""
  text = claim.get("paper_text") or ""
  if text:
    return text
  v = claim.get("paper_value")
  return (
    "-"
    if v is None
    else format_value(v, claim.get("fmt", ".3g"), claim.get("unit", ""))
  )


def verdict_text(rec: Mapping[str, Any]) -> str:
  """The verdict cell: ``**held**`` etc., or ``no verdict (smoke)`` when none
  was issued.

  A verdict decided by a guard names it: ``**inconclusive** (precondition)``,
  ``(vacuous)``, ``(at chance)``.
  """
  v = rec.get("verdict")
  if v is None:
    return "no verdict (smoke)"
  guard = {
    "requires": "precondition",
    "controls": "vacuous",
    "chance": ("at chance"),
  }.get(rec.get("guard") or "")
  return f"**{v}**" + (f" ({guard})" if guard else "")


def controls_cell(rec: Mapping[str, Any]) -> str:
  """The controls cell: each control's value and verdict under the claim's rule,
  or '-'."""
  claim = rec.get("claim", {})
  fmt = claim.get("fmt", ".3g")
  parts = []
  for name, c in (rec.get("controls") or {}).items():
    v = "–" if c.get("measured") is None else format_value(c["measured"], fmt)
    parts.append(f"{name}: {v} ({c.get('verdict') or 'unread'})")
  return "; ".join(parts) or "-"


def claims_table(
  records: Sequence[Mapping[str, Any]],
  *,
  paper: str | None = None,
  measured_in: str | None = None,
  reasons: bool = True,
  registration: Mapping[str, str] | None = None,
) -> str:
  """Claim -> paper -> measured -> verdict, from the ``claims`` block of a
  results.json.

  Args:
    records: ``results['claims']`` (as written by ``write_results``).
    paper: if given, a first column with this paper's name.
    measured_in: if given, a last column with the run that measured it (e.g. a
      commit).
    reasons: add the verdict's one-line reason (which names the guard that
      decided).
    registration: ``{"status", "registered_at", "run_at"}`` of the results file
      (:func:`jaxpapers.core.registration.describe`): adds those three columns
      to every row.

  An ``upper bound`` column holds the values of ``oracle`` claims (their
  ``measured`` cell is left empty: an upper bound is never a measured result); a
  ``controls`` column is added when any claim declares controls, a ``baselines``
  column when any lists baselines.

  Returns:
    The markdown table ('' when there are no claims).
  """
  if not records:
    return ""
  for i, rec in enumerate(records):
    if not isinstance(rec, Mapping) or not (
      "error" in rec or isinstance(rec.get("claim"), Mapping)
    ):
      raise ValueError(
        f"records[{i}] must be a judged claim (a mapping with 'claim', as "
        f"write_results writes it) or an 'error' record, got {rec!r}"[:300]
      )
  good = [r for r in records if "error" not in r]
  with_oracle = any(r.get("oracle") or r["claim"].get("oracle") for r in good)
  with_controls = any(r.get("controls") for r in good)
  with_baselines = any(r.get("baselines") for r in good)
  headers = (["paper"] if paper is not None else []) + [
    "claim",
    "paper's number",
    "measured",
  ]
  headers += (["upper bound (oracle)"] if with_oracle else []) + ["verdict"]
  headers += (["why"] if reasons else []) + (
    ["controls"] if with_controls else []
  )
  headers += ["baselines"] if with_baselines else []
  if registration is not None:
    headers += ["rules", "registered at", "run at"]
  if measured_in is not None:
    headers.append("measured in")
  rows = []
  for rec in records:
    if "error" in rec:
      row = ([paper] if paper is not None else []) + [rec["error"]]
      rows.append(row + ["-"] * (len(headers) - len(row)))
      continue
    claim = rec.get("claim", {})
    oracle = bool(rec.get("oracle") or claim.get("oracle"))
    value = measured_cell(rec)
    row = ([paper] if paper is not None else []) + [
      f"{claim.get('statement', '')} (`{claim.get('id', '')}`)",
      paper_cell(claim),
      "–" if oracle else value,
    ]
    if with_oracle:
      row.append(value if oracle else "–")
    row.append(verdict_text(rec))
    if reasons:
      row.append(rec.get("reason", ""))
    if with_controls:
      row.append(controls_cell(rec))
    if with_baselines:
      fmt = claim.get("fmt", ".3g").replace("+", "")
      row.append(
        "; ".join(
          f"{k}: {format_value(v, fmt)}"
          for k, v in (rec.get("baselines") or {}).items()
        )
        or "-"
      )
    if registration is not None:
      row += [
        registration["status"],
        registration["registered_at"],
        registration["run_at"],
      ]
    if measured_in is not None:
      row.append(measured_in)
    rows.append(row)
  return markdown_table(headers, rows)


# Two-sided 95% Student-t quantiles t_{0.975, n-1} by sample size n; larger
# samples use 1.96.
_T975 = {
  2: 12.706,
  3: 4.303,
  4: 3.182,
  5: 2.776,
  6: 2.571,
  7: 2.447,
  8: 2.365,
  9: 2.306,
  10: 2.262,
}


def ci95_halfwidth(x: Any) -> float:
  """Half-width of the two-sided 95% t-interval of the mean:
  ``t_{0.975, n-1} · s / √n``.

  ``s`` is the sample standard deviation (``ddof=1``); for n > 10 the normal
  quantile 1.96 stands in for ``t``. Use it for a mean over seeds or splits
  (``mean ± ci95_halfwidth``). Committed results were judged with this
  approximation, so it stays as it is; new code should use
  :func:`jaxpapers.core.stats.t_interval` (exact t quantile for every n, any
  confidence) or :func:`jaxpapers.core.stats.paired_difference` for two arms run
  on the same seeds.

  Args:
    x: ``[n]`` real values (one per seed, split or paired difference).

  Returns:
    The half-width; NaN when n < 2 (no spread can be estimated).
  """
  a = np.asarray(x, np.float64)
  if a.ndim != 1:
    raise ValueError(
      f"x must be 1-D (one value per seed or split), got shape {a.shape}"
    )
  n = a.shape[0]
  if n < 2:
    return float("nan")
  return float(_T975.get(n, 1.96) * a.std(ddof=1) / math.sqrt(n))


# ------------------------------------------------------------------------ plots


def fit_power_law(x: Any, y: Any) -> tuple[float, float, float]:
  r"""Least-squares fit of ``log y = a log x + b`` (float64).

  Points with a non-finite x or y (a run that stopped) are ignored; a finite but
  non-positive value has no logarithm and is an error, never silently dropped.

  Args:
    x: [n] positive abscissae.
    y: [n] positive values.

  Returns:
    ``(a, se_a, b)``: the slope, its standard error
    :math:`\sqrt{\mathrm{SSE}/(m-2) / \sum (\log x_i - \overline{\log x})^2}`
    over the m points used (NaN when m = 2), and the intercept.

  Raises:
    ValueError: if x and y differ in shape, a finite value is <= 0, or fewer
      than 2 usable points (with distinct x) remain.
  """
  x = np.asarray(x, np.float64).ravel()
  y = np.asarray(y, np.float64).ravel()
  if x.shape != y.shape:
    raise ValueError(
      f"x and y must have the same length, got {x.shape} and {y.shape}"
    )
  finite = np.isfinite(x) & np.isfinite(y)
  for name, v in (("x", x), ("y", y)):
    bad = finite & (v <= 0)
    if bad.any():
      raise ValueError(
        f"{name} must be > 0 for a log-log fit, got {v[bad][:3].tolist()} at "
        f"indices {np.flatnonzero(bad)[:3].tolist()}"
      )
  ok = finite
  lx, ly = np.log(x[ok]), np.log(y[ok])
  if lx.size < 2 or np.ptp(lx) == 0:
    raise ValueError(
      f"need >= 2 points with distinct positive x and positive y, got {lx.size}"
    )
  mx = lx.mean()
  sxx = float(((lx - mx) ** 2).sum())
  a = float(((lx - mx) * (ly - ly.mean())).sum() / sxx)
  b = float(ly.mean() - a * mx)
  m = lx.size
  if m > 2:
    sse = float(((ly - (a * lx + b)) ** 2).sum())
    se = math.sqrt(sse / (m - 2) / sxx)
  else:
    se = float("nan")
  return a, se, b


class PowerLawFit(NamedTuple):
  r"""A log-log least-squares fit :math:`\log y = a \log x + b` (:func:`power_law_fit`).

  Attributes:
    slope: the exponent :math:`a`; NaN with fewer than 2 usable points.
    intercept: :math:`b` (natural log); NaN with fewer than 2 usable points.
    se: the slope's standard error (as in :func:`fit_power_law`); NaN with fewer
      than 3.
    ci95: the half-width of the slope's two-sided 95% t-interval,
      :math:`t_{0.975,\,n-2} \cdot` ``se``; NaN with fewer than 3 points.
    n: the number of points used.
  """

  slope: float
  intercept: float
  se: float
  ci95: float
  n: int


def power_law_fit(x: Any, y: Any, *, min_x: float = -math.inf) -> PowerLawFit:
  r"""The exponent of a measured scaling curve: a log-log fit over its usable
  points.

  A point is used when ``x >= min_x`` and both ``x`` and ``y`` are finite and >
  0; the others (sizes below the fitted range, runs that stopped or ran out of
  memory and recorded NaN, 0 or a negative sentinel) are left out, never an
  error. The fit is :func:`fit_power_law`'s.

  Args:
    x: ``[m]`` abscissae (sizes, view counts, lengths).
    y: ``[m]`` measured values at ``x`` (times, memory, FLOPs).
    min_x: the smallest ``x`` in the fit (the start of the asymptotic regime).

  Returns:
    A :class:`PowerLawFit` over the ``n`` used points: slope and intercept NaN
    when n < 2 (or every used ``x`` is the same), ``se`` and ``ci95`` NaN when n
    < 3.

  Raises:
    ValueError: ``x`` and ``y`` differ in shape.

  Example::

    fit = power_law_fit([8, 16, 32, 64], times, min_x=16)
    print(f"t ~ S^{fit.slope:.2f} ± {fit.ci95:.2f} ({fit.n} points)")
  """
  x = np.asarray(x, np.float64).ravel()
  y = np.asarray(y, np.float64).ravel()
  if x.shape != y.shape:
    raise ValueError(
      f"x and y must have the same length, got {x.shape} and {y.shape}"
    )
  keep = (x >= min_x) & np.isfinite(x) & (x > 0) & np.isfinite(y) & (y > 0)
  n = int(keep.sum())
  nan = float("nan")
  if n < 2 or np.ptp(x[keep]) == 0:
    return PowerLawFit(nan, nan, nan, nan, n)
  slope, se, intercept = fit_power_law(x[keep], y[keep])
  if n < 3:
    return PowerLawFit(slope, intercept, se, nan, n)
  from scipy import stats as sps  # pylint: disable=import-outside-toplevel

  return PowerLawFit(
    slope, intercept, se, float(sps.t.ppf(0.975, n - 2) * se), n
  )


def _pyplot():
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

  return plt


def _axes(ax, figsize) -> tuple[FigureBase, Axes]:
  plt = _pyplot()
  if ax is None:
    fig, ax = plt.subplots(figsize=figsize)
  else:
    fig = ax.figure
  return fig, ax


def curves_plot(
  curves: Mapping[str, tuple[Any, Any]],
  *,
  xlabel: str = "",
  ylabel: str = "",
  title: str = "",
  band: str = "std",
  logy: bool = False,
  ax: Axes | None = None,
  figsize: tuple[float, float] = (6, 4),
) -> FigureBase:
  """Mean curves with a band over seeds.

  Args:
    curves: ``{label: (x [T], y [seeds, T] or [T])}``.
    xlabel: the x axis label.
    ylabel: the y axis label.
    title: the title.
    band: ``'std'`` (mean ± std over seeds) or ``'minmax'``.
    logy: log scale on y.
    ax: an existing axes to draw into (else a new figure).
    figsize: size in inches of a new figure.

  Returns:
    The figure.
  """
  if band not in ("std", "minmax"):
    raise ValueError(f"band must be 'std' or 'minmax', got {band!r}")
  fig, ax = _axes(ax, figsize)
  for i, (label, (x, y)) in enumerate(curves.items()):
    x = np.asarray(x, np.float64)
    y = np.atleast_2d(np.asarray(y, np.float64))
    if y.shape[-1] != x.shape[0]:
      raise ValueError(
        f"curves[{label!r}]: y must be [seeds, {x.shape[0]}], got {y.shape}"
      )
    mean = y.mean(0)
    color = f"C{i % 10}"
    seeds = f" ({y.shape[0]} seeds)" if y.shape[0] > 1 else ""
    ax.plot(x, mean, color=color, label=label + seeds)
    if y.shape[0] > 1:
      lo, hi = (
        (mean - y.std(0), mean + y.std(0))
        if band == "std"
        else (y.min(0), y.max(0))
      )
      ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
  if logy:
    ax.set_yscale("log")
  ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
  ax.legend(fontsize=7)
  return fig


def grouped_bars(
  groups: Sequence[str],
  series: Mapping[str, tuple[Any, Any]],
  *,
  ylabel: str = "",
  title: str = "",
  horizontal_line: float | None = None,
  ax: Axes | None = None,
  figsize: tuple[float, float] | None = None,
) -> FigureBase:
  """Grouped bars with error bars.

  Args:
    groups: the group names on the x axis (e.g. datasets).
    series: ``{label: (means [G], errors [G] or None)}``: one bar per group per
      series; a NaN mean draws no bar.
    ylabel: the y axis label.
    title: the title.
    horizontal_line: draw a reference line at this y (e.g. 0 or chance).
    ax: an existing axes to draw into (else a new figure).
    figsize: size in inches of a new figure (default: widens with the number of
      groups).

  Returns:
    The figure.
  """
  figsize = figsize or (max(4.0, 1.1 * len(groups) + 2), 3.6)
  fig, ax = _axes(ax, figsize)
  n = max(len(series), 1)
  w = 0.8 / n
  xs = np.arange(len(groups))
  for j, (label, (means, errs)) in enumerate(series.items()):
    means = np.asarray(means, np.float64)
    if means.shape != (len(groups),):
      raise ValueError(
        f"series[{label!r}]: means must have one value per group "
        f"({len(groups)}), got shape {means.shape}"
      )
    errs = None if errs is None else np.asarray(errs, np.float64)
    if errs is not None and errs.shape != means.shape:
      raise ValueError(
        f"series[{label!r}]: errors must have one value per group "
        f"({len(groups)}) or be None, got shape {errs.shape}"
      )
    ax.bar(
      xs + (j - (n - 1) / 2) * w,
      np.nan_to_num(means),
      w,
      yerr=errs,
      capsize=2,
      label=label,
    )
  if horizontal_line is not None:
    ax.axhline(horizontal_line, color="k", lw=0.8)
  ax.set_xticks(xs)
  ax.set_xticklabels(
    groups,
    rotation=30 if len(groups) > 4 else 0,
    ha="right" if len(groups) > 4 else "center",
  )
  ax.set(ylabel=ylabel, title=title)
  ax.legend(fontsize=7)
  return fig


def scaling_plot(
  series: Mapping[str, tuple[Any, Any]],
  *,
  fit_min_x: float | None = None,
  xlabel: str = "",
  ylabel: str = "",
  title: str = "",
  ax: Axes | None = None,
  figsize: tuple[float, float] = (5, 4),
) -> FigureBase:
  """Log-log scaling plot with the fitted exponent (± its standard error) in the
  legend.

  Args:
    series: ``{label: (x [n], y [n])}``; non-finite y (a run that stopped) is
      skipped.
    fit_min_x: fit only points with ``x >= fit_min_x``.
    xlabel: the x axis label.
    ylabel: the y axis label.
    title: the title.
    ax: an existing axes to draw into (else a new figure).
    figsize: size in inches of a new figure.

  Returns:
    The figure (the fits are in ``fig.scaling_fits``: ``{label: (slope, se,
    intercept)}``).
  """
  fig, ax = _axes(ax, figsize)
  fits = {}
  for i, (label, (x, y)) in enumerate(series.items()):
    x = np.asarray(x, np.float64).ravel()
    y = np.asarray(y, np.float64).ravel()
    if x.shape != y.shape:
      raise ValueError(
        f"series[{label!r}]: x and y must have the same length, "
        f"got {x.shape} and {y.shape}"
      )
    keep = np.isfinite(y)
    color = f"C{i % 10}"
    sel = keep & (x >= (fit_min_x if fit_min_x is not None else -np.inf))
    text = label
    try:
      a, se, b = fit_power_law(x[sel], y[sel])
      fits[label] = (a, se, b)
      text += (
        f" (slope {a:.2f}" + ("" if math.isnan(se) else f" ± {se:.2f}") + ")"
      )
      xf = x[sel]
      ax.plot(xf, np.exp(b) * xf**a, ls=":", color=color, lw=1)
    except ValueError:
      text += " (no fit)"
    ax.plot(x[keep], y[keep], "o-", color=color, label=text)
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=7)
  # An attribute this function adds to the Figure (documented above), unknown to
  # its class.
  fig.scaling_fits = fits  # pyright: ignore[reportAttributeAccessIssue]
  return fig


def _main(argv: Sequence[str]) -> int:
  import json  # pylint: disable=import-outside-toplevel

  if len(argv) < 2:
    print(
      "usage: python -m jaxpapers.core.report <results.json> [<results.json> "
      "...]"
    )
    return 2
  for p in argv[1:]:
    with open(p, encoding="utf-8") as f:
      rec = json.load(f)
    print(f"## {p}\n")
    print(claims_table(rec.get("claims", [])))
    print()
  return 0


if __name__ == "__main__":
  import sys

  sys.exit(_main(sys.argv))
