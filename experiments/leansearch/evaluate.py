"""Evaluation and claim code of the LeanSearch experiment.

``single_search``, ``premise_baselines`` and ``reasoning_runs`` measure the
systems of one split on its test queries; the rest pools the per-query values
over splits into the summary and the numbers the claims in
``configs/default.py`` are judged on.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

import jaxpapers.leansearch as L
from experiments.leansearch.input_pipeline import VARIANTS

PREMISE_SYSTEMS = (
  "random",
  "frequency",
  "bm25_statements",
  "dense",
  "standard",
  "reasoning_first_round",
  "reasoning_dense",
  "reasoning",
)
SINGLE_SYSTEMS = ("bm25", "dense", "standard")
# Reasoning mode's claim is judged against the strongest of every other stage of
# the pipeline and every ablation (hierarchical text unless named _flat): the
# baselines, the dense first stage alone, standard mode (dense + rerank), the
# flat-text variants, reasoning mode over the dense stage without the reranker,
# and reasoning mode stopped after its first round.
COMPARED = (
  "random",
  "frequency",
  "bm25_statements",
  "dense",
  "standard",
  "dense_flat",
  "standard_flat",
  "reasoning_first_round",
  "reasoning_dense",
)


def _ci(x) -> float:
  x = np.asarray(x, np.float64)
  return (
    float(1.96 * x.std(ddof=1) / math.sqrt(len(x)))
    if len(x) > 1
    else float("nan")
  )


def premise_metrics(ids: np.ndarray, p: dict, k: int) -> dict:
  """recall_group@k and Covered@k per query of the rankings ``ids`` [Q, >= k] of
  the premise queries ``p`` (their packed groups ``alias`` / ``mask``)."""
  ids, alias, mask = np.asarray(ids, np.int32), p["alias"], p["mask"]
  rec = np.asarray(L.premise_group_recall(ids, alias, mask, k), np.float64)
  cov = np.asarray(
    L.covered_at_k(ids, alias, mask, np.zeros_like(mask), k), np.float64
  )
  return {"recall": rec.tolist(), "covered": cov.tolist()}


def retrievers(embed, docs: list[str], k: int):
  """``(bm25, dense, standard)`` over ``docs``: BM25, the dense encoder
  ``embed`` alone and standard mode (dense top-M reranked by BM25)."""
  bm = L.BM25Index(docs)
  std = L.TwoStageRetriever(
    embed_fn=embed,
    doc_emb=embed(docs),
    doc_text=docs,
    k=k,
    rerank_fn=L.bm25_reranker(bm),
  )
  return bm, dataclasses.replace(std, rerank_fn=None), std


def single_search(
  embed, docs: list[str], queries: list[str], target: np.ndarray, k: int
) -> dict:
  """Single-query search over the own-doc-withheld corpus ``docs`` [N] by
  :func:`retrievers`.

  Returns:
    ``{system: {"ndcg", "recall": [Q] floats}}`` at ``k`` for the targets
    ``target`` int [Q].
  """
  bm, dense, std = retrievers(embed, docs, k)
  ranked = {
    "bm25": bm.search(queries, k)[0],
    "dense": dense.search(queries)[0],
    "standard": std.search(queries)[0],
  }
  metrics = {"ndcg": L.ndcg_single, "recall": L.recall_single}
  out = {}
  for sys_, ids in ranked.items():
    pos = L.target_positions(np.asarray(ids, np.int32), target)
    out[sys_] = {
      m: np.asarray(f(pos, k), np.float64).tolist() for m, f in metrics.items()
    }
  return out


def premise_baselines(
  decls, p_train, p: dict, rng: np.random.Generator, k: int
) -> dict:
  """The premise metrics of :func:`jaxpapers.leansearch.baseline_rankings` on
  the test queries ``p`` (``queries`` [Q] texts, ``valid`` bool [Q, N],
  ``alias`` / ``mask``: packed groups)."""
  ids = L.baseline_rankings(
    [d.statement for d in decls], p_train, p["queries"], p["valid"], rng, k
  )
  return {b: premise_metrics(r, p, k) for b, r in ids.items()}


def reasoning_runs(cfg, decls, substrate, p: dict) -> tuple[list, dict]:
  """Reasoning mode's iterative loop
  (:func:`jaxpapers.leansearch.proxy_reasoning`) over the first-stage retriever
  ``substrate`` on every test premise query of ``p``.

  Returns:
    ``(per_round, stats)``: the premise metrics after each of its
    ``big_loop + 1`` rounds, and the mean recall per round (``rounds``) and
    rounds used (``rounds_used``).
  """
  k, names = cfg.k, "k big_loop search_top_k output_top_k prf keep_top".split()
  loop = L.proxy_reasoning(
    decls, substrate.search, **{n: cfg[n] for n in names}
  )
  traces = [
    loop.run(text, valid=v)
    for text, v in zip(p["queries"], p["valid"], strict=True)
  ]
  per_round = [
    premise_metrics(np.stack([t.round_ids[rnd][:k] for t in traces]), p, k)
    for rnd in range(cfg.big_loop + 1)
  ]
  stats = {
    "rounds": [float(np.mean(m["recall"])) for m in per_round],
    "rounds_used": float(np.mean([t.rounds for t in traces])),
  }
  return per_round, stats


def _mean_std(vals):
  """Mean and std over splits (axis 0) of per-split values (numbers or per-round
  lists)."""
  a = np.asarray(vals, np.float64)
  return {"mean": a.mean(0).tolist(), "std": a.std(0).tolist()}


def summarize(cells: list[dict]) -> dict:
  """Per-system means over splits (mean of per-split query means) and pooled
  CIs."""
  out = {"single": {}, "premise": {}}
  for variant in VARIANTS:
    for sys_ in SINGLE_SYSTEMS:
      for m in ("ndcg", "recall"):
        out["single"][f"{sys_}/{variant}/{m}"] = _mean_std(
          [np.mean(c[variant]["single"][sys_][m]) for c in cells]
        )
  for sys_ in (*PREMISE_SYSTEMS, "dense_flat", "standard_flat"):
    variant, name = _variant(sys_)
    for m in ("recall", "covered"):
      out["premise"][f"{sys_}/{m}"] = _mean_std(
        [np.mean(c[variant]["premise"][name][m]) for c in cells]
      )
  for name in ("reasoning", "reasoning_dense"):
    out[f"{name}_rounds"] = _mean_std(
      [c["hier"][f"{name}_rounds"] for c in cells]
    )
    out[f"{name}_rounds_used"] = float(
      np.mean([c["hier"][f"{name}_rounds_used"] for c in cells])
    )
  return out


def _variant(system: str) -> tuple[str, str]:
  """``(variant, stage)`` of a premise system: ``dense_flat`` -> ``("flat", "dense")``."""
  return (
    ("flat", system.removesuffix("_flat"))
    if system.endswith("_flat")
    else ("hier", system)
  )


def premise_recall(cells: list[dict], system: str) -> np.ndarray:
  """Per-theorem recall_group@10 of a premise system over all splits, in split
  order.

  ``system`` is a name of :data:`PREMISE_SYSTEMS` (hierarchical text) or
  ``dense_flat`` / ``standard_flat`` (the same stage over the flat text).
  """
  variant, name = _variant(system)
  return np.concatenate(
    [
      np.asarray(c[variant]["premise"][name]["recall"], np.float64)
      for c in cells
    ]
  )


def per_query_values(cell: dict) -> dict:
  """The per-query values of one split that the claims are computed from (kept
  in results)."""
  return {
    v: {
      "single": {
        s: {"ndcg": cell[v]["single"][s]["ndcg"]} for s in SINGLE_SYSTEMS
      },
      "premise": {
        s: {"recall": r["recall"]} for s, r in cell[v]["premise"].items()
      },
    }
    for v in VARIANTS
  }


def report_view(record: dict) -> dict:
  """The summary of a results record as ``configs/default.py``'s report reads
  it.

  Returns:
    ``single``: ``{system: {"<metric>_<variant>": {mean, std}}}``; ``premise``:
    ``{system: {"recall", "covered": {mean, std}}}``; ``rounds``:
    ``[1, ..., big_loop + 1]``.
  """
  s, out = record["metrics"]["summary"], {"single": {}, "premise": {}}
  for key, v in s["single"].items():
    system, variant, metric = key.split("/")
    out["single"].setdefault(system, {})[f"{metric}_{variant}"] = v
  for key, v in s["premise"].items():
    system, metric = key.split("/")
    out["premise"].setdefault(system, {})[metric] = v
  out["rounds"] = list(range(1, len(s["reasoning_rounds"]["mean"]) + 1))
  return out


def rejudge_metrics(metrics: dict, config: dict) -> dict:
  """The derived block recomputed from the per-query values stored in the
  results."""
  del config
  return derived_metrics(metrics["per_query"])


def derived_metrics(cells: list[dict]) -> dict:
  """The values the claims are judged on (paired per-query differences pooled
  over splits).

  ``hier_gain_ndcg10``: nDCG@10 of standard mode with hierarchical minus flat
  informal text (``hier_gain_ndcg10_<stage>`` the same for BM25 and the dense
  stage, for display); ``reasoning_gain_recall10``: recall_group@10 of reasoning
  mode minus the strongest (by its pooled mean) of every other stage and
  ablation in :data:`COMPARED`, ``best_baseline`` its name,
  ``reasoning_minus_<system>`` the paired difference against each of them.
  ``*_ci``: 95% normal CI half-widths of those paired differences over all test
  queries of all splits.
  """

  def hier_minus_flat(c, s):  # per query: hierarchical minus flat informal text
    return np.subtract(
      c["hier"]["single"][s]["ndcg"], c["flat"]["single"][s]["ndcg"]
    )

  gain = {
    s: np.concatenate([hier_minus_flat(c, s) for c in cells])
    for s in SINGLE_SYSTEMS
  }
  d_h = gain["standard"]
  out = {"hier_gain_ndcg10": float(d_h.mean()), "hier_gain_ndcg10_ci": _ci(d_h)}
  out.update(
    {f"hier_gain_ndcg10_{s}": float(gain[s].mean()) for s in ("bm25", "dense")}
  )
  method = premise_recall(cells, "reasoning")
  recall = {b: premise_recall(cells, b) for b in COMPARED}
  means = {b: float(r.mean()) for b, r in recall.items()}
  best = max(COMPARED, key=lambda b: means[b])
  d_r = method - recall[best]
  out.update(
    {
      "reasoning_gain_recall10": float(d_r.mean()),
      "reasoning_gain_recall10_ci": _ci(d_r),
      "best_baseline": best,
      "best_baseline_recall10": means[best],
      "reasoning_recall10": float(method.mean()),
      "n_single_queries": int(d_h.size),
      "n_premise_queries": int(d_r.size),
    }
  )
  for b in COMPARED:
    out[f"reasoning_minus_{b}"] = float((method - recall[b]).mean())
  return out
