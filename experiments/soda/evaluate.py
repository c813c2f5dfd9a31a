"""Claim code of the SODA experiment: per-run summaries, best runs per horizon, the gaps and the
weight-decay transfer the claims of ``configs/default.py`` read, the grid-edge preconditions, and
the view its report renders. Pure functions, JSON in / out."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from experiments.soda.grid import base_horizons, group_horizons, group_seeds


def _summaries(task_out: dict, task: str) -> list[dict]:
  """One row per (horizon, family, hp): mean/std over seeds of the final eval.

  ``metric`` is the claims' metric, lower is better for both tasks: digits test NLL (its rows
  also carry ``accuracy`` and ``nll`` means and their seed std), lm validation bits per token.
  """
  rows = []
  for res in task_out["runs"]:
    curve = np.asarray(res["curve"])  # [S, E] or [S, E, 2]
    fin = curve[:, -1]
    row = {"horizon": res["horizon"], "family": res["family"], **res["hp"], "steps": res["steps"]}
    row.update(metric=None, metric_std=None)  # their place in the row
    if task == "digits":
      acc, nll = fin[:, 0], fin[:, 1]
      row.update(accuracy=float(acc.mean()), accuracy_std=float(acc.std()),
                 nll=float(nll.mean()), nll_std=float(nll.std()))  # fmt: skip
      fin, curve = nll, curve[:, :, 1]
    row.update(metric=float(fin.mean()), metric_std=float(fin.std()), per_seed=fin.tolist(),
               curve=curve.mean(0).tolist())  # fmt: skip
    rows.append(row)
  return rows


def _best(rows: list[dict], horizon: int, family: str, **fixed: float) -> dict | None:
  """The row of ``family`` at ``horizon`` (with the ``fixed`` hyperparameters) whose seed-mean
  metric is lowest (best), or ``None`` when there is none. A non-finite mean (a diverged run) ranks last,
  so it is chosen only when every candidate diverged."""
  cand = [
    r
    for r in rows
    if r["horizon"] == horizon
    and r["family"] == family
    and all(r.get(k) == v for k, v in fixed.items())
  ]
  if not cand:
    return None
  return min(cand, key=lambda r: r["metric"] if math.isfinite(r["metric"]) else math.inf)


def _bases(task_cfg: Any) -> list[tuple[str, str, str]]:
  """``(base, SODA arm, display name)`` of each base optimizer the task's grid runs."""
  return [("adamw", "soda_adamw", "AdamW")] + (
    [("muon", "soda_muon", "Muon")] if task_cfg.get("muon_lrs", ()) else []
  )


def best_curves(rows: list[dict], task_cfg: Any) -> dict[str, dict]:
  """The seed-mean eval curve of each family's best run at the longest horizon (and of the
  bases' best run at wd = 0), by legend label: ``{label: {"steps": [E], "curve": [E]}}``."""
  t, out = max(task_cfg["horizons"]), {}
  for fam in ("adamw", "soda_adamw", "muon", "soda_muon"):
    best = _best(rows, t, fam)
    if best is not None:
      hp = ", ".join(f"{k} {best[k]:g}" for k in ("lr", "wd") if k in best)
      out[f"{fam} ({hp})"] = {"steps": best["steps"], "curve": best["curve"]}
    w0 = _best(rows, t, fam, wd=0.0) if fam in ("adamw", "muon") else None
    if w0 is not None and w0 is not best:
      out[f"{fam} wd=0 (lr {w0['lr']:g})"] = {"steps": w0["steps"], "curve": w0["curve"]}
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, per enabled task (pure).

  Returns:
    ``{"tasks": {task: {"metric", "horizons", "seeds", "muon" (title text), "cols" (column
    headers, three per base), "rows": {T: {"c": [{"metric", "metric_std", "hp"} or {} per
    column]}}, "arms": {base name: {"horizons", "best_wd", "tuned", "wd0", "soda" (metric
    lists), "*_std"}}, "by_horizon": {T: {"arms": {base name: {"wds", "best", "soda": {"x",
    "y", "lr"}}}}}}}}``; a weight decay of 0 is drawn a decade below the smallest positive one.
  """
  tasks = {}
  for task in ("digits", "lm"):
    m, tcfg = record["metrics"].get(task), record["config"][task]
    if not m:
      continue
    bases = _bases(tcfg)
    rows = [{**r, "metric": float(r["metric"])} for r in m["rows"]]  # records write NaN as 'nan'
    best = lambda t, fam, **fixed: _best(rows, t, fam, **fixed)
    cell = lambda r, *ks: {} if r is None else {**r, "hp": ", ".join(f"{r[k]:g}" for k in ks)}
    muon = f"; Muon arms: horizons {list(group_horizons(tcfg, 'muon'))}, "
    v = tasks[task] = {
      "metric": m["metric"], "horizons": str(list(tcfg["horizons"])), "seeds": tcfg["num_seeds"],
      "muon": muon + f"{group_seeds(tcfg, 'muon')} seeds" if len(bases) > 1 else "",
      "cols": [h.format(n) for _, _, n in bases
               for h in ("{} wd=0 (lr)", "best {} (lr, wd)", "SODA({}) (lr)")],
      "rows": {}, "arms": {}, "by_horizon": {},
    }  # fmt: skip
    for t in sorted({t for b, _, _ in bases for t in base_horizons(tcfg, b)}):
      v["rows"][str(t)] = {"c": [c for b, w, _ in bases for c in (
        cell(best(t, b, wd=0.0), "lr"), cell(best(t, b), "lr", "wd"), cell(best(t, w), "lr"))]}  # fmt: skip
    for base, wrapped, name in bases:
      wds = sorted({r["wd"] for r in rows if r["family"] == base})
      floor = lambda w: max(w, min([x for x in wds if x > 0] or [1.0]) / 10)
      ts = base_horizons(tcfg, base)
      arm = {"horizons": list(ts), "best_wd": [floor(best(t, base)["wd"]) for t in ts]}
      for key, fam, fixed in (
        ("tuned", base, {}),
        ("wd0", base, {"wd": 0.0}),
        ("soda", wrapped, {}),
      ):
        rs = [best(t, fam, **fixed) or {} for t in ts]
        arm[key] = [r.get("metric") for r in rs]
        arm[f"{key}_std"] = [r.get("metric_std") for r in rs]
      v["arms"][name] = arm
      for t in ts:
        s = best(t, wrapped)
        v["by_horizon"].setdefault(str(t), {"arms": {}})["arms"][name] = {
          "wds": [floor(w) for w in wds],
          "best": [best(t, base, wd=w)["metric"] for w in wds],
          **({} if s is None else
             {"soda": {"x": [floor(wds[0]), floor(wds[-1])], "y": [s["metric"]] * 2, "lr": s["lr"]}}),
        }  # fmt: skip
  return {"tasks": tasks}


def _claims(rows: list[dict], cfg: Any, base: str, wrapped: str) -> list[dict]:
  """Per horizon: best tuned wd, best SODA, and the gap in seed-std units."""
  out = []
  for t in base_horizons(cfg, base):
    b, s, b0 = _best(rows, t, base), _best(rows, t, wrapped), _best(rows, t, base, wd=0.0)
    if b is None or s is None:
      continue
    gap = b["metric"] - s["metric"]  # > 0: SODA better
    noise = math.sqrt(b["metric_std"] ** 2 + s["metric_std"] ** 2) + 1e-12
    out.append(
      {
        "horizon": t,
        "base": base,
        "best_wd": b["wd"],
        "best_lr": b["lr"],
        "best_base": b["metric"],
        "base_wd0": b0["metric"] if b0 else None,
        "soda": s["metric"],
        "soda_lr": s["lr"],
        "soda_minus_best_base": gap,
        "gap_in_seed_std": gap / noise,
        "soda_beats_wd0": (s["metric"] < b0["metric"]) if b0 else None,
      }
    )
  return out


def _wd_transfer(rows: list[dict], cfg: Any, base: str) -> dict | None:
  """How much a weight decay tuned at one end of the horizon range costs at the other end.

  With ``wd_s`` / ``wd_l`` the best weight decay (lr x wd grid) at the shortest / longest
  horizon, the penalty at the longest horizon is (best run) - (best run over lr with
  ``wd = wd_s``), signed so >= 0, in combined seed std; likewise at the shortest horizon with
  ``wd_l``. The larger of the two says whether the tuned weight decay must move with the
  horizon (0 when the same weight decay is best at both ends).
  """
  hs = base_horizons(cfg, base)
  t_s, t_l = min(hs), max(hs)
  bs, bl = _best(rows, t_s, base), _best(rows, t_l, base)
  if bs is None or bl is None:
    return None

  def penalty(t, best, wd):
    other = _best(rows, t, base, wd=wd)
    gap = other["metric"] - best["metric"]
    return gap / (math.sqrt(best["metric_std"] ** 2 + other["metric_std"] ** 2) + 1e-12)

  return {
    "base": base,
    "best_wd_by_horizon": {str(t): _best(rows, t, base)["wd"] for t in hs},
    "best_lr_by_horizon": {str(t): _best(rows, t, base)["lr"] for t in hs},
    "penalty_at_longest_in_std": penalty(t_l, bl, bs["wd"]),
    "penalty_at_shortest_in_std": penalty(t_s, bs, bl["wd"]),
  }


def _edge(value: float, grid: list[float], *, lower: bool = True) -> str:
  """``'low'`` / ``'high'`` when ``value`` is the smallest / largest of ``grid``, else ``''``.

  With ``lower=False`` only the top end counts (a weight decay of 0 bounds the search space
  itself). A grid of one value has the value at its edge (``'low'``, or ``'high'`` without
  ``lower``).
  """
  if lower and value <= min(grid):
    return "low"
  if value >= max(grid):
    return "high"
  return ""


def grid_edges(rows: list[dict], cfg: Any, base: str, wrapped: str) -> dict[str, dict]:
  """Per horizon of ``base``: does each tuned optimum lie inside the grid that was run?

  The best ``base`` run (lr x wd) and the best ``wrapped`` (SODA) run (lr) at ``T`` are compared
  with the values their family ran at ``T``: an optimum at the smallest or largest is at an edge
  (for the weight decay only the largest: 0 bounds the search space). Returns ``{str(T):
  {"base_lr", "base_lr_edge", "base_wd", "base_wd_edge", "soda_lr", "soda_lr_edge",
  "base_at_edge" (0-2), "at_edge" (0-3)}}`` with each ``*_edge`` in ``'low'``, ``'high'``, ``''``.
  """
  out = {}
  for t in base_horizons(cfg, base):
    b, s = _best(rows, t, base), _best(rows, t, wrapped)
    if b is None or s is None:
      continue
    grid = lambda fam, key: sorted(
      {r[key] for r in rows if r["horizon"] == t and r["family"] == fam}
    )
    e = {
      "base_lr": b["lr"],
      "base_lr_edge": _edge(b["lr"], grid(base, "lr")),
      "base_wd": b["wd"],
      "base_wd_edge": _edge(b["wd"], grid(base, "wd"), lower=False),
      "soda_lr": s["lr"],
      "soda_lr_edge": _edge(s["lr"], grid(wrapped, "lr")),
    }
    e["base_at_edge"] = sum(bool(e[k]) for k in ("base_lr_edge", "base_wd_edge"))
    e["at_edge"] = e["base_at_edge"] + bool(e["soda_lr_edge"])
    out[str(t)] = e
  return out


def task_metrics(task: str, tcfg: Any, out: dict) -> dict:
  """The metrics block of one task from its runs (``train._run_task``'s ``{"runs", "meta"}``):
  the per-run rows, the per-horizon claims, the weight-decay transfer, the grid edges, the
  metric's label and the best runs' curves, with the task's meta data and its seconds."""
  rows = _summaries(out, task)
  claims, transfer, edges = [], [], {}
  for base, wrapped, _ in _bases(tcfg):
    claims += _claims(rows, tcfg, base, wrapped)
    edges[base] = grid_edges(rows, tcfg, base, wrapped)
    tr = _wd_transfer(rows, tcfg, base)
    if tr is not None:
      transfer.append(tr)
  return {
    "rows": [{k: v for k, v in r.items() if k != "curve"} for r in rows],
    "claims": claims,
    "wd_transfer": transfer,
    "grid_edges": edges,
    "metric": "test NLL (nats)" if task == "digits" else "val bits/char",
    "curves": best_curves(rows, tcfg),
    **out["meta"],
    "seconds": sum(r["seconds"] for r in out["runs"]),
  }


def derived_metrics(metrics: dict) -> dict:
  """Per task and base optimizer, the values the claims in ``configs/default.py`` read (pure).

  ``<task>_<base>_worst_gap_in_std``: the smallest over horizons of (best SODA - best tuned
  base) in combined seed std (> 0: SODA better); ``..._beats_wd0_fraction``: the horizons where
  SODA beats the base at wd = 0; ``..._horizons_at_edge`` / ``..._optima_at_edge``: where and how
  many tuned optima lie at a grid edge (:func:`grid_edges`); ``..._wd_transfer_penalty_in_std``.
  """
  out = {}
  for task, m in metrics.items():
    if not isinstance(m, dict) or "claims" not in m:
      continue
    for base in sorted({c["base"] for c in m["claims"]}):
      cs = [c for c in m["claims"] if c["base"] == base]
      out[f"{task}_{base}_worst_gap_in_std"] = min(c["gap_in_seed_std"] for c in cs)
      beats = [c["soda_beats_wd0"] for c in cs if c["soda_beats_wd0"] is not None]
      out[f"{task}_{base}_beats_wd0_fraction"] = (sum(beats) / len(beats)) if beats else None
    for base, by_t in m.get("grid_edges", {}).items():
      ts = sorted(by_t, key=int)
      out[f"{task}_{base}_horizons_at_edge"] = [int(t) for t in ts if by_t[t]["at_edge"] > 0]
      out[f"{task}_{base}_optima_at_edge"] = sum(by_t[t]["at_edge"] for t in ts)
    for tr in m.get("wd_transfer", ()):
      out[f"{task}_{tr['base']}_wd_transfer_penalty_in_std"] = max(
        tr["penalty_at_longest_in_std"], tr["penalty_at_shortest_in_std"]
      )
  return out
