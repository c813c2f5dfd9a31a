"""Performance targets of LeanSearch v2's components (jaxpapers.leansearch),
side by side.

  python -m benchmarks.leansearch_perf [--quick] [--lm]

Measures in one process, warm-up excluded, interleaved repeats, best kept: (1)
``dense_topk`` for 1,000 queries x 25,000 documents x 384 dims (quick: 200 x
5,000) against numpy (matmul + argpartition + sort); (2)
``premise_group_recall`` + ``covered_at_k`` on Q = 10,000 (quick: 2,000), G =
16, A = 4, K = 50 against a Python loop transcribing the reference's per-query
scorer; (3) dual-encoder training throughput (pairs/s; quick: 30 steps); (4)
with ``--lm`` and SmolLM2 installed: the yes/no reranker with the shared-prefix
KV cache against scoring full prompts (candidates/s). Spec targets (§7): (1) <
0.5 s, (2) < 20 ms, (3) >= 2k pairs/s,
(4) >= 1.5 candidates/s on a 2-core CPU. Times on shared CPU cores are noisy;
    read the ratios.
"""

from __future__ import annotations

import jax
import numpy as np

import jaxpapers.leansearch as L
from jaxpapers.core import benchmark as bench

NAME = "leansearch_perf"
# The reranker's instruction, passed explicitly so that the full prompts match
# the shared ones.
INSTRUCTION = "Does the library declaration help to prove or answer the query?"


def bench_topk(rows, summary, quick):
  rng = np.random.default_rng(0)
  nq, nd = (200, 5000) if quick else (1000, 25_000)
  q = rng.normal(size=(nq, 384)).astype(np.float32)
  d = rng.normal(size=(nd, 384)).astype(np.float32)
  q /= np.linalg.norm(q, axis=1, keepdims=True)
  d /= np.linalg.norm(d, axis=1, keepdims=True)
  qj, dj = jax.device_put(q), jax.device_put(d)

  def np_topk():
    s = q @ d.T
    part = np.argpartition(-s, 50, axis=1)[:, :50]
    order = np.argsort(-np.take_along_axis(s, part, 1), axis=1)
    return np.take_along_axis(part, order, 1)

  # Quick: 7 rounds of ~30 ms. With 2, the best-of ratio of unchanged code swung
  # between 0.75x and 1.2x from run to run on a shared 2-core host; the full
  # size keeps its 2 rounds.
  repeats = 7 if quick else 2
  t = bench.side_by_side(
    {"jax": lambda: L.dense_topk(qj, dj, 50), "numpy": np_topk}, repeats
  )
  rows.append(
    bench.timing_row("dense_topk", t, queries=nq, documents=nd, dims=384, k=50)
  )
  summary.append(
    bench.summary(
      f"dense_topk {nq} x {nd} x 384, k=50, vs numpy",
      t["numpy"].best / t["jax"].best,
      ">= 1",
    )
  )
  if not quick:
    summary.append(
      bench.summary(
        "dense_topk 1k x 25k x 384",
        t["jax"].best,
        "< 0.5",
        unit=("s"),
        note=("spec §7"),
      )
    )


def bench_groups(rows, summary, quick):
  rng = np.random.default_rng(1)
  Q, G, A, K = (2000 if quick else 10_000), 16, 4, 50
  alias = rng.integers(0, 2000, size=(Q, G, A)).astype(np.int32)
  alias[rng.random((Q, G, A)) < 0.4] = -1
  alias[:, :, 0] = rng.integers(0, 2000, size=(Q, G))
  mask = rng.random((Q, G)) < 0.6
  ret = np.stack([rng.permutation(2000)[:K] for _ in range(Q)]).astype(np.int32)
  ra, rm, rr = jax.device_put(alias), jax.device_put(mask), jax.device_put(ret)
  alt = jax.device_put(np.zeros((Q, G), bool))

  def ref():
    rec, cov = [], []
    for q in range(Q):
      seen = set(ret[q, :10].tolist())
      hits = [
        any(a in seen for a in alias[q, g] if a >= 0)
        for g in range(G)
        if mask[q, g]
      ]
      rec.append(sum(hits) / max(len(hits), 1))
      cov.append(all(hits))
    return np.asarray(rec)

  jax_fn = lambda: (
    L.premise_group_recall(rr, ra, rm, 10),
    L.covered_at_k(rr, ra, rm, alt, 10),
  )
  jax_fn()  # warm-up (the Python reference needs none)
  t = bench.side_by_side({"jax": jax_fn, "python": ref}, 1, warm_up=False)
  t_jax = bench.side_by_side({"jax": jax_fn}, 5, warm_up=False)["jax"]
  rows.append(
    bench.timing_row("group_metrics", {**t, "jax": t_jax}, Q=Q, G=G, A=A, K=K)
  )
  summary.append(
    bench.summary(
      (
        f"premise_group_recall + covered_at_k Q={Q} vs the per-query Python "
        "scorer"
      ),
      t["python"].best / t_jax.best,
      ">= 1",
    )
  )
  if not quick:
    summary.append(
      bench.summary(
        "premise_group_recall + covered_at_k Q=10k, G=16, A=4, K=50",
        1e3 * t_jax.best,
        "< 20",
        unit="ms",
        note="spec §7",
      )
    )


def bench_train(rows, summary, quick):
  rng = np.random.default_rng(2)
  P, Lf = 20_000, 64
  qi = rng.integers(1, 1 << 15, size=(P, Lf)).astype(np.int32)
  di = rng.integers(1, 1 << 15, size=(P, Lf)).astype(np.int32)
  steps, batch = (30 if quick else 300), 256
  t = bench.side_by_side(
    {
      "train": lambda: L.train_dual_encoder(
        jax.random.key(0), qi, di, steps=steps, batch=batch
      )[1]
    },
    1,
  )["train"]
  rows.append(
    {
      "case": "dual_encoder_train",
      "steps": steps,
      "batch": batch,
      **t.as_dict(),
    }
  )
  summary.append(
    bench.summary(
      f"dual encoder training, {steps} steps of {batch} pairs",
      steps * batch / t.best,
      ">= 2000",
      unit="pairs/s",
      note="spec §7 (after compile)",
    )
  )


def bench_lm(rows, summary):
  from jaxpapers import lm

  cfg, params, tok = lm.load_smollm2()
  query = "the sum of two natural numbers does not depend on their order"
  docs = [
    (
      f"Lemma add_comm_{i} : forall n m : nat, n + m = m + n. "
      "Commutativity of addition."
    )
    for i in range(16)
  ]
  prompts = [
    tok.encode(
      f"{INSTRUCTION}\nQuery: {query}\nDocument: {d}\nRelevant (yes or no):"
    )
    for d in docs
  ]
  ids, mask = lm.left_pad(prompts)
  t = bench.side_by_side(
    {
      "shared_prefix": lambda: L.lm_yes_no_scores(
        params, cfg, tok, query, docs, instruction=INSTRUCTION
      ),
      "full_prompts": lambda: lm.forward(
        params, ids, config=cfg, mask=mask, logits_at=("last")
      )[0],
    },
    2,
  )
  rows.append(bench.timing_row("lm_rerank", t, candidates=len(docs)))
  summary.append(
    bench.summary(
      "SmolLM2 yes/no reranker: shared-prefix KV cache vs full prompts",
      t["full_prompts"].best / t["shared_prefix"].best,
      ">= 1",
    )
  )
  summary.append(
    bench.summary(
      "SmolLM2 yes/no reranker, shared prefix",
      len(docs) / t["shared_prefix"].best,
      ">= 1.5",
      unit="candidates/s",
      note="spec §7",
    )
  )


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--lm", action="store_true", help=("also time the SmolLM2 reranker")
  )
  return p.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()
  rows, summary = [], []
  bench_topk(rows, summary, args.quick)
  bench_groups(rows, summary, args.quick)
  bench_train(rows, summary, args.quick)
  if args.lm:
    bench_lm(rows, summary)
  bench.write(NAME, args, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
