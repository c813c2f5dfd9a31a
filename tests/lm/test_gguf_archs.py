"""The GGUF path on tiny files written here with gguf.GGUFWriter (no weights
package needed).

A tiny gemma3 file (local/global layers, q/k and post norms, a Q8_0 tensor,
logit soft-capping, a SentencePiece vocabulary) against the independent float64
reader in tests/lm/gemma_ref.py; a tiny llama file with an untied output head
and linear RoPE scaling against tests/lm/numpy_ref.py on the Hugging Face layout
it was written from.
"""

import numpy as np
import pytest

from jaxpapers import lm
from tests.lm.gemma_ref import GemmaRef, spm_encode
from tests.lm.numpy_ref import np_forward

gguf = pytest.importorskip("gguf")

# a tiny SentencePiece vocabulary: control, unknown, byte, normal and
# user-defined pieces
_NORMAL = [
  "\u2581",
  "a",
  "b",
  "c",
  "ab",
  "bc",
  "abc",
  "\u2581a",
  "\u2581ab",
  "ca",
  "cab",
]
SPM_TOKENS = (
  ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>"]
  + [f"<0x{i:02X}>" for i in range(256)]
  + _NORMAL
  + ["\n", "  "]
)
SPM_TYPES = [3, 3, 3, 2, 3] + [6] * 256 + [1] * len(_NORMAL) + [4, 4]
SPM_SCORES = (
  [0.0] * 261
  + [-1.0, -2.0, -3.0, -4.0, -5.0, -5.0, -7.0, -8.0, -9.0, -10.0, -6.0]
  + [0.0, 0.0]
)


def _add_vocab(w):
  w.add_tokenizer_model("llama")
  w.add_token_list(SPM_TOKENS)
  w.add_token_scores(SPM_SCORES)
  w.add_token_types(SPM_TYPES)
  w.add_bos_token_id(2)
  w.add_eos_token_id(1)
  w.add_unk_token_id(3)
  w.add_add_bos_token(True)
  w.add_add_space_prefix(False)


def _write(path, arch, kv, tensors, quant=()):
  w = gguf.GGUFWriter(str(path), arch)
  for key, (kind, value) in kv.items():
    getattr(w, f"add_{kind}")(key, value)
  _add_vocab(w)
  for name, a in tensors.items():
    if name in quant:
      q = gguf.quants.quantize(
        a.astype(np.float32), gguf.GGMLQuantizationType.Q8_0
      )
      w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    else:
      w.add_tensor(name, a.astype(np.float32))
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()
  return path


V, D, H, KV, DH, F = len(SPM_TOKENS), 32, 2, 1, 16, 48
TOKENS = [2, 270, 265, 266, 268, 264, 262, 271, 263, 265]  # ids < V


def _layer_tensors(rng, L, gemma):
  t = {}
  for l in range(L):
    b = f"blk.{l}."
    t |= {
      b + "attn_norm.weight": 1 + 0.2 * rng.normal(size=D),
      b + "ffn_norm.weight": 1 + 0.2 * rng.normal(size=D),
      b + "attn_q.weight": 0.3 * rng.normal(size=(H * DH, D)),
      b + "attn_k.weight": 0.3 * rng.normal(size=(KV * DH, D)),
      b + "attn_v.weight": 0.3 * rng.normal(size=(KV * DH, D)),
      b + "attn_output.weight": 0.2 * rng.normal(size=(D, H * DH)),
      b + "ffn_gate.weight": 0.2 * rng.normal(size=(F, D)),
      b + "ffn_up.weight": 0.2 * rng.normal(size=(F, D)),
      b + "ffn_down.weight": 0.2 * rng.normal(size=(D, F)),
    }
    if gemma:
      t |= {
        b + "attn_q_norm.weight": 1 + 0.2 * rng.normal(size=DH),
        b + "attn_k_norm.weight": 1 + 0.2 * rng.normal(size=DH),
        b + "post_attention_norm.weight": 1 + 0.2 * rng.normal(size=D),
        b + "post_ffw_norm.weight": 1 + 0.2 * rng.normal(size=D),
      }
  return t


@pytest.fixture(scope="module")
def tiny_gemma(tmp_path_factory):
  rng = np.random.default_rng(0)
  L = 6  # layers 0-4 local, layer 5 global (llama.cpp's fixed period of 6)
  kv = {
    "gemma3.embedding_length": ("uint32", D),
    "gemma3.block_count": ("uint32", L),
    "gemma3.feed_forward_length": ("uint32", F),
    "gemma3.attention.head_count": ("uint32", H),
    "gemma3.attention.head_count_kv": ("uint32", KV),
    "gemma3.attention.key_length": ("uint32", DH),
    "gemma3.attention.value_length": ("uint32", DH),
    "gemma3.attention.layer_norm_rms_epsilon": ("float32", 1e-6),
    "gemma3.rope.freq_base": ("float32", 1e6),
    "gemma3.attention.sliding_window": ("uint32", 3),
    "gemma3.final_logit_softcapping": ("float32", 4.0),
  }
  t = _layer_tensors(rng, L, gemma=True)
  t["token_embd.weight"] = 0.5 * rng.normal(size=(V, D))
  t["output_norm.weight"] = 1 + 0.2 * rng.normal(size=D)
  path = tmp_path_factory.mktemp("gguf") / "tiny_gemma3.gguf"
  return _write(
    path, "gemma3", kv, t, quant={"token_embd.weight", "blk.0.attn_q.weight"}
  )


def test_tiny_gemma3_file_matches_the_float64_reader(tiny_gemma):
  config, params, tok = lm.load_gguf(tiny_gemma)
  assert config.arch == "gemma3" and config.layer_is_global == (False,) * 5 + (
    True,
  )
  assert (config.sliding_window, config.rope_base, config.rope_base_local) == (
    3,
    1e6,
    1e4,
  )
  assert config.final_logit_softcap == 4.0 and config.query_scale == 1 / 4
  assert (
    config.embed_scale == pytest.approx(D**0.5) and config.rope_layout == "neox"
  )
  ref = GemmaRef(tiny_gemma)
  want, z_ref, _ = ref.forward(TOKENS)
  logits, _, cap = lm.forward(
    params,
    np.array([TOKENS]),
    config=config,
    capture=lm.Capture(head_outputs=True),
  )
  np.testing.assert_allclose(np.asarray(logits[0]), want, rtol=2e-4, atol=2e-4)
  np.testing.assert_allclose(
    np.asarray(cap["head_outputs"][0]), z_ref, rtol=2e-4, atol=2e-4
  )
  assert np.abs(want).max() < 4.0  # the soft-cap is active
  # the Q8_0 tensors equal gguf's dequantiser
  np.testing.assert_array_equal(
    np.asarray(params["embed"]), ref.w["token_embd.weight"]
  )


# 8193: one row past a dequantisation chunk
@pytest.mark.parametrize("rows", [1, 3, 8193])
def test_q8_0_dequantiser_equals_gguf_on_random_blocks(rows):
  """Every bit pattern of the int8 quants and a spread of float16 scales
  (subnormal, negative, zero, large), against gguf's own dequantiser; a wrong
  block layout, a signed/unsigned mix-up or a chunk seam would all differ."""
  from jaxpapers.lm._gguf import dequantize_q8_0

  rng = np.random.default_rng(rows)
  raw = rng.integers(0, 256, size=(rows, 3 * 34), dtype=np.uint8)
  scales = np.array([1e-7, -0.5, 0.0, 3.0e4, 0.0123], np.float16)
  raw.reshape(rows, 3, 34)[..., :2] = (
    rng.choice(scales, size=(rows, 3))
    .astype("<f2")
    .view(np.uint8)
    .reshape(rows, 3, 2)
  )
  want = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0)
  got = dequantize_q8_0(raw)
  assert got.dtype == np.float32 and got.shape == (rows, 96)
  np.testing.assert_array_equal(got, want)
  with pytest.raises(ValueError, match="raw must be uint8"):
    dequantize_q8_0(raw[:, :33])


def test_sentencepiece_tokenizer_equals_the_merge_loop(tiny_gemma):
  tok = lm.load_gguf(tiny_gemma)[2]
  for text in [
    "abc",
    "cab ab",
    " a abc\nab",
    "abcab  bc",
    "é ab∞",
    "<start_of_turn>ab\n",
  ]:
    ids = tok.encode(text)
    assert ids == spm_encode(
      text, SPM_TOKENS, SPM_SCORES, SPM_TYPES, bos_id=2
    ), text
    assert tok.decode(ids[1:]) == text
  # 'é' is not a piece: its two UTF-8 bytes; the user-defined two-space piece is
  # kept whole
  assert tok.encode("é", add_bos=False) == [4 + 0xC3 + 1, 4 + 0xA9 + 1]
  assert tok.encode("a  b", add_bos=False) == [262, SPM_TOKENS.index("  "), 263]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
  rng = np.random.default_rng(1)
  L = 2
  kv = {
    "llama.embedding_length": ("uint32", D),
    "llama.block_count": ("uint32", L),
    "llama.feed_forward_length": ("uint32", F),
    "llama.attention.head_count": ("uint32", H),
    "llama.attention.head_count_kv": ("uint32", KV),
    "llama.attention.layer_norm_rms_epsilon": ("float32", 1e-5),
    "llama.rope.freq_base": ("float32", 100.0),
    "llama.rope.scaling.type": ("string", "linear"),
    "llama.rope.scaling.factor": ("float32", 4.0),
  }
  hf = _layer_tensors(rng, L, gemma=False)  # Hugging Face (rotate-half) rows
  t = dict(hf)
  for l in range(L):  # the llama.cpp converter's Q/K row permutation
    t[f"blk.{l}.attn_q.weight"] = lm.permute_qk(hf[f"blk.{l}.attn_q.weight"], H)
    t[f"blk.{l}.attn_k.weight"] = lm.permute_qk(
      hf[f"blk.{l}.attn_k.weight"], KV
    )
  t["token_embd.weight"] = 0.5 * rng.normal(size=(V, D))
  t["output.weight"] = 0.5 * rng.normal(size=(V, D))
  t["output_norm.weight"] = 1 + 0.2 * rng.normal(size=D)
  path = tmp_path_factory.mktemp("gguf") / "tiny_llama.gguf"
  hf = hf | {k: t[k] for k in t if not k.startswith("blk.")}
  return _write(path, "llama", kv, t), {
    k: v.astype(np.float32) for k, v in hf.items()
  }


def test_tiny_llama_with_untied_head_and_linear_rope_scaling(tiny_llama):
  path, hf = tiny_llama
  config, params, _ = lm.load_gguf(path)
  assert not config.tie_embeddings and config.rope_scale == 4.0
  np.testing.assert_array_equal(
    np.asarray(params["unembed"]), hf["output.weight"]
  )
  layers = [
    {
      k: hf[f"blk.{l}.{n}.weight"]
      for k, n in dict(
        q="attn_q",
        k="attn_k",
        v="attn_v",
        o="attn_output",
        gate="ffn_gate",
        up="ffn_up",
        down="ffn_down",
        attn_norm="attn_norm",
        ffn_norm="ffn_norm",
      ).items()
    }
    for l in range(config.n_layers)
  ]
  w = dict(
    embed=hf["token_embd.weight"],
    layers=layers,
    final_norm=hf["output_norm.weight"],
    unembed=hf["output.weight"],
  )
  want = np_forward(w, config, TOKENS)
  logits, _, _ = lm.forward(params, np.array([TOKENS]), config=config)
  np.testing.assert_allclose(np.asarray(logits[0]), want, rtol=2e-4, atol=2e-4)
  # the scaling matters: without it the positions rotate 4x faster
  unscaled = np_forward(
    w, config.__class__(**{**config.__dict__, "rope_scale": 1.0}), TOKENS
  )
  assert np.abs(unscaled - want).max() > 1e-2
