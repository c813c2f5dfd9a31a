"""Throughput of batched, jitted LogSTOP scoring vs a plain-Python recursive scorer.

  python benchmarks/logstop_throughput.py            # full table (a few minutes)
  python benchmarks/logstop_throughput.py --quick    # seconds

Measures scored traces per second for `jaxpapers.logstop.score` under jit on a
batch of traces (float32) and for `jaxpapers.logstop.reference_scores` (plain
Python, memoised per (subformula, t), one trace at a time), side by side in one
run, over trace lengths T and formulas of growing size, and fits the growth of
time per trace in T (slope of log time vs log T; 1.0 is linear). Timings on a
shared CPU are noisy; the ratio measured in one run is the meaningful number.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import logstop as L

FORMULAS = ("a U b", "G(a -> F b)", "F(a & X b & X X c)")
GROWING = (
  "a U b",
  "(a U b) & G(a -> F c)",
  "(a U b) & G(a -> F c) & F(b & X X c)",
  "(a U b) & G(a -> F c) & F(b & X X c) & (!c U (a | G b))",
)


def _traces(rng, B, T):
  return {n: rng.uniform(size=(B, T)).astype(np.float32) for n in "abc"}


def time_jax(formula, props, window, min_time):
  fn = jax.jit(lambda p: L.score(formula, p, window=window))
  p = {k: jnp.asarray(v) for k, v in props.items()}
  fn(p).block_until_ready()  # compile
  reps, start = 0, time.perf_counter()
  while True:
    fn(p).block_until_ready()
    reps += 1
    el = time.perf_counter() - start
    if el >= min_time:
      return el / reps


def time_python(formula, props, window, min_time, max_traces):
  n, start = 0, time.perf_counter()
  B = next(iter(props.values())).shape[0]
  while True:
    L.reference_scores(formula, {k: v[n % B].tolist() for k, v in props.items()}, window=window)
    n += 1
    el = time.perf_counter() - start
    if el >= min_time or n >= max_traces:
      return el / n


def slope(Ts, secs):
  return float(np.polyfit(np.log(Ts), np.log(secs), 1)[0])


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--out", default=None, help="optional JSON output path")
  args = ap.parse_args()
  t_start = time.perf_counter()
  Ts = (30, 300, 3000) if args.quick else (30, 100, 300, 1000, 3000, 10000)
  windows = (1,) if args.quick else (1, 5)
  min_time = 0.05 if args.quick else 0.5
  rng = np.random.default_rng(0)
  rows = []
  print(f"devices: {jax.devices()}")
  print("| formula | w | T | batch | JAX traces/s | Python traces/s | ratio |")
  print("|---|---|---|---|---|---|---|")
  for formula in FORMULAS:
    for w in windows:
      for T in Ts:
        B = max(16, min(1024, 300_000 // T))
        props = _traces(rng, B, T)
        tj = time_jax(formula, props, w, min_time) / B
        tp = time_python(formula, props, w, min_time, max_traces=200)
        rows.append(
          dict(formula=formula, window=w, T=T, batch=B, jax_per_trace=tj, python_per_trace=tp)
        )
        print(
          f"| `{formula}` | {w} | {T} | {B} | {1 / tj:,.0f} | {1 / tp:,.1f} | {tp / tj:,.0f}x |",
          flush=True,
        )
  print("\nGrowth of time per trace in T (log-log slope; 1 = linear):")
  growth = {}
  for formula in FORMULAS:
    for w in windows:
      sel = [r for r in rows if r["formula"] == formula and r["window"] == w]
      big = [r for r in sel if r["T"] >= 300] or sel
      growth[f"{formula} w={w}"] = {
        "jax": slope([r["T"] for r in big], [r["jax_per_trace"] for r in big]),
        "python": slope([r["T"] for r in sel], [r["python_per_trace"] for r in sel]),
      }
      g = growth[f"{formula} w={w}"]
      print(f"  `{formula}` w={w}: JAX (T>=300) {g['jax']:.2f}, Python {g['python']:.2f}")
  print("\nGrowing formulas (T=1000, w=1):")
  print("| size | JAX traces/s | Python traces/s |")
  print("|---|---|---|")
  size_rows = []
  T = 300 if args.quick else 1000
  for formula in GROWING:
    props = _traces(rng, 256, T)
    tj = time_jax(formula, props, 1, min_time) / 256
    tp = time_python(formula, props, 1, min_time, max_traces=100)
    size_rows.append(
      dict(formula=formula, size=L.size(L.parse(formula)), jax_per_trace=tj, python_per_trace=tp)
    )
    print(f"| {L.size(L.parse(formula))} | {1 / tj:,.0f} | {1 / tp:,.1f} |", flush=True)
  if args.out:
    from jaxpapers.core import results as results_lib

    record = dict(
      command=results_lib.command_line(),
      git=results_lib.git_info(),
      environment=results_lib.environment_info(),
      xla_flags=os.environ.get("XLA_FLAGS", ""),
      load_average=os.getloadavg(),  # the host is shared: the ratios are the meaningful part
      wall_time_s=time.perf_counter() - t_start,
      rows=rows,
      growth=growth,
      sizes=size_rows,
    )
    with open(args.out, "w") as fh:
      json.dump(results_lib.to_jsonable(record), fh, indent=1)


if __name__ == "__main__":
  main()
