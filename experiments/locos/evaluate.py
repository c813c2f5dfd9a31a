"""Claim code of the LOCOS experiment: the values the claims are judged on, the
report's rows.

Pure functions of results.json's metrics (the curves: `locos.collapse_curves`),
so committed results are re-judged from them (``python -m experiments.reproduce
--rejudge=locos``).
"""

from __future__ import annotations

import numpy as np

from jaxpapers import locos

DETECTORS = ("locos", "wu", "contrastive", "attention_spatial", "dla")
# The real-model tracks whose metrics derived_metrics reads (names of
# real.REAL_MODELS), with the model each runs (the reports' titles and the
# tracks' notes).
TRACK_LABELS = {
  "smollm2": "SmolLM2-135M-Instruct (Q4_1)",
  "gemma3": "Gemma-3-270M (pretrained, Q4_K_M)",
  "checkpoint": "Hugging Face checkpoint (real.checkpoint_dir)",
}
REAL_TRACKS = tuple(TRACK_LABELS)


def collapse_k(curve, det, frac=0.5):
  """Smallest k at which the score falls below frac × baseline (None if
  never)."""
  base = curve["baseline"]["mean"]
  for k, m in zip(curve["ks"], curve[det]["mean"]):
    if m < frac * base:
      return k
  return None


def ablated_probes(answers, texts, ablation_num_eval=0):
  """Indices of the probes the filtered protocol ablates: answered among the
  first n items.

  A probe is answered when ROUGE-1 recall of its answer in the unablated
  generation is >= 0.5; with `ablation_num_eval` = n > 0 only items 0 .. n-1 are
  kept (0: every item).
  """
  n = int(ablation_num_eval or 0)
  if n < 0 or n > len(answers):
    raise ValueError(
      f"ablation_num_eval must be in [0, {len(answers)}], "
      f"got {ablation_num_eval!r}"
    )
  if len(texts) != len(answers):
    raise ValueError(
      "texts must hold one generation per answer, "
      f"got {len(texts)} for {len(answers)}"
    )
  ok = np.flatnonzero(
    [locos.rouge1_recall(a, t) >= 0.5 for a, t in zip(answers, texts)]
  )
  return ok[ok < n] if n else ok


_ATTENTION_DETECTORS = ("wu", "contrastive", "attention_spatial")


def derived_metrics(metrics) -> dict:
  """The values the claims are judged on (pure; each claim's ``note`` defines
  its value).

  Toy track: ``collapse_k_advantage`` (a detector that never halves the score
  counts as max k
  + 1) and ``parametric_retained_at_collapse``. Real tracks, per protocol: the
    curves'
  ``collapse_step_advantage`` and half-width, the random-heads drop at the
  largest k, and ``parametric_retained`` at LOCOS's filtered-protocol collapse
  k.
  """
  out = {}
  curves = metrics.get("toy/curves", {})
  nl = curves.get("nonliteral")
  if nl:
    ks = list(nl["ks"])
    ck = {d: collapse_k(nl, d) for d in nl if d not in ("ks", "baseline")}
    beyond = max(ks) + 1
    att = [
      ck[d] if ck[d] is not None else beyond
      for d in _ATTENTION_DETECTORS
      if d in ck
    ]
    rec = {
      "collapse_k": ck,
      "collapse_k_advantage": None,
      "parametric_retained_at_collapse": None,
    }
    if "locos" in ck and att:
      rec["collapse_k_advantage"] = min(att) - (
        ck["locos"] if ck["locos"] is not None else beyond
      )
    par = curves.get("parametric")
    if par and ck.get("locos") is not None and par["baseline"]["mean"] > 0:
      i = list(par["ks"]).index(ck["locos"])
      rec["parametric_retained_at_collapse"] = (
        par["locos"]["mean"][i] / par["baseline"]["mean"]
      )
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
        "collapse_step_advantage_halfwidth": cv[
          "collapse_step_advantage_halfwidth"
        ],
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
        rec["parametric_retained"] = (
          None if got is None else got / par["baseline"]
        )
        # runs that record per-landmark recall (configs/size.py)
        if "per_probe" in par:
          rec["parametric_retained_halfwidth"] = parametric_retained_halfwidth(
            par, filt["claim_grid"][i]
          )
    for proto, cv in real.items():
      # the guards of configs/size.py
      if cv is not None and "random_drop" in cv:
        rec[proto].update(random_guards(cv, metrics.get(f"{track}/num_heads")))
    out[track] = rec
  return out


# The share of the model's heads that the paper's top-k ablation removes: 50 of
# Qwen3-8B's 36 layers x 32 query heads.
PAPER_HEAD_SHARE = 50 / 1152


def random_guards(cv, num_heads, paper_share=PAPER_HEAD_SHARE):
  """The random-heads numbers that guard the claims of configs/size.py (pure):
  random heads' collapse-step advantage (the claim's rule with random heads in
  LOCOS's place), the drop's half-width at the largest k, the share of heads of
  the largest k of ``cv`` (one protocol's curves) over ``num_heads``, and the
  drop at the largest k within ``paper_share``."""
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
  """Half-width of the 95 % paired bootstrap interval (over landmarks) of
  parametric recall retained at k, from ``par["per_probe"]``; None when the cell
  was not run, fewer than 2 landmarks or no positive baseline."""
  base = np.asarray(par["per_probe"]["baseline"], float)
  abl = par["per_probe"]["locos"].get(str(k))
  if abl is None or base.size < 2:
    return None
  abl = np.asarray(abl, float)
  idx = np.random.default_rng(seed).integers(
    0, base.size, size=(num_resamples, base.size)
  )
  b, a = base[idx].mean(1), abl[idx].mean(1)
  ok = b > 0
  if not ok.any() or base.mean() <= 0:
    return None
  ratios = a[ok] / b[ok]
  r = abl.mean() / base.mean()
  lo, hi = np.quantile(ratios, [0.025, 0.975])
  return float(max(r - lo, hi - r))


def ablation_rows(track: str, curves: dict) -> list[dict]:
  """The rows of a real-model track's table: one per (protocol, k) of every
  protocol run (a cell not run, a null mean, is left out of ``cells``)."""
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
      row = dict(
        model=track, protocol=proto, probes=cv["num_probes"], k=k, cells=cells
      )
      rows.append(row | {"baseline": cv["baseline"]["mean"]})
  return rows


def report_view(record: dict) -> dict:
  """``view.real.<track>.rows`` of ``configs/default.py``'s report
  (:func:`ablation_rows`)."""
  metrics = record["metrics"]
  return {
    "real": {
      track: {"rows": ablation_rows(track, metrics[f"{track}/curves"])}
      for track in REAL_TRACKS
      if metrics.get(f"{track}/curves")
    }
  }
