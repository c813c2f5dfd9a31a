"""Checks an install of jaxpapers on a newer Python: imports, then notebooks.

Run with the interpreter of the environment to check (CI uses a Python 3.13
virtual environment made by .ci/run):

  .venv313/bin/python .ci/py313_check.py [--min-python=3.13] [--no-notebooks]

1. Imports every module of the ``jaxpapers`` and ``experiments`` packages. The
   modules that define absl flags (the experiment binaries) each get a fresh
   process, since their flags would collide in one.
2. Executes every notebook in ``colab/`` on its smoke setting with this
   interpreter as the kernel (``tests/notebook_util.py``), two at a time, each
   in its own process. This is where CI runs the notebooks: the default test
   command leaves them out (they are its ``notebook``-marked tests), so each
   runs once, on Colab's Python.

Exits non-zero on the first failure, naming what failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import importlib.util
import os
import pathlib
import pkgutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("jaxpapers", "experiments")
# The public packages named in the README, imported first so that a failure
# names one of them.
PUBLIC = tuple(
  f"jaxpapers.{name}"
  for name in (
    "core",
    "metrics",
    "hypergraph",
    "lm",
    "soda",
    "panda",
    "flashssm3d",
    "dual_rate",
    "logstop",
    "margins",
    "locos",
  )
)


def _all_modules() -> list[str]:
  names = []
  for package in PACKAGES:
    path = ROOT / package
    names.append(package)
    for info in pkgutil.walk_packages([str(path)], prefix=f"{package}."):
      names.append(info.name)
  return sorted(set(names))


def _defines_flags(name: str) -> bool:
  spec = importlib.util.find_spec(name)
  if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
    return False
  text = pathlib.Path(spec.origin).read_text()
  return "flags.DEFINE" in text or "config_flags.DEFINE" in text


def check_imports() -> None:
  start = time.perf_counter()
  for name in PUBLIC:
    importlib.import_module(name)
  isolated = []
  count = 0
  for name in _all_modules():
    if _defines_flags(name):
      isolated.append(name)
      continue
    importlib.import_module(name)
    count += 1

  def import_alone(name: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", f"import {name}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)

  with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    results = list(pool.map(import_alone, isolated))
  for name, result in zip(isolated, results, strict=True):
    if result.returncode != 0:
      sys.stderr.write(result.stderr)
      raise SystemExit(
        f"import {name} failed on Python {sys.version.split()[0]}"
      )
    count += 1
  print(
    f"imports: {count} modules ({len(isolated)} in their own process) "
    f"in {time.perf_counter() - start:.1f} s",
    flush=True,
  )


def _run_one_notebook(
  path: pathlib.Path,
) -> tuple[pathlib.Path, float, str | None]:
  """Executes one notebook in its own process; returns (path, seconds, error or
  None)."""
  start = time.perf_counter()
  code = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from tests.notebook_util import run_notebook; run_notebook(sys.argv[2], "
    "timeout=600)"
  )
  result = subprocess.run(
    [sys.executable, "-c", code, str(ROOT), str(path)],
    cwd=ROOT,
    capture_output=True,
    text=True,
  )
  error = (
    None
    if result.returncode == 0
    else (result.stderr or result.stdout)[-20000:]
  )
  return path, time.perf_counter() - start, error


def check_notebooks(workers: int = 2) -> None:
  # As in the test suite (tests/conftest.py): the smoke settings are
  # compile-bound. The environment carries the flag into each notebook's process
  # and its kernel.
  sys.path.insert(0, str(ROOT))
  from tests.xla_flags import fast_compile

  os.environ["XLA_FLAGS"] = fast_compile(os.environ.get("XLA_FLAGS", ""))
  notebooks = sorted((ROOT / "colab").glob("*.ipynb"))
  if not notebooks:
    raise SystemExit("no notebooks found in colab/")
  start = time.perf_counter()
  # One process per notebook (a kernel each), `workers` at a time: the notebooks
  # are independent and each is mostly one core's worth of XLA compilation.
  pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
  try:
    for future in [pool.submit(_run_one_notebook, path) for path in notebooks]:
      path, seconds, error = future.result()
      name = path.relative_to(ROOT)
      if error is not None:  # a cell's traceback is in the message
        raise SystemExit(f"notebook {name} failed:\n{error}")
      print(f"notebook {name}: ok in {seconds:.1f} s", flush=True)
  finally:  # on a failure, the notebooks not yet started are not started
    pool.shutdown(wait=True, cancel_futures=True)
  print(
    (
      f"notebooks: {len(notebooks)} in {time.perf_counter() - start:.1f} s "
      f"({workers} at a time)"
    ),
    flush=True,
  )


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--min-python", default="3.13", help=("fail on an older interpreter")
  )
  parser.add_argument(
    "--no-notebooks", action="store_true", help=("only check imports")
  )
  args = parser.parse_args()
  wanted = tuple(int(p) for p in args.min_python.split("."))
  if sys.version_info[: len(wanted)] < wanted:
    raise SystemExit(
      f"Python {args.min_python}+ expected, this is {sys.version.split()[0]}"
    )
  print(f"Python {sys.version.split()[0]} at {sys.executable}", flush=True)
  check_imports()
  if not args.no_notebooks:
    check_notebooks()


if __name__ == "__main__":
  main()
