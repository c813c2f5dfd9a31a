"""Ablation grids over real probes as resumable cells: one stored generation
list per condition.

Every condition of :func:`ablation_conditions` (none, a detector's top-k heads,
random heads) over a probe list is one cell of a store (``<tag>/<name>/k=<k>``:
the generations), so a long run resumes cell by cell; pending cells are
generated together, one mask per row.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers import lm
from jaxpapers.locos._ablation import generate_texts, seed_blocks
from jaxpapers.locos._scores import rouge_l


def ablated_texts(
  params: Any,
  config: lm.LMConfig,
  probes: Sequence[Any],
  tokenizer: Any,
  mask: ArrayLike,
  mean: ArrayLike,
  **gen: Any,
) -> list[str]:
  """Generations of ``probes`` with the heads of ``mask`` mean-query ablated.

  The unablated model is an all-False mask (the same compiled program as any
  ablation).

  Args:
    params: decoder parameters (``jaxpapers.lm``).
    config: its ``lm.LMConfig``.
    probes: objects with ``prompt_ids`` (``Trial``, probes of ``make_probes``).
    tokenizer: a tokenizer with ``decode``.
    mask: bool [L, H] (one head set for every probe) or [N, L, H] (one per
      probe).
    mean: float [L, H, D] mean queries (``lm.mean_queries``) that replace the
      ablated heads'.
    **gen: ``generate_texts`` settings (``max_new_tokens``, ``stop_ids``,
      ``batch_size``, ``pad_to``); a ``seed_block`` entry (read by
      :func:`ablation_cells`) is ignored.

  Returns:
    one generated string per probe, in order.

  Raises:
    ValueError: a mask that is not [L, H] or [N, L, H], or bad generation
      settings (from ``generate_texts``).
  """
  shape, (L, H), n = (
    np.shape(mask),
    (config.n_layers, config.n_heads),
    len(probes),
  )
  if shape not in ((L, H), (n, L, H)):
    raise ValueError(
      f"mask must be bool [L, H] = [{L}, {H}] or [N, L, H] = [{n}, {L}, {H}], "
      f"got {shape}"
    )
  abl = lm.HeadAblation(
    mask=jnp.asarray(mask), mean=jnp.asarray(mean), mode=("mean_q")
  )
  kw = {k: v for k, v in gen.items() if k != "seed_block"}
  return generate_texts(params, config, probes, tokenizer, ablation=abl, **kw)


def ablation_cells(
  params: Any,
  config: lm.LMConfig,
  probes: Sequence[Any],
  tokenizer: Any,
  conditions: Sequence[tuple[str, int, Sequence[np.ndarray]]],
  mean: ArrayLike,
  store: Any,
  tag: str,
  gen: Mapping[str, Any],
  *,
  only: ArrayLike | None = None,
  deadline: float | None = None,
  exempt_baseline: bool = True,
  group_rows: int | None = None,
) -> dict[Any, Any]:
  """ROUGE-L per probe of every condition, each condition one resumable cell of
  ``store``.

  Random head sets cycle over blocks of ``gen['seed_block']`` probes (default
  ``gen['batch_size']``; ``seed_blocks``). ``only`` restricts the ablations (not
  the baseline) to those probe indices; the others get NaN. Pending cells are
  generated together, up to ``group_rows`` rows per group (None: one cell per
  group), with one mask per row. Past ``deadline`` (``time.time()`` seconds) a
  group not yet started is skipped (NaN scores, listed in ``res['skipped']``;
  the baseline runs anyway when ``exempt_baseline``): conditions run in the
  order given.

  Args:
    params: decoder parameters.
    config: its ``lm.LMConfig``.
    probes: probes with ``prompt_ids`` and ``answer``.
    tokenizer: the model's tokenizer.
    conditions: ``[(name, k, masks)]`` of ``ablation_conditions`` (masks: bool
      [L, H] each).
    mean: float [L, H, D] mean queries.
    store: a ``jaxpapers.core.CellStore`` (``in``, ``[cell]``, ``put``).
    tag: the cell-name prefix; cells are ``<tag>/<name>/k=<k>``.
    gen: :func:`ablated_texts` settings; ``pad_to`` (the length buckets) is
      required.
    only: probe indices the ablations run on (None: every probe).
    deadline: wall-clock time after which pending groups are skipped (None:
      never).
    exempt_baseline: whether the baseline runs past the deadline.
    group_rows: rows per generation group (None: one cell per group).

  Returns:
    ``res[(name, k)]``: float [N] ROUGE-L per probe (NaN where not run);
    ``res[(name, k, 'texts')]``: the N generations ('' where not run);
    ``res[('random', k, 'seeds')]``: how many random seeds the probes used; and
    ``res['skipped']``: the cells skipped for time.

  Raises:
    ValueError: no conditions, or a condition without head sets.
  """
  if not conditions or any(len(c) != 3 or not len(c[2]) for c in conditions):
    raise ValueError(
      "conditions must be a non-empty list of (name, k, [mask, ...]) triples"
    )
  n_seeds = max(len(m) for _, _, m in conditions)
  plan = _plan(probes, conditions, gen, tag, only, n_seeds)
  pending = [p for p in plan if p[2] not in store and p[3].size]
  skipped = set()
  for group in _groups(pending, group_rows):
    late = deadline is not None and time.time() > deadline
    if late and not (
      exempt_baseline and all(p[0] == "baseline" for p in group)
    ):
      skipped.update(
        p[2] for p in group if not (exempt_baseline and p[0] == "baseline")
      )
      group = [p for p in group if exempt_baseline and p[0] == "baseline"]
      if not group:
        continue
    _generate(params, config, tokenizer, probes, group, mean, gen, store)
  return _scores(probes, plan, skipped, store)


def _plan(probes, conds, gen, tag, only, n_seeds):
  """(name, k, cell, probe indices, seed of each, per-row [n, L, H] masks) of
  every condition."""
  plan = []
  block = gen.get("seed_block", gen["batch_size"])
  for name, k, masks in conds:
    sub = (
      np.arange(len(probes))
      if only is None or name == "baseline"
      else np.asarray(only)
    )
    lengths = [len(probes[i].prompt_ids) for i in sub]
    seed_of = seed_blocks(lengths, gen["pad_to"], block, n_seeds)
    rows = (
      np.stack([masks[s % len(masks)] for s in seed_of]) if sub.size else None
    )
    plan.append((name, k, f"{tag}/{name}/k={k}", sub, seed_of, rows))
  return plan


def _groups(pending, group_rows):
  """The pending cells in groups of up to `group_rows` rows to generate (None:
  one cell each)."""
  groups, n_cur = [], 0
  for p in pending:
    n = p[3].size
    if not groups or not group_rows or n_cur + n > group_rows:
      groups.append([])
      n_cur = 0
    groups[-1].append(p)
    n_cur += n
  return groups


def _generate(params, cfg, tok, probes, group, mean, gen, store):
  """Generates the rows of a group's cells in one batched pass and stores each
  cell."""
  t0 = time.time()
  rows = [probes[i] for p in group for i in p[3]]
  masks = np.concatenate([p[5] for p in group])
  out = ablated_texts(params, cfg, rows, tok, masks, mean, **gen)
  for p, end in zip(group, np.cumsum([p[3].size for p in group])):
    store.put(p[2], out[end - p[3].size : end])
  names = ", ".join(p[2] for p in group)
  logging.info(
    "%d cells (%d rows) in %.1fs: %s",
    len(group),
    len(rows),
    time.time() - t0,
    names,
  )


def _scores(probes, plan, skipped, store):
  """The result record of :func:`ablation_cells` from the stored cells."""
  res: dict[Any, Any] = {"skipped": []}
  for name, k, cell, sub, seed_of, _ in plan:
    if cell in skipped:
      res[(name, k)] = np.full(len(probes), np.nan)
      res[(name, k, "texts")] = [""] * len(probes)
      res["skipped"].append(cell)
      logging.info("%s skipped (time budget)", cell)
      continue
    texts = store[cell] if sub.size else []
    scores = np.full(len(probes), np.nan)
    scores[sub] = [rouge_l(probes[i].answer, t) for i, t in zip(sub, texts)]
    full = [""] * len(probes)
    for i, t in zip(sub, texts):
      full[i] = t
    res[(name, k)] = scores
    res[(name, k, "texts")] = full
    if name == "random":
      res[("random", k, "seeds")] = (
        int(len(set(seed_of.tolist()))) if sub.size else 0
      )
    logging.info(
      "%s ROUGE-L %.3f (%d probes)", cell, np.nanmean(scores), sub.size
    )
  return res
