"""The committed results stay small, with readable file names.

A run's folder copied into ``experiments/<paper>/results/`` as written
(percent-encoded cell names of the earlier naming, every float of every sample,
full-colour figures) fails here; ``python -m experiments.compact_results
experiments/<paper>/results`` makes it fit.
"""

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Bytes of every committed file under experiments/*/results/ together (5 MB): a
# new run's results make room by dropping what no report, claim or resumed run
# reads.
LIMIT_BYTES = 5_000_000


def _committed() -> list[pathlib.Path]:
  try:
    out = subprocess.run(
      ["git", "ls-files", "-z", "--", "experiments/*/results/**"],
      cwd=ROOT,
      capture_output=True,
      check=True,
      text=True,
    ).stdout
  except (OSError, subprocess.CalledProcessError):
    pytest.skip("not a git checkout: the committed files are unknown")
  return [ROOT / p for p in out.split("\0") if p and (ROOT / p).is_file()]


def test_committed_results_fit_in_the_size_limit():
  files = _committed()
  assert files, "no committed results found"
  sizes = sorted(
    ((f.stat().st_size, f.relative_to(ROOT)) for f in files), reverse=True
  )
  total = sum(s for s, _ in sizes)
  largest = ", ".join(f"{p} ({s / 1e3:.0f} kB)" for s, p in sizes[:5])
  assert total <= LIMIT_BYTES, (
    f"committed results hold {total / 1e6:.2f} MB > {LIMIT_BYTES / 1e6:.2f} "
    f"MB; largest: {largest}. Run python -m experiments.compact_results on "
    "the new folders."
  )


def test_committed_results_have_readable_file_names():
  encoded = [str(f.relative_to(ROOT)) for f in _committed() if "%" in f.name]
  assert not encoded, (
    f"{len(encoded)} committed results files have percent-encoded names (e.g. "
    f"{encoded[:3]}); python -m experiments.compact_results --rename_only "
    "<folder> renames them"
  )
