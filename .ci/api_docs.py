"""Measures how much of jaxpapers' public API is documented and typed.

  .venv/bin/python .ci/api_docs.py [--min=PERCENT] [--list]

The public API is what each package exports: the names in
``jaxpapers.<package>.__all__`` (or, without one, its public attributes defined
inside jaxpapers), and for an exported class its public methods and ``__init__``
defined in jaxpapers. For each such function it checks

* ``Args:`` in the docstring, when the function takes a parameter other than
  self/cls (for a constructor a dataclass generated, the class's ``Attributes:``
  section counts: its fields are the arguments);
* ``Returns:`` (or ``Yields:``) in the docstring, when the return annotation is
  not ``None`` (properties and ``__init__`` are exempt);
* type hints on every parameter (other than self/cls, ``*args`` and
  ``**kwargs``) and on the return (``__init__`` exempt).

It prints one line per package and the totals, and exits non-zero when a total
falls below ``--min`` (CI passes the current floor, so coverage can only rise).
``--list`` names every function that misses something.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pathlib
import pkgutil
import sys
from collections.abc import Callable, Iterator

# The checkout this script belongs to, not whichever jaxpapers is installed:
# Python puts .ci/ (not the repository) first on the path when the script runs.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import jaxpapers

CHECKS = ("args", "returns", "hints")


def _exported(module) -> Iterator[tuple[str, object]]:
  names = getattr(module, "__all__", None)
  if names is None:
    names = [n for n in vars(module) if not n.startswith("_")]
  for name in names:
    obj = getattr(module, name, None)
    owner = getattr(obj, "__module__", "") or ""
    if owner.startswith("jaxpapers") and (
      inspect.isfunction(obj) or inspect.isclass(obj)
    ):
      yield name, obj


def _functions(module) -> Iterator[tuple[str, Callable, str, tuple[str, ...]]]:
  """(qualified name, function, docstring, the sections that document its
  arguments) of each public function and method. A constructor without a
  docstring of its own is documented by its class's; when a dataclass generated
  it, its arguments are the fields, so the class's ``Attributes:`` section
  documents them as well as an ``Args:`` one would."""
  for name, obj in _exported(module):
    if inspect.isfunction(obj):
      yield name, obj, inspect.getdoc(obj) or "", ("Args:",)
      continue
    for attr, member in vars(obj).items():
      if (attr.startswith("_") and attr != "__init__") or isinstance(
        member, property
      ):
        continue
      if isinstance(member, staticmethod | classmethod):
        member = member.__func__
      if inspect.isfunction(member) and member.__module__.startswith(
        "jaxpapers"
      ):
        sections = ("Args:",)
        if (
          attr == "__init__"
          and member.__doc__ is None
          and obj.__doc__ is not None
        ):
          doc = inspect.cleandoc(obj.__doc__)
          if dataclasses.is_dataclass(obj):
            sections = ("Args:", "Attributes:")
        else:
          # inherited from a base class where it has none
          doc = inspect.getdoc(member) or ""
        yield f"{name}.{attr}", member, doc, sections


def _check(
  fn: Callable, doc: str, sections: tuple[str, ...] = ("Args:",)
) -> dict[str, bool | None]:
  """Per check: True (met), False (missed), None (does not apply)."""
  try:
    sig = inspect.signature(fn)
  except (TypeError, ValueError):
    return dict.fromkeys(CHECKS)
  params = [
    p
    for p in sig.parameters.values()
    if p.name not in ("self", "cls")
    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
  ]
  is_init = fn.__name__ == "__init__"
  returns_none = sig.return_annotation in (None, "None")
  out: dict[str, bool | None] = {}
  out["args"] = any(s in doc for s in sections) if params else None
  out["returns"] = (
    None
    if (is_init or returns_none)
    else ("Returns:" in doc or "Yields:" in doc)
  )
  hinted = all(p.annotation is not p.empty for p in params)
  if not is_init:
    hinted = hinted and sig.return_annotation is not sig.empty
  out["hints"] = hinted if (params or not is_init) else None
  return out


def packages() -> list[str]:
  return sorted(
    f"jaxpapers.{m.name}"
    for m in pkgutil.iter_modules(jaxpapers.__path__)
    if m.ispkg and not m.name.startswith("_")
  )


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--min", type=float, default=0.0, help=("floor (percent) for each total")
  )
  parser.add_argument(
    "--list", action="store_true", help=("name every function that misses one")
  )
  args = parser.parse_args(argv)
  totals = {c: [0, 0] for c in CHECKS}
  misses = []
  print(
    f"{'package':32s} {'functions':>9s} " + " ".join(f"{c:>8s}" for c in CHECKS)
  )
  for pkg in packages():
    module = importlib.import_module(pkg)
    counts = {c: [0, 0] for c in CHECKS}
    seen = set()
    n = 0
    for qual, fn, doc, sections in _functions(module):
      key = (getattr(fn, "__module__", ""), getattr(fn, "__qualname__", qual))
      if key in seen:
        continue
      seen.add(key)
      n += 1
      for c, ok in _check(fn, doc, sections).items():
        if ok is None:
          continue
        counts[c][1] += 1
        counts[c][0] += int(ok)
        if not ok:
          misses.append(f"{pkg}.{qual}: {c}")
    for c in CHECKS:
      totals[c][0] += counts[c][0]
      totals[c][1] += counts[c][1]
    cells = " ".join(f"{100 * k / max(m, 1):7.1f}%" for k, m in counts.values())
    print(f"{pkg:32s} {n:9d} {cells}")
  cells = " ".join(f"{100 * k / max(m, 1):7.1f}%" for k, m in totals.values())
  print(f"{'total':32s} {'':9s} {cells}")
  if args.list:
    print("\n".join(misses))
  low = [c for c, (k, m) in totals.items() if 100 * k / max(m, 1) < args.min]
  if low:
    print(f"below the floor of {args.min}%: {', '.join(low)}", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
