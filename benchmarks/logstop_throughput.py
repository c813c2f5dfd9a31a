"""Throughput of batched, jitted LogSTOP scoring vs the plain-Python recursive scorer.

  python -m benchmarks.logstop_throughput            # full table (several minutes)
  python -m benchmarks.logstop_throughput --quick    # T = 50, 500, 5000, w = 1 and 64 (~30 s)

The quick mode times ``score`` at T = 50, 500 and 5,000 and w = 1 and 64, ``scores`` at T =
5,000 only, and the cost rows of ``a U b`` only: compiling a program costs more CPU than all
of its timed calls.

Measured side by side in one process, warm-up (compilation) excluded, min and median of
repeats, over trace lengths T, windows w and formulas:

* **throughput**: scored traces per second of ``jaxpapers.logstop.score`` under ``jax.jit``
  on a batch of float32 traces (about 300k frames per call) and of
  ``jaxpapers.logstop.reference_scores`` (plain Python, memoised per (subformula, t), one
  trace at a time: the authors' recursive scorer transcribed); wall and CPU time (the CPU time
  of the threads XLA uses, against Python's one). The traces are JAX arrays on the device
  before the clock starts, as in a training or evaluation loop that scores its model's
  outputs, so no call pays a host-to-device copy; the time includes dispatch and, since the
  inputs are traced under ``jax.jit``, the in-program range check of every score;
* **where the time of score goes** (``cost`` rows): XLA's cost analysis of ``score`` and of
  its range check, and CPU time per frame of ``score``, the range check as a pass of its own
  and a copy of the inputs, side by side (at w = 1 ``score`` takes the check in the loop of
  its sequential scan, so the check alone is what that saved);
* **growth in T**: the log-log slope of JAX time per trace against T (1 = linear);
* **cost of the window**: time at w = 64 over w = 1, for ``score`` (t = 0) and ``scores``
  (every t), at every T;
* **formulas x traces in one program**: ``score_many`` of all formulas against one ``score``
  call per formula;
* **the fixed cost of a call** (``call`` in the ``cost`` rows, ``call_costs``): ``score`` on 2
  traces beside a jitted function with and without one checkify ``debug_check``.

What bounds the speed-up (the record's notes give the numbers of the run): ``score`` computes
probabilities in linear space (each with its complement, see ``jaxpapers/logstop/_engine.py``)
and takes one log per trace, falling back to the log-space kernel only where a probability
underflows. An exact log-space kernel needs per frame the logs of the atoms (``log p`` and
``log1p(-p)``) and a ``logaddexp`` per step of ``U`` / ``F``; ``host_costs`` times one of each on
this host, which against the Python scorer's microseconds per frame sets that kernel's ceiling
(below 1,000x here), so the record keeps it beside the linear kernel's cost: XLA's count of
bytes moved per frame (``cost``) at this host's copy rate. ``score`` (t = 0)
at w > 1 sums blocks of w frames before anything else, so it is cheaper than at w = 1.
``scores`` (every t) at w > 1 adds window sums by blocked scans along the w frames of a block
(no differences of prefix sums, which would cancel): O(log_8 w) passes.

Where the targets stand (the committed record has the numbers). ``score`` under ``jax.jit``
range-checks traced scores (every frame in [0, 1], no NaN; the policy for bad input under
jit). As a pass of its own the check reads every input once more and costs about a copy of
the inputs (the ``cost`` rows time it); at w = 1 the sequential scan now takes it in its loop,
where the frames are read anyway (``0 <= v <= 1`` and-ed into a carry per trace), which
removed that pass (XLA's cost analysis of ``score`` at [600, 500], bytes per frame: ``a U b``
55.7 -> 46.5, ``F(a & X b & X X c)`` 97.7 -> 84.8); w > 1, the blocked scans and
``clip_eps`` (which must see the unclipped values) keep the pass. The fallback ``lax.cond`` costs nothing
measurable: XLA's CPU backend runs one branch and hands it the parameters without a copy, and
its predicate is a comparison of the [N] results. The log of the result fuses into the last
reduction. The kernel moves the inputs once into the time-major view (a transpose) and runs
one loop down it (the sequential scan; chains longer than 4,096 steps, the blocked scans).

What the kernel of ``score`` costs (side by side in one process, T = 500, 600 traces, CPU-ns
per frame min / median, the "prob" kernel with the log and the fallback's test, on the shared
2-core host at load average about 21): ``a U b`` 1.68 / 2.76, of which the transposes of its
two inputs into the view alone take 1.33 / 2.02; the range check 0.49 / 0.82. So the loop
itself is now the smaller part, and the transposes (XLA's CPU transpose runs at about 1.5x a
copy) the larger. What made the loop cheap: the floors of the "prob" algebra (a product of
positives stays >= tiny) are min / max of nonnegative floats, which XLA's CPU backend lowers
with a NaN test and a blend around every instruction (a ``vcmpunordps``, a ``vpternlogd`` and a
masked move beside each ``vminps`` / ``vmaxps``); they are now integer min / max of the floats'
bits (equal for nonnegative floats), which took the unrolled loop body of ``a U b`` from 45 to
18 vector instructions per step (XLA's dump of the compiled kernel), and the kernel from 2.52 /
3.33 to 1.68 / 2.76 CPU-ns per frame at the same load. The loop also unrolls a divisor of the
chain length where one lies in [16, 32] (T = 500: 25 steps), so that the view is a plain
transpose without padding and the steps need no end-of-trace masks. Not adopted yet: a loop
that reads each iteration's 25 frames straight from the [N, T] inputs (strided loads, no
transpose) took 1.15 / 2.17 CPU-ns per frame against 1.32 / 2.72 for transpose-then-scan
(``a U b``'s bare recursion with the floors, T = 500, load average about 33): 13 % (min) and
20 % (median) less, not yet confirmed on a quiet host.

``scores`` (every t) at w > 1 adds the window sums: two blocked scans along the w frames of a
block of the view per atom (``_block_sums`` in ``jaxpapers/logstop/_engine.py``), on chains of
n = T / w steps whose fixed costs grow relative to the work, so its ratio to w = 1 stays above
1.2 (largest at T = 5,000, where n = 79 steps is not a whole number of chunks and the view is
padded). Measured (T = 5,000, 60 traces, one atom, CPU-ns per frame min / median, load average
about 30): the window means at w = 1 (the transpose alone) 0.39 / 0.57, at w = 64 2.13 / 2.66;
an alternative, the input moved once into a block-major layout [w, blocks, N]
and the suffix and head sums taken by two ``lax.scan``s down its w rows (8 rows per loop
iteration), took 3.65 / 4.13 at w = 64: XLA zero-fills each scan's stacked output and copies
that buffer before the loop (two more full passes), and the loop's per-iteration cost is paid
w / 8 times per scan. Sums as differences of prefix sums would take one pass, but a window of
small scores beside large ones would lose its digits (the tests forbid it). The sequential
scan returning every step's value was measured 4-5x slower than the blocked scans at T = 500
(28-41 against 6-8 CPU-ns per frame), because XLA's CPU backend emits every returned row of
an unrolled iteration as its own expression that recomputes the steps before it, and
``lax.optimization_barrier`` (which would materialise each step) does not survive into its
compiled program.

Growth in T. With the quick mode's T = 50, 500, 5,000 (equally spaced in log T) the
least-squares slope is (log t(5,000) - log t(50)) / log 100 whatever T = 500 gives, so the
slope <= 1.05 target asks that a frame at T = 5,000 cost at most 100^0.05 = 1.26x a frame at
T = 50. A frame at T = 50 is cheap per frame only as far as the fixed cost of a call allows
(1,024 traces x 50 frames: the 137 CPU-us of a call in the committed quick record are 2.7 ns
per frame), so every cut of the fixed cost raises the slope. What grows: at T = 5,000 the
chain of 5,000 steps is past the sequential scan's rounding bound (n <= 4,096, see
``sequential_fits`` in ``jaxpapers/logstop/_engine.py``) and ``score`` takes the blocked scans,
on 60 traces. In the committed quick record ``G(a -> F b)`` costs 9.35 ns per frame at T = 50,
3.64 at T = 500 and 15.0 at T = 5,000 (medians; 8.27, 3.59 and 11.5 from the minimum times),
hence the slope 1.10 (1.07 from the minima). Measured without adoption: the sequential scan
extended to such chains with the same worst-case rounding as the blocked scans (the carry
moved once per iteration of 25 steps by the iteration's composed maps y -> A + B y, exact
against the float64 recursion), side by side with the blocked scans at T = 5,000, 60 traces,
41 alternating calls, CPU-ns per frame min / median, on the shared host at load average about
25: ``a U b`` 4.63 / 8.63 against 3.55 / 4.94, ``G(a -> F b)`` 5.15 / 8.04 against 6.00 /
8.06, ``F(a & X b & X X c)`` 9.23 / 12.52 against 7.24 / 8.66. With 60 traces as the lanes of
a step the loop is no faster than the blocked scans, so chains past 4,096 steps keep them;
the T-slope target is not met by a kernel change that was measured, and a quiet host's record
should say how much of the gap is the load.

Every call also pays a fixed cost that no kernel change removes: the range check registers a
checkify ``debug_check`` (so that ``checkify`` can surface bad scores under jit), whose error
effect makes JAX dispatch every call of the program by its Python path instead of the C++
fast path; ``call_costs`` measures about 100 CPU-us more per call than the same program
without the check, i.e. about 0.3 ns of the 3.4 ns per frame that 1,000x allows at the
benchmark's 300k frames per call, and a larger share at T = 50 (the note gives the numbers of
the run). Removing it would change the project's policy for bad input under jit, so it stays
and is measured.

Timings on a shared CPU are noisy; the ratios measured side by side are the meaningful part,
and the record keeps every repeat and the load average. Writes
``benchmarks/results/logstop_throughput.json`` (``--out`` to change it).
"""

from __future__ import annotations

import functools
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import logstop as L
from jaxpapers.core import benchmark as bench

NAME = "logstop_throughput"

FORMULAS = ("a U b", "G(a -> F b)", "F(a & X b & X X c)")
GROWING = (
  "a U b",
  "(a U b) & G(a -> F c)",
  "(a U b) & G(a -> F c) & F(b & X X c)",
  "(a U b) & G(a -> F c) & F(b & X X c) & (!c U (a | G b))",
)
FRAMES_PER_CALL = 300_000


def batch_size(T: int) -> int:
  """Traces per call: about FRAMES_PER_CALL frames, between 16 and 1024 traces."""
  return max(16, min(1024, FRAMES_PER_CALL // T))


def traces(rng, B: int, T: int) -> dict[str, np.ndarray]:
  return {n: rng.uniform(size=(B, T)).astype(np.float32) for n in "abc"}


def _timed(fn, *args):
  t0, c0 = time.perf_counter(), time.process_time()
  jax.block_until_ready(fn(*args))
  return time.perf_counter() - t0, time.process_time() - c0


def time_jax(fns: dict, args, repeats: int) -> dict[str, tuple[list, list]]:
  """Wall and CPU seconds per call of each jitted fn, alternating, after one warm-up call."""
  for fn in fns.values():
    jax.block_until_ready(fn(*args))
  out = {k: ([], []) for k in fns}
  for _ in range(repeats):
    for k, fn in fns.items():
      w, c = _timed(fn, *args)
      out[k][0].append(w)
      out[k][1].append(c)
  return out


def time_python(formula, props, window, n_traces):
  """Wall and CPU seconds per trace of the plain-Python scorer over n_traces traces."""
  B = next(iter(props.values())).shape[0]
  lists = [{k: v[i % B].tolist() for k, v in props.items()} for i in range(n_traces)]
  t0, c0 = time.perf_counter(), time.process_time()
  for p in lists:
    L.reference_scores(formula, p, window=window)
  return (time.perf_counter() - t0) / n_traces, (time.process_time() - c0) / n_traces


def host_costs(repeats: int = 9) -> dict[str, float]:
  """CPU nanoseconds per float32 log, per logaddexp and per byte moved, on this host.

  From 2^22 floats (16 MiB, beyond the caches): a log of every value and a logaddexp of two
  arrays, each minus a copy, and the copy itself (8 bytes read and written per value).
  """
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.uniform(0.1, 1.0, 1 << 22).astype(np.float32))
  y = jnp.asarray(rng.uniform(0.1, 1.0, 1 << 22).astype(np.float32))
  fns = {
    "log": jax.jit(lambda v, u: jnp.log(v)),
    "logaddexp": jax.jit(lambda v, u: jnp.logaddexp(v, u)),
    "copy": jax.jit(lambda v, u: v + 1.0),
  }
  t = time_jax(fns, (x, y), repeats)
  copy = float(np.min(t["copy"][1]))
  return {
    "log_cpu_ns": max(float(np.min(t["log"][1])) - copy, 0.0) / x.size * 1e9,
    "logaddexp_cpu_ns": max(float(np.min(t["logaddexp"][1])) - copy, 0.0) / x.size * 1e9,
    "byte_cpu_ns": copy / (8 * x.size) * 1e9,
  }


def call_costs(T: int, repeats: int = 30) -> dict[str, float]:
  """CPU microseconds of one call that does (almost) no work: the fixed cost of every call.

  On a batch of 2 traces of length T: ``score("a U b")`` under ``jax.jit``; a jitted sum of
  the same inputs with one ``checkify.debug_check`` (the check ``score`` registers for traced
  inputs, the policy for bad input under jit); the same sum without it. A jitted function
  with a checkify check carries an error effect, and JAX dispatches a call of a program with
  effects by its Python path instead of the C++ fast path.
  """
  from jax.experimental import checkify

  def checked(p):
    checkify.debug_check(jnp.all(p["a"] <= 1), "bad")
    return p["a"] + p["b"]

  p = {n: jnp.full((2, T), 0.5, jnp.float32) for n in "ab"}
  fns = {
    "score": _jitted("score", "a U b", 1),
    "with_debug_check": jax.jit(checked),
    "plain": jax.jit(lambda p: p["a"] + p["b"]),
  }
  t = time_jax(fns, (p,), repeats)
  return {f"{k}_cpu_us": float(np.median(v[1])) * 1e6 for k, v in t.items()}


def _range_check(p):
  """The per-trace check ``score`` applies to traced scores (the same expression as the
  library's): every frame of every atom in [0, 1], False for NaN. [N, T] arrays -> bool[N]."""
  bad = functools.reduce(jnp.logical_or, [~((v >= 0) & (v <= 1)) for v in p.values()])
  return ~jnp.any(bad, axis=-1)


@functools.cache
def _pieces(formula) -> dict:
  """``score`` (w = 1) and the passes it is compared with, as jitted functions of its inputs.

  ``range_check``: the per-trace check of traced scores as a pass of its own over the inputs
  (``score`` at w = 1 takes it in its loop instead); ``copy``: a read and a write of every
  input (the memory floor of one pass).
  """
  return {
    "score": _jitted("score", formula, 1),
    "range_check": jax.jit(_range_check),
    "copy": jax.jit(lambda p: [v + 1.0 for v in p.values()]),
  }


def cost_per_frame(formula, B: int, T: int) -> dict[str, dict[str, float]]:
  """XLA's cost analysis per frame of the compiled score and of its range check.

  Loop bodies are counted once. The analysis of ``score`` counts the log-space fallback branch
  too, although it runs only where a probability underflows.
  """
  p = {n: jax.ShapeDtypeStruct((B, T), jnp.float32) for n in L.atoms(L.parse(formula))}
  out = {}
  for name, fn in _pieces(formula).items():
    if name in ("score", "range_check"):
      ca = fn.lower(p).compile().cost_analysis()
      ca = ca[0] if isinstance(ca, (list, tuple)) else ca
      keys = ("transcendentals", "flops", "bytes accessed")
      out[name] = {k: float(ca.get(k, 0.0)) / (B * T) for k in keys}
  return out


def time_pieces(formula, props, repeats: int) -> dict[str, float]:
  """CPU nanoseconds per frame of ``score`` and of its parts (`_pieces`), side by side.

  Min and median over ``4 * repeats`` alternating calls on device-resident inputs.
  """
  B, T = next(iter(props.values())).shape
  pj = {n: jnp.asarray(props[n]) for n in L.atoms(L.parse(formula))}
  t = time_jax(_pieces(formula), (pj,), 4 * repeats)
  out = {}
  for k, (_, cpu) in t.items():
    out[f"{k}_cpu_ns_min"] = float(np.min(cpu)) / (B * T) * 1e9
    out[f"{k}_cpu_ns_median"] = float(np.median(cpu)) / (B * T) * 1e9
  return out


def slope(Ts, secs) -> float:
  return float(np.polyfit(np.log(Ts), np.log(secs), 1)[0])


@functools.cache
def _jitted(kind, formula, window):
  """One jitted scorer per (kind, formula, window), shared by every part of the run."""
  if kind == "score":
    return jax.jit(lambda p: L.score(formula, p, window=window))
  if kind == "scores":
    return jax.jit(lambda p: L.scores(formula, p, window=window))
  return jax.jit(lambda p: L.score_many(formula, p, window=window))


def run(args) -> tuple[list, list]:
  rng = np.random.default_rng(0)
  rows = []
  med = lambda xs: float(np.median(xs))

  # 1. score vs the Python scorer (w = 1), and the same score at the other windows.
  for T in args.Ts:
    B = batch_size(T)
    props = traces(rng, B, T)
    pj = {k: jnp.asarray(v) for k, v in props.items()}
    for formula in FORMULAS:
      fns = {w: _jitted("score", formula, w) for w in args.windows}
      if T in args.scores_Ts:
        fns.update({("scores", w): _jitted("scores", formula, w) for w in (1, max(args.windows))})
      timings = time_jax(fns, (pj,), args.repeats)
      # The Python scorer: about args.python_time seconds per repeat, at least 1 trace.
      one, _ = time_python(formula, props, 1, 1)
      n_py = max(1, min(B, int(args.python_time / max(one, 1e-6))))
      py = [time_python(formula, props, 1, n_py) for _ in range(args.repeats)]
      py_wall, py_cpu = med([p[0] for p in py]), med([p[1] for p in py])
      py_cpu_min = float(np.min([p[1] for p in py]))
      for key, (wall, cpu) in timings.items():
        kind, w = key if isinstance(key, tuple) else ("score", key)
        row = {
          "kind": kind,
          "formula": formula,
          "window": w,
          "T": T,
          "batch": B,
          "jax_wall_s": wall,
          "jax_cpu_s": cpu,
          "jax_wall_per_trace_s": med(wall) / B,
          "jax_cpu_per_trace_s": med(cpu) / B,
          "jax_cpu_min_per_trace_s": float(np.min(cpu)) / B,
        }
        if kind == "score" and w == 1:
          row.update(
            python_traces=n_py,
            python_wall_per_trace_s=py_wall,
            python_cpu_per_trace_s=py_cpu,
            python_cpu_min_per_trace_s=py_cpu_min,
            speedup_wall=py_wall / row["jax_wall_per_trace_s"],
            speedup_cpu=py_cpu / row["jax_cpu_per_trace_s"],
            speedup_cpu_min=py_cpu_min / row["jax_cpu_min_per_trace_s"],
          )
        rows.append(row)
      r = next(r for r in rows if r["kind"] == "score" and r["formula"] == formula and r["T"] == T)
      print(
        f"T={T:5d} B={B:4d} {formula:20s} JAX {1 / r['jax_wall_per_trace_s']:11,.0f} traces/s"
        f"  Python {1 / py_wall:8,.1f} traces/s  {r['speedup_wall']:7,.0f}x wall"
        f"  {r['speedup_cpu']:7,.0f}x CPU",
        flush=True,
      )

  # Where the time goes: XLA's count of transcendentals per frame, and their cost here.
  T_cost = next((T for T in args.Ts if 300 <= T <= 1000), args.Ts[-1])
  host = host_costs()
  calls = call_costs(T_cost)
  cost_props = traces(rng, batch_size(T_cost), T_cost)
  for formula in args.cost_formulas:
    per_frame = cost_per_frame(formula, batch_size(T_cost), T_cost)
    rows.append(
      {
        "kind": "cost",
        "formula": formula,
        "T": T_cost,
        "batch": batch_size(T_cost),
        "per_frame": per_frame["score"],
        "per_frame_range_check": per_frame["range_check"],
        "pieces": time_pieces(formula, cost_props, args.repeats),
        "call": calls,
        **host,
      }
    )

  # 2. All formulas in one program vs one program per formula.
  for T in args.many_Ts:
    B = batch_size(T)
    pj = {k: jnp.asarray(v) for k, v in traces(rng, B, T).items()}
    fns = {"many": _jitted("many", FORMULAS, 1)}
    fns.update({f: _jitted("score", f, 1) for f in FORMULAS})
    timings = time_jax(fns, (pj,), args.repeats)
    sep_wall = [sum(ws) for ws in zip(*(timings[f][0] for f in FORMULAS))]
    sep_cpu = [sum(cs) for cs in zip(*(timings[f][1] for f in FORMULAS))]
    rows.append(
      {
        "kind": "score_many",
        "formulas": list(FORMULAS),
        "window": 1,
        "T": T,
        "batch": B,
        "many_wall_s": timings["many"][0],
        "many_cpu_s": timings["many"][1],
        "separate_wall_s": sep_wall,
        "separate_cpu_s": sep_cpu,
        "speedup_wall": med(sep_wall) / med(timings["many"][0]),
        "speedup_cpu": med(sep_cpu) / med(timings["many"][1]),
      }
    )

  # 3. Growing formulas (full run only).
  for formula in args.growing:
    T = 1000
    B = batch_size(T)
    props = traces(rng, B, T)
    timings = time_jax(
      {"s": _jitted("score", formula, 1)},
      ({k: jnp.asarray(v) for k, v in props.items()},),
      args.repeats,
    )
    py_wall, py_cpu = time_python(formula, props, 1, 3)
    rows.append(
      {
        "kind": "growing",
        "formula": formula,
        "size": L.size(L.parse(formula)),
        "T": T,
        "batch": B,
        "jax_wall_per_trace_s": med(timings["s"][0]) / B,
        "jax_cpu_per_trace_s": med(timings["s"][1]) / B,
        "python_wall_per_trace_s": py_wall,
        "python_cpu_per_trace_s": py_cpu,
      }
    )
  return rows, summarize(rows, args)


def summarize(rows, args) -> list[dict]:
  score1 = [r for r in rows if r["kind"] == "score" and r["window"] == 1]
  mid = [r for r in score1 if 300 <= r["T"] <= 1000]
  summary = []
  if mid:
    # CPU time is the value: on a shared host a call's wall time is mostly time spent waiting
    # for a core. XLA's (up to 2) threads against Python's one: on an idle host the wall-clock
    # ratio is higher by XLA's parallel speed-up.
    worst = min(mid, key=lambda r: r["speedup_cpu"])
    wall_worst = min(r["speedup_wall"] for r in mid)
    # Where the time goes: JAX CPU-nanoseconds per frame, against Python's microseconds, and
    # the least the transcendentals XLA counts can cost on this host.
    ns = {
      r["formula"]: r["jax_cpu_per_trace_s"] / r["T"] * 1e9 for r in mid if r["T"] == worst["T"]
    }
    # The ceiling of an exact log-space evaluation (a U b needs log a, log b, log1p(-b) and a
    # logaddexp per frame at the least), and what the linear-space kernel moves per frame.
    cost = next((r for r in rows if r["kind"] == "cost" and r["formula"] == "a U b"), None)
    floor = ""
    aub = next((r for r in mid if r["formula"] == "a U b" and r["T"] == worst["T"]), None)
    if cost is not None and aub is not None:
      least = 3 * cost["log_cpu_ns"] + cost["logaddexp_cpu_ns"]
      py_ns = aub["python_cpu_per_trace_s"] / aub["T"] * 1e9
      pc = cost["pieces"]
      piece = lambda k: f"{pc[k + '_cpu_ns_min']:.2f} / {pc[k + '_cpu_ns_median']:.2f}"
      floor = (
        f"; a log costs {cost['log_cpu_ns']:.2f} CPU-ns and a logaddexp "
        f"{cost['logaddexp_cpu_ns']:.2f} here, so the 3 logs and 1 logaddexp per frame that an "
        f"exact log-space a U b needs take {least:.1f} ns: at most {py_ns / least:,.0f}x the "
        f"Python scorer's {py_ns / 1e3:.1f} us per frame. score = the linear-space kernel with "
        f"the range check of traced inputs in its loop (the fallback cond runs one branch and "
        f"copies no operand), side by side in CPU-ns per frame at T = {cost['T']} (min / "
        f"median): score {piece('score')}; the range check as a pass of its own (what its "
        f"place in the loop saves) {piece('range_check')}; a copy of the inputs "
        f"{piece('copy')}; 1,000x needs {py_ns / 1e3:.2f} ns"
      )
      call = cost["call"]
      floor += (
        f"; fixed cost of a call (median CPU-us, 2 traces): score {call['score_cpu_us']:.0f}, "
        f"a jitted sum with one checkify debug_check {call['with_debug_check_cpu_us']:.0f}, "
        f"without it {call['plain_cpu_us']:.0f} (the check's error effect sends every call "
        f"down JAX's Python dispatch path), i.e. "
        f"{call['score_cpu_us'] * 1e3 / (cost['batch'] * cost['T']):.2f} ns per frame of a "
        f"{cost['batch']} x {cost['T']} call"
      )
    per_T = {}
    for r in score1:
      per_T.setdefault(r["T"], []).append(r["speedup_cpu"])
    summary.append(
      bench.summary(
        name="score traces per CPU-second vs the Python recursive scorer, T = 300-1000, w = 1 "
        "(min over formulas)",
        value=worst["speedup_cpu"],
        unit="x",
        target=">= 1000",
        note=(
          f"slowest: {worst['formula']} at T = {worst['T']}; traces/s (wall clock) ratio min "
          f"{wall_worst:,.0f}x; JAX CPU time per frame at T = "
          f"{worst['T']}: "
          + ", ".join(f"{f} {v:.1f} ns" for f, v in ns.items())
          + f"; Python {worst['python_cpu_per_trace_s'] / worst['T'] * 1e6:.1f} us per frame"
          + f"; from the minimum times {worst['speedup_cpu_min']:,.0f}x"
          + "; min over formulas by T: "
          + ", ".join(f"T={T} {min(v):,.0f}x" for T, v in sorted(per_T.items()))
          + floor
        ),
      )
    )
  slopes = {}
  for f in FORMULAS:
    sel = sorted((r for r in score1 if r["formula"] == f), key=lambda r: r["T"])
    if len(sel) >= 2:
      slopes[f] = (
        slope([r["T"] for r in sel], [r["jax_cpu_per_trace_s"] for r in sel]),
        slope([r["T"] for r in sel], [r["jax_wall_per_trace_s"] for r in sel]),
        slope([r["T"] for r in sel], [r["python_cpu_per_trace_s"] for r in sel]),
      )
  if slopes:
    worst_f = max(slopes, key=lambda f: slopes[f][0])
    summary.append(
      bench.summary(
        name=f"JAX time per trace vs T, log-log slope, T = {min(args.Ts)}-{max(args.Ts)} (max over formulas)",
        value=slopes[worst_f][0],
        unit="",
        target="<= 1.05",
        note="CPU time; per formula (CPU, wall, Python CPU): "
        + "; ".join(f"{f}: {a:.2f}, {b:.2f}, {c:.2f}" for f, (a, b, c) in slopes.items()),
      )
    )
  wmax = max(args.windows)
  for kind in ("score", "scores"):
    ratios = []
    for r in rows:
      if r["kind"] == kind and r["window"] == wmax:
        base = next(
          (
            b
            for b in rows
            if b["kind"] == kind
            and b["window"] == 1
            and b["formula"] == r["formula"]
            and b["T"] == r["T"]
          ),
          None,
        )
        if base is not None:
          ratios.append(
            (r["jax_cpu_per_trace_s"] / base["jax_cpu_per_trace_s"], r["formula"], r["T"])
          )
    if ratios:
      worst = max(ratios)
      summary.append(
        bench.summary(
          name=f"{kind}: time at w = {wmax} / w = 1 (max over formulas and T)",
          value=worst[0],
          unit="x",
          target="<= 1.2",
          note=f"CPU time; worst at {worst[1]}, T = {worst[2]}; all: "
          + ", ".join(f"{v:.2f}" for v, _, _ in sorted(ratios))
          + (
            "; scores at w > 1 adds the window sums' blocked scans (two more passes over the "
            "view per atom) and runs its chains on n = T / w steps, whose fixed costs grow "
            "relative to the work"
            if kind == "scores"
            else ""
          ),
        )
      )
  many = [r for r in rows if r["kind"] == "score_many"]
  if many:
    worst = min(many, key=lambda r: r["speedup_cpu"])
    summary.append(
      bench.summary(
        name=f"{len(FORMULAS)} formulas x traces in one program vs one program per formula",
        value=worst["speedup_cpu"],
        unit="x",
        target=">= 1",
        note=f"CPU time, min over T ({worst['T']}); wall: "
        + ", ".join(f"T={r['T']} {r['speedup_wall']:.2f}x" for r in many),
      )
    )
  return summary


def parse_args(argv=None):
  ap = bench.parser(NAME, __doc__)
  ap.add_argument("--repeats", type=int, default=None, help="timed calls per variant (7; 3)")
  args = ap.parse_args(argv)
  if args.quick:
    # scores at T = 5,000 alone (its w = 64 / w = 1 ratio has been the largest there), the
    # cost rows of a U b alone (the one the summary reads): each program compiled costs more
    # CPU than all its timed calls.
    args.Ts, args.windows, args.scores_Ts = (50, 500, 5000), (1, 64), (5000,)
    args.many_Ts, args.growing, args.cost_formulas = (500,), (), FORMULAS[:1]
    args.repeats = args.repeats or 5
    args.python_time = 0.05
  else:
    args.Ts, args.windows = (50, 100, 300, 500, 1000, 3000, 5000), (1, 8, 64)
    args.scores_Ts, args.many_Ts, args.growing = (50, 500, 5000), (50, 500, 5000), GROWING
    args.cost_formulas = FORMULAS
    args.repeats = args.repeats or 7
    args.python_time = 0.3
  return args


def main(argv=None):
  args = parse_args(argv)
  start, host = time.perf_counter(), bench.host_info()
  print(f"devices: {jax.devices()}  load average: {host['load_average_at_start']}")
  rows, summary = run(args)
  bench.write(
    NAME,
    args,
    rows=rows,
    summary=summary,
    host=host,
    argv=argv,
    extra={
      "config": {k: v for k, v in vars(args).items() if k != "out"},
      "frames_per_call": FRAMES_PER_CALL,
      "wall_time_s": time.perf_counter() - start,
    },
  )


if __name__ == "__main__":
  sys.exit(main())
