"""Margin against dimension, the loss comparison and critical n for
maximal-margin embeddings.

Three measurements on generated relevance matrices: (1) the margin ``m_0``
against d of fitted free embeddings and of the paper's constructions, against
the exact optimum ``m^rd(inf, A)`` and the threshold ``d* = C k ln(n/k)``; (2)
sigmoid vs InfoNCE on the three margin notions; (3) critical n per d. Every
finished cell is stored in ``<workdir>/cells/`` (a rerun skips it); the fits of
a cell (every d x seed) run as one ``core.Sweep`` grid, checkpointed every
``chunk`` steps.
"""

from __future__ import annotations

import math
import pathlib
import time

import jax
import ml_collections
import numpy as np

import jaxpapers.margins as M
from experiments.margins.configs import default as default_config
from jaxpapers import core

LOSS_CHOICES = ("sigmoid", "sigmoid_b0", "infonce", "margin")


def _relevance(cfg: ml_collections.ConfigDict, n: int, k: int):
  N = math.comb(n, k)
  if N <= cfg.max_rows:
    return M.k_sparse_relevance(n, k), "all"
  return M.sample_k_subsets(
    cfg.seed + 1000 * n + k, cfg.sample_rows, n, k
  ), "sampled"


def _fit_cell(
  cfg: ml_collections.ConfigDict, A, loss: str, key, checkpoint_dir
) -> dict:
  """All dimensions of cfg.ds and all seeds for one loss, as one grid on
  ``core.Sweep``."""
  keys = jax.random.split(key, cfg.seeds)
  kw = dict(
    steps=cfg.steps,
    lr=cfg.lr,
    sweep=True,
    chunk_size=cfg.chunk or cfg.steps,
    checkpoint_dir=checkpoint_dir,
  )
  if loss == "sigmoid_b0":
    kw |= dict(learn_bias=False, init_bias=0.0)
  res = M.fit_free_embeddings(
    keys, A, list(cfg.ds), loss=loss.removesuffix("_b0"), **kw
  )
  out = {}
  U_all, V_all = np.asarray(res.U, np.float64), np.asarray(res.V, np.float64)
  for a, d in enumerate(cfg.ds):
    per_seed = [
      M.margins_float64(U_all[a, s], V_all[a, s], A) for s in range(cfg.seeds)
    ]
    stat = lambda f, m: float(f([p[m] for p in per_seed]))
    out[str(d)] = {
      "per_seed": per_seed,
      **{f"{m}_mean": stat(np.mean, m) for m in (*M.NOTIONS, "topk_accuracy")},
      **{f"{m}_std": stat(np.std, m) for m in M.NOTIONS},
      "m0_best": stat(np.max, "m0"),
      "final_log_t": float(np.mean(np.asarray(res.log_t[a]))),
      "final_b": float(np.mean(np.asarray(res.b[a]))),
    }
  return out


# what a construction's cell holds (its embeddings left out)
def _stored(result) -> dict:
  return result._asdict() | {"U": None, "V": None}


def _run_margin_vs_d(
  cfg: ml_collections.ConfigDict, cells: core.CellStore, key
) -> list[dict]:
  rows = []
  jobs = [(n, k) for n in cfg.ns for k in cfg.ks if k < n]
  bar = core.progress(total=len(jobs) * len(cfg.ds), desc="margin vs d")
  for n, k in jobs:
    A, kind = _relevance(cfg, n, k)
    m_inf = M.k_sparse_optimal_margin(n, k)
    orth = M.orthogonal_construction(n, k, A=None if kind == "all" else A)
    losses = cfg.losses if n == cfg.loss_n else ("margin",)
    nk_key = jax.random.fold_in(jax.random.fold_in(key, n), k)
    fit = lambda loss: (
      lambda ckpt: _fit_cell(cfg, A, loss, jax.random.fold_in(nk_key, 1), ckpt)
    )
    fits = {
      loss: cells.get_or_compute(f"fit/{n}/{k}/{loss}/{kind}", fit(loss))
      for loss in losses
    }
    for d in cfg.ds:
      ck = jax.random.fold_in(nk_key, d)
      row = {
        "n": n,
        "k": k,
        "d": d,
        "N": int(A.shape[0]),
        "rows": kind,
        "m_inf": m_inf,
        "d_star": cfg.threshold_C * k * math.log(n / k),
      }
      for loss in losses:
        row[loss] = fits[loss][str(d)]
      for q in ("sum", "svm"):
        cs = lambda _: _stored(
          M.cs_construction(
            jax.random.fold_in(ck, 2),
            n,
            k,
            d,
            A=A,
            queries=q,
            steps=cfg.svm_steps,
          )
        )
        row[f"cs_{q}"] = cells.get_or_compute(f"cs/{n}/{k}/{d}/{q}/{kind}", cs)
      jl = lambda _: _stored(
        M.jl_project(
          jax.random.fold_in(ck, 3),
          orth.U,
          orth.V,
          A,
          d,
          reoptimize_queries=True,
          steps=cfg.svm_steps,
        )
      )
      row["jl"] = cells.get_or_compute(f"jl/{n}/{k}/{d}/{kind}", jl)
      for r in ("cs_sum", "cs_svm", "jl"):
        row[r] = {
          "certificate": row[r]["certificate"],
          "bound": row[r]["bound"],
        }
      row["best_m0"] = max(
        [row[loss]["m0_best"] for loss in losses]
        + [row["cs_svm"]["certificate"], row["jl"]["certificate"]]
      )
      rows.append(row)
      bar.update(1)
  bar.close()
  return rows


def _refined_constants(
  rows, cfg: ml_collections.ConfigDict, cells: core.CellStore, key
) -> dict:
  """C = d_half / (k ln(n/k)) per (n, k) and seed on the integer d grid, with
  intervals."""
  per_nk = []
  for n in cfg.ns:
    for k in cfg.ks:
      rs = [r for r in rows if r["n"] == n and r["k"] == k]
      if not rs:
        continue
      A, kind = _relevance(cfg, n, k)
      fit = {str(r["d"]): r["margin"] for r in rs}
      nk_key = jax.random.fold_in(jax.random.fold_in(key, n), k)
      m0 = [
        [fit[str(d)]["per_seed"][s]["m0"] for d in cfg.ds]
        for s in range(cfg.seeds)
      ]
      bisect = lambda _: M.half_margin_dimensions(
        jax.random.fold_in(nk_key, 4),
        A,
        m0,
        cfg.ds,
        rs[0]["m_inf"],
        steps=cfg.steps,
        lr=cfg.lr,
        # per seed, the integer d reaching half the optimum, inside the grid's
        # bracket
      )
      ref = cells.get_or_compute(f"threshold/{n}/{k}/{kind}", bisect)
      per_nk.append(M.seed_threshold_constants(n, k, ref))
  return M.pooled_threshold_constants(per_nk, cfg.seeds)


def _run_critical(
  cfg: ml_collections.ConfigDict, cells: core.CellStore, key
) -> list[dict]:
  grid = M.critical_n_grid(cfg.critical_n_max, cfg.critical_k)

  def run(_):
    t0 = time.time()
    best, trace = M.critical_n(
      key,
      list(cfg.critical_ds),
      cfg.critical_k,
      n_grid=grid,
      n_max=cfg.critical_n_max,
      restarts=cfg.critical_restarts,
      steps=cfg.critical_steps,
      loss=cfg.critical_loss,
      return_trace=True,
    )
    return {
      "best": {str(d): n for d, n in best.items()},
      "trace": {
        str(n): {str(d): a for d, a in t.items()} for n, t in trace.items()
      },
      "wall_s": time.time() - t0,
    }

  res = cells.get_or_compute(
    f"critical/{cfg.critical_k}/{cfg.critical_loss}/{cfg.critical_n_max}", run
  )
  return [
    {
      "d": d,
      "critical_n": res["best"][str(d)],
      "wall_s": res["wall_s"],
      "grid": grid,
    }
    for d in cfg.critical_ds
  ]


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, in the shapes it reads them
  (pure).

  Returns:
    ``{"panels": [per (n, k): {"n", "k", "N", "rows", "m_inf", "d_star", "d",
    "fitted", "cs_sum", "cs_svm", "jl", "sigmoid", "infonce" (m_0 per d; the
    losses at loss_n only), "scaled_d", "scaled_m0"}], "threshold", "refined"
    (rows with text cells), "loss_rows", "losses": {notion: {k: {"losses":
    {loss: {"d", "mean", "std"}}}}}, "critical" (rows with "pred", "cap"),
    "grid", "poly" (text)}``.
  """
  m, cfg = record["metrics"], record["config"]
  groups: dict[tuple[int, int], list[dict]] = {}
  for r in sorted(m["margin_vs_d"], key=lambda r: (r["n"], r["k"], r["d"])):
    groups.setdefault((r["n"], r["k"]), []).append(r)
  panels, losses = [], {notion: {} for notion in M.NOTIONS}
  for (n, k), rs in groups.items():
    col = lambda f, rs=rs: [f(r) for r in rs]
    p = {
      **{f: rs[0][f] for f in ("n", "k", "N", "rows", "m_inf", "d_star")},
      "d": col(lambda r: r["d"]),
      "fitted": col(lambda r: r["margin"]["m0_best"]),
      **{
        q: col(lambda r, q=q: r[q]["certificate"])
        for q in ("cs_sum", "cs_svm", "jl")
      },
      **{
        l: col(lambda r, l=l: r[l]["m0_mean"])
        for l in ("sigmoid", "infonce")
        if l in rs[0]
      },
      "scaled_d": col(lambda r: r["d"] / (k * math.log(n / k))),
      "scaled_m0": col(lambda r: r["best_m0"] / r["m_inf"]),
    }
    panels.append(p)
    if n == cfg["loss_n"]:
      for notion in M.NOTIONS:
        losses[notion][str(k)] = {
          "losses": {
            l: {
              "d": p["d"],
              "mean": col(lambda r, l=l: r[l][f"{notion}_mean"]),
              "std": col(lambda r, l=l: r[l][f"{notion}_std"]),
            }
            for l in cfg["losses"]
          }
        }
  refined = (m.get("threshold_refined") or {}).get("per_nk", [])
  fit = m["critical_fit"]
  return {
    "panels": panels,
    "threshold": [
      {**q, "sqrt_k_m_inf": q["m_inf"] * math.sqrt(q["k"])}
      for q in m["threshold"]
    ],
    "refined": [
      {
        **q,
        "d_text": str(q["d_half_per_seed"]),
        "C_text": ", ".join(
          "n/a" if c is None else f"{c:.2f}" for c in q["C_per_seed"]
        ),
      }
      for q in refined
    ],
    "loss_rows": [r for r in m["margin_vs_d"] if r["n"] == cfg["loss_n"]],
    "losses": losses,
    "critical": [
      {
        **c,
        "pred": fit["pred"].get(str(c["d"])),
        "cap": " (= n_max)" if c["critical_n"] >= cfg["critical_n_max"] else "",
      }
      for c in m["critical_n"]
    ],
    "grid": str(m["critical_n"][0]["grid"] if m["critical_n"] else []),
    "poly": str([round(x, 3) for x in fit.get("poly", [])]),
  }


def train_and_evaluate(config, workdir) -> dict:
  """Runs the three measurements; writes results.json and plots into
  ``workdir``."""
  run_config, config = (
    config,
    core.config_view(config, default_config.get_config()),
  )
  core.validate_seeds(config.seeds, name="seeds")
  for loss in config.losses:
    core.validate_choice(loss, name="losses", allowed=LOSS_CHOICES)
  if "margin" not in config.losses:
    raise ValueError(
      "losses must include 'margin' (the direct objective is the fitted "
      "reference)."
    )
  core.validate_choice(
    config.critical_loss, name="critical_loss", allowed=M.LOSSES
  )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  cells = core.CellStore(workdir / "cells")
  key = jax.random.key(config.seed)
  rows = _run_margin_vs_d(config, cells, jax.random.fold_in(key, 0))
  knees = M.threshold_constants(rows, config.ns, config.ks)
  refine = config.refine_threshold
  refined = (
    _refined_constants(rows, config, cells, jax.random.fold_in(key, 2))
    if refine
    else None
  )
  crit = _run_critical(config, cells, jax.random.fold_in(key, 1))
  metrics = {
    "margin_vs_d": rows,
    "threshold": knees,
    "threshold_refined": refined,
    "loss_wins": M.loss_wins(rows, config.loss_n),
    "critical_n": crit,
    "critical_fit": M.critical_n_fit(
      crit, knees, config.critical_k, config.critical_n_max, config.threshold_C
    ),
  }
  metrics["derived"] = derived_metrics(metrics)
  # run_config's claims and issue_verdicts decide the verdicts
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      "Generated relevance matrices (all k-subsets, "
      "or distinct random k-subsets when there are more than max_rows). "
      "m_inf is exact (symmetry-reduced SDP dual). "
      "Constructions are reconstructions of the paper's; "
      "sigmoid/InfoNCE settings are our choices (Adam, full batch, t0 = 10, "
      "learned t and b). Wall times on shared CPU cores are noisy."
    ),
  )
  return metrics


def derived_metrics(metrics) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure, JSON
  in/out).

  ``sigmoid_win_fraction_<notion>``: sigmoid wins / compared cells;
  ``threshold_C_spread``: max C / min C over (n, k), inf when some (n, k) never
  reaches half the optimum (powers-of-two grid); ``threshold_C_fine_spread``:
  the same on the integer grid (seed-mean C per (n, k)), with the median and the
  pooled C and its 95% CI over seeds.
  """
  out = {}
  for notion, w in metrics["loss_wins"].items():
    total = w["sigmoid"] + w["infonce"] + w["tie"]
    out[f"sigmoid_win_fraction_{notion}"] = (
      w["sigmoid"] / total if total else None
    )
  cs = [q["C_half"] for q in metrics["threshold"]]
  if not cs:
    out["threshold_C_spread"] = None
  elif any(c is None for c in cs):
    out["threshold_C_spread"] = float("inf")
  else:
    out["threshold_C_spread"] = max(cs) / min(cs)
  ref = metrics.get("threshold_refined") or {}
  if "C_pooled_mean" in ref:
    out["threshold_C_fine_spread"] = ref["C_max"] / ref["C_min"]
    out["threshold_C_fine_median"] = ref["C_median"]
    out["threshold_C_fine_pooled"] = ref["C_pooled_mean"]
    out["threshold_C_fine_pooled_ci95"] = ref["C_pooled_ci95"]
  elif ref.get("per_nk"):
    # some (n, k) and seed never reached half
    out["threshold_C_fine_spread"] = float("inf")
  return out
