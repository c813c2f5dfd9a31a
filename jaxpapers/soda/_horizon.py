"""The horizon study of the paper: its tasks, schedule and the optimizer
families compared.

Does SODA (learning rate tuned, no weight decay) keep up with a base optimizer
tuned over learning rate x weight decay at every training horizon? The pieces a
user needs to run that comparison on their own grid: the warmup-stable-decay
schedule (:func:`wsd_schedule`), the four optimizer families
(:func:`horizon_optimizer`: AdamW, SODA(AdamW), Muon, SODA(Muon)), and two tasks
as pure per-run functions: an MLP on sklearn's 8x8 digits (:func:`digits_task`)
and a small GPT on bytes of text or on GPT-2 token shards (:func:`lm_task`,
:func:`load_token_shards`).

References:
  Pethick, Xie, Machacek, Cevher. *Optimistic Dual Averaging Unifies Modern
  Optimizers*, arXiv:2605.11172, 2026.
"""

from __future__ import annotations

import math
import numbers
import os
import pathlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxpapers.soda._wrapper import soda

FAMILIES = ("adamw", "soda_adamw", "muon", "soda_muon")


def _check_int(value: Any, name: str, low: int = 1) -> None:
  if (
    not isinstance(value, numbers.Integral)
    or isinstance(value, bool)
    or value < low
  ):
    raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _check_frac(value: Any, name: str) -> None:
  if (
    not isinstance(value, (int, float, np.floating))
    or not 0.0 <= float(value) <= 1.0
  ):
    raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")


def wsd_schedule(
  peak: Any, total: Any, warmup_frac: float, cooldown_frac: float
) -> optax.Schedule:
  """Warmup-stable-decay: linear warmup, constant, then linear decay to 0.

  ``lr(c) = peak * min(min(1, (c + 1) / W), clip((total - c) / D, 0, 1))`` with
  ``W = max(1, round(warmup_frac * total))`` (no warmup when
  ``warmup_frac = 0``) and ``D = max(1, round(cooldown_frac * total))``.

  Args:
    peak: the peak learning rate (may be traced).
    total: the horizon in steps (may be traced).
    warmup_frac: share of ``total`` spent warming up, in ``[0, 1]`` (static).
    cooldown_frac: share of ``total`` spent decaying to 0, in ``[0, 1]``
      (static).

  Returns:
    An optax schedule ``count -> float32[]``.

  Raises:
    ValueError: a fraction outside ``[0, 1]``.
  """
  _check_frac(warmup_frac, "warmup_frac")
  _check_frac(cooldown_frac, "cooldown_frac")
  warm = jnp.maximum(1.0, jnp.round(warmup_frac * total))
  cd_len = jnp.maximum(1.0, jnp.round(cooldown_frac * total))

  def schedule(count: Any) -> jax.Array:
    c = jnp.asarray(count).astype(jnp.float32)
    w = jnp.minimum(1.0, (c + 1.0) / warm) if warmup_frac > 0 else 1.0
    d = jnp.clip((total - c) / cd_len, 0.0, 1.0)
    return peak * jnp.minimum(w, d)

  return schedule


def horizon_optimizer(
  family: str,
  hp: dict[str, Any],
  *,
  b1: float,
  b2: float,
  warmup_frac: float,
  cooldown_frac: float,
  hidden_mask: Callable[[Any], Any] | None = None,
) -> optax.GradientTransformation:
  """The optimizer of one run of the horizon study, on a :func:`wsd_schedule`.

  Args:
    family: ``'adamw'`` (decoupled weight decay ``hp['wd']``), ``'soda_adamw'``
      (:func:`soda` around AdamW without weight decay), ``'muon'`` (optax's Muon
      on the ``hidden_mask`` matrices, weight decay ``hp['wd']``, Adam at
      ``hp['adam_lr']`` elsewhere) or ``'soda_muon'`` (SODA on Muon's matrices,
      no weight decay).
    hp: ``{"lr", "total"}`` and, as the family needs, ``"wd"`` and
      ``"adam_lr"``; the values may be traced (one compiled step serves a whole
      grid).
    b1: Adam's first-moment decay.
    b2: Adam's second-moment decay.
    warmup_frac: the schedule's warmup share.
    cooldown_frac: the schedule's cooldown share.
    hidden_mask: ``params -> bool pytree`` of the matrices Muon acts on (the
      Muon families).

  Returns:
    An optax ``GradientTransformation``.

  Raises:
    ValueError: an unknown family, or a Muon family without ``hidden_mask``.
  """
  lr = wsd_schedule(hp["lr"], hp["total"], warmup_frac, cooldown_frac)
  if family == "adamw":
    return optax.adamw(lr, b1=b1, b2=b2, weight_decay=hp["wd"])
  if family == "soda_adamw":
    return soda(optax.adamw(lr, b1=b1, b2=b2, weight_decay=0.0))
  if family in ("muon", "soda_muon") and hidden_mask is not None:
    adam_lr = wsd_schedule(
      hp["adam_lr"], hp["total"], warmup_frac, cooldown_frac
    )
    dims = lambda p: jax.tree.map(
      lambda h: optax.contrib.MuonDimensionNumbers() if h else None,
      hidden_mask(p),
    )
    base = optax.contrib.muon(
      lr,
      weight_decay=hp["wd"] if family == "muon" else 0.0,
      adam_learning_rate=adam_lr,
      adam_b1=b1,
      adam_b2=b2,
      adam_weight_decay=0.0,
      muon_weight_dimension_numbers=dims,
    )
    return base if family == "muon" else soda(base, mask=hidden_mask)
  raise ValueError(
    f"family must be one of {FAMILIES} (the Muon families need hidden_mask), "
    f"got {family!r}"
  )


def load_digits_split(num_train: int = 1000, seed: int = 0):
  """sklearn's 8x8 digits, shuffled, standardised by the training rows: ``((x
  [n, 64], y [n]), (x_test, y_test))``, the first ``num_train`` of 1797 rows for
  training."""
  from sklearn.datasets import load_digits

  x, y = load_digits(return_X_y=True)
  perm = np.random.default_rng(seed).permutation(len(x))
  x, y = x[perm].astype(np.float32) / 16.0, y[perm].astype(np.int32)
  mean, std = x[:num_train].mean(0), x[:num_train].std(0) + 1e-3
  x = (x - mean) / std
  return (x[:num_train], y[:num_train]), (x[num_train:], y[num_train:])


class DigitsMLP(nnx.Module):
  """The digits classifier: 64 -> hidden -> hidden -> 10 with ReLU.

  Args:
    hidden: width of the two hidden layers (>= 1).
    rngs: the parameters' random keys.

  Raises:
    ValueError: ``hidden`` is not a positive int.
  """

  def __init__(self, hidden: int = 256, *, rngs: nnx.Rngs):
    _check_int(hidden, "hidden")
    self.fc1 = nnx.Linear(64, hidden, rngs=rngs)
    self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
    self.out = nnx.Linear(hidden, 10, rngs=rngs)

  def __call__(self, x: jax.Array) -> jax.Array:  # [B, 64] -> [B, 10]
    return self.out(jax.nn.relu(self.fc2(jax.nn.relu(self.fc1(x)))))


def _matrices_except(params: Any, *names: str) -> Any:
  """True on the 2-D leaves of ``params`` whose path names none of ``names``."""

  def hidden(path, x):
    keys = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return x.ndim == 2 and not any(n in keys for n in names)

  return jax.tree_util.tree_map_with_path(hidden, params)


def mlp_hidden_mask(params: Any) -> Any:
  """Muon's matrices in a :class:`DigitsMLP`: its hidden kernels, not its output
  layer.

  Args:
    params: the MLP's parameter pytree.

  Returns:
    A bool pytree of the same structure (for
    ``horizon_optimizer(hidden_mask=)``).
  """
  return _matrices_except(params, "out")


def gpt_hidden_mask(params: Any) -> Any:
  """Muon's matrices in a :class:`GPT`: every 2-D kernel but the embeddings and
  the head.

  Args:
    params: the GPT's parameter pytree.

  Returns:
    A bool pytree of the same structure (for
    ``horizon_optimizer(hidden_mask=)``).
  """
  return _matrices_except(params, "embed", "pos", "head")


def _load_text(text_path: str = "") -> np.ndarray:
  """``uint8[n]`` bytes of a text file; ``''``: the standard library's pydoc
  topics."""
  if text_path:
    return np.frombuffer(pathlib.Path(text_path).read_bytes(), np.uint8)
  import pydoc_data.topics as topics

  text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
  return np.frombuffer(text.encode("utf-8"), np.uint8)


# Token shards of the reference run's FineWeb preprocessing (the llm.c layout):
# 256 int32 (magic, version, number of tokens, zeros), then that many
# little-endian uint16 GPT-2 ids.
SHARD_MAGIC, SHARD_VERSION, SHARD_HEADER_INTS = 20240520, 1, 256


def read_token_shard(path: str | os.PathLike) -> np.ndarray:
  """One token shard (the llm.c layout) as a read-only memory map.

  Args:
    path: the ``.bin`` file: 256 int32 (magic 20240520, version 1, token count,
      zeros), then that many little-endian uint16 GPT-2 token ids.

  Returns:
    ``uint16[n]`` read-only memory map.

  Raises:
    ValueError: a bad header, or a file shorter than its header says.
  """
  path = pathlib.Path(path)
  header = np.fromfile(path, dtype="<i4", count=SHARD_HEADER_INTS)
  if header.size < 3 or header[0] != SHARD_MAGIC or header[1] != SHARD_VERSION:
    raise ValueError(
      f"{path}: not a token shard (expected a 256-int32 header starting with "
      f"magic {SHARD_MAGIC} and version {SHARD_VERSION}; "
      f"got {header[:3].tolist()})."
    )
  n, offset = int(header[2]), 4 * SHARD_HEADER_INTS
  if path.stat().st_size < offset + 2 * n:
    raise ValueError(f"{path}: header says {n} tokens but the file is shorter.")
  return np.memmap(path, dtype="<u2", mode="r", offset=offset, shape=(n,))


def load_token_shards(
  data_dir: str | os.PathLike, split: str, max_tokens: int = 0
) -> np.ndarray:
  """The ``*{split}*.bin`` shards under ``data_dir`` joined in name order.

  Args:
    data_dir: the folder of shards (:func:`read_token_shard`).
    split: the name part of the split's files (``'train'``, ``'val'``).
    max_tokens: keep the first ``max_tokens`` only when > 0 (later shards are
      not read).

  Returns:
    ``uint16[n]`` token ids.

  Raises:
    FileNotFoundError: no shard of ``split`` under ``data_dir``.
    ValueError: a bad shard, or ``max_tokens < 0``.
  """
  _check_int(max_tokens, "max_tokens", low=0)
  files = sorted(pathlib.Path(data_dir).glob(f"*{split}*.bin"))
  if not files:
    raise FileNotFoundError(
      f"no '*{split}*.bin' token shards under {data_dir}."
    )
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


class _Block(nnx.Module):
  """Pre-norm transformer block: causal self-attention and a GELU MLP."""

  def __init__(self, d: int, heads: int, *, rngs: nnx.Rngs):
    self.heads = heads
    zeros = nnx.initializers.zeros
    self.ln1 = nnx.LayerNorm(d, rngs=rngs)
    self.qkv = nnx.Linear(d, 3 * d, use_bias=False, rngs=rngs)
    self.proj = nnx.Linear(d, d, use_bias=False, rngs=rngs, kernel_init=zeros)
    self.ln2 = nnx.LayerNorm(d, rngs=rngs)
    self.fc = nnx.Linear(d, 4 * d, use_bias=False, rngs=rngs)
    self.fc_out = nnx.Linear(
      4 * d, d, use_bias=False, rngs=rngs, kernel_init=zeros
    )

  def __call__(self, x: jax.Array) -> jax.Array:  # [B, T, d] -> [B, T, d]
    b, t, d = x.shape
    h = self.heads
    q, k, v = jnp.split(self.qkv(self.ln1(x)), 3, axis=-1)
    q, k, v = (a.reshape(b, t, h, d // h) for a in (q, k, v))  # [B, T, H, dh]
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // h)
    att = jax.nn.softmax(
      jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -1e9), axis=-1
    )
    x = x + self.proj(jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, d))
    return x + self.fc_out(jax.nn.gelu(self.fc(self.ln2(x))))


class GPT(nnx.Module):
  """A GPT: token + learned position embedding, pre-norm blocks, untied head.

  Output projections of the blocks start at zero (each block starts as the
  identity).

  Args:
    vocab: vocabulary size.
    d: model width, a multiple of ``heads``.
    layers: number of blocks.
    heads: attention heads.
    context: longest sequence (rows of the position embedding).
    rngs: the parameters' random keys.

  Raises:
    ValueError: a size that is not a positive int, or ``d`` not a multiple of
      ``heads``.
  """

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
    for name, v in (
      ("vocab", vocab),
      ("d", d),
      ("layers", layers),
      ("heads", heads),
      ("context", context),
    ):
      _check_int(v, name)
    if d % heads:
      raise ValueError(
        f"d must be a multiple of heads, got d={d}, heads={heads}"
      )
    self.embed = nnx.Embed(vocab, d, rngs=rngs)
    self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (context, d)))
    self.blocks = nnx.List([_Block(d, heads, rngs=rngs) for _ in range(layers)])
    self.ln_f = nnx.LayerNorm(d, rngs=rngs)
    self.head = nnx.Linear(d, vocab, use_bias=False, rngs=rngs)

  # [B, T] int -> [B, T, vocab]
  def __call__(self, tokens: jax.Array) -> jax.Array:
    x = self.embed(tokens) + self.pos[: tokens.shape[1]]
    for blk in self.blocks:
      x = blk(x)
    return self.head(self.ln_f(x))


def _nll(graphdef: Any, params: Any, x: jax.Array, y: jax.Array) -> jax.Array:
  logits = nnx.merge(graphdef, params)(x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def digits_task(
  *,
  num_train: int = 1000,
  data_seed: int = 0,
  hidden: int = 128,
  batch_size: int = 32,
) -> dict[str, Any]:
  """The digits task (a :class:`DigitsMLP` on sklearn's digits) as pure per-run
  functions.

  Args:
    num_train: training rows of the 1797 (the rest are the test set).
    data_seed: the shuffle's seed.
    hidden: the MLP's width.
    batch_size: rows per step, drawn with replacement.

  Returns:
    ``{"init_params": key -> params, "loss_fn": (params, batch) -> mean NLL,
    "batch_fn": key -> (x [B, 64], y [B]), "eval_fn": (params, shard=identity)
    -> [2] (test accuracy, test NLL), "hidden_mask": mlp_hidden_mask, "trivial":
    {"class_prior_nll", "majority_accuracy"}}`` (the input-independent
    predictors from the training classes).

  Raises:
    ValueError: a size that is not a positive int, or ``num_train`` leaving no
      test rows.
  """
  for name, v in (
    ("num_train", num_train),
    ("hidden", hidden),
    ("batch_size", batch_size),
  ):
    _check_int(v, name)
  if num_train >= 1797:
    raise ValueError(
      f"num_train must leave test rows (< 1797), got {num_train}"
    )
  (xtr, ytr), (xte, yte) = map(
    lambda xy: tuple(map(jnp.asarray, xy)),
    load_digits_split(num_train, data_seed),
  )
  graphdef, _ = nnx.split(DigitsMLP(hidden, rngs=nnx.Rngs(0)))

  def batch_fn(key):
    idx = jax.random.randint(key, (batch_size,), 0, xtr.shape[0])
    return xtr[idx], ytr[idx]

  def eval_fn(params, shard=lambda t: t):  # [2]: accuracy, NLL
    logits = nnx.merge(graphdef, params)(shard(xte))
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, yte).mean()
    return jnp.stack([jnp.mean(jnp.argmax(logits, -1) == yte), nll])

  # Input-independent predictors: the training class frequencies (NLL) and the
  # majority class.
  prior = np.bincount(np.asarray(ytr), minlength=10) / ytr.shape[0]
  trivial = {
    "class_prior_nll": float(-np.mean(np.log(prior[np.asarray(yte)]))),
    "majority_accuracy": float(np.mean(np.asarray(yte) == np.argmax(prior))),
  }
  init = lambda key: nnx.split(DigitsMLP(hidden, rngs=nnx.Rngs(key)))[1]
  loss = lambda params, batch: _nll(graphdef, params, *batch)
  return dict(
    init_params=init,
    loss_fn=loss,
    batch_fn=batch_fn,
    eval_fn=eval_fn,
    hidden_mask=mlp_hidden_mask,
    trivial=trivial,
  )


def lm_task(
  *,
  d_model: int,
  num_layers: int,
  num_heads: int,
  context: int,
  batch_size: int,
  val_windows: int,
  text_path: str = "",
  data_dir: str = "",
  vocab: int = 50304,
  max_train_tokens: int = 0,
  max_val_tokens: int = 0,
  eval_batch: int = 0,
) -> dict[str, Any]:
  """The language-model task (a :class:`GPT`) as pure per-run functions, as
  :func:`digits_task`.

  Tokens: the ``train`` / ``val`` shards of ``data_dir`` (GPT-2 ids,
  :func:`load_token_shards`), or else the bytes of ``text_path`` (``''``: the
  standard library's pydoc topics), 90% for training. Validation reads
  ``val_windows`` evenly spaced windows of ``context`` tokens.

  Args:
    d_model: the GPT's width.
    num_layers: its blocks.
    num_heads: its heads.
    context: tokens per window.
    batch_size: windows per step, drawn uniformly.
    val_windows: validation windows.
    text_path: a text file (bytes), used without ``data_dir``.
    data_dir: a folder of token shards (``''``: use the text).
    vocab: the vocabulary with ``data_dir`` (256 for bytes).
    max_train_tokens: train tokens kept from the shards (0: all).
    max_val_tokens: validation tokens kept from the shards (0: all).
    eval_batch: validation windows per evaluated chunk, dividing ``val_windows``
      (0: all).

  Returns:
    ``{"init_params", "loss_fn", "batch_fn", "eval_fn": (params, shard=identity)
    -> validation bits per token, "hidden_mask": gpt_hidden_mask, "num_params",
    "num_chars" (train + validation tokens), "trivial": {"unigram_bits"}
    (add-one-smoothed train unigram frequencies, bits per token)}``.

  Raises:
    ValueError: a size that is not a positive int, or ``eval_batch`` not
      dividing ``val_windows``.
  """
  for name, v in (
    ("d_model", d_model),
    ("num_layers", num_layers),
    ("num_heads", num_heads),
    ("context", context),
    ("batch_size", batch_size),
    ("val_windows", val_windows),
  ):
    _check_int(v, name)
  if data_dir:  # tokenised shards (GPT-2 ids), kept as uint16 on the device
    train_np = load_token_shards(data_dir, "train", max_train_tokens)
    val_tok = np.asarray(load_token_shards(data_dir, "val", max_val_tokens))
    num_chars = int(train_np.shape[0] + val_tok.shape[0])
  else:
    tokens = _load_text(text_path)
    split = int(0.9 * len(tokens))
    train_np, val_tok = tokens[:split], np.asarray(tokens[split:], np.int32)
    vocab, num_chars = 256, len(tokens)
  # uint8 bytes or uint16 token ids; windows cast to int32
  train_tok = jnp.asarray(train_np)
  # Input-independent predictor: add-one-smoothed train unigram frequencies, in
  # bits/token.
  freq = np.bincount(train_np, minlength=vocab).astype(np.float64) + 1.0
  trivial = {
    "unigram_bits": float(-np.mean(np.log2(freq[val_tok] / freq.sum())))
  }
  ctx = context
  starts = np.linspace(0, len(val_tok) - ctx - 2, val_windows).astype(int)
  val_x = jnp.asarray(
    np.stack([val_tok[s : s + ctx] for s in starts]), jnp.int32
  )
  val_y = jnp.asarray(
    np.stack([val_tok[s + 1 : s + ctx + 1] for s in starts]), jnp.int32
  )
  make = lambda key: GPT(
    vocab=vocab,
    d=d_model,
    layers=num_layers,
    heads=num_heads,
    context=ctx,
    rngs=nnx.Rngs(key),
  )
  graphdef, abstract = nnx.split(
    nnx.eval_shape(lambda: make(jax.random.key(0)))
  )
  # Validation in chunks of eval_batch windows (0 = all at once): the
  # activations of one chunk.
  eval_batch = int(eval_batch) or val_windows
  if val_windows % eval_batch:
    raise ValueError(
      f"eval_batch ({eval_batch}) must divide val_windows ({val_windows}), "
      "or be 0"
    )
  val_chunks = (
    val_x.reshape(-1, eval_batch, ctx),
    val_y.reshape(-1, eval_batch, ctx),
  )

  def batch_fn(key):
    s = jax.random.randint(key, (batch_size,), 0, train_tok.shape[0] - ctx - 1)
    win = jax.vmap(
      lambda i: jax.lax.dynamic_slice(train_tok, (i,), (ctx + 1,))
    )(s)
    win = win.astype(jnp.int32)
    return win[:, :-1], win[:, 1:]

  # bits per token (per byte for the byte-level text)
  def eval_fn(params, shard=lambda t: t):
    per_chunk = jax.lax.map(
      lambda xy: _nll(graphdef, params, *shard(xy)), val_chunks
    )
    # equal chunks: the mean over every window
    return per_chunk.mean() / math.log(2.0)

  return dict(
    init_params=lambda key: nnx.split(make(key))[1],
    loss_fn=lambda params, batch: _nll(graphdef, params, *batch),
    batch_fn=batch_fn,
    eval_fn=eval_fn,
    hidden_mask=gpt_hidden_mask,
    num_params=sum(x.size for x in jax.tree.leaves(abstract)),
    num_chars=num_chars,
    trivial=trivial,
  )
