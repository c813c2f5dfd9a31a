"""Wall-clock timing of jitted calls for the side-by-side benchmarks in
``benchmarks/``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax


def best_time(fn: Callable[[], Any], repeats: int = 3) -> float:
  """Best-of-``repeats`` wall time of ``fn()`` in seconds, compilation excluded.

  ``fn`` is called once first (compilation and warm-up, not timed); every timed
  call waits for its outputs with ``jax.block_until_ready``, so asynchronous
  dispatch is not mistaken for speed. The minimum is the least noisy estimate on
  a shared machine; compare methods by the ratio of their best times measured in
  the same process.

  Args:
    fn: a function of no arguments returning a pytree of arrays (or anything
      ``block_until_ready`` accepts).
    repeats: timed calls (>= 1).

  Returns:
    The smallest of the ``repeats`` timings, in seconds.
  """
  if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
    raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
  jax.block_until_ready(fn())
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
  return min(times)
