"""CPU cost of the equal-budget search's trials: one program per trial vs one per structure.

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
  python benchmarks/panda_search_cost.py --data_dir=../shared/data --out=cost.json

On Texas (``configs/search.py``'s epochs and splits), for each (backbone, arm) it takes two
trials of the search whose static structure (layers, hidden, heads, PhenomNN steps) is equal
and times, in one process, with the process CPU clock:

* ``before``: each trial builds and compiles its own program with its values built in (dropout,
  PhenomNN's lambdas static), and the final re-run (10 splits x 2 inits, two calls of 10 runs)
  compiles a program for its batch size;
* ``after``: ``experiments/panda/search.py`` as it runs (``_program``: one program per
  structure, dropout and lambdas traced; the final re-run in batches of the trial's size),
  the first trial compiling, the second and the final reusing it.

``--fast_compile`` also times the ``after`` path with XLA's fast-compile options.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.panda import search, train
from experiments.panda.configs import search as search_config
from jaxpapers import hypergraph as hg
from jaxpapers import panda


def _pair(config, backbone, arm, limit=64):
  """The first two trials with the same structure for (backbone, arm)."""
  seen = {}
  for t in range(limit):
    hp = search.applicable(search.draw(config.space, config.seed, t), backbone, arm)
    s = search.structure(hp)
    if s in seen:
      return seen[s], t
    seen[s] = t
  raise RuntimeError(f"no two trials share a structure among the first {limit}")


def _before(config, d, backbone, arm, trials):
  """The earlier search: a program per trial (values built in), the final its own batch."""
  out = []
  for t in trials:
    c0 = time.process_time()
    hp = search.applicable(search.draw(config.space, config.seed, t), backbone, arm)
    r = min(config.search_splits, d.num_splits)
    run = panda.make_trainer(
      search.model_fn(d, backbone, arm, hp), config.epochs, fast_compile=config.fast_compile
    )
    keys = search._keys(config.seed, 0, t, r)
    h = run(d, keys, jnp.full(r, hp["lr"]), jnp.full(r, hp["wd"]), jnp.arange(r))
    panda.best_val_test(jax.tree.map(np.asarray, h))
    out.append(time.process_time() - c0)
  c0 = time.process_time()
  r = min(config.num_splits, d.num_splits)
  for j in range(config.final_inits):  # the final of the last trial, reusing its trainer
    keys = search._keys(config.seed, 1, j, r)
    h = run(d, keys, jnp.full(r, hp["lr"]), jnp.full(r, hp["wd"]), jnp.arange(r))
    panda.best_val_test(jax.tree.map(np.asarray, h))
  out.append(time.process_time() - c0)
  return out


def _after(config, d, backbone, arm, trials):
  cache, out = {}, []
  for t in trials:
    c0 = time.process_time()
    search.run_trial(config, d, backbone, arm, t, cache)
    out.append(time.process_time() - c0)
  c0 = time.process_time()
  search.run_final(config, d, backbone, arm, trials[-1], cache)
  out.append(time.process_time() - c0)
  return out


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--data_dir", default="../shared/data")
  ap.add_argument("--dataset", default="texas")
  ap.add_argument("--cells", default="gedi:vanilla,gedi:panda,phenomnn:panda")
  ap.add_argument("--fast_compile", action="store_true")
  ap.add_argument("--out", default="")
  a = ap.parse_args()
  config = search_config.get_config()
  config.data_dir = a.data_dir
  config.datasets = (a.dataset,)
  data, _ = train.load_datasets(config)
  res = dict(dataset=a.dataset, epochs=config.epochs, search_splits=config.search_splits)
  res["rows"] = []
  for cell in a.cells.split(","):
    backbone, arm = cell.split(":")
    d = hg.backbone_input(backbone, data[a.dataset])
    trials = _pair(config, backbone, arm)
    row = dict(backbone=backbone, arm=arm, trials=list(trials))
    row["before"] = _before(config, d, backbone, arm, trials)
    row["after"] = _after(config, d, backbone, arm, trials)
    if a.fast_compile:
      fc = config.copy_and_resolve_references()
      fc.fast_compile = True
      row["after_fast_compile"] = _after(fc, d, backbone, arm, trials)
    print(json.dumps(row), flush=True)
    res["rows"].append(row)
    if a.out:  # after every row: a stopped run keeps the rows it finished
      with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
  main()
