"""Shared tables and plots: literal markdown, the power-law fit against closed
forms, PNGs."""

import math

import matplotlib
import numpy as np
import pytest
from scipy import stats as sps

matplotlib.use("Agg")

from jaxpapers import core
from jaxpapers.core import report

PNG = b"\x89PNG\r\n\x1a\n"


def test_markdown_table_literal():
  t = core.markdown_table(
    ["method", "acc", "steps", "note"],
    [
      ["sgd", 0.91234, 100, None],
      ["adam", core.MeanStd(0.5, 0.0123), 200, "a|b"],
      [
        "soda",
        core.MeanStd(0.97321, 0.00412, fmt=".2f", scale=100, suffix="%"),
        True,
        float("nan"),
      ],
    ],
    fmt=[".3g", ".3f", "d", ".3g"],
  )
  assert t == (
    "| method | acc | steps | note |\n"
    "|---|---|---|---|\n"
    "| sgd | 0.912 | 100 | - |\n"
    "| adam | 0.500 ± 0.012 | 200 | a\\|b |\n"
    "| soda | 97.32 ± 0.41% | True | - |"
  )


def test_markdown_table_errors():
  with pytest.raises(ValueError, match=r"rows\[0\] has 1 cells, expected 2"):
    core.markdown_table(["a", "b"], [[1]])
  with pytest.raises(ValueError, match="one per column"):
    core.markdown_table(["a", "b"], [[1, 2]], fmt=[".1f"])
  assert str(core.MeanStd(float("nan"), 1.0)) == "-"
  assert str(core.MeanStd(0.25)) == "0.250"


def test_claims_table_literal():
  claims = (
    dict(
      id="gain",
      statement="PANDA improves accuracy",
      metric="g",
      held=5.18,
      partly=0.0,
      held_when="reaches",
      noise="ci",
      paper_value=5.18,
      paper_text="+5.18 pp",
      unit="pp",
      fmt="+.2f",
    ),
    dict(
      id="fd",
      statement="matches the best FD",
      metric="fd",
      direction="lower",
      held=7.34,
      paper_value=1.0,
      fmt=".1f",
    ),
    dict(id="lvlm", statement="beats LVLMs", paper_text="16%"),
  )
  recs = core.judge_all(claims, {"g": 2.93, "ci": 1.0, "fd": 10.6})
  t = core.claims_table(
    recs, paper="panda", measured_in="abc1234", reasons=False
  )
  assert t == (
    "| paper | claim | paper's number | measured | verdict | measured in |\n"
    "|---|---|---|---|---|---|\n"
    "| panda | PANDA improves accuracy (`gain`) | +5.18 pp | +2.93 ± 1.00 pp "
    "| **partly** | abc1234 |\n"
    "| panda | matches the best FD (`fd`) | 1.0 | 10.6 | **not reproduced** | "
    "abc1234 |\n"
    "| panda | beats LVLMs (`lvlm`) | 16% | – | **inconclusive** | abc1234 |"
  )
  t = core.claims_table(
    core.judge_all(claims[1:2], {"fd": 7.0}, issue_verdicts=False)
  )
  assert t.splitlines()[2] == (
    "| matches the best FD (`fd`) | 1.0 | 7.0 | no verdict (smoke) | "
    "no verdict: this config does not test the claim (smoke setting) |"
  )
  assert core.claims_table([]) == ""
  recs = core.judge_all(
    [
      dict(
        id="a",
        statement="s",
        metric="m",
        held=0.5,
        fmt=".2f",
        baselines={"majority": "maj", "random": "rnd"},
      )
    ],
    {"m": 0.7, "maj": 0.61},
  )
  assert core.claims_table(recs, reasons=False).splitlines() == [
    "| claim | paper's number | measured | verdict | baselines |",
    "|---|---|---|---|---|",
    "| s (`a`) | - | 0.70 | **held** | majority: 0.61; random: – |",
  ]


@pytest.mark.parametrize(
  "a,c", [(1.0, 3.0), (2.0, 0.5), (-0.5, 10.0), (2.4, 1e-3)]
)
def test_fit_power_law_exact(a, c):
  x = np.array([8, 32, 64, 128, 512], np.float64)
  slope, se, icpt = core.fit_power_law(x, c * x**a)
  assert slope == pytest.approx(a, abs=1e-12)
  assert icpt == pytest.approx(math.log(c), abs=1e-10)
  assert se == pytest.approx(0.0, abs=1e-10)


def test_fit_power_law_standard_error_against_closed_form():
  # Residuals +d, -d, +d, -d on log y at log x = 0, 1, 2, 3: closed-form slope
  # and SE.
  lx = np.array([0.0, 1.0, 2.0, 3.0])
  d = 0.1
  ly = 1.5 * lx + 0.2 + d * np.array([1, -1, 1, -1])
  slope, se, icpt = core.fit_power_law(np.exp(lx), np.exp(ly))
  sxx = 5.0  # sum (lx - 1.5)^2
  # = 1.5 - 0.04
  beta = 1.5 + d * float(((lx - 1.5) * np.array([1, -1, 1, -1])).sum()) / sxx
  assert slope == pytest.approx(beta, abs=1e-12)
  resid = ly - (beta * lx + (ly.mean() - beta * lx.mean()))
  assert se == pytest.approx(math.sqrt((resid**2).sum() / 2 / sxx), abs=1e-12)
  assert icpt == pytest.approx(ly.mean() - beta * 1.5, abs=1e-12)


def test_power_law_fit_by_hand():
  # Values (1, 4, 8) at x = (2, 4, 8); the point at x = 1 is below min_x and the
  # non-positive value is dropped. With a = ln 2: ln x = (a, 2a, 3a), ln y = (0,
  # 2a, 3a): slope S_xy / S_xx = 3a^2 / 2a^2 = 1.5, residuals (-a/6, a/3, -a/6),
  # SSR = a^2 / 6, se = sqrt(SSR / (n - 2) / S_xx) = sqrt(1 / 12), ci95 =
  # t_{0.975, 1} se = 12.7062 se.
  fit = core.power_law_fit(
    [1, 2, 4, 8, 16], [100.0, 1.0, 4.0, 8.0, 0.0], min_x=2
  )
  assert fit.n == 3 and fit.slope == pytest.approx(1.5)
  assert fit.intercept == pytest.approx(-4 / 3 * math.log(2))
  assert fit.se == pytest.approx(math.sqrt(1 / 12))
  assert fit.ci95 == pytest.approx(12.7062 * math.sqrt(1 / 12), rel=1e-5)
  # min_x keeps x == min_x (catches >): dropping x = 2 leaves 2 points, slope
  # log2(8/4) = 1.
  two = core.power_law_fit([1, 2, 4, 8], [100.0, 1.0, 4.0, 8.0], min_x=4)
  assert two.n == 2 and two.slope == pytest.approx(1.0)
  assert math.isnan(two.se) and math.isnan(two.ci95)


def test_power_law_fit_against_least_squares():
  """Noisy power law: slope, intercept and se equal ordinary least squares on
  (ln x, ln y)."""
  x = np.array([8, 16, 32, 64, 128, 256], np.float64)
  y = 2e-3 * x**1.5 * np.exp(np.random.default_rng(0).normal(0, 0.1, x.size))
  fit = core.power_law_fit(x, y, min_x=8)
  X = np.stack([np.log(x), np.ones(x.size)], 1)
  beta, res, *_ = np.linalg.lstsq(X, np.log(y), rcond=None)
  se = math.sqrt(res[0] / (x.size - 2) * np.linalg.inv(X.T @ X)[0, 0])
  np.testing.assert_allclose(
    [fit.slope, fit.intercept, fit.se], [*beta, se], rtol=1e-9
  )
  assert fit.ci95 == pytest.approx(sps.t.ppf(0.975, x.size - 2) * se, rel=1e-12)
  assert fit.n == x.size


def test_power_law_fit_too_few_points_is_nan_not_an_error():
  for x, y in (([1, 2], [np.nan, 3.0]), ([4, 4, 4], [1.0, 2.0, 3.0]), ([], [])):
    fit = core.power_law_fit(x, y)
    assert (
      math.isnan(fit.slope)
      and math.isnan(fit.intercept)
      and math.isnan(fit.ci95)
    )
  assert core.power_law_fit([1, 2], [np.nan, 3.0]).n == 1
  with pytest.raises(ValueError, match="same length"):
    core.power_law_fit([1, 2, 3], [1.0, 2.0])


def test_fit_power_law_edge_cases():
  # 2 usable
  slope, se, _ = core.fit_power_law([1, 2, 4, 8], [3, 6, float("nan"), np.inf])
  assert slope == pytest.approx(1.0) and math.isnan(se)
  with pytest.raises(
    ValueError, match=(r"y must be > 0.*\[-1.0\] at indices \[3\]")
  ):
    core.fit_power_law([1, 2, 4, 8], [3, 6, 12, -1])  # never dropped silently
  with pytest.raises(ValueError, match=">= 2 points"):
    core.fit_power_law([4, 4], [1, 2])
  with pytest.raises(ValueError, match="same length"):
    core.fit_power_law([1, 2, 3], [1, 2])


def test_plots_write_png(tmp_path):
  x = np.arange(10)
  rng = np.random.default_rng(0)
  fig = core.curves_plot(
    {"adam": (x, rng.random((3, 10))), "sgd": (x, rng.random(10))},
    xlabel=("step"),
    ylabel=("loss"),
  )
  assert core.save_figure(fig, tmp_path, "curves").read_bytes()[:8] == PNG
  fig = core.grouped_bars(
    ["a", "b", "c"],
    {
      "vanilla": ([1, 2, 3], [0.1, 0.2, 0.1]),
      "panda": ([2, float("nan"), 1], None),
    },
    horizontal_line=0.0,
  )
  assert core.save_figure(fig, tmp_path, "bars").read_bytes()[:8] == PNG
  views = np.array([8, 32, 64, 128, 256])
  fig = core.scaling_plot(
    {
      "ssm": (views, 0.01 * views**1.0),
      "attention": (views, np.array([1e-3, 1e-2, 4e-2, np.nan, np.nan])),
    },
    fit_min_x=32,
  )
  assert fig.scaling_fits["ssm"][0] == pytest.approx(1.0)
  assert (
    "slope 1.00 ± 0.00" in fig.axes[0].get_legend().get_texts()[0].get_text()
  )
  assert core.save_figure(fig, tmp_path, "scaling").read_bytes()[:8] == PNG
  with pytest.raises(ValueError, match="one value per group"):
    core.grouped_bars(["a"], {"x": ([1, 2], None)})
  with pytest.raises(ValueError, match=r"y must be \[seeds, 3\]"):
    core.curves_plot({"x": ([0, 1, 2], [[1, 2]])})
  with pytest.raises(ValueError, match="band must be"):
    core.curves_plot({}, band="iqr")
  matplotlib.pyplot.close("all")


def test_format_cell():
  assert report.format_cell(np.float32(0.5), ".2f") == "0.50"
  assert report.format_cell(np.int64(3)) == "3"
  assert report.format_cell("x\ny") == "x y"


def test_ci95_halfwidth_is_the_student_t_interval():
  scipy_stats = pytest.importorskip("scipy.stats")
  rng = np.random.default_rng(0)
  for n in (2, 3, 5, 10):
    x = rng.normal(size=n)
    t = scipy_stats.t.ppf(0.975, n - 1)
    want = t * np.std(x, ddof=1) / math.sqrt(n)
    assert core.ci95_halfwidth(x) == pytest.approx(want, rel=1e-3)
  x = rng.normal(size=40)  # large samples: the normal quantile
  assert core.ci95_halfwidth(x) == pytest.approx(
    1.96 * np.std(x, ddof=1) / math.sqrt(40)
  )
  assert math.isnan(core.ci95_halfwidth([1.0]))
  assert core.ci95_halfwidth([2.0, 2.0, 2.0]) == 0.0
