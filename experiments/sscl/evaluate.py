"""Claim code of the SSCL experiment: the grids' runs as per-seed tables, the
trivial predictors and the numbers the claims in ``configs/default.py`` are
judged on."""

from __future__ import annotations

import ml_collections
import numpy as np

import jaxpapers.sscl as S
from jaxpapers import core

METRICS = ("miou", "region_acc", "region_acc_ctx", "drift")
# readouts of the CLIP
TRAINING_FREE = ("raw", "refine", "refine_placebo", "proxy", "sclip")
# The paired differences (model a - model b of one metric) the claims and the
# table read.
_DIFFS = (
  ("refine", "raw", "miou"),
  ("refine_placebo", "raw", "miou"),
  ("sclip", "raw", "miou"),
  ("proxy", "raw", "miou"),
  ("keep_only", "refine", "miou"),
  ("keep_only", "raw", "region_acc"),
  ("keep_only", "raw", "miou"),
  ("sscl", "sclip", "miou"),
  ("sscl", "refine", "miou"),
  ("sscl", "raw", "miou"),
  ("cisc_only", "keep_only", "drift"),
  ("cisc_only", "keep_only", "region_acc_ctx"),
  ("sgsr_only", "keep_only", "miou"),
)


def summarize(cfg: ml_collections.ConfigDict, grid: dict) -> dict:
  """Per model (training-free readouts of the CLIP models, then each arm):
  per-seed values."""
  pre = sorted(grid["pretrain"], key=lambda r: r["seed"])
  table = {"raw": {m: [r["evals"][m] for r in pre] for m in METRICS}}
  # read from the same pretrained CLIP, mIoU only
  for name in TRAINING_FREE[1:]:
    table[name] = {"miou": [r["evals"][f"miou_{name}"] for r in pre]}
  for a in cfg.arms:
    rs = sorted(
      [r for r in grid["finetune"] if r["arm"] == a], key=lambda r: r["seed"]
    )
    table[a] = {m: [r["evals"][m] for r in rs] for m in METRICS}
  return table


def probes(grid: dict) -> dict:
  """Per class set: the pretrained CLIP's linear-probe accuracies, per seed."""
  pre = sorted(grid["pretrain"], key=lambda r: r["seed"])
  return {k: [r["evals"][f"probe_acc_{k}"] for r in pre] for k in S.CLASS_SETS}


def derived_metrics(
  summary: dict, trivial: dict, probe: dict | None = None
) -> dict:
  """The numbers the claims are judged on (pure, JSON in / out); differences are
  paired.

  ``probe`` maps a class set to the pretrained CLIP's per-seed linear-probe
  accuracies; the claims' precondition reads the lowest seed's
  (``probe_acc_<set>_min``). The fine-tuning claims' precondition reads
  ``keep_only_minus_raw_region_acc_min``: the lowest seed's keep-only region
  accuracy minus the pretrained CLIP's (raw readout), paired by seed.
  """
  out = {}
  for kind, accs in (probe or {}).items():
    out[f"probe_acc_{kind}"] = float(np.mean(accs))
    out[f"probe_acc_{kind}_min"] = float(np.min(accs))

  def diff(a, b, metric, name, worst=False):
    if (
      a in summary
      and b in summary
      and metric in summary[a]
      and metric in summary[b]
    ):
      d = np.asarray(summary[a][metric]) - np.asarray(summary[b][metric])
      out[name] = float(d.mean())
      out[name + "_ci"] = core.ci95_halfwidth(d)
      if worst:  # the lowest seed's difference
        out[name + "_min"] = float(d.min())

  for name, m in summary.items():
    for k, v in m.items():
      out[f"{name}_{k}"] = float(np.mean(v))
  for a, b, metric in _DIFFS:
    name = f"{a}_minus_{b}_{metric}"
    if b == "keep_only":  # against keep-only: cisc_minus_keep_drift
      name = f"{a.removesuffix('_only')}_minus_keep_{metric}"
    # does fine-tuning with the keep term alone preserve the pretrained CLIP's
    # readout?
    diff(a, b, metric, name, worst=name == "keep_only_minus_raw_region_acc")
  if all(a in summary for a in ("sscl", "cisc_only", "sgsr_only")):
    singles = np.maximum(
      summary["cisc_only"]["miou"], summary["sgsr_only"]["miou"]
    )
    d = np.asarray(summary["sscl"]["miou"]) - singles
    out["sscl_minus_best_single_miou"] = float(d.mean())
    out["sscl_minus_best_single_miou_ci"] = core.ci95_halfwidth(d)
  out.update({f"trivial_{k}": v for k, v in trivial.items()})
  return out


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads besides the metrics.

  Returns:
    ``{"num_classes": the segmentation classes of the run's class set, "chance":
    {"shape", "colour"}: a linear probe's chance accuracy on each}``.
  """
  return {
    "num_classes": S.num_classes(record["config"]["classes"]),
    "chance": {"shape": 1 / len(S.SHAPES), "colour": 1 / len(S.COLOURS)},
  }
