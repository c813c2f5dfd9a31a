"""The shared helper behind most claims' noise: ``jaxpapers.core.ci95_halfwidth``."""

import importlib
import math

import pytest

MODULES = {"report": "jaxpapers.core.report"}


@pytest.fixture(name="report")
def _report():
  return importlib.import_module(MODULES["report"])


def test_ci95_halfwidth(report):
  # t_{0.975, n-1} * sample std / sqrt(n).
  assert report.ci95_halfwidth([1.0, 3.0]) == pytest.approx(12.706 * math.sqrt(2) / math.sqrt(2))
  assert report.ci95_halfwidth([1.0, 2.0, 4.0]) == pytest.approx(
    4.303 * math.sqrt(7 / 3) / math.sqrt(3)
  )
  x = [float(i) for i in range(12)]  # n > 10: the normal quantile
  assert report.ci95_halfwidth(x) == pytest.approx(1.96 * math.sqrt(13.0) / math.sqrt(12))
  assert math.isnan(report.ci95_halfwidth([1.0]))
