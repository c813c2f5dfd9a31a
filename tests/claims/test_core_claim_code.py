"""The shared helpers behind most claims' noise:
``jaxpapers.core.ci95_halfwidth`` and the ``±`` of a bootstrap interval
(``BootstrapInterval.half_width``)."""

import importlib
import math

import numpy as np
import pytest

MODULES = {"report": "jaxpapers.core.report", "stats": "jaxpapers.core.stats"}


@pytest.fixture(name="report")
def _report():
  return importlib.import_module(MODULES["report"])


@pytest.fixture(name="stats")
def _stats():
  return importlib.import_module(MODULES["stats"])


def test_ci95_halfwidth(report):
  # t_{0.975, n-1} * sample std / sqrt(n).
  assert report.ci95_halfwidth([1.0, 3.0]) == pytest.approx(
    12.706 * math.sqrt(2) / math.sqrt(2)
  )
  assert report.ci95_halfwidth([1.0, 2.0, 4.0]) == pytest.approx(
    4.303 * math.sqrt(7 / 3) / math.sqrt(3)
  )
  x = [float(i) for i in range(12)]  # n > 10: the normal quantile
  assert report.ci95_halfwidth(x) == pytest.approx(
    1.96 * math.sqrt(13.0) / math.sqrt(12)
  )
  assert math.isnan(report.ci95_halfwidth([1.0]))


def test_bootstrap_half_width(stats):
  def interval(estimate, lo, hi):
    return stats.BootstrapInterval(estimate, lo, hi, 10, 100, 0.95, np.empty(0))

  # Asymmetric intervals: the wider side is the half-width, whichever side it is
  # on.
  assert interval(0.5, 0.4, 0.9).half_width == pytest.approx(0.4)
  assert interval(0.5, 0.1, 0.6).half_width == pytest.approx(0.4)
  assert interval(0.5, 0.5, 0.5).half_width == 0.0
  # n < 2: no spread
  assert interval(0.5, float("nan"), float("nan")).half_width is None
  # On data: 0/1 flags against zeros (a fraction's interval).
  b = stats.paired_bootstrap(
    np.array([1.0, 0, 0, 1, 1]), np.zeros(5), n_resamples=200, seed=0
  )
  assert b.half_width == pytest.approx(
    max(b.estimate - b.lo, b.hi - b.estimate)
  )
