"""Single-query search and global premise retrieval on the Coq standard library.

``train_and_evaluate(config, workdir)`` loads a formal corpus (the Coq standard
library from Debian's ``libcoq-stdlib``, downloaded once into ``cache_dir``; or
the three fixture files of the smoke setting), splits its files 80/10/10 with
``splits`` different seeds, trains a hashed-feature dual encoder on the training
files, and measures on the test files:

1. single-query search (query = a declaration's doc comment with its name
   removed; target = that declaration; its own doc comment is withheld from the
   corpus text): nDCG@10 and Recall@10 with hierarchical vs flat informal text,
   for BM25, the dense encoder and standard mode (dense top-M, reranked);
2. global premise retrieval (query = a theorem's statement and doc comment;
   targets = the premise groups its proof uses): recall_group@10 and Covered@10
   for a random ranking, the "most-used premises" frequency prior, BM25 over
   statements, the dense encoder, standard mode, and reasoning mode after each
   of its rounds.

Every (split, variant) result is a cell of ``core.CellStore`` (resumable). The
claims in ``configs/default.py`` are judged on ``derived`` by
``core.write_results``.
"""

from __future__ import annotations

import pathlib
import time

import jax
import ml_collections
import numpy as np

import jaxpapers.leansearch as L
from experiments.leansearch import evaluate as E
from experiments.leansearch.configs import default as default_config
from experiments.leansearch.input_pipeline import (
  VARIANTS,
  informal_texts,
  load_corpus,
  split_queries,
)
from jaxpapers import core

# The re-judging hook of experiments.reproduce: the derived block from stored
# per-query values.
rejudge_metrics = E.rejudge_metrics


def _train_encoder(
  cfg: ml_collections.ConfigDict,
  decls,
  q: dict,
  texts: dict,
  split: int,
  variant: str,
):
  """The dual encoder of one split and informal variant, trained on doc ->
  declaration pairs and theorem -> one alias of each premise group.

  Returns:
    ``(embed, stats)``: the embedder ``texts -> [n, dim]`` and the run's
    training pairs and first / last losses (means over 20 steps).
  """
  t_single, t_prem = texts["single"][variant], texts["premise"][variant]
  p_train = q["p_train"]
  qa = [L.doc_query(decls[i]) for i in q["single_train"]] + [
    L.premise_query_text(decls, pq) for pq in p_train for _ in pq.groups
  ]
  da = [t_single[i] for i in q["single_train"]] + [
    t_prem[g[0]] for pq in p_train for g in pq.groups
  ]
  hash_kw = dict(n_buckets=cfg.n_buckets, length=cfg.feat_len)
  key = jax.random.fold_in(
    jax.random.key(cfg.seed), 100 * split + VARIANTS.index(variant)
  )
  fit_kw = {n: cfg[n] for n in "steps lr tau n_buckets dim hidden".split()}
  model, losses = L.train_dual_encoder(
    key,
    L.hash_features(qa, **hash_kw),
    L.hash_features(da, **hash_kw),
    batch=min(cfg.batch, len(qa)),
    **fit_kw,
  )
  stats = {"train_pairs": len(qa), "loss_first": float(losses[:20].mean())}
  stats["loss_last"] = float(losses[-20:].mean())
  return L.dual_encoder_embedder(model, length=cfg.feat_len), stats


def _premise_search(
  cfg: ml_collections.ConfigDict, decls, q: dict, p: dict, embed, variant: str
):
  """Global premise retrieval of one variant: dense and standard mode; for the
  hierarchical text also the baselines that read no informal text (once per
  split) and reasoning mode over standard mode (the paper's pipeline) and, as an
  ablation, over the dense stage alone."""
  k = cfg.k
  _, dense_p, std_p = E.retrievers(embed, p["texts"][variant], k)
  prem = {
    s: E.premise_metrics(r.search(p["queries"], valid=p["valid"])[0], p, k)
    for s, r in (("standard", std_p), ("dense", dense_p))
  }
  res = {"premise": prem}
  if variant != "hier":
    return res
  prem.update(E.premise_baselines(decls, q["p_train"], p, q["rng"], k))
  for name, substrate in (("reasoning", std_p), ("reasoning_dense", dense_p)):
    per_round, stats = E.reasoning_runs(cfg, decls, substrate, p)
    prem[name] = per_round[-1]
    res[f"{name}_rounds"] = stats["rounds"]
    res[f"{name}_rounds_used"] = stats["rounds_used"]
    # the loop stopped after its first round: an ablation
    if name == "reasoning":
      prem["reasoning_first_round"] = per_round[0]
  return res


def _run_split(
  cfg: ml_collections.ConfigDict, decls, split: int, texts: dict
) -> dict:
  """Trains one encoder per informal variant and evaluates every system on one
  split."""
  t0 = time.time()
  q = split_queries(cfg, decls, split)
  p_test = q["p_test"]
  p = {
    "queries": [L.premise_query_text(decls, pq) for pq in p_test],
    "valid": L.available_mask(decls, [pq.decl for pq in p_test]),
    "texts": texts["premise"],
  }
  p["alias"], p["mask"] = L.pack_premise_groups(p_test)
  s_queries = [L.doc_query(decls[i]) for i in q["single_test"]]
  s_target = np.asarray(q["single_test"], np.int32)
  out = {"n_single": len(q["single_test"]), "n_premise": len(p_test)}
  for variant in VARIANTS:
    embed, res = _train_encoder(cfg, decls, q, texts, split, variant)
    t_single = texts["single"][variant]
    res["single"] = E.single_search(embed, t_single, s_queries, s_target, cfg.k)
    res.update(_premise_search(cfg, decls, q, p, embed, variant))
    out[variant] = res
  out["wall_s"] = time.time() - t0
  return out


def train_and_evaluate(cfg: ml_collections.ConfigDict, workdir) -> dict:
  """Runs every split (resumable cells), writes results.json, table.md and
  plots."""
  run_config, cfg = cfg, core.config_view(cfg, default_config.get_config())
  core.validate_choice(
    cfg.corpus, name="corpus", allowed=("coq_stdlib", "fixture")
  )
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  t0 = time.time()
  decls, source = load_corpus(cfg)
  texts = informal_texts(cfg, decls)
  grid = {f"split{i}": (cfg, decls, i, texts) for i in range(cfg.splits)}
  cells = core.fill_cells(
    core.CellStore(workdir / "cells"), grid, _run_split, desc=("splits")
  )
  summary = E.summarize(cells)
  per_query = [E.per_query_values(c) for c in cells]
  derived = E.derived_metrics(per_query)
  metrics = {
    "corpus": {
      "source": source,
      "declarations": len(decls),
      "files": len({d.file for d in decls}),
    },
    "summary": summary,
    "derived": derived,
    "per_query": per_query,
    "per_split": [
      {
        **{k: c[k] for k in ("n_single", "n_premise", "wall_s")},
        **{
          v: {k: c[v][k] for k in ("loss_first", "loss_last", "train_pairs")}
          for v in VARIANTS
        },
      }
      for c in cells
    ],
  }
  core.write_results(
    workdir,
    metrics=metrics,
    # the ConfigDict: its claims and issue_verdicts decide the verdicts
    config=run_config,
    wall_time_s=time.time() - t0,
    table_file="table.md",
    notes=(
      f"Corpus: {source}, {len(decls)} declarations (the offline stand-in for "
      "Mathlib). Informal text is a deterministic proxy (doc comments + "
      "dependency heads), the encoder a hashed n-gram dual encoder trained "
      "here, the reranker BM25 over the candidates, "
      "and the reasoning planner/filter/judge deterministic proxies: "
      "no LLM is involved."
    ),
  )
  return metrics
