"""Counting traces of jitted functions, to check that a code path does not
recompile.

``count_traces()`` listens to the trace events JAX reports through its public
``jax.monitoring`` API (one ``/jax/core/compile/jaxpr_trace_duration`` event per
trace of a top-level ``jax.jit`` function, tagged with the function's name), so
it counts traces of library functions the test cannot wrap. For functions the
test defines itself, wrap them in ``chex.assert_max_traces`` instead.

    with count_traces() as traces:
      f(x); f(x + 1)
    assert traces["f"] <= 1
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator

import jax

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"


@contextlib.contextmanager
def count_traces() -> Iterator[collections.Counter]:
  """Yields a Counter of function name -> number of jit traces that happened
  inside the block."""
  counts: collections.Counter = collections.Counter()

  def listener(event: str, duration: float, **kwargs) -> None:
    del duration
    if event == TRACE_EVENT:
      counts[kwargs.get("fun_name", "?")] += 1

  jax.monitoring.register_event_duration_secs_listener(listener)
  try:
    yield counts
  finally:
    jax.monitoring.unregister_event_duration_listener(listener)
