"""Load Hugging Face checkpoints (config.json + safetensors) into `jaxpapers.lm`
parameters.

The GGUF path (`load_gguf`) covers the quantised files shipped as Python
packages; this path covers full-precision checkpoints a user has on disk (e.g.
Qwen3-8B on a GPU host), for the same architectures: Llama ('llama'), Qwen3
('qwen3': Llama plus per-head q/k RMSNorm) and Gemma-3 text ('gemma3_text', or
the text half of a 'gemma3' checkpoint). Nothing is downloaded.

The safetensors format is read directly (no extra dependency): an 8-byte
little-endian header length N, N bytes of JSON mapping each tensor name to
{dtype, shape, data_offsets} (offsets relative to the end of the header), then
the raw little-endian bytes. Tensors are memory-mapped and converted one at a
time.

Layout differences from GGUF, handled here: Hugging Face Q/K rows are in the
rotate-half ("neox") order, so the config uses `rope_layout='neox'` and no row
permutation is needed; Gemma's RMSNorm multiplies by (1 + w) and checkpoints
store w, so 1 is added to every Gemma norm gain (the GGUF converter does the
same); Llama's `post_attention_layernorm` is the pre-MLP norm, Gemma-3's is the
post-attention norm (its pre-MLP norm is `pre_feedforward_layernorm`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import struct
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.typing import DTypeLike

from jaxpapers.core import validation as V
from jaxpapers.core.data import resolve_inside
from jaxpapers.lm._config import LMConfig
from jaxpapers.lm._gguf import (
  linear_rope_scale,
  params_from_gguf_tensors,
  periodic_global_layers,
)
from jaxpapers.lm._model import Params
from jaxpapers.lm._tokenizer import Tokenizer, _require_tokenizers

_DTYPES = {
  "F64": np.dtype("<f8"),
  "F32": np.dtype("<f4"),
  "F16": np.dtype("<f2"),
  "BF16": np.dtype(ml_dtypes.bfloat16),
  "I64": np.dtype("<i8"),
  "I32": np.dtype("<i4"),
  "I16": np.dtype("<i2"),
  "I8": np.dtype("i1"),
  "U8": np.dtype("u1"),
  "BOOL": np.dtype("?"),
}
_MAX_HEADER = 100 * 2**20  # the format's own limit on the JSON header


def read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
  """Every tensor of one .safetensors file, as read-only memory-mapped numpy
  arrays.

  Args:
    path: the `.safetensors` file.

  Returns:
    A dict from tensor name to its array, in the file's dtype and shape (BF16 as
    `ml_dtypes.bfloat16`).

  Raises:
    FileNotFoundError: no file at `path`.
    ValueError: a truncated or malformed file, naming the file and, where it
      applies, the tensor (header length beyond the file, bad JSON, a tensor
      whose byte range leaves the file or does not match its dtype and shape).
    NotImplementedError: a dtype outside
      F64/F32/F16/BF16/I64/I32/I16/I8/U8/BOOL.
  """
  path = pathlib.Path(V.check_path(path, "path"))
  if not path.is_file():
    raise FileNotFoundError(f"no safetensors file at {path}")
  size = path.stat().st_size
  with open(path, "rb") as f:
    head = f.read(8)
    if len(head) < 8:
      raise ValueError(
        f"{path}: truncated safetensors file ({size} bytes, no header length)"
      )
    (n,) = struct.unpack("<Q", head)
    if n > _MAX_HEADER or 8 + n > size:
      raise ValueError(
        f"{path}: header length {n} exceeds the file ({size} bytes): truncated?"
      )
    try:
      header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
      raise ValueError(
        f"{path}: the safetensors header is not valid JSON ({e})"
      ) from None
  if not isinstance(header, dict):
    raise ValueError(f"{path}: the safetensors header must be a JSON object")
  base = 8 + n
  data = (
    np.memmap(path, dtype=np.uint8, mode="r")
    if size > base
    else np.zeros(0, np.uint8)
  )
  out = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    try:
      kind, shape, (start, end) = (
        info["dtype"],
        tuple(info["shape"]),
        info["data_offsets"],
      )
    except (KeyError, TypeError, ValueError):
      raise ValueError(
        f"{path}: tensor {name!r} needs 'dtype', 'shape' and 'data_offsets', "
        f"got {info!r}"
      ) from None
    if kind not in _DTYPES:
      raise NotImplementedError(
        f"{path}: tensor {name!r} has unsupported dtype {kind!r}"
      )
    dt = _DTYPES[kind]
    count = math.prod(shape)
    if not (0 <= start <= end and base + end <= size):
      raise ValueError(
        f"{path}: tensor {name!r} spans bytes [{start}, {end}) past the data "
        f"({size - base} bytes): truncated file?"
      )
    if end - start != count * dt.itemsize:
      raise ValueError(
        f"{path}: tensor {name!r} has {end - start} bytes, "
        f"but {kind} {list(shape)} needs {count * dt.itemsize}"
      )
    out[name] = data[base + start : base + end].view(dt).reshape(shape)
  return out


# the image half of a multimodal Gemma-3 checkpoint, which a text model does not
# use
_VISION_PREFIXES = (
  "vision_tower.",
  "multi_modal_projector.",
  "model.vision_tower.",
  "model.multi_modal_projector.",
)


def _text_config(cfg: dict) -> tuple[dict, tuple[str, ...], tuple[str, ...]]:
  """The language model's config, its tensor-name prefixes, and prefixes to
  skip."""
  if cfg.get("model_type") == "gemma3" and "text_config" in cfg:
    text = dict(cfg["text_config"], model_type="gemma3_text")
    return (
      text,
      ("language_model.model.", "model.language_model."),
      _VISION_PREFIXES,
    )
  return cfg, ("model.",), ()


def _rope_scale_hf(rs, model_type: str) -> float:
  rs = rs or {}
  kind = rs.get("rope_type", rs.get("type", "default"))
  return linear_rope_scale(
    kind, rs.get("factor", 1.0), f"{model_type} rope_scaling type"
  )


def config_from_hf(cfg: dict) -> LMConfig:
  """The `LMConfig` of a Hugging Face `config.json` ('llama', 'qwen3',
  'gemma3_text'/'gemma3').

  Llama / Qwen3: SwiGLU ('silu'), RoPE base `rope_theta` in the rotate-half
  layout, optional linear RoPE scaling, `tie_word_embeddings` (Hugging Face's
  default for both: False); Qwen3 adds the per-head q/k RMSNorm. Gemma-3: GeGLU
  with tanh GELU, q/k norms, post-attention and post-MLP norms, embedding scale
  sqrt(d), query scale `query_pre_attn_scalar`^-1/2, local layers from
  `layer_types` ('sliding_attention') or every layer but each
  `sliding_window_pattern`-th, local RoPE base `rope_local_base_freq`, linear
  RoPE scaling on global layers, optional final logit soft-capping; tied
  embeddings by default.

  Args:
    cfg: the parsed `config.json`.

  Returns:
    The `LMConfig`.

  Raises:
    ValueError: a required field is missing (naming it) or has an unsupported
      value.
    NotImplementedError: another architecture, attention/MLP biases, other RoPE
      scaling.
  """
  if not isinstance(cfg, dict):
    raise TypeError(
      f"cfg must be the dict of a config.json, got {type(cfg).__name__}"
    )
  cfg = _text_config(cfg)[0]
  mt = cfg.get("model_type")
  if mt not in ("llama", "qwen3", "gemma3_text"):
    raise NotImplementedError(
      f"config.json model_type {mt!r} is not supported (only 'llama', 'qwen3', "
      "'gemma3_text' and 'gemma3')"
    )
  for flag in ("attention_bias", "mlp_bias"):
    if cfg.get(flag):
      raise NotImplementedError(
        f"{mt} checkpoints with {flag}=true are not supported"
      )
  try:
    d, L, H = (
      int(cfg["hidden_size"]),
      int(cfg["num_hidden_layers"]),
      cfg["num_attention_heads"],
    )
    F, V_ = int(cfg["intermediate_size"]), int(cfg["vocab_size"])
  except KeyError as e:
    raise ValueError(
      f"config.json lacks the required field {e.args[0]!r}"
    ) from None
  H = int(H)
  KV = int(cfg.get("num_key_value_heads") or H)
  dh = int(cfg.get("head_dim") or d // H)
  eos = cfg.get("eos_token_id")
  eos_ids = tuple(
    int(e)
    for e in (
      eos if isinstance(eos, list) else [eos] if eos is not None else []
    )
  )
  gemma = mt == "gemma3_text"
  act = cfg.get(
    "hidden_activation" if gemma else "hidden_act",
    "gelu_pytorch_tanh" if gemma else "silu",
  )
  want = "gelu_pytorch_tanh" if gemma else "silu"
  if act != want:
    raise NotImplementedError(
      f"{mt} with activation {act!r} is not supported (only {want!r})"
    )
  common: dict[str, Any] = dict(
    arch="gemma3" if gemma else mt,
    vocab_size=V_,
    d_model=d,
    n_layers=L,
    n_heads=H,
    n_kv_heads=KV,
    head_dim=dh,
    ffn_dim=F,
    norm_eps=float(cfg.get("rms_norm_eps", 1e-6 if gemma else 1e-5)),
    rope_scale=_rope_scale_hf(cfg.get("rope_scaling"), mt),
    rope_layout="neox",
    tie_embeddings=bool(cfg.get("tie_word_embeddings", gemma)),
    bos_id=cfg.get("bos_token_id"),
    eos_ids=eos_ids,
  )
  if not gemma:
    return LMConfig(
      **common,
      act="silu",
      rope_base=float(cfg.get("rope_theta", 10000.0)),
      qk_norm=mt == "qwen3",
    )
  if cfg.get("layer_types"):
    types = list(cfg["layer_types"])
    if len(types) != L or not set(types) <= {
      "sliding_attention",
      "full_attention",
    }:
      raise ValueError(
        f"layer_types must list {L} of 'sliding_attention'/'full_attention', "
        f"got {types}"
      )
    is_global = tuple(t == "full_attention" for t in types)
  else:
    is_global = periodic_global_layers(
      int(cfg.get("sliding_window_pattern", 6)), L
    )
  softcap = cfg.get("final_logit_softcapping")
  return LMConfig(
    **common,
    act="gelu_tanh",
    rope_base=float(cfg.get("rope_theta", 1e6)),
    rope_base_local=float(cfg.get("rope_local_base_freq", 10000.0)),
    sliding_window=int(cfg.get("sliding_window", 4096)),
    layer_is_global=is_global,
    qk_norm=True,
    post_norms=True,
    embed_scale=math.sqrt(d),
    query_scale=float(cfg.get("query_pre_attn_scalar", dh)) ** -0.5,
    final_logit_softcap=float(softcap) if softcap else None,
  )


# Hugging Face layer tensor -> GGUF tensor (the names `params_from_gguf_tensors`
# reads)
_LAYER_NAMES = {
  "self_attn.q_proj.weight": "attn_q.weight",
  "self_attn.k_proj.weight": "attn_k.weight",
  "self_attn.v_proj.weight": "attn_v.weight",
  "self_attn.o_proj.weight": "attn_output.weight",
  "mlp.gate_proj.weight": "ffn_gate.weight",
  "mlp.up_proj.weight": "ffn_up.weight",
  "mlp.down_proj.weight": "ffn_down.weight",
  "input_layernorm.weight": "attn_norm.weight",
  "self_attn.q_norm.weight": "attn_q_norm.weight",
  "self_attn.k_norm.weight": "attn_k_norm.weight",
}
_LLAMA_NORMS = {"post_attention_layernorm.weight": "ffn_norm.weight"}
_GEMMA_NORMS = {
  "post_attention_layernorm.weight": "post_attention_norm.weight",
  "pre_feedforward_layernorm.weight": "ffn_norm.weight",
  "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}
_IGNORED = ("rotary_emb.inv_freq",)


def params_from_hf_tensors(
  tensors: dict[str, np.ndarray],
  config: LMConfig,
  *,
  dtype: DTypeLike = jnp.float32,
  prefixes: Sequence[str] = ("model.",),
  skip_prefixes: Sequence[str] = (),
) -> Params:
  """Convert Hugging Face tensors (names under one of `prefixes`, plus
  `lm_head.weight`).

  Every tensor must be used or fall under `skip_prefixes` (`load_safetensors`
  skips the vision tower and projector of a multimodal Gemma-3 checkpoint): one
  this loader does not know (a bias, a vision tower in a text-only checkpoint)
  raises instead of being dropped.

  Args:
    tensors: a dict from Hugging Face tensor name to array ([out, in] linear
      weights).
    config: the model's `LMConfig`.
    dtype: floating dtype of the parameters.
    prefixes: the name prefixes of the language model's tensors.
    skip_prefixes: name prefixes of tensors to leave out.

  Returns:
    The parameter dict, shapes as `param_shapes(config)`, in `dtype`.
  """
  if not isinstance(config, LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  gemma = config.arch == "gemma3"
  layer_names = _LAYER_NAMES | (_GEMMA_NORMS if gemma else _LLAMA_NORMS)
  out, unused = {}, []
  for name, a in tensors.items():
    if name.endswith(_IGNORED) or name.startswith(tuple(skip_prefixes)):
      continue
    if name == "lm_head.weight":
      out["output.weight"] = a
      continue
    pre = next((p for p in prefixes if name.startswith(p)), None)
    rest = name[len(pre) :] if pre is not None else None
    gg = None
    if rest == "embed_tokens.weight":
      gg = "token_embd.weight"
    elif rest == "norm.weight":
      gg = "output_norm.weight"
    elif rest is not None and rest.startswith("layers."):
      idx, _, tail = rest[len("layers.") :].partition(".")
      if idx.isdigit() and int(idx) < config.n_layers and tail in layer_names:
        gg = f"blk.{int(idx)}.{layer_names[tail]}"
    if gg is None:
      unused.append(name)
      continue
    # Gemma's RMSNorm multiplies by (1 + w)
    if gemma and gg.endswith("norm.weight"):
      a = np.asarray(a, np.float32) + 1.0
    out[gg] = a
  if unused:
    raise NotImplementedError(
      f"{len(unused)} checkpoint tensor(s) this loader does not use, e.g. "
      f"{unused[:3]} (expected names under {prefixes} for a {config.arch!r} "
      "model)"
    )
  if config.tie_embeddings and "output.weight" in out:
    head = out.pop("output.weight")
    if not np.array_equal(
      np.asarray(head), np.asarray(out.get("token_embd.weight"))
    ):
      raise ValueError(
        "config.json ties the embeddings but lm_head.weight differs from "
        "embed_tokens.weight"
      )
  if not config.tie_embeddings and "output.weight" not in out:
    raise ValueError(
      "config.json unties the embeddings (tie_word_embeddings=false) but no "
      "lm_head.weight is in the checkpoint"
    )
  return params_from_gguf_tensors(out, config, dtype=dtype)


def _checkpoint_fence(path: pathlib.Path) -> pathlib.Path:
  """The folder every file of checkpoint ``path`` must resolve into.

  The checkpoint folder itself; for a Hugging Face cache snapshot
  (``<cache>/models--<org>--<name>/snapshots/<revision>/``), whose files are
  symlinks to ``../../blobs/<hash>``, the model's cache folder
  ``models--<org>--<name>`` that holds both.
  """
  real = path.resolve()
  if (
    real.parent.name == "snapshots" and (real.parent.parent / "blobs").is_dir()
  ):
    return real.parent.parent
  return real


def _member(path: pathlib.Path, name, what: str) -> pathlib.Path:
  """``path / name`` for a file of the checkpoint, refused when it leaves the
  checkpoint."""
  return resolve_inside(path, name, name=what, within=_checkpoint_fence(path))


def _tokenizer_from_dir(path: pathlib.Path, cfg: dict) -> Tokenizer:
  tk = _require_tokenizers()
  tj = _member(path, "tokenizer.json", "tokenizer.json")
  if not tj.is_file():
    raise FileNotFoundError(f"no tokenizer.json in {path}")
  tok = tk.Tokenizer.from_file(str(tj))
  tc = {}
  tcj = _member(path, "tokenizer_config.json", "tokenizer_config.json")
  if tcj.is_file():
    tc = json.loads(tcj.read_text())

  def tid(key: str, fallback: int | None) -> int | None:
    t = tc.get(key)
    if isinstance(t, dict):
      t = t.get("content")
    i = tok.token_to_id(t) if isinstance(t, str) else None
    return i if i is not None else fallback

  eos = cfg.get("eos_token_id")
  if isinstance(eos, list):  # several EOS ids: the first (none: no EOS)
    eos = eos[0] if eos else None
  special = [
    a.content for a in tok.get_added_tokens_decoder().values() if a.special
  ]
  return Tokenizer(
    tok,
    bos_id=tid("bos_token", cfg.get("bos_token_id")),
    eos_id=tid("eos_token", eos),
    add_bos=bool(tc.get("add_bos_token", False)),
    chat_template=tc.get("chat_template")
    if isinstance(tc.get("chat_template"), str)
    else None,
    special_tokens=special,
  )


def load_safetensors(
  path: str | os.PathLike[str], *, dtype: DTypeLike = jnp.float32
) -> tuple[LMConfig, Params, Tokenizer]:
  """Load a Hugging Face checkpoint directory: (config, params, tokenizer).

  `path` holds `config.json`, `model.safetensors` (or the shards listed in
  `model.safetensors.index.json`), `tokenizer.json` and optionally
  `tokenizer_config.json` (BOS/EOS, `add_bos_token`, chat template).
  Architectures: see `config_from_hf`; of a multimodal Gemma-3 checkpoint only
  the language model is loaded. With `dtype=jnp.bfloat16` an 8B model takes
  about 16 GB of device memory.

  Every file read must lie inside `path`: a shard name in the index that is
  absolute or has `..` components, or a file that is a symlink pointing outside,
  raises `ValueError`. The one exception is a Hugging Face cache snapshot
  (`.../models--<org>--<name>/snapshots/<rev>/`), whose files may link to the
  model's `blobs/` folder beside `snapshots/`.

  Args:
    path: the checkpoint directory.
    dtype: floating dtype of the parameters.

  Returns:
    `(config, params, tokenizer)`: the `LMConfig`, the parameter dict in `dtype`
    and the `Tokenizer`.
  """
  path = pathlib.Path(V.check_path(path, "path"))
  if not path.is_dir():
    raise FileNotFoundError(f"path must be a checkpoint directory, got {path}")
  if not jnp.issubdtype(jnp.dtype(dtype), jnp.floating):
    raise TypeError(f"dtype must be a floating dtype, got {jnp.dtype(dtype)}")
  config_json = _member(path, "config.json", "config.json")
  if not config_json.is_file():
    raise FileNotFoundError(f"no config.json in {path}")
  raw = json.loads(config_json.read_text())
  config = config_from_hf(raw)
  text_cfg, prefixes, skip = _text_config(raw)
  index = _member(
    path, "model.safetensors.index.json", "model.safetensors.index.json"
  )
  if index.is_file():
    weight_map = json.loads(index.read_text()).get("weight_map")
    if not isinstance(weight_map, dict) or not all(
      isinstance(f, str) and f for f in weight_map.values()
    ):
      raise ValueError(
        f"{index}: 'weight_map' must map tensor names to shard file names "
        f"(non-empty strings), got {weight_map!r:.200}"
      )
    files = sorted(set(weight_map.values()))
  else:
    files = ["model.safetensors"]
  what = (
    f"shard file in {index.name}" if index.is_file() else "model.safetensors"
  )
  for f in files:  # every shard inside the checkpoint before any is read
    _member(path, f, what)
  if not index.is_file() and not (path / files[0]).is_file():
    raise FileNotFoundError(
      f"no model.safetensors or model.safetensors.index.json in {path}"
    )
  tensors = {}
  for f in files:
    tensors.update(read_safetensors(path / f))
  params = params_from_hf_tensors(
    tensors, config, dtype=dtype, prefixes=prefixes, skip_prefixes=skip
  )
  tok = _tokenizer_from_dir(path, text_cfg)
  if config.bos_id is None and tok.bos_id is not None:
    config = dataclasses.replace(config, bos_id=tok.bos_id)
  return config, params, tok
