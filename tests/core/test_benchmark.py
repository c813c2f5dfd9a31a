"""core.benchmark: targets, summary entries, the JSON record and the interleaved
timer."""

import json
import time

import jax
import jax.numpy as jnp
import pytest

from jaxpapers.core import benchmark as bench


@pytest.mark.parametrize(
  "value,target,met",
  [
    (1.5, ">= 1.5", True),
    (1.49, ">= 1.5", False),
    (5.0, "< 5", False),
    (4.99, "< 5", True),
    (5.0, "<= 5", True),
    (1.0, "== 1", True),
    (2.0, "== 1", False),
    (0.5, "> 0.5", False),
    (float("nan"), ">= 0", False),
    (float("inf"), ">= 0", False),
  ],
)
def test_target_met(value, target, met):
  assert bench.target_met(value, target) is met


@pytest.mark.parametrize("target", ["1.5", ">= x", "=> 1", "", None])
def test_bad_target(target):
  with pytest.raises(ValueError, match="target must be"):
    bench.target_met(1.0, target)


def test_summary_entry():
  s = bench.summary("a vs b", 2, ">= 1.5", note="n")
  assert s == {
    "name": "a vs b",
    "value": 2.0,
    "unit": "x",
    "target": ">= 1.5",
    "met": True,
    "note": "n",
  }
  assert "note" not in bench.summary("a", 1, "< 2", unit="ms")
  with pytest.raises(ValueError, match="name"):
    bench.summary("", 1, "< 2")


def test_parser_and_record(tmp_path):
  args = bench.parser("demo").parse_args(
    ["--quick", "--out", str(tmp_path / "r" / "demo.json")]
  )
  assert args.quick
  assert (
    bench.parser("demo").parse_args([]).out == "benchmarks/results/demo.json"
  )
  rec = bench.write(
    "demo",
    args,
    rows=[{"case": "x", "best_s": 0.5}],
    summary=[bench.summary("x vs y", 3.0, ">= 2")],
    argv=["--quick"],
  )
  on_disk = json.loads((tmp_path / "r" / "demo.json").read_text())
  assert on_disk == rec
  assert set(rec) == {
    "benchmark",
    "command",
    "quick",
    "host",
    "rows",
    "summary",
  }
  assert rec["benchmark"] == "demo" and rec["quick"] is True
  assert rec["command"].endswith("--quick")
  for key in (
    "cpu_count",
    "platform",
    "jax",
    "shared_host",
    "load_average_at_end",
    "xla_flags",
  ):
    assert key in rec["host"]


def test_record_extra_and_bad_summary(tmp_path):
  args = bench.parser("demo").parse_args(["--out", str(tmp_path / "demo.json")])
  ok = [bench.summary("x vs y", 3.0, ">= 2")]
  rec = bench.write(
    "demo", args, rows=[], summary=ok, argv=[], extra={"config": {"T": 5}}
  )
  assert rec["config"] == {"T": 5}
  assert json.loads((tmp_path / "demo.json").read_text())["config"] == {"T": 5}
  with pytest.raises(ValueError, match="replace the record's own keys.*'rows'"):
    bench.write("demo", args, rows=[], summary=ok, argv=[], extra={"rows": []})
  with pytest.raises(ValueError, match="lacks \\['met'\\]"):
    bench.write(
      "demo",
      args,
      rows=[],
      summary=[{"name": "a", "value": 1, "unit": "x", "target": ">= 1"}],
      argv=[],
    )


def test_side_by_side_interleaves_and_excludes_warm_up():
  calls = []
  delays = {"slow": iter([0.3, 0.02, 0.03]), "fast": iter([0.3, 0.001, 0.002])}

  def make(name):
    def fn():
      calls.append(name)
      time.sleep(next(delays[name]))

    return fn

  t = bench.side_by_side(
    {"slow": make("slow"), "fast": make("fast")}, repeats=2
  )
  assert calls == ["slow", "fast", "slow", "fast", "slow", "fast"]
  assert 0.02 <= t["slow"].best < 0.1 and t["fast"].best < 0.02
  assert len(t["slow"].wall) == 2 and t["slow"].as_dict()["repeats"] == 2
  with pytest.raises(ValueError, match="repeats"):
    bench.side_by_side({"a": lambda: 0}, repeats=0)
  row = bench.timing_row("c", t, B=4)
  assert row["case"] == "c" and row["B"] == 4
  assert row["slow_best_s"] == t["slow"].best and row["fast_repeats"] == 2


def test_count_compilations():
  f = jax.jit(lambda x: x * 3 + 1)
  x, y, z = jnp.ones(5), jnp.zeros(5), jnp.ones(7)
  f(x)
  with bench.count_compilations() as c:
    f(y)
  assert c.count == 0
  with bench.count_compilations() as c:
    f(z)  # a new shape
  assert c.count == 1 and c.seconds > 0
  f(jnp.ones(9))  # outside the block: not counted
  assert c.count == 1


def test_record_command_names_the_xla_flags_it_ran_under(tmp_path):
  args = bench.parser("demo").parse_args(["--out", str(tmp_path / "demo.json")])
  ok = [bench.summary("x vs y", 3.0, ">= 2")]
  host = {
    **bench.host_info(),
    "xla_flags": ("--xla_cpu_multi_thread_eigen=false a=1"),
  }
  rec = bench.write(
    "demo", args, rows=[], summary=ok, argv=["--n=3"], host=host
  )
  assert rec["command"].startswith(
    "XLA_FLAGS='--xla_cpu_multi_thread_eigen=false a=1' python "
  )
  assert rec["command"].endswith("--n=3")
  rec = bench.write(
    "demo", args, rows=[], summary=ok, argv=["--n=3"], host={"xla_flags": ("")}
  )
  assert rec["command"].startswith("python ")
