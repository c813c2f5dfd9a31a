"""Memory one training step of a search trial needs, by XLA's memory analysis (nothing is run).

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
  python benchmarks/panda_search_memory.py --data_dir=../shared/data --dataset=pubmed \\
      --cells=gedi:panda:0,hypergcn:panda:0,phenomnn:panda:0,phenomnn:panda:1,phenomnn:panda:2 \\
      --out=search_memory.json

For each ``backbone:arm:trial`` it builds the model at that trial's values (the search's draws,
``configs/search.py``) and compiles one full-batch training step (``panda.train_step``) with the
search's XLA options, for one run and for ``--runs`` runs vmapped (parameters, optimiser state
and keys stacked, as a trial's program holds them). It records XLA's temporary-buffer size: the
step's scratch memory, which the whole trial program needs on top of its parameters. A trial
with ``search_splits`` runs per program holds the vmapped figure; one with
``--config.runs_per_program=1`` the single-run one.
"""

from __future__ import annotations

import argparse
import json
import sys

import jax
import jax.numpy as jnp

from experiments.panda import search, train
from experiments.panda.configs import search as search_config
from jaxpapers import hypergraph as hg
from jaxpapers import panda


def step_memory(config, d, backbone, arm, trial, runs):
  """XLA's memory analysis of ``runs`` vmapped training steps of ``trial`` (bytes)."""
  hp = search.applicable(search.draw(config.space, config.seed, trial), backbone, arm)
  graphdef, params, rest, opt = panda.init(
    search.structure_model_fn(d, backbone, arm, hp), jax.random.key(0)
  )
  mask = jnp.asarray(d.train_mask[0], jnp.float32)

  def step(params, opt, data, key):
    return panda.train_step(graphdef, params, rest, opt, data, mask, key, hp["lr"], hp["wd"])

  keys = jax.random.split(jax.random.key(1), runs)
  stack = lambda t: jax.tree.map(lambda x: jnp.stack([x] * runs), t)
  fn = jax.vmap(step, in_axes=(0, 0, None, 0))
  opts = panda.FAST_COMPILE if config.fast_compile else None
  compiled = jax.jit(fn, compiler_options=opts).lower(stack(params), stack(opt), d, keys).compile()
  m = compiled.memory_analysis()
  return hp, dict(
    temp_bytes=int(m.temp_size_in_bytes),
    argument_bytes=int(m.argument_size_in_bytes),
    output_bytes=int(m.output_size_in_bytes),
  )


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--data_dir", default="../shared/data")
  ap.add_argument("--dataset", default="pubmed")
  ap.add_argument("--cells", default="phenomnn:panda:0")
  ap.add_argument("--runs", type=int, default=0, help="vmapped runs (default search_splits)")
  ap.add_argument("--out", default="")
  a = ap.parse_args()
  config = search_config.get_config()
  config.data_dir = a.data_dir
  config.datasets = (a.dataset,)
  data, _ = train.load_datasets(config)
  runs = a.runs or config.search_splits
  res = dict(
    command="python benchmarks/panda_search_memory.py " + " ".join(sys.argv[1:]),
    dataset=a.dataset,
    fast_compile=bool(config.fast_compile),
    backend=jax.default_backend(),
    versions=dict(jax=jax.__version__),
    rows=[],
  )
  for cell in a.cells.split(","):
    backbone, arm, trial = cell.split(":")
    d = hg.backbone_input(backbone, data[a.dataset])
    row = dict(backbone=backbone, arm=arm, trial=int(trial))
    for n in sorted({1, runs}):
      hp, m = step_memory(config, d, backbone, arm, int(trial), n)
      row["hp"] = hp
      row[f"runs{n}"] = m
    print(json.dumps(row), flush=True)
    res["rows"].append(row)
    if a.out:  # after every row: a stopped run keeps the rows it finished
      with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
  main()
