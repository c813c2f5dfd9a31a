"""core.timing.best_time: the warm-up call is not timed and the best of the
repeats is kept."""

import pytest

from jaxpapers.core.timing import best_time


def test_warm_up_is_excluded_and_the_minimum_is_returned(monkeypatch):
  """On a fake clock that each call advances by its own duration, so the host's
  load cannot change the answer: the first (slow) call is the untimed warm-up,
  the minimum is returned."""
  from jaxpapers.core import timing

  now = [0.0]
  monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])
  delays = iter([0.3, 0.05, 0.02, 0.04])
  calls = []

  def fn():
    calls.append(1)
    now[0] += next(delays)
    return 0

  t = best_time(fn, repeats=3)
  assert len(calls) == 4
  assert t == pytest.approx(0.02)


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True])
def test_bad_repeats(repeats):
  with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
    best_time(lambda: 0, repeats=repeats)
