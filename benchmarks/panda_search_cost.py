"""CPU cost of the equal-budget search's trials: one program per trial vs one
per structure.

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
  python -m benchmarks.panda_search_cost [--quick] --data_dir=../shared/data

On Texas (``configs/search.py``'s epochs and splits), for each (backbone, arm)
it takes two trials of the search whose static structure (layers, hidden, heads,
PhenomNN steps) is equal and times, in one process, with the process CPU clock:

* ``before``: each trial builds and compiles its own program with its values
  built in (dropout, PhenomNN's lambdas static), and the final re-run (10 splits
  x 2 inits, two calls of 10 runs) compiles a program for its batch size;
* ``after``: the search as it runs, through :class:`jaxpapers.panda.TrialCache`
  (one program per structure, dropout and lambdas traced; the final re-run in
  batches of the trial's size), the first trial compiling, the second and the
  final reusing it.

``--fast_compile`` also times the ``after`` path with XLA's fast-compile
options. ``--quick``: the generated ``synthetic-small`` hypergraph (no data
folder), GeDi vanilla, 5 epochs, 2 search splits, a final of 2 splits x 1
initialisation. Both paths use the search's run keys
(:func:`jaxpapers.panda.trial_keys`); the config is
``experiments/panda/configs/search.py``, read from its file, and the data are
loaded as the experiment loads them (:func:`jaxpapers.panda.load_dataset`).
"""

from __future__ import annotations

import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks._setup import experiment_config, panda_dataset
from jaxpapers import hypergraph as hg
from jaxpapers import panda
from jaxpapers.core import benchmark as bench

NAME = "panda_search_cost"


def _pair(config, backbone, arm, limit=64):
  """The first two trials with the same structure for (backbone, arm)."""
  seen = {}
  for t in range(limit):
    hp = panda.applicable_hparams(
      panda.draw_trial(config.space, config.seed, t), backbone, arm
    )
    s = panda.trial_structure(hp)
    if s in seen:
      return seen[s], t
    seen[s] = t
  raise RuntimeError(f"no two trials share a structure among the first {limit}")


def _before(config, d, backbone, arm, trials):
  """The earlier search: a program per trial (values built in), the final its
  own batch."""
  out = []
  for t in trials:
    c0 = time.process_time()
    hp = panda.applicable_hparams(
      panda.draw_trial(config.space, config.seed, t), backbone, arm
    )
    r = min(config.search_splits, d.num_splits)
    run = panda.make_trainer(
      panda.trial_model_fn(d, backbone, arm, hp),
      config.epochs,
      fast_compile=config.fast_compile,
    )
    keys = panda.trial_keys(config.seed, 0, t, r)
    h = run(
      d, keys, jnp.full(r, hp["lr"]), jnp.full(r, hp["wd"]), jnp.arange(r)
    )
    panda.best_val_test(jax.tree.map(np.asarray, h))
    out.append(time.process_time() - c0)
  c0 = time.process_time()
  r = min(config.num_splits, d.num_splits)
  # the final of the last trial, reusing its trainer
  for j in range(config.final_inits):
    keys = panda.trial_keys(config.seed, 1, j, r)
    h = run(
      d, keys, jnp.full(r, hp["lr"]), jnp.full(r, hp["wd"]), jnp.arange(r)
    )
    panda.best_val_test(jax.tree.map(np.asarray, h))
  out.append(time.process_time() - c0)
  return out


def _after(config, d, backbone, arm, trials):
  """The search: its trials through one :class:`panda.TrialCache`, then the last
  one's final."""
  r = min(config.search_splits, d.num_splits)
  cache = panda.TrialCache(
    d,
    backbone,
    epochs=config.epochs,
    runs=r,
    fast_compile=config.fast_compile,
    runs_per_program=config.get("runs_per_program", None),
  )
  out = []
  for t in trials:
    c0 = time.process_time()
    hp = panda.applicable_hparams(
      panda.draw_trial(config.space, config.seed, t), backbone, arm
    )
    cache.train(arm, hp, panda.trial_keys(config.seed, 0, t, r), np.arange(r))
    out.append(time.process_time() - c0)
  c0 = time.process_time()
  # the final: final_inits x num_splits runs, init-major, in batches of the
  # trial's size
  n = min(config.num_splits, d.num_splits)
  keys = jnp.concatenate(
    [panda.trial_keys(config.seed, 1, j, n) for j in range(config.final_inits)]
  )
  cache.train(arm, hp, keys, np.tile(np.arange(n), config.final_inits))
  out.append(time.process_time() - c0)
  return out


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--data_dir", default="../shared/data")
  p.add_argument("--dataset", default="texas")
  p.add_argument("--cells", default="gedi:vanilla,gedi:panda,phenomnn:panda")
  p.add_argument("--fast_compile", action="store_true")
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  config = experiment_config("panda", "search")
  if a.quick:
    config.data_dir, dataset, cells = "none", "synthetic-small", "gedi:vanilla"
    config.synthetic_fallback, config.epochs = (dataset,), 5
    config.num_splits, config.search_splits, config.final_inits = 2, 2, 1
  else:
    config.data_dir, dataset, cells = a.data_dir, a.dataset, a.cells
    config.datasets = (dataset,)
  data = {dataset: panda_dataset(config, dataset)}
  rows, summary = [], []
  for cell in cells.split(","):
    backbone, arm = cell.split(":")
    d = hg.backbone_input(backbone, data[dataset])
    trials = _pair(config, backbone, arm)
    row = dict(
      dataset=dataset,
      epochs=config.epochs,
      search_splits=config.search_splits,
      backbone=backbone,
      arm=arm,
      trials=list(trials),
    )
    row["before"] = _before(config, d, backbone, arm, trials)
    row["after"] = _after(config, d, backbone, arm, trials)
    if a.fast_compile:
      fc = config.copy_and_resolve_references()
      fc.fast_compile = True
      row["after_fast_compile"] = _after(fc, d, backbone, arm, trials)
    print(json.dumps(row), flush=True)
    rows.append(row)
    summary.append(
      bench.summary(
        (
          f"{dataset} {backbone} {arm}: two trials of one structure and the "
          "final, a program per trial / one per structure"
        ),
        sum(row["before"]) / sum(row["after"]),
        ">= 1",
        note="process CPU time",
      )
    )
    # after every row: a stopped run keeps the rows it finished
    bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
