"""Networks of Dual-Rate Diffusion (Flax NNX) [reconstruction].

* :class:`ContextEncoder` ``E_phi(z_tau, tau, c) -> h``: a ViT on patches whose
  output token grid ``h [B, H/p, W/p, C_E]`` is the high-dimensional context.
  Heavy; evaluated sparsely.
* :class:`LightDenoiser` ``D_psi(z_t, t, h, tau, c) -> output``: a small conv
  net at full resolution. ``h`` is projected (1x1) at its own resolution,
  upsampled to the image grid and concatenated with ``z_t``; every residual
  block is FiLM-modulated by an embedding of ``(t, tau, lambda_t - lambda_tau)``
  so the denoiser knows how stale ``h`` is.
* :class:`DualRateModel`: holds both; ``encode`` / ``denoise``.
* :class:`SingleNetwork`: the standard single-network baseline of the heavy
  model's size, the same ViT as the encoder with an unpatchify head that
  predicts the output directly.

Class labels ``cond`` are integer arrays [B] in [0, num_classes)
(``num_classes`` itself is the "no label" token, as is ``cond=None``); a float
label is a ``TypeError`` and a label passed to an unconditional model
(``num_classes=0``) a ``ValueError``. Out-of-range labels raise ``ValueError``
when concrete; under ``jax.jit`` the embedding lookup reads NaN, so the output
is NaN.

Outputs are in the model's ``parametrization`` ('v' by default, or 'x' / 'eps');
convert with ``output_to_x``. The paper's architecture is not public: everything
here is a reconstruction following spec §3.2 (U-ViT/DiT-like encoder, conv light
denoiser with FiLM).

References: arXiv:2605.18190 (Dual-Rate Diffusion); Peebles & Xie, DiT,
arXiv:2212.09748; Perez et al., FiLM, arXiv:1709.07871.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers.core import validation as val
from jaxpapers.dual_rate._schedule import PARAMETRIZATIONS


def timestep_embedding(
  t: ArrayLike, dim: int, *, scale: float = 1000.0
) -> jax.Array:
  """Sinusoidal embedding of times (Vaswani et al.; as in DDPM).

  Args:
    t: [B] float times.
    dim: embedding width, an even int >= 2.
    scale: factor applied to ``t`` before the sinusoids (1000 maps t in [0, 1]
      to DDPM steps).

  Returns:
    [B, dim] float32 array: ``dim / 2`` sines followed by ``dim / 2`` cosines.
  """
  if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2 or dim % 2:
    raise ValueError(f"dim must be an even int >= 2, got {dim!r}")
  if jnp.ndim(t) != 1:
    raise ValueError(f"t must have shape [B], got shape {jnp.shape(t)}")
  half = dim // 2
  freqs = jnp.exp(
    -math.log(10_000.0) * jnp.arange(half, dtype=jnp.float32) / half
  )
  args = scale * jnp.asarray(t, jnp.float32)[:, None] * freqs[None]
  return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)


def _check_image(z, name="z"):
  if not hasattr(z, "ndim") or z.ndim != 4:
    raise ValueError(
      f"{name} must be an image batch [B, H, W, C], "
      f"got shape {getattr(z, 'shape', None)}"
    )


def _as_cond(cond, batch: int, num_classes: int):
  """Integer labels [B] in [0, num_classes] (None or num_classes: the "no label"
  token).

  Shapes and dtypes are checked at trace time; the range eagerly when ``cond``
  is concrete. Under ``jax.jit`` an out-of-range label reads a NaN embedding
  (the lookup fills with NaN), so the output is NaN, never a plausible image.
  """
  if num_classes == 0:
    if cond is not None:
      raise ValueError(
        "cond was given but the model is unconditional (num_classes=0); pass "
        "cond=None or build the model with num_classes > 0"
      )
    return None
  if cond is None:
    return jnp.full((batch,), num_classes, jnp.int32)
  if not hasattr(cond, "dtype"):
    cond = np.asarray(cond)
  if not jnp.issubdtype(cond.dtype, jnp.integer):
    raise TypeError(
      f"cond must be integer class labels, got dtype {cond.dtype}"
    )
  if cond.shape != (batch,):
    raise ValueError(
      f"cond must be int labels of shape [{batch}], got {cond.shape}"
    )
  val.debug_check_values(
    (cond >= 0) & (cond <= num_classes),
    (
      f"cond must be class labels in [0, {num_classes}) or {num_classes} for "
      f"'no label' (num_classes={num_classes})"
    ),
  )
  return jnp.asarray(cond, jnp.int32)


def _as_time(t, batch: int, name="t"):
  t = jnp.asarray(t, jnp.float32)
  if t.ndim == 0:
    t = jnp.full((batch,), t)
  if t.shape != (batch,):
    raise ValueError(
      f"{name} must be a scalar or shape [{batch}], got {t.shape}"
    )
  return t


class _ViTBlock(nnx.Module):
  """Pre-LN transformer block."""

  def __init__(
    self, width: int, num_heads: int, mlp_ratio: int, *, rngs: nnx.Rngs
  ):
    self.ln1 = nnx.LayerNorm(width, rngs=rngs)
    self.attn = nnx.MultiHeadAttention(
      num_heads=num_heads, in_features=width, decode=False, rngs=rngs
    )
    self.ln2 = nnx.LayerNorm(width, rngs=rngs)
    self.mlp1 = nnx.Linear(width, mlp_ratio * width, rngs=rngs)
    self.mlp2 = nnx.Linear(mlp_ratio * width, width, rngs=rngs)

  def __call__(self, x):
    x = x + self.attn(self.ln1(x))
    return x + self.mlp2(jax.nn.gelu(self.mlp1(self.ln2(x))))


class _ViTTrunk(nnx.Module):
  """Patchify -> tokens (+ position, time and class embeddings) -> transformer
  blocks."""

  def __init__(
    self,
    *,
    image_size: int,
    channels: int,
    patch_size: int,
    width: int,
    depth: int,
    num_heads: int,
    mlp_ratio: int,
    num_classes: int,
    rngs: nnx.Rngs,
  ):
    if image_size % patch_size:
      raise ValueError(
        f"image_size ({image_size}) must be divisible by patch_size "
        f"({patch_size})"
      )
    self.image_size, self.channels, self.patch_size = (
      image_size,
      channels,
      patch_size,
    )
    self.grid = image_size // patch_size
    self.num_classes = num_classes
    self.embed = nnx.Linear(
      patch_size * patch_size * channels, width, rngs=rngs
    )
    self.pos = nnx.Param(
      0.02 * jax.random.normal(rngs.params(), (1, self.grid**2, width))
    )
    self.t_mlp1 = nnx.Linear(width, width, rngs=rngs)
    self.t_mlp2 = nnx.Linear(width, width, rngs=rngs)
    # Index num_classes is the "no label" token (unconditional / classifier-free
    # dropout).
    self.class_embed = (
      nnx.Embed(num_classes + 1, width, rngs=rngs) if num_classes > 0 else None
    )
    self.blocks = nnx.List(
      [_ViTBlock(width, num_heads, mlp_ratio, rngs=rngs) for _ in range(depth)]
    )
    self.ln = nnx.LayerNorm(width, rngs=rngs)
    self.width = width

  def __call__(self, z, t, cond):
    _check_image(z)
    b, h, w, c = z.shape
    if (h, w, c) != (self.image_size, self.image_size, self.channels):
      raise ValueError(
        f"z must be [B, {self.image_size}, {self.image_size}, "
        f"{self.channels}], got {z.shape}"
      )
    t = _as_time(t, b)
    cond = _as_cond(cond, b, self.num_classes)
    p, g = self.patch_size, self.grid
    tok = (
      z.reshape(b, g, p, g, p, c)
      .transpose(0, 1, 3, 2, 4, 5)
      .reshape(b, g * g, p * p * c)
    )
    x = self.embed(tok) + self.pos[...]
    e = self.t_mlp2(jax.nn.silu(self.t_mlp1(timestep_embedding(t, self.width))))
    # None together: num_classes == 0
    if self.class_embed is not None and cond is not None:
      e = e + self.class_embed(cond)
    x = x + e[:, None, :]
    for blk in self.blocks:
      x = blk(x)
    return self.ln(x)  # [B, g*g, width]


class ContextEncoder(nnx.Module):
  """Heavy context encoder ``E_phi(z_tau, tau, c) -> h [B, H/p, W/p, C_E]`` (ViT) [reconstruction].

  Args:
    image_size: side H = W of the square input images; divisible by
      ``patch_size``.
    channels: image channels C.
    patch_size: side p of the square patches.
    width: transformer width.
    depth: number of transformer blocks.
    num_heads: attention heads per block.
    mlp_ratio: hidden width of each MLP as a multiple of ``width``.
    feature_dim: channels C_E of the context ``h``.
    num_classes: number of class labels (0: unconditional).
    rngs: random streams for the initialisation.
  """

  def __init__(
    self,
    *,
    image_size: int = 8,
    channels: int = 1,
    patch_size: int = 2,
    width: int = 128,
    depth: int = 4,
    num_heads: int = 4,
    mlp_ratio: int = 4,
    feature_dim: int = 128,
    num_classes: int = 0,
    rngs: nnx.Rngs,
  ):
    self.trunk = _ViTTrunk(
      image_size=image_size,
      channels=channels,
      patch_size=patch_size,
      width=width,
      depth=depth,
      num_heads=num_heads,
      mlp_ratio=mlp_ratio,
      num_classes=num_classes,
      rngs=rngs,
    )
    self.out = nnx.Linear(width, feature_dim, rngs=rngs)
    self.feature_dim = feature_dim

  def __call__(self, z, t, cond=None):
    """z [B,H,W,C], t [B] or scalar, cond [B] int or None -> h [B, H/p, W/p, C_E]."""
    x = self.out(self.trunk(z, t, cond))
    g = self.trunk.grid
    return x.reshape(x.shape[0], g, g, self.feature_dim)


class SingleNetwork(nnx.Module):
  """Standard single-network denoiser of the heavy model's size: the encoder's
  ViT trunk plus an unpatchify head. ``__call__(z, t, cond) -> output`` in
  ``parametrization``.

  Args:
    image_size: side H = W of the square input images; divisible by
      ``patch_size``.
    channels: image channels C.
    patch_size: side p of the square patches.
    width: transformer width.
    depth: number of transformer blocks.
    num_heads: attention heads per block.
    mlp_ratio: hidden width of each MLP as a multiple of ``width``.
    num_classes: number of class labels (0: unconditional).
    parametrization: what the output predicts: 'x', 'v' or 'eps'.
    rngs: random streams for the initialisation.
  """

  def __init__(
    self,
    *,
    image_size: int = 8,
    channels: int = 1,
    patch_size: int = 2,
    width: int = 128,
    depth: int = 4,
    num_heads: int = 4,
    mlp_ratio: int = 4,
    num_classes: int = 0,
    parametrization: str = "v",
    rngs: nnx.Rngs,
  ):
    if parametrization not in PARAMETRIZATIONS:
      raise ValueError(
        f"parametrization must be one of {PARAMETRIZATIONS}, "
        f"got {parametrization!r}"
      )
    self.parametrization = parametrization
    self.trunk = _ViTTrunk(
      image_size=image_size,
      channels=channels,
      patch_size=patch_size,
      width=width,
      depth=depth,
      num_heads=num_heads,
      mlp_ratio=mlp_ratio,
      num_classes=num_classes,
      rngs=rngs,
    )
    self.head = nnx.Linear(
      width,
      patch_size * patch_size * channels,
      kernel_init=nnx.initializers.zeros,
      rngs=rngs,
    )

  def __call__(self, z, t, cond=None):
    b = z.shape[0]
    x = self.head(self.trunk(z, t, cond))  # [B, g*g, p*p*C]
    g, p, c = self.trunk.grid, self.trunk.patch_size, self.trunk.channels
    return (
      x.reshape(b, g, g, p, p, c)
      .transpose(0, 1, 3, 2, 4, 5)
      .reshape(b, g * p, g * p, c)
    )


class _FiLMResBlock(nnx.Module):
  def __init__(self, ch: int, emb_dim: int, *, rngs: nnx.Rngs):
    self.norm1 = nnx.GroupNorm(ch, num_groups=min(8, ch), rngs=rngs)
    self.conv1 = nnx.Conv(ch, ch, kernel_size=(3, 3), rngs=rngs)
    self.film = nnx.Linear(
      emb_dim, 2 * ch, kernel_init=nnx.initializers.zeros, rngs=rngs
    )
    self.norm2 = nnx.GroupNorm(ch, num_groups=min(8, ch), rngs=rngs)
    self.conv2 = nnx.Conv(ch, ch, kernel_size=(3, 3), rngs=rngs)

  def __call__(self, x, emb):
    y = self.conv1(jax.nn.silu(self.norm1(x)))
    scale, shift = jnp.split(self.film(emb)[:, None, None, :], 2, axis=-1)
    y = self.norm2(y) * (1.0 + scale) + shift
    return x + self.conv2(jax.nn.silu(y))


class LightDenoiser(nnx.Module):
  """Light per-step denoiser ``D_psi(z_t, t, h, tau, c) -> output`` [reconstruction].

  h [B, g, g, C_E] is projected to ``context_channels`` with a 1x1 conv at grid
  resolution, upsampled (nearest) to H x W and concatenated with z_t. FiLM
  embedding: sinusoidal(t), sinusoidal(tau) and ``lambda_t - lambda_tau`` (the
  staleness in log-SNR; passed in by the caller through ``delta_logsnr``) plus
  an optional class embedding.

  Args:
    channels: image channels C.
    feature_dim: channels C_E of the context ``h`` it reads.
    width: channels of the residual blocks.
    num_blocks: number of FiLM-modulated residual blocks.
    context_channels: channels of ``h`` after the 1x1 projection.
    emb_dim: width of the time / class embedding that drives FiLM.
    num_classes: number of class labels (0: unconditional).
    parametrization: what the output predicts: 'x', 'v' or 'eps'.
    rngs: random streams for the initialisation.
  """

  def __init__(
    self,
    *,
    channels: int = 1,
    feature_dim: int = 128,
    width: int = 24,
    num_blocks: int = 2,
    context_channels: int = 16,
    emb_dim: int = 64,
    num_classes: int = 0,
    parametrization: str = "v",
    rngs: nnx.Rngs,
  ):
    if parametrization not in PARAMETRIZATIONS:
      raise ValueError(
        f"parametrization must be one of {PARAMETRIZATIONS}, "
        f"got {parametrization!r}"
      )
    self.parametrization = parametrization
    self.emb_dim, self.num_classes = emb_dim, num_classes
    self.ctx = nnx.Conv(
      feature_dim, context_channels, kernel_size=(1, 1), rngs=rngs
    )
    self.inp = nnx.Conv(
      channels + context_channels, width, kernel_size=(3, 3), rngs=rngs
    )
    self.e1 = nnx.Linear(2 * emb_dim + 1, emb_dim, rngs=rngs)
    self.e2 = nnx.Linear(emb_dim, emb_dim, rngs=rngs)
    self.class_embed = (
      nnx.Embed(num_classes + 1, emb_dim, rngs=rngs)
      if num_classes > 0
      else None
    )
    self.blocks = nnx.List(
      [_FiLMResBlock(width, emb_dim, rngs=rngs) for _ in range(num_blocks)]
    )
    self.norm = nnx.GroupNorm(width, num_groups=min(8, width), rngs=rngs)
    self.out = nnx.Conv(
      width,
      channels,
      kernel_size=(3, 3),
      kernel_init=nnx.initializers.zeros,
      rngs=rngs,
    )

  def __call__(self, z, t, h, tau, cond=None, delta_logsnr=None):
    _check_image(z)
    _check_image(h, "h")
    b, hh, ww, _ = z.shape
    t, tau = _as_time(t, b), _as_time(tau, b, "tau")
    cond = _as_cond(cond, b, self.num_classes)
    if h.shape[0] != b or hh % h.shape[1] or ww % h.shape[2]:
      raise ValueError(
        f"h {h.shape} must have batch {b} and a grid dividing the image "
        f"{z.shape[1:3]}"
      )
    c = self.ctx(h)
    c = jnp.repeat(
      jnp.repeat(c, hh // h.shape[1], axis=1), ww // h.shape[2], axis=2
    )
    x = self.inp(jnp.concatenate([z, c], axis=-1))
    dl = (
      jnp.zeros((b,), jnp.float32)
      if delta_logsnr is None
      else jnp.broadcast_to(delta_logsnr, (b,))
    )
    e = jnp.concatenate(
      [
        timestep_embedding(t, self.emb_dim),
        timestep_embedding(tau, self.emb_dim),
        0.1 * dl[:, None],
      ],
      axis=-1,
    )
    e = self.e2(jax.nn.silu(self.e1(e)))
    # None together: num_classes == 0
    if self.class_embed is not None and cond is not None:
      e = e + self.class_embed(cond)
    e = jax.nn.silu(e)
    for blk in self.blocks:
      x = blk(x, e)
    return self.out(jax.nn.silu(self.norm(x)))


class DualRateModel(nnx.Module):
  """The (E, D) pair. ``encode(z, t, cond) -> h``; ``denoise(z, t, h, tau, cond) -> output``.

  ``denoise`` feeds the light model the log-SNR gap ``lambda_t - lambda_tau``
  computed with the model's schedule-free convention: callers pass it (samplers
  and the loss do) or it is zero.

  Args:
    image_size: side H = W of the square input images; divisible by
      ``patch_size``.
    channels: image channels C.
    patch_size: the encoder's patch side p.
    encoder_width: the encoder's transformer width.
    encoder_depth: the encoder's number of transformer blocks.
    num_heads: attention heads per encoder block.
    mlp_ratio: the encoder's MLP hidden width as a multiple of
      ``encoder_width``.
    feature_dim: channels C_E of the context ``h``.
    denoiser_width: channels of the light denoiser's residual blocks.
    denoiser_blocks: number of residual blocks of the light denoiser.
    context_channels: channels of ``h`` after the denoiser's 1x1 projection.
    denoiser_emb_dim: width of the denoiser's FiLM embedding.
    num_classes: number of class labels (0: unconditional).
    parametrization: what ``denoise`` predicts: 'x', 'v' or 'eps'.
    rngs: random streams for the initialisation.
  """

  def __init__(
    self,
    *,
    image_size: int = 8,
    channels: int = 1,
    patch_size: int = 2,
    encoder_width: int = 128,
    encoder_depth: int = 4,
    num_heads: int = 4,
    mlp_ratio: int = 4,
    feature_dim: int = 128,
    denoiser_width: int = 24,
    denoiser_blocks: int = 2,
    context_channels: int = 16,
    denoiser_emb_dim: int = 64,
    num_classes: int = 0,
    parametrization: str = "v",
    rngs: nnx.Rngs,
  ):
    if parametrization not in PARAMETRIZATIONS:
      raise ValueError(
        f"parametrization must be one of {PARAMETRIZATIONS}, "
        f"got {parametrization!r}"
      )
    self.parametrization = parametrization
    self.encoder = ContextEncoder(
      image_size=image_size,
      channels=channels,
      patch_size=patch_size,
      width=encoder_width,
      depth=encoder_depth,
      num_heads=num_heads,
      mlp_ratio=mlp_ratio,
      feature_dim=feature_dim,
      num_classes=num_classes,
      rngs=rngs,
    )
    self.denoiser = LightDenoiser(
      channels=channels,
      feature_dim=feature_dim,
      width=denoiser_width,
      num_blocks=denoiser_blocks,
      context_channels=context_channels,
      emb_dim=denoiser_emb_dim,
      num_classes=num_classes,
      parametrization=parametrization,
      rngs=rngs,
    )

  def encode(
    self, z: jax.Array, t: ArrayLike, cond: ArrayLike | None = None
  ) -> jax.Array:
    """Runs the heavy encoder ``E_phi(z, t, c)``.

    Args:
      z: [B, H, W, C] float image batch, the noisy input at time ``t``.
      t: scalar or [B] times.
      cond: [B] int class labels, or None for "no label".

    Returns:
      the context ``h``, a [B, H/p, W/p, feature_dim] float array.
    """
    return self.encoder(z, t, cond)

  def denoise(
    self,
    z: jax.Array,
    t: ArrayLike,
    h: jax.Array,
    tau: ArrayLike,
    cond: ArrayLike | None = None,
    delta_logsnr: ArrayLike | None = None,
  ) -> jax.Array:
    """Runs the light denoiser ``D_psi(z_t, t, h, tau, c)`` on a (possibly
    stale) context.

    Args:
      z: [B, H, W, C] float image batch at time ``t``.
      t: scalar or [B] current times.
      h: [B, H/p, W/p, feature_dim] context computed by :meth:`encode` at time
        ``tau``.
      tau: scalar or [B] times at which ``h`` was computed.
      cond: [B] int class labels, or None for "no label".
      delta_logsnr: scalar or [B] staleness ``lambda_t - lambda_tau``; None
        means zero.

    Returns:
      [B, H, W, C] float array in the model's ``parametrization``.
    """
    return self.denoiser(z, t, h, tau, cond, delta_logsnr)

  def __call__(self, z, t, cond=None):
    """Fresh-feature composite D(z, t, E(z, t), t): the K = 1 network."""
    return self.denoise(z, t, self.encode(z, t, cond), t, cond)


def count_params(model: nnx.Module) -> int:
  """Number of trainable parameters.

  Args:
    model: any Flax NNX module.

  Returns:
    the total size of its ``nnx.Param`` leaves.
  """
  if not isinstance(model, nnx.Module):
    raise TypeError(f"model must be an nnx.Module, got {type(model).__name__}")
  return int(sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param))))


NETWORK_SETTINGS = (
  "patch_size",
  "num_heads",
  "mlp_ratio",
  "encoder_width",
  "encoder_depth",
  "feature_dim",
  "denoiser_width",
  "denoiser_blocks",
  "context_channels",
  "denoiser_emb_dim",
  "parametrization",
)


def build_networks(
  cfg: Any, *, image_size: int, channels: int, num_classes: int, seed: int
) -> tuple[SingleNetwork, DualRateModel]:
  """The single-network baseline and the dual-rate pair of matching shape, as
  compared in the paper: the heavy ViT alone, and the same ViT as context
  encoder plus the light conv denoiser.

  Args:
    cfg: the settings of :data:`NETWORK_SETTINGS`, read as attributes (an
      ``ml_collections.ConfigDict`` or a dataclass): ``patch_size``,
      ``num_heads``, ``mlp_ratio``, ``encoder_width``, ``encoder_depth``,
      ``feature_dim``, ``denoiser_width``, ``denoiser_blocks``,
      ``context_channels``, ``denoiser_emb_dim`` and ``parametrization``.
    image_size: side of the square images.
    channels: image channels.
    num_classes: number of class labels (0: unconditional).
    seed: the baseline is initialised from ``seed``, the pair from ``seed + 1``.

  Returns:
    ``(baseline, pair)``: a :class:`SingleNetwork` and a :class:`DualRateModel`,
    both with ``cfg.parametrization``.

  Raises:
    ValueError: ``cfg`` lacks one of :data:`NETWORK_SETTINGS` (each value is
      checked by the network it configures).
  """
  missing = [n for n in NETWORK_SETTINGS if not hasattr(cfg, n)]
  if missing:
    raise ValueError(
      f"cfg lacks the network settings {missing} (needs "
      f"{list(NETWORK_SETTINGS)})"
    )
  vit = dict(
    image_size=image_size,
    channels=channels,
    patch_size=cfg.patch_size,
    num_heads=cfg.num_heads,
    mlp_ratio=cfg.mlp_ratio,
    num_classes=num_classes,
  )
  baseline = SingleNetwork(
    **vit,
    width=cfg.encoder_width,
    depth=cfg.encoder_depth,
    parametrization=cfg.parametrization,
    rngs=nnx.Rngs(seed),
  )
  pair = DualRateModel(
    **vit,
    encoder_width=cfg.encoder_width,
    encoder_depth=cfg.encoder_depth,
    feature_dim=cfg.feature_dim,
    denoiser_width=cfg.denoiser_width,
    denoiser_blocks=cfg.denoiser_blocks,
    context_channels=cfg.context_channels,
    denoiser_emb_dim=cfg.denoiser_emb_dim,
    parametrization=cfg.parametrization,
    rngs=nnx.Rngs(seed + 1),
  )
  return baseline, pair
