"""benchmarks.run_all: the performance table from benchmark records, and every
benchmark's --quick."""

import importlib
import json
import pathlib

import pytest

from benchmarks import run_all

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _record(name, summary, command=None, quick=True):
  return {
    "benchmark": name,
    "command": command
    or f"python -m benchmarks.{name}" + (" --quick" if quick else ""),
    "quick": quick,
    "host": {"cpu_count": 2},
    "rows": [],
    "summary": summary,
  }


def test_performance_table_renders_sorted_and_formatted(tmp_path):
  (tmp_path / "zeta.json").write_text(
    json.dumps(
      _record(
        "zeta",
        [
          {
            "name": "b vs a",
            "value": 1.23456,
            "unit": "x",
            "target": ">= 1.5",
            "met": False,
          },
          {
            "name": "time | ms",
            "value": 12.345,
            "unit": "ms",
            "target": "< 5",
            "met": False,
          },
        ],
      )
    )
  )
  (tmp_path / "alpha.json").write_text(
    json.dumps(
      _record(
        "alpha",
        [
          {
            "name": "speed-up",
            "value": 1234.5,
            "unit": "x",
            "target": ">= 100",
            "met": True,
          }
        ],
        quick=False,
      )
    )
  )
  table = run_all.performance_table(tmp_path)
  assert table == (
    "| benchmark | what | measured | target | met | command |\n"
    "|---|---|---|---|---|---|\n"
    "| alpha | speed-up | 1,234x | >= 100x | yes | `python -m "
    "benchmarks.alpha` |\n"
    "| zeta (quick) | b vs a | 1.23x | >= 1.5x | **no** | `python -m "
    "benchmarks.zeta --quick` |\n"
    "| zeta (quick) | time \\| ms | 12.3 ms | < 5 ms | **no** "
    "| `python -m benchmarks.zeta --quick` |\n"
  )
  assert run_all.performance_table(tmp_path) == table  # deterministic


def test_performance_table_names_a_bad_file(tmp_path):
  (tmp_path / "bad.json").write_text(json.dumps({"benchmark": "bad"}))
  with pytest.raises(ValueError, match="bad.json.*'command'"):
    run_all.performance_table(tmp_path)
  with pytest.raises(FileNotFoundError, match="results_dir"):
    run_all.performance_table(tmp_path / "missing")


def test_run_all_knows_every_benchmark():
  names = run_all.benchmark_names()
  on_disk = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - {
    "__init__",
    "run_all",
  }
  assert set(names) == {n for n in on_disk if not n.startswith("_")}
  assert names == sorted(names)


@pytest.mark.parametrize("name", run_all.benchmark_names())
def test_every_benchmark_accepts_quick(name):
  """Argument parsing only: ``parse_args(['--quick'])`` of each module (nothing
  is measured)."""
  module = importlib.import_module(f"benchmarks.{name}")
  assert hasattr(module, "parse_args"), (
    f"benchmarks/{name}.py must define parse_args(argv)"
  )
  args = module.parse_args(["--quick"])
  assert args.quick is True
  assert (
    pathlib.Path(args.out)
    == pathlib.Path("benchmarks/results") / f"{name}.json"
  )
  assert module.parse_args([]).quick is False
  assert callable(module.main)


@pytest.mark.skipif(
  not run_all._can_fork(), reason=("the forked runner is Linux-only")
)
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_forked_runner_reports_exit_status_and_timeout(monkeypatch):
  """The child's SystemExit code, an exception (1) and a timeout (killed) reach
  the row."""
  import time

  def fake(module, run_name, alter_sys):
    assert run_name == "__main__" and module.startswith("benchmarks.")
    name = module.split(".", 1)[1]
    if name == "sleeps":
      time.sleep(60)
    if name == "raises":
      raise RuntimeError("boom")
    raise SystemExit({"ok": 0, "fails": 3}[name])

  monkeypatch.setattr(run_all.runpy, "run_module", fake)
  rows = run_all.run(
    ["ok", "fails", "raises", "sleeps"], quick=True, timeout=2.0
  )
  assert [r["exit"] for r in rows] == [0, 3, 1, "timeout"]
  assert rows[-1]["seconds"] < 30
