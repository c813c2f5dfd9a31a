r"""Registers an experiment's claims: writes
``experiments/<paper>/claims.lock.json``.

Usage::

  python -m experiments.register lanr                # one paper
  python -m experiments.register --all               # every paper
  python -m experiments.register --all --check       # exit 1 if a lock differs from its configs

The lock holds the claims of every config in ``experiments/<paper>/configs/``
that issues verdicts (``default.py``, ``full.py`` and the other non-smoke
configs), in canonical JSON with their SHA-256
(:mod:`jaxpapers.core.registration`). Commit it **before** the run that it
decides: a run whose claims are not in the committed lock refuses to start
without ``--post_hoc``, and a run is *registered* only when the lock's commit
precedes it.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
from collections.abc import Sequence

from absl import app, flags

from jaxpapers.core import registration

FLAGS = flags.FLAGS

ROOT = pathlib.Path(__file__).resolve().parent


def papers(package_dir: pathlib.Path = ROOT) -> list[str]:
  """The experiment folders (those with ``main.py`` and
  ``configs/default.py``)."""
  return sorted(
    d.name
    for d in package_dir.iterdir()
    if d.is_dir()
    and (d / "main.py").exists()
    and (d / "configs" / "default.py").exists()
  )


def verdict_configs(
  paper: str, *, package: str = "experiments"
) -> dict[str, list]:
  """``{config name: claims}`` of the paper's configs that issue verdicts."""
  out = {}
  for path in sorted((ROOT.parent / package / paper / "configs").glob("*.py")):
    if path.stem.startswith("_"):
      continue
    module = importlib.import_module(f"{package}.{paper}.configs.{path.stem}")
    if not hasattr(module, "get_config"):
      continue
    config = module.get_config()
    if registration.issues_verdicts(config):
      out[path.stem] = config.get("claims")
  return out


def lock_for(paper: str) -> dict:
  """The lock record the paper's configs give now."""
  configs = verdict_configs(paper)
  if not configs:
    raise ValueError(
      f"{paper}: no config issues verdicts (nothing to register)"
    )
  return registration.lock_record(paper, configs)


def lock_path(paper: str) -> pathlib.Path:
  return ROOT / paper / registration.LOCK_FILE


def register(paper: str, *, check: bool = False) -> tuple[pathlib.Path, bool]:
  """Writes (or with ``check``, compares) the paper's lock; returns (path, up to
  date)."""
  record = lock_for(paper)
  path = lock_path(paper)
  current = json.loads(path.read_text()) if path.exists() else None
  fresh = current is not None and current.get("sha256") == record["sha256"]
  if not check and not fresh:
    registration.write_lock(path, record)
  return path, fresh


def main(argv: Sequence[str]) -> None:
  names = list(argv[1:])
  if FLAGS["all"].value:
    if names:
      raise app.UsageError("give paper names or --all, not both")
    names = papers()
  if not names:
    raise app.UsageError("name the papers to register (or --all)")
  unknown = sorted(set(names) - set(papers()))
  if unknown:
    raise app.UsageError(f"unknown paper(s) {unknown}; available: {papers()}")
  stale = []
  for name in names:
    path, fresh = register(name, check=FLAGS.check)
    rel = path.relative_to(ROOT.parent)
    if FLAGS.check:
      print(
        f"{rel}: "
        f"{'up to date' if fresh else 'STALE (run python -m experiments.register)'}"
      )
      if not fresh:
        stale.append(name)
    else:
      print(
        f"{rel}: {'unchanged' if fresh else 'written'}; "
        "commit it before the run it decides"
      )
  if stale:
    sys.exit(1)


if __name__ == "__main__":
  flags.DEFINE_bool(
    "all", False, "Register every experiment that declares claims."
  )
  flags.DEFINE_bool(
    "check",
    False,
    "Write nothing; exit 1 if a lock is missing or differs from the configs.",
  )
  app.run(main)
