"""Throughput of margin evaluation and free-embedding fitting
(jaxpapers.margins).

  python -m benchmarks.margins_throughput [--quick]

Measured side by side in one process (warm-up excluded unless stated,
interleaved repeats):

1. ``all_margins`` on the C(64, 4) = 635,376-row k-sparse problem (n = 64, d =
   64; quick: C(48, 4) = 194,580 rows), chunked and jitted, against a float64
   numpy pass over the same rows (spec target: < 2 s on 2 cores). What made it
   win (it measured 0.63x before): the blocks are dynamic slices of the inputs
   rather than a padded copy of ``U`` and ``A`` (194,580 x 64 floats copied per
   call); ``m_0`` comes from the global extremes that ``m_g`` already needs
   rather than a third pass over the scores; the default block fell from 65,536
   to 16,384 rows, so a block of scores stays near the caches (blocks of 65,536
   are timed beside it); and the eager unit-norm check screens the rows in
   float32 with a compiled reduction, falling back to the float64 check only
   near its tolerance, instead of copying ``U`` to float64 on every call (about
   10x less CPU for that check).
2. A sequence of dimensions d = 4, 8, 16, 32, 64 (quick: 8, 16, 32; N = 1,140:
   n = 20, k = 3; 1,000 Adam steps, quick: 100): one call per width, then
   ``fit_free_embeddings(d=[...])`` (first call), then a second sequence of the
   widths in another set and order (the rounds of the experiment's bisection
   over d), counting its compilations (each width's program is compiled once and
   reused: target 0); and (full mode) the same grid as one masked runs axis
   (``sweep=True``, core.Sweep, the experiment's sharded, checkpointed path),
   run time against the per-width fits.
3. ``fit_free_embeddings`` steps/s for d = 32, one seed (spec target: >= 1,000
   steps/s after compile on 2 cores).

Why a sequence of dimensions is fitted one width at a time. Until this version
it was fitted as one compiled program holding a ``lax.scan`` per width (before
that, as five masked copies of the widest run vmapped together, or one scan
stepping all five fits). The fits share nothing: each evaluates its own
``[N, n]`` scores, loss and Adam update, and the loss's elementwise work on the
``[N, n]`` scores is most of a step (0.25 ms per step at d = 4 against 0.62 ms
at d = 64), so one program can only remove per-program overhead, of which there
is almost none inside a scan. Measured side by side in one process against one
call per width (``REMOVED_ONE_PROGRAM`` below, written to the record's rows; 2
shared cores, load average 12-16, so CPU time is the figure): run time
1.00x (full) and 1.01x (quick) in CPU time, first call (compile included) 1.47x
and 1.29x: below the 1.5x that would justify a second code path, and the one
program had to be compiled anew for every new set of widths (every round of the
experiment's bisection over d), while a program per width is compiled once and
reused. Padding the widths to a common one (the masked runs axis) does 5 x 64 =
320 columns of arithmetic against 124 and measured 0.63x in CPU time; it stays
only as ``sweep=True``, the path that shards the runs and checkpoints them.
"""

from __future__ import annotations

import time

import jax
import numpy as np

import jaxpapers.margins as M
from jaxpapers.core import benchmark as bench

NAME = "margins_throughput"

# The one-program fit of several dimensions, removed: its last side-by-side
# measurement against one call per width (2 shared cores, load average 12-16;
# best of 3; the one-program code as of the commit below), kept in the record's
# rows as the reason for the removal.
REMOVED_ONE_PROGRAM = {
  "measured_at_commit": "726b3ab",
  "target": ">= 1.5",
  "quick": {
    "dims": [8, 16, 32],
    "steps": 100,
    "run_time_ratio_cpu": 1.008,
    "first_call_ratio_cpu": 1.287,
    "one_program_cpu_best_s": 0.1182,
    "separate_cpu_best_s": 0.1191,
    "first_call_one_program_cpu_s": 2.263,
    "first_call_separate_cpu_s": 2.914,
  },
  "full": {
    "dims": [4, 8, 16, 32, 64],
    "steps": 1000,
    "run_time_ratio_cpu": 1.004,
    "first_call_ratio_cpu": 1.466,
    "one_program_cpu_best_s": 2.025,
    "separate_cpu_best_s": 2.034,
    "first_call_one_program_cpu_s": 4.624,
    "first_call_separate_cpu_s": 6.777,
  },
}


def parse_args(argv=None):
  return bench.parser(NAME, __doc__).parse_args(argv)


def _first_call(fn) -> float:
  t = time.perf_counter()
  jax.block_until_ready(fn())
  return time.perf_counter() - t


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()
  q = args.quick
  repeats = 2 if q else 3
  rows, summary = [], []

  # (1) all_margins against numpy float64.
  n_docs = 48 if q else 64
  rng = np.random.default_rng(0)
  A = M.k_sparse_relevance(n_docs, 4)
  U = rng.normal(size=(A.shape[0], 64)).astype(np.float32)
  V = rng.normal(size=(n_docs, 64)).astype(np.float32)
  U /= np.linalg.norm(U, axis=1, keepdims=True)
  V /= np.linalg.norm(V, axis=1, keepdims=True)
  Uj, Vj, Aj = jax.device_put(U), jax.device_put(V), jax.device_put(A)

  def np_pass():
    m0 = np.inf
    for s in range(0, A.shape[0], 65536):
      S = U[s : s + 65536].astype(np.float64) @ V.T.astype(np.float64)
      m0 = min(m0, np.where(A[s : s + 65536], S, -S).min())
    return m0

  jax_m0 = float(M.all_margins(Uj, Vj, Aj)["m0"])
  np.testing.assert_allclose(jax_m0, np_pass(), rtol=1e-5, atol=1e-6)
  t = bench.side_by_side(
    {
      "all_margins": lambda: M.all_margins(Uj, Vj, Aj)["m0"],
      "all_margins_chunk_65536": lambda: M.all_margins(
        Uj, Vj, Aj, chunk_size=65536
      )["m0"],
      "numpy_float64": np_pass,
    },
    repeats,
  )
  rows.append(
    {
      "case": "all_margins",
      "rows": int(A.shape[0]),
      "n": n_docs,
      "d": 64,
      **{f"{k}_{m}": v for k, tk in t.items() for m, v in tk.as_dict().items()},
    }
  )
  summary.append(
    bench.summary(
      f"all_margins, C({n_docs},4) x {n_docs}, d=64, vs numpy float64",
      t["numpy_float64"].best / t["all_margins"].best,
      ">= 1",
      note=(
        "default block of 16,384 rows; the rows also time blocks of 65,536 "
        "(the former default). Shared host: wall times noisy, "
        "CPU times in the rows"
      ),
    )
  )
  if not q:
    summary.append(
      bench.summary(
        "all_margins, C(64,4) x 64, d=64",
        t["all_margins"].best,
        "< 2",
        unit=("s"),
        note=("spec §7"),
      )
    )

  # (2) a sequence of dimensions: one program per width, compiled once.
  A = M.k_sparse_relevance(20, 3)
  steps = 100 if q else 1000
  key = jax.random.key(0)
  ds = [8, 16, 32] if q else [4, 8, 16, 32, 64]
  nd = len(ds)
  fns = {
    "separate": lambda: [
      M.fit_free_embeddings(key, A, d, loss="sigmoid", steps=steps).U
      for d in ds
    ],
  }
  if not q:
    fns["masked_runs_axis"] = lambda: (
      M.fit_free_embeddings(
        key, A, ds, loss="sigmoid", steps=steps, sweep=True
      ).U
    )
  first = {k: _first_call(f) for k, f in fns.items()}
  seq = lambda dims: (
    M.fit_free_embeddings(key, A, dims, loss="sigmoid", steps=steps).U
  )
  first["sequence"] = _first_call(lambda: seq(ds))
  # the widths in another set and order
  with bench.count_compilations() as compiles:
    jax.block_until_ready(seq(ds[::-1][: nd - 1]))
  t = bench.side_by_side(fns, repeats, warm_up=False)
  rows.append(
    {
      "case": "several_dimensions",
      "dims": ds,
      "steps": steps,
      "compilations_of_a_second_sequence": compiles.count,
      **{f"first_call_{k}_s": v for k, v in first.items()},
      **{f"{k}_{m}": v for k, tk in t.items() for m, v in tk.as_dict().items()},
    }
  )
  rows.append(
    {
      "case": "removed_one_program_for_several_dimensions",
      **REMOVED_ONE_PROGRAM,
    }
  )
  summary.append(
    bench.summary(
      (
        f"a second sequence of {nd - 1} of the {nd} widths, in another order: "
        "compilations"
      ),
      compiles.count,
      "== 0",
      unit="compiles",
      note=(
        "one program per width, reused; the removed one-program path: "
        "see the docstring"
      ),
    )
  )
  # (3) steps/s of one fit (d = 32: the program compiled for (2)).
  t_one = bench.side_by_side(
    {
      "fit": lambda: (
        M.fit_free_embeddings(key, A, 32, loss="sigmoid", steps=steps).U
      )
    },
    repeats,
    warm_up=False,
  )["fit"]
  rows.append(
    {"case": "fit_one", "N": int(A.shape[0]), "n": 20, "d": 32, "steps": steps}
  )
  rows[-1].update(t_one.as_dict())
  summary.append(
    bench.summary(
      f"fit_free_embeddings N={A.shape[0]}, d=32, steps/s after compile",
      steps / t_one.best,
      ">= 1000",
      unit="steps/s",
      note="spec §7",
    )
  )

  bench.write(NAME, args, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
