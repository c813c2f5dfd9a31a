"""core.timing.best_time: the warm-up call is not timed and the best of the repeats is kept."""

import time

import pytest

from jaxpapers.core.timing import best_time


def test_warm_up_is_excluded_and_the_minimum_is_returned():
  delays = iter([0.3, 0.05, 0.02, 0.04])  # the first (slow) call is the untimed warm-up
  calls = []

  def fn():
    calls.append(1)
    time.sleep(next(delays))
    return 0

  t = best_time(fn, repeats=3)
  assert len(calls) == 4
  assert 0.02 <= t < 0.04


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True])
def test_bad_repeats(repeats):
  with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
    best_time(lambda: 0, repeats=repeats)
