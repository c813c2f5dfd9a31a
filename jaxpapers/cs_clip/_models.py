"""Tiny Flax NNX dual encoders for the synthetic scenes (project
reconstruction).

``ImageEncoder``: two stride-2 3x3 convolutions and a linear head.
``TextEncoder`` pools word embeddings with one of three order sensitivities:

* ``'bow'``: mean of word embeddings (order-blind: a negative control);
* ``'weak_order'``: mean of word embeddings scaled by ``1 + order_strength *
  position`` before a MLP (linear pooling, so word order enters only weakly,
  mimicking the bag-of-words behaviour of real CLIP text towers);
  ``order_strength = 0`` is ``'bow'``;
* ``'positional'``: a per-token MLP on word + position embeddings, then mean
  pooling (order-aware).

Both towers return L2-normalised ``[N, D]`` embeddings; ``DualEncoder`` also
holds the learnable log logit scale, initialised at log(1 / 0.07) as in CLIP.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers.core import validation as V

TEXT_KINDS = ("bow", "weak_order", "positional")


def _l2(x):
  """L2 normalisation with a finite gradient at 0 (padded, empty captions embed
  to 0)."""
  return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-12)


class ImageEncoder(nnx.Module):
  """``[N, S, S, 3]`` images (uint8 or float in [0, 1]) -> ``[N, D]`` unit-norm embeddings.

  Two stride-2 3x3 convolutions with ReLU, then a linear head and L2
  normalisation.

  Args:
    dim: D, the embedding width.
    size: S, the image side.
    width: channels of the first convolution (the second has twice as many).
    rngs: the parameter random streams.
  """

  def __init__(
    self, dim: int, *, size: int = 24, width: int = 16, rngs: nnx.Rngs
  ):
    self.conv1 = nnx.Conv(3, width, (3, 3), strides=2, rngs=rngs)
    self.conv2 = nnx.Conv(width, 2 * width, (3, 3), strides=2, rngs=rngs)
    side = math.ceil(math.ceil(size / 2) / 2)
    self.head = nnx.Linear(side * side * 2 * width, dim, rngs=rngs)

  def __call__(self, images: jax.Array) -> jax.Array:
    x = images.astype(jnp.float32)
    if images.dtype == jnp.uint8:
      x = x / 255.0
    x = jax.nn.relu(self.conv1(x))
    x = jax.nn.relu(self.conv2(x))
    return _l2(self.head(x.reshape(x.shape[0], -1)))


class TextEncoder(nnx.Module):
  """``[N, L]`` int word ids (0 = padding) -> ``[N, D]`` unit-norm embeddings.

  Args:
    vocab: number of word ids (>= 2, id 0 is padding).
    dim: D, the embedding width.
    kind: one of :data:`TEXT_KINDS`: ``'bow'`` (mean of the word embeddings, no
      order), ``'weak_order'`` (word ``j`` scaled by ``1 + order_strength * j``
      before mean pooling) or ``'positional'`` (learned position embeddings).
    max_len: the longest caption L the encoder accepts.
    width: the hidden width.
    order_strength: the ``'weak_order'`` coefficient (>= 0).
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    vocab: int,
    dim: int,
    *,
    kind: str = "weak_order",
    max_len: int = 8,
    width: int = 64,
    order_strength: float = 1.0,
    rngs: nnx.Rngs,
  ):
    if kind not in TEXT_KINDS:
      raise ValueError(f"kind must be one of {list(TEXT_KINDS)}, got {kind!r}")
    self.kind = kind
    self.vocab = V.check_int(vocab, "vocab", min_value=2)
    self.max_len = V.check_int(max_len, "max_len", min_value=1)
    self.order_strength = V.check_float(
      order_strength, "order_strength", min_value=0.0
    )
    self.embed = nnx.Embed(vocab, width, rngs=rngs)
    if kind == "positional":
      self.pos = nnx.Embed(max_len, width, rngs=rngs)
      self.tok = nnx.Linear(width, width, rngs=rngs)
    self.hidden = nnx.Linear(width, width, rngs=rngs)
    self.out = nnx.Linear(width, dim, rngs=rngs)

  def __call__(
    self, tokens: jax.Array, order_strength: jax.Array | None = None
  ) -> jax.Array:
    """Encodes; ``order_strength`` (traced scalar) overrides the attribute for
    'weak_order'."""
    L = tokens.shape[-1]
    if L > self.max_len:
      raise ValueError(
        f"tokens must have at most max_len={self.max_len} columns, got {L}"
      )
    valid = (tokens > 0)[..., None].astype(jnp.float32)  # [N, L, 1]
    e = self.embed(tokens)  # [N, L, W]
    if self.kind == "positional":
      e = jax.nn.gelu(self.tok(e + self.pos(jnp.arange(L))))
    elif self.kind == "weak_order":
      a = self.order_strength if order_strength is None else order_strength
      e = e * (1.0 + a * jnp.arange(L, dtype=jnp.float32))[:, None]
    pooled = (e * valid).sum(-2) / jnp.maximum(valid.sum(-2), 1.0)
    return _l2(self.out(jax.nn.gelu(self.hidden(pooled))))


class DualEncoder(nnx.Module):
  """Image and text towers plus the learnable ``log_scale`` (``logit_scale =
  exp(log_scale)``).

  Args:
    vocab: number of word ids of the text tower.
    dim: D, the shared embedding width.
    text_kind: the text tower's ``kind`` (see :class:`TextEncoder`).
    size: the image side.
    max_len: the longest caption.
    order_strength: the text tower's ``'weak_order'`` coefficient.
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    vocab: int,
    dim: int = 64,
    *,
    text_kind: str = "weak_order",
    size: int = 24,
    max_len: int = 8,
    order_strength: float = 1.0,
    rngs: nnx.Rngs,
  ):
    self.image = ImageEncoder(dim, size=size, rngs=rngs)
    self.text = TextEncoder(
      vocab,
      dim,
      kind=text_kind,
      max_len=max_len,
      order_strength=order_strength,
      rngs=rngs,
    )
    self.log_scale = nnx.Param(jnp.asarray(math.log(1 / 0.07), jnp.float32))

  def logit_scale(self) -> jax.Array:
    """The contrastive temperature's inverse, ``exp(log_scale)`` clipped to
    ``[1, 100]``.

    Returns:
      A float32 scalar (``1/0.07`` at initialisation).
    """
    return jnp.exp(jnp.clip(self.log_scale[...], 0.0, math.log(100.0)))
