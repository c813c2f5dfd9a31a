"""Ablation cells of the real-model tracks: batched generation, deadlines.

Every condition (`locos.ablation_conditions`: a detector's top-k heads, random heads, none)
over a probe list is one cell of a ``core.CellStore`` (``<tag>/<name>/k=<k>``: the
generations), so a run resumes cell by cell.
"""

from __future__ import annotations

import logging
import time

import jax.numpy as jnp
import numpy as np

from jaxpapers import lm, locos


def detection(params, cfg, tok, probes, **kw):
  """A detection cell: every detector's [L, H] scores (`locos.detect_heads` with ``kw``),
  which trials were accepted and their generations."""
  scores, per = locos.detect_heads(params, cfg, probes, tok, **kw)
  return {
    "scores": {d: v.tolist() for d, v in scores.items()},
    "accepted": [bool(p.accepted) for p in per],
    "generations": [p.generation for p in per],
  }


def texts(params, cfg, tok, probes, mask, mean_q, gen):
  """Generations of ``probes`` with the heads ``mask`` ([L, H], or [N, L, H]: one set per
  probe) mean-query ablated; unablated = an all-False mask (the same compiled program)."""
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean_q, mode="mean_q")
  kw = {k: v for k, v in gen.items() if k != "seed_block"}
  return locos.generate_texts(params, cfg, probes, tok, ablation=abl, **kw)


def seed_blocks(probes, gen, num_seeds):
  """Random-head seed of every probe (`locos.seed_blocks`; blocks of `gen['seed_block']`)."""
  block = gen.get("seed_block", gen["batch_size"])
  return locos.seed_blocks([len(p.prompt_ids) for p in probes], gen["pad_to"], block, num_seeds)


def run_conditions(
  params,
  cfg,
  tok,
  probes,
  conds,
  mean_q,
  gen,
  store,
  tag,
  only=None,
  deadline=None,
  exempt_baseline=True,
  group_rows=None,
):
  """Generations per probe for every condition, one resumable cell each (ROUGE-L: `_scores`).

  Random masks cycle over blocks of probes (`seed_blocks`). ``only`` restricts the ablations
  (not the baseline) to those probe indices; the others get NaN. Pending cells are generated
  together, up to ``group_rows`` rows per group (None: one cell per group), with per-row masks.
  Past ``deadline`` a group not yet started is skipped (NaN scores, listed in
  ``res['skipped']``; the baseline runs anyway when ``exempt_baseline``): conditions run in the
  order given.
  """
  n_seeds = max(len(m) for _, _, m in conds)
  plan = _plan(probes, conds, gen, tag, only, n_seeds)
  pending = [p for p in plan if p[2] not in store and p[3].size]
  skipped = set()
  for group in _groups(pending, group_rows):
    late = deadline is not None and time.time() > deadline
    if late and not (exempt_baseline and all(p[0] == "baseline" for p in group)):
      skipped.update(p[2] for p in group if not (exempt_baseline and p[0] == "baseline"))
      group = [p for p in group if exempt_baseline and p[0] == "baseline"]
      if not group:
        continue
    _generate(params, cfg, tok, probes, group, mean_q, gen, store)
  return _scores(probes, plan, skipped, store)


def _plan(probes, conds, gen, tag, only, n_seeds):
  """(name, k, cell, probe indices, seed of each, per-row [n, L, H] masks) of every condition."""
  plan = []
  for name, k, masks in conds:
    sub = np.arange(len(probes)) if only is None or name == "baseline" else np.asarray(only)
    seed_of = seed_blocks([probes[i] for i in sub], gen, n_seeds)
    rows = np.stack([masks[s % len(masks)] for s in seed_of]) if sub.size else None
    plan.append((name, k, f"{tag}/{name}/k={k}", sub, seed_of, rows))
  return plan


def _groups(pending, group_rows):
  """The pending cells in groups of up to `group_rows` rows to generate (None: one cell each)."""
  groups, n_cur = [], 0
  for p in pending:
    n = p[3].size
    if not groups or not group_rows or n_cur + n > group_rows:
      groups.append([])
      n_cur = 0
    groups[-1].append(p)
    n_cur += n
  return groups


def _generate(params, cfg, tok, probes, group, mean_q, gen, store):
  """Generates the rows of a group's cells in one batched pass and stores each cell."""
  t0 = time.time()
  rows = [probes[i] for p in group for i in p[3]]
  out = texts(params, cfg, tok, rows, np.concatenate([p[5] for p in group]), mean_q, gen)
  for p, end in zip(group, np.cumsum([p[3].size for p in group])):
    store.put(p[2], out[end - p[3].size : end])
  names = ", ".join(p[2] for p in group)
  logging.info("%d cells (%d rows) in %.1fs: %s", len(group), len(rows), time.time() - t0, names)


def _scores(probes, plan, skipped, store):
  """res[(name, k)]: ROUGE-L per probe (NaN where not run), res[(name, k, 'texts')], the
  random seeds used, and res['skipped']: the cells skipped for time."""
  res = {"skipped": []}
  for name, k, cell, sub, seed_of, _ in plan:
    if cell in skipped:
      res[(name, k)] = np.full(len(probes), np.nan)
      res[(name, k, "texts")] = [""] * len(probes)
      res["skipped"].append(cell)
      logging.info("%s skipped (time budget)", cell)
      continue
    texts = store[cell] if sub.size else []
    scores = np.full(len(probes), np.nan)
    scores[sub] = [locos.rouge_l(probes[i].answer, t) for i, t in zip(sub, texts)]
    full = [""] * len(probes)
    for i, t in zip(sub, texts):
      full[i] = t
    res[(name, k)] = scores
    res[(name, k, "texts")] = full
    if name == "random":
      res[("random", k, "seeds")] = int(len(set(seed_of.tolist()))) if sub.size else 0
    logging.info("%s ROUGE-L %.3f (%d probes)", cell, np.nanmean(scores), sub.size)
  return res


def stem_tag(num_eval, ablation_num_eval=0):
  """Cell-name prefix of the filtered protocol's ablation cells (the baseline's: no `first=`)."""
  return f"stem/n={num_eval}" + (f"/first={ablation_num_eval}" if ablation_num_eval else "")
