"""Performance targets of LeanSearch v2's components (jaxpapers.leansearch), side by side.

  python benchmarks/leansearch_perf.py [--out leansearch_perf.json] [--lm]

Measures in one process, warm-up excluded, best of repeats: (1) ``dense_topk`` for 1,000
queries x 25,000 documents x 384 dims against numpy (matmul + argpartition + sort);
(2) ``premise_group_recall`` + ``covered_at_k`` on Q = 10,000, G = 16, A = 4, K = 50 against a
Python loop transcribing the reference's per-query scorer; (3) dual-encoder training
throughput (pairs/s); (4) with ``--lm`` and SmolLM2 installed: the yes/no reranker with the
shared-prefix KV cache against scoring full prompts (candidates/s). Writes JSON. Times on
shared CPU cores are noisy; read the ratios.
"""

import argparse
import json

import jax
import numpy as np

import jaxpapers.leansearch as L
from jaxpapers.core.timing import best_time


def bench_topk(out):
  rng = np.random.default_rng(0)
  q = rng.normal(size=(1000, 384)).astype(np.float32)
  d = rng.normal(size=(25_000, 384)).astype(np.float32)
  q /= np.linalg.norm(q, axis=1, keepdims=True)
  d /= np.linalg.norm(d, axis=1, keepdims=True)
  qj, dj = jax.device_put(q), jax.device_put(d)
  t_jax = best_time(lambda: L.dense_topk(qj, dj, 50))

  def np_topk():
    s = q @ d.T
    part = np.argpartition(-s, 50, axis=1)[:, :50]
    order = np.argsort(-np.take_along_axis(s, part, 1), axis=1)
    return np.take_along_axis(part, order, 1)

  t_np = best_time(np_topk, repeats=2)
  out["dense_topk"] = {"jax_s": t_jax, "numpy_s": t_np, "ratio": t_np / t_jax, "target_s": 0.5}


def bench_groups(out):
  rng = np.random.default_rng(1)
  Q, G, A, K = 10_000, 16, 4, 50
  alias = rng.integers(0, 2000, size=(Q, G, A)).astype(np.int32)
  alias[rng.random((Q, G, A)) < 0.4] = -1
  alias[:, :, 0] = rng.integers(0, 2000, size=(Q, G))
  mask = rng.random((Q, G)) < 0.6
  ret = np.stack([rng.permutation(2000)[:K] for _ in range(Q)]).astype(np.int32)
  ra, rm, rr = jax.device_put(alias), jax.device_put(mask), jax.device_put(ret)
  alt = jax.device_put(np.zeros((Q, G), bool))
  t_jax = best_time(
    lambda: (L.premise_group_recall(rr, ra, rm, 10), L.covered_at_k(rr, ra, rm, alt, 10)),
    repeats=5,
  )

  def ref():
    rec, cov = [], []
    for q in range(Q):
      seen = set(ret[q, :10].tolist())
      hits = [any(a in seen for a in alias[q, g] if a >= 0) for g in range(G) if mask[q, g]]
      rec.append(sum(hits) / max(len(hits), 1))
      cov.append(all(hits))
    return np.asarray(rec)

  t_ref = best_time(ref, repeats=1)
  out["group_metrics"] = {
    "jax_s": t_jax,
    "python_s": t_ref,
    "ratio": t_ref / t_jax,
    "target_s": 0.02,
  }


def bench_train(out):
  rng = np.random.default_rng(2)
  P, Lf = 20_000, 64
  qi = rng.integers(1, 1 << 15, size=(P, Lf)).astype(np.int32)
  di = rng.integers(1, 1 << 15, size=(P, Lf)).astype(np.int32)
  steps, batch = 300, 256
  t = best_time(
    lambda: L.train_dual_encoder(jax.random.key(0), qi, di, steps=steps, batch=batch)[1],
    repeats=1,
  )
  out["dual_encoder_train"] = {"pairs_per_s": steps * batch / t, "target_pairs_per_s": 2000}


def bench_lm(out):
  from jaxpapers import lm

  cfg, params, tok = lm.load_smollm2()
  query = "the sum of two natural numbers does not depend on their order"
  docs = [
    f"Lemma add_comm_{i} : forall n m : nat, n + m = m + n. Commutativity of addition."
    for i in range(16)
  ]
  t_shared = best_time(lambda: L.lm_yes_no_scores(params, cfg, tok, query, docs), repeats=2)
  prompts = [
    tok.encode(
      f"{L._models.RERANK_INSTRUCTION}\nQuery: {query}\nDocument: {d}\nRelevant (yes or no):"
    )
    for d in docs
  ]
  ids, mask = lm.left_pad(prompts)
  t_full = best_time(
    lambda: lm.forward(params, ids, config=cfg, mask=mask, logits_at="last")[0], repeats=2
  )
  out["lm_rerank"] = {
    "shared_prefix_cands_per_s": len(docs) / t_shared,
    "full_prompt_cands_per_s": len(docs) / t_full,
    "ratio": t_full / t_shared,
    "target_cands_per_s": 1.5,
  }


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--out", default="leansearch_perf.json")
  p.add_argument("--lm", action="store_true", help="also time the SmolLM2 reranker")
  args = p.parse_args()
  out = {"devices": str(jax.devices())}
  bench_topk(out)
  bench_groups(out)
  bench_train(out)
  if args.lm:
    bench_lm(out)
  print(json.dumps(out, indent=1))
  with open(args.out, "w") as f:
    json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
