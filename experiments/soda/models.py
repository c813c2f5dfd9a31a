"""The SODA experiment's models and data: a digits MLP and a byte- or token-level GPT, the
matrices Muon acts on, and each task's per-run functions (``digits_task``, ``lm_task``)."""

from __future__ import annotations

import math
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


def load_digits_split(num_train: int = 1000, seed: int = 0):
  """sklearn's 8x8 digits, shuffled, standardised by the training rows: ``((x [n, 64], y [n]),
  (x_test, y_test))``, the first ``num_train`` of 1797 rows for training."""
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

  def __call__(self, x: jax.Array) -> jax.Array:  # [B, 64] -> [B, 10]
    return self.out(jax.nn.relu(self.fc2(jax.nn.relu(self.fc1(x)))))


def _matrices_except(*names: str):
  """``params -> bool pytree``: True on 2-D leaves whose path names none of ``names``."""

  def mask(params):
    def hidden(path, x):
      keys = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
      return x.ndim == 2 and not any(n in keys for n in names)

    return jax.tree_util.tree_map_with_path(hidden, params)

  return mask


mlp_hidden_mask = _matrices_except("out")  # Muon's matrices: the MLP's hidden kernels
hidden_matrix_mask = _matrices_except("embed", "pos", "head")  # and the GPT's


def load_text(text_path: str = "") -> np.ndarray:
  """``uint8[n]`` bytes of a text file; ``''``: the standard library's pydoc topics."""
  if text_path:
    return np.frombuffer(pathlib.Path(text_path).read_bytes(), np.uint8)
  import pydoc_data.topics as topics

  text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
  return np.frombuffer(text.encode("utf-8"), np.uint8)


# Token shards of the reference run's FineWeb preprocessing (the llm.c layout): 256 int32
# (magic, version, number of tokens, zeros), then that many little-endian uint16 GPT-2 ids.
SHARD_MAGIC, SHARD_VERSION, SHARD_HEADER_INTS = 20240520, 1, 256


def read_token_shard(path) -> np.ndarray:
  """One shard as a read-only ``uint16[n]`` memory map; ValueError on a bad header or size."""
  path = pathlib.Path(path)
  header = np.fromfile(path, dtype="<i4", count=SHARD_HEADER_INTS)
  if header.size < 3 or header[0] != SHARD_MAGIC or header[1] != SHARD_VERSION:
    raise ValueError(
      f"{path}: not a token shard (expected a 256-int32 header starting with magic "
      f"{SHARD_MAGIC} and version {SHARD_VERSION}; got {header[:3].tolist()})."
    )
  n, offset = int(header[2]), 4 * SHARD_HEADER_INTS
  if path.stat().st_size < offset + 2 * n:
    raise ValueError(f"{path}: header says {n} tokens but the file is shorter.")
  return np.memmap(path, dtype="<u2", mode="r", offset=offset, shape=(n,))


def load_token_shards(data_dir, split: str, max_tokens: int = 0) -> np.ndarray:
  """The ``*{split}*.bin`` shards under ``data_dir`` joined in name order (``uint16[n]``); the
  first ``max_tokens`` only when > 0 (later shards are not read)."""
  files = sorted(pathlib.Path(data_dir).glob(f"*{split}*.bin"))
  if not files:
    raise FileNotFoundError(f"no '*{split}*.bin' token shards under {data_dir}.")
  parts, n = [], 0
  for f in files:
    tok = read_token_shard(f)
    if max_tokens:
      tok = tok[: max_tokens - n]
    parts.append(np.asarray(tok))
    n += len(tok)
    if max_tokens and n >= max_tokens:
      break
  return np.concatenate(parts)


class Block(nnx.Module):
  """Pre-norm transformer block: causal self-attention and a GELU MLP."""

  def __init__(self, d: int, heads: int, *, rngs: nnx.Rngs):
    self.heads = heads
    zeros = nnx.initializers.zeros
    self.ln1 = nnx.LayerNorm(d, rngs=rngs)
    self.qkv = nnx.Linear(d, 3 * d, use_bias=False, rngs=rngs)
    self.proj = nnx.Linear(d, d, use_bias=False, rngs=rngs, kernel_init=zeros)
    self.ln2 = nnx.LayerNorm(d, rngs=rngs)
    self.fc = nnx.Linear(d, 4 * d, use_bias=False, rngs=rngs)
    self.fc_out = nnx.Linear(4 * d, d, use_bias=False, rngs=rngs, kernel_init=zeros)

  def __call__(self, x: jax.Array) -> jax.Array:  # [B, T, d] -> [B, T, d]
    b, t, d = x.shape
    h = self.heads
    q, k, v = jnp.split(self.qkv(self.ln1(x)), 3, axis=-1)
    q, k, v = (a.reshape(b, t, h, d // h) for a in (q, k, v))  # [B, T, H, dh]
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // h)
    att = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -1e9), axis=-1)
    x = x + self.proj(jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, d))
    return x + self.fc_out(jax.nn.gelu(self.fc(self.ln2(x))))


class CharLM(nnx.Module):
  """GPT: token + learned position embedding, blocks, untied head."""

  def __init__(self, *, vocab=256, d=64, layers=2, heads=4, context=64, rngs: nnx.Rngs):
    self.embed = nnx.Embed(vocab, d, rngs=rngs)
    self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (context, d)))
    self.blocks = nnx.List([Block(d, heads, rngs=rngs) for _ in range(layers)])
    self.ln_f = nnx.LayerNorm(d, rngs=rngs)
    self.head = nnx.Linear(d, vocab, use_bias=False, rngs=rngs)

  def __call__(self, tokens: jax.Array) -> jax.Array:  # [B, T] int -> [B, T, vocab]
    x = self.embed(tokens) + self.pos[: tokens.shape[1]]
    for blk in self.blocks:
      x = blk(x)
    return self.head(self.ln_f(x))


def _nll(graphdef: Any, params: Any, x: jax.Array, y: jax.Array) -> jax.Array:
  logits = nnx.merge(graphdef, params)(x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def digits_task(cfg: Any) -> dict[str, Any]:
  """The digits task's ``init_params(key)``, ``loss_fn(params, batch)``, ``batch_fn(key)``
  (``batch_size`` rows with replacement), ``eval_fn(params, shard=...)`` (``[2]``: test accuracy
  and NLL), ``hidden_mask`` and ``trivial`` (class-prior NLL, majority accuracy)."""
  (xtr, ytr), (xte, yte) = map(
    lambda xy: tuple(map(jnp.asarray, xy)), load_digits_split(cfg.num_train, cfg.data_seed)
  )
  graphdef, _ = nnx.split(MLP(cfg.hidden, rngs=nnx.Rngs(0)))

  def batch_fn(key):
    idx = jax.random.randint(key, (cfg.batch_size,), 0, xtr.shape[0])
    return xtr[idx], ytr[idx]

  def eval_fn(params, shard=lambda t: t):  # [2]: accuracy, NLL
    logits = nnx.merge(graphdef, params)(shard(xte))
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, yte).mean()
    return jnp.stack([jnp.mean(jnp.argmax(logits, -1) == yte), nll])

  # Input-independent predictors: the training class frequencies (NLL) and the majority class.
  prior = np.bincount(np.asarray(ytr), minlength=10) / ytr.shape[0]
  trivial = {
    "class_prior_nll": float(-np.mean(np.log(prior[np.asarray(yte)]))),
    "majority_accuracy": float(np.mean(np.asarray(yte) == np.argmax(prior))),
  }
  init = lambda key: nnx.split(MLP(cfg.hidden, rngs=nnx.Rngs(key)))[1]
  loss = lambda params, batch: _nll(graphdef, params, *batch)
  return dict(init_params=init, loss_fn=loss, batch_fn=batch_fn, eval_fn=eval_fn,
              hidden_mask=mlp_hidden_mask, trivial=trivial)  # fmt: skip


def lm_task(cfg: Any) -> dict[str, Any]:
  """The LM task's functions as :func:`digits_task` (``eval_fn``: validation bits per token),
  with ``num_params``, ``num_chars`` and ``trivial`` (add-one unigram bits per token). Tokens:
  the shards of ``cfg.data_dir``, or else the bytes of ``cfg.text_path`` (90% train)."""
  if cfg.get("data_dir", ""):  # tokenised shards (GPT-2 ids), kept as uint16 on the device
    train_np = load_token_shards(cfg.data_dir, "train", cfg.max_train_tokens)
    val_tok = np.asarray(load_token_shards(cfg.data_dir, "val", cfg.max_val_tokens))
    vocab, num_chars = cfg.vocab, int(train_np.shape[0] + val_tok.shape[0])
  else:
    tokens = load_text(cfg.text_path)
    split = int(0.9 * len(tokens))
    train_np, val_tok = tokens[:split], np.asarray(tokens[split:], np.int32)
    vocab, num_chars = 256, len(tokens)
  train_tok = jnp.asarray(train_np)  # uint8 bytes or uint16 token ids; windows cast to int32
  # Input-independent predictor: add-one-smoothed train unigram frequencies, in bits/token.
  freq = np.bincount(train_np, minlength=vocab).astype(np.float64) + 1.0
  trivial = {"unigram_bits": float(-np.mean(np.log2(freq[val_tok] / freq.sum())))}
  ctx = cfg.context
  starts = np.linspace(0, len(val_tok) - ctx - 2, cfg.val_windows).astype(int)
  val_x = jnp.asarray(np.stack([val_tok[s : s + ctx] for s in starts]), jnp.int32)
  val_y = jnp.asarray(np.stack([val_tok[s + 1 : s + ctx + 1] for s in starts]), jnp.int32)
  make = lambda key: CharLM(vocab=vocab, d=cfg.d_model, layers=cfg.num_layers,
                            heads=cfg.num_heads, context=ctx, rngs=nnx.Rngs(key))  # fmt: skip
  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: make(jax.random.key(0))))
  # Validation in chunks of eval_batch windows (0 = all at once): the activations of one chunk.
  eval_batch = int(cfg.get("eval_batch", 0)) or cfg.val_windows
  if cfg.val_windows % eval_batch:
    raise ValueError(
      f"eval_batch ({eval_batch}) must divide val_windows ({cfg.val_windows}), or be 0"
    )
  val_chunks = (val_x.reshape(-1, eval_batch, ctx), val_y.reshape(-1, eval_batch, ctx))

  def batch_fn(key):
    s = jax.random.randint(key, (cfg.batch_size,), 0, train_tok.shape[0] - ctx - 1)
    win = jax.vmap(lambda i: jax.lax.dynamic_slice(train_tok, (i,), (ctx + 1,)))(s)
    win = win.astype(jnp.int32)
    return win[:, :-1], win[:, 1:]

  def eval_fn(params, shard=lambda t: t):  # bits per token (per byte for the byte-level text)
    per_chunk = jax.lax.map(lambda xy: _nll(graphdef, params, *shard(xy)), val_chunks)
    return per_chunk.mean() / math.log(2.0)  # equal chunks: the mean over every window

  return dict(init_params=lambda key: nnx.split(make(key))[1],
              loss_fn=lambda params, batch: _nll(graphdef, params, *batch),
              batch_fn=batch_fn, eval_fn=eval_fn, hidden_mask=hidden_matrix_mask,
              num_params=sum(x.size for x in jax.tree.leaves(abstract)),
              num_chars=num_chars, trivial=trivial)  # fmt: skip
