"""Evaluation and claim code of the LAnR experiment.

`evaluate_seed` reads every stopping rule off one seed's online trace;
`reference_runs` runs the seed-independent references (frozen-state cosines,
BM25 pipelines, closed-book and gold-document reader); the rest turns
per-question outcomes into the aggregates and the values the claims in
``configs/default.py`` are judged on (paired bootstrap intervals over test
questions).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from experiments.lanr.input_pipeline import online_trace
from jaxpapers import core
from jaxpapers import lanr as L


def _auroc(score, label):
  return float(L.auroc(jnp.asarray(score, jnp.float32), jnp.asarray(label)))


def evaluate_seed(c, world, feats, p, eps):
  """Every stopping rule on one seed's online trace (per test question), and the
  heads' next-hop accuracy on the gold prefixes."""
  test_q = world["test_q"]
  heads = jax.tree.map(jnp.asarray, p["heads"])
  emb = L.doc_embedding(heads, jnp.asarray(feats["doc"]["h"]))
  score = lambda z: L.query_embedding(heads, z) @ emb.T
  tr = online_trace(
    world["store"], "test", len(test_q), score, c.t_max, final=True
  )
  gold = [q.gold for q in test_q]
  d_ids = tr["doc_ids"]
  z = jnp.asarray(tr["z"])
  p_stop = lambda labels, z: jax.nn.sigmoid(
    L.control_logits(p[f"ctl_{labels}"], z)
  )
  rules = {
    "fixed": np.full(len(test_q), c.t_max),
    **{
      f"{k}_control": np.asarray(L.stop_hops(p_stop(k, z), c.tau_stop))
      for k in CONTROLS
    },
    "flare_entropy": np.asarray(
      L.stop_hops(
        L.entropy_threshold_stop(jnp.asarray(tr["h_pred"]), eps["pred"]), 0.5
      )
    ),
    "one_call": np.ones(len(test_q), np.int64),
    "oracle_hops": np.asarray([q.hops for q in test_q]),
  }
  correct = np.asarray(tr["correct"])
  out = {
    name: L.stop_outcomes(n, d_ids, gold, correct, c.t_max)
    for name, n in rules.items()
  }
  out["closed_book_em"] = correct[:, 0].astype(float).tolist()
  out["next_hop"] = next_hop_accuracy(
    score, feats["test"]["z"], world["rows"]["test"]
  )
  out["next_hop_train"] = next_hop_accuracy(
    score, feats["train"]["z"], world["rows"]["train"]
  )
  suff = np.asarray([r["sufficient"] for r in world["rows"]["test"]])
  probs = {
    k: np.asarray(p_stop(k, jnp.asarray(feats["test"]["z"]))) for k in CONTROLS
  }
  out["control_auroc"] = {k: _auroc(pk, suff) for k, pk in probs.items()}
  out["stop_accuracy"] = {
    k: float(((pk > c.tau_stop) == suff).mean()) for k, pk in probs.items()
  }
  return out


def next_hop_accuracy(score_fn, z, rows) -> dict:
  """``L.next_hop_accuracy`` of ``score_fn(z)`` on the gold-prefix ``rows``."""
  fields = {
    k: np.asarray([r[k] for r in rows]) for k in ("in_context", "next_doc", "t")
  }
  return L.next_hop_accuracy(np.asarray(score_fn(jnp.asarray(z))), **fields)


_ms = functools.partial(core.seed_summary, values_key="per_seed")


METHODS = (
  "fixed",
  "entropy_control",
  "oracle_control",
  "flare_entropy",
  "one_call",
  "oracle_hops",
)
FROZEN = ("untrained_cosine", "whitened_cosine")
# the control heads, by the labels they were trained on
CONTROLS = ("entropy", "oracle")
ITERATIVE = ("bm25_iterative_with_question", "bm25_iterative_bridge")


def _entropy_auroc(h, sufficient) -> float:
  """AUROC of low entropy (-h) as a predictor of a sufficient context (the
  paper's signal)."""
  return _auroc(-np.asarray(h), sufficient)


def paired_ci(a, b, n_boot: int) -> dict:
  """Mean of ``a - b`` over items and its 95% paired-bootstrap interval
  (``core.stats``)."""
  r = core.paired_bootstrap(
    np.asarray(a, float), np.asarray(b, float), n_resamples=n_boot, seed=0
  )
  return {
    "mean": r.estimate,
    "lo": r.lo,
    "hi": r.hi,
    "ci": r.half_width,
    "n": r.n,
  }


def per_question(per_seed: list[dict], method: str, key: str) -> np.ndarray:
  """[Q] the per-question value of ``method``'s ``key``, averaged over seeds."""
  return np.mean(
    [np.asarray(r[method][key], np.float64) for r in per_seed], axis=0
  )


def aggregate_methods(per_seed: list[dict], hops) -> dict:
  """Per method, mean / std / 95% half-width over seeds of its per-question
  means.

  Args:
    per_seed: one ``{method: {"calls", "em", "recall": [Q]}}`` per seed.
    hops: ``[Q]`` gold hop count of each test question (multi-hop: >= 2).
  """
  hops = np.asarray(hops)

  def agg(name, key, mask=slice(None)):
    return _ms([np.asarray(r[name][key])[mask].mean() for r in per_seed])

  return {
    m: {
      "calls": agg(m, "calls"),
      "em": agg(m, "em"),
      "recall_all": agg(m, "recall"),
      "recall_multihop": agg(m, "recall", hops >= 2),
      **{f"recall_{h}hop": agg(m, "recall", hops == h) for h in (1, 2, 3)},
      **{f"calls_{h}hop": agg(m, "calls", hops == h) for h in (1, 2, 3)},
    }
    for m in METHODS
  }


def reference_metrics(
  ref: dict, per_seed: list[dict], hops, t_max: int, n_docs: int
) -> dict:
  """The seed-independent references: BM25 with the question as query (top-1 and
  top-t_max), iterative BM25 (t_max calls), the frozen-state cosines (t_max
  calls), t_max random documents (closed form), the closed-book and the
  gold-documents reader."""
  hops = np.asarray(hops)
  multi = hops >= 2
  refs = {}
  for k in (
    "bm25_top1",
    f"bm25_top{t_max}",
    "bm25_iterative",
    *ITERATIVE,
    *FROZEN,
  ):
    # stores written before the two re-query forms were kept apart
    if k not in ref:
      continue
    r = np.asarray(ref[k]["recall"], np.float64)
    refs[k] = {
      "recall_all": float(r.mean()),
      "recall_multihop": float(r[multi].mean()),
    }
    refs[k].update(
      {f"recall_{h}hop": float(r[hops == h].mean()) for h in (1, 2, 3)}
    )
  if "variant" in ref["bm25_iterative"]:
    refs["bm25_iterative"]["variant"] = ref["bm25_iterative"]["variant"]
  # a random choice of t_max distinct documents holds all h gold ones with prob
  # C(N-h, k-h)/C(N, k)
  rnd = [
    math.comb(n_docs - h, t_max - h) / math.comb(n_docs, t_max) for h in hops
  ]
  refs["random_docs"] = {
    "recall_all": float(np.mean(rnd)),
    "recall_multihop": float(np.mean(np.asarray(rnd)[multi])),
  }
  refs["closed_book"] = {"em": float(np.mean(ref["closed_book_em"]))}
  refs["gold_docs"] = {"em": float(np.mean(ref["gold_docs_em"]))}
  for h in (1, 2, 3):
    refs["gold_docs"][f"em_{h}hop"] = float(
      np.mean(np.asarray(ref["gold_docs_em"])[hops == h])
    )
  return refs


def claim_values(
  per_seed, ref, hops, sufficiency, t_max: int, n_boot: int
) -> dict:
  """The values the claims in ``configs/default.py`` are judged on (pure;
  ``metrics.derived``).

  Every comparison is paired over the test questions: a LAnR method's
  per-question value is its mean over the head seeds, a reference's is
  seed-independent; the noise is the 95% paired-bootstrap half-width over
  questions (``core.paired_bootstrap``, seed 0). Calls saved = t_max - the
  controlled method's calls.
  """
  hops = np.asarray(hops)
  multi = hops >= 2
  rec = per_question(per_seed, "fixed", "recall")
  bm = np.asarray(ref["bm25_iterative"]["recall"], np.float64)
  out = {}

  # ``name``: the mean paired difference; ``name_ci``: its half-width
  def paired(name, a, b):
    d = paired_ci(a, b, n_boot)
    out[name], out[f"{name}_ci"] = d["mean"], d["ci"]

  paired("lanr_minus_bm25_iter_multihop_recall", rec[multi], bm[multi])
  for f in FROZEN:
    fr = np.asarray(ref[f]["recall"], np.float64)
    out[f"{f}_minus_bm25_iter_multihop_recall"] = float(
      fr[multi].mean() - bm[multi].mean()
    )
  best = max(FROZEN, key=lambda f: np.mean(ref[f]["recall"]))
  out["best_frozen_cosine"] = best
  paired(
    "trained_minus_frozen_cosine_recall",
    rec,
    np.asarray(ref[best]["recall"], np.float64),
  )
  calls = per_question(per_seed, "entropy_control", "calls")
  paired("calls_saved_entropy_control", t_max - calls, np.zeros_like(calls))
  em_fixed = per_question(per_seed, "fixed", "em")
  em_control = per_question(per_seed, "entropy_control", "em")
  paired("em_entropy_control_minus_fixed", em_control, em_fixed)
  out["trivial_one_call_em_minus_fixed"] = float(
    np.mean(per_question(per_seed, "one_call", "em") - em_fixed)
  )
  out["entropy_auroc"] = sufficiency["entropy"]["auroc"]
  out["entropy_auroc_ci"] = sufficiency["entropy"]["ci"]
  out["entropy_auroc_same_docs"] = sufficiency["entropy_same_docs"]["auroc"]
  out["entropy_auroc_same_docs_ci"] = sufficiency["entropy_same_docs"]["ci"]
  out["train_next_hop_acc"] = float(
    np.mean([r["next_hop_train"]["all"] for r in per_seed])
  )
  return out


def better_on(ref: dict, names, mask) -> str:
  """The name in ``names`` whose per-question ``ref[name]["recall"]`` has the
  higher mean over the questions in ``mask`` [Q] (ties: the first name): the
  stronger of two baselines."""
  mask = np.asarray(mask, bool)
  return max(
    names,
    key=lambda k: float(np.mean(np.asarray(ref[k]["recall"], float)[mask])),
  )


def reference_runs(c, world: dict, feats: dict) -> dict:
  """The seed-independent references on the test questions, per question.

  The frozen-state cosines (online loop, no head), the BM25 pipelines (no LM:
  the question as query, top-1 and top-t_max; two iterative re-query forms,
  question + bridge entity or the bridge entity alone, of which the claim uses
  the better on the multi-hop questions), and the closed-book and gold-documents
  reader (the gold prefixes).

  Returns:
    ``{name: {"recall": [Q], ...}}`` for every retrieval reference,
    ``bm25_diagnostics``, ``bm25_iterative`` (the better form, its name under
    ``variant``) and ``gold_docs_em`` / ``closed_book_em`` ([Q] floats).
  """
  kb, test_q = world["kb"], world["test_q"]
  gold = [q.gold for q in test_q]
  out = {}
  for name, score in L.frozen_scorers(
    feats["train"]["z"], feats["doc"]["h"], dim=c.rep_dim
  ).items():
    tr = online_trace(
      world["store"], "test", len(test_q), score, c.t_max, final=False
    )
    out[name] = {"recall": L.support_recall(tr["doc_ids"], gold).tolist()}
    out[name]["next_hop"] = next_hop_accuracy(
      score, feats["test"]["z"], world["rows"]["test"]
    )
  q_texts, docs = [q.question for q in test_q], list(kb.docs)
  for k in (1, c.t_max):
    r = L.question_as_query_retrieve(q_texts, docs, hops=k)
    out[f"bm25_top{k}"] = {"recall": L.support_recall(r, gold).tolist()}
  top3 = L.question_as_query_retrieve(q_texts, docs, hops=3)
  out["bm25_diagnostics"] = L.bm25_diagnostics(kb, test_q, top3)
  bridge = [f[2] for f in kb.facts]
  multi = np.asarray([q.hops >= 2 for q in test_q])
  for name, keep in (
    ("bm25_iterative_with_question", True),
    ("bm25_iterative_bridge", False),
  ):
    r = L.iterative_bm25_retrieve(
      q_texts, docs, bridge, hops=c.t_max, keep_question=keep
    )
    out[name] = {"recall": L.support_recall(r, gold).tolist()}
  best = better_on(out, ITERATIVE, multi)
  out["bm25_iterative"] = dict(out[best], variant=best)
  rows = world["rows"]["test"]
  last = [i for i, r in enumerate(rows) if r["sufficient"]]
  first = [i for i, r in enumerate(rows) if r["t"] == 0]
  out["gold_docs_em"] = feats["test"]["correct"][last].astype(float).tolist()
  out["closed_book_em"] = feats["test"]["correct"][first].astype(float).tolist()
  return out


def sufficiency_metrics(
  feats: dict, rows: list[dict], per_seed: list[dict], n_boot: int
) -> dict:
  """The paper's motivating observation on the held-out gold-prefix contexts:
  does low answer entropy mark a sufficient context (also among contexts with
  the same number of documents), and how well do the control heads of each seed
  predict it."""
  suff = np.asarray([r["sufficient"] for r in rows])
  ndocs = np.asarray([r["t"] for r in rows], np.float32)
  qid = np.asarray([r["q"] for r in rows])
  h_ans = feats["test"]["h_answer"]
  return {
    "entropy": L.auroc_interval(-h_ans, suff, qid, n_boot),
    "entropy_same_docs": L.auroc_interval(
      -h_ans, suff, qid, n_boot, strata=ndocs
    ),
    "entropy_auroc": _entropy_auroc(h_ans, suff),
    "pred_entropy_auroc": _entropy_auroc(feats["test"]["h_pred"], suff),
    "docs_in_context_auroc": _auroc(ndocs, suff),
    "control_auroc_entropy": _ms(
      [r["control_auroc"]["entropy"] for r in per_seed]
    ),
    "control_auroc_oracle": _ms(
      [r["control_auroc"]["oracle"] for r in per_seed]
    ),
    "stop_accuracy_entropy": _ms(
      [r["stop_accuracy"]["entropy"] for r in per_seed]
    ),
    "stop_accuracy_oracle": _ms(
      [r["stop_accuracy"]["oracle"] for r in per_seed]
    ),
  }


def next_hop_metrics(
  c, feats: dict, rows: list[dict], per_seed: list[dict], ref: dict
) -> dict:
  """Teacher-forced next-hop accuracy of the trained heads (per seed), of
  untrained random projection heads (the trivial learned-query baseline) and of
  the frozen cosines."""
  hidden = feats["train"]["z"].shape[1]
  rk = L.init_retrieval_heads(
    jax.random.key(c.seed + 99), hidden, rep_dim=c.rep_dim
  )
  e_r = L.doc_embedding(rk, jnp.asarray(feats["doc"]["h"]))
  return {
    "trained_heads": _ms([r["next_hop"]["all"] for r in per_seed]),
    "trained_heads_hop1": _ms([r["next_hop"]["hop1"] for r in per_seed]),
    "trained_heads_train_contexts": _ms(
      [r["next_hop_train"]["all"] for r in per_seed]
    ),
    "random_heads": next_hop_accuracy(
      lambda z: L.query_embedding(rk, z) @ e_r.T, feats["test"]["z"], rows
    ),
    **{f: ref[f]["next_hop"] for f in FROZEN},
  }
