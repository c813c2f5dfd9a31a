"""Models and data of the SODA experiment: a digits MLP and a char-level LM.

Both models are Flax NNX modules kept functional at the jit boundary: the
experiment ``nnx.split``s them into a graph definition and a parameter
``nnx.State`` and trains many (hyperparameter, seed) runs side by side with
``jax.vmap``.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

# ------------------------------------------------------------------ digits --


def load_digits_split(num_train: int = 1000, seed: int = 0):
  """sklearn's bundled 8x8 digits, standardised; 1000 train / 797 test."""
  from sklearn.datasets import load_digits

  x, y = load_digits(return_X_y=True)
  perm = np.random.default_rng(seed).permutation(len(x))
  x, y = x[perm].astype(np.float32) / 16.0, y[perm].astype(np.int32)
  mean, std = x[:num_train].mean(0), x[:num_train].std(0) + 1e-3
  x = (x - mean) / std
  return (x[:num_train], y[:num_train]), (x[num_train:], y[num_train:])


class MLP(nnx.Module):
  """64 -> hidden -> hidden -> 10 with ReLU."""

  def __init__(self, hidden: int = 256, *, rngs: nnx.Rngs):
    self.fc1 = nnx.Linear(64, hidden, rngs=rngs)
    self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
    self.out = nnx.Linear(hidden, 10, rngs=rngs)

  def __call__(self, x):  # [B, 64] -> [B, 10]
    x = jax.nn.relu(self.fc1(x))
    x = jax.nn.relu(self.fc2(x))
    return self.out(x)


def mlp_hidden_mask(params) -> object:
  """True on the MLP's 2-D kernels other than the output layer (Muon's matrices)."""

  def is_hidden(path, x):
    names = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return x.ndim == 2 and "out" not in names

  return jax.tree_util.tree_map_with_path(is_hidden, params)


# ---------------------------------------------------------------- char LM --


def load_text(text_path: str = "") -> np.ndarray:
  """Bytes of a text as uint8 tokens (vocabulary 256).

  With ``text_path=''`` the text is the standard library's
  ``pydoc_data.topics`` (about 465k characters; no download).
  """
  if text_path:
    return np.frombuffer(pathlib.Path(text_path).read_bytes(), np.uint8)
  import pydoc_data.topics as topics

  text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
  return np.frombuffer(text.encode("utf-8"), np.uint8)


class Block(nnx.Module):
  """Pre-norm transformer block: causal self-attention and a GELU MLP."""

  def __init__(self, d: int, heads: int, *, rngs: nnx.Rngs):
    self.heads = heads
    self.ln1 = nnx.LayerNorm(d, rngs=rngs)
    self.qkv = nnx.Linear(d, 3 * d, use_bias=False, rngs=rngs)
    self.proj = nnx.Linear(d, d, use_bias=False, rngs=rngs, kernel_init=nnx.initializers.zeros)
    self.ln2 = nnx.LayerNorm(d, rngs=rngs)
    self.fc = nnx.Linear(d, 4 * d, use_bias=False, rngs=rngs)
    self.fc_out = nnx.Linear(
      4 * d, d, use_bias=False, rngs=rngs, kernel_init=nnx.initializers.zeros
    )

  def __call__(self, x):  # [B, T, d]
    b, t, d = x.shape
    h = self.heads
    q, k, v = jnp.split(self.qkv(self.ln1(x)), 3, axis=-1)
    q, k, v = (a.reshape(b, t, h, d // h) for a in (q, k, v))  # [B, T, H, dh]
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // h)
    mask = jnp.tril(jnp.ones((t, t), bool))
    att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
    y = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, d)
    x = x + self.proj(y)
    return x + self.fc_out(jax.nn.gelu(self.fc(self.ln2(x))))


class CharLM(nnx.Module):
  """Byte-level GPT: token + learned position embedding, blocks, untied head."""

  def __init__(
    self,
    *,
    vocab: int = 256,
    d: int = 64,
    layers: int = 2,
    heads: int = 4,
    context: int = 64,
    rngs: nnx.Rngs,
  ):
    self.embed = nnx.Embed(vocab, d, rngs=rngs)
    self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (context, d)))
    self.blocks = nnx.List([Block(d, heads, rngs=rngs) for _ in range(layers)])
    self.ln_f = nnx.LayerNorm(d, rngs=rngs)
    self.head = nnx.Linear(d, vocab, use_bias=False, rngs=rngs)

  def __call__(self, tokens):  # [B, T] int -> [B, T, vocab]
    x = self.embed(tokens) + self.pos[: tokens.shape[1]]
    for blk in self.blocks:
      x = blk(x)
    return self.head(self.ln_f(x))


def hidden_matrix_mask(params) -> object:
  """True on 2-D weights other than the embedding, positions and the head."""

  def is_hidden(path, x):
    names = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return x.ndim == 2 and not any(n in ("embed", "pos", "head") for n in names)

  return jax.tree_util.tree_map_with_path(is_hidden, params)
