"""Equal-budget random search for the PANDA benchmark (``configs/search.py``).

Both arms of a (dataset, backbone) pair get the same ``config.trials`` seeded
draws over ``config.space`` (:func:`jaxpapers.panda.draw_trial`, prefix-stable);
a trial trains ``search_splits`` vmapped runs on one compiled program per
structure (:class:`jaxpapers.panda.TrialCache`). The trial with the best mean
validation accuracy (:func:`jaxpapers.panda.select_trial`) is re-trained on
``num_splits`` splits x ``final_inits`` initialisations in batches of the
trial's size; those runs give the cell's mean +- std and the pair's paired test.
Every trial and final batch is a cell of ``core.CellStore`` run by
``core.CellRunner`` (``'<ds>|<backbone>|<arm>|trial<t>'``,
``'...|final<t>|batch<k>'``, joined into ``'...|final<t>'``), so a run resumes
and a run with more trials reuses a smaller one's. ``max_cpu_s`` stops starting
cells; ``final_shard = (i, n)`` lets ``n`` processes share the final batches
(``k % n == i``), merged back with ``merge_cells_from``.
"""

from __future__ import annotations

import pathlib
import time

import jax.numpy as jnp
import numpy as np

from experiments.panda import train
from experiments.panda.configs import search as search_config
from jaxpapers import core, panda
from jaxpapers import hypergraph as hg


def trial_cache(config, data, backbone: str) -> panda.TrialCache:
  """The compiled trial programs of one (dataset, backbone)'s search (both arms
  share it).

  Runs go through a structure's program in batches of ``search_splits`` runs
  (the batch a search trial uses), so that a final re-run reuses its trial's
  compiled program; ``config.runs_per_program`` (default ``search_splits``)
  makes the program's batch smaller.
  """
  return panda.TrialCache(
    data,
    backbone,
    epochs=config.epochs,
    runs=min(config.search_splits, data.num_splits),
    fast_compile=config.fast_compile,
    runs_per_program=config.runs_per_program,
  )


def trial_hparams(
  config, cache: panda.TrialCache, arm: str, trial: int
) -> tuple[dict, int | None]:
  """Trial ``trial``'s values for ``arm``, and the parameter count they were
  matched to.

  With ``config.match_params`` (equal-parameter search) the PANDA arm's
  ``hidden`` is replaced by the width at which its model has as many parameters
  as the vanilla arm's model of the same draw
  (:func:`jaxpapers.panda.match_hidden`); the vanilla arm keeps the drawn width.
  Returns ``(hp, target)`` with ``target`` that vanilla count (None without
  matching or for vanilla).
  """
  draw = panda.draw_trial(config.space, config.seed, trial)
  hp = panda.applicable_hparams(draw, cache.backbone, arm)
  if not config.match_params or arm == "vanilla":
    return hp, None
  vanilla = panda.applicable_hparams(draw, cache.backbone, "vanilla")
  target = panda.count_params(
    panda.trial_model_fn(cache.data, cache.backbone, "vanilla", vanilla)
  )
  hp["hidden"], _ = panda.match_hidden(
    cache.data, cache.backbone, arm, hp, target
  )
  return hp, target


def run_trial(config, cache: panda.TrialCache, arm: str, trial: int) -> dict:
  """Trial ``trial`` of one (dataset, backbone, arm) cell on the first
  ``search_splits`` splits."""
  hp, target = trial_hparams(config, cache, arm, trial)
  r = min(config.search_splits, cache.data.num_splits)
  out = cache.train(
    arm, hp, panda.trial_keys(config.seed, 0, trial, r), np.arange(r)
  )
  return dict(trial=trial, hp=hp, **out) | (
    {} if target is None else {"params_target": target}
  )


def _final_layout(config, data) -> tuple[int, int, int]:
  """``(splits r, inits, batch size b)`` of a final: ``inits x r`` runs, in
  batches of ``b``."""
  r, b = (
    min(config.num_splits, data.num_splits),
    min(config.search_splits, data.num_splits),
  )
  return r, config.final_inits, b


def final_batches(config, data) -> int:
  """How many batches (of ``search_splits`` runs, as a trial) a final's runs
  take."""
  r, inits, b = _final_layout(config, data)
  return -(-(r * inits) // b)


def run_final_batch(
  config, cache: panda.TrialCache, arm: str, trial: int, batch: int
) -> dict:
  """Batch ``batch`` of trial ``trial``'s final: runs ``[batch * b,
  (batch + 1) * b)``.

  A final's runs are its ``final_inits`` initialisations x ``num_splits``
  splits, init-major; ``b = search_splits``. The batch is exactly the one
  :func:`run_final` trains at that offset (the last one padded by repeating its
  last run).
  """
  data = cache.data
  n = final_batches(config, data)
  if (
    isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch < n
  ):
    raise ValueError(f"batch must be an int in [0, {n}), got {batch!r}")
  hp, _ = trial_hparams(config, cache, arm, trial)
  r, inits, b = _final_layout(config, data)
  keys = jnp.concatenate(
    [panda.trial_keys(config.seed, 1, j, r) for j in range(inits)]
  )
  lo, hi = batch * b, min((batch + 1) * b, r * inits)
  splits = np.tile(np.arange(r), inits)[lo:hi]
  o = cache.train(arm, hp, keys[lo:hi], splits)
  return dict(trial=trial, batch=batch, hp=hp, **o)


def join_final(config, data, parts) -> dict:
  """The final of one trial from all its batches (:func:`run_final_batch`), in
  batch order.

  ``cpu_s`` and ``wall_s`` (when the batches carry them, as stored cells do) are
  the sums.
  """
  n = final_batches(config, data)
  if [p.get("batch") for p in parts] != list(range(n)):
    raise ValueError(
      f"join_final needs batches 0..{n - 1} in order, "
      f"got {[p.get('batch') for p in parts]}"
    )
  if len({p["trial"] for p in parts}) != 1:
    raise ValueError("join_final: the batches come from different trials")
  r, inits, _ = _final_layout(config, data)
  cat = lambda k, s=1: (
    (np.concatenate([p[k] for p in parts]) * s).reshape(inits, r).tolist()
  )
  out = dict(
    trial=parts[0]["trial"],
    hp=parts[0]["hp"],
    test_runs=cat("test", 100),  # [inits, splits], %
    val_runs=cat("val", 100),
    best_epoch_runs=cat("epoch"),
    splits=r,
    inits=inits,
    params=parts[0]["params"],
  )
  for k in ("cpu_s", "wall_s"):
    if all(k in p for p in parts):
      out[k] = float(sum(p[k] for p in parts))
  return out


def run_final(config, cache: panda.TrialCache, arm: str, trial: int) -> dict:
  """Trial ``trial``'s configuration on ``num_splits`` splits x ``final_inits``
  inits."""
  parts = [
    run_final_batch(config, cache, arm, trial, k)
    for k in range(final_batches(config, cache.data))
  ]
  return join_final(config, cache.data, parts)


def final_cell(trials: list, final: dict) -> dict:
  """A (dataset, backbone, arm) cell's results record (``metrics.per_cell``)
  from its trials and the selected trial's final."""
  # [inits, splits], %
  test, val = np.array(final["test_runs"]), np.array(final["val_runs"])
  return dict(
    test_mean=float(test.mean()),
    test_std=float(test.std()),
    val_mean=float(val.mean()),
    selected_trial=panda.select_trial(trials),
    hp=final["hp"],
    params=final["params"],
    # per split, averaged over the inits
    split_test=(test.mean(0) / 100).tolist(),
    median_best_epoch=float(np.median(final["best_epoch_runs"])),
    search_cpu_s=float(sum(t["cpu_s"] for t in trials)),
    final_cpu_s=final["cpu_s"],
  )


def _trials(store, cell: str, n: int):
  """The ``n`` trial cells of ``'<dataset>|<backbone>|<arm>'``, or None while
  any is missing."""
  trials = [store.get(f"{cell}|trial{t:03d}") for t in range(n)]
  return None if any(x is None for x in trials) else trials


def _describe(cell) -> str:
  """The log line's summary of a trial or final-batch cell: its mean validation
  accuracy."""
  return f"val {100 * np.mean(cell['val']):.1f}"


def _split_tests(cell):
  """Per-split test accuracy (%) of a final cell, averaged over its
  initialisations."""
  st = cell.get("split_test")
  return None if st is None else np.asarray(st, np.float64) * 100


def train_and_evaluate(config, workdir) -> dict:
  """Runs the search (resumable) and writes ``results.json`` (tables and the bar
  plot: ``configs/search.py``'s report) and ``cells/``."""
  t0 = time.time()
  run_config, config = (
    config,
    core.config_view(config, search_config.get_config()),
  )
  panda.check_search_space(config.space)
  for a in config.arms:
    core.validate_choice(a, name="arms", allowed=panda.SEARCH_ARMS)
  for b in config.backbones:
    core.validate_choice(b, name="backbones", allowed=tuple(hg.BACKBONES))
  for nm in ("epochs", "trials", "search_splits", "final_inits", "num_splits"):
    core.validate_positive(config[nm], name=nm)
  shard = _shard(config)
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  data, source = train.load_datasets(config)
  store = train.merged_store(workdir, config.merge_cells_from)
  runner = core.CellRunner(
    store,
    budget_s=float(config.max_cpu_s),
    report_only=config.report_only,
    describe=_describe,
  )
  for ds in data:
    for b in config.backbones:
      d = hg.backbone_input(b, data[ds])
      # one compiled program per (arm, structure)
      cache = trial_cache(config, d, b)
      for t in range(config.trials):
        for a in config.arms:
          runner.cell(
            f"{ds}|{b}|{a}|trial{t:03d}",
            lambda a=a, t=t: run_trial(config, cache, a, t),
          )
      for a in config.arms:
        trials = _trials(store, f"{ds}|{b}|{a}", config.trials)
        if trials is None:
          continue
        best = panda.select_trial(trials)
        key = f"{ds}|{b}|{a}|final{best:03d}"
        if key in store:
          continue
        parts = []
        for k in range(final_batches(config, d)):
          name = f"{key}|batch{k:02d}"
          # this process's batch: the runner reads or computes it
          if k % shard[1] == shard[0]:
            part = runner.cell(
              name,
              lambda a=a, best=best, k=k: run_final_batch(
                config, cache, a, best, k
              ),
            )
          else:  # another process's: present only once merged in
            part = store.get(name)
          parts.append(part)
        if all(p is not None for p in parts):
          store.put(key, join_final(config, d, parts))
  return report(
    run_config, config, workdir, store, data, source, runner.stopped, t0
  )


def _shard(config) -> tuple[int, int]:
  """``config.final_shard`` as ``(i, n)`` with ``0 <= i < n`` (default ``(0, 1)``)."""
  v = config.final_shard
  ok = isinstance(v, (tuple, list)) and len(v) == 2
  ok = ok and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
  if not ok or not 0 <= v[0] < v[1]:
    raise ValueError(
      f"final_shard must be (i, n) with ints 0 <= i < n, got {v!r}"
    )
  return int(v[0]), int(v[1])


def _finals(config, store, names) -> dict:
  """``'<dataset>|<backbone>|<arm>' -> summary`` of every cell whose trials and
  final are done."""
  out = {}
  for ds in names:
    for b in config.backbones:
      for a in config.arms:
        key = f"{ds}|{b}|{a}"
        trials = _trials(store, key, config.trials)
        if trials is None:
          continue
        final = store.get(f"{key}|final{panda.select_trial(trials):03d}")
        if final is not None:
          out[key] = final_cell(trials, final)
  return out


def param_match(store, trial_cells) -> dict:
  """How close each matched PANDA trial came to its vanilla draw's parameter
  count.

  Returns:
    ``{"max_abs_dev": max |P_panda / P_vanilla - 1| over the matched trial cells (None without
    any), "trials_matched": their number}``.
  """
  devs = [
    abs(store[k]["params"] / store[k]["params_target"] - 1.0)
    for k in trial_cells
    if "params_target" in store[k]
  ]
  return dict(max_abs_dev=max(devs) if devs else None, trials_matched=len(devs))


def report(
  run_config, config, workdir, store, data, source, stopped, t0
) -> dict:
  names = list(data)
  finals = _finals(config, store, names)
  imp = train.improvement(
    finals, sorted({k.rsplit("|", 1)[0] for k in finals}), config.backbones
  )
  deltas = imp["deltas"]
  pairs = list(deltas)
  per_pair = train.pair_statistics(finals, tests=_split_tests)
  majority = {
    ds: train.majority_baseline(data[ds], config.num_splits) for ds in names
  }
  covered = sorted({p.split("|")[0] for p in pairs}, key=names.index)
  trial_cells = [
    k for k in store.keys() if "|trial" in k and k.split("|")[0] in names
  ]
  metrics = dict(
    mean_improvement_pp=imp["mean_improvement_pp"],
    per_backbone_improvement_pp={
      b: v
      for b, v in imp["per_backbone_improvement_pp"].items()
      if v is not None
    },
    cells=len(deltas),
    cells_improved=imp["cells_improved"],
    coverage=dict(
      datasets_covered=covered,
      datasets_configured=names,
      pairs=pairs,
      pairs_configured=len(names) * len(config.backbones),
      trials_per_cell=int(config.trials),
      epochs=int(config.epochs),
      trial_cells_done=len(trial_cells),
      stopped_by_cpu_budget=bool(stopped),
      search_cpu_s=float(sum(store[k]["cpu_s"] for k in trial_cells)),
      final_cpu_s=float(sum(v["final_cpu_s"] for v in finals.values())),
    ),
    data_source=source,
    majority_test_acc=majority,
    **train.prior_flags(finals, majority),
    cells_early_best_epoch=sorted(
      k for k, v in finals.items() if v["median_best_epoch"] <= 5
    ),
    per_cell=finals,
    per_pair=per_pair,
  )
  if config.match_params:
    metrics["param_match"] = param_match(store, trial_cells)
  metrics["derived"] = train.derived_metrics(metrics)
  notes = (
    f"Data: {source}. Equal-budget random search: "
    f"{config.trials} trials per (dataset, backbone, arm), "
    "the same seeded draws for both arms, each trial on the first "
    f"{config.search_splits} splits, {config.epochs} epochs, "
    "selected by mean validation accuracy; the selected configuration "
    f"re-trained on {config.num_splits} splits x {config.final_inits} "
    "initialisations; test accuracy (%) at each run's best-validation epoch, "
    f"mean ± std over the {config.num_splits * config.final_inits} runs. "
    "Paired test per pair over the splits (each averaged over the "
    f"initialisations). Coverage: {len(pairs)} of "
    f"{metrics['coverage']['pairs_configured']} configured pairs, "
    f"datasets {', '.join(covered) or 'none'}."
  )
  notes += train.majority_note(
    majority, metrics["cells_at_majority"], metrics["cells_below_majority"]
  )
  if metrics["cells_early_best_epoch"]:
    notes += "; cells whose median best-validation epoch is <= 5: " + ", ".join(
      metrics["cells_early_best_epoch"]
    )
  notes += "."
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    notes=notes,
    wall_time_s=time.time() - t0,
    extra=dict(datasets={ds: data[ds].summary() for ds in names}),
  )
  return metrics
