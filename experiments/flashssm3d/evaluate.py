"""Claim code of the FlashSSM-3D experiment: per-seed quantities, aggregation,
report view.

The metrics themselves are the library's
(:func:`jaxpapers.flashssm3d.evaluate_predictions`); this module turns one
seed's metrics into the quantities the claims of ``configs/`` decide on (slacks
in units of margins fixed before any run, paired gains, extrapolation
retention), aggregates seeds, and shapes a results record for the declared
report.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np

from jaxpapers import core

# Metrics that decide the distillation claim, which way is better, and the
# margin m each must be beaten by (absolute for the [0, 1] scores, relative for
# the point error). Fixed before any run.
CLAIM_METRICS = (
  ("AUC@30", "higher", 0.05),
  ("depth_delta1.25", "higher", 0.05),
  ("points_overall", "lower", 0.10),
)


def _gain(x, ref, direction):
  """How much better ``x`` is than ``ref`` (absolute for 'higher', relative for
  'lower').

  The relative gain is clipped to [-10, 10] (a reference error of ~0 would
  otherwise give an unbounded number; the pass / partly thresholds at 0 and -1
  margins are far inside the clip).
  """
  if direction == "higher":
    return x - ref
  return float(np.clip((ref - x) / max(abs(ref), 1e-12), -10.0, 10.0))


def _slack_over_trivial(model_eval: dict, evals: dict, ref: str) -> float:
  """min over CLAIM_METRICS of (gain over the best trivial predictor) / m - 1
  (>= 0: beaten by m)."""
  out = []
  for k, direction, m in CLAIM_METRICS:
    triv = [
      e[ref][k]
      for n, e in evals.items()
      if n.startswith("trivial_") and k in e.get(ref, {})
    ]
    if not triv or k not in model_eval[ref]:
      return float("nan")
    best = max(triv) if direction == "higher" else min(triv)
    out.append(_gain(model_eval[ref][k], best, direction) / m - 1.0)
  return float(min(out))


def _mean_gain(a: dict, b: dict) -> float:
  """Mean over :data:`CLAIM_METRICS` of the gain of ``a`` over ``b`` in units of
  the margins."""
  return float(np.mean([_gain(a[k], b[k], d) / m for k, d, m in CLAIM_METRICS]))


def derived_metrics(evals: dict, extrapolation: dict | None = None) -> dict:
  """Per-seed quantities that decide the claims (slacks in units of the stated
  margins).

  For each model with ``vs_gt`` (and ``vs_teacher``) rows:
  ``.../over_trivial_vs_gt`` (and ``_vs_teacher``) = min over
  :data:`CLAIM_METRICS` of (gain over the best trivial predictor against that
  reference) / m − 1, so >= 0 means every metric beats every trivial predictor
  by at least its margin. For distilled students: ``.../vs_teacher_gap`` = min
  over the metrics of (gain of the student over the teacher, both against GT) /
  m + 1 (>= 0: within one margin of the teacher or better), and
  ``.../distill_score`` = the min of the three (the claim's metric).

  Paired comparisons (same seed, same test scenes, against GT):
  ``distill_vs_gt`` = mean gain of the Procrustes + reprojection student over
  the GT-trained student, in margins; ``ssm_vs_attention_gt`` = min gain of the
  GT-trained SSM over the GT-trained attention model / m
  + 1; ``geometry_minus_regression_AUC`` = AUC@30 difference of the two
    distilled students.
  With ``extrapolation``: ``.../extrap_retained_<S'>`` = min over AUC@30 and
  δ<1.25 of the value at ``S'`` views divided by the value at the training views
  (the ``vs_gt`` row).
  """
  d = {}
  for name, ev in evals.items():
    if name.startswith("trivial_"):
      continue
    d[f"derived/{name}/over_trivial_vs_gt"] = _slack_over_trivial(
      ev, evals, "vs_gt"
    )
    if "vs_teacher" in ev:
      d[f"derived/{name}/over_trivial_vs_teacher"] = _slack_over_trivial(
        ev, evals, "vs_teacher"
      )
    if (
      name.startswith("student_")
      and "teacher_T1" in evals
      and "vs_teacher" in ev
    ):
      t = evals["teacher_T1"]["vs_gt"]
      gap = min(
        _gain(ev["vs_gt"][k], t[k], dr) / m + 1.0 for k, dr, m in CLAIM_METRICS
      )
      d[f"derived/{name}/vs_teacher_gap"] = float(gap)
      parts = [gap, d[f"derived/{name}/over_trivial_vs_gt"]]
      parts.append(d[f"derived/{name}/over_trivial_vs_teacher"])
      d[f"derived/{name}/distill_score"] = float(min(parts))
  g = lambda n: evals.get(f"student_{n}", {}).get("vs_gt")
  if g("reprojection") and g("gt"):
    d["derived/distill_vs_gt"] = _mean_gain(g("reprojection"), g("gt"))
  if g("gt") and g("attention_gt"):
    d["derived/ssm_vs_attention_gt"] = float(
      min(
        _gain(g("gt")[k], g("attention_gt")[k], dr) / m + 1.0
        for k, dr, m in CLAIM_METRICS
      )
    )
  if g("reprojection") and g("regression"):
    d["derived/geometry_minus_regression_AUC"] = (
      g("reprojection")["AUC@30"] - g("regression")["AUC@30"]
    )
  for name, per_s in (extrapolation or {}).items():
    base = evals[name]["vs_gt"]
    for s_views, ev in per_s.items():
      d[f"derived/{name}/extrap_retained_{s_views}"] = float(
        min(ev[k] / max(base[k], 1e-12) for k in ("AUC@30", "depth_delta1.25"))
      )
  return d


def scan_order_derived(evals: dict) -> dict:
  """Per-seed quantities of the scan-order ablation (units of the margins of
  CLAIM_METRICS).

  ``derived/student_<order>/over_trivial_vs_gt`` as in :func:`derived_metrics`;
  ``derived/alternating_vs_<order>`` = mean gain of the alternating order over a
  single order (against ground truth, same seed and test scenes);
  ``derived/alternating_vs_best_single`` = the smaller of the two.
  """
  d = {}
  for name, ev in evals.items():
    if name.startswith("student_"):
      d[f"derived/{name}/over_trivial_vs_gt"] = _slack_over_trivial(
        ev, evals, "vs_gt"
      )
  alt = evals.get("student_alternating", {}).get("vs_gt")
  vs = []
  for single in ("frame_major", "position_major"):
    other = evals.get(f"student_{single}", {}).get("vs_gt")
    if alt and other:
      d[f"derived/alternating_vs_{single}"] = _mean_gain(alt, other)
      vs.append(d[f"derived/alternating_vs_{single}"])
  if len(vs) == 2:
    d["derived/alternating_vs_best_single"] = float(min(vs))
  return d


def aggregate(flats: list[dict]) -> dict:
  """Mean over seeds of every metric, with ``/ci95`` and ``/std`` beside it (>=
  2 seeds)."""
  out = {}
  for k in flats[0]:
    vals = np.array([f.get(k, np.nan) for f in flats], np.float64)
    out[k] = float(np.mean(vals))
    if len(vals) >= 2:
      out[f"{k}/ci95"] = float(core.ci95_halfwidth(vals))
      out[f"{k}/std"] = float(np.std(vals, ddof=1))
  return out


def flat_metrics(run: dict) -> dict:
  """One seed's metrics as ``{model/ref/metric: value}`` plus step and FLOP
  counts."""
  m = {}
  for prefix, nested in (
    ("", run["eval"]),
    ("views", run.get("extrapolation", {})),
  ):
    # per_ref: {ref or S': {metric: value}}
    for model, per_ref in nested.items():
      for ref, vals in per_ref.items():
        m.update({f"{model}/{prefix}{ref}/{k}": v for k, v in vals.items()})
  for name, info in run.get("students", {}).items():
    if "flops_vs_teacher" in info:
      m[f"student_{name}/flops_vs_teacher"] = info["flops_vs_teacher"]
      m[f"student_{name}/steps"] = info["steps"]
  if "steps" in run.get("teacher", {}):
    m["teacher/steps"] = run["teacher"]["steps"]
  return m


def loss_curves(histories: dict) -> dict:
  """``{model: {"step": [...], "loss": [...]}}``: the logged training losses
  (for the figure)."""
  rows = {
    name: [r for r in h if "train/total" in r] for name, h in histories.items()
  }
  return {
    n: {"step": [r["step"] for r in h], "loss": [r["train/total"] for r in h]}
    for n, h in rows.items()
  }


def seeds_from_results(path, seeds) -> tuple[dict, dict]:
  """Per-seed metrics of ``seeds`` read from an earlier ``results.json`` of this
  experiment.

  A finished run keeps every seed's metrics in ``extra.per_seed`` (what
  :func:`flat_metrics` returned for it, plus its derived quantities). Seeds
  found there are returned as ``{seed: flat metrics}`` with the derived
  quantities recomputed by :func:`derived_metrics` from the seed's own ``vs_gt``
  / ``vs_teacher`` / ``views<S'>`` metrics (so they follow this code's rule, not
  the file's); seeds absent from the file are left out. Also returns the file's
  provenance (``path``, ``command``, ``git``, ``seeds`` taken).
  """
  data = json.loads(pathlib.Path(path).read_text())
  per_seed = data.get("extra", {}).get("per_seed")
  if not isinstance(per_seed, dict):
    raise ValueError(
      f"seeds_from={path!r}: no extra.per_seed in that results.json"
    )
  out = {}
  for seed in seeds:
    if str(seed) not in per_seed:
      continue
    flat = {
      k: v
      for k, v in per_seed[str(seed)].items()
      if not k.startswith("derived/")
    }
    evals, extrap = {}, {}
    for k, v in flat.items():
      parts = k.split("/")
      if len(parts) != 3:
        continue
      model, ref, metric = parts
      if ref in ("vs_gt", "vs_teacher"):
        evals.setdefault(model, {}).setdefault(ref, {})[metric] = v
      elif ref.startswith("views"):
        extrap.setdefault(model, {}).setdefault(ref[len("views") :], {})[
          metric
        ] = v
    flat.update(derived_metrics(evals, extrap))
    out[int(seed)] = flat
  prov = {
    "path": str(path),
    "command": data.get("command"),
    "git": data.get("git"),
  }
  prov["seeds"] = sorted(out)
  return out, prov


# ------------------------------------------------------------------ report view

COLUMNS = (
  "AUC@30",
  "RRA@15",
  "RTA@15",
  "ATE",
  "depth_AbsRel",
  "depth_delta1.25",
  "points_overall",
  "points_overall_depthcam",
)
SLACKS = (
  "over_trivial_vs_gt",
  "over_trivial_vs_teacher",
  "vs_teacher_gap",
  "distill_score",
)
PAIRED = {
  "distill_vs_gt": (
    "Procrustes+reprojection student vs GT-trained student (mean gain, margins)"
  ),
  "ssm_vs_attention_gt": (
    "GT-trained SSM vs GT-trained attention, same FLOPs (min gain + 1)"
  ),
  "geometry_minus_regression_AUC": (
    "AUC@30: Procrustes+reprojection minus regression"
  ),
}
_EXTRAP = ("AUC@30", "depth_delta1.25", "points_overall")
NAN = float("nan")


def _cells(m: dict, prefix: str, names) -> dict:
  """``{name: mean, name/ci95: half-width (NaN with one seed)}`` of
  ``<prefix><name>``."""
  out = {}
  for n in names:
    out[n], out[f"{n}/ci95"] = (
      m.get(prefix + n),
      m.get(f"{prefix}{n}/ci95", NAN),
    )
  return out


def _extrap_view(m: dict, train_views) -> tuple[dict, dict]:
  """``(extrap, extrap_curves)`` of :func:`report_view` from the
  ``<model>/views<S'>/`` rows."""
  found = [
    k.split("/")[:2] for k in m if "/views" in k and k.endswith("/AUC@30")
  ]
  ext, extrap, curves = sorted({v for _, v in found}), {}, {}
  for a in sorted({a for a, _ in found}):
    for v in ext:
      s, d = (
        v[len("views") :],
        f"derived/{a}/extrap_retained_{v[len('views') :]}",
      )
      row = {"model": a, "views": s, **_cells(m, f"{a}/{v}/", _EXTRAP)}
      extrap[f"{a} {s}"] = {
        **row,
        "retained": m.get(d),
        "retained/ci95": m.get(f"{d}/ci95", NAN),
      }
    keys = [f"{a}/vs_gt/"] + [f"{a}/{v}/" for v in ext]
    curves[a] = {"views": [train_views] + [int(v[len("views") :]) for v in ext]}
    for c in ("AUC@30", "depth_delta1.25"):
      curves[a][c] = [m.get(p + c) for p in keys]
      curves[a][f"{c}/ci95"] = [m.get(f"{p}{c}/ci95", 0.0) for p in keys]
  return extrap, curves


def _budget_view(extra: dict) -> dict | None:
  """``{model: {params, steps, flops, scenes}}`` (relative to the teacher) of a
  record's extra."""
  if "teacher" not in extra or "students" not in extra:
    return None
  t = extra["teacher"]
  out = {
    "teacher_T1": dict(
      params=t.get("params"), steps=t.get("steps"), flops=1.0, scenes=1.0
    )
  }
  for name, i in extra["students"].items():
    flops, scenes = i["flops_vs_teacher"], i["scenes_vs_teacher"]
    out[f"student_{name}"] = dict(
      params=i["params"], steps=i["steps"], flops=flops, scenes=scenes
    )
  return out


def report_view(record: dict) -> dict[str, Any]:
  """A results record shaped for the report of ``configs/``
  (:mod:`jaxpapers.core.reporting`).

  Returns:
    ``rows``: ``{"<model> <ref>": {model, ref, <metric>, <metric>/ci95}}``
    (references, then trivial predictors first); ``slacks``: ``{model: {<slack>,
    <slack>/ci95}}``; ``paired``: ``{name: {what, value, value/ci95}}``;
    ``derived``: every derived quantity; ``extrap``: ``{"<model> <S'>": {model,
    views, <metric>..., retained}}``; ``extrap_curves``: ``{model: {views,
    <metric>, <metric>/ci95}}``; ``budget``: ``{model: {params, steps, flops,
    scenes}}``; ``scaling``: ``{model: {views, params, <sweep fields>}}``. An
    entry the record has nothing for is None.
  """
  m, extra = record.get("metrics", {}), record.get("extra") or {}
  keys = [k.split("/") for k in m]
  pairs = {
    (p[0], p[1])
    for p in keys
    if len(p) == 3 and p[1] in ("vs_gt", "vs_teacher")
  }
  pairs = sorted(
    pairs, key=lambda mr: (mr[1], not mr[0].startswith("trivial_"), mr[0])
  )
  rows = {
    f"{a} {r}": {"model": a, "ref": r, **_cells(m, f"{a}/{r}/", COLUMNS)}
    for a, r in pairs
  }
  derived_keys = (
    p for p in keys if p[0] == "derived" and len(p) == 3 and p[2] in SLACKS
  )
  slacks = {
    a: _cells(m, f"derived/{a}/", SLACKS)
    for a in dict.fromkeys(p[1] for p in derived_keys)
  }
  value = lambda k: {"value": m[k], "value/ci95": m.get(f"{k}/ci95", NAN)}
  paired = {
    k: {"what": w, **value(f"derived/{k}")}
    for k, w in PAIRED.items()
    if f"derived/{k}" in m
  }
  derived = {
    k[len("derived/") :]: value(k)
    for k in m
    if k.startswith("derived/") and not k.endswith(("/ci95", "/std"))
  }
  train_views = (record.get("config") or {}).get("data", {}).get("num_views")
  extrap, curves = _extrap_view(m, train_views)
  res = extra.get("scaling") or {}
  models = [
    n
    for n in ("student_ssm", "student_ssm_associative", "teacher_attention")
    if n in res
  ]
  scaling = {
    n: {"views": res["views"], "params": res["params"].get(n), **res[n]}
    for n in models
  }
  view = dict(
    rows=rows,
    slacks=slacks,
    paired=paired,
    derived=derived,
    extrap=extrap,
    extrap_curves=curves,
    budget=_budget_view(extra),
    scaling=scaling,
  )
  return {k: v or None for k, v in view.items()}
