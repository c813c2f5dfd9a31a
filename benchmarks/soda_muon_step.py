"""Cost of a Muon step relative to an AdamW step in the SODA experiment's sweep groups.

  python -m benchmarks.soda_muon_step [--seeds 3 --steps 50 --repeats 5 --out muon_step.json]
  python -m benchmarks.soda_muon_step --quick    # 1 seed, 5 steps per chunk, 3 repeats

The digits experiment (``experiments/soda``) trains every run of an optimizer *group* in one
compiled, vmapped program; each run carries the states of all the group's optimizer families
and, under ``vmap``, computes every family's update before selecting its own. This script times
one compiled ``lax.scan`` chunk of vmapped steps (forward, backward, update) of the digits MLP
for:

* ``adam``: AdamW and SODA(AdamW) in one group (the experiment's AdamW group; 15 grid points);
* ``muon+soda_muon``: Muon and SODA(Muon) in one group (the layout before the Muon families were
  split: every run computes both Newton-Schulz orthogonalisations; 15 grid points);
* ``muon`` and ``soda_muon``: the split groups the experiment now uses (12 and 3 grid points).

Times are per run and step (ms), medians over ``repeats`` chunks, the variants timed in turn
(A, B, C, D, A, ...) so that load changes on a shared machine hit all of them. The ratios are
the per-run-step costs of a Muon-family run (before: the combined group; after: the split
groups, weighted by their run counts) over that of the AdamW group. On the digits MLP the
Newton-Schulz iterations (five per hidden kernel, three matrix products each: about 76 MFLOP
per run and step, against about 5 MFLOP for the forward and backward pass at batch 32) dominate,
so the split (one orthogonalisation per run instead of two) is the available saving; the
arithmetic itself is unchanged.

The record (:mod:`jaxpapers.core.benchmark`, ``benchmarks/results/soda_muon_step.json`` by
default) keeps these numbers at its top level (``ms_per_run_step``, ``muon_over_adam_after``,
``speedup_of_muon_arms``, ...); its summary is the split's speed-up of a Muon-family run, with
the target 1.5x (the split halves the Newton-Schulz arithmetic, which dominates).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.soda import train
from experiments.soda.configs import default
from jaxpapers.core import benchmark as bench

NAME = "soda_muon_step"


def build(families, runs, seeds, steps, cfg, setup):
  """A jitted chunk of ``steps`` vmapped steps for one group and its initial state."""
  sweep = train.setup_sweep(
    setup,
    families=families,
    cfg=cfg,
  )
  hp, keys = train.group_grid(runs, range(seeds), 0, 1000, families)
  state = jax.jit(jax.vmap(lambda h, k: sweep.init_fn(h, k, None)))(hp, keys)

  @jax.jit
  def chunk(state):
    def body(s, i):
      return jax.vmap(lambda st, h, k: sweep.step_fn(st, h, k, i, None))(s, hp, keys)

    return jax.lax.scan(body, state, jnp.arange(steps))

  jax.block_until_ready(chunk(state))  # compile
  return chunk, state, len(runs) * seeds


def parse_args(argv=None):
  ap = bench.parser(NAME, __doc__)
  ap.add_argument("--seeds", type=int, default=None, help="seeds per grid point (3; quick: 1)")
  ap.add_argument("--steps", type=int, default=None, help="steps per timed chunk (50; quick: 5)")
  ap.add_argument("--repeats", type=int, default=None, help="timed chunks (5; quick: 3)")
  args = ap.parse_args(argv)
  args.seeds = args.seeds or (1 if args.quick else 3)
  args.steps = args.steps or (5 if args.quick else 50)
  args.repeats = args.repeats or (3 if args.quick else 5)
  return args


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()

  cfg = default.get_config().digits
  setup = train._digits_setup(cfg)
  grid = train.family_grid(cfg)
  pick = lambda fams: [(f, h) for f, h in grid if f in fams]
  variants = {
    "adam": (("adamw", "soda_adamw"), pick(("adamw", "soda_adamw"))),
    "muon+soda_muon": (("muon", "soda_muon"), pick(("muon", "soda_muon"))),
    "muon": (("muon",), pick(("muon",))),
    "soda_muon": (("soda_muon",), pick(("soda_muon",))),
  }
  built = {k: build(f, r, args.seeds, args.steps, cfg, setup) for k, (f, r) in variants.items()}
  times = {k: [] for k in variants}
  for _ in range(args.repeats):  # in turn, so that a change of load hits every variant
    for k, (chunk, state, num_runs) in built.items():
      t0 = time.perf_counter()
      jax.block_until_ready(chunk(state))
      times[k].append((time.perf_counter() - t0) / (args.steps * num_runs) * 1e3)
  ms = {k: float(np.median(v)) for k, v in times.items()}
  n_muon, n_soda = built["muon"][2], built["soda_muon"][2]
  after = (ms["muon"] * n_muon + ms["soda_muon"] * n_soda) / (n_muon + n_soda)
  out = {
    "ms_per_run_step": ms,
    "runs": {k: v[2] for k, v in built.items()},
    "muon_over_adam_before": ms["muon+soda_muon"] / ms["adam"],
    "muon_over_adam_after": after / ms["adam"],
    "speedup_of_muon_arms": ms["muon+soda_muon"] / after,
    "seeds": args.seeds,
    "steps_per_chunk": args.steps,
    "repeats": args.repeats,
    "backend": jax.default_backend(),
  }
  summary = [
    bench.summary(
      "Muon-family run-step: Muon and SODA(Muon) in one group / in split groups, speed-up",
      out["speedup_of_muon_arms"],
      ">= 1.5",
      note=f"a Muon-family run-step costs {out['muon_over_adam_after']:.1f}x an AdamW one after "
      f"the split ({out['muon_over_adam_before']:.1f}x before); wall-clock medians",
    )
  ]
  rows = [{"variant": k, "runs": built[k][2], "ms_per_run_step": times[k]} for k in variants]
  bench.write(NAME, args, rows=rows, summary=summary, host=host, argv=argv, extra=out)
  return out


if __name__ == "__main__":
  main()
