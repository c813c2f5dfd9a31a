"""reuse_host_memory: XLA:CPU's temporary buffers are reused instead of
page-faulted in each step."""

import json
import subprocess
import sys

import jax.numpy as jnp
import pytest

from jaxpapers import core
from jaxpapers.core import host_memory

_GLIBC = host_memory.glibc_linux()

# One process per setting: the arena setting only reaches threads that have not
# allocated yet, so it cannot be toggled inside the test process. The program's
# temporary buffer (checked below) is larger than a glibc thread heap (64 MiB),
# which glibc always serves with a fresh mmap.
_PROBE = r"""
import json, resource, sys
from jaxpapers.core import host_memory
status = host_memory.reuse_host_memory() if sys.argv[1] == "on" else None
import jax, jax.numpy as jnp
n, p = 4096, 200_000  # a gather / segment-sum step over many pairs, as in message passing
x = jax.random.normal(jax.random.key(0), (n, 32))
i = jax.random.randint(jax.random.key(1), (p,), 0, n)
j = jnp.sort(jax.random.randint(jax.random.key(2), (p,), 0, n))
def f(x, i, j):
  return jax.ops.segment_sum(jnp.tanh(x[i] + x[j]) * x[i], j, n, indices_are_sorted=True)
c = jax.jit(jax.grad(lambda x, i, j: jnp.sum(f(x, i, j) ** 2))).lower(x, i, j).compile()
temp = c.memory_analysis().temp_size_in_bytes
faults = []
for _ in range(16):
  r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  c(x, i, j).block_until_ready()
  faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
print(json.dumps(dict(temp=temp, faults=faults[4:], status=None if status is None else list(status))))
"""


def _probe(setting):
  out = subprocess.run(
    [sys.executable, "-c", _PROBE, setting],
    capture_output=True,
    text=True,
    check=True,
    timeout=300,
  )
  return json.loads(out.stdout.strip().splitlines()[-1])


# Slow (two processes that each import JAX and run a >64 MiB program, about 20 s
# on 2 cores): the effect on page faults is a performance property, also
# measured side by side by benchmarks/panda_perf.py --host-memory=both; the
# default suite checks that the setting is applied (tests/core/test_app.py) and
# when it refuses (below).
@pytest.mark.slow
@pytest.mark.skipif(
  not _GLIBC,
  reason=("the setting is glibc's; elsewhere it reports not applied"),
)
def test_reuse_removes_the_per_step_page_faults():
  off, on = _probe("off"), _probe("on")
  pages = off["temp"] / 4096
  # the probe must need a buffer glibc would mmap
  assert off["temp"] > 64 * 2**20, off
  assert on["status"] == [True, "one malloc arena, no mmap, no trimming"]
  # Without the setting every step faults its temporary buffer in again. With it
  # the freed buffer is reused; a step may still grow the heap now and then (a
  # small allocation can take a bite out of the freed block), so some steps, not
  # all, must be free of faults.
  assert all(f > 0.5 * pages for f in off["faults"]), (off, pages)
  # typically 10-12 of 12
  assert sum(f < 0.05 * pages for f in on["faults"]) >= 3, (on, pages)


def test_refuses_after_the_backend_started():
  jnp.zeros(1).block_until_ready()  # this process's backend is running
  status = host_memory.reuse_host_memory()
  # an earlier call in this process succeeded before the backend
  if host_memory._applied:
    assert status == (True, "already applied")
  elif _GLIBC:
    assert status.applied is False and "already started" in status.reason
  else:
    assert status.applied is False and "not glibc" in status.reason


def test_exported_from_core():
  assert core.reuse_host_memory is host_memory.reuse_host_memory
  assert core.HostMemory is host_memory.HostMemory
