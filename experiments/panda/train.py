"""PANDA benchmark: every backbone, vanilla vs PANDA, on identical splits with
an equal sweep.

Each (dataset, backbone, arm) cell trains all splits vmapped for every (lr, wd)
sweep point (``panda.make_trainer`` on ``core.Sweep``; lr and wd are traced, so
the sweep compiles once) and keeps the point with the best mean validation
accuracy; the headline is the mean over pairs of PANDA - vanilla test accuracy
(pp). Finished cells live in ``<workdir>/cells/`` (``core.CellStore``);
``merge_cells_from`` and ``report_only`` combine and tabulate the cells of
several processes. The statistics (paired tests, intervals, ablations) are at
the end.
"""

from __future__ import annotations

import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments.panda.configs import default
from jaxpapers import core, panda
from jaxpapers import hypergraph as hg

ARMS = tuple(
  (
    "vanilla panda without_aux without_prior_aux without_gate prior_only "
    "vanilla_matched"
  ).split()
)
# PANDA with one component removed (``panda.ABLATIONS``), compared with the full
# PANDA arm
ABLATION_ARMS = (
  "without_gate",
  "without_aux",
  "without_prior_aux",
  "prior_only",
)
# what results.json keeps of each cell (metrics.per_cell)
CELL_METRICS = (
  "test_mean test_std val_mean best_lr best_wd first_call_s wall_s params"
).split()


def matched_hidden(config, backbone, data) -> int:
  """The smallest vanilla ``hidden`` whose parameter count reaches the PANDA
  arm's.

  The capacity control: PANDA adds stage weights (and ``heads`` widens its
  layers), so the ``vanilla_matched`` arm gives the vanilla backbone at least as
  many parameters.
  """
  target = panda.count_params(_model_fn(config, backbone, "panda", data))
  lo, hi = config.hidden, config.hidden
  while (
    panda.count_params(_model_fn(config, backbone, "vanilla", data, hidden=hi))
    < target
  ):
    lo, hi = hi, 2 * hi
  while lo < hi:
    mid = (lo + hi) // 2
    if (
      panda.count_params(
        _model_fn(config, backbone, "vanilla", data, hidden=mid)
      )
      >= target
    ):
      hi = mid
    else:
      lo = mid + 1
  return hi


def load_datasets(config) -> tuple[dict, str]:
  """Returns ({name: directed data}, source): real data if any is found, else
  synthetic.

  ``config.data_dir`` (or, when it is empty, ``$JAXPAPERS_DATA_DIR``) that is
  set must hold ``hypergraph/`` and every dataset of ``config.datasets``, or
  this raises naming it: a directory that was given is never replaced by
  ``../shared/data`` or by synthetic data. The synthetic sets of
  ``config.synthetic_fallback`` are used only when nothing was given and
  ``../shared/data/hypergraph`` does not exist, or with ``data_dir='none'``.
  ``source`` says which data was used and where it came from (recorded in
  results.json as ``data_source``).
  """
  root, found_in = None, "data_dir='none'"
  if config.data_dir != "none":
    root, found_in = core.locate_data_dir(
      config.data_dir or None, subdir="hypergraph", required=False
    )
  names = tuple(
    config.datasets if root is not None else config.synthetic_fallback
  )
  if not names:
    field = "datasets" if root is not None else "synthetic_fallback"
    raise ValueError(
      f"config.{field} is empty: name at least one dataset (a key of "
      "hypergraph.DATASETS or '<format>/<name>'; synthetic: "
      "'synthetic-small' or 'synthetic-inter<k>')"
    )
  # Shipped splits: the first num_splits of them; otherwise seeded generated
  # splits.
  kw = dict(
    num_splits=config.num_splits,
    seed=config.seed,
    max_features=config.max_features,
  )
  out = {name: panda.load_dataset(name, root, **kw) for name in names}
  # As given (a relative data_dir stays relative in results.json), else the
  # place it was found by name (never this machine's absolute path).
  if root is not None and config.data_dir:
    return out, f"{config.data_dir.rstrip('/')}/hypergraph"
  if root is not None:
    return out, f"hypergraph/ in the data folder found as {found_in}"
  if config.data_dir == "none":
    return out, "synthetic (make_synthetic; data_dir='none')"
  return out, (
    f"synthetic (make_synthetic; no data_dir or ${core.DATA_DIR_ENV_VAR} "
    "given and no ../shared/data/hypergraph beside the checkout)"
  )


def _model_fn(config, backbone, arm, data, hidden=None):
  if arm == "vanilla_matched":
    arm, hidden = "vanilla", matched_hidden(config, backbone, data)
  kw = dict(
    hidden=config.hidden if hidden is None else hidden, dropout=config.dropout
  )
  if backbone == "phenomnn":
    kw["num_steps"] = config.phenom_steps
  else:
    kw["num_layers"] = config.num_layers
  cfg = (
    None
    if arm == "vanilla"
    else panda.PandaConfig(heads=config.heads, **panda.ABLATIONS[arm])
  )
  f, k = int(data.x.shape[1]), data.num_classes
  return lambda rngs: panda.make_model(
    backbone, cfg, in_features=f, num_classes=k, rngs=rngs, **kw
  )


def run_cell(config, data, backbone, arm, checkpoint_dir=None) -> dict:
  """Sweeps (lr, wd) with all splits vmapped; selects by mean validation
  accuracy.

  With ``checkpoint_dir``, sweep point ``i`` checkpoints every ``config.chunk``
  epochs under ``<checkpoint_dir>/point<i>`` and resumes from there when rerun.
  """
  d = hg.backbone_input(backbone, data)
  r = min(config.num_splits, d.num_splits)
  chunk = config.chunk or config.epochs
  if config.epochs % chunk:
    raise ValueError(
      f"epochs ({config.epochs}) must be a multiple of chunk ({chunk})"
    )
  model_fn = _model_fn(config, backbone, arm, d)
  run = panda.make_trainer(
    model_fn,
    config.epochs,
    fast_compile=config.fast_compile,
    chunk_size=chunk,
  )
  sweep = [(lr, wd) for lr in config.lrs for wd in config.weight_decays]
  res, t0, compile_s = [], time.perf_counter(), None
  for i, (lr, wd) in enumerate(sweep):
    keys = jax.random.split(
      jax.random.fold_in(jax.random.key(config.seed), i), r
    )
    ts = time.perf_counter()
    hist = run(
      d,
      keys,
      jnp.full((r,), lr),
      jnp.full((r,), wd),
      jnp.arange(r),
      checkpoint_dir=None
      if checkpoint_dir is None
      else checkpoint_dir / f"point{i}",
    )
    hist = jax.tree.map(np.asarray, hist)
    if compile_s is None:
      compile_s = time.perf_counter() - ts
    va, te, ep = panda.best_val_test(hist)
    res.append(
      dict(lr=lr, wd=wd, val=va.tolist(), test=te.tolist(), epoch=ep.tolist())
    )
  best = _best_point(res)
  te = np.asarray(best["test"]) * 100
  return dict(
    dataset=d.name,
    backbone=backbone,
    arm=arm,
    test_mean=float(te.mean()),
    test_std=float(te.std()),
    val_mean=float(np.mean(best["val"]) * 100),
    best_lr=best["lr"],
    best_wd=best["wd"],
    splits=r,
    params=panda.count_params(model_fn),
    sweep=res,
    first_call_s=compile_s,
    wall_s=time.perf_counter() - t0,
  )


def _read_cells(folder) -> dict:
  """The finished cells of another workdir: its ``cells/`` store, or a single
  ``cells.json``."""
  folder = pathlib.Path(folder)
  if (folder / "cells").is_dir():
    return core.CellStore(folder / "cells").to_dict()
  if (folder / "cells.json").exists():
    return json.loads((folder / "cells.json").read_text())
  raise FileNotFoundError(
    f"merge_cells_from: {folder} holds no cells/ store or cells.json"
  )


def merged_store(workdir: pathlib.Path, sources) -> core.CellStore:
  """``<workdir>/cells``, with the cells of ``sources`` (other workdirs) that it
  lacks added."""
  store = core.CellStore(workdir / "cells")
  for other in sources:
    for k, v in _read_cells(other).items():
      if k not in store:
        store.put(k, v)
  return store


def majority_baseline(data: hg.HypergraphData, num_splits: int) -> dict:
  """Test accuracy (%) of predicting each split's most frequent training label
  (trivial arm)."""
  y = np.asarray(data.y)
  tr, te = np.asarray(data.train_mask), np.asarray(data.test_mask)
  r = min(num_splits, tr.shape[0])
  acc = [
    100 * np.mean(y[te[i]] == np.bincount(y[tr[i]]).argmax()) for i in range(r)
  ]
  return {"mean": float(np.mean(acc)), "std": float(np.std(acc))}


def improvement(cells, pairs, backbones) -> dict:
  """PANDA - vanilla test accuracy (pp) of each of ``pairs``
  (``'<dataset>|<backbone>'``, in order) that has both cells.

  Returns:
    ``{"deltas": {pair: pp}, "mean_improvement_pp" (the claim's number: the mean
    over the deltas in order), "per_backbone_improvement_pp": {backbone: mean
    pp}, "cells_improved"}``; a mean over no pairs is None.
  """
  both = [p for p in pairs if f"{p}|panda" in cells and f"{p}|vanilla" in cells]
  deltas = {
    p: cells[f"{p}|panda"]["test_mean"] - cells[f"{p}|vanilla"]["test_mean"]
    for p in both
  }
  mean = lambda v: float(np.mean(v)) if v else None
  return dict(
    deltas=deltas,
    mean_improvement_pp=mean(list(deltas.values())),
    per_backbone_improvement_pp={
      b: mean([v for p, v in deltas.items() if p.rsplit("|", 1)[1] == b])
      for b in backbones
    },
    cells_improved=int(sum(v > 0 for v in deltas.values())),
  )


def _timing(cell, epochs, points) -> tuple[float, float] | None:
  """(compile seconds, ms per epoch of all vmapped splits) from a cell's
  timings, or None.

  The first of the ``points`` sweep calls includes tracing and compilation,
  later ones do not (lr and wd are traced), so with >= 2 sweep points: run =
  (wall - first) / (points - 1) and compile = first - run.
  """
  if points < 2 or cell.get("first_call_s") is None:
    return None
  run = (cell["wall_s"] - cell["first_call_s"]) / (points - 1)
  return max(cell["first_call_s"] - run, 0.0), 1e3 * run / epochs


def report_view(record: dict) -> dict:
  """What the reports of ``configs/default.py`` and ``configs/search.py`` read
  (pure).

  Returns:
    ``{"cols": ["<backbone> <arm>"], "rows": {dataset: [cell or {} per column]},
    "gains" (per-backbone PANDA - vanilla text), "perf": [{"ds", "b", "compile",
    "ms", "ratio"}] (cells whose timing is known), "pairs": [{"ds", "b", "v",
    "p", "st", "hv", "hp"}] (the search's rows), "bars": {backbone: {"x":
    datasets, "y": [pp or None]}} or None}``.
  """
  m, c = record["metrics"], record["config"]
  cells, names, bbs = (
    m["per_cell"],
    list(m["majority_test_acc"]),
    c["backbones"],
  )
  points = len(c["lrs"]) * len(c["weight_decays"])
  hp = lambda x: ", ".join(  # a search cell's selected hyperparameters
    f"{k}={h:.3g}" if isinstance(h, float) else f"{k}={h}"
    for k, h in sorted(x["hp"].items())
  )
  text = lambda x: (
    f"t{x['selected_trial']}: {hp(x)}" if x and "hp" in x else "-"
  )
  perf, pairs, deltas = [], [], {b: {} for b in bbs}
  for ds in names:
    for b in bbs:
      v, p = (cells.get(f"{ds}|{b}|{a}") for a in ("vanilla", "panda"))
      tv, tp = (
        None if x is None else _timing(x, c["epochs"], points) for x in (v, p)
      )
      if tv and tp:
        ms = [tv[1], tp[1]]
        perf.append(
          dict(ds=ds, b=b, compile=[tv[0], tp[0]], ms=ms, ratio=ms[1] / ms[0])
        )
      if v or p:
        st = {
          k: x
          for k, x in m["per_pair"].get(f"{ds}|{b}", {}).items()
          if x is not None
        }
        pairs.append(
          dict(ds=ds, b=b, v=v or {}, p=p or {}, st=st, hv=text(v), hp=text(p))
        )
      deltas[b][ds] = p["test_mean"] - v["test_mean"] if v and p else None
  shown = m.get("coverage", {}).get("datasets_covered") or names
  gains = m["per_backbone_improvement_pp"]
  return dict(
    cols=[f"{b} {a}" for b in bbs for a in c["arms"]],
    rows={
      ds: [cells.get(f"{ds}|{b}|{a}", {}) for b in bbs for a in c["arms"]]
      for ds in names
    },
    gains=", ".join(
      f"{b}: {v:+.2f}" for b, v in gains.items() if v is not None
    ),
    perf=perf,
    pairs=pairs,
    bars={
      b: dict(x=shown, y=[d[ds] for ds in shown]) for b, d in deltas.items()
    }
    if cells
    else None,
  )


def prior_flags(finals, majority, band: float = 0.5) -> dict:
  """The cells that do not beat the train-majority predictor, in two lists.

  ``cells_at_majority``: test mean within ``band`` pp of the predictor's (either
  side); ``cells_below_majority``: more than ``band`` pp below it. A cell in
  either list has not learned more than the class prior, so a PANDA - vanilla
  difference involving it measures a model leaving (or falling to) the prior
  rather than one model beating another.
  """
  at, below = [], []
  for k, v in finals.items():
    ds = k.split("|")[0]
    if ds not in majority:  # a set without a baseline is not judged
      continue
    gap = v["test_mean"] - majority[ds]["mean"]
    if abs(gap) < band:
      at.append(k)
    elif gap <= -band:
      below.append(k)
  return dict(cells_at_majority=sorted(at), cells_below_majority=sorted(below))


def majority_note(majority, cells_at_majority, cells_below_majority=()) -> str:
  """The results notes' sentence on the majority-class baseline and the cells at
  or below it."""
  note = (
    " Majority class (train-split majority label, test accuracy %): "
    + ", ".join(
      f"{ds} {m['mean']:.1f} ± {m['std']:.1f}" for ds, m in majority.items()
    )
  )
  if cells_at_majority:
    note += "; cells within 0.5 pp of it: " + ", ".join(cells_at_majority)
  if cells_below_majority:
    note += "; cells more than 0.5 pp below it: " + ", ".join(
      cells_below_majority
    )
  return note


def train_and_evaluate(config, workdir) -> dict:
  """Runs the benchmark and writes ``results.json`` (tables and the bar plot:
  ``config.report``) and the ``cells/`` store.

  The code reads ``core.config_view`` of ``config`` against
  ``configs/default.py``, so a config with a search space
  (``configs/search.py``, run by :mod:`experiments.panda.search`) is refused.
  """
  t0 = time.time()
  run_config, config = config, core.config_view(config, default.get_config())
  for a in config.arms:
    core.validate_choice(a, name="arms", allowed=ARMS)
  for b in config.backbones:
    core.validate_choice(b, name="backbones", allowed=tuple(hg.BACKBONES))
  core.validate_positive(config.epochs, name="epochs")
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  data, source = load_datasets(config)
  cells = _fill_cells(config, workdir, data)
  metrics, notes = _summarize(config, cells, data, source)
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    notes=notes,
    wall_time_s=time.time() - t0,
    extra=dict(datasets={ds: data[ds].summary() for ds in data}),
  )
  return metrics


def _fill_cells(config, workdir: pathlib.Path, data: dict) -> dict:
  """Runs every missing (dataset, backbone, arm) cell of the config's grid into
  the workdir's store (none with ``report_only``), after merging the cells of
  ``merge_cells_from``.

  Returns:
    ``{'<dataset>|<backbone>|<arm>': cell}`` for the cells of the config's grid
    in the store.
  """
  # cells run by other processes (workdirs)
  sources = list(config.merge_cells_from)
  # a workdir written before the cell store: resume it
  if (workdir / "cells.json").exists():
    sources.append(workdir)
  store = merged_store(workdir, sources)
  todo = [
    (ds, b, a) for ds in data for b in config.backbones for a in config.arms
  ]
  for ds, b, a in core.progress(todo, desc="panda cells"):
    key = f"{ds}|{b}|{a}"
    if key in store or config.report_only:
      continue
    c = store.get_or_compute(
      key, lambda ckpt, ds=ds, b=b, a=a: run_cell(config, data[ds], b, a, ckpt)
    )
    logging.info(
      "%s: %.2f +- %.2f (%.0fs)",
      key,
      c["test_mean"],
      c["test_std"],
      c["wall_s"],
    )
  # the config's grid only (a merged source may hold cells of other datasets or
  # arms)
  grid = {(b, a) for b in config.backbones for a in config.arms}
  return {
    k: v
    for k, v in store.to_dict().items()
    if tuple(k.split("|")[1:]) in grid and k.split("|")[0] in data
  }


def _summarize(
  config, cells: dict, data: dict, source: str
) -> tuple[dict, str]:
  """The run's metrics (improvements, majority baselines, paired statistics, the
  derived block) and its notes, from the cells of the grid."""
  names = list(data)
  majority = {
    ds: majority_baseline(data[ds], config.num_splits) for ds in names
  }
  imp = improvement(
    cells,
    [f"{ds}|{b}" for b in config.backbones for ds in names],
    config.backbones,
  )
  metrics = dict(
    mean_improvement_pp=imp["mean_improvement_pp"],
    per_backbone_improvement_pp=imp["per_backbone_improvement_pp"],
    cells_improved=imp["cells_improved"],
    cells=len(imp["deltas"]),
    data_source=source,
    majority_test_acc=majority,
    cells_at_majority=prior_flags(cells, majority)["cells_at_majority"],
    per_cell={
      k: {kk: v[kk] for kk in CELL_METRICS if kk in v} for k, v in cells.items()
    },
  )
  notes = (
    f"Data: {source}. Test accuracy (%) at the best-validation epoch, "
    f"mean ± std over {config.num_splits} splits; "
    f"sweep lr {tuple(config.lrs)} x wd {tuple(config.weight_decays)} "
    "identical for every arm, selected by mean validation accuracy; "
    f"{config.epochs} epochs, hidden {config.hidden}, {config.heads} heads."
  )
  notes += majority_note(majority, metrics["cells_at_majority"]) + "."
  metrics["per_pair"] = pair_statistics(cells)
  abl_pairs = {
    arm: pair_statistics(cells, baseline=arm)
    for arm in ABLATION_ARMS
    if arm in config.arms
  }
  # paired per-split PANDA - ablation for every pair (as for PANDA - vanilla)
  if abl_pairs:
    metrics["ablation_per_pair"] = abl_pairs
  metrics["derived"] = derived_metrics(metrics)
  return metrics, notes


def _best_point(sweep: list[dict]) -> dict:
  """The sweep point with the highest mean validation accuracy (the first one on
  a tie)."""
  return max(sweep, key=lambda z: np.mean(z["val"]))


def _selected_tests(cell) -> np.ndarray | None:
  """Per-split test accuracy (%) of the cell's selected sweep point (None if not
  stored)."""
  sweep = cell.get("sweep")
  if not sweep:
    return None
  chosen = [
    z
    for z in sweep
    if z["lr"] == cell["best_lr"] and z["wd"] == cell["best_wd"]
  ]
  best = chosen[0] if chosen else _best_point(sweep)
  return np.asarray(best["test"], np.float64) * 100


def pair_statistics(
  cells, arm: str = "panda", baseline: str = "vanilla", tests=_selected_tests
) -> dict:
  """Paired per-split comparison of ``arm`` against ``baseline`` for every
  (dataset, backbone).

  Both arms of a pair run on the same splits (split ``s`` is the same mask in
  both), so the split-wise differences d_s = acc_arm,s - acc_base,s (pp) are
  paired. For each pair: their mean, the 95% paired t half-width t_{0.975, r-1}
  sd(d) / sqrt(r), the exact two-sided sign-flip permutation p-value over all
  2^r sign patterns (with r = 3 splits its smallest value is 0.25, so no single
  pair can be significant at 5% by that test), and ``outcome``: 'better' /
  'worse' when the t interval excludes 0, else 'tie'. ``tests(cell)`` gives a
  cell's per-split test accuracies in % (default: those of its selected sweep
  point).
  """
  out = {}
  for key in sorted(cells):
    pair = key.removesuffix(f"|{baseline}")
    if pair == key or f"{pair}|{arm}" not in cells:
      continue
    a, b = tests(cells[f"{pair}|{arm}"]), tests(cells[key])
    if a is None or b is None or a.shape != b.shape:
      continue
    t = core.paired_difference(a, b)
    half = t.half_width if t.n >= 2 else None
    outcome = (
      "tie"
      if half is None or abs(t.mean) <= half
      else ("better" if t.mean > 0 else "worse")
    )
    out[pair] = dict(
      diff_pp=t.mean,
      t95_pp=half,
      sign_flip_p=core.sign_flip_test(a - b).p_value,
      outcome=outcome,
      splits=t.n,
      diffs_pp=(a - b).tolist(),
    )
  return out


def derived_metrics(metrics) -> dict:
  """The noise of the headline, for the claim in ``configs/default.py`` (pure,
  JSON in/out).

  ``mean_improvement_ci95_pp`` = 1.96 x sample std / sqrt(n) of the n paired
  PANDA - vanilla differences (None with fewer than 2 pairs); ``pairs_better`` /
  ``_worse`` / ``_tie`` count the pairs by the paired per-split t interval of
  :func:`pair_statistics` (``metrics['per_pair']``). Also used to re-judge
  committed results (``python -m experiments.reproduce --rejudge=panda``).
  """
  mean = lambda v: float(np.mean(v)) if v else None
  ci95 = lambda v: (
    float(1.96 * np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) >= 2 else None
  )
  cells = metrics["per_cell"]
  pairs = [k[: -len("|vanilla")] for k in cells if k.endswith("|vanilla")]
  deltas = _gains(cells, pairs, "panda", "vanilla")
  out = {"mean_improvement_ci95_pp": ci95(deltas), "pairs": len(deltas)}
  # capacity control: PANDA against the vanilla arm with at least PANDA's
  # parameter count
  vm = _gains(cells, pairs, "panda", "vanilla_matched")
  out["mean_improvement_vs_matched_pp"] = mean(vm)
  out["mean_matched_minus_vanilla_pp"] = mean(
    _gains(cells, pairs, "vanilla_matched", "vanilla")
  )
  out["matched_pairs"] = len(vm)
  no_tg = _gains(
    cells,
    pairs,
    "panda",
    "vanilla",
    keep=lambda p: not p.startswith("telegram|"),
  )
  out["mean_improvement_without_telegram_pp"] = mean(no_tg)
  per_pair = metrics.get("per_pair") or {}
  for outcome in ("better", "worse", "tie"):
    out[f"pairs_{outcome}"] = sum(
      v["outcome"] == outcome for v in per_pair.values()
    )
  # ablations: PANDA minus PANDA-without-a-component, over the pairs that have
  # both
  abl = {}
  for arm in ABLATION_ARMS:
    if d := _gains(cells, _pairs(cells), "panda", arm):
      abl[arm] = dict(
        panda_minus_ablation_pp=mean(d),
        ci95_pp=ci95(d),
        pairs=len(d),
        pairs_panda_higher=int(sum(x > 0 for x in d)),
      )
  if abl:
    out["ablations"] = abl
  out.update(_cluster_gains(cells, pairs))
  return out


def _cluster_gains(cells, pairs) -> dict:
  """The mean PANDA - vanilla gain's interval over pairs and splits (search
  records only).

  When every cell of the pairs has its per-split test accuracies
  (``split_test``, fractions, each averaged over the initialisations),
  ``d[pair, split]`` = PANDA - vanilla in pp on the same split, and
  :func:`jaxpapers.core.cluster_bootstrap` resamples pairs and then splits
  within them (seed 0, 10,000 resamples):
  ``mean_improvement[_without_telegram]_cluster95_pp`` is its 95% percentile
  interval and ``..._cluster95_half_pp`` the half-width of the symmetric
  interval around the mean that contains it, max(mean - lo, hi - mean), which a
  claim's noise reads. Records without ``split_test`` (the grid runs) get no
  keys.
  """
  ps = [p for p in pairs if p + "|panda" in cells]
  if not ps or any(
    "split_test" not in cells[f"{p}|{a}"] for p in ps for a in panda.SEARCH_ARMS
  ):
    return {}
  out = {}
  for name, keep in (
    ("", ps),
    ("_without_telegram", [p for p in ps if not p.startswith("telegram|")]),
  ):
    split = lambda p, a: np.asarray(cells[f"{p}|{a}"]["split_test"])
    d = (
      np.array(
        [np.subtract(split(p, "panda"), split(p, "vanilla")) for p in keep]
      )
      * 100
    )
    lo_hi, half = (
      f"mean_improvement{name}_cluster95_pp",
      f"mean_improvement{name}_cluster95_half_pp",
    )
    if d.size < 2:
      out[lo_hi] = out[half] = None
      continue
    b = core.cluster_bootstrap(d, seed=0)
    out[lo_hi], out[half] = [b.lo, b.hi], b.half_width
  return out


def _gains(cells, pairs, a: str, b: str, keep=lambda p: True) -> list[float]:
  """Arm ``a`` minus arm ``b`` test accuracy (pp) of each pair (in order) that
  has both."""
  return [
    cells[f"{p}|{a}"]["test_mean"] - cells[f"{p}|{b}"]["test_mean"]
    for p in pairs
    if f"{p}|{a}" in cells and f"{p}|{b}" in cells and keep(p)
  ]


def _pairs(cells) -> list[str]:
  """The (dataset, backbone) prefixes of every cell key
  ``'<dataset>|<backbone>|<arm>'``."""
  return sorted({k.rsplit("|", 1)[0] for k in cells})
