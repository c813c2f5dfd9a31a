"""Test-wide setup: eight fake CPU devices, set before JAX initialises a backend.

Every sharded code path is exercised against the single-device path on these
devices, so a sharding bug shows up as a numerical mismatch on a laptop.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
  os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402  (must come after the environment is set)

jax.config.update("jax_num_cpu_devices", 8)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def num_devices() -> int:
  return jax.device_count()
