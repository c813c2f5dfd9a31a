"""Tokenizer-agnostic evaluation: bits per byte of a causal LM on its own
tokenization."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

__all__ = ["token_logp", "bits_per_byte"]


def token_logp(
  logits: ArrayLike, tokens: ArrayLike, lengths: ArrayLike
) -> jax.Array:
  """Log-probability of each realised next token: ``log p(tokens[:, p+1] |
  tokens[:, :p+1])``.

  Args:
    logits: float [N, T, V], the model's logits at every position.
    tokens: int [N, T] (BOS first).
    lengths: int [N] valid lengths.

  Returns:
    float32 [N, T], 0 at positions ``>= length - 1``.
  """
  logits = V.check_array(logits, "logits", dtype="float", ndim=3)
  tokens = V.check_array(tokens, "tokens", dtype="int", shape=logits.shape[:2])
  lengths = V.check_array(
    lengths, "lengths", dtype="int", shape=logits.shape[:1]
  )
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
  nxt = jnp.concatenate([tokens[:, 1:], jnp.zeros_like(tokens[:, :1])], 1)
  tl = jnp.take_along_axis(logp, nxt[..., None], -1)[..., 0]
  valid = jnp.arange(tokens.shape[1])[None, :] < lengths[:, None] - 1
  return jnp.where(valid, tl, 0.0)


def bits_per_byte(logp_sum: ArrayLike, n_bytes: ArrayLike) -> jax.Array:
  r"""``-sum log p / (n_bytes ln 2)``: comparable across tokenizers of the same
  text.

  Args:
    logp_sum: float [...], summed natural-log probabilities of the tokens of
      each text.
    n_bytes: int [...], UTF-8 bytes of those texts.

  Returns:
    float32, the ratio of the totals (one number for all texts).

  Under jit: a non-positive byte total makes the result NaN (eagerly:
  ValueError).
  """
  logp_sum = V.check_array(logp_sum, "logp_sum", dtype="float")
  n_bytes = V.check_array(n_bytes, "n_bytes", dtype="real")
  tot = n_bytes.sum().astype(jnp.float32)
  ok = V.debug_check_values(
    tot > 0, "n_bytes must sum to a positive number of bytes"
  )
  return V.poison_floats(
    -logp_sum.sum() / (jnp.maximum(tot, 1.0) * math.log(2.0)), ok
  )
