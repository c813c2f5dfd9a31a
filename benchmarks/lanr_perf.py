"""Inference cost of LAnR's adaptive stopping (spec §7), measured side by side
in one process.

  python -m benchmarks.lanr_perf [--quick] [--questions=24]

On a Track-A-sized random decoder (4 layers, d = 128, word vocabulary of the
synthetic world):
(1) per-question serving with early exit: one jitted `read_context` forward per
    hop, stopping
when the (oracle) control fires, i.e. `hops + 1` forwards for an h-hop question,
against the fixed T_max = 3 loop (4 forwards) on the same questions; the ratio
is the wall-clock speed-up per question from fewer retrieval calls; (2) the
batched `multihop_retrieve` scan (B questions), whose cost does NOT fall with
early stopping (the active mask only freezes rows); (3) index scoring for 1,000
documents x 256 dims, 32 queries (spec target: < 1 ms). Warm-up excluded;
interleaved repeats, best kept. ``--quick``: 6 questions, 2 repeats, no (2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lanr as L
from jaxpapers import lm
from jaxpapers.core import benchmark as bench

NAME = "lanr_perf"


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--questions", type=int, default=24)
  p.add_argument("--repeats", type=int, default=3)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  n_questions, repeats = (6, 2) if a.quick else (a.questions, a.repeats)
  kb = L.make_kb(0, n_people=60, n_cities=12, n_countries=5, n_companies=10)
  qs = L.make_questions(kb, kb.people[:30], n_per_hop=n_questions // 3, seed=0)
  tok = L.WordTokenizer(
    list(kb.docs) + [q.question for q in qs] + [q.answer for q in qs]
  )
  cfg = lm.LMConfig(
    vocab_size=tok.vocab_size,
    d_model=128,
    n_layers=4,
    n_heads=4,
    n_kv_heads=4,
    head_dim=32,
    ffn_dim=512,
    rope_base=10000.0,
  )
  params = lm.init_params(jax.random.key(0), cfg)
  fn = L.lm_hidden_fn(cfg)
  dt, dl = L.pad_tokens([tok.encode(d) for d in kb.docs])
  heads = L.init_retrieval_heads(jax.random.key(1), cfg.d_model, rep_dim=64)
  emb = L.doc_embedding(
    heads, L.encode_documents(fn, params, dt, dl, np.array([3]))
  )
  qi, ql = L.pad_tokens([tok.encode(q.question) for q in qs])
  ai, al = L.pad_tokens([tok.encode(q.answer) for q in qs])
  pred = np.array([2], np.int32)
  t_max = 3
  width = qi.shape[1] + t_max * dt.shape[1] + 1 + ai.shape[1]
  read = jax.jit(
    lambda p, i, n, a_, al_: L.read_context(fn, p, i, n, pred, a_, al_)
  )

  def serve(n_reads):
    """Per-question serving: `n_reads[b]` forwards for question b (contexts grow
    by a document)."""
    out = None
    for b in range(len(qs)):
      buf = np.zeros((1, width), np.int32)
      buf[0, : ql[b]] = qi[b, : ql[b]]
      n = int(ql[b])
      for t in range(n_reads[b]):
        out = read(
          params, buf, np.array([n], np.int32), ai[b : b + 1], al[b : b + 1]
        )
        if t < len(qs[b].gold):
          d = qs[b].gold[t]
          buf[0, n : n + dl[d]] = dt[d, : dl[d]]
          n += int(dl[d])
    return out

  hops = np.array([q.hops for q in qs])
  t_serve = bench.side_by_side(
    {
      "fixed": lambda: serve([t_max + 1] * len(qs)),
      "adaptive": lambda: serve(hops + 1),
    },
    repeats,
  )
  scan = lambda ctl: L.multihop_retrieve(
    fn,
    params,
    heads,
    ctl,
    qi,
    ql,
    emb,
    dt,
    dl,
    pred,
    ai,
    al,
    t_max=t_max,
    tau_stop=0.5,
  )
  ctl = L.init_control_head(jax.random.key(2), cfg.d_model, width=64)
  scans = {"scan": lambda: scan(None), "scan_with_control": lambda: scan(ctl)}
  t_scan = {} if a.quick else bench.side_by_side(scans, repeats)
  e_d = jax.random.normal(jax.random.key(3), (1000, 256))
  e_q = jax.random.normal(jax.random.key(4), (32, 256))
  score = jax.jit(lambda q, d: jnp.argmax(q @ d.T, axis=1))
  t_index = bench.side_by_side({"index": lambda: score(e_q, e_d)}, 20)
  info = {
    "model": "random decoder, 4 layers, d=128 (Track A size)",
    "questions": len(qs),
    "mean_calls_adaptive": float(hops.mean()),
    "forward_ratio_expected": (t_max + 1) / float((hops + 1).mean()),
  }
  rows = [
    bench.timing_row("serve_per_question", t_serve, **info),
    bench.timing_row("multihop_retrieve_batched", t_scan, questions=len(qs)),
    bench.timing_row(
      "index_scoring", t_index, documents=1000, dims=256, queries=32
    ),
  ]
  summary = [
    bench.summary(
      (
        f"serving {len(qs)} questions: early exit vs fixed T_max = {t_max}, "
        "wall time"
      ),
      t_serve["fixed"].best / t_serve["adaptive"].best,
      ">= 1",
      note=(
        f"{info['forward_ratio_expected']:.2f}x fewer forwards (the ideal "
        "speed-up)"
      ),
    ),
    bench.summary(
      "index scoring 1,000 documents x 256 dims, 32 queries",
      1e3 * t_index["index"].best,
      "< 1",
      unit="ms",
      note="spec §7",
    ),
  ]
  bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
