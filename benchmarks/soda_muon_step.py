"""Cost of a Muon step relative to an AdamW step in the SODA experiment's sweep
groups.

  python -m benchmarks.soda_muon_step [--seeds 3 --steps 50 --repeats 5 --out muon_step.json]
  python -m benchmarks.soda_muon_step --quick    # 1 seed, 2 grid points a family, 5 steps,
                                                 # no AdamW group

The digits experiment (``experiments/soda``) trains every run of an optimizer
*group* in one compiled, vmapped program; each run carries the states of all the
group's optimizer families and, under ``vmap``, computes every family's update
before selecting its own. This script times one compiled ``lax.scan`` chunk of
vmapped steps (forward, backward, update) of the digits MLP for:

* ``adam``: AdamW and SODA(AdamW) in one group (the experiment's AdamW group; 15
  grid points);
* ``muon+soda_muon``: Muon and SODA(Muon) in one group (the layout before the
  Muon families were split: every run computes both Newton-Schulz
  orthogonalisations; 15 grid points);
* ``muon`` and ``soda_muon``: the split groups the experiment now uses (12 and 3
  grid points).

Times are per run and step (ms), medians over ``repeats`` chunks, the variants
timed in turn (A, B, C, D, A, ...) so that load changes on a shared machine hit
all of them. The ratios are the per-run-step costs of a Muon-family run (before:
the combined group; after: the split groups, weighted by their run counts) over
that of the AdamW group. On the digits MLP the Newton-Schulz iterations (five
per hidden kernel, three matrix products each: about 76 MFLOP per run and step,
against about 5 MFLOP for the forward and backward pass at batch 32) dominate,
so the split (one orthogonalisation per run instead of two) is the available
saving; the arithmetic itself is unchanged.

The model, optimizers and schedule are the library's
(``jaxpapers.soda.DigitsMLP``, ``horizon_optimizer``: ``soda`` over optax's
AdamW and Muon on a warmup-stable-decay schedule) with the grid of the
experiment's ``configs/default.py`` (read from the file); the group step below
(every family's update computed and the run's own selected) is the experiment's
layout, written out here.

The record (:mod:`jaxpapers.core.benchmark`,
``benchmarks/results/soda_muon_step.json`` by default) keeps these numbers at
its top level (``ms_per_run_step``, ``muon_over_adam_after``,
``speedup_of_muon_arms``, ...); its summary is the split's speed-up of a
Muon-family run, with the target 1.5x (the split halves the Newton-Schulz
arithmetic, which dominates).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from benchmarks._setup import experiment_config
from jaxpapers import soda
from jaxpapers.core import benchmark as bench

NAME = "soda_muon_step"


def make_tx(family, hp, cfg):
  """One run's optimizer (the library's horizon study); ``hp`` values are traced
  scalars."""
  return soda.horizon_optimizer(
    family,
    hp,
    b1=cfg.b1,
    b2=cfg.b2,
    warmup_frac=cfg.warmup_frac,
    cooldown_frac=cfg.cooldown_frac,
    hidden_mask=soda.mlp_hidden_mask,
  )


def family_grid(cfg):
  """Every (family, hyperparameters) of the experiment's digits grid, in its
  order."""
  runs = [
    ("adamw", {"lr": lr, "wd": wd})
    for lr in cfg.adamw_lrs
    for wd in cfg.adamw_wds
  ]
  runs += [("soda_adamw", {"lr": lr}) for lr in cfg.soda_adamw_lrs]
  runs += [
    ("muon", {"lr": lr, "wd": wd, "adam_lr": cfg.muon_adam_lr})
    for lr in cfg.muon_lrs
    for wd in cfg.muon_wds
  ]
  runs += [
    ("soda_muon", {"lr": lr, "adam_lr": cfg.muon_adam_lr})
    for lr in cfg.soda_muon_lrs
  ]
  return runs


def digits(cfg):
  """sklearn's 8x8 digits, shuffled by ``data_seed``, standardised on the first
  ``num_train``."""
  from sklearn.datasets import load_digits

  x, y = load_digits(return_X_y=True)
  perm = np.random.default_rng(cfg.data_seed).permutation(len(x))
  x, y = x[perm].astype(np.float32) / 16.0, y[perm].astype(np.int32)
  x = (x - x[: cfg.num_train].mean(0)) / (x[: cfg.num_train].std(0) + 1e-3)
  return jnp.asarray(x[: cfg.num_train]), jnp.asarray(y[: cfg.num_train])


def build(families, runs, seeds, steps, cfg, data):
  """A jitted chunk of ``steps`` vmapped steps for one group and its initial
  state.

  Every run carries the states of all of ``families`` and applies its own
  family's update (``hp["arm"]``): under ``vmap`` every family's update is
  computed for every run.
  """
  xs, ys = data
  graphdef, _ = nnx.split(soda.DigitsMLP(cfg.hidden, rngs=nnx.Rngs(0)))
  fams, hps = zip(*runs)
  per_run = lambda v: jnp.asarray(
    [x for x in v for _ in range(seeds)], jnp.float32
  )
  hp = {
    "arm": jnp.asarray(
      [families.index(f) for f in fams for _ in range(seeds)], jnp.int32
    ),
    "lr": per_run([h["lr"] for h in hps]),
    "wd": per_run([h.get("wd", 0.0) for h in hps]),
    "adam_lr": per_run([h.get("adam_lr", 0.0) for h in hps]),
  }
  hp["total"] = jnp.full_like(hp["lr"], 1000.0)
  keys = jnp.stack([jax.random.key(s) for _ in hps for s in range(seeds)])

  def loss_fn(params, batch):
    logits = nnx.merge(graphdef, params)(batch[0])
    return optax.softmax_cross_entropy_with_integer_labels(
      logits, batch[1]
    ).mean()

  def init(h, key):
    params = nnx.split(
      soda.DigitsMLP(cfg.hidden, rngs=nnx.Rngs(jax.random.fold_in(key, 0)))
    )[1]
    return params, tuple(make_tx(f, h, cfg).init(params) for f in families)

  def step(state, h, key, i):
    params, states = state
    batch_key = jax.random.fold_in(jax.random.fold_in(key, 1), i)
    idx = jax.random.randint(batch_key, (cfg.batch_size,), 0, xs.shape[0])
    loss, grads = jax.value_and_grad(loss_fn)(params, (xs[idx], ys[idx]))
    outs = [
      make_tx(f, h, cfg).update(grads, s, params)
      for f, s in zip(families, states)
    ]
    updates = jax.tree.map(
      lambda *us: jnp.select([h["arm"] == j for j in range(len(us))], us),
      *[o[0] for o in outs],
    )
    return (
      optax.apply_updates(params, updates),
      tuple(o[1] for o in outs),
    ), loss

  state = jax.jit(jax.vmap(init))(hp, keys)

  @jax.jit
  def chunk(state):
    def body(s, i):
      return jax.vmap(lambda st, h, k: step(st, h, k, i))(s, hp, keys)

    return jax.lax.scan(body, state, jnp.arange(steps))

  jax.block_until_ready(chunk(state))  # compile
  return chunk, state, len(runs) * seeds


def parse_args(argv=None):
  ap = bench.parser(NAME, __doc__)
  ap.add_argument(
    "--seeds",
    type=int,
    default=None,
    help=("seeds per grid point (3; quick: 1)"),
  )
  ap.add_argument(
    "--steps",
    type=int,
    default=None,
    help=("steps per timed chunk (50; quick: 5)"),
  )
  ap.add_argument(
    "--repeats", type=int, default=None, help=("timed chunks (5; quick: 3)")
  )
  args = ap.parse_args(argv)
  args.seeds = args.seeds or (1 if args.quick else 3)
  args.steps = args.steps or (5 if args.quick else 50)
  args.repeats = args.repeats or (3 if args.quick else 5)
  return args


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()

  cfg = experiment_config("soda", "default").digits
  data = digits(cfg)
  grid = family_grid(cfg)
  # quick: the first 2 grid points of each family
  per_family = 2 if args.quick else None

  def pick(fams):
    return [
      r for f in fams for r in [(g, h) for g, h in grid if g == f][:per_family]
    ]

  variants = {
    "adam": (("adamw", "soda_adamw"), pick(("adamw", "soda_adamw"))),
    "muon+soda_muon": (("muon", "soda_muon"), pick(("muon", "soda_muon"))),
    "muon": (("muon",), pick(("muon",))),
    "soda_muon": (("soda_muon",), pick(("soda_muon",))),
  }
  # the AdamW group is only the note's yardstick, not the speed-up: one
  if args.quick:
    # compilation (most of the quick mode's CPU time) fewer
    del variants["adam"]
  built = {
    k: build(f, r, args.seeds, args.steps, cfg, data)
    for k, (f, r) in variants.items()
  }
  times = {k: [] for k in variants}
  # in turn, so that a change of load hits every variant
  for _ in range(args.repeats):
    for k, (chunk, state, num_runs) in built.items():
      t0 = time.perf_counter()
      jax.block_until_ready(chunk(state))
      times[k].append(
        (time.perf_counter() - t0) / (args.steps * num_runs) * 1e3
      )
  ms = {k: float(np.median(v)) for k, v in times.items()}
  n_muon, n_soda = built["muon"][2], built["soda_muon"][2]
  after = (ms["muon"] * n_muon + ms["soda_muon"] * n_soda) / (n_muon + n_soda)
  vs_adam = (
    {
      "muon_over_adam_before": ms["muon+soda_muon"] / ms["adam"],
      "muon_over_adam_after": after / ms["adam"],
    }
    if "adam" in ms
    else {}
  )
  out = {
    "ms_per_run_step": ms,
    "runs": {k: v[2] for k, v in built.items()},
    **vs_adam,
    "speedup_of_muon_arms": ms["muon+soda_muon"] / after,
    "seeds": args.seeds,
    "steps_per_chunk": args.steps,
    "repeats": args.repeats,
    "backend": jax.default_backend(),
  }
  summary = [
    bench.summary(
      (
        "Muon-family run-step: Muon and SODA(Muon) in one group / in split "
        "groups, speed-up"
      ),
      out["speedup_of_muon_arms"],
      ">= 1.5",
      note=(
        (
          f"a Muon-family run-step costs {out['muon_over_adam_after']:.1f}x "
          f"an AdamW one after the split ({out['muon_over_adam_before']:.1f}x "
          "before); wall-clock medians"
        )
        if vs_adam
        else (
          "wall-clock medians; the AdamW yardstick is timed in the full mode "
          "only"
        )
      ),
    )
  ]
  rows = [
    {"variant": k, "runs": built[k][2], "ms_per_run_step": times[k]}
    for k in variants
  ]
  bench.write(
    NAME, args, rows=rows, summary=summary, host=host, argv=argv, extra=out
  )
  return out


if __name__ == "__main__":
  main()
