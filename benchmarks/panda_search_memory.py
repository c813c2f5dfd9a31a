"""Memory one training step of a search trial needs, by XLA's memory analysis
(nothing is run).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
  python -m benchmarks.panda_search_memory --data_dir=../shared/data --dataset=pubmed \\
      --cells=gedi:panda:0,hypergcn:panda:0,phenomnn:panda:0,phenomnn:panda:1,phenomnn:panda:2

For each ``backbone:arm:trial`` it builds the model at that trial's values (the
search's draws, ``configs/search.py``) and compiles one full-batch training step
(``panda.train_step``) with the search's XLA options, for one run and for
``--runs`` runs vmapped (parameters, optimiser state and keys stacked, as a
trial's program holds them). It records XLA's temporary-buffer size: the step's
scratch memory, which the whole trial program needs on top of its parameters. A
trial with ``search_splits`` runs per program holds the vmapped figure; one with
``--config.runs_per_program=1`` the single-run one. ``--quick``: the generated
``synthetic-small`` hypergraph (no data folder), cell ``gedi:vanilla:0`` (a
PANDA step takes about 15 CPU s to compile). A measurement without a target: the
record has no summary entries.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp

from benchmarks._setup import experiment_config, panda_dataset
from jaxpapers import hypergraph as hg
from jaxpapers import panda
from jaxpapers.core import benchmark as bench

NAME = "panda_search_memory"


def step_memory(config, d, backbone, arm, trial, runs):
  """XLA's memory analysis of ``runs`` vmapped training steps of ``trial``
  (bytes)."""
  hp = panda.applicable_hparams(
    panda.draw_trial(config.space, config.seed, trial), backbone, arm
  )
  graphdef, params, rest, opt = panda.init(
    panda.structure_model_fn(d, backbone, arm, hp), jax.random.key(0)
  )
  mask = jnp.asarray(d.train_mask[0], jnp.float32)

  def step(params, opt, data, key):
    return panda.train_step(
      graphdef, params, rest, opt, data, mask, key, hp["lr"], hp["wd"]
    )

  keys = jax.random.split(jax.random.key(1), runs)
  stack = lambda t: jax.tree.map(lambda x: jnp.stack([x] * runs), t)
  fn = jax.vmap(step, in_axes=(0, 0, None, 0))
  opts = panda.FAST_COMPILE if config.fast_compile else None
  compiled = (
    jax.jit(fn, compiler_options=opts)
    .lower(stack(params), stack(opt), d, keys)
    .compile()
  )
  m = compiled.memory_analysis()
  return hp, dict(
    temp_bytes=int(m.temp_size_in_bytes),
    argument_bytes=int(m.argument_size_in_bytes),
    output_bytes=int(m.output_size_in_bytes),
  )


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--data_dir", default="../shared/data")
  p.add_argument("--dataset", default="pubmed")
  p.add_argument("--cells", default="phenomnn:panda:0")
  p.add_argument(
    "--runs", type=int, default=0, help=("vmapped runs (default search_splits)")
  )
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  config = experiment_config("panda", "search")
  if a.quick:
    config.data_dir, dataset, cells = (
      "none",
      "synthetic-small",
      "gedi:vanilla:0",
    )
    config.synthetic_fallback = (dataset,)
  else:
    config.data_dir, dataset, cells = a.data_dir, a.dataset, a.cells
    config.datasets = (dataset,)
  data = {dataset: panda_dataset(config, dataset)}
  runs = a.runs or config.search_splits
  rows = []
  for cell in cells.split(","):
    backbone, arm, trial = cell.split(":")
    d = hg.backbone_input(backbone, data[dataset])
    row = dict(
      dataset=dataset,
      fast_compile=bool(config.fast_compile),
      backbone=backbone,
      arm=arm,
      trial=int(trial),
    )
    for n in sorted({1, runs}):
      hp, m = step_memory(config, d, backbone, arm, int(trial), n)
      row["hp"] = hp
      row[f"runs{n}"] = m
    print(json.dumps(row), flush=True)
    rows.append(row)
    # after every row: a stopped run keeps the rows it finished
    bench.write(NAME, a, rows=rows, summary=[], host=host, argv=argv)


if __name__ == "__main__":
  main()
