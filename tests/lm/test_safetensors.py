"""Hugging Face checkpoints (config.json + safetensors + tokenizer.json) written
here.

The files are written by a writer of the format in this test (not the loader's
reader); the loaded model's logits are compared with the float64 NumPy forward
of tests/lm/numpy_ref.py fed the checkpoint's own [out, in] matrices in the
Hugging Face (rotate-half) layout, with Gemma's (1 + w) norm gains. Wrong norm
names, a missing +1, the interleaved RoPE layout, a dropped q/k norm or a
misread query scale all change the logits.
"""

import json
import struct

import ml_dtypes
import numpy as np
import pytest

from jaxpapers import lm
from tests.lm.numpy_ref import np_forward

tokenizers = pytest.importorskip("tokenizers")

V, D, H, KV, DH, F = 40, 32, 4, 2, 16, 48  # head_dim 16 != d / H = 8
# the test model's shape under its Hugging Face config.json names
HF_SHAPE = dict(
  hidden_size=D,
  num_attention_heads=H,
  num_key_value_heads=KV,
  head_dim=DH,
  intermediate_size=F,
  vocab_size=V,
)
TOKENS = [1, 5, 9, 3, 7, 12, 30, 2, 8, 11]
_CODES = {
  np.dtype("<f4"): "F32",
  np.dtype("<f2"): "F16",
  np.dtype(ml_dtypes.bfloat16): "BF16",
  np.dtype("<i8"): "I64",
}


def write_safetensors(path, tensors, metadata=None):
  header, blobs, off = {}, [], 0
  for name, a in tensors.items():
    b = np.ascontiguousarray(a).tobytes()
    header[name] = {
      "dtype": _CODES[a.dtype],
      "shape": list(a.shape),
      "data_offsets": [off, off + len(b)],
    }
    blobs.append(b)
    off += len(b)
  if metadata:
    header["__metadata__"] = metadata
  h = json.dumps(header).encode()
  h += b" " * (-len(h) % 8)
  path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))
  return path


def _write_tokenizer(d):
  from tokenizers import models, pre_tokenizers

  vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2} | {
    f"w{i}": i for i in range(3, V)
  }
  tok = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  tok.add_special_tokens(["<pad>", "<bos>", "<eos>"])
  tok.save(str(d / "tokenizer.json"))
  cfg = {
    "bos_token": "<bos>",
    "eos_token": {"content": "<eos>"},
    "add_bos_token": True,
  }
  (d / "tokenizer_config.json").write_text(json.dumps(cfg))


def _hf_tensors(rng, L, kind, prefix="model."):
  """Random checkpoint tensors (float32) with Hugging Face names for `kind`."""
  n = lambda *s: rng.normal(size=s).astype(np.float32)
  t = {
    prefix + "embed_tokens.weight": 0.5 * n(V, D),
    prefix + "norm.weight": 0.2 * n(D),
  }
  for l in range(L):
    b = f"{prefix}layers.{l}."
    t |= {
      b + "self_attn.q_proj.weight": 0.3 * n(H * DH, D),
      b + "self_attn.k_proj.weight": 0.3 * n(KV * DH, D),
      b + "self_attn.v_proj.weight": 0.3 * n(KV * DH, D),
      b + "self_attn.o_proj.weight": 0.2 * n(D, H * DH),
      b + "mlp.gate_proj.weight": 0.2 * n(F, D),
      b + "mlp.up_proj.weight": 0.2 * n(F, D),
      b + "mlp.down_proj.weight": 0.2 * n(D, F),
      b + "input_layernorm.weight": 0.2 * n(D),
      b + "post_attention_layernorm.weight": 0.2 * n(D),
    }
    if kind in ("qwen3", "gemma"):
      t |= {
        b + "self_attn.q_norm.weight": 0.2 * n(DH),
        b + "self_attn.k_norm.weight": 0.2 * n(DH),
      }
    if kind == "gemma":
      t |= {
        b + "pre_feedforward_layernorm.weight": 0.2 * n(D),
        b + "post_feedforward_layernorm.weight": 0.2 * n(D),
      }
  # Llama/Qwen gains are stored as they multiply: centre them on 1
  if kind != "gemma":
    t = {k: v + 1 if k.endswith("norm.weight") else v for k, v in t.items()}
  return t


def _reference_weights(t, L, kind, prefix="model.", untied=False):
  """numpy_ref's layout from the checkpoint tensors (float64; Gemma norms as 1 +
  w)."""
  g = (lambda a: 1.0 + a) if kind == "gemma" else (lambda a: a)
  f = lambda k: np.asarray(t[prefix + k], np.float64)
  layers = []
  for l in range(L):
    b = f"layers.{l}."
    lay = dict(
      q=f(b + "self_attn.q_proj.weight"),
      k=f(b + "self_attn.k_proj.weight"),
      v=f(b + "self_attn.v_proj.weight"),
      o=f(b + "self_attn.o_proj.weight"),
      gate=f(b + "mlp.gate_proj.weight"),
      up=f(b + "mlp.up_proj.weight"),
      down=f(b + "mlp.down_proj.weight"),
      attn_norm=g(f(b + "input_layernorm.weight")),
    )
    if kind == "gemma":
      lay |= dict(
        ffn_norm=g(f(b + "pre_feedforward_layernorm.weight")),
        post_attn_norm=g(f(b + "post_attention_layernorm.weight")),
        post_ffn_norm=g(f(b + "post_feedforward_layernorm.weight")),
      )
    else:
      lay["ffn_norm"] = f(b + "post_attention_layernorm.weight")
    if kind in ("qwen3", "gemma"):
      lay |= dict(
        q_norm=g(f(b + "self_attn.q_norm.weight")),
        k_norm=g(f(b + "self_attn.k_norm.weight")),
      )
    layers.append(lay)
  emb = f("embed_tokens.weight")
  unemb = np.asarray(t["lm_head.weight"], np.float64) if untied else emb
  return dict(
    embed=emb, layers=layers, final_norm=g(f("norm.weight")), unembed=unemb
  )


def _checkpoint(d, config, tensors):
  d.mkdir(parents=True, exist_ok=True)
  (d / "config.json").write_text(json.dumps(config))
  _write_tokenizer(d)
  return write_safetensors(d / "model.safetensors", tensors)


def _logits(path):
  config, params, tok = lm.load_safetensors(path)
  logits = lm.forward(params, np.array([TOKENS]), config=config)[0]
  return config, np.asarray(logits[0], np.float64), tok


GEMMA_CFG = dict(
  model_type="gemma3_text",
  **HF_SHAPE,
  num_hidden_layers=6,
  rms_norm_eps=1e-6,
  rope_theta=1e6,
  rope_local_base_freq=1e4,
  rope_scaling={"rope_type": "linear", "factor": 2.0},
  sliding_window=3,
  layer_types=["sliding_attention", "full_attention"]
  + ["sliding_attention"] * 3
  + ["full_attention"],
  query_pre_attn_scalar=64,
  final_logit_softcapping=4.0,
  hidden_activation="gelu_pytorch_tanh",
  bos_token_id=1,
  eos_token_id=[2, 39],
)


def test_gemma3_text_checkpoint_matches_the_float64_forward(tmp_path):
  t = _hf_tensors(np.random.default_rng(0), 6, "gemma")
  _checkpoint(tmp_path, GEMMA_CFG, t)
  config, got, tok = _logits(tmp_path)
  assert (
    config.arch == "gemma3"
    and config.rope_layout == "neox"
    and config.tie_embeddings
  )
  assert config.layer_is_global == (False, True, False, False, False, True)
  assert (config.sliding_window, config.rope_base, config.rope_base_local) == (
    3,
    1e6,
    1e4,
  )
  assert (
    config.query_scale == pytest.approx(64**-0.5) and config.rope_scale == 2.0
  )
  assert (
    config.embed_scale == pytest.approx(D**0.5)
    and config.final_logit_softcap == 4.0
  )
  assert config.eos_ids == (2, 39) and config.norm_eps == 1e-6
  raw = np_forward(_reference_weights(t, 6, "gemma"), config, TOKENS)
  assert np.abs(raw).max() > 4.0  # the soft-cap is active
  want = 4.0 * np.tanh(raw / 4.0)
  np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
  assert tok.encode("w3 w4") == [1, 3, 4] and (tok.bos_id, tok.eos_id) == (1, 2)
  # the multimodal layout: the text config nested, tensors under
  # language_model.model. (its image half is skipped; any other unknown tensor
  # is never dropped silently)
  t2 = _hf_tensors(
    np.random.default_rng(0), 6, "gemma", prefix=("language_model.model.")
  )
  t2["vision_tower.patch_embedding.weight"] = np.zeros((2, 2), np.float32)
  t2["multi_modal_projector.mm_input_projection_weight"] = np.zeros(
    (2, 2), np.float32
  )
  wrapped = {
    "model_type": "gemma3",
    "text_config": {k: v for k, v in GEMMA_CFG.items() if k != "model_type"},
  }
  _checkpoint(tmp_path / "mm", wrapped, t2)
  np.testing.assert_allclose(
    _logits(tmp_path / "mm")[1], want, rtol=2e-4, atol=2e-4
  )
  t2["language_model.model.layers.0.self_attn.q_proj.bias"] = np.zeros(
    H * DH, np.float32
  )
  write_safetensors(tmp_path / "mm" / "model.safetensors", t2)
  with pytest.raises(NotImplementedError, match="q_proj.bias"):
    lm.load_safetensors(tmp_path / "mm")
  # a text-only checkpoint with a vision tower is not what its config says
  t["vision_tower.patch_embedding.weight"] = np.zeros((2, 2), np.float32)
  write_safetensors(tmp_path / "model.safetensors", t)
  with pytest.raises(NotImplementedError, match="vision_tower"):
    lm.load_safetensors(tmp_path)


def test_qwen3_checkpoint_untied_with_qk_norm(tmp_path):
  rng = np.random.default_rng(1)
  t = _hf_tensors(rng, 2, "qwen3")
  t["lm_head.weight"] = 0.5 * rng.normal(size=(V, D)).astype(np.float32)
  cfg = dict(
    model_type="qwen3",
    **HF_SHAPE,
    num_hidden_layers=2,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
    tie_word_embeddings=False,
    hidden_act="silu",
  )
  _checkpoint(tmp_path, cfg, t)
  config, got, _ = _logits(tmp_path)
  assert (
    config.qk_norm and not config.tie_embeddings and config.rope_base == 1e6
  )
  want = np_forward(
    _reference_weights(t, 2, "qwen3", untied=True), config, TOKENS
  )
  np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_llama_bf16_sharded_checkpoint_with_linear_rope_scaling(tmp_path):
  t = _hf_tensors(np.random.default_rng(2), 2, "llama")
  t = {k: v.astype(ml_dtypes.bfloat16) for k, v in t.items()}
  cfg = dict(
    model_type="llama",
    **HF_SHAPE,
    num_hidden_layers=2,
    rms_norm_eps=1e-5,
    rope_theta=100.0,
    rope_scaling={"type": "linear", "factor": 4.0},
    tie_word_embeddings=True,
    torch_dtype="bfloat16",
  )
  tmp_path.joinpath("config.json").write_text(json.dumps(cfg))
  _write_tokenizer(tmp_path)
  names = sorted(t)
  shards = {
    "model-00001-of-00002.safetensors": names[::2],
    "model-00002-of-00002.safetensors": names[1::2],
  }
  for f, ks in shards.items():
    write_safetensors(tmp_path / f, {k: t[k] for k in ks})
  index = {"weight_map": {k: f for f, ks in shards.items() for k in ks}}
  (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
  config, got, _ = _logits(tmp_path)
  assert (
    config.rope_scale == 4.0
    and not config.qk_norm
    and config.rope_layout == "neox"
  )
  want = np_forward(_reference_weights(t, 2, "llama"), config, TOKENS)
  np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_reader_round_trips_dtypes_and_names_the_broken_tensor(tmp_path):
  rng = np.random.default_rng(3)
  src = {
    "a": rng.normal(size=(3, 4)).astype(np.float32),
    "b": rng.normal(size=(5,)).astype(np.float16),
    "c": rng.normal(size=(2, 2)).astype(ml_dtypes.bfloat16),
    "d": np.arange(6, dtype=np.int64).reshape(2, 3),
  }
  p = write_safetensors(
    tmp_path / "x.safetensors", src, metadata={"format": ("pt")}
  )
  got = lm.read_safetensors(p)
  assert set(got) == set(src)
  for k in src:
    assert got[k].dtype == src[k].dtype and got[k].shape == src[k].shape
    np.testing.assert_array_equal(got[k], src[k])
  raw = p.read_bytes()
  cut = tmp_path / "cut.safetensors"
  cut.write_bytes(raw[:-4])
  with pytest.raises(ValueError, match=r"cut\.safetensors.*'d'.*truncated"):
    lm.read_safetensors(cut)
  cut.write_bytes(raw[:12])
  with pytest.raises(ValueError, match="header length"):
    lm.read_safetensors(cut)
  bad = tmp_path / "bad.safetensors"
  h = json.dumps(
    {"x": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}
  ).encode()
  bad.write_bytes(struct.pack("<Q", len(h)) + h + b"\0")
  with pytest.raises(NotImplementedError, match="'x'.*F8_E4M3"):
    lm.read_safetensors(bad)


def test_bad_checkpoints_raise_naming_the_problem(tmp_path):
  rng = np.random.default_rng(4)
  base = dict(
    model_type="llama",
    **HF_SHAPE,
    num_hidden_layers=2,
  )
  with pytest.raises(FileNotFoundError, match="config.json"):
    lm.load_safetensors(tmp_path)
  with pytest.raises(NotImplementedError, match="'mistral'"):
    lm.config_from_hf(base | {"model_type": "mistral"})
  with pytest.raises(NotImplementedError, match="attention_bias"):
    lm.config_from_hf(base | {"attention_bias": True})
  with pytest.raises(NotImplementedError, match="'llama3'"):
    lm.config_from_hf(
      base | {"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    )
  with pytest.raises(ValueError, match="'intermediate_size'"):
    lm.config_from_hf(
      {k: v for k, v in base.items() if k != "intermediate_size"}
    )
  t = _hf_tensors(rng, 2, "llama")
  with pytest.raises(ValueError, match="lm_head"):  # Llama's default: untied
    _checkpoint(tmp_path / "untied", base, t) and lm.load_safetensors(
      tmp_path / "untied"
    )
  t["model.layers.0.self_attn.q_proj.bias"] = np.zeros(H * DH, np.float32)
  _checkpoint(tmp_path / "bias", base | {"tie_word_embeddings": True}, t)
  with pytest.raises(NotImplementedError, match="q_proj.bias"):
    lm.load_safetensors(tmp_path / "bias")


_TINY_LLAMA = dict(
  model_type="llama",
  **HF_SHAPE,
  num_hidden_layers=1,
  tie_word_embeddings=True,
)


def _sharded(d, shard_dir=None):
  """A 1-layer Llama checkpoint in ``d`` whose two shards are written to
  ``shard_dir``.

  Returns the two shard paths; the caller writes the index naming them.
  """
  d.mkdir(parents=True, exist_ok=True)
  (d / "config.json").write_text(json.dumps(_TINY_LLAMA))
  _write_tokenizer(d)
  t = _hf_tensors(np.random.default_rng(5), 1, "llama")
  names = sorted(t)
  shard_dir = shard_dir or d
  shard_dir.mkdir(parents=True, exist_ok=True)
  a = write_safetensors(
    shard_dir / "model-00001-of-00002.safetensors",
    {k: t[k] for k in names[::2]},
  )
  b = write_safetensors(
    shard_dir / "model-00002-of-00002.safetensors",
    {k: t[k] for k in names[1::2]},
  )
  return t, names, a, b


def _index(d, names, first, second):
  wm = {k: (first if i % 2 == 0 else second) for i, k in enumerate(names)}
  (d / "model.safetensors.index.json").write_text(
    json.dumps({"weight_map": wm})
  )


def test_index_shard_names_cannot_leave_the_checkpoint(tmp_path):
  """'..' and absolute shard names, and shards linked to files outside, are
  refused."""
  ckpt, outside = tmp_path / "ckpt", tmp_path / "outside"
  _, names, a, b = _sharded(ckpt, outside)
  for first, pattern in (
    (
      f"../outside/{a.name}",
      r"must be a relative path inside .* without '\.\.'",
    ),
    (str(a), r"must be a relative path inside"),
  ):
    _index(ckpt, names, first, f"../outside/{b.name}")
    with pytest.raises(
      ValueError,
      match=r"shard file in model\.safetensors\.index\.json .*" + pattern,
    ):
      lm.load_safetensors(ckpt)
  (ckpt / a.name).symlink_to(a)
  (ckpt / b.name).symlink_to(b)
  _index(ckpt, names, a.name, b.name)
  with pytest.raises(
    ValueError, match=(r"leads outside .*\(through a symlink\)")
  ):
    lm.load_safetensors(ckpt)
  (ckpt / "config.json").rename(outside / "config.json")
  (ckpt / "config.json").symlink_to(outside / "config.json")
  with pytest.raises(
    ValueError, match=(r"config\.json 'config\.json' leads outside")
  ):
    lm.load_safetensors(ckpt)
  (ckpt / "model.safetensors.index.json").write_text(
    json.dumps({"weight_map": [a.name]})
  )
  (ckpt / "config.json").unlink()
  (ckpt / "config.json").write_text(json.dumps(_TINY_LLAMA))
  with pytest.raises(
    ValueError, match=("'weight_map' must map tensor names to shard file names")
  ):
    lm.load_safetensors(ckpt)


def test_a_hugging_face_cache_snapshot_loads_through_its_blob_links(tmp_path):
  """snapshots/<rev>/ files link to ../../blobs/<hash>: inside the model's cache
  folder."""
  repo = tmp_path / "hub" / "models--org--tiny"
  snap, blobs = repo / "snapshots" / "0123abc", repo / "blobs"
  plain = tmp_path / "plain"
  t, names, a, b = _sharded(plain)
  _index(plain, names, a.name, b.name)
  snap.mkdir(parents=True)
  blobs.mkdir()
  for i, f in enumerate(sorted(plain.iterdir())):
    (blobs / f"blob{i}").write_bytes(f.read_bytes())
    (snap / f.name).symlink_to(f"../../blobs/blob{i}")
  config, params, _ = lm.load_safetensors(snap)
  _, want, _ = lm.load_safetensors(plain)
  np.testing.assert_array_equal(
    np.asarray(params["embed"]), np.asarray(want["embed"])
  )
  # A link out of the model's cache folder is still refused.
  (snap / a.name).unlink()
  (snap / a.name).symlink_to(a)
  with pytest.raises(ValueError, match="leads outside"):
    lm.load_safetensors(snap)
