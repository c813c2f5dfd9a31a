"""Claim code of the LOCOS experiment: collapse points, their advantage, retained recall.

Pure functions of per-probe scores and of results.json's metrics, so committed results are
re-judged from them (``python -m experiments.reproduce --rejudge=locos``).
"""

from __future__ import annotations

import numpy as np

from jaxpapers import locos

DETECTORS = ("locos", "wu", "contrastive", "attention_spatial", "dla")
# The real-model tracks whose metrics derived_metrics reads (names of real.REAL_MODELS), with
# the model each runs (the reports' titles and the tracks' notes).
TRACK_LABELS = {
  "smollm2": "SmolLM2-135M-Instruct (Q4_1)",
  "gemma3": "Gemma-3-270M (pretrained, Q4_K_M)",
  "checkpoint": "Hugging Face checkpoint (real.checkpoint_dir)",
}
REAL_TRACKS = tuple(TRACK_LABELS)


def collapse_k(curve, det, frac=0.5):
  """Smallest k at which the score falls below frac × baseline (None if never)."""
  base = curve["baseline"]["mean"]
  for k, m in zip(curve["ks"], curve[det]["mean"]):
    if m < frac * base:
      return k
  return None


def ablated_probes(answers, texts, ablation_num_eval=0):
  """Indices of the probes the filtered protocol ablates: answered among the first n items.

  A probe is answered when ROUGE-1 recall of its answer in the unablated generation is
  >= 0.5; with `ablation_num_eval` = n > 0 only items 0 .. n-1 are kept (0: every item).
  """
  n = int(ablation_num_eval or 0)
  if n < 0 or n > len(answers):
    raise ValueError(f"ablation_num_eval must be in [0, {len(answers)}], got {ablation_num_eval!r}")
  if len(texts) != len(answers):
    raise ValueError(
      f"texts must hold one generation per answer, got {len(texts)} for {len(answers)}"
    )
  ok = np.flatnonzero([locos.rouge1_recall(a, t) >= 0.5 for a, t in zip(answers, texts)])
  return ok[ok < n] if n else ok


def _collapse_index(curve, b):
  """First grid index whose mean is at or below half the baseline (never: len(grid))."""
  below = curve <= 0.5 * b
  return np.where(below.any(0), below.argmax(0), curve.shape[0])


def _advantage(boot, boot_base, mat, base, ks, grid, baselines):
  """Collapse-index advantage (strongest baseline minus LOCOS) on the k values `grid`."""
  rows = [ks.index(k) for k in grid]
  if any(np.isnan(mat[d][rows]).any() for d in ("locos", *baselines)):  # a cell not run
    return {"grid": list(grid), "baselines": list(baselines), "advantage": None}
  ci = {d: _collapse_index(boot[d][rows], boot_base) for d in ("locos", *baselines)}
  point = {
    d: int(_collapse_index(mat[d].mean(1)[rows][:, None], np.array([base.mean()]))[0])
    for d in ("locos", *baselines)
  }
  adv_boot = np.min([ci[d] for d in baselines], axis=0) - ci["locos"]
  adv = min(point[d] for d in baselines) - point["locos"]
  lo, hi = np.quantile(adv_boot, [0.025, 0.975])
  return {
    "grid": list(grid),
    "baselines": list(baselines),
    "collapse_index": point,
    "collapse_k": {d: (grid[i] if i < len(grid) else None) for d, i in point.items()},
    "advantage": float(adv),
    "ci": [float(lo), float(hi)],
    "halfwidth": float(max(adv - lo, hi - adv)),
  }


def ablation_curves(
  res, detectors, ks, keep, num_resamples, seed, claim_ks=None, claim_baselines=None
):
  """Means, 95 % bootstrap intervals and collapse statistics over the probes in `keep`.

  Every detector and k is resampled with the *same* probe indices (paired bootstrap), so the
  intervals of differences and of collapse indices account for the shared probes. The
  claim's statistic (`collapse_step_advantage`) uses the k values `claim_ks` and the
  baselines `claim_baselines` (the rule fixed in configs/default.py); the same statistic on
  the full grid against each baseline is reported beside it (`advantage_full_grid`).
  """
  keep = np.asarray(keep)
  names = ("baseline", *detectors, "random")
  baselines = [d for d in detectors if d != "locos"]
  claim_baselines = list(claim_baselines or baselines)
  claim_ks = [k for k in (claim_ks or ks) if k in ks]
  if keep.size == 0:
    return None
  ks = list(ks)
  base = res[("baseline", 0)][keep]
  mat = {d: np.stack([res[(d, k)][keep] for k in ks]) for d in names[1:]}  # [K, N]
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, keep.size, size=(num_resamples, keep.size))
  boot_base = base[idx].mean(1)  # [R]
  boot = {d: m[:, idx].mean(-1) for d, m in mat.items()}  # [K, R]
  out = {
    "ks": ks,
    "num_probes": int(keep.size),
    "baseline": {
      "mean": float(base.mean()),
      "lo": float(np.quantile(boot_base, 0.025)),
      "hi": float(np.quantile(boot_base, 0.975)),
    },
  }

  for d, m in mat.items():
    out[d] = {
      "mean": _nan_none(m.mean(1)),
      "lo": _nan_none(np.quantile(boot[d], 0.025, axis=1)),
      "hi": _nan_none(np.quantile(boot[d], 0.975, axis=1)),
    }
  out["not_run"] = {d: [k for k, row in zip(ks, m) if np.isnan(row).any()] for d, m in mat.items()}
  claim = _advantage(boot, boot_base, mat, base, ks, claim_ks, claim_baselines)
  out["claim_grid"] = claim["grid"]
  out["claim_baselines"] = claim["baselines"]
  rows = [ks.index(k) for k in claim["grid"]]

  point = {d: _first_collapse(m, base, rows, claim["grid"]) for d, m in mat.items()}
  out["collapse_index"] = {d: v[0] for d, v in point.items()}
  out["collapse_k"] = {d: v[1] for d, v in point.items()}
  out["collapse_step_advantage"] = claim["advantage"]
  out["collapse_step_advantage_ci"] = claim.get("ci")
  out["collapse_step_advantage_halfwidth"] = claim.get("halfwidth")
  out["collapse_k_full_grid"] = {
    d: _first_collapse(m, base, list(range(len(ks))), ks)[1] for d, m in mat.items()
  }
  out["advantage_full_grid"] = {
    d: _advantage(boot, boot_base, mat, base, ks, ks, [d]) for d in baselines
  }
  out["locos_minus"] = _locos_minus(boot, mat, baselines)
  out["random_drop"] = _random_drop(boot_base, boot, base, mat)
  return out


def _random_drop(boot_base, boot, base, mat):
  """Unablated minus random-heads ROUGE-L at each k: the mean and its 95 % paired bootstrap
  interval (the curves' resamples) and half-width (None where the cell was not run)."""
  mean = base.mean() - mat["random"].mean(1)  # [K]
  dd = boot_base[None, :] - boot["random"]  # [K, R]
  lo, hi = np.quantile(dd, 0.025, axis=1), np.quantile(dd, 0.975, axis=1)
  return {
    "mean": _nan_none(mean),
    "lo": _nan_none(lo),
    "hi": _nan_none(hi),
    "halfwidth": _nan_none(np.maximum(mean - lo, hi - mean)),
  }


def _nan_none(x):
  """A list of floats with None for NaN (cells skipped for time: null in results.json)."""
  return [None if np.isnan(v) else float(v) for v in x]


def _first_collapse(m, base, grid_rows, grid):
  """(index, k) of the first grid row whose mean is <= half the baseline's; (len, None) if
  none; (None, 'not run') when a cell not run comes before the collapse."""
  for i, r in enumerate(grid_rows):
    if np.isnan(m[r]).any():
      return None, "not run"
    if m[r].mean() <= 0.5 * base.mean():
      return i, grid[i]
  return len(grid_rows), None


def _locos_minus(boot, mat, baselines):
  """Paired differences LOCOS - each baseline (and random) at each k, with bootstrap 95 %
  intervals (negative: LOCOS hurts more)."""
  diffs = {}
  for d in (*baselines, "random"):
    dd = boot["locos"] - boot[d]
    diffs[d] = {
      "mean": _nan_none((mat["locos"] - mat[d]).mean(1)),
      "lo": _nan_none(np.quantile(dd, 0.025, axis=1)),
      "hi": _nan_none(np.quantile(dd, 0.975, axis=1)),
    }
  return diffs


_ATTENTION_DETECTORS = ("wu", "contrastive", "attention_spatial")


def derived_metrics(metrics) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure).

  Toy track: ``collapse_k_advantage`` (best attention detector's collapse k minus LOCOS's, a
  detector that never halves the score counting as max k + 1) and
  ``parametric_retained_at_collapse``. SmolLM2 track, per protocol (``filtered``,
  ``paper``): ``collapse_step_advantage`` = collapse grid index of the claim's baselines
  (``real.claim_baselines``: contrastive attention) minus LOCOS's on the claim's grid
  (``real.claim_ks``: {1, 5, 20, 50}; never collapsing = one step past the grid), its
  bootstrap half-width, and the random-heads drop at the largest k; ``parametric_retained`` = parametric recall with LOCOS's filtered-protocol
  collapse-k heads ablated over the unablated recall.
  """
  out = {}
  curves = metrics.get("toy/curves", {})
  nl = curves.get("nonliteral")
  if nl:
    ks = list(nl["ks"])
    ck = {d: collapse_k(nl, d) for d in nl if d not in ("ks", "baseline")}
    beyond = max(ks) + 1
    att = [ck[d] if ck[d] is not None else beyond for d in _ATTENTION_DETECTORS if d in ck]
    rec = {"collapse_k": ck, "collapse_k_advantage": None, "parametric_retained_at_collapse": None}
    if "locos" in ck and att:
      rec["collapse_k_advantage"] = min(att) - (ck["locos"] if ck["locos"] is not None else beyond)
    par = curves.get("parametric")
    if par and ck.get("locos") is not None and par["baseline"]["mean"] > 0:
      i = list(par["ks"]).index(ck["locos"])
      rec["parametric_retained_at_collapse"] = par["locos"]["mean"][i] / par["baseline"]["mean"]
    out["toy"] = rec
  for track in REAL_TRACKS:
    real = metrics.get(f"{track}/curves")
    if not real:
      continue
    rec = {}
    for proto, cv in real.items():
      if cv is None:
        rec[proto] = None
        continue
      rec[proto] = {
        "collapse_step_advantage": cv["collapse_step_advantage"],
        "collapse_step_advantage_halfwidth": cv["collapse_step_advantage_halfwidth"],
        "collapse_k": cv["collapse_k"],
        "baseline": cv["baseline"]["mean"],
        "random_drop_at_max_k": None
        if cv["random"]["mean"][-1] is None
        else cv["baseline"]["mean"] - cv["random"]["mean"][-1],
      }
    par = metrics.get(f"{track}/parametric", {})
    filt = real.get("filtered")
    rec["parametric_retained"] = None
    if filt and par.get("locos") and par["baseline"] > 0:
      i = filt["collapse_index"]["locos"]
      if i is not None and i < len(filt["claim_grid"]):
        got = par["locos"][list(par["ks"]).index(filt["claim_grid"][i])]
        rec["parametric_retained"] = None if got is None else got / par["baseline"]
        if "per_probe" in par:  # runs that record per-landmark recall (configs/size.py)
          rec["parametric_retained_halfwidth"] = parametric_retained_halfwidth(
            par, filt["claim_grid"][i]
          )
    for proto, cv in real.items():
      if cv is not None and "random_drop" in cv:  # the guards of configs/size.py
        rec[proto].update(random_guards(cv, metrics.get(f"{track}/num_heads")))
    out[track] = rec
  return out


# The share of the model's heads that the paper's top-k ablation removes: 50 of Qwen3-8B's
# 36 layers x 32 query heads.
PAPER_HEAD_SHARE = 50 / 1152


def random_guards(cv, num_heads, paper_share=PAPER_HEAD_SHARE):
  """The random-heads numbers that guard the claims of configs/size.py (pure).

  Args:
    cv: one protocol's curves (`ablation_curves`, with `random_drop`).
    num_heads: the model's query heads (layers x heads), or None.
    paper_share: the share of heads the paper ablates.

  Returns:
    ``random_collapse_step_advantage``: the claim's baselines' collapse grid index minus
    random heads' (the lower-k rule with random heads in LOCOS's place; None when a cell
    before the collapse was not run); ``random_drop_at_max_k_halfwidth``: the half-width of
    the paired interval of the drop at the largest k; ``head_share_at_max_k`` (largest k over
    ``num_heads``); ``paper_share_k``: the largest k of the grid whose share of heads is at
    most ``paper_share`` (None if none), and ``random_drop_at_paper_share`` with its
    ``..._halfwidth``.
  """
  idx = cv["collapse_index"]
  base_idx = [idx.get(b) for b in cv["claim_baselines"]]
  adv = None
  if idx.get("random") is not None and base_idx and None not in base_idx:
    adv = float(min(base_idx) - idx["random"])
  drop = cv["random_drop"]
  out = {
    "random_collapse_step_advantage": adv,
    "random_drop_at_max_k_halfwidth": drop["halfwidth"][-1],
    "head_share_at_max_k": None,
    "paper_share_k": None,
    "random_drop_at_paper_share": None,
    "random_drop_at_paper_share_halfwidth": None,
  }
  if num_heads:
    ks = list(cv["ks"])
    out["head_share_at_max_k"] = max(ks) / num_heads
    fit = [i for i, k in enumerate(ks) if k <= paper_share * num_heads]
    if fit:
      i = max(fit, key=lambda j: ks[j])
      out["paper_share_k"] = ks[i]
      out["random_drop_at_paper_share"] = drop["mean"][i]
      out["random_drop_at_paper_share_halfwidth"] = drop["halfwidth"][i]
  return out


def parametric_retained_halfwidth(par, k, num_resamples=2000, seed=0):
  """Half-width of the 95 % paired bootstrap interval of parametric recall retained at k.

  Args:
    par: the track's parametric record with ``per_probe``: ``{"baseline": [n], "locos":
      {str(k): [n] or None}}`` (recall per landmark).
    k: the ablated k.
    num_resamples: bootstrap resamples over landmarks (the same landmarks in both arms).
    seed: the resamples' seed.

  Returns:
    ``max(r - lo, hi - r)`` for r = mean(locos) / mean(baseline) and [lo, hi] the percentile
    interval of the resampled ratios (resamples with a zero baseline mean are dropped); None
    when the cell was not run or fewer than 2 landmarks.
  """
  base = np.asarray(par["per_probe"]["baseline"], float)
  abl = par["per_probe"]["locos"].get(str(k))
  if abl is None or base.size < 2:
    return None
  abl = np.asarray(abl, float)
  idx = np.random.default_rng(seed).integers(0, base.size, size=(num_resamples, base.size))
  b, a = base[idx].mean(1), abl[idx].mean(1)
  ok = b > 0
  if not ok.any() or base.mean() <= 0:
    return None
  ratios = a[ok] / b[ok]
  r = abl.mean() / base.mean()
  lo, hi = np.quantile(ratios, [0.025, 0.975])
  return float(max(r - lo, hi - r))


def ablation_rows(track: str, curves: dict) -> list[dict]:
  """The rows of a real-model track's table: one per (protocol, k) of every protocol run.

  Args:
    track: the track's name (the rows' ``model``).
    curves: ``{protocol: ablation_curves(...) or None}`` (None: the protocol did not run).

  Returns:
    ``[{"model", "protocol", "probes", "k", "baseline", "cells": {condition: {"mean", "lo",
    "hi"}}}]``; a cell not run (skipped for time, a null mean) is left out of ``cells``.
  """
  rows = []
  for proto, cv in curves.items():
    if cv is None:
      continue
    conds = [d for d in (*DETECTORS, "random") if d in cv]
    for i, k in enumerate(cv["ks"]):
      cells = {
        d: {q: cv[d][q][i] for q in ("mean", "lo", "hi")}
        for d in conds
        if cv[d]["mean"][i] is not None
      }
      rows.append(
        {
          "model": track,
          "protocol": proto,
          "probes": cv["num_probes"],
          "k": k,
          "baseline": cv["baseline"]["mean"],
          "cells": cells,
        }
      )
  return rows


def report_view(record: dict) -> dict:
  """What ``configs/default.py``'s report reads beyond paths (as ``view.<key>``).

  Args:
    record: a results record of a real-model run.

  Returns:
    ``{"real": {track: {"rows": ablation_rows(track, curves)}}}`` for every real-model track
    the record holds curves of, in ``REAL_TRACKS`` order.
  """
  metrics = record["metrics"]
  return {
    "real": {
      track: {"rows": ablation_rows(track, metrics[f"{track}/curves"])}
      for track in REAL_TRACKS
      if metrics.get(f"{track}/curves")
    }
  }
