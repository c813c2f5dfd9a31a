"""Tiny CLIP-style Flax NNX models, dense readouts, and a handcrafted frozen
"VFM".

Project reconstruction for CPU-scale experiments (no CLIP or DINO weights
offline):

* :class:`TinyViT`: patch embedding, a class token, pre-LN transformer blocks,
  ``ln_post`` and a projection, as in CLIP's image tower;
* :class:`TinyTextEncoder`: word + position embeddings, pre-LN blocks with a
  padding mask, mean pooling over valid tokens (CLIP uses the EOT token; mean
  pooling is the tiny-model choice);
* :class:`TinyCLIP`: both towers plus the learnable log logit scale (init log(1
  / 0.07)).

Dense readouts of the last block (:func:`dense_features`), given its input
tokens ``x``, ``h = LN_1(x)``, ``q, k, v`` its projections and ``W_o`` the
output projection:

* ``'plain'``: the last block's patch outputs (residual, attention and MLP),
  then ``ln_post`` and the projection;
* ``'maskclip'`` (MaskCLIP): ``proj(ln_post(W_o v))``: value embeddings, no
  attention mixing;
* ``'sclip'`` (SCLIP's correlative self-attention): ``W_o (½[σ(q qᵀ/√d) + σ(k
  kᵀ/√d)] v)``;
* ``'proxy'`` (ProxyCLIP-style, training-free): ``W_o (A v)`` with a given VFM
  affinity ``A``.

All readouts return unnormalised ``[B, N, E]`` patch features
(``N = (S / patch)²``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers.core import validation as V
from jaxpapers.sscl._affinity import _l2

READOUTS = ("plain", "maskclip", "sclip", "proxy")


def _images(images, patch=None):
  images = V.check_array(images, "images", ndim=4, dtype="real", nonempty=True)
  if images.shape[-1] != 3:
    raise ValueError(
      f"images must have shape [B, S, S, 3] (RGB), got {images.shape}"
    )
  if patch is not None and (images.shape[1] % patch or images.shape[2] % patch):
    raise ValueError(
      f"images must have sides divisible by the patch size {patch}, "
      f"got {images.shape}"
    )
  x = images.astype(jnp.float32)
  if images.dtype == jnp.uint8:
    x = x / 255.0
  return x


def _patchify(x, p):
  B, H, W, C = x.shape
  x = x.reshape(B, H // p, p, W // p, p, C).transpose(0, 1, 3, 2, 4, 5)
  return x.reshape(B, (H // p) * (W // p), p * p * C)


class Block(nnx.Module):
  """Pre-LN transformer block: ``x + MHA(LN x)``, then ``x + MLP(LN x)``."""

  def __init__(
    self, dim: int, heads: int, *, mlp_ratio: int = 2, rngs: nnx.Rngs
  ):
    if dim % heads:
      raise ValueError(
        f"dim must be divisible by heads, got dim={dim}, heads={heads}"
      )
    self.heads = heads
    self.ln1 = nnx.LayerNorm(dim, rngs=rngs)
    self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
    self.out = nnx.Linear(dim, dim, rngs=rngs)
    self.ln2 = nnx.LayerNorm(dim, rngs=rngs)
    self.fc1 = nnx.Linear(dim, mlp_ratio * dim, rngs=rngs)
    self.fc2 = nnx.Linear(mlp_ratio * dim, dim, rngs=rngs)

  def qkv_heads(self, x):
    """``[B, T, d]`` -> q, k, v each ``[B, heads, T, d / heads]`` (after ``ln1``)."""
    B, T, d = x.shape
    qkv = self.qkv(self.ln1(x)).reshape(B, T, 3, self.heads, d // self.heads)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    return q, k, v

  def merge(self, y):
    B, H, T, dh = y.shape
    return self.out(y.transpose(0, 2, 1, 3).reshape(B, T, H * dh))

  def __call__(self, x, mask=None):
    q, k, v = self.qkv_heads(x)
    logits = jnp.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:  # [B, T] valid keys
      logits = jnp.where(mask[:, None, None, :], logits, -1e9)
    x = x + self.merge(jax.nn.softmax(logits, -1) @ v)
    return x + self.fc2(jax.nn.gelu(self.fc1(self.ln2(x))))


class TinyViT(nnx.Module):
  """``[B, S, S, 3]`` images (uint8 or float in [0, 1]) -> class and patch
  features.

  Args:
    size: ``S``, the image side in pixels (divisible by ``patch``).
    patch: the patch side in pixels; the image has ``N = (S / patch)²`` patches.
    width: the token width.
    depth: the number of transformer blocks (>= 1).
    heads: attention heads (``width`` divisible by ``heads``).
    embed_dim: ``E``, the width of the projected class and patch features.
    rngs: the parameters' random streams.
  """

  def __init__(
    self,
    *,
    size: int = 32,
    patch: int = 4,
    width: int = 64,
    depth: int = 3,
    heads: int = 4,
    embed_dim: int = 64,
    rngs: nnx.Rngs,
  ):
    V.check_int(size, "size", min_value=1)
    self.patch = V.check_int(patch, "patch", min_value=1)
    if size % patch:
      raise ValueError(
        f"size must be divisible by patch, got size={size}, patch={patch}"
      )
    V.check_int(depth, "depth", min_value=1)
    n = (size // patch) ** 2
    self.embed = nnx.Linear(patch * patch * 3, width, rngs=rngs)
    self.cls = nnx.Param(0.02 * jax.random.normal(rngs.params(), (1, 1, width)))
    self.pos = nnx.Param(
      0.02 * jax.random.normal(rngs.params(), (1, n + 1, width))
    )
    self.blocks = nnx.List(
      [Block(width, heads, rngs=rngs) for _ in range(depth)]
    )
    self.ln_post = nnx.LayerNorm(width, rngs=rngs)
    self.proj = nnx.Linear(width, embed_dim, use_bias=False, rngs=rngs)

  def tokens(self, images: jax.Array) -> jax.Array:
    """Tokens entering the last block.

    Args:
      images: ``[B, S, S, 3]`` uint8 or float images in [0, 1].

    Returns:
      ``[B, 1 + N, width]`` float tokens (class token first).
    """
    x = self.embed(_patchify(_images(images, self.patch), self.patch))
    x = jnp.concatenate(
      [jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1])), x], 1
    )
    x = x + self.pos[...]
    for blk in self.blocks[:-1]:
      x = blk(x)
    return x

  def __call__(self, images):
    """Unit-norm global embeddings ``[B, E]`` (the class token)."""
    x = self.blocks[-1](self.tokens(images))
    return _l2(self.proj(self.ln_post(x[:, 0])))

  def dense(
    self,
    images: jax.Array,
    readout: str = "maskclip",
    affinity: jax.Array | None = None,
  ) -> jax.Array:
    """Patch features with one of :data:`READOUTS` (see module doc).

    Args:
      images: ``[B, S, S, 3]`` uint8 or float images in [0, 1].
      readout: one of :data:`READOUTS`.
      affinity: ``[B, N, N]`` row-stochastic affinity, required for
        ``readout='proxy'``.

    Returns:
      ``[B, N, E]`` unnormalised patch features.
    """
    return self._dense(self.tokens(images), readout, affinity)

  def encode(
    self,
    images: jax.Array,
    readout: str = "maskclip",
    affinity: jax.Array | None = None,
  ) -> tuple[jax.Array, jax.Array]:
    """Global and patch features, sharing the first blocks' computation.

    Args:
      images: ``[B, S, S, 3]`` uint8 or float images in [0, 1].
      readout: one of :data:`READOUTS`, for the patch features.
      affinity: ``[B, N, N]`` row-stochastic affinity, required for
        ``readout='proxy'``.

    Returns:
      ``(global [B, E] unit-norm, dense [B, N, E] unnormalised)``.
    """
    x = self.tokens(images)
    g = _l2(self.proj(self.ln_post(self.blocks[-1](x)[:, 0])))
    return g, self._dense(x, readout, affinity)

  def _dense(self, x, readout, affinity):
    if readout not in READOUTS:
      raise ValueError(
        f"readout must be one of {list(READOUTS)}, got {readout!r}"
      )
    last = self.blocks[-1]
    if readout == "plain":
      y = last(x)[:, 1:]
    else:
      q, k, v = (t[:, :, 1:] for t in last.qkv_heads(x))  # patch tokens only
      if readout == "maskclip":
        mixed = v
      elif readout == "sclip":
        sc = 1.0 / math.sqrt(q.shape[-1])
        aq = jax.nn.softmax(jnp.einsum("bhtd,bhsd->bhts", q, q) * sc, -1)
        ak = jax.nn.softmax(jnp.einsum("bhtd,bhsd->bhts", k, k) * sc, -1)
        mixed = 0.5 * (aq + ak) @ v
      else:
        if affinity is None:
          raise ValueError(
            "affinity must be given for readout='proxy' ([B, N, N])"
          )
        n = v.shape[2]
        affinity = V.check_array(
          affinity, "affinity", shape=(v.shape[0], n, n), dtype=("float")
        )
        mixed = affinity[:, None] @ v
      y = last.merge(mixed)
    return self.proj(self.ln_post(y))


class TinyTextEncoder(nnx.Module):
  """``[B, L]`` int token ids (0 = padding) -> unit-norm ``[B, E]`` embeddings.

  Args:
    vocab: the vocabulary size (>= 2; id 0 is padding).
    max_len: the longest token sequence (>= 1).
    width: the token width.
    depth: the number of transformer blocks (>= 1).
    heads: attention heads (``width`` divisible by ``heads``).
    embed_dim: ``E``, the embedding width.
    rngs: the parameters' random streams.
  """

  def __init__(
    self,
    vocab: int,
    *,
    max_len: int = 20,
    width: int = 64,
    depth: int = 2,
    heads: int = 4,
    embed_dim: int = 64,
    rngs: nnx.Rngs,
  ):
    self.vocab = V.check_int(vocab, "vocab", min_value=2)
    self.max_len = V.check_int(max_len, "max_len", min_value=1)
    V.check_int(depth, "depth", min_value=1)
    self.tok = nnx.Embed(vocab, width, rngs=rngs)
    self.pos = nnx.Param(
      0.02 * jax.random.normal(rngs.params(), (max_len, width))
    )
    self.blocks = nnx.List(
      [Block(width, heads, rngs=rngs) for _ in range(depth)]
    )
    self.ln = nnx.LayerNorm(width, rngs=rngs)
    self.proj = nnx.Linear(width, embed_dim, use_bias=False, rngs=rngs)

  def __call__(self, tokens):
    tokens = V.check_array(tokens, "tokens", ndim=2, dtype="int", nonempty=True)
    L = tokens.shape[1]
    if L > self.max_len:
      raise ValueError(
        f"tokens must have at most max_len={self.max_len} columns, got {L}"
      )
    mask = tokens > 0
    x = self.tok(tokens) + self.pos[...][:L]
    for blk in self.blocks:
      x = blk(x, mask)
    m = mask[..., None].astype(jnp.float32)
    pooled = (self.ln(x) * m).sum(1) / jnp.maximum(m.sum(1), 1.0)
    return _l2(self.proj(pooled))


class TinyCLIP(nnx.Module):
  """:class:`TinyViT` + :class:`TinyTextEncoder` + learnable ``log_scale``.

  Args:
    vocab: the text vocabulary size (>= 2; id 0 is padding).
    size, patch, width, depth, heads, embed_dim: the image tower's
      (:class:`TinyViT`); the text tower shares ``width``, ``heads`` and
      ``embed_dim``.
    text_depth: the text tower's number of blocks (>= 1).
    max_len: the longest token sequence.
    rngs: the parameters' random streams.
  """

  def __init__(
    self,
    vocab: int,
    *,
    size: int = 32,
    patch: int = 4,
    width: int = 64,
    depth: int = 3,
    text_depth: int = 2,
    heads: int = 4,
    embed_dim: int = 64,
    max_len: int = 20,
    rngs: nnx.Rngs,
  ):
    self.image = TinyViT(
      size=size,
      patch=patch,
      width=width,
      depth=depth,
      heads=heads,
      embed_dim=embed_dim,
      rngs=rngs,
    )
    self.text = TinyTextEncoder(
      vocab,
      max_len=max_len,
      width=width,
      depth=text_depth,
      heads=heads,
      embed_dim=embed_dim,
      rngs=rngs,
    )
    self.log_scale = nnx.Param(jnp.asarray(math.log(1 / 0.07), jnp.float32))

  def logit_scale(self) -> jax.Array:
    """The CLIP logit scale ``exp(log_scale)``, clipped to [1, 100].

    Returns:
      Scalar float32.
    """
    return jnp.exp(jnp.clip(self.log_scale[...], 0.0, math.log(100.0)))


def dense_features(
  model: TinyCLIP | TinyViT,
  images: jax.Array,
  *,
  readout: str = "maskclip",
  affinity: jax.Array | None = None,
) -> jax.Array:
  """Dense patch features of a tiny CLIP image tower (readouts in the module
  docstring).

  Args:
    model: a :class:`TinyCLIP` or :class:`TinyViT`.
    images: ``[B, S, S, 3]`` uint8 or float images.
    readout: one of ``'plain'``, ``'maskclip'``, ``'sclip'``, ``'proxy'``.
    affinity: ``[B, N, N]`` VFM affinity for ``readout='proxy'``.

  Returns:
    ``[B, N, E]`` float32 unnormalised patch features, ``N = (S / patch)²`` in row-major order.
  """
  vit = model.image if isinstance(model, TinyCLIP) else model
  if not isinstance(vit, TinyViT):
    raise TypeError(
      f"model must be a TinyCLIP or TinyViT, got {type(model).__name__}"
    )
  _images(images, vit.patch)
  return vit.dense(images, readout, affinity)


def handcrafted_vfm(images: jax.Array, patch: int) -> jax.Array:
  """A deterministic frozen "VFM" for CPU tests: per-patch colour and edge
  statistics.

  Reconstruction (stands in for DINO). Per ``patch x patch`` cell: mean RGB (3),
  RGB standard deviation (3) and the mean magnitude of horizontal / vertical /
  two diagonal finite differences (4); each of the 10 features is then centred
  over the image's patches and divided by its standard deviation over the image
  (so cosines have both signs).

  Args:
    images: ``[B, S, S, 3]`` uint8 or float images, sides divisible by
      ``patch``.
    patch: the patch side (>= 1).

  Returns:
    ``[B, N, 10]`` float32 features, ``N = (S / patch)²`` row-major.
  """
  patch = V.check_int(patch, "patch", min_value=1)
  x = _images(images, patch)
  g = x.mean(-1, keepdims=True)
  pad = jnp.pad(g, ((0, 0), (0, 1), (0, 1), (0, 0)), mode="edge")
  dx = jnp.abs(pad[:, :-1, 1:] - pad[:, :-1, :-1])
  dy = jnp.abs(pad[:, 1:, :-1] - pad[:, :-1, :-1])
  d1 = jnp.abs(pad[:, 1:, 1:] - pad[:, :-1, :-1])
  d2 = jnp.abs(pad[:, 1:, :-1] - pad[:, :-1, 1:])
  # [B, N, p*p*7]
  cells = _patchify(jnp.concatenate([x, dx, dy, d1, d2], -1), patch)
  B, N, _ = cells.shape
  cells = cells.reshape(B, N, patch * patch, 7)
  feats = jnp.concatenate(
    [cells[..., :3].mean(2), cells[..., :3].std(2), cells[..., 3:].mean(2)], -1
  )  # [B, N, 10]
  feats = feats - feats.mean(1, keepdims=True)
  return feats / (feats.std(1, keepdims=True) + 1e-6)


def instance_vfm(
  instance_map: jax.Array, patch: int, num_slots: int
) -> jax.Array:
  """A grouping-only frozen "VFM": per patch, the fraction of its pixels in each
  region.

  Reconstruction (stands in for DINO's spatial consistency, without its
  semantics). Region ``r`` is the background (``r = 0``) or object slot
  ``r - 1``; the feature of a patch is its ``[num_slots + 1]`` histogram over
  regions. Two patches of the same object have cosine 1, patches of different
  objects cosine 0, whatever their class: the features say which patches belong
  together and nothing about what they are. Built from the rendered instance
  map, it is a clean upper bound on a real VFM's grouping.

  Args:
    instance_map: ``[B, S, S]`` int region ids in ``[0, num_slots]`` (0 =
      background), sides divisible by ``patch``.
    patch: the patch side (>= 1).
    num_slots: the number of object slots (>= 1).

  Returns:
    ``[B, N, num_slots + 1]`` float32 region fractions (rows sum to 1),
    ``N = (S / patch)²`` row-major.
  """
  patch = V.check_int(patch, "patch", min_value=1)
  num_slots = V.check_int(num_slots, "num_slots", min_value=1)
  m = V.check_array(
    instance_map, "instance_map", ndim=3, dtype="int", nonempty=True
  )
  if m.shape[1] % patch or m.shape[2] % patch:
    raise ValueError(
      f"instance_map must have sides divisible by the patch size {patch}, "
      f"got {m.shape}"
    )
  onehot = jax.nn.one_hot(m, num_slots + 1, dtype=jnp.float32)  # [B, S, S, R]
  cells = _patchify(onehot, patch)  # [B, N, p*p*R]
  B, N, _ = cells.shape
  return cells.reshape(B, N, patch * patch, num_slots + 1).mean(2)
