"""LOCOS on long-context needle probes (configs/needle.py): detection and
ablation per length."""

from __future__ import annotations

import logging
import time

import jax
import numpy as np

from experiments.locos import real
from jaxpapers import core, lm, locos


def _length(c, params, cfg, tok, store, T):
  """The record of context length ``T`` (its cells under `needle/T=<T>/`)."""
  n = c.needle
  (det_names, det_lands), (ev_names, ev_lands) = locos.split_entities(c.seed)
  kw = dict(tokenizer=tok, context_tokens=int(T), depths=tuple(n.depths))
  rng = np.random.default_rng
  det = locos.make_needle_probes(
    rng([c.seed, T, 1]),
    num=n.num_detect,
    names=det_names,
    landmarks=det_lands,
    **kw,
  )
  ev = locos.make_needle_probes(
    rng([c.seed, T, 2]),
    num=n.num_eval,
    names=ev_names,
    landmarks=ev_lands,
    **kw,
  )
  pad = lm.bucket_length(max(len(p.prompt_ids) for p in det + ev))
  kw = dict(stop_ids=tok.stop_ids(), batch_size=n.batch_size, pad_to=pad)
  t1 = time.time()
  found = store.get_or_compute(
    f"needle/T={T}/detection",
    lambda _: real.detection(
      params, cfg, tok, det, max_steps=n.max_steps, **kw
    ),
  )
  scores = {d: np.asarray(v) for d, v in found["scores"].items()}
  detect_s = time.time() - t1
  mean_q = lm.mean_queries(
    params, [p.prompt_ids for p in ev], config=cfg, batch_size=n.batch_size
  )
  # the unablated model, each detector's top k and random heads (seed s on
  # probes s, s + num_random, ...; the default run's keys), in `conditions`
  # order
  L, H, key = cfg.n_layers, cfg.n_heads, jax.random.key(c.seed)
  conds = locos.ablation_conditions(
    scores, n.detectors, n.ks, L, H, n.num_random, key
  )
  model = (params, cfg, tok, mean_q, dict(max_new_tokens=n.max_steps, **kw))
  res, keep = _ablations(n, model, store, T, ev, conds)
  record = {
    "prompt_tokens": [len(p.prompt_ids) for p in ev],
    "padded_to": pad,
    "accepted_detection_trials": f"{sum(found['accepted'])}/{len(det)}",
    "detection_generations": found["generations"],
    "top_heads": {d: locos.rank_heads(scores[d])[:5] for d in scores},
    "rougeL": {
      key: float(np.mean(v["rougeL"]))
      for key, v in res.items()
      if v is not None
    },
    "eval_generations": res["baseline@0"]["texts"],
    "answers": [p.answer for p in ev],
    "detect_s": detect_s,
    "time_s": time.time() - t1,
  }
  if n.num_resamples:  # paired intervals over the ablated probes
    record.update(
      num_eval=len(ev),
      ablated_probes=int(keep.size),
      accepted_detection=sum(found["accepted"]),
      paired=paired_needle(res, keep, n.ks, int(n.num_resamples), c.seed),
    )
  return record


def _ablations(n, model, store, T, ev, conds):
  """``(res, keep)``: the cell of every condition with head sets
  (``res['<name>@<k>']``: texts and ROUGE-L; None when no probe is ablated) and
  the ablated probes. With `ablate_answered` the ablations run only on the
  probes the unablated model answers (ROUGE-1 recall >= 0.5, the filtered
  protocol's rule); otherwise on every probe."""
  params, cfg, tok, mean_q, gen = model
  keep = np.arange(len(ev))
  res = {}
  # no random heads without seeds
  for name, k, masks in [cd for cd in conds if cd[2]]:
    masks = np.stack(masks)
    rows = keep if name != "baseline" else np.arange(len(ev))
    cell = f"needle/T={T}/{name}/k={k}" + (
      f"/n={len(ev)}" if n.ablate_answered else ""
    )

    def run(_, masks=masks, rows=rows):
      sub = [ev[i] for i in rows]
      # one head set: the [L, H] mask, as in the first needle runs; several: one
      # per row
      per_row = (
        masks[0] if len(masks) == 1 else masks[np.arange(len(sub)) % len(masks)]
      )
      texts = locos.ablated_texts(params, cfg, sub, tok, per_row, mean_q, **gen)
      return {
        "texts": texts,
        "rougeL": [locos.rouge_l(p.answer, t) for p, t in zip(sub, texts)],
      }

    res[f"{name}@{k}"] = store.get_or_compute(cell, run) if rows.size else None
    if name == "baseline" and n.ablate_answered:
      got = [
        locos.rouge1_recall(p.answer, t)
        for p, t in zip(ev, res["baseline@0"]["texts"])
      ]
      keep = np.flatnonzero(np.asarray(got) >= 0.5)
  return res, keep


def conditions(detectors, ks, num_random=0):
  """(name, k) of the unablated run, each detector's top k and (with
  `num_random`) random heads."""
  conds = [("baseline", 0)] + [(d, k) for d in detectors for k in ks]
  return conds + ([("random", k) for k in ks] if num_random else [])


def report_view(record: dict) -> dict:
  """``view.conditions`` (the columns, "<name> k=<k>") and ``view.rows`` (one
  per context length run, a condition not run left out of ``rougeL``) of
  ``configs/needle.py``'s report."""
  n = record["config"]["needle"]
  conds = conditions(n["detectors"], n["ks"], n.get("num_random", 0))
  rows = []
  for T in n["context_tokens"]:
    rec = record["metrics"].get(f"needle/T={T}")
    if rec is None:
      continue
    got = rec["rougeL"]
    rows.append(
      {
        "T": T,
        "probes": len(rec["prompt_tokens"]),
        "accepted": rec["accepted_detection_trials"],
        "rougeL": {
          f"{a} k={k}": got[f"{a}@{k}"] for a, k in conds if f"{a}@{k}" in got
        },
      }
    )
  return {"conditions": [f"{a} k={k}" for a, k in conds], "rows": rows}


# (a, b) of every paired difference a - b
_PAIRS = (
  ("baseline", "locos"),
  ("contrastive", "locos"),
  ("contrastive", "random"),
)
_PAIRS += (("baseline", "random"),)


def paired_needle(res, keep, ks, num_resamples, seed):
  """Paired 95 % bootstrap intervals over the ablated probes ``keep``
  (`core.paired_bootstrap`) of baseline / contrastive minus LOCOS / random
  ROUGE-L per k of ``ks``; a pair is None when one of its cells is missing or
  fewer than 2 probes were ablated."""
  base = np.asarray(res["baseline@0"]["rougeL"], float)[np.asarray(keep, int)]
  out = {}
  for k in ks:
    arm = {"baseline": base}
    for d in ("locos", "contrastive", "random"):
      got = res.get(f"{d}@{k}")
      arm[d] = None if got is None else np.asarray(got["rougeL"], float)
    rec = {}
    for a, b in _PAIRS:
      rec[f"{a}_minus_{b}"] = None
      if arm[a] is not None and arm[b] is not None and len(keep) >= 2:
        bi = core.paired_bootstrap(
          arm[a], arm[b], n_resamples=num_resamples, seed=seed
        )
        rec[f"{a}_minus_{b}"] = dict(
          mean=bi.estimate, lo=bi.lo, hi=bi.hi, halfwidth=bi.half_width, n=bi.n
        )
    out[f"k={k}"] = rec
  return out


def run_needle(c, run_config, workdir) -> dict:
  """LOCOS on long-context needle probes (`locos.make_needle_probes`), per
  context length, on the view ``c`` of ``run_config``: detection over one entity
  half, ROUGE-L unablated and with each detector's top-k heads mean-query
  ablated over the other; writes results.json (judged only with claims)."""
  t0 = time.time()
  model = real.load_or_skip(c, run_config, workdir, c.tracks[0], "needle")
  if isinstance(model, dict):
    return model
  cfg, params, tok, label = model
  store = core.CellStore(f"{workdir}/cells")
  metrics = {}
  for T in c.needle.context_tokens:
    metrics[f"needle/T={T}"] = _length(c, params, cfg, tok, store, T)
    logging.info("needle T=%d: %s", T, metrics[f"needle/T={T}"]["rougeL"])
  core.write_results(
    workdir,
    metrics=metrics,
    config=run_config,  # its `report` (configs/needle.py) declares the table
    notes=(
      "Long-context needle probes built offline (pydoc_data haystack); "
      f"{label}."
    ),
    wall_time_s=time.time() - t0,
    issue_verdicts=run_config.get("issue_verdicts", True)
    and bool(run_config.get("claims")),
  )
  return metrics
