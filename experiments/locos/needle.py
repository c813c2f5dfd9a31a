"""LOCOS on long-context needle probes (configs/needle.py): detection and ablation per length."""

from __future__ import annotations

import logging
import time

import jax.numpy as jnp
import numpy as np

from jaxpapers import core, lm, locos


def _detection(params, cfg, tok, n, probes, pad):
  """The detection cell's value: every detector's [L, H] scores and the accepted trials."""
  sc, per = locos.detect_heads(
    params, cfg, probes, tok, max_steps=n.max_steps, stop_ids=tok.stop_ids(),
    batch_size=n.batch_size, pad_to=pad,
  )  # fmt: skip
  return {
    "scores": {d: v.tolist() for d, v in sc.items()},
    "accepted": [bool(p.accepted) for p in per],
    "generations": [p.generation for p in per],
  }


def _length(c, params, cfg, tok, store, T):
  """``(record, table row)`` of context length ``T`` (its cells under `needle/T=<T>/`)."""
  n = c.needle
  (det_names, det_lands), (ev_names, ev_lands) = locos.split_entities(c.seed)
  kw = dict(tokenizer=tok, context_tokens=int(T), depths=tuple(n.depths))
  rng = np.random.default_rng
  det = locos.make_needle_probes(
    rng([c.seed, T, 1]), num=n.num_detect, names=det_names, landmarks=det_lands, **kw
  )
  ev = locos.make_needle_probes(
    rng([c.seed, T, 2]), num=n.num_eval, names=ev_names, landmarks=ev_lands, **kw
  )
  gen = dict(max_new_tokens=n.max_steps, stop_ids=tok.stop_ids(), batch_size=n.batch_size)
  pad = lm.bucket_length(max(len(p.prompt_ids) for p in det + ev))
  t1 = time.time()
  found = store.get_or_compute(
    f"needle/T={T}/detection", lambda _: _detection(params, cfg, tok, n, det, pad)
  )
  scores = {d: np.asarray(v) for d, v in found["scores"].items()}
  detect_s = time.time() - t1
  mean_q = lm.mean_queries(params, [p.prompt_ids for p in ev], config=cfg, batch_size=n.batch_size)
  conds = [("baseline", 0)] + [(d, k) for d in n.detectors for k in n.ks]
  res = {}
  for name, k in conds:
    mask = np.zeros((cfg.n_layers, cfg.n_heads), bool)
    if k:
      mask = locos.top_heads(scores[name], k)

    def run(_, mask=mask):
      abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean_q, mode="mean_q")
      texts = locos.generate_texts(params, cfg, ev, tok, ablation=abl, pad_to=pad, **gen)
      return {"texts": texts, "rougeL": [locos.rouge_l(p.answer, t) for p, t in zip(ev, texts)]}

    res[f"{name}@{k}"] = store.get_or_compute(f"needle/T={T}/{name}/k={k}", run)
  record = {
    "prompt_tokens": [len(p.prompt_ids) for p in ev],
    "padded_to": pad,
    "accepted_detection_trials": f"{sum(found['accepted'])}/{len(det)}",
    "detection_generations": found["generations"],
    "top_heads": {d: locos.rank_heads(scores[d])[:5] for d in scores},
    "rougeL": {key: float(np.mean(v["rougeL"])) for key, v in res.items()},
    "eval_generations": res["baseline@0"]["texts"],
    "answers": [p.answer for p in ev],
    "detect_s": detect_s,
    "time_s": time.time() - t1,
  }
  row = [T, len(ev), f"{sum(found['accepted'])}/{len(det)}"]
  row += [f"{np.mean(res[f'{a}@{k}']['rougeL']):.2f}" for a, k in conds]
  return record, row


def run_needle(c, workdir) -> dict:
  """LOCOS on long-context needle probes (`locos.make_needle_probes`), per context length.

  For each length in `c.needle.context_tokens`: detection probes over one entity half and
  evaluation probes over the other (`split_entities`), every detector scored by
  `detect_heads`, then ROUGE-L of the evaluation generations unablated and with the top-k
  heads of each of `c.needle.detectors` mean-query ablated (means from the evaluation
  prompts, as in the default run). Prompts are padded to `lm.bucket_length(T)`; prefill uses
  the blockwise attention (`attention='auto'`). Writes results.json; no claims are judged.
  """
  n = c.needle
  t0 = time.time()
  try:
    cfg, params, tok = lm.load_smollm2()
  except lm.ModelNotAvailable as e:
    metrics = {"needle/skipped": str(e)}
    core.write_results(workdir, metrics=metrics, config=c, notes=str(e), issue_verdicts=False)
    return metrics
  store = core.CellStore(f"{workdir}/cells")
  metrics, rows = {}, []
  for T in n.context_tokens:
    metrics[f"needle/T={T}"], row = _length(c, params, cfg, tok, store, T)
    rows.append(row)
    logging.info("needle T=%d: %s", T, metrics[f"needle/T={T}"]["rougeL"])
  conds = [("baseline", 0)] + [(d, k) for d in n.detectors for k in n.ks]
  table = core.markdown_table(
    ["context", "eval probes", "accepted detection"] + [f"{a} k={k}" for a, k in conds], rows
  )
  core.write_results(
    workdir,
    metrics=metrics,
    config=c,
    table_markdown=table,
    notes="Long-context needle probes built offline (pydoc_data haystack); SmolLM2 Q4_1.",
    wall_time_s=time.time() - t0,
    issue_verdicts=False,
  )
  return metrics
