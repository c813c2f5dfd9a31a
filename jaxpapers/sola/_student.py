"""A small decoder-only student LM as pure functions (cheap to compile under
vmap and scan)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

__all__ = ["StudentConfig", "init_student", "student_logits"]


@dataclasses.dataclass(frozen=True)
class StudentConfig:
  """Sizes of the student: vocabulary, width, layers, heads, MLP width, max
  length.

  Attributes:
    vocab_size: V, the student tokenizer's vocabulary size.
    d_model: width (a multiple of ``n_heads``).
    n_layers: transformer layers L.
    n_heads: attention heads.
    ffn_dim: MLP hidden width.
    max_len: longest sequence (learned positions).
  """

  vocab_size: int
  d_model: int = 128
  n_layers: int = 2
  n_heads: int = 4
  ffn_dim: int = 384
  max_len: int = 128

  def __post_init__(self):
    for f in dataclasses.fields(self):
      V.check_int(getattr(self, f.name), f.name, min_value=1)
    if self.d_model % self.n_heads:
      raise ValueError(
        f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}"
      )


def init_student(key: jax.Array, cfg: StudentConfig) -> dict[str, jax.Array]:
  """Parameters (normal(0, 0.02); output projections scaled by 1/sqrt(2L); tied
  unembedding).

  Args:
    key: a ``jax.random.key``.
    cfg: the student's sizes.

  Returns:
    float32 arrays: ``embed [V, d]``, ``pos [max_len, d]``, per-layer
    ``qkv [L, d, 3d]``, ``wo [L, d, d]``, ``w_up [L, d, ffn]``,
    ``w_down [L, ffn, d]``, ``norm1``/``norm2 [L, d]`` and ``norm_f [d]``.
  """
  if not isinstance(cfg, StudentConfig):
    raise TypeError(f"cfg must be a StudentConfig, got {type(cfg).__name__}")
  d, f, L = cfg.d_model, cfg.ffn_dim, cfg.n_layers
  ks = jax.random.split(key, 6)
  n = lambda k, s, sc=0.02: sc * jax.random.normal(k, s, jnp.float32)
  out = 0.02 / math.sqrt(2 * L)
  return {
    "embed": n(ks[0], (cfg.vocab_size, d)),
    "pos": n(ks[1], (cfg.max_len, d)),
    "qkv": n(ks[2], (L, d, 3 * d)),
    "wo": n(ks[3], (L, d, d), out),
    "w_up": n(ks[4], (L, d, f)),
    "w_down": n(ks[5], (L, f, d), out),
    "norm1": jnp.ones((L, d)),
    "norm2": jnp.ones((L, d)),
    "norm_f": jnp.ones((d,)),
  }


def _rms(x, g):
  return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g


def student_logits(
  params: dict[str, jax.Array], tokens: ArrayLike, cfg: StudentConfig
) -> jax.Array:
  """Causal LM logits.

  Args:
    params: from :func:`init_student`.
    tokens: int [B, T] with T <= cfg.max_len.
    cfg: the :class:`StudentConfig`.

  Returns:
    float32 [B, T, V]; position p predicts token p + 1.
  """
  tokens = V.check_array(tokens, "tokens", dtype="int", ndim=2)
  b, t = tokens.shape
  if t > cfg.max_len:
    raise ValueError(
      f"tokens must have at most max_len={cfg.max_len} positions, got {t}"
    )
  h, dh = cfg.n_heads, cfg.d_model // cfg.n_heads
  x = params["embed"][tokens] + params["pos"][:t]
  causal = jnp.tril(jnp.ones((t, t), bool))

  def layer(x, p):
    y = _rms(x, p["norm1"])
    q, k, v = jnp.split(y @ p["qkv"], 3, -1)
    q, k, v = (z.reshape(b, t, h, dh) for z in (q, k, v))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    a = jax.nn.softmax(jnp.where(causal, s, -1e9), -1)
    x = x + jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, -1) @ p["wo"]
    y = _rms(x, p["norm2"])
    return x + jax.nn.gelu(y @ p["w_up"]) @ p["w_down"], None

  keys = ("qkv", "wo", "w_up", "w_down", "norm1", "norm2")
  x, _ = jax.lax.scan(layer, x, {k: params[k] for k in keys})
  return _rms(x, params["norm_f"]) @ params["embed"].T
