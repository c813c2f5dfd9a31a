"""Models and data of the SODA experiment (``experiments/soda``): a digits MLP and a byte- or
token-level GPT, the masks of the matrices Muon and SODA(Muon) act on, and the loaders.

Both models are Flax NNX modules kept functional at the jit boundary: the experiment
``nnx.split``s them and trains many (hyperparameter, seed) runs side by side with ``jax.vmap``.
"""

from __future__ import annotations

import math
import os
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

LN2 = math.log(2.0)

# ------------------------------------------------------------------ digits --


def load_digits_split(
  num_train: int = 1000, seed: int = 0
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
  """sklearn's bundled 8x8 digits, shuffled and standardised by the training statistics.

  Args:
    num_train: rows of the training split (the rest, of 1797, is the test split).
    seed: the shuffle's seed.

  Returns:
    ``((x_train [num_train, 64] float32, y_train [num_train] int32), (x_test, y_test))``.
  """
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
    x = jax.nn.relu(self.fc1(x))
    x = jax.nn.relu(self.fc2(x))
    return self.out(x)


def mlp_hidden_mask(params: Any) -> Any:
  """True on the MLP's 2-D kernels other than the output layer (Muon's matrices).

  Args:
    params: the :class:`MLP`'s parameter state (or a pytree of the same structure).

  Returns:
    A pytree of bools of the structure of ``params``.
  """

  def is_hidden(path, x):
    names = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return x.ndim == 2 and "out" not in names

  return jax.tree_util.tree_map_with_path(is_hidden, params)


# ---------------------------------------------------------------- char LM --


def load_text(text_path: str = "") -> np.ndarray:
  """Bytes of a text as uint8 tokens (vocabulary 256).

  Args:
    text_path: a text file; ``''`` = the standard library's ``pydoc_data.topics`` (about 465k
      characters; no download).

  Returns:
    ``uint8[n]`` bytes.
  """
  if text_path:
    return np.frombuffer(pathlib.Path(text_path).read_bytes(), np.uint8)
  import pydoc_data.topics as topics

  text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
  return np.frombuffer(text.encode("utf-8"), np.uint8)


# Tokenised shards as written by the reference run's FineWeb preprocessing (the llm.c layout):
# a header of 256 little-endian int32 (magic, version, number of tokens, then zeros) followed by
# that many little-endian uint16 GPT-2 token ids.
SHARD_MAGIC, SHARD_VERSION, SHARD_HEADER_INTS = 20240520, 1, 256


def read_token_shard(path: str | os.PathLike[str]) -> np.ndarray:
  """One tokenised shard as a read-only ``uint16[n]`` memory map (nothing is copied).

  Args:
    path: the shard file.

  Returns:
    ``uint16[n]`` token ids, ``n`` from the header.

  Raises:
    ValueError: if the header's magic or version is wrong, or the file is shorter than the
      header says.
  """
  path = pathlib.Path(path)
  header = np.fromfile(path, dtype="<i4", count=SHARD_HEADER_INTS)
  if header.size < 3 or header[0] != SHARD_MAGIC or header[1] != SHARD_VERSION:
    raise ValueError(
      f"{path}: not a token shard (expected a 256-int32 header starting with magic "
      f"{SHARD_MAGIC} and version {SHARD_VERSION}; got {header[:3].tolist()})."
    )
  n = int(header[2])
  offset = 4 * SHARD_HEADER_INTS
  if path.stat().st_size < offset + 2 * n:
    raise ValueError(f"{path}: header says {n} tokens but the file is shorter.")
  return np.memmap(path, dtype="<u2", mode="r", offset=offset, shape=(n,))


def load_token_shards(
  data_dir: str | os.PathLike[str], split: str, max_tokens: int = 0
) -> np.ndarray:
  """The tokens of every ``*{split}*.bin`` shard under ``data_dir`` (sorted by name), joined.

  Args:
    data_dir: the folder of the shards, e.g. ``fineweb_train_000001.bin ...`` and
      ``fineweb_val_000000.bin``.
    split: the part of the file names that selects the shards (``'train'``, ``'val'``).
    max_tokens: ``> 0`` keeps only the first ``max_tokens`` tokens (shards past them are not
      read); 0 = all.

  Returns:
    ``uint16[n]`` token ids.
  """
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


def write_token_shard(path: str | os.PathLike[str], tokens: Any) -> None:
  """Writes ``tokens`` in the shard layout read by :func:`read_token_shard`.

  Args:
    path: the file to write.
    tokens: ``[n]`` integer ids in ``[0, 65536)``.
  """
  tokens = np.asarray(tokens)
  if tokens.ndim != 1 or tokens.size and (tokens.min() < 0 or tokens.max() >= 2**16):
    raise ValueError("tokens must be a 1-D array of ids in [0, 65536).")
  header = np.zeros(SHARD_HEADER_INTS, "<i4")
  header[:3] = SHARD_MAGIC, SHARD_VERSION, tokens.size
  with open(path, "wb") as fh:
    fh.write(header.tobytes())
    fh.write(tokens.astype("<u2").tobytes())


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

  def __call__(self, x: jax.Array) -> jax.Array:  # [B, T, d] -> [B, T, d]
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

  def __call__(self, tokens: jax.Array) -> jax.Array:  # [B, T] int -> [B, T, vocab]
    x = self.embed(tokens) + self.pos[: tokens.shape[1]]
    for blk in self.blocks:
      x = blk(x)
    return self.head(self.ln_f(x))


def hidden_matrix_mask(params: Any) -> Any:
  """True on the :class:`CharLM`'s 2-D weights other than the embedding, positions and head.

  Args:
    params: the :class:`CharLM`'s parameter state (or a pytree of the same structure).

  Returns:
    A pytree of bools of the structure of ``params``.
  """

  def is_hidden(path, x):
    names = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return x.ndim == 2 and not any(n in ("embed", "pos", "head") for n in names)

  return jax.tree_util.tree_map_with_path(is_hidden, params)


# ----------------------------------------------------------------- tasks --


def _nll(graphdef: Any, params: Any, x: jax.Array, y: jax.Array) -> jax.Array:
  logits = nnx.merge(graphdef, params)(x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def digits_task(cfg: Any) -> dict[str, Any]:
  """The per-run functions of the digits task (:class:`MLP`) and its trivial predictors.

  Args:
    cfg: the task config: ``num_train``, ``data_seed``, ``hidden``, ``batch_size``.

  Returns:
    ``init_params(key)``, ``loss_fn(params, batch)`` (mean cross-entropy), ``batch_fn(key)``
    (``batch_size`` rows drawn with replacement), ``eval_fn(params, shard=...)`` (``[2]``: test
    accuracy and NLL), ``hidden_mask`` and ``trivial`` (class-prior NLL, majority accuracy).
  """
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
  """The per-run functions of the LM task (:class:`CharLM`), its size and unigram predictor.

  Args:
    cfg: the task config: ``data_dir`` (token shards; ``''`` = the bytes of ``text_path``, 90%
      train), ``vocab``, ``max_train_tokens``, ``max_val_tokens``, ``context``, ``val_windows``,
      ``eval_batch``, ``batch_size``, ``d_model``, ``num_layers``, ``num_heads``.

  Returns:
    As :func:`digits_task` (``eval_fn``: validation bits per token), with ``num_params``,
    ``num_chars`` and ``trivial`` (add-one unigram bits per token).
  """
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
    if val_chunks[0].shape[0] == 1:
      return _nll(graphdef, params, *shard((val_x, val_y))) / LN2
    per_chunk = jax.lax.map(lambda xy: _nll(graphdef, params, *shard(xy)), val_chunks)
    return per_chunk.mean() / LN2  # equal chunks: the mean over every window and position

  return dict(init_params=lambda key: nnx.split(make(key))[1],
              loss_fn=lambda params, batch: _nll(graphdef, params, *batch),
              batch_fn=batch_fn, eval_fn=eval_fn, hidden_mask=hidden_matrix_mask,
              num_params=sum(x.size for x in jax.tree.leaves(abstract)),
              num_chars=num_chars, trivial=trivial)  # fmt: skip
