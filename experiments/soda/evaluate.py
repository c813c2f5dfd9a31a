"""Claim code of the SODA experiment: per-run summaries, the per-horizon
comparisons of ``jaxpapers.soda`` (best runs, SODA's gap, the weight-decay
transfer, the grid edges), the values the claims of ``configs/default.py`` read,
and the view its report renders. Pure functions, JSON in / out."""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.soda.grid import base_horizons, group_horizons, group_seeds
from jaxpapers.soda import best_run, grid_edges, horizon_gaps, wd_transfer


def _summaries(task_out: dict, task: str) -> list[dict]:
  """One row per (horizon, family, hp): mean/std over seeds of the final eval.

  ``metric`` is the claims' metric, lower is better for both tasks: digits test
  NLL (its rows also carry ``accuracy`` and ``nll`` means and their seed std),
  lm validation bits per token.
  """
  rows = []
  for res in task_out["runs"]:
    curve = np.asarray(res["curve"])  # [S, E] or [S, E, 2]
    fin = curve[:, -1]
    row = {
      "horizon": res["horizon"],
      "family": res["family"],
      **res["hp"],
      "steps": res["steps"],
    }
    row.update(metric=None, metric_std=None)  # their place in the row
    if task == "digits":
      acc, nll = fin[:, 0], fin[:, 1]
      for key, x in (("accuracy", acc), ("nll", nll)):
        row.update({key: float(x.mean()), f"{key}_std": float(x.std())})
      fin, curve = nll, curve[:, :, 1]
    row.update(
      metric=float(fin.mean()),
      metric_std=float(fin.std()),
      per_seed=fin.tolist(),
    )
    row["curve"] = curve.mean(0).tolist()
    rows.append(row)
  return rows


def _bases(task_cfg: Any) -> list[tuple[str, str, str]]:
  """``(base, SODA arm, display name)`` of each base optimizer the task's grid
  runs."""
  return [("adamw", "soda_adamw", "AdamW")] + (
    [("muon", "soda_muon", "Muon")] if task_cfg.get("muon_lrs", ()) else []
  )


def best_curves(rows: list[dict], task_cfg: Any) -> dict[str, dict]:
  """The seed-mean eval curve of each family's best run at the longest horizon
  (and of the bases' best run at wd = 0), by legend label: ``{label: {"steps":
  [E], "curve": [E]}}``."""
  t, out = max(task_cfg["horizons"]), {}
  for fam in ("adamw", "soda_adamw", "muon", "soda_muon"):
    best = best_run(rows, t, fam)
    if best is not None:
      hp = ", ".join(f"{k} {best[k]:g}" for k in ("lr", "wd") if k in best)
      out[f"{fam} ({hp})"] = {"steps": best["steps"], "curve": best["curve"]}
    w0 = best_run(rows, t, fam, wd=0.0) if fam in ("adamw", "muon") else None
    if w0 is not None and w0 is not best:
      out[f"{fam} wd=0 (lr {w0['lr']:g})"] = {
        "steps": w0["steps"],
        "curve": w0["curve"],
      }
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads, per enabled task (pure).

  Returns:
    ``{"tasks": {task: {"metric", "horizons", "seeds", "muon" (title text),
    "cols" (column headers, three per base), "rows": {T: {"c": [{"metric",
    "metric_std", "hp"} or {} per column]}}, "arms": {base name: {"horizons",
    "best_wd", "tuned", "wd0", "soda" (metric lists), "*_std"}}, "by_horizon":
    {T: {"arms": {base name: {"wds", "best", "soda": {"x", "y", "lr"}}}}}}}}``;
    a weight decay of 0 is drawn a decade below the smallest positive one.
  """
  tasks = {}
  for task in ("digits", "lm"):
    m, tcfg = record["metrics"].get(task), record["config"][task]
    if m:
      tasks[task] = _task_view(m, tcfg)
  return {"tasks": tasks}


def _task_view(m: dict, tcfg: Any) -> dict:
  """One task's entry of :func:`report_view`."""
  bases = _bases(tcfg)
  # records write NaN as 'nan'
  rows = [{**r, "metric": float(r["metric"])} for r in m["rows"]]
  best = lambda t, fam, **fixed: best_run(rows, t, fam, **fixed)
  cell = lambda r, *ks: (
    {} if r is None else {**r, "hp": ", ".join(f"{r[k]:g}" for k in ks)}
  )
  muon = f"; Muon arms: horizons {list(group_horizons(tcfg, 'muon'))}, "
  heads = ("{} wd=0 (lr)", "best {} (lr, wd)", "SODA({}) (lr)")
  v = {
    "metric": m["metric"],
    "horizons": str(list(tcfg["horizons"])),
    "seeds": tcfg["num_seeds"],
    "muon": muon + f"{group_seeds(tcfg, 'muon')} seeds"
    if len(bases) > 1
    else "",
    "cols": [h.format(n) for _, _, n in bases for h in heads],
    "rows": {},
    "arms": {},
    "by_horizon": {},
  }
  for t in sorted({t for b, _, _ in bases for t in base_horizons(tcfg, b)}):
    cols = lambda b, w: [
      (best(t, b, wd=0.0), "lr"),
      (best(t, b), "lr", "wd"),
      (best(t, w), "lr"),
    ]
    v["rows"][str(t)] = {
      "c": [cell(*c) for b, w, _ in bases for c in cols(b, w)]
    }
  for base, wrapped, name in bases:
    wds = sorted({r["wd"] for r in rows if r["family"] == base})
    floor = lambda w: max(w, min([x for x in wds if x > 0] or [1.0]) / 10)
    ts = base_horizons(tcfg, base)
    arm = {
      "horizons": list(ts),
      "best_wd": [floor(best(t, base)["wd"]) for t in ts],
    }
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
      by = {
        "wds": [floor(w) for w in wds],
        "best": [best(t, base, wd=w)["metric"] for w in wds],
      }
      if s is not None:
        by["soda"] = {
          "x": [floor(wds[0]), floor(wds[-1])],
          "y": [s["metric"]] * 2,
          "lr": s["lr"],
        }
      v["by_horizon"].setdefault(str(t), {"arms": {}})["arms"][name] = by
  return v


def task_metrics(task: str, tcfg: Any, out: dict) -> dict:
  """The metrics block of one task from its runs (``train._run_task``'s
  ``{"runs", "meta"}``): the per-run rows, the per-horizon claims, the
  weight-decay transfer, the grid edges, the metric's label and the best runs'
  curves, with the task's meta data and its seconds."""
  rows = _summaries(out, task)
  claims, transfer, edges = [], [], {}
  for base, wrapped, _ in _bases(tcfg):
    horizons = base_horizons(tcfg, base)
    claims += horizon_gaps(rows, horizons, base, wrapped)
    edges[base] = grid_edges(rows, horizons, base, wrapped)
    tr = wd_transfer(rows, horizons, base)
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
  """Per task and base optimizer, the values the claims in
  ``configs/default.py`` read (pure).

  ``<task>_<base>_worst_gap_in_std``: the smallest over horizons of (best SODA -
  best tuned base) in combined seed std (> 0: SODA better);
  ``..._beats_wd0_fraction``: the horizons where SODA beats the base at wd = 0;
  ``..._horizons_at_edge`` / ``..._optima_at_edge``: where and how many tuned
  optima lie at a grid edge (``jaxpapers.soda.grid_edges``);
  ``..._wd_transfer_penalty_in_std``.
  """
  out = {}
  for task, m in metrics.items():
    if not isinstance(m, dict) or "claims" not in m:
      continue
    for base in sorted({c["base"] for c in m["claims"]}):
      cs = [c for c in m["claims"] if c["base"] == base]
      out[f"{task}_{base}_worst_gap_in_std"] = min(
        c["gap_in_seed_std"] for c in cs
      )
      beats = [
        c["soda_beats_wd0"] for c in cs if c["soda_beats_wd0"] is not None
      ]
      out[f"{task}_{base}_beats_wd0_fraction"] = (
        (sum(beats) / len(beats)) if beats else None
      )
    for base, by_t in m.get("grid_edges", {}).items():
      ts = sorted(by_t, key=int)
      out[f"{task}_{base}_horizons_at_edge"] = [
        int(t) for t in ts if by_t[t]["at_edge"] > 0
      ]
      out[f"{task}_{base}_optima_at_edge"] = sum(by_t[t]["at_edge"] for t in ts)
    for tr in m.get("wd_transfer", ()):
      out[f"{task}_{tr['base']}_wd_transfer_penalty_in_std"] = max(
        tr["penalty_at_longest_in_std"], tr["penalty_at_shortest_in_std"]
      )
  return out
