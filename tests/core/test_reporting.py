"""Declared tables and figures: cells against hand-computed text, errors naming
the path, PNGs holding the declared series."""

import json

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from jaxpapers import core
from jaxpapers.core import reporting as R

RECORD = {
  "config": {"lrs": [0.001, 0.01, 0.1], "seeds": 3},
  "metrics": {
    "summary": {
      "lse": {
        "best": {"mean": 0.12345, "std": 0.01},
        "loss": [0.5, 0.2, 0.9],
        "n": 7,
      },
      "poly3": {
        "best": {"mean": 0.5, "std": None},
        "loss": [0.6, 0.4, 0.3],
        "n": 2,
      },
    },
    "rows": [
      {"family": "adamw", "T": 100, "acc": 0.9},
      {"family": "soda", "T": 100, "acc": 0.95},
      {"family": "adamw", "T": 400, "acc": 0.93},
    ],
    "tasks": {"a": {"cells": {"x": 1.0, "y": 2.0}}, "b": {"cells": {"z": 3.0}}},
    "uniform": 2.3,
  },
  "claims": [{"claim_id": "gap", "measured": 0.25}],
}


def test_table_cells_match_hand_computed_text():
  table = R.Table(
    title="**digits** ({config.seeds} seeds, claim {claims.gap.measured:.1f})",
    over="metrics.summary",
    labels={"lse": "LSE"},
    columns=(
      R.Column("setting", "{label}"),
      R.Column("best", "best.mean", ".3f", err="best.std"),
      R.Column("n", "n"),
      R.Column("loss at lr {config.lrs.1:g}", "{loss.1:.2f}"),
      R.Column("losses", "{loss:.1f}"),
    ),
  )
  assert R.render_table(table, RECORD) == (
    "**digits** (3 seeds, claim 0.2)\n\n"
    "| setting | best | n | loss at lr 0.01 | losses |\n"
    "|---|---|---|---|---|\n"
    "| LSE | 0.123 ± 0.010 | 7 | 0.20 | 0.5/0.2/0.9 |\n"
    "| poly3 | 0.500 | 2 | 0.40 | 0.6/0.4/0.3 |"
  )


def test_compact_columns_parse_paths_formats_spreads_and_templates():
  spec = (
    "setting={label}; n; best=best.mean:.2f±best.std; "
    "x={config.seeds}={n:d} runs"
  )
  cols = R.columns(spec, missing="?")
  assert cols == (
    R.Column("setting", "{label}", missing="?"),
    R.Column("n", "n", missing="?"),
    R.Column("best", "best.mean", ".2f", err="best.std", missing="?"),
    R.Column("x={config.seeds}", "{n:d} runs", missing="?"),
  )
  text = R.render_table(R.Table(over="metrics.summary", columns=cols), RECORD)
  assert "| setting | n | best | x=3 |" in text
  assert "| lse | 7 | 0.12 ± 0.01 | 7 runs |" in text


def test_column_over_a_list_makes_one_column_per_item():
  col = R.Column("lr [v]", "loss.[i]", ".1f", over="config.lrs")
  text = R.render_table(
    R.Table(over="metrics.summary", columns=(R.Column("s", "{key}"), col)),
    RECORD,
  )
  assert text.splitlines()[0] == "| s | lr 0.001 | lr 0.01 | lr 0.1 |"
  assert "| poly3 | 0.6 | 0.4 | 0.3 |" in text


def test_table_where_keys_star_levels_and_extra_rows():
  t = R.Table(
    over="metrics.rows",
    where={"family": "adamw"},
    columns=(
      R.Column("T", "T"),
      R.Column("acc", "acc", ".1%"),
      R.Column("i", "{index}"),
    ),
    extra_rows=(("ref", "{metrics.uniform:.1f}", ""),),
  )
  assert R.render_table(t, RECORD).splitlines()[2:] == [
    "| 100 | 90.0% | 0 |",
    "| 400 | 93.0% | 1 |",
    "| ref | 2.3 |  |",
  ]
  t = R.Table(
    over="metrics.tasks.*.cells",
    columns=(
      R.Column("task", "{key0}"),
      R.Column("cell", "{key}"),
      R.Column("v", "{key1}"),
    ),
  )
  assert R.render_table(t, RECORD).splitlines()[2:] == [
    "| a | x | x |",
    "| a | y | y |",
    "| b | z | z |",
  ]
  t = R.Table(
    over="metrics.summary", keys=("poly3",), columns=(R.Column("k", "{key}"),)
  )
  assert R.render_table(t, RECORD).splitlines()[2:] == ["| poly3 |"]
  t = R.Table(
    rows=("metrics.summary.lse",),
    columns=(R.Column("k", "{key}"), R.Column("n", "n")),
  )
  assert R.render_table(t, RECORD).splitlines()[2:] == ["| lse | 7 |"]


def test_row_paths_fall_back_to_the_record_and_missing_when_skips():
  t = R.Table(
    over="metrics.summary", columns=(R.Column("u", "metrics.uniform", ".2f"),)
  )
  assert R.render_table(t, RECORD).splitlines()[2:] == ["| 2.30 |", "| 2.30 |"]
  assert (
    R.render_table(
      R.Table(over="metrics.nope", when="metrics.nope", columns=()), RECORD
    )
    == ""
  )


def test_table_without_columns_is_its_title_alone():
  note = R.Table(
    title="uniform {metrics.uniform:.2f}; {config.seeds} seeds", columns=()
  )
  assert R.render_table(note, RECORD) == "uniform 2.30; 3 seeds"
  skipped = R.Table(title="{metrics.nope}", when="metrics.nope", columns=())
  report = R.Report(tables=(note, skipped, note))
  assert (
    R.render(report, RECORD)[0]
    == "uniform 2.30; 3 seeds\n\nuniform 2.30; 3 seeds"
  )


@pytest.mark.parametrize(
  "spec",
  [
    R.Table(over="metrics.summary", columns=(R.Column("x", "best.median"),)),
    R.Table(
      over="metrics.summary", columns=(R.Column("x", "{best.median:.2f}"),)
    ),
    R.Table(over="metrics.summary", columns=(R.Column("{best.median}", "n"),)),
  ],
)
def test_unknown_metric_path_raises_naming_it(spec):
  with pytest.raises(KeyError, match="best.median"):
    R.render_table(spec, RECORD)


def test_unknown_over_path_raises_naming_it(tmp_path):
  with pytest.raises(KeyError, match="metrics.sumary"):
    R.render_table(R.Table(over="metrics.sumary", columns=()), RECORD)
  fig = R.Figure(
    "f", R.Panel(series=(R.Series(y="loss", over="metrics.sumary"),))
  )
  with pytest.raises(KeyError, match="metrics.sumary"):
    R.render_figure(fig, RECORD, tmp_path)
  assert not (tmp_path / "f.png").exists()


def _recording_kind(calls):
  @R.register_kind("recording")
  def draw(ax, panel, series):
    calls.append((panel.title, series))
    R._KINDS["line"](ax, panel, series)

  return draw


def test_figure_written_with_the_declared_series(tmp_path):
  calls = []
  _recording_kind(calls)
  fig = R.Figure(
    "loss_vs_lr",
    R.Panel(
      kind="recording",
      title="all",
      logx=True,
      series=(
        R.Series(
          y="loss", x="config.lrs", label="{label}", over=("metrics.summary")
        ),
        R.Series(y="n", points="metrics.summary", label="n per setting"),
      ),
      lines=(R.Line("metrics.uniform", label="uniform"),),
    ),
  )
  path = R.render_figure(fig, RECORD, tmp_path)
  assert (
    path is not None
    and (tmp_path / "loss_vs_lr.png").read_bytes()[:4] == b"\x89PNG"
  )
  ((title, series),) = calls
  assert [s["label"] for s in series] == ["lse", "poly3", "n per setting"]
  np.testing.assert_array_equal(series[0]["x"], [0.001, 0.01, 0.1])
  np.testing.assert_array_equal(series[1]["y"], [0.6, 0.4, 0.3])
  assert series[2]["x"] == ["lse", "poly3"]
  np.testing.assert_array_equal(series[2]["y"], [7.0, 2.0])


def test_every_builtin_kind_draws(tmp_path):
  panels = (
    R.Panel(
      kind="line",
      series=(
        R.Series(y="loss", err="loss", band=True, over=("metrics.summary")),
      ),
    ),
    R.Panel(
      kind="scatter",
      series=(R.Series(y="n", x="n", points=("metrics.summary")),),
    ),
    R.Panel(
      kind="bars",
      series=(
        R.Series(y="best.mean", points=("metrics.summary"), label=("b")),
      ),
    ),
    R.Panel(
      kind="hbars", series=(R.Series(y="acc", points="metrics.rows", x=None),)
    ),
    R.Panel(
      kind="scaling",
      series=(R.Series(y="loss", x="config.lrs", over=("metrics.summary")),),
    ),
    R.Panel(
      over="metrics.summary",
      title="{key}",
      diagonal=0.1,
      series=(R.Series(y=("loss")),),
    ),
  )
  path = R.render_figure(R.Figure("all", panels, ncols=3), RECORD, tmp_path)
  assert path is not None and path.exists()
  with pytest.raises(ValueError, match="unknown Panel.kind 'pie'"):
    R.render_figure(
      R.Figure("p", R.Panel(kind="pie", series=())), RECORD, tmp_path
    )


def test_write_results_renders_the_configs_report(tmp_path):
  report = R.Report(
    tables=(
      R.Table(
        over="metrics.summary",
        columns=(R.Column("s", "{key}"), R.Column("n", "n")),
      ),
    ),
    figures=(
      R.Figure(
        "curve", R.Panel(series=(R.Series(y=("metrics.summary.lse.loss")),))
      ),
    ),
  )
  config = {"seed": 0, "report": report}
  metrics = {"summary": RECORD["metrics"]["summary"]}
  path = core.write_results(
    tmp_path, metrics=metrics, config=config, issue_verdicts=False
  )
  rec = json.loads(path.read_text())
  assert rec["plots"] == ["curve.png"] and (tmp_path / "curve.png").exists()
  assert rec["table_markdown"].splitlines()[2:] == [
    "| lse | 7 |",
    "| poly3 | 2 |",
  ]
  assert "report" not in rec["config"]
  md, paths = R.render(report, rec, tmp_path / "again")
  assert md == rec["table_markdown"] and [p.name for p in paths] == [
    "curve.png"
  ]


def test_view_function_is_readable_as_view(tmp_path):
  del tmp_path
  t = R.Table(rows=("view.best",), columns=(R.Column("v", "{value:.2f}"),))
  md = R.render_table(t, RECORD, view=f"{__name__}:_best_view")
  assert md.splitlines()[2:] == ["| 0.95 |"]


def _best_view(record):
  return {"best": {"value": max(r["acc"] for r in record["metrics"]["rows"])}}


def test_point_series_sorted_annotated_and_empty_ones_skipped(tmp_path):
  calls = []
  _recording_kind(calls)
  series = (
    R.Series(
      y="acc",
      x="T",
      points="metrics.rows",
      sort="acc",
      annotate=("{family}"),
      label=("all"),
    ),
    R.Series(
      y="acc",
      x="T",
      points="metrics.rows",
      where={"family": "lion"},
      label=("none"),
    ),
  )
  R.render_figure(
    R.Figure("p", R.Panel(kind="recording", series=series)), RECORD, tmp_path
  )
  ((_, (drawn,)),) = calls
  np.testing.assert_array_equal(drawn["y"], [0.9, 0.93, 0.95])
  assert drawn["x"] == [100, 400, 100] and drawn["label"] == "all"
  assert drawn["notes"] == ["adamw", "adamw", "soda"] and not drawn["annotate"]


INTERVALS = {
  "config": {"model": "tiny"},
  "metrics": {
    "curves": {
      "filtered": {
        "ks": [1, 5],
        "locos": {"mean": [0.5, 0.2], "lo": [0.4, 0.0], "hi": [0.8, 0.3]},
      },
      "paper": None,  # a protocol that did not run
      "long": {
        "ks": [1, 5],
        "locos": {"mean": [0.9, None], "lo": [0.7, None], "hi": [1.0, None]},
      },
    }
  },
}


def test_interval_series_draw_distances_below_and_above(tmp_path):
  calls = []
  _recording_kind(calls)
  panel = R.Panel(
    kind="recording",
    over="metrics.curves",
    when="ks",
    title="{key}",
    series=(R.Series(y="locos.mean", lo="locos.lo", hi="locos.hi", x="ks"),),
  )
  fig = R.Figure("iv", panel, title="model {config.model}")
  path = R.render_figure(fig, INTERVALS, tmp_path)
  assert path is not None and path.exists()
  # 'paper' (None) gets no panel
  assert [t for t, _ in calls] == ["{key}", "{key}"]
  (first,), (second,) = (s for _, s in calls)
  # mean - lo, hi - mean
  np.testing.assert_allclose(first["err"], [[0.1, 0.2], [0.3, 0.1]])
  np.testing.assert_allclose(second["err"][:, 0], [0.2, 0.1])
  assert np.isnan(second["err"][:, 1]).all() and np.isnan(second["y"][1])


def test_interval_series_reject_half_an_interval_or_both_forms(tmp_path):
  def fig(**kw):
    return R.Figure(
      "x",
      R.Panel(
        series=(R.Series(y=("metrics.curves.filtered.locos.mean"), **kw),)
      ),
    )

  with pytest.raises(ValueError, match="lo and hi go together"):
    R.render_figure(
      fig(lo="metrics.curves.filtered.locos.lo"), INTERVALS, tmp_path
    )
  with pytest.raises(ValueError, match="not both"):
    lo, hi = (
      "metrics.curves.filtered.locos.lo",
      "metrics.curves.filtered.locos.hi",
    )
    R.render_figure(fig(lo=lo, hi=hi, err=lo), INTERVALS, tmp_path)
  with pytest.raises(ValueError, match="must have the shape of y"):
    R.render_figure(
      fig(lo="metrics.curves.filtered.ks.0", hi="metrics.curves.filtered.ks.1"),
      INTERVALS,
      tmp_path,
    )


def test_figure_title_and_a_figure_whose_panels_all_fail_when(tmp_path):
  axes = []

  @R.register_kind("keep_axes")
  def draw(ax, panel, series):
    axes.append(ax)
    R._KINDS["line"](ax, panel, series)

  del draw
  panel = R.Panel(kind="keep_axes", series=(R.Series(y=(1.0, 2.0)),))
  R.render_figure(
    R.Figure("t", panel, title="{config.model}: k"), INTERVALS, tmp_path
  )
  assert axes[0].figure.get_suptitle() == "tiny: k"
  none = R.Figure(
    "n",
    R.Panel(over="metrics.curves", when="absent", series=(R.Series(y=("ks")),)),
  )
  assert (
    R.render_figure(none, INTERVALS, tmp_path) is None
    and not (tmp_path / "n.png").exists()
  )
  empty = R.Figure("e", R.Panel(over="metrics.curves", keys=(), series=()))
  with pytest.raises(ValueError, match="has no panel"):
    R.render_figure(empty, INTERVALS, tmp_path)


def test_image_grid_tiles_against_hand_placed_pixels(tmp_path):
  # grey, [-1, 1]
  images = np.stack([np.full((2, 3, 1), v) for v in (-1.0, 0.0, 1.0)])
  canvas = R.image_grid(images, cols=2)
  assert canvas.shape == (2 * 3, 2 * 4, 3)
  want = np.zeros((6, 8, 3))
  want[0:2, 0:3] = 0.0
  want[0:2, 4:7] = 0.5
  want[3:5, 0:3] = 1.0
  np.testing.assert_array_equal(canvas, want)
  with pytest.raises(ValueError, match=r"\[N, H, W, 1 or 3\]"):
    R.image_grid(images[..., 0], cols=2)
  path = R.save_image_grids(tmp_path, "samples", {"a": images, "b": 2 * images})
  assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
