"""Throughput of batched, jitted LogSTOP scoring vs the plain-Python recursive
scorer.

  python -m benchmarks.logstop_throughput --out benchmarks/results/logstop_throughput_full.json
                                                     # full table (about 2 minutes)
  python -m benchmarks.logstop_throughput --quick    # T = 50, 500, 5000, w = 1 and 64

The quick mode times ``score`` at T = 50, 500 and 5,000 and w = 1 and 64,
``scores`` at T = 5,000 only, the Python scorer at T = 50 and 500, and leaves
out the ``cost`` rows: compiling a program costs more CPU than all of its timed
calls.

What is measured, over trace lengths T, windows w and formulas:

* **throughput**: scored traces per CPU-second of ``jaxpapers.logstop.score``
  under ``jax.jit`` on a batch of float32 traces (about 300k frames per call at
  every T, so a call's fixed cost weighs the same at every T) and of
  ``jaxpapers.logstop.reference_scores`` (plain Python, memoised per
  (subformula, t), one trace at a time: the authors' recursive scorer
  transcribed). The traces are JAX arrays on the device before the clock starts,
  as in a loop that scores a model's outputs; the time includes dispatch and,
  since the inputs are traced under ``jax.jit``, the in-program range check of
  every score;
* **growth in T**: the log-log slope of JAX time per trace against T (1 =
  linear);
* **cost of the window**: time at w = 64 over w = 1, for ``score`` (t = 0) and
  ``scores`` (every t), at every T;
* **formulas x traces in one program**: ``score_many`` of all formulas against
  one ``score`` call per formula;
* full mode only, **where the time of score goes** (``cost`` rows): XLA's cost
  analysis of ``score`` and of its range check, CPU time per frame of ``score``,
  the range check as a pass of its own and a copy of the inputs, the host's cost
  of a log and a logaddexp, and the fixed cost of a call (``score`` on 2 traces
  beside a jitted sum with and without one checkify ``debug_check``).

How it is timed (`timed_blocks`): every program compared, and the Python scorer,
is a "unit"; all units of a formula (``score`` at every (T, w), ``scores`` at
w = 1 and 64, the Python scorer at every T) are timed in one group of
interleaved blocks, the order rotating each round, so that speed-ups, T-slopes
and window ratios are ratios of blocks measured side by side. A block is a few
ms of process CPU time (``--block_s``) after one untimed unit (the unit's data
and code back in the caches). A unit's time is the minimum over blocks
(``--blocks``), the least disturbed block (speed-ups and T-slopes use it); a
ratio of two programs (the window ratios, ``score_many``) is the median over
rounds of the ratio of the two blocks of a round (`paired_ratio`), steadier than
a ratio of minima. The record keeps every block and the spread (median / min -
1). The earlier method (5 single calls per program, medians, at most 1,024
traces per call, the Python scorer timed apart) gave 406x and 922x in two
back-to-back quick runs, and T-slopes of 0.93 and 1.16. Two consecutive quick
runs of this method (the long background runs paused, load average 1.8 at start)
gave: speed-up 1,078x and 965x (from the medians of the blocks 937x and 923x),
T-slope 1.11 and 1.09, ``score`` w = 64 / w = 1 0.69 and 0.65, ``scores`` 1.63
and 1.62, ``score_many`` 1.88x and 1.65x; the committed quick record, a third
run, 1,238x (929x from the medians), 1.09, 0.67, 1.62 and 1.92x. So the slope
and the window ratios reproduce within a few %, the min-block speed-up within
about 25 % and its median-block value within 2 %. A single block still varies by
up to about 2x on the shared host (the spreads in the record). The quick mode's
CPU time is mostly compilation (about 30 programs): 45 s of process CPU (XLA
compiles on 2 threads), 27 s of wall time at load 1.8.

What bounds the speed-up: ``score`` computes probabilities in linear space (each
with its complement, see ``jaxpapers/logstop/_engine.py``) and takes one log per
trace, falling back to the log-space kernel only where a probability underflows.
An exact log-space kernel needs per frame the logs of the atoms and a
``logaddexp`` per step of ``U`` / ``F``, which at the Python scorer's
microseconds per frame caps it below 1,000x (the full record's ``cost`` rows).
The kernel moves the inputs once into the time-major view (a transpose; at T =
500, 600 traces, the transposes of the three inputs of ``F(a & X b & X X c)``
took about 2.3 of its 3.9 CPU-ns per frame in the "prob" kernel, min over
blocks) and runs one loop down it (the sequential scan; chains longer than 4,096
steps, the blocked scans). Every call also pays the dispatch of a program with a
checkify ``debug_check`` (the policy for bad input under jit), whose error
effect makes JAX dispatch every call by its Python path instead of the C++ fast
path.

Where the targets stand (the record's summary gives the numbers of the run):

* speed-up >= 1,000x at T = 300-1,000: at the limit. The three quick runs above
  gave 965x to 1,238x from the min-block times for ``a U b`` at T = 500 (the
  slowest: its Python scorer is the cheapest per frame, about 3.6 us), 923x to
  937x from the medians of the blocks; the full record 1,073x (``a U b`` at T =
  1,000); ``G(a -> F b)`` and ``F(a & X b & X X c)`` are above 1,000x. ``a U b``
  at T = 500 costs about 3.3-3.8 CPU-ns per frame; the transposes into the view
  cost about 0.8 CPU-ns per input and frame (above), and ``score`` under
  ``jax.jit`` measured about 0.6 CPU-ns per frame (min of blocks) above the same
  compiled kernel called without the checkify check and the NaN poisoning of the
  public function (T = 500, 600 traces).
* T-slope <= 1.05: not met. Every call holds about 300k frames, so traces of T
  frames come in batches of N = 300,000 / T, and the N traces are the vector
  lanes of every step of the sequential scan of n = T steps: T = 50 runs 50
  steps on 6,000 lanes, T = 500 500 steps on 600 lanes, and T = 5,000 (past the
  scan's rounding bound n <= 4,096, ``sequential_fits``) the blocked scans on 60
  lanes (in the full record T = 3,000, 100 lanes, is the costliest per frame and
  T = 5,000 is cheaper). ``a U b`` stays flat; ``G(a -> F b)`` and
  ``F(a & X b & X X c)`` cost up to about 1.3-1.7x per frame at T = 3,000-5,000
  what they cost at T = 50 (the records' notes have the numbers of each run).
  Fewer lanes than a whole number of vectors cost more per frame: the first 64
  traces of the same data took 0.86 / 0.81 / 0.74 of the CPU time per frame of
  the first 60 (``a U b`` / ``G(a -> F b)`` / ``F(a & X b & X X c)``, T = 5,000,
  min of 21 interleaved blocks; 56 traces 0.90 / 0.90 / 0.94), so ``score``'s
  blocked scans pad the traces to a multiple of 8 with zero traces where that
  adds at most 1 / 8 of the work (``_padded_lanes`` in
  ``jaxpapers/logstop/_engine.py``): 60 -> 64 traces took 0.98 / 0.98 / 0.87,
  1.00 / 0.97 / 0.94 and 0.98 / 0.99 / 0.90 of the time in three runs (paired
  medians of 21 blocks), same values. Measured without adoption (``score`` at
  [60, 5,000], paired medians of 21 interleaved blocks): chunks of up to 4, 6,
  16 or 32 steps instead of 8 (L = 4, 5, 10, 25), 1.12 / 0.93 / 1.16, 1.20 /
  1.00 / 1.19, 1.27 / 1.03 / 1.18 and 1.53 / 1.03 / 1.28 of the time; earlier,
  the scan's loop unrolled 25, 50 or 125 steps per iteration at T = 500 (no
  difference beyond the host's noise), and (earlier) the sequential scan
  extended past 4,096 steps with the blocked scans' rounding (no faster with 60
  traces as the lanes of a step). Measured and not kept, the segments of a long
  chain as further lanes: with fewer than 256 traces and at least 512 steps,
  each chain cut into S segments (S N about 512 lanes: T = 3,000 6 x 100, T =
  5,000 8 x 60, 500 and 625 steps each), one sequential pass per level of
  temporal nesting, each operator's step an affine map whose composition over a
  segment, (C, M) with ``C <- c + m C``, ``M <- m M``, needs no entering value,
  then S steps across the segments (the values equal the float64 recursion to
  1e-14 relative). Side by side (CPU time, paired medians of 21 interleaved
  blocks, two runs with the order of the programs swapped, ``a U b`` /
  ``G(a -> F b)`` / ``F(a & X b & X X c)``): segmented over one segment 1.00 /
  1.10 / 0.90 at T = 3,000 and 0.95 / 0.86 / 0.99 at T = 5,000 (the blocked
  scans there); in the other run one segment over segmented 0.99-1.06 /
  0.91-0.94 / 0.88-0.96 and 0.85-0.95 / 0.90-0.96 / 0.90-0.91; the same program
  against a second copy of itself, at T = 50, 0.85-0.97 in both runs. So no gain
  beyond the method's spread: the composed maps take a second floored product
  per operator and step (``M``), and ``G(a -> F b)`` a second pass, which costs
  what the wider steps save. Nor do few traces make the sequential scan dearer
  than the blocked scans: at T = 1,000, 2,000, 3,000 and 4,000 (300 to 75
  traces) the blocked scans over the sequential scan gave 0.79-1.13, a second
  copy of the sequential program 0.74-1.07 (15 blocks). What the growth is made
  of (the long background runs paused, min / median of 41 interleaved blocks,
  CPU-ns per frame of ``score``): the loop body of the sequential scan is split
  by XLA's CPU backend between two threads (``outer_dimension_partitions`` in
  its compiled program) once its cost model puts it above about 100k cycles, and
  then hands half of every iteration to its thread pool. At T = 4,000 (75
  traces, sequential) ``a U b``, ``G(a -> F b)`` and ``F(a & X b & X X c)`` took
  10.15 / 11.61, 10.70 / 14.46 and 11.60 / 15.75, against 2.24 / 3.02, 2.92 /
  3.32 and 4.16 / 4.69 at T = 50 and 2.23 / 2.68, 3.85 / 5.14 and 2.99 / 5.23 at
  T = 5,000 with the sequential scan forced (60 traces: one thread); the blocked
  scans at T = 5,000 took 2.09 / 2.79, 4.10 / 5.22 and 4.72 / 5.30. The records'
  T = 3,000 rows (100 traces) carry the same cost in part
  (``F(a & X b & X X c)`` 5.82 in one full run, 8.77 in the next). Up to 256
  steps per iteration with few traces (75 at T = 3,000) did not remove it (10.99
  in a full run) and was withdrawn. The slope of three points (quick mode) is
  the ratio of T = 5,000 to T = 50 alone, and single blocks vary by up to 2x on
  the shared host (the spreads in the record), so its value moves by about 0.05
  between runs of the same code. XLA's threads are not what keeps it above 1.05:
  two runs of the three ``score`` units per formula (41 interleaved blocks, the
  long background runs paused, other processes on the host), each with the
  thread pool and then in a process of its own with
  ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``, gave
  slopes from the minima of 1.02 / 1.08 / 1.04 and 1.00 / 1.04 / 1.16 with
  threads, 1.01 / 1.06 / 1.03 and 1.02 / 1.11 / 1.15 on one thread (``a U b`` /
  ``G(a -> F b)`` / ``F(a & X b & X X c)``; from the medians 0.98-1.11 either
  way). What both show is ``G(a -> F b)`` at T = 5,000 (the blocked scans on 60
  traces): on one thread 3.94 and 5.22 CPU-ns per frame against 3.04 and 3.19 at
  T = 50.
* ``score`` at w = 64 / w = 1 <= 1.2: met. ``score`` at t = 0 sums blocks of w
  frames first, so a window costs less than w = 1, except where T is not a whole
  number of blocks: the frames were padded to whole blocks by a gather, a pass
  of its own. The whole blocks and the last, partial one are now summed apart
  (side by side, 41 interleaved blocks, CPU-ns per frame min / median, 300k
  frames per call, range check included: T = 50, w = 64 ``a U b`` 3.02 / 4.56 ->
  1.40 / 1.82, ``G(a -> F b)`` 2.77 / 5.64 -> 1.11 / 1.75; T = 5,000 ``a U b``
  1.69 / 2.06 -> 0.95 / 1.46, ``G(a -> F b)`` 1.84 / 2.26 -> 1.29 / 1.91). The
  earlier 1.30x at T = 50 was also the fixed cost of a call of 1,024 traces, now
  6,000.
* ``scores`` at w = 64 / w = 1 <= 1.2: see the records. At w > 1 ``scores`` adds
  the window means, sums of w frames of nonnegative scores (no differences of
  prefix sums, which would cancel the digits of a window of small scores beside
  large ones, and the tests forbid that). They were two blocked scans along the
  w frames of every block of the view per atom (4 reads and 3 writes of the
  view); the frames then moved once into frame-major order (the transpose that
  w = 1 makes into the view), where the frames ahead of a frame are the rows
  below it, and sliding sums add contiguous rows (``_window_sums`` in
  ``jaxpapers/logstop/_engine.py``): side by side (one atom, [60, 5,000], w =
  64, CPU-us per call, min of 30 rounds, shared host) 700-750 -> about 350, the
  move alone about 100-115, and the ratio from 1.62-1.63 (quick) and 1.56 (full)
  to 1.27 and 1.29. At T = 50 (w = 64 > T) that path cost more than the scans
  (``a U b`` and ``G(a -> F b)`` 0.80 and 0.74 -> 1.21 and 1.16, full records).
  Since then (CPU time of ``scores`` at w = 64 over w = 1, paired medians of
  21-41 interleaved blocks, one process per variant, other processes loading the
  host):

  - a window of w >= T frames is the window of T frames (one step per chain),
    and one-step chains take the blocked scans again: T = 50, 6,000 traces,
    ``a U b`` 1.23 -> 0.87, ``G(a -> F b)`` 0.87 -> 0.80 (time per frame at w =
    64 0.66 and 0.68 of before);
  - the sliding sums are sums of 8 frames, then 8 of those (8 + 8 rows read per
    frame; the 16 sums of 4, 4 + 16 rows, took 1.15-1.26x as long, one atom, one
    XLA thread);
  - the logs of every t and the test for lost digits run on the view's rows, and
    only the logs are transposed out to [N, T] (the test was a second
    transposing read of the view). This makes w = 1 cheaper too. At T = 5,000,
    with all three changes, the time per frame at w = 64 went to 0.85
    (``a U b``), 0.76 and 0.82 of before, and the ratios from 1.27, 1.13 and
    1.27 to 1.28, 1.11 and 1.13.
  - the logs leave the view in frame order: the fusion taking them swaps the
    chunks back ([C, L, R, N], whole rows), then one 2D transpose of the T
    frames (``_View.map_out``): ``a U b`` at T = 5,000 1.31 -> 1.18 and 1.31 ->
    1.27 in two runs. Swapping a value materialised first, or one not yet
    computed, was slower with XLA's thread pool (1.28 -> 2.16 for ``a U b``;
    ``G(a -> F b)`` 1.09-1.44 -> 2.49-2.69), although faster on one thread.
  - measured and not kept: the division by the frame count of every window as a
    multiplication (without ``length`` the counts are constants and XLA already
    multiplies by their reciprocals).

  What is left at T = 5,000 (w = 64: 79 steps per chain padded to 80, so the view holds 5,120
  frames and the end-of-trace masks apply, where w = 1 needs none): the two passes of the sums
  per atom, and the host's noise: the two programs alone, side by side ([60, 5,000], w = 64 over
  w = 1, paired medians of 15-31 interleaved blocks of 5-30 ms CPU, the long background runs
  paused, ``a U b`` / ``G(a -> F b)`` / ``F(a & X b & X X c)``): 1.09 / 1.04 / 1.07, 1.07 / 1.04
  / 1.22 and 1.09 / 1.04 / 1.07 with XLA's thread pool, 1.09 / 1.04 / 1.05 and 1.08 / 1.02 /
  1.08 in a process on one thread (``--xla_cpu_multi_thread_eigen=false
  intra_op_parallelism_threads=1``); with the background runs going, 1.16 / 1.12 / 1.05 and 1.21
  / 1.31 / 1.08 with the pool, 1.13 / 1.11 / 1.06 and 1.15 / 1.20 / 1.14 on one thread. So XLA
  splitting the w = 64 program's fusions between two threads is not what costs, and the records'
  worst formula (1.08-1.40 between quick runs) is the load on the host while the benchmark's
  blocks run.
  Measured and not kept: the two levels of the sums fused (the sums of w // 8 frames not
  materialised; same values): 1.49 / 1.26 / 1.56 of the time at w = 64.
  The full record's worst, ``F(a & X b & X X c)`` at T = 500 (600 traces, w = 64: chains of 8
  steps, the view of 512 frames with end-of-trace masks), is the window means of its three
  atoms: side by side ([600, 500], 15 interleaved blocks, CPU-ns per frame min / median) the
  means of the three atoms alone in the view at w = 64 took 5.12 / 5.83, their move into the
  view at w = 1 3.33 / 4.21, ``scores`` at w = 1 8.09 / 9.98 and at w = 64 8.48 / 10.67
  (paired 1.05 in that run): about 0.6 CPU-ns per atom and frame for the frame-major copy and
  the two passes of the sums, which a formula of three atoms pays three times. Measured and
  not kept: the sums taken on the frame-major rows flattened to one axis (a frame's row N
  values on, one loop without a remainder of N mod 8 per row; the same sums, bitwise): at T =
  5,000, w = 64 over w = 1, 0.92-1.05 against 0.96-1.04 for two copies of the kept program
  (15 interleaved blocks, the host loaded by other processes).

Writes ``benchmarks/results/logstop_throughput.json`` (``--out`` to change it).
"""

from __future__ import annotations

import functools
import math
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
  """Traces per call: about FRAMES_PER_CALL frames at every T (at least 16
  traces)."""
  return max(16, FRAMES_PER_CALL // T)


def traces(rng, B: int, T: int) -> dict[str, np.ndarray]:
  return {n: rng.uniform(size=(B, T)).astype(np.float32) for n in "abc"}


def _clock():
  return time.perf_counter(), time.process_time()


def timed_blocks(units: dict, blocks: int, block_s: float) -> dict:
  """Interleaved blocks of repeated units of work; per-trace wall and CPU time
  of every block.

  ``units`` maps a key to ``(fn, traces)``: ``fn()`` does one unit of work on
  ``traces`` traces (one jitted call, or the Python scorer on one trace) and
  returns what to wait for. Each unit is run once untimed (compilation, caches),
  then timed once to size its blocks: ``reps`` units per block, so that a block
  takes about ``block_s`` seconds of CPU. Then ``blocks`` rounds time one block
  of every unit in turn (the order rotates by one each round), so that a burst
  of load on a shared host hits every unit alike. Every block starts with one
  untimed unit, so that it measures the unit with its data and code in the
  caches (as in a loop that scores batch after batch), not after the other units
  have evicted them. Blocks are short (a few ms: on a shared host a longer block
  is almost surely preempted, and the process that ran in between has evicted
  the caches); the minimum over blocks is the value.

  Returns:
    key -> {"reps", "traces", "cpu_s": [CPU s per trace, per block], "wall_s":
    [...]}.
  """
  reps = {}
  for k, (fn, _) in units.items():
    jax.block_until_ready(fn())
    _, c0 = _clock()
    jax.block_until_ready(fn())
    one = max(time.process_time() - c0, 1e-6)
    reps[k] = max(1, math.ceil(block_s / one))
  out = {
    k: {"reps": reps[k], "traces": n, "cpu_s": [], "wall_s": []}
    for k, (_, n) in units.items()
  }
  keys = list(units)
  for b in range(blocks):
    for k in keys[b % len(keys) :] + keys[: b % len(keys)]:
      fn, n = units[k]
      jax.block_until_ready(fn())  # untimed: the unit's data back in the caches
      w0, c0 = _clock()
      for _ in range(reps[k]):
        jax.block_until_ready(fn())
      w1, c1 = _clock()
      out[k]["cpu_s"].append((c1 - c0) / (reps[k] * n))
      out[k]["wall_s"].append((w1 - w0) / (reps[k] * n))
  return out


def stats(t: dict) -> dict:
  """Min, median and spread (median / min - 1) of a unit's per-trace CPU and
  wall times."""
  cpu, wall = t["cpu_s"], t["wall_s"]
  return {
    "cpu_min_s": float(np.min(cpu)),
    "cpu_median_s": float(np.median(cpu)),
    "cpu_spread": float(np.median(cpu) / np.min(cpu) - 1),
    "wall_min_s": float(np.min(wall)),
    "wall_median_s": float(np.median(wall)),
  }


def python_unit(formula, props, window=1):
  """One unit of the plain-Python scorer: the next trace of `props` (cycling),
  as lists."""
  B = next(iter(props.values())).shape[0]
  lists = [
    {k: v[i].tolist() for k, v in props.items()} for i in range(min(B, 64))
  ]
  it = iter(range(1 << 62))

  def fn():
    return L.reference_scores(
      formula, lists[next(it) % len(lists)], window=window
    )

  return fn


def host_costs(blocks: int, block_s: float) -> dict[str, float]:
  """CPU nanoseconds per float32 log, per logaddexp and per byte moved, on this
  host.

  From 2^22 floats (16 MiB, beyond the caches): a log of every value and a
  logaddexp of two arrays, each minus a copy, and the copy itself (8 bytes read
  and written per value).
  """
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.uniform(0.1, 1.0, 1 << 22).astype(np.float32))
  y = jnp.asarray(rng.uniform(0.1, 1.0, 1 << 22).astype(np.float32))
  fns = {
    "log": jax.jit(lambda v, u: jnp.log(v)),
    "logaddexp": jax.jit(lambda v, u: jnp.logaddexp(v, u)),
    "copy": jax.jit(lambda v, u: v + 1.0),
  }
  t = timed_blocks(
    {k: (functools.partial(f, x, y), x.size) for k, f in fns.items()},
    blocks,
    block_s,
  )
  ns = {k: min(v["cpu_s"]) * 1e9 for k, v in t.items()}
  return {
    "log_cpu_ns": max(ns["log"] - ns["copy"], 0.0),
    "logaddexp_cpu_ns": max(ns["logaddexp"] - ns["copy"], 0.0),
    "byte_cpu_ns": ns["copy"] / 8,
  }


def call_costs(T: int, blocks: int, block_s: float) -> dict[str, float]:
  """CPU microseconds of one call that does (almost) no work: the fixed cost of
  every call.

  On a batch of 2 traces of length T: ``score("a U b")`` under ``jax.jit``; a
  jitted sum of the same inputs with one ``checkify.debug_check`` (the check
  ``score`` registers for traced inputs, the policy for bad input under jit);
  the same sum without it. A jitted function with a checkify check carries an
  error effect, and JAX dispatches a call of a program with effects by its
  Python path instead of the C++ fast path.
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
  t = timed_blocks(
    {k: (functools.partial(f, p), 1) for k, f in fns.items()}, blocks, block_s
  )
  return {f"{k}_cpu_us": min(v["cpu_s"]) * 1e6 for k, v in t.items()}


def _range_check(p):
  """The per-trace check ``score`` applies to traced scores (the same expression
  as the library's): every frame of every atom in [0, 1], False for NaN. [N, T]
  arrays -> bool[N]."""
  bad = functools.reduce(
    jnp.logical_or, [~((v >= 0) & (v <= 1)) for v in p.values()]
  )
  return ~jnp.any(bad, axis=-1)


@functools.cache
def _pieces(formula) -> dict:
  """``score`` (w = 1) and the passes it is compared with, as jitted functions
  of its inputs.

  ``range_check``: the per-trace check of traced scores as a pass of its own
  over the inputs (``score`` at w = 1 takes it in its loop instead); ``copy``: a
  read and a write of every input (the memory floor of one pass).
  """
  return {
    "score": _jitted("score", formula, 1),
    "range_check": jax.jit(_range_check),
    "copy": jax.jit(lambda p: [v + 1.0 for v in p.values()]),
  }


def cost_per_frame(formula, B: int, T: int) -> dict[str, dict[str, float]]:
  """XLA's cost analysis per frame of the compiled score and of its range check.

  Loop bodies are counted once. The analysis of ``score`` counts the log-space
  fallback branch too, although it runs only where a probability underflows.
  """
  p = {
    n: jax.ShapeDtypeStruct((B, T), jnp.float32)
    for n in L.atoms(L.parse(formula))
  }
  out = {}
  for name, fn in _pieces(formula).items():
    if name in ("score", "range_check"):
      ca = fn.lower(p).compile().cost_analysis()
      ca = ca[0] if isinstance(ca, (list, tuple)) else ca
      keys = ("transcendentals", "flops", "bytes accessed")
      out[name] = {k: float(ca.get(k, 0.0)) / (B * T) for k in keys}
  return out


def time_pieces(
  formula, props, blocks: int, block_s: float
) -> dict[str, float]:
  """CPU nanoseconds per frame of ``score`` and of its parts (`_pieces`),
  interleaved blocks."""
  B, T = next(iter(props.values())).shape
  pj = {n: jnp.asarray(props[n]) for n in L.atoms(L.parse(formula))}
  units = {
    k: (functools.partial(f, pj), B) for k, f in _pieces(formula).items()
  }
  out = {}
  for k, t in timed_blocks(units, blocks, block_s).items():
    out[f"{k}_cpu_ns_min"] = min(t["cpu_s"]) / T * 1e9
    out[f"{k}_cpu_ns_median"] = float(np.median(t["cpu_s"])) / T * 1e9
  return out


def slope(Ts, secs) -> float:
  return float(np.polyfit(np.log(Ts), np.log(secs), 1)[0])


@functools.cache
def _jitted(kind, formula, window):
  """One jitted scorer per (kind, formula, window), shared by every part of the
  run."""
  if kind == "score":
    return jax.jit(lambda p: L.score(formula, p, window=window))
  if kind == "scores":
    return jax.jit(lambda p: L.scores(formula, p, window=window))
  return jax.jit(lambda p: L.score_many(formula, p, window=window))


def run(args) -> tuple[list, list]:
  rng = np.random.default_rng(0)
  rows = []
  inputs = {}
  for T in sorted(set(args.Ts) | set(args.scores_Ts) | set(args.many_Ts)):
    props = traces(rng, batch_size(T), T)
    inputs[T] = (props, {k: jnp.asarray(v) for k, v in props.items()})
  wmax = max(args.windows)

  # 1. Per formula, one interleaved group: score at every (T, w), scores at w =
  #    1 and wmax, and
  # the Python scorer at every T, so that speed-ups, T-growth and window ratios
  # are all ratios of blocks measured side by side.
  for formula in FORMULAS:
    units = {}
    for T in args.Ts:
      props, pj = inputs[T]
      B = batch_size(T)
      for w in args.windows:
        units[("score", T, w)] = (
          functools.partial(_jitted("score", formula, w), pj),
          B,
        )
      if T in args.python_Ts:
        units[("python", T, 1)] = (python_unit(formula, props), 1)
    for T in args.scores_Ts:
      _, pj = inputs[T]
      for w in (1, wmax):
        units[("scores", T, w)] = (
          functools.partial(_jitted("scores", formula, w), pj),
          batch_size(T),
        )
    timings = timed_blocks(units, args.blocks, args.block_s)
    for (kind, T, w), t in timings.items():
      rows.append(
        {
          "kind": kind,
          "formula": formula,
          "window": w,
          "T": T,
          "batch": units[(kind, T, w)][1],
        }
        | {k: t[k] for k in ("reps", "cpu_s", "wall_s")}
        | stats(t)
      )
    for T in args.python_Ts:
      j, p = stats(timings[("score", T, 1)]), stats(timings[("python", T, 1)])
      print(
        (
          f"T={T:5d} {formula:20s} JAX {j['cpu_min_s'] / T * 1e9:6.2f} "
          f"CPU-ns/frame (spread {j['cpu_spread']:.0%})  Python "
          f"{p['cpu_min_s'] / T * 1e6:5.2f} us/frame (spread "
          f"{p['cpu_spread']:.0%})  {p['cpu_min_s'] / j['cpu_min_s']:7,.0f}x "
          "CPU"
        ),
        flush=True,
      )

  # Where the time goes: XLA's cost analysis, the pieces of score, the host's
  # costs.
  T_cost = next((T for T in args.Ts if 300 <= T <= 1000), args.Ts[-1])
  if args.cost_formulas:
    host = host_costs(args.blocks, args.block_s)
    calls = call_costs(T_cost, args.blocks, args.block_s)
  cost_props = inputs[T_cost][0]
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
        "pieces": time_pieces(formula, cost_props, args.blocks, args.block_s),
        "call": calls,
        **host,
      }
    )

  # 2. All formulas in one program vs one program per formula.
  for T in args.many_Ts:
    B = batch_size(T)
    pj = inputs[T][1]
    sep = {f: _jitted("score", f, 1) for f in FORMULAS}
    units = {
      "many": (functools.partial(_jitted("many", FORMULAS, 1), pj), B),
      "separate": (lambda pj=pj, sep=sep: [fn(pj) for fn in sep.values()], B),
    }
    t = timed_blocks(units, args.blocks, args.block_s)
    many, separate = stats(t["many"]), stats(t["separate"])
    rows.append(
      {
        "kind": "score_many",
        "formulas": list(FORMULAS),
        "window": 1,
        "T": T,
        "batch": B,
      }
      | {f"many_{k}": v for k, v in many.items()}
      | {f"separate_{k}": v for k, v in separate.items()}
      | {
        "speedup_cpu": paired_ratio(t["separate"]["cpu_s"], t["many"]["cpu_s"]),
        "speedup_wall": paired_ratio(
          t["separate"]["wall_s"], t["many"]["wall_s"]
        ),
        "speedup_cpu_min": separate["cpu_min_s"] / many["cpu_min_s"],
      }
    )

  # 3. Growing formulas (full run only).
  for formula in args.growing:
    T = 1000
    props, pj = inputs.setdefault(T, (traces(rng, batch_size(T), T), None))
    pj = pj or {k: jnp.asarray(v) for k, v in props.items()}
    units = {
      "jax": (
        functools.partial(_jitted("score", formula, 1), pj),
        batch_size(T),
      ),
      "python": (python_unit(formula, props), 1),
    }
    t = timed_blocks(units, args.blocks, args.block_s)
    j, p = stats(t["jax"]), stats(t["python"])
    rows.append(
      {
        "kind": "growing",
        "formula": formula,
        "size": L.size(L.parse(formula)),
        "T": T,
        "batch": batch_size(T),
        "jax_cpu_min_per_trace_s": j["cpu_min_s"],
        "python_cpu_min_per_trace_s": p["cpu_min_s"],
        "speedup_cpu": p["cpu_min_s"] / j["cpu_min_s"],
      }
    )
  return rows, summarize(rows, args)


def paired_ratio(a, b) -> float:
  """Median over rounds of a[i] / b[i]: two units' blocks of one round, timed
  side by side.

  A ratio of two programs is steadier this way than as a ratio of their minima:
  a slow round (load from other processes) slows both blocks of the round alike,
  and a lucky block of one program does not set the ratio alone.
  """
  return float(np.median(np.asarray(a) / np.asarray(b)))


def _find(rows, **kw):
  return next(
    (r for r in rows if all(r.get(k) == v for k, v in kw.items())), None
  )


def summarize(rows, args) -> list[dict]:
  summary = []
  spread = lambda rs: max(r["cpu_spread"] for r in rs)
  jax_rows = [r for r in rows if r["kind"] in ("score", "scores")]
  py_rows = [r for r in rows if r["kind"] == "python"]
  noise = (
    (
      "; spread of the blocks (median / min - 1, CPU): "
      f"JAX up to {spread(jax_rows):.0%}, Python up to {spread(py_rows):.0%}"
    )
    if jax_rows and py_rows
    else ""
  )
  # 1. Speed-up: the Python scorer's min-block CPU time per trace over score's,
  #    per formula.
  speed = []
  for p in py_rows:
    j = _find(rows, kind="score", formula=p["formula"], T=p["T"], window=1)
    speed.append(
      {
        "formula": p["formula"],
        "T": p["T"],
        "min": p["cpu_min_s"] / j["cpu_min_s"],
        "median": p["cpu_median_s"] / j["cpu_median_s"],
        "jax_ns": j["cpu_min_s"] / p["T"] * 1e9,
        "py_us": p["cpu_min_s"] / p["T"] * 1e6,
      }
    )
  mid = [s for s in speed if 300 <= s["T"] <= 1000]
  if mid:
    worst = min(mid, key=lambda s: s["min"])
    cost = _find(rows, kind="cost", formula="a U b")
    floor = ""
    aub = next(
      (s for s in mid if s["formula"] == "a U b" and s["T"] == worst["T"]), None
    )
    if cost is not None and aub is not None:
      least = 3 * cost["log_cpu_ns"] + cost["logaddexp_cpu_ns"]
      py_ns = aub["py_us"] * 1e3
      pc = cost["pieces"]
      piece = lambda k: (
        f"{pc[k + '_cpu_ns_min']:.2f} / {pc[k + '_cpu_ns_median']:.2f}"
      )
      call = cost["call"]
      floor = (
        "; an exact log-space a U b needs 3 logs and a logaddexp per frame: "
        f"{least:.1f} CPU-ns here (log {cost['log_cpu_ns']:.2f}, "
        f"logaddexp {cost['logaddexp_cpu_ns']:.2f}), "
        f"at most {py_ns / least:,.0f}x. CPU-ns per frame at T = {cost['T']} "
        f"(min / median of blocks): score {piece('score')}, "
        f"the range check as a pass of its own {piece('range_check')}, "
        f"a copy of the inputs {piece('copy')}; fixed cost of a call (CPU-us, "
        f"2 traces): score {call['score_cpu_us']:.0f}, "
        "a jitted sum with one checkify debug_check "
        f"{call['with_debug_check_cpu_us']:.0f}, without it "
        f"{call['plain_cpu_us']:.0f}"
      )
    summary.append(
      bench.summary(
        name=(
          "score traces per CPU-second vs the Python recursive scorer, "
          "T = 300-1000, w = 1 (min over formulas)"
        ),
        value=worst["min"],
        unit="x",
        target=">= 1000",
        note=(
          (
            "min-block CPU time per trace, interleaved blocks; slowest: "
            f"{worst['formula']} at T = {worst['T']} ({worst['jax_ns']:.2f} "
            f"CPU-ns per frame against Python's {worst['py_us']:.2f} us; "
            f"{worst['median']:,.0f}x from the medians); per formula and T: "
          )
          + ", ".join(
            f"{s['formula']} T={s['T']} {s['min']:,.0f}x" for s in speed
          )
          + noise
          + floor
        ),
      )
    )
  # 2. Growth in T (min-block CPU time per trace, all T measured in one
  #    interleaved group).
  slopes = {}
  for f in FORMULAS:
    sel = sorted(
      (
        r
        for r in rows
        if r["kind"] == "score" and r["window"] == 1 and r["formula"] == f
      ),
      key=lambda r: r["T"],
    )
    if len(sel) >= 2:
      Ts = [r["T"] for r in sel]
      slopes[f] = (
        slope(Ts, [r["cpu_min_s"] for r in sel]),
        slope(Ts, [r["cpu_median_s"] for r in sel]),
        ", ".join(f"{r['cpu_min_s'] / r['T'] * 1e9:.2f}" for r in sel),
      )
  if slopes:
    worst_f = max(slopes, key=lambda f: slopes[f][0])
    summary.append(
      bench.summary(
        name=(
          "JAX time per trace vs T, log-log slope, "
          f"T = {min(args.Ts)}-{max(args.Ts)} (max over formulas)"
        ),
        value=slopes[worst_f][0],
        unit="",
        target="<= 1.05",
        note=(
          "min-block CPU time; per formula (slope from the minima, "
          "from the medians; CPU-ns per frame at T = "
          f"{', '.join(map(str, args.Ts))}): "
        )
        + "; ".join(
          f"{f}: {a:.2f}, {b:.2f} ({c})" for f, (a, b, c) in slopes.items()
        )
        + (
          ". Why it grows: every call holds about the same frames, "
          "so a trace of T frames comes in a batch of N = 300,000 / T traces, "
          "and the N traces are the vector lanes of every step of score's "
          "sequential scan (n = T steps): as T grows the same work runs on "
          "fewer, longer chains (T = 3,000: 100 lanes); "
          "past n = 4,096 steps (T = 5,000) the sequential scan's rounding "
          "bound sends score to the blocked scans, on 60 traces"
        ),
      )
    )
  # 3. Cost of the window.
  wmax = max(args.windows)
  for kind in ("score", "scores"):
    ratios = []
    for r in rows:
      if r["kind"] == kind and r["window"] == wmax:
        base = _find(rows, kind=kind, window=1, formula=r["formula"], T=r["T"])
        if base is not None:
          ratios.append(
            (
              paired_ratio(r["cpu_s"], base["cpu_s"]),
              r["cpu_min_s"] / base["cpu_min_s"],
              r["formula"],
              r["T"],
            )
          )
    if ratios:
      worst = max(ratios)
      summary.append(
        bench.summary(
          name=f"{kind}: time at w = {wmax} / w = 1 (max over formulas and T)",
          value=worst[0],
          unit="x",
          target="<= 1.2",
          note=(
            "CPU time, median over rounds of the ratio of the two blocks of "
            f"a round; worst at {worst[2]}, T = {worst[3]} ({worst[1]:.2f} "
            "from the min-block times); all: "
          )
          + ", ".join(f"{f} T={T} {v:.2f}" for v, _, f, T in ratios)
          + (
            (
              "; scores at w > 1 adds the window means (per atom, "
              "the frames moved once into frame-major order, "
              "then sums of w // 8 frames and 8 of those, "
              "the last pass writing the view: w = 64, "
              "2 passes reading 8 + 8 rows per frame; w >= T: "
              "blocked scans along the view) and runs w chains of n = T / w "
              "steps (T = 5,000, w = 64: 79 steps padded to 80)"
            )
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
        name=(
          f"{len(FORMULAS)} formulas x traces in one program vs one program "
          "per formula"
        ),
        value=worst["speedup_cpu"],
        unit="x",
        target=">= 1",
        note=(
          "CPU time, median over rounds of the paired ratio, "
          f"min over T ({worst['T']}; {worst['speedup_cpu_min']:.2f} from the "
          "min-block times); wall: "
        )
        + ", ".join(f"T={r['T']} {r['speedup_wall']:.2f}x" for r in many),
      )
    )
  return summary


def parse_args(argv=None):
  ap = bench.parser(NAME, __doc__)
  ap.add_argument(
    "--blocks", type=int, default=None, help=("timed blocks per unit (41; 41)")
  )
  ap.add_argument(
    "--block_s",
    type=float,
    default=None,
    help=("CPU seconds per block (0.002; 0.004)"),
  )
  args = ap.parse_args(argv)
  if args.quick:
    args.Ts, args.windows, args.scores_Ts = (50, 500, 5000), (1, 64), (5000,)
    args.many_Ts, args.growing, args.cost_formulas = (500,), (), ()
    args.python_Ts = (50, 500)
    args.blocks = args.blocks or 41
    args.block_s = args.block_s or 0.002
  else:
    args.Ts, args.windows = (50, 100, 300, 500, 1000, 3000, 5000), (1, 8, 64)
    args.scores_Ts, args.many_Ts, args.growing = (
      (50, 500, 5000),
      (50, 500, 5000),
      GROWING,
    )
    args.cost_formulas = FORMULAS
    args.python_Ts = args.Ts
    args.blocks = args.blocks or 41
    args.block_s = args.block_s or 0.004
  return args


def main(argv=None):
  args = parse_args(argv)
  start, host = time.perf_counter(), bench.host_info()
  print(
    f"devices: {jax.devices()}  load average: {host['load_average_at_start']}"
  )
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
      "process_cpu_s": time.process_time(),
    },
  )


if __name__ == "__main__":
  sys.exit(main())
