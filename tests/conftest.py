"""Test-wide setup: eight fake CPU devices and a persistent compilation cache.

Every sharded code path is exercised against the single-device path on these
devices, so a sharding bug shows up as a numerical mismatch on a laptop.

Compiled XLA executables are kept in JAX's persistent compilation cache
(``.pytest_cache/jax`` in the repository root, or ``$JAXPAPERS_TEST_JAX_CACHE``;
set that variable to ``0`` to turn the cache off, delete the folder to empty
it). Most of the suite's time is XLA compilation, so a second run, the other
xdist worker and the notebook kernels (which inherit the environment) reuse
compilations instead of redoing them. The cache is size-capped (4 GiB, least
recently used entries go first), which makes JAX hold a file lock (``filelock``,
installed with the ``lm`` extra) around every read and write, so concurrent
workers never see half-written entries; without ``filelock`` the cache stays
off.
"""

import os
import pathlib

from tests import xla_flags

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
  _flags += " --xla_force_host_platform_device_count=8"
# Compile-bound tiny programs: no LLVM optimisation passes (see
# tests/xla_flags.py).
os.environ["XLA_FLAGS"] = xla_flags.fast_compile(_flags.strip())

_cache = os.environ.get(
  "JAXPAPERS_TEST_JAX_CACHE",
  str(pathlib.Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"),
)
try:
  import filelock  # noqa: F401  (JAX locks the cache folder with it once a size cap is set)
except ImportError:  # no safe sharing between processes: no cache
  _cache = ""
if _cache not in ("", "0") and "JAX_COMPILATION_CACHE_DIR" not in os.environ:
  # Environment variables, so that the notebook kernels the tests start share
  # the cache.
  os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
  # Only programs that took >= 1 s to compile: the size cap makes JAX stat every
  # entry on each write, so caching the thousands of tiny test programs would
  # cost more than it saves.
  os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "1"
  os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(4 * 2**30)

import jax  # noqa: E402  (must come after the environment is set)

jax.config.update("jax_num_cpu_devices", 8)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def num_devices() -> int:
  return jax.device_count()
