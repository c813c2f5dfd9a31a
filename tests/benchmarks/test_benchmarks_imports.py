"""Benchmarks time the library's public API: no import of experiment code or
private names.

A benchmark that imports ``experiments.*`` or a ``_private`` name of
``jaxpapers`` measures code users do not call, and breaks silently when that
code changes. Parsed with ``ast`` (nothing is imported or run). The benchmarks'
own helpers (``benchmarks._setup``) are allowed.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"

# Benchmarks that may still import named experiment modules while their code
# moves into the library (benchmark file name -> the modules it may import).
# Empty: none.
PENDING: dict[str, set[str]] = {}


OURS = ("jaxpapers", "experiments")


def _private(name: str) -> bool:
  return any(
    part.startswith("_") and not part.startswith("__")
    for part in name.split(".")
  )


def violations(source: str, pending: frozenset[str] = frozenset()) -> list[str]:
  """The forbidden imports and private attribute reads of a benchmark's source.

  Forbidden: importing ``experiments`` or a module under it (unless listed in
  ``pending``), importing a module or a name with a ``_private`` component
  (other than ``benchmarks``'s own helpers and ``__future__``), and reading a
  ``_private`` attribute of a name imported from ``jaxpapers`` or
  ``experiments`` (the standard library's ``os._exit`` is fine).
  """
  tree = ast.parse(source)
  out, modules = [], set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.split(".")[0] in OURS:
          modules.add(alias.asname or alias.name.split(".")[0])
        if (
          alias.name.split(".")[0] == "experiments"
          and alias.name not in pending
        ):
          out.append(f"line {node.lineno}: import {alias.name}")
        elif _private(alias.name) and not alias.name.startswith("benchmarks."):
          out.append(f"line {node.lineno}: import {alias.name}")
    elif isinstance(node, ast.ImportFrom):
      mod = node.module or ""
      if mod == "__future__":
        continue
      own = mod == "benchmarks" or mod.startswith("benchmarks.")
      for alias in node.names:
        if mod.split(".")[0] in OURS:
          modules.add(alias.asname or alias.name)
        if mod.split(".")[0] == "experiments" and mod not in pending:
          out.append(f"line {node.lineno}: from {mod} import {alias.name}")
        elif not own and (_private(mod) or _private(alias.name)):
          out.append(f"line {node.lineno}: from {mod} import {alias.name}")
  for node in ast.walk(tree):
    if (
      isinstance(node, ast.Attribute)
      and isinstance(node.value, ast.Name)
      and node.value.id in modules
      and _private(node.attr)
    ):
      out.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
  return out


@pytest.mark.parametrize(
  "path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name
)
def test_benchmark_imports_only_public_names(path):
  found = violations(path.read_text(), frozenset(PENDING.get(path.name, ())))
  assert not found, f"{path.name} reaches past the public API: {found}"


def test_pending_entries_are_still_needed():
  for name, mods in PENDING.items():
    assert (BENCHMARKS / name).is_file(), (
      f"PENDING names a missing benchmark {name}"
    )
    assert violations((BENCHMARKS / name).read_text()), (
      f"{name} no longer imports {sorted(mods)}: remove it from PENDING"
    )


@pytest.mark.parametrize(
  "source",
  [
    "from experiments.soda import train",
    "import experiments.soda.train as T",
    "from jaxpapers.locos import _scores",
    "from jaxpapers.bayes_memory._prefix import build_prefix_tree",
    "from jaxpapers import bayes_memory as bm\nx = bm._round_up",
    "import jaxpapers.core as core\ncore._private()",
  ],
)
def test_violations_are_found(source):
  assert violations(source)


@pytest.mark.parametrize(
  "source",
  [
    "from __future__ import annotations",
    "from benchmarks._setup import experiment_config",
    "from jaxpapers import bayes_memory as bm\nbm.score_rows_bucketed",
    "def _helper():\n  return 1\n_helper()",
    "import numpy as np\nstate = None\nstate._replace(a=1)",
    "import os\nos._exit(0)",
  ],
)
def test_allowed_sources_pass(source):
  assert not violations(source)
