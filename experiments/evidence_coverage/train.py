"""Top-k sweeps on shifted local linear ICL: recall vs accuracy, coverage margin, controls.

``train_and_evaluate(config, workdir)`` runs, for every (pool size P, cluster count J) setting,
every (s_x, s_w) shift cell and every seed, one dense top-``k_max`` retrieval and evaluates
every budget k as a prefix (one jitted program per reader and context), writes
``results.json``, the tables and PNG plots, and resumes: every finished cell is stored in
``<workdir>/cells/`` (``core.CellStore``) and skipped on a rerun.

Per cell: Recall@k and purity; the coverage margin ``Delta(k) = C_eff(k) - A(k)`` and its
boundary k*; answer accuracy and MSE of the one-step GD (fixed step), one-step GD (line-search
step), ridge and prior-only readers with retrieved, oracle, labels-shuffled, other-query and
random context; the constant-mean predictor; the regime label of each reader; and the
calibrated threshold controller (tau chosen on the dev queries, applied to the test queries).
Varying P and J moves the mean cluster size P / J, which is what pins k* by construction; the
claims compare k* with a budget read off P / J and with a per-setting constant.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import jax
import numpy as np

import jaxpapers.evidence_coverage as E
from jaxpapers import core

READERS = ("gd", "gd_ls", "ridge")
READER_NAMES = {
  "gd": "one-step GD (fixed step)",
  "gd_ls": "one-step GD (line search)",
  "ridge": "ridge",
}
CONTEXTS = ("retrieved", "oracle", "shuffled_labels", "other_query", "random")


@dataclasses.dataclass(frozen=True)
class Config:
  """The typed view of a config file (``configs/*.py``), which sets every field."""

  d: int
  settings: tuple[tuple[int, int], ...]  # (n_pool, n_clusters) pairs: pool size, cluster count
  r: float
  tau_w: float
  noise: float
  n_dev: int
  n_test: int
  query_chunk: int  # queries per k_sweep call (bounds the [n_k, Q, K, d] intermediates)
  ks: tuple[int, ...]
  s_x: tuple[float, ...]
  s_w: tuple[float, ...]
  seeds: int
  seed: int
  ridge_lam: float
  eta_scale: float
  tol_rel: float
  regime_tol: float
  decline_tol: float
  recall_rise: float
  min_gain: float  # a cell counts for a reader when retrieval lifts its best accuracy
  n_boot: int  # bootstrap resamples of the cell-level fractions
  use_mesh: bool


def _split(data: E.ICLData, lo: int, hi: int | None) -> E.ICLData:
  return data.replace(
    q_x=data.q_x[lo:hi], q_y=data.q_y[lo:hi], q_task=data.q_task[lo:hi], q_w=data.q_w[lo:hi]
  )


def _mesh(cfg: Config):
  n = jax.device_count()
  if cfg.use_mesh and n > 1 and cfg.n_test % n == 0 and cfg.n_dev % n == 0:
    if cfg.query_chunk % n == 0:
      return core.make_mesh()
  return None


def _sweep(reader, data, idx, ks, chunk, mesh, y_override=None, valid=None):
  """``E.k_sweep`` over blocks of ``chunk`` queries (one compile when the block divides Q)."""
  Q = idx.shape[0]
  if chunk >= Q or Q % chunk:
    return np.asarray(
      E.k_sweep(reader, data, idx, ks, y_override=y_override, valid=valid, mesh=mesh)
    )
  out = []
  for lo in range(0, Q, chunk):
    hi = lo + chunk
    out.append(
      np.asarray(
        E.k_sweep(
          reader,
          _split(data, lo, hi),
          idx[lo:hi],
          ks,
          y_override=None if y_override is None else y_override[lo:hi],
          valid=None if valid is None else valid[lo:hi],
          mesh=mesh,
        )
      )
    )
  return np.concatenate(out, axis=1)


def setting_name(n_pool: int, n_clusters: int) -> str:
  return f"P{n_pool}_J{n_clusters}"


def cluster_k(n_pool: int, n_clusters: int, ks) -> int:
  """The grid budget nearest (in log2) to the mean cluster size P / J (ties: the smaller k)."""
  ks = np.asarray(ks, np.float64)
  dist = np.abs(np.log2(ks) - np.log2(n_pool / n_clusters))
  return int(ks[int(np.argmin(dist))])


def run_cell(cfg: Config, n_pool: int, n_clusters: int, s_x: float, s_w: float, seed: int) -> dict:
  """One (setting, shift, seed) cell: every curve on the test queries, the controller on dev.

  The world (clusters, pool, query draws) depends on the seed only, so the shift cells of one
  (setting, seed) are paired: they differ by the shift alone.
  """
  ks = tuple(cfg.ks)
  k_max = ks[-1]
  key = jax.random.fold_in(jax.random.key(cfg.seed), seed)
  shift = E.ShiftConfig(
    d=cfg.d, n_clusters=n_clusters, r=cfg.r, tau_w=cfg.tau_w, noise=cfg.noise, s_x=s_x, s_w=s_w
  )
  full = E.make_shifted_linear_icl(
    jax.random.fold_in(key, 0), shift, n_pool, cfg.n_dev + cfg.n_test
  )
  pool_x = np.asarray(full.pool_x, np.float64)
  eta = cfg.eta_scale / float(np.mean(np.sum(pool_x**2, 1)))
  tol = cfg.tol_rel * float(np.std(np.asarray(full.pool_y, np.float64)))
  readers = {
    "gd": E.GDReader(eta),
    "gd_ls": E.LineSearchGDReader(),
    "ridge": E.RidgeReader(cfg.ridge_lam),
  }
  mesh = _mesh(cfg)
  chunk = cfg.query_chunk
  out = {
    "n_pool": n_pool,
    "n_clusters": n_clusters,
    "s_x": s_x,
    "s_w": s_w,
    "seed": seed,
    "eta": eta,
    "tol": tol,
  }
  splits = {"dev": _split(full, 0, cfg.n_dev), "test": _split(full, cfg.n_dev, None)}
  correct_dev = {}
  for name, data in splits.items():
    idx, sims = E.dense_topk(data.q_x, data.pool_x, k_max)
    y = data.q_y
    if name == "dev":
      for r, reader in readers.items():
        pred = _sweep(reader, data, idx, ks, chunk, mesh)
        correct_dev[r] = np.asarray(E.answer_metrics(pred, y, tol=tol)[0])
      dev_sims = np.asarray(sims)
      continue
    ck = jax.random.fold_in(key, 1)
    oidx, valid = E.oracle_context(data.q_x, data.pool_x, data, k_max)
    i_lab, y_lab = E.shuffled_context(jax.random.fold_in(ck, 0), idx, data, mode="labels")
    i_oth, y_oth = E.shuffled_context(jax.random.fold_in(ck, 1), idx, data, mode="other_query")
    ridx = E.random_context(jax.random.fold_in(ck, 2), data, k_max)
    contexts = {
      "retrieved": dict(idx=idx),
      "oracle": dict(idx=oidx, valid=valid),
      "shuffled_labels": dict(idx=i_lab, y_override=y_lab),
      "other_query": dict(idx=i_oth, y_override=y_oth),
      "random": dict(idx=ridx),
    }
    out["recall"] = np.asarray(E.recall_curve(idx, data, ks)).tolist()
    out["purity"] = np.asarray(E.purity_curve(idx, data, ks)).tolist()
    c_eff, amb, delta = (np.asarray(a).tolist() for a in E.effective_coverage(idx, data, ks))
    out.update(c_eff=c_eff, ambiguity=amb, delta=delta)
    out["k_star"] = E.budget_boundary(ks, delta)
    out["k_star_average"] = E.budget_boundary(ks, delta, rule="average")
    prior = np.asarray(E.k_sweep(E.PriorReader(), data, idx, ks[:1], mesh=mesh))
    c, se = E.answer_metrics(prior, y, tol=tol)
    out["prior"] = {"acc": float(np.mean(c)), "mse": float(np.mean(se))}
    const = np.full((1, y.shape[0]), float(np.mean(np.asarray(full.pool_y))), np.float32)
    c, se = E.answer_metrics(const, y, tol=tol)
    out["constant_mean"] = {"acc": float(np.mean(c)), "mse": float(np.mean(se))}
    for r, reader in readers.items():
      res = {}
      for cname, kw in contexts.items():
        kw = dict(kw)
        cidx = kw.pop("idx")
        pred = _sweep(reader, data, cidx, ks, chunk, mesh, **kw)
        c, se = E.answer_metrics(pred, y, tol=tol)
        if cname == "retrieved":
          correct = np.asarray(c)  # [n_k, Q], for the controller below
        res[cname] = {
          "acc": np.asarray(c).mean(1).tolist(),
          "mse": np.asarray(se).mean(1).tolist(),
        }
      acc = np.asarray(res["retrieved"]["acc"])
      res["k_peak"] = _k_peak(acc, ks)
      res["regime"] = E.classify_regime(
        acc, res["oracle"]["acc"], ks, tol=cfg.regime_tol, ceiling=max(res["oracle"]["acc"])
      )
      # Controller: tau on the dev queries (grid = quantiles of the dev similarities).
      grid = np.quantile(dev_sims[:, np.asarray(ks) - 1], np.linspace(0, 1, 41))
      tau = E.calibrate_threshold(dev_sims, correct_dev[r], ks, grid)
      j = np.asarray(E.threshold_controller(sims, tau, ks))
      res["controller"] = {
        "tau": tau,
        "acc": float(correct[j, np.arange(len(j))].mean()),
        "k_geomean": float(np.exp(np.mean(np.log(np.asarray(ks)[j])))),
        "best_fixed_k_acc": float(acc.max()),
      }
      out[r] = res
  return out


def _k_peak(acc, ks) -> int:
  """The budget k of the highest accuracy ``acc[i]`` at ``ks[i]`` (the smallest k on a tie)."""
  return int(ks[int(np.argmax(acc))])


def _decline(acc, recall, ks, cfg: Config) -> bool:
  acc, recall = np.asarray(acc), np.asarray(recall)
  p = int(np.argmax(acc))
  return bool(acc[-1] < acc.max() - cfg.decline_tol and recall[-1] - recall[p] >= cfg.recall_rise)


def _within_2x(a: int, b: int) -> bool:
  return abs(np.log2(a) - np.log2(b)) <= 1.0 + 1e-9


def _fraction_ci(flags, n_boot: int) -> float | None:
  """Half-width of the 95% percentile-bootstrap interval of a fraction, over cells (None: n < 2).

  ``core.paired_bootstrap`` of the 0/1 indicators against zeros, the cells resampled with a
  fixed seed; the half-width is the larger distance from the fraction to a bound.
  """
  a = np.asarray(flags, np.float64)
  if a.size < 2:
    return None
  b = core.paired_bootstrap(a, np.zeros_like(a), n_resamples=n_boot, seed=0)
  if not np.isfinite(b.lo):
    return None
  return float(max(b.estimate - b.lo, b.hi - b.estimate))


def _mean_or_none(flags) -> float | None:
  return float(np.mean(flags)) if len(flags) else None


def _gain(cell: dict, r: str) -> float:
  """The reader's retrieval gain: best retrieved accuracy over k minus prior-only accuracy."""
  return max(cell[r]["retrieved"]["acc"]) - cell["prior"]["acc"]


def _median_k(peaks) -> int:
  """``2 ** round(median log2 k)`` (a grid point when the budgets are powers of two)."""
  return int(2 ** np.round(np.median([np.log2(k) for k in peaks])))


def _setting(cell: dict) -> tuple[int, int]:
  return int(cell.get("n_pool", 0)), int(cell.get("n_clusters", 0))


def _spearman(a, b) -> float | None:
  """Spearman's rank correlation (average ranks on ties); None when either side is constant."""
  from scipy import stats as sps

  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
    return None
  return float(sps.spearmanr(a, b).statistic)


def shift_response(cells: list[dict], cfg: Config) -> dict:
  """Per setting: does k* (and each reader's accuracy peak) move across the shift grid?

  For each (setting, shift) the seed-median of log2 k* and of log2 k_peak; per setting the
  range of those medians over the shift cells (in octaves) and their Spearman correlation
  over the shift cells (None when one of them does not move).
  """
  out = {}
  for n_pool, n_clusters in dict.fromkeys(_setting(c) for c in cells):
    cs = [c for c in cells if _setting(c) == (n_pool, n_clusters)]
    shifts = sorted({(c["s_x"], c["s_w"]) for c in cs})
    med = lambda vals: float(np.median(np.log2(vals)))
    ks_ = [med([c["k_star"] for c in cs if (c["s_x"], c["s_w"]) == sh]) for sh in shifts]
    rec = {
      "n_pool": n_pool,
      "n_clusters": n_clusters,
      "cluster_k": cluster_k(n_pool, n_clusters, cfg.ks),
      "shifts": [list(sh) for sh in shifts],
      "log2_k_star": ks_,
      "k_star_range_octaves": float(np.ptp(ks_)),
    }
    for r in READERS:
      kp = [med([c[r]["k_peak"] for c in cs if (c["s_x"], c["s_w"]) == sh]) for sh in shifts]
      rec[f"log2_k_peak_{r}"] = kp
      rec[f"k_peak_range_octaves_{r}"] = float(np.ptp(kp))
      rec[f"spearman_k_star_k_peak_{r}"] = _spearman(ks_, kp)
    out[setting_name(n_pool, n_clusters)] = rec
  return out


def derived_metrics(cells: list[dict], cfg: Config) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure, JSON in/out).

  Per reader r, the decoupling and budget-boundary fractions are taken over the cells where
  retrieval helps r (its retrieval gain is >= ``min_gain``), with a bootstrap half-width over
  those cells. Budget-boundary controls: the in-sample median peak (one k for all cells), the
  grid budget nearest the mean cluster size P / J (what the construction pins), and the
  per-setting median peak (one k per (P, J) setting, blind to the shift).
  """
  ks = tuple(cfg.ks)
  n_boot = int(cfg.n_boot)
  min_gain = float(cfg.min_gain)
  out = {}
  for r in READERS:
    if not all(r in c for c in cells):
      continue
    gc = [c for c in cells if _gain(c, r) >= min_gain]
    out[f"n_gain_cells_{r}"] = len(gc)
    dec = [_decline(c[r]["retrieved"]["acc"], c["recall"], ks, cfg) for c in gc]
    dec_o = [_decline(c[r]["oracle"]["acc"], c["recall"], ks, cfg) for c in gc]
    out[f"decoupling_fraction_{r}"] = _mean_or_none(dec)
    out[f"decoupling_fraction_{r}_ci"] = _fraction_ci(dec, n_boot)
    out[f"decoupling_fraction_{r}_oracle"] = _mean_or_none(dec_o)
    hit = [_within_2x(c["k_star"], c[r]["k_peak"]) for c in gc]
    out[f"kstar_within_2x_{r}"] = _mean_or_none(hit)
    out[f"kstar_within_2x_{r}_ci"] = _fraction_ci(hit, n_boot)
    out[f"kstar_average_within_2x_{r}"] = _mean_or_none(
      [_within_2x(c["k_star_average"], c[r]["k_peak"]) for c in gc]
    )
    med = _median_k([c[r]["k_peak"] for c in gc]) if gc else None
    out[f"constant_k_{r}"] = med
    out[f"constant_k_within_2x_{r}"] = _mean_or_none([_within_2x(med, c[r]["k_peak"]) for c in gc])
    out[f"cluster_k_within_2x_{r}"] = _mean_or_none(
      [_within_2x(cluster_k(*_setting(c), ks), c[r]["k_peak"]) for c in gc]
    )
    per_setting = {}
    for st in {_setting(c) for c in gc}:
      per_setting[st] = _median_k([c[r]["k_peak"] for c in gc if _setting(c) == st])
    out[f"setting_k_within_2x_{r}"] = _mean_or_none(
      [_within_2x(per_setting[_setting(c)], c[r]["k_peak"]) for c in gc]
    )
    out[f"setting_k_{r}"] = {setting_name(*st): k for st, k in sorted(per_setting.items())}
    for ctrl in ("shuffled_labels", "other_query", "random"):
      kept = []
      for c in cells:
        gain = _gain(c, r)
        if gain >= min_gain:
          kept.append((max(c[r][ctrl]["acc"]) - c["prior"]["acc"]) / gain)
      out[f"gain_kept_{r}_{ctrl}"] = float(np.mean(kept)) if kept else None
    out[f"controller_minus_best_fixed_{r}"] = float(
      np.mean([c[r]["controller"]["acc"] - c[r]["controller"]["best_fixed_k_acc"] for c in cells])
    )
    regimes = [c[r]["regime"] for c in cells]
    out[f"regimes_{r}"] = {g: regimes.count(g) for g in E.REGIMES}
  readers = [r for r in READERS if f"n_gain_cells_{r}" in out]
  shuf = [
    out[f"gain_kept_{r}_{c}"]
    for r in readers
    for c in ("shuffled_labels", "other_query")
    if out[f"gain_kept_{r}_{c}"] is not None
  ]
  out["shuffled_gain_kept_max"] = max(shuf) if shuf else None
  rnd = [out[f"gain_kept_{r}_random"] for r in readers if out[f"gain_kept_{r}_random"] is not None]
  out["random_gain_kept_max"] = max(rnd) if rnd else None
  return out


def _agg(cells, path):
  vals = []
  for c in cells:
    v = c
    for p in path:
      v = v[p]
    vals.append(v)
  return np.asarray(vals, np.float64)


def summarize(cells: list[dict], cfg: Config) -> list[dict]:
  """Per (setting, shift) cell: mean and std over seeds of the headline numbers."""
  rows = []
  for n_pool, n_clusters in cfg.settings:
    for sx in cfg.s_x:
      for sw in cfg.s_w:
        cs = [
          c
          for c in cells
          if _setting(c) == (n_pool, n_clusters) and c["s_x"] == sx and c["s_w"] == sw
        ]
        row = {"n_pool": n_pool, "n_clusters": n_clusters, "s_x": sx, "s_w": sw, "rho": sx * sw}
        for key in ("recall", "purity", "c_eff", "ambiguity", "delta"):
          a = _agg(cs, (key,))
          row[key] = {"mean": a.mean(0).tolist(), "std": a.std(0).tolist()}
        row["k_star"] = [c["k_star"] for c in cs]
        row["prior_acc"] = float(_agg(cs, ("prior", "acc")).mean())
        row["constant_mean_acc"] = float(_agg(cs, ("constant_mean", "acc")).mean())
        for r in READERS:
          row[r] = {
            ctx: {
              "acc_mean": _agg(cs, (r, ctx, "acc")).mean(0).tolist(),
              "acc_std": _agg(cs, (r, ctx, "acc")).std(0).tolist(),
              "mse_mean": _agg(cs, (r, ctx, "mse")).mean(0).tolist(),
            }
            for ctx in CONTEXTS
          }
          row[r]["k_peak"] = [c[r]["k_peak"] for c in cs]
          row[r]["regime"] = [c[r]["regime"] for c in cs]
          row[r]["controller_acc"] = float(_agg(cs, (r, "controller", "acc")).mean())
          row[r]["controller_k"] = float(_agg(cs, (r, "controller", "k_geomean")).mean())
        rows.append(row)
  return rows


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, in the shapes it reads them (pure).

  Returns:
    ``{"rows": [one per (setting, shift) cell: its accuracies at the ridge and GD-ls peaks and
    at k_max as {"m", "s"}], "readers": {name: claim fractions}, "corners": [panels of the
    middle setting's first and last shift, one per reader], "margin": {reader: {"settings":
    {setting: {"x": log2 k*, "y": log2 k_peak}}}}, "ks": the budgets as text}`` (the scatter
    jittered by ±0.15).
  """
  rows, d, ks = record["metrics"]["cells"], record["metrics"]["derived"], record["config"]["ks"]

  def acc(row, r, ctx, i):
    return {"m": row[r][ctx]["acc_mean"][i], "s": row[r][ctx]["acc_std"][i]}

  table = []
  for row in rows:
    p, q = (int(np.argmax(row[r]["retrieved"]["acc_mean"])) for r in ("ridge", "gd_ls"))
    at = {"ridge_peak": ("ridge", "retrieved", p), "ridge_last": ("ridge", "retrieved", -1),
          "ridge_oracle": ("ridge", "oracle", -1), "ls_peak": ("gd_ls", "retrieved", q),
          "ls_oracle": ("gd_ls", "oracle", -1)}  # fmt: skip
    table.append({**row, **{k: acc(row, *a) for k, a in at.items()},
                  "recall": {"m": row["recall"]["mean"][-1], "s": row["recall"]["std"][-1]},
                  "kp": {r: row[r]["k_peak"] for r in READERS}})  # fmt: skip
  keys = ("decoupling_fraction", "kstar_within_2x", "cluster_k_within_2x", "setting_k_within_2x",
          "constant_k_within_2x")  # fmt: skip
  readers = {
    READER_NAMES[r]: {"n": d.get(f"n_gain_cells_{r}", 0), **{k: d.get(f"{k}_{r}") for k in keys},
                      "oracle": d.get(f"decoupling_fraction_{r}_oracle")}
    for r in READERS
  }  # fmt: skip
  mid = record["config"]["settings"][len(record["config"]["settings"]) // 2]
  side = [r for r in rows if [r["n_pool"], r["n_clusters"]] == list(mid)]
  corners = [
    {"title": f"{READER_NAMES[r]}: P={row['n_pool']}, J={row['n_clusters']}, s_x={row['s_x']:g}, "
     f"s_w={row['s_w']:g}", "prior": row["prior_acc"], "recall": row["recall"]["mean"],
     "k_star": float(np.median(row["k_star"])),
     "contexts": {c: {"y": row[r][c]["acc_mean"], "err": row[r][c]["acc_std"]}
                  for c in ("retrieved", "oracle", "shuffled_labels", "random")}}
    for row in (side[0], side[-1]) for r in READERS
  ]  # fmt: skip
  rng, margin = np.random.default_rng(0), {}
  for p, j in record["config"]["settings"]:
    cs = [c for c in record["metrics"]["per_seed"] if _setting(c) == (p, j)]
    for r in ("ridge", "gd_ls"):
      jitter = lambda v: (np.log2(v) + rng.uniform(-0.15, 0.15, len(cs))).tolist()
      xy = {"x": jitter([c["k_star"] for c in cs]), "y": jitter([c[r]["k_peak"] for c in cs])}
      margin.setdefault(READER_NAMES[r], {"settings": {}})["settings"][f"P={p}, J={j}"] = xy
  return {"rows": table, "readers": readers, "corners": corners, "margin": margin, "ks": str(ks)}


def train_and_evaluate(config, workdir) -> dict:
  """Runs every (setting, shift, seed) cell; writes results.json, table.md and plots."""
  cfg = core.config_to_dataclass(config, Config)
  cfg = dataclasses.replace(
    cfg,
    ks=E._retrieval.check_ks(tuple(cfg.ks)),
    s_x=tuple(cfg.s_x),
    s_w=tuple(cfg.s_w),
    settings=tuple((int(p), int(j)) for p, j in cfg.settings),
  )
  core.validate_positive(cfg.seeds, name="seeds")
  core.validate_positive(cfg.query_chunk, name="query_chunk")
  if not cfg.settings:
    raise ValueError("settings must hold at least one (n_pool, n_clusters) pair")
  for n_pool, n_clusters in cfg.settings:
    if cfg.ks[-1] > n_pool:
      raise ValueError(f"ks must not exceed n_pool = {n_pool}, got {cfg.ks[-1]}")
    if n_clusters < 1:
      raise ValueError(f"settings: n_clusters must be >= 1, got {n_clusters}")
  if len(cfg.ks) < 3:
    raise ValueError("ks must hold at least 3 budgets (the regime rule needs them)")
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  store = core.CellStore(workdir / "cells")
  jobs = [
    (p, j, sx, sw, s)
    for p, j in cfg.settings
    for sx in cfg.s_x
    for sw in cfg.s_w
    for s in range(cfg.seeds)
  ]
  bar = core.progress(total=len(jobs), desc="cells")
  cells = []
  for p, j, sx, sw, s in jobs:
    name = f"cell/P{p}/J{j}/sx{sx}/sw{sw}/seed{s}"
    cells.append(store.get_or_compute(name, lambda _: run_cell(cfg, p, j, sx, sw, s)))
    bar.update(1)
  bar.close()
  rows = summarize(cells, cfg)
  metrics = {"cells": rows, "per_seed": cells}
  metrics["derived"] = derived_metrics(cells, cfg)
  metrics["derived"]["shift_response"] = shift_response(cells, cfg)
  path = core.write_results(
    workdir,
    metrics=metrics,
    config=config,  # the ConfigDict: its claims, issue_verdicts and report
    wall_time_s=time.time() - t0,
    notes=(
      "Synthetic shifted local linear ICL (a reconstruction: the paper's model, coverage "
      "formulas and regime rule are not public), over pool sizes and cluster counts. Readers: "
      "one-step GD (fixed eta), one-step GD with the exact line-search step, ridge (fixed "
      "lambda), prior-only; no trained transformer reader and no real-LM probe in this run. "
      "Accuracy = 1[|yhat - y| < tol_rel * std(pool y)]."
    ),
  )
  (workdir / "table.md").write_text(json.loads(path.read_text())["table_markdown"] + "\n")
  return metrics
