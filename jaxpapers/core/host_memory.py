"""Keep freed host memory in the process so XLA:CPU reuses its buffers from step
to step.

XLA:CPU allocates the temporary buffer of every execution of a compiled program
with ``malloc`` and frees it when the execution ends. glibc serves a block above
its mmap threshold (at most 32 MiB), or one too large for a thread's own arena
(64 MiB heaps), with a fresh anonymous ``mmap`` and returns it with ``munmap``
on ``free``. The next execution then touches new pages, and the kernel
zero-fills every one of them: a page fault per 4 KiB of temporary buffer, every
step. For a program whose temporaries are large next to its arithmetic (a
message-passing step over many incidence pairs) this dominates the step.
Measured on a 2-core x86 host with XLA on one thread (``benchmarks/panda_perf.py
--host-memory=both``, committed as
``experiments/panda/results/perf/perf_host_memory.json``): PANDA-HGNN's training
step on email-EU takes 20,007 minor page faults and 81 ms of CPU time per step
with glibc's defaults, none and 37 ms with the settings below; steps whose
temporaries stay below the threshold do not change.

:func:`reuse_host_memory` sets three ``mallopt`` parameters: one arena for all
threads (``M_ARENA_MAX=1``, so XLA's worker threads allocate from the main heap,
which can grow without bound), no ``mmap`` for large blocks (``M_MMAP_MAX=0``)
and no trimming of the heap's top (``M_TRIM_THRESHOLD`` at its maximum, 2 GiB).
Freed temporaries then stay in the heap and the next step mostly gets the same,
already-mapped pages (a small allocation can take a bite out of a freed block,
and then one step grows the heap once more). The price is that the process keeps
its peak host memory until it exits, which is what a training process does
anyway.

The arena setting only reaches threads that have not allocated yet, so the call
must come before anything starts a JAX backend (the first array or computation):
:mod:`jaxpapers.core.app` makes it first thing in every experiment binary.
Numerics do not change; only where buffers live. Device memory (GPU/TPU) is
untouched: only host allocations go through ``malloc``.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from typing import NamedTuple

__all__ = ["HostMemory", "reuse_host_memory"]

# glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_INT_MAX = 2**31 - 1

_applied = False


class HostMemory(NamedTuple):
  """What :func:`reuse_host_memory` did: ``applied`` and a one-line
  ``reason``."""

  applied: bool
  reason: str


def glibc_linux() -> bool:
  """Whether this process runs on Linux with glibc, the only place the setting
  exists."""
  return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _backend_started() -> bool:
  try:
    from jax._src import xla_bridge
  except ImportError:  # pragma: no cover - jax is a hard dependency
    return False
  check = getattr(xla_bridge, "backends_are_initialized", None)
  return bool(check()) if check is not None else False


def reuse_host_memory() -> HostMemory:
  """Configures glibc ``malloc`` so freed host buffers are reused, not unmapped
  (see module doc).

  Returns:
    ``HostMemory(applied, reason)``. ``applied`` is False, and the process is
    left as it was, when the C library is not glibc on Linux, when a JAX backend
    has already started (its worker threads own their arenas; call this before
    the first JAX array or computation), or when ``mallopt`` refuses a setting.
    A second call after a successful one returns ``applied=True`` without
    changing anything.
  """
  global _applied
  if _applied:
    return HostMemory(True, "already applied")
  if not glibc_linux():
    return HostMemory(
      False, f"not glibc on Linux ({sys.platform}, {platform.libc_ver()[0]!r})"
    )
  if _backend_started():
    return HostMemory(
      False,
      (
        "a JAX backend has already started; call reuse_host_memory() before "
        "the first array"
      ),
    )
  try:
    libc = ctypes.CDLL("libc.so.6")
  except OSError as e:  # pragma: no cover - glibc without the usual soname
    return HostMemory(False, f"cannot load libc.so.6: {e}")
  for name, param, value in (
    ("M_ARENA_MAX", _M_ARENA_MAX, 1),
    ("M_MMAP_MAX", _M_MMAP_MAX, 0),
    ("M_TRIM_THRESHOLD", _M_TRIM_THRESHOLD, _INT_MAX),
  ):
    if (
      libc.mallopt(param, value) != 1
    ):  # pragma: no cover - glibc accepts all three
      return HostMemory(False, f"mallopt({name}, {value}) was refused")
  _applied = True
  return HostMemory(True, "one malloc arena, no mmap, no trimming")
