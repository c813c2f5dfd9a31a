"""LM prefill against the machine's own float32 matmul rate, 256 to 8,192 tokens.

  nice python -m benchmarks.lm_context [--quick] [--lengths=256,1024,4096,8192]
      [--models=smollm2,gemma3] [--repeats=3] [--out=benchmarks/results/lm_context.json]

For each model and prompt length T, one process measures, side by side:

* **prefill**: `lm.forward(params, tokens, logits_at='last')` on T random tokens, batch 1,
  float32, jitted, `attention='auto'` (the blockwise online-softmax path with tiles of
  `lm.auto_block_size(T)`, `lm.auto_block_size(T, W)` on sliding-window layers), i.e. what a
  user's prefill runs;
* **the machine's float32 matmul rate**: a 2048 × 2048 by 2048 × 2048 `jnp.dot`, repeated for
  about as long as one prefill, right before and right after it (so that both see the same
  load on a shared host).

The fraction of the matmul rate is (F / prefill time) / (matmul FLOPs / matmul time), per
round; `--repeats` rounds after a warm-up call, median reported (best and CPU-time versions
in the rows). F, the model's prefill FLOPs, counts every multiply-add of the matrix products
as 2 FLOPs and nothing else (norms, RoPE, softmax exponentials, activations are not counted):

  F = Σ_layers [ 2·T·d·dh·(H + 2·KV)      q, k, v projections
               + 2·T·H·dh·d              output projection
               + 3 · 2·T·d·F_ffn         gate, up and down projections
               + 4·H·dh·P_l ]            q·k scores and probabilities·v over allowed pairs
    + 2·d·V                              logits of the last position

with P_l the number of (query, key) pairs layer l may attend: T(T+1)/2 for a causal (global)
layer, Σ_{t<T} min(t + 1, W) for a sliding-window layer of window W. Work the blockwise path
does beyond the allowed pairs (the masked half of the diagonal tiles) is not counted, so it
lowers the fraction. `tests/benchmarks/test_lm_context.py` checks F against the matrix
products of the compiled-from model's own program.

Each row also records XLA's memory analysis of the compiled prefill (temporaries grow linearly
in T), and the diagnostics that explain a fraction below the target, each as a fraction of the
same matmul rate: one layer's seven projections alone at the model's shapes ([T, d] @ [d, ·]
and back), one layer's blockwise attention alone (global, and sliding-window where the model
has it), and the *matmul ceiling* they set together (the prefill's FLOPs over the time its
projections and attention take at those rates, elementwise work free). A prefill below 80%
whose ceiling is below 80% too is bound by the rate XLA's CPU matmuls reach at those shapes
(T rows by d = 576 or 640 columns; score tiles contracting over head_dim = 64 and followed by
an exp per score), not by the rest of the program. At the shortest length it checks that a prompt of another
length in the same bucket (`forward(..., pad_to='bucket')`) compiles nothing new.

The reference is the machine's float32 matmul peak, not a rate only an outsized product reaches:
XLA's square dots of 1,024 and 4,096 run at the 2048 dot's rate within noise
(`host.matmul.gflops_by_size`), and at 1,024 rows (the chunk size of longer prompts) one layer's
seven projections timed alone reach it (the rows' `projection_fraction`). A fair bar for a prefill is this
peak: the products the prefill is made of can run at it.

Long prompts: a layer's row-wise work (RMSNorm and the q, k, v projections; the output projection
and the FFN) runs on chunks of `lm.row_chunk_size(T)` rows (at most `lm.ROW_CHUNK` = 1,024).
Unchunked, the [T, 1,536] FFN intermediates of SmolLM2 (50 MB at 8,192 tokens) outgrow the caches
between the products that write and read them, and the FFN ran about 20% below the dot's rate
per CPU second from 4,096 tokens on; in chunks it runs at the rate.

What bounds the fraction on a 2-core CPU (the rows' diagnostics hold the numbers, and each timed
length emits a second summary row, *the cap its matrix products set*, so the table shows it): at
256 tokens the attention tiles are 64 x 64, too small for the dot to reach its rate, so a
layer's attention runs far below it, but attention is only 4% of the FLOPs there; from 4,096
tokens on attention is 40-57% of SmolLM2's FLOPs (head_dim 64: each score is 256 matmul FLOPs
plus a max, an exp and a row sum that are not matrix products, so per FLOP the softmax costs
four times what it costs Gemma-3's head_dim 256) and the cap falls with it; the projections
themselves ([rows, 576] by [576, 1,536] and smaller) run below the square 2048 dot at 256 tokens. A cap below 80%
means the target is out of reach unless the projections at these shapes or the attention layer
(its products and its softmax) run faster: the rest of the prefill does not hold it back. The
sliding-window layers of Gemma-3 (window 512) take 128-row tiles (`lm.auto_block_size(T, 512)`):
a query block then reads 640 keys for the 512 it may attend, where 256-row tiles read 768. The
tiles' elementwise work runs on rows flattened over (KV head, group member, query), so it splits
evenly over two threads whatever the number of KV heads (SmolLM2 has 3). A row whose host was
loaded beyond 1.5x its CPUs is recorded but not judged (``OVERLOAD``): a shared host slows the
2048 dot beside the prefill differently from the prefill itself, which shows as fractions above
100%.

`--quick` (SmolLM2-135M: the fraction at 256 tokens in 2 rounds; 512 tokens compiled for the
memory exponent only; the 4,096 dot left out of the host's matmul record) takes about 20 CPU
seconds; the default times 256, 1,024, 4,096 and 8,192 tokens in 3 rounds, and Gemma-3-270M (its 15 local layers with a
512-token window and 3 global layers run through the same blockwise path).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from jaxpapers.core import benchmark as bench

NAME = "lm_context"
MATMUL_N = 2048
TARGET_PERCENT = 80.0
QUICK_LENGTHS = (256, 512)
FULL_LENGTHS = (256, 1024, 4096, 8192)


# ---------------------------------------------------------------------------
# FLOPs


def allowed_pairs(T: int, window: int | None) -> int:
  """Causal (query, key) pairs of a T-token prefill: Σ_t min(t + 1, W) (W = T: T(T+1)/2)."""
  if window is None or window >= T:
    return T * (T + 1) // 2
  return window * (window + 1) // 2 + (T - window) * window


def prefill_flops(config: lm.LMConfig, T: int, *, pairs=allowed_pairs) -> dict[str, int]:
  """The prefill FLOPs of `config` on T tokens with logits at the last position.

  Args:
    config: the model.
    T: prompt length.
    pairs: (T, window or None) -> attended pairs of one layer (default: the causal mask).

  Returns:
    {'projections', 'attention', 'logits', 'total'} in FLOPs (2 per multiply-add).
  """
  d, H, KV, dh, F = (
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
  )
  proj = attn = 0
  for is_global in config.global_flags():
    proj += 2 * T * d * dh * (H + 2 * KV) + 2 * T * H * dh * d + 3 * 2 * T * d * F
    attn += 4 * H * dh * pairs(T, None if is_global else config.sliding_window)
  logits = 2 * d * config.vocab_size
  return dict(projections=proj, attention=attn, logits=logits, total=proj + attn + logits)


# ---------------------------------------------------------------------------
# timing


class MatmulClock:
  """The machine's float32 matmul rate: `n` chained-free 2048³ dots, wall and CPU time."""

  def __init__(self, n: int = MATMUL_N):
    rng = np.random.default_rng(0)
    self.a = jnp.asarray(rng.standard_normal((n, n)), jnp.float32)
    self.b = jnp.asarray(rng.standard_normal((n, n)), jnp.float32)
    self.flops = 2 * n**3
    self.dot = jax.jit(jnp.dot)
    jax.block_until_ready(self.dot(self.a, self.b))
    self.single = min(self.window(1)[0] for _ in range(3))

  def window(self, count: int) -> tuple[float, float]:
    """(wall s, CPU s) of `count` dots."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = [self.dot(self.a, self.b) for _ in range(count)]
    jax.block_until_ready(out)
    return time.perf_counter() - w0, time.process_time() - c0


def fractions(fn, flops: float, clock: MatmulClock, repeats: int) -> dict:
  """Interleaved rounds (matmul window, fn, matmul window): fraction of the matmul rate.

  The windows hold as many dots as fit in one call of `fn` (measured on the warm-up call), so
  the rate `fn` is compared with was measured over a comparable stretch of time.
  """
  w0 = time.perf_counter()
  jax.block_until_ready(fn())  # warm-up (compiled already)
  count = max(1, round((time.perf_counter() - w0) / clock.single))
  rounds = []
  for _ in range(repeats):
    wb, cb = clock.window(count)
    w0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    w, c = time.perf_counter() - w0, time.process_time() - c0
    wa, ca = clock.window(count)
    mm_wall = count * clock.flops / ((wb + wa) / 2)
    mm_cpu = count * clock.flops / ((cb + ca) / 2)
    rounds.append(
      dict(
        wall_s=w,
        cpu_s=c,
        matmul_gflops=mm_wall / 1e9,
        gflops=flops / w / 1e9,
        fraction=flops / w / mm_wall,
        cpu_fraction=flops / c / mm_cpu,
      )
    )
  frac = [r["fraction"] for r in rounds]
  cpu = [r["cpu_fraction"] for r in rounds]
  return dict(
    fraction_median=statistics.median(frac),
    fraction_max=max(frac),
    cpu_fraction_median=statistics.median(cpu),
    best_wall_s=min(r["wall_s"] for r in rounds),
    matmul_dots_per_window=count,
    rounds=rounds,
  )


def _matmul_sizes(sizes) -> dict[str, float]:
  """Best-of-3 float32 GFLOP/s of an n × n by n × n `jnp.dot` for each n."""
  out = {}
  for n in sizes:
    a = jnp.ones((n, n), jnp.float32)
    dot = jax.jit(jnp.dot)
    jax.block_until_ready(dot(a, a))
    best = math.inf
    for _ in range(3):
      t0 = time.perf_counter()
      jax.block_until_ready(dot(a, a))
      best = min(best, time.perf_counter() - t0)
    out[str(n)] = 2 * n**3 / best / 1e9
  return out


def _memory(compiled) -> dict:
  m = compiled.memory_analysis()
  return dict(
    temp_bytes=int(m.temp_size_in_bytes),
    peak_bytes=int(
      m.argument_size_in_bytes
      + m.output_size_in_bytes
      + m.temp_size_in_bytes
      - m.alias_size_in_bytes
    ),
  )


def _count_compilations(fn) -> int:
  with bench.count_compilations() as c:
    jax.block_until_ready(fn())
  return c.count


# ---------------------------------------------------------------------------
# one model


def _tokens(config, T, seed):
  ids = np.random.default_rng(seed).integers(0, config.vocab_size, (1, T))
  return jnp.asarray(ids, jnp.int32)


def layer_matmul_shapes(config: lm.LMConfig, T: int) -> list[tuple[int, int, int]]:
  """The (M, K, N) of one layer's seven projections on T tokens: q, k, v, o, gate, up, down."""
  d, H, KV, dh, F = (
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
  )
  return [
    (T, d, H * dh),
    (T, d, KV * dh),
    (T, d, KV * dh),
    (T, H * dh, d),
    (T, d, F),
    (T, d, F),
    (T, F, d),
  ]


def _diagnostics(config, T, clock, repeats):
  """What bounds the prefill: its matrix products at their real shapes, timed alone.

  * one layer's seven projections (one program of seven independent dots of the model's
    shapes, on the `lm.row_chunk_size(T)` rows of one chunk as the model runs them, no
    elementwise work between them);
  * one layer's blockwise attention (global, and the sliding-window kind where the model has
    one);
  * the ceiling they set together: the prefill's FLOPs over the time its projections and
    attention would take at those rates (norms, RoPE, activations, residual adds and the
    logits cost nothing in it), as a fraction of the same matmul rate.
  """
  rng = np.random.default_rng(T)
  H, KV, dh = config.n_heads, config.n_kv_heads, config.head_dim
  q = jnp.asarray(rng.standard_normal((1, T, H, dh)), jnp.float32)
  k = jnp.asarray(rng.standard_normal((1, T, KV, dh)), jnp.float32)
  v = jnp.asarray(rng.standard_normal((1, T, KV, dh)), jnp.float32)
  pos = jnp.arange(T, dtype=jnp.int32)[None]
  valid = jnp.ones((1, T), bool)
  out = {}
  kinds = {"global": None}
  if config.sliding_window is not None and config.sliding_window < T:
    kinds["local"] = config.sliding_window
  for kind, window in kinds.items():
    attn = jax.jit(
      lambda q, k, v, window=window: lm.blockwise_attention(
        q,
        k,
        v,
        pos,
        pos,
        valid,
        window=window,
        is_global=window is None,
        block_size=lm.auto_block_size(T, window),
      )
    )
    jax.block_until_ready(attn(q, k, v))
    a = fractions(lambda: attn(q, k, v), 4 * H * dh * allowed_pairs(T, window), clock, repeats)
    prefix = "attention_layer" if kind == "global" else "attention_local_layer"
    out[f"{prefix}_fraction"] = a["fraction_median"]
    out[f"{prefix}_cpu_fraction"] = a["cpu_fraction_median"]
  # the rows each product runs on: the model's row-wise work goes in chunks of row_chunk_size
  shapes = layer_matmul_shapes(config, lm.row_chunk_size(T))
  xs = [jnp.asarray(rng.standard_normal((m, kk)), jnp.float32) for m, kk, _ in shapes]
  ws = [jnp.asarray(rng.standard_normal((kk, n)), jnp.float32) for _, kk, n in shapes]
  dots = jax.jit(lambda xs, ws: [x @ w for x, w in zip(xs, ws)])
  jax.block_until_ready(dots(xs, ws))
  proj_flops = sum(2 * m * kk * n for m, kk, n in shapes)
  p = fractions(lambda: dots(xs, ws), proj_flops, clock, repeats)
  out["projection_fraction"] = p["fraction_median"]
  out["projection_cpu_fraction"] = p["cpu_fraction_median"]
  # The ceiling: the prefill's FLOPs over the time of its projections and attention alone.
  fl = prefill_flops(config, T)
  n_global = sum(config.global_flags())
  n_local = config.n_layers - n_global
  for tag in ("", "cpu_"):
    t_proj = fl["projections"] / out[f"projection_{tag}fraction"]
    t_attn = n_global * 4 * H * dh * allowed_pairs(T, None) / out[f"attention_layer_{tag}fraction"]
    if n_local:
      local_frac = out.get(f"attention_local_layer_{tag}fraction")
      local_flops = n_local * 4 * H * dh * allowed_pairs(T, config.sliding_window)
      t_attn += local_flops / (local_frac or out[f"attention_layer_{tag}fraction"])
    out[f"matmul_ceiling_{tag}fraction"] = fl["total"] / (t_proj + t_attn)
  return out


def _bucket_check(config, params, T):
  """Prefill two prompt lengths of T's bucket with pad_to='bucket': compilations of the second."""
  b = lm.bucket_length(T)
  lo = T
  while lo > 1 and lm.bucket_length(lo - 1) == b:
    lo -= 1
  first, second = T - 1, (lo + T) // 2

  # Prompts as a user's tokenizer gives them: int32 ids on the host. (Making them device
  # arrays first, e.g. jnp.asarray, is a program per shape of its own, outside forward.)
  ids = {
    n: np.random.default_rng(n).integers(0, config.vocab_size, (1, n), dtype=np.int32)
    for n in (first, second)
  }

  def call(n):
    return lm.forward(params, ids[n], config=config, logits_at="last", pad_to="bucket")[0]

  jax.block_until_ready(call(first))
  return dict(
    bucket=b,
    lengths=[first, second],
    compilations_second_length=_count_compilations(lambda: call(second)),
  )


def run_model(name, config, params, lengths, clock, repeats, *, bucket_check, timed=None):
  """One row per length: compiled memory, and (for the lengths in ``timed``, default all) the
  fraction of the matmul rate with its diagnostics; the bucket check at the first length."""
  rows = []
  for i, T in enumerate(lengths):
    tokens = _tokens(config, T, T)
    fn = jax.jit(lambda p, t: lm.forward(p, t, config=config, logits_at="last")[0])
    t0 = time.perf_counter()
    compiled = fn.lower(params, tokens).compile()
    compile_s = time.perf_counter() - t0
    fl = prefill_flops(config, T)
    row = dict(
      model=name,
      tokens=T,
      head_dim=config.head_dim,
      d_model=config.d_model,
      attention="blockwise" if T >= lm.BLOCKWISE_MIN_QUERIES else "dense",
      block_size=lm.auto_block_size(T),
      local_block_size=lm.auto_block_size(T, config.sliding_window),
      flops=fl,
      compile_s=compile_s,
      **_memory(compiled),
    )
    if timed is None or T in timed:
      load_before = os.getloadavg()
      meas = fractions(lambda: compiled(params, tokens), fl["total"], clock, repeats)
      row.update(
        **meas,
        load_average_before=[round(x, 2) for x in load_before],
        load_average_after=[round(x, 2) for x in os.getloadavg()],
      )
      row.update(_diagnostics(config, T, clock, repeats))
    if bucket_check and i == 0:
      row["bucket"] = _bucket_check(config, params, T)
    rows.append(row)
    print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
  return rows


# ---------------------------------------------------------------------------
# record


def _host() -> dict:
  host = bench.host_info()
  host["shared_host"] += (
    " (and per row in rows[].load_average_*). Each fraction pairs a prefill with matmul windows "
    "of the same length right before and after it; cpu_fraction (process CPU time instead of "
    "wall time) is less sensitive to time-sharing but not to cache and memory contention."
  )
  return host


def _why(row) -> str:
  """What a row below the target is made of, from its diagnostics."""
  fl = row["flops"]
  local = (
    f", a sliding-window layer's at {100 * row['attention_local_layer_fraction']:.0f}%"
    if "attention_local_layer_fraction" in row
    else ""
  )
  return (
    f"CPU-time fraction {100 * row['cpu_fraction_median']:.0f}%. Timed alone, one layer's "
    f"seven projections at their real shapes run at {100 * row['projection_fraction']:.0f}% of "
    f"the 2048 dot's rate (CPU time {100 * row['projection_cpu_fraction']:.0f}%) and one "
    f"layer's blockwise attention at {100 * row['attention_layer_fraction']:.0f}% (CPU time "
    f"{100 * row['attention_layer_cpu_fraction']:.0f}%){local}; attention is "
    f"{100 * fl['attention'] / fl['total']:.0f}% of the FLOPs. Together they cap the prefill "
    f"at {100 * row['matmul_ceiling_fraction']:.0f}% (CPU time "
    f"{100 * row['matmul_ceiling_cpu_fraction']:.0f}%) before any of its elementwise work "
    f"(norms, RoPE, activations, residual adds): with head_dim {row['head_dim']} each score "
    f"costs {4 * row['head_dim']} matmul FLOPs but also a max, an exp and a row sum, which are "
    "not matrix products, and the projections' shapes (T rows, at most "
    f"{lm.ROW_CHUNK:,} per chunk, d = "
    "{} columns) run below the square 2048 dot.".format(row["d_model"])
  )


#: A row measured while the 1-minute load average exceeded this many times the usable CPUs is
#: not judged: the prefill and the matmul windows beside it then see different contention
#: (fractions above 100% on such a host), so neither wall nor CPU time resolves the fraction.
OVERLOAD = 1.5


def _usable_cpus() -> int:
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    return os.cpu_count() or 1


def _overloaded(row) -> bool:
  load = max(row["load_average_before"][0], row["load_average_after"][0])
  return load > OVERLOAD * _usable_cpus()


def summarize(rows, model_names) -> list[dict]:
  out = []
  for r in rows:
    if "fraction_median" not in r:  # compiled for its memory only (--quick)
      continue
    value = 100 * r["fraction_median"]
    met = value >= TARGET_PERCENT
    note = (
      f"median of {len(r['rounds'])} rounds; best {100 * r['fraction_max']:.0f}%, "
      f"CPU-time fraction {100 * r['cpu_fraction_median']:.0f}%; its matmuls alone (projections "
      f"and attention at their shapes) cap it at {100 * r['matmul_ceiling_fraction']:.0f}%"
    )
    out.append(
      bench.summary(
        f"{model_names[r['model']]} prefill, {r['tokens']:,} tokens: fraction of the f32 "
        "matmul rate",
        round(value, 1),
        f">= {TARGET_PERCENT:g}",
        unit="%",
        note=note if met else _why(r),
      )
    )
    local = (
      f", a sliding-window layer's {100 * r['attention_local_layer_fraction']:.0f}%"
      if "attention_local_layer_fraction" in r
      else ""
    )
    out.append(
      bench.summary(
        f"{model_names[r['model']]} prefill, {r['tokens']:,} tokens: the cap its matrix "
        "products set, each timed alone at the model's shapes (fraction of the f32 matmul rate)",
        round(100 * r["matmul_ceiling_fraction"], 1),
        f">= {TARGET_PERCENT:g}",
        unit="%",
        note=f"one layer's seven projections run at {100 * r['projection_fraction']:.0f}% of "
        f"the 2048 dot's rate, one global layer's blockwise attention at "
        f"{100 * r['attention_layer_fraction']:.0f}%{local}; the prefill reaches "
        f"{100 * r['fraction_median'] / r['matmul_ceiling_fraction']:.0f}% of this cap. Below "
        f"{TARGET_PERCENT:g}%, the target is out of reach unless the projections run faster "
        "at these shapes or the attention layer does: the rest of the prefill (norms, RoPE, "
        "activations, residual adds) is not what holds it back",
      )
    )
    if _overloaded(r):
      for entry in out[-2:]:
        entry["met"] = False  # never a pass on a measurement the host could not resolve
        entry["note"] = (
          f"not judged: the 1-minute load average was {r['load_average_before'][0]:.1f} before "
          f"and {r['load_average_after'][0]:.1f} after on a host of "
          f"{_usable_cpus()} usable CPUs, and the 2048 dot beside it ran at "
          f"{statistics.median(x['matmul_gflops'] for x in r['rounds']):.0f} GFLOP/s. "
          + entry["note"]
        )
  for model in model_names:
    mine = sorted((r for r in rows if r["model"] == model), key=lambda r: r["tokens"])
    if len(mine) >= 2:
      a, b = mine[0], mine[-1]
      slope = math.log(b["temp_bytes"] / a["temp_bytes"]) / math.log(b["tokens"] / a["tokens"])
      out.append(
        bench.summary(
          f"{model_names[model]} prefill memory: growth exponent of XLA temporaries, "
          f"{a['tokens']:,} to {b['tokens']:,} tokens",
          round(slope, 3),
          "<= 1.05",
          unit="exponent",
          note=f"{a['temp_bytes'] / 2**20:.0f} MiB to {b['temp_bytes'] / 2**20:.0f} MiB "
          "(1 = linear in T, 2 = quadratic)",
        )
      )
    for r in mine:
      if "bucket" in r:
        bk = r["bucket"]
        out.append(
          bench.summary(
            f"{model_names[model]} prefill of a second prompt length in the same bucket "
            f"({bk['lengths'][0]} then {bk['lengths'][1]} tokens, bucket {bk['bucket']}): "
            "compilations",
            bk["compilations_second_length"],
            "== 0",
            unit="count",
          )
        )
  return out


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--lengths", default=None, help="comma-separated prompt lengths")
  p.add_argument("--models", default=None, help="smollm2 and/or gemma3, comma-separated")
  p.add_argument("--repeats", type=int, default=None, help="rounds (default 3; quick: 2)")
  return p.parse_args(argv)


MODELS = {
  "smollm2": ("SmolLM2-135M", lm.load_smollm2),
  "gemma3": ("Gemma-3-270M", lm.load_gemma3),
}


def main(argv=None):
  args = parse_args(argv)
  repeats = args.repeats or (2 if args.quick else 3)
  lengths = (
    [int(x) for x in args.lengths.split(",")]
    if args.lengths
    else list(QUICK_LENGTHS if args.quick else FULL_LENGTHS)
  )
  models = args.models.split(",") if args.models else (["smollm2"] if args.quick else list(MODELS))
  for m in models:
    if m not in MODELS:
      raise SystemExit(f"--models: unknown model {m!r}; choose from {sorted(MODELS)}")
  host = _host()
  start = time.time()
  clock = MatmulClock()
  host["matmul"] = dict(
    n=MATMUL_N,
    best_single_s=clock.single,
    gflops=clock.flops / clock.single / 1e9,
    gflops_by_size=_matmul_sizes((1024, 2048) if args.quick else (1024, 2048, 4096)),
    note="the denominator of every fraction is the 2048 dot measured beside each prefill; "
    "gflops_by_size: best of 3 single dots of other sizes at the start, for context",
  )
  rows = []
  for m in models:
    config, params, _ = MODELS[m][1]()
    timed = lengths[:1] if args.quick else None
    rows += run_model(m, config, params, lengths, clock, repeats, bucket_check=True, timed=timed)
    del params
  return bench.write(
    NAME,
    args,
    rows=rows,
    summary=summarize(rows, {m: MODELS[m][0] for m in models}),
    host=host,
    argv=argv,
    extra={"total_s": time.time() - start},
  )


if __name__ == "__main__":
  main()
