"""E4, dimension reduction: does the needed dimension grow with the number of
queries N?

``n`` documents and their unrestricted optimum
(``jaxpapers.margins.symmetric_optimum``) are fixed and ``N`` grows over nested
families of query rows; for each ``d`` and seed one Gaussian map projects (a)
queries and documents, (b) documents only, queries re-solved
(``project_documents``), (c) documents, against a random unit query per row (the
trivial baseline). ``d_f(N)`` is the dimension that keeps a fraction ``f`` of
the margin; the claims (``configs/e4.py``) test the slope of ``ln d_f`` against
``log10 N``. Each ``d`` is one cell of ``<workdir>/cells/``, so an interrupted
run resumes.
"""

from __future__ import annotations

import math
import pathlib
import time

import jax
import ml_collections
import numpy as np

import jaxpapers.margins as M
from experiments.margins.configs import e4 as e4_config
from jaxpapers import core

METHODS = ("projected", "resolved", "random")
LABELS = {
  "projected": "(a) queries + documents projected",
  "resolved": "(b) documents projected, queries re-solved",
  "random": "(c) random unit queries",
}


def _cell(
  cfg: ml_collections.ConfigDict, src: dict, perms, key, d: int
) -> dict:
  """Per method and seed, the margin of each nested family of rows after one
  Gaussian map."""
  out, gaps = {m: [] for m in METHODS}, []
  for s in range(cfg.seeds):
    # All rows, each seed reading its prefixes; or only this seed's rows, in
    # prefix order.
    used = slice(None) if cfg.all_rows else perms[s][: max(cfg.Ns)]
    order = perms[s] if cfg.all_rows else np.arange(max(cfg.Ns))
    ks = jax.random.fold_in(jax.random.fold_in(key, s), d)
    rows = M.projected_row_margins(
      ks, src["U"][used], src["V"], src["A"][used], d, steps=cfg.steps
    )
    gaps.append(rows["fista_gap"])
    for m in METHODS:
      out[m].append([float(np.min(rows[m][order[:N]])) for N in cfg.Ns])
  out["fista_gap_max"] = max(gaps)
  return out


def _mean_ci(xs):
  xs = [x for x in xs if x is not None]
  if not xs:
    return None, None
  return float(np.mean(xs)), (core.ci95_halfwidth(xs) if len(xs) > 1 else None)


def analyse(cfg: ml_collections.ConfigDict, src: dict, cells: dict) -> dict:
  """Retained fractions, d_f per (method, seed, N), slopes and the bounds'
  dimensions."""
  retained = {
    m: [
      [np.asarray(cells[d][m][s]) / src["m_src"] for d in cfg.ds]
      for s in range(cfg.seeds)
    ]
    for m in METHODS
  }  # [S, D, len(Ns)]
  kw = dict(m_src=src["m_src"], n=cfg.n, delta=cfg.delta)
  an = M.dimension_growth(retained, list(cfg.ds), cfg.Ns, cfg.fractions, **kw)
  return an | {"fista_gap_max": max(cells[d]["fista_gap_max"] for d in cfg.ds)}


def derived_metrics(metrics) -> dict:
  """The values the claims of ``configs/e4.py`` are judged on (f = f_claim)."""
  f = str(metrics["f_claim"])
  sl = metrics["analysis"]["slopes"][f]
  out = {}
  for name in ("projected", "resolved", "gap"):
    mean, ci = _mean_ci(sl[name])
    complete = all(x is not None for x in sl[name])
    out[f"slope_{name}_mean"] = mean if complete else None
    out[f"slope_{name}_ci95"] = ci if complete else None
    ok = complete and ci is not None
    out[f"slope_{name}_ci_high"] = mean + ci if ok else None
    out[f"slope_{name}_ci_low"] = mean - ci if ok else None
  dn = metrics["analysis"]["d_needed"][f]
  ratios = [
    None if a[-1] is None or b[-1] is None else a[-1] / b[-1]
    for a, b in zip(dn["projected"], dn["resolved"], strict=True)
  ]
  complete = all(r is not None for r in ratios)
  mean, ci = _mean_ci(ratios)
  out["dim_ratio_mean"] = mean if complete else None
  out["dim_ratio_ci_low"] = mean - ci if complete and ci is not None else None
  out["random_retained_max_d"] = float(
    np.mean(metrics["analysis"]["retained_mean"]["random"][-1])
  )
  return out


def report_view(record: dict) -> dict:
  """What ``configs/e4.py``'s report reads, in the shapes it reads them (pure).

  Returns:
    ``{"dneed": [per (f, method): {"f", "method", "cells": [text per N],
    "slope"}], "retained_cols", "retained": [per d: {"d", "v": [seed-mean
    retained fraction per column]}], "documents_only", "jl" (text),
    "confidence", "curves": {label: {"mean", "ci"} per d} (the smallest and the
    largest N), "needed": {label: {"N", "mean", "ci"}} (f = f_claim, the N that
    every seed reached)}``.
  """
  m, cfg = record["metrics"], record["config"]
  an, Ns, ds, f = m["analysis"], m["Ns"], m["ds"], str(m["f_claim"])
  dneed, needed = [], {}
  for fr in an["d_needed"]:
    for meth in ("projected", "resolved"):
      cells, mean_ci = [], []
      for j in range(len(Ns)):
        vals = [per_seed[j] for per_seed in an["d_needed"][fr][meth]]
        mean_ci.append(None if any(v is None for v in vals) else _mean_ci(vals))
        cells.append(
          f"> {max(ds)}"
          if mean_ci[-1] is None
          else "{:.0f} ± {:.0f}".format(*mean_ci[-1])
        )
      slopes = an["slopes"][fr][meth]
      sl = (
        "{:+.3f} ± {:.3f}".format(*_mean_ci(slopes))
        if None not in slopes
        else "-"
      )
      dneed.append(
        {"f": fr, "method": LABELS[meth], "cells": cells, "slope": sl}
      )
      if fr == f:
        keep = [j for j, mc in enumerate(mean_ci) if mc is not None]
        needed[LABELS[meth]] = {
          "N": [Ns[j] for j in keep],
          **dict(zip(("mean", "ci"), zip(*[mean_ci[j] for j in keep]))),
        }
  ends = (0, len(Ns) - 1)
  bd = an["bound_dims"][f]
  rm, rc = an["retained_mean"], an["retained_ci95"]
  return {
    "dneed": dneed,
    "retained_cols": [f"{meth} N={Ns[j]}" for meth in METHODS for j in ends],
    "retained": [
      {"d": d, "v": [rm[meth][i][j] for meth in METHODS for j in ends]}
      for i, d in enumerate(ds)
    ],
    "documents_only": bd["documents_only"],
    "jl": ", ".join(f"N = {N}: d = {bd['jl'][str(N)]}" for N in Ns),
    "confidence": str(1 - cfg["delta"]),
    "curves": {
      f"{LABELS[meth]}, N = {Ns[j]}": {
        "mean": [rm[meth][i][j] for i in range(len(ds))],
        "ci": [rc[meth][i][j] for i in range(len(ds))],
      }
      for meth in METHODS
      for j in ends
    },
    "needed": needed,
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs E4; writes results.json, table.md and the plot into ``workdir``."""
  run_config, config = config, core.config_view(config, e4_config.get_config())
  core.validate_seeds(config.seeds, name="seeds")
  Ns, total = list(config.Ns), math.comb(config.n, config.k)
  if not Ns or Ns != sorted(set(Ns)) or Ns[0] < 2 or Ns[-1] > total:
    raise ValueError(
      f"Ns must increase strictly within [2, C(n, k) = {total}], "
      f"got {config.Ns}."
    )
  if list(config.ds) != sorted(set(config.ds)) or config.ds[0] < 1:
    raise ValueError(
      f"ds must be positive and strictly increasing, got {config.ds}."
    )
  if config.f_claim not in config.fractions:
    raise ValueError(
      f"f_claim {config.f_claim} must be one of fractions {config.fractions}."
    )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  store = core.CellStore(workdir / "cells")
  key = jax.random.key(config.seed)
  k0 = jax.random.fold_in(key, 0)
  perms = [
    np.asarray(jax.random.permutation(jax.random.fold_in(k0, s), total))
    for s in range(config.seeds)
  ]
  used = (
    None
    if config.all_rows
    else np.concatenate([p[: max(config.Ns)] for p in perms])
  )
  src = M.symmetric_optimum(
    config.n, config.k, steps=config.source_steps, rows=used
  )._asdict()
  kproj = jax.random.fold_in(key, 1)
  grid = {f"e4/d={d}": (config, src, perms, kproj, d) for d in config.ds}
  cells = dict(
    zip(config.ds, core.fill_cells(store, grid, _cell, desc=("E4 d grid")))
  )
  an = analyse(config, src, cells)
  metrics = {
    "source": {k: src[k] for k in ("s", "m_src", "m_inf")},
    "Ns": Ns,
    "ds": list(config.ds),
    "f_claim": config.f_claim,
    "cells": {str(d): cells[d] for d in config.ds},
    "analysis": an,
  }
  metrics["derived"] = derived_metrics(metrics)
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      "Generated k-subset relevance; the source is the exact unrestricted "
      "optimum (explicit symmetric embeddings in R^{n+1}); "
      "one Gaussian map per (d, seed) shared by the three methods; "
      "N grows over nested random families of rows. "
      "A Gaussian map from R^{n+1} to d > n+1 dimensions distorts inner "
      "products exactly as from any higher-dimensional rotated copy, "
      "so large d is meaningful for the projected-query route."
    ),
  )
  return metrics
