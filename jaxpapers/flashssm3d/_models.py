"""FlashSSM-3D student (bidirectional selective SSM) and a VGGT-like
alternating-attention teacher.

Both models map ``images [B, S, H, W, 3]`` in [0, 1] to :class:`Predictions` in
VGGT's output conventions (pose encoding ``absT_quaR_FoV``, depth with ``exp``
activation, points with ``inv_log``, confidences ``1 + exp``; world frame =
first camera).

Shared token layout (VGGT, arXiv:2503.11651 §3): per frame ``T = 1 + R + P``
tokens — one camera token, ``R`` register tokens, ``P = (H/p)(W/p)`` patch
tokens. Frame 0 has its own learnable camera and register tokens; the other
frames share a second set.

* **Student [reconstruction]** — each block: (1) frame mixer, a bidirectional
  SSM within each frame (raster order alternating row/column-major between
  blocks); (2) global mixer, a bidirectional SSM over all ``S·T`` tokens (order
  alternating frame-major / position-major); (3) a SwiGLU MLP; all pre-norm
  residual. Cost per block ``O(S·T·E·N)``: linear in the number of views.
* **Teacher** — VGGT's aggregator in miniature: pairs of (frame attention,
  global attention), each with an MLP. Global attention costs ``O((S·T)²)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers.flashssm3d import _ssm

__all__ = [
  "Predictions",
  "FlashSSM3DConfig",
  "TeacherConfig",
  "FlashSSM3D",
  "AATeacher",
  "pixel_statistics",
]

_N_OUT = 6  # depth, depth_conf, points(3), point_conf
_DTYPES = ("float32", "bfloat16")
_POSE_INIT = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0)


class Predictions(NamedTuple):
  """Model outputs (first-camera world frame, normalised scale).

  Attributes:
    pose_enc: ``[B, S, 9]`` absT_quaR_FoV (final refinement stage).
    depth: ``[B, S, H, W, 1]``.
    depth_conf: ``[B, S, H, W]`` (>= 1).
    points: ``[B, S, H, W, 3]``.
    point_conf: ``[B, S, H, W]`` (>= 1).
    pose_stages: ``[n, B, S, 9]`` all refinement stages.
  """

  pose_enc: jax.Array
  depth: jax.Array
  depth_conf: jax.Array
  points: jax.Array
  point_conf: jax.Array
  pose_stages: jax.Array


@dataclasses.dataclass(frozen=True)
class FlashSSM3DConfig:
  """Student hyper-parameters **[reconstruction]**.

  Attributes:
    width: token width ``D``.
    depth: number of SSM blocks (each: a within-frame and a global
      :class:`BiSSM`, and an MLP).
    state: SSM state size ``N``.
    expand: inner width factor of each :class:`BiSSM` (``E = expand · D``).
    patch: patch side ``p`` in pixels.
    registers: register tokens per frame (besides the camera token).
    image_size: side of the square input frames (divisible by ``patch``).
    mlp_ratio: hidden width of the SwiGLU MLP, as a multiple of ``width``.
    camera_stages: iterative refinement stages of the camera head.
    method: scan implementation, one of ``SCAN_METHODS`` (see
      :func:`selective_scan`).
    chunk_size: chunk length of ``method='chunked'``.
    global_orders: the global scan orders, used in turn by successive blocks
      (``'frame_major'`` / ``'position_major'``).
    remat: ``jax.checkpoint`` each block (recompute its activations in the
      backward pass).
    dtype: compute dtype of the backbone, ``'float32'`` or ``'bfloat16'``
      (parameters, scan state and heads stay float32).
    pixel_mean: per-channel RGB mean subtracted from the input images (see
      :func:`pixel_statistics`).
    pixel_std: per-channel RGB scale (> 0) the centred images are divided by.
  """

  width: int = 128
  depth: int = 4
  state: int = 16
  expand: int = 1
  patch: int = 4
  registers: int = 4
  image_size: int = 32
  mlp_ratio: int = 2
  camera_stages: int = 4
  method: str = "scan"
  chunk_size: int = 64
  global_orders: tuple = ("frame_major", "position_major")
  # jax.checkpoint each block (recompute activations in the backward pass)
  remat: bool = False
  # compute dtype of the backbone; 'bfloat16' keeps f32 params/state/heads
  dtype: str = "float32"
  pixel_mean: tuple = (0.0, 0.0, 0.0)
  pixel_std: tuple = (1.0, 1.0, 1.0)

  def __post_init__(self):
    _check_pixel_norm(self)
    for f in (
      "width",
      "depth",
      "state",
      "expand",
      "patch",
      "image_size",
      "mlp_ratio",
      "camera_stages",
      "chunk_size",
    ):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"FlashSSM3DConfig.{f} must be an int >= 1, got {v!r}")
    if self.registers < 0:
      raise ValueError(
        f"FlashSSM3DConfig.registers must be >= 0, got {self.registers}"
      )
    if isinstance(self.global_orders, str) or not tuple(self.global_orders):
      raise ValueError(
        "global_orders must be a non-empty tuple of orders, "
        f"got {self.global_orders!r}"
      )
    if self.image_size % self.patch:
      raise ValueError(
        f"image_size {self.image_size} must be divisible by patch {self.patch}"
      )
    if self.method not in _ssm.SCAN_METHODS:
      raise ValueError(
        f"method must be one of {_ssm.SCAN_METHODS}, got {self.method!r}"
      )
    if self.dtype not in _DTYPES:
      raise ValueError(
        f"FlashSSM3DConfig.dtype must be one of {_DTYPES}, got {self.dtype!r}"
      )
    if not isinstance(self.remat, bool):
      raise ValueError(
        f"FlashSSM3DConfig.remat must be a bool, got {self.remat!r}"
      )
    for o in self.global_orders:
      if o not in ("frame_major", "position_major"):
        raise ValueError(
          "global_orders entries must be 'frame_major'/'position_major', "
          f"got {o!r}"
        )


@dataclasses.dataclass(frozen=True)
class TeacherConfig:
  """Alternating-attention teacher hyper-parameters (VGGT-like, miniature).

  Attributes:
    width: token width ``D`` (divisible by ``heads``).
    depth: number of (frame attention, global attention) block pairs.
    heads: attention heads.
    patch: patch side ``p`` in pixels.
    registers: register tokens per frame (besides the camera token).
    image_size: side of the square input frames (divisible by ``patch``).
    mlp_ratio: hidden width of the SwiGLU MLPs, as a multiple of ``width``.
    camera_stages: iterative refinement stages of the camera head.
    pixel_mean: per-channel RGB mean subtracted from the input images (see
      :func:`pixel_statistics`).
    pixel_std: per-channel RGB scale (> 0) the centred images are divided by.
  """

  width: int = 128
  depth: int = 4  # number of (frame, global) attention pairs
  heads: int = 4
  patch: int = 4
  registers: int = 4
  image_size: int = 32
  mlp_ratio: int = 2
  camera_stages: int = 4
  pixel_mean: tuple = (0.0, 0.0, 0.0)
  pixel_std: tuple = (1.0, 1.0, 1.0)

  def __post_init__(self):
    _check_pixel_norm(self)
    for f in (
      "width",
      "depth",
      "heads",
      "patch",
      "image_size",
      "mlp_ratio",
      "camera_stages",
    ):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"TeacherConfig.{f} must be an int >= 1, got {v!r}")
    if self.registers < 0:
      raise ValueError(
        f"TeacherConfig.registers must be >= 0, got {self.registers}"
      )
    if self.width % self.heads:
      raise ValueError(
        f"width {self.width} must be divisible by heads {self.heads}"
      )
    if self.image_size % self.patch:
      raise ValueError(
        f"image_size {self.image_size} must be divisible by patch {self.patch}"
      )


def _check_pixel_norm(cfg):
  name = type(cfg).__name__
  for f in ("pixel_mean", "pixel_std"):
    v = getattr(cfg, f)
    try:
      vals = tuple(float(x) for x in v)
    except TypeError:
      raise ValueError(
        f"{name}.{f} must be 3 floats (R, G, B), got {v!r}"
      ) from None
    if len(vals) != 3 or not all(np.isfinite(vals)):
      raise ValueError(
        f"{name}.{f} must be 3 finite floats (R, G, B), got {v!r}"
      )
    if f == "pixel_std" and min(vals) <= 0:
      raise ValueError(f"{name}.pixel_std must be > 0 per channel, got {v!r}")
    # a hashable tuple of floats (the config is static)
    object.__setattr__(cfg, f, vals)


def pixel_statistics(
  images: Any,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
  """Per-channel mean and standard deviation of a set of images, for the models'
  input norm.

  The models subtract ``pixel_mean`` and divide by ``pixel_std`` before the
  patch embedding (as VGGT normalises its inputs for DINO). Fit them on the
  training images: rendered frames whose pixels vary little around a large
  common value (e.g. fogged scenes) otherwise give patch tokens that differ by a
  few percent of their norm, and the camera token learns to ignore the images.

  Args:
    images: ``[..., 3]`` float RGB images (any leading dims), e.g.
      ``[N, S, H, W, 3]``.

  Returns:
    ``(mean, std)``: two tuples of 3 floats (a channel without variation gets
    std 1).
  """
  x = np.asarray(images, np.float64)
  if x.ndim < 2 or x.shape[-1] != 3 or x.size == 0:
    raise ValueError(
      f"images must be [..., 3] RGB with at least one pixel, got {x.shape}"
    )
  if not np.all(np.isfinite(x)):
    raise ValueError("images must be finite")
  x = x.reshape(-1, 3)
  mean, std = x.mean(0), x.std(0)
  std = np.where(std > 1e-6, std, 1.0)
  return tuple(float(v) for v in mean), tuple(float(v) for v in std)


class SwiGLU(nnx.Module):
  def __init__(self, dim, hidden, *, dtype=None, rngs):
    self.w12 = nnx.Linear(dim, 2 * hidden, dtype=dtype, rngs=rngs)
    self.w3 = nnx.Linear(hidden, dim, dtype=dtype, rngs=rngs)

  def __call__(self, x):
    a, b = jnp.split(self.w12(x), 2, -1)
    return self.w3(jax.nn.silu(a) * b)


class Attention(nnx.Module):
  """Multi-head softmax self-attention over ``x [M, L, D]``."""

  def __init__(self, dim, heads, *, rngs):
    self.heads = heads
    self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
    self.out = nnx.Linear(dim, dim, rngs=rngs)

  def __call__(self, x):
    M, L, D = x.shape
    q, k, v = jnp.split(
      self.qkv(x).reshape(M, L, 3 * self.heads, D // self.heads), 3, axis=2
    )
    y = jax.nn.dot_product_attention(q, k, v)
    return self.out(y.reshape(M, L, D))


class _Common(nnx.Module):
  """Patch embedding, special tokens and VGGT-style heads shared by student and
  teacher."""

  def _init_common(self, cfg, *, rngs):
    D, p, R = cfg.width, cfg.patch, cfg.registers
    self.cfg = cfg
    self.compute_dtype = jnp.dtype(getattr(cfg, "dtype", "float32"))
    self.grid = (cfg.image_size // p, cfg.image_size // p)
    P = self.grid[0] * self.grid[1]
    self.num_special = 1 + R
    self.patch_embed = nnx.Linear(
      3 * p * p, D, dtype=self.compute_dtype, rngs=rngs
    )
    init = nnx.initializers.normal(0.02)
    self.pos = nnx.Param(init(rngs.params(), (P, D)))
    # [first/other, cam+regs, D]
    self.special = nnx.Param(init(rngs.params(), (2, 1 + R, D)))
    self.norm_out = nnx.LayerNorm(D, rngs=rngs)
    # camera head: trunk on the camera token + iterative refinement with shared
    # weights
    self.cam_trunk = nnx.Linear(D, D, rngs=rngs)
    self.cam_ref1 = nnx.Linear(D + 9, D, rngs=rngs)
    self.cam_ref2 = nnx.Linear(
      D, 9, rngs=rngs, kernel_init=nnx.initializers.zeros_init()
    )
    # dense head: per-token linear "pixel shuffle" to p*p*6 values
    self.dense = nnx.Linear(D, p * p * _N_OUT, rngs=rngs)

  def _tokens(self, images):
    cfg = self.cfg
    if images.ndim != 5 or images.shape[-1] != 3:
      raise ValueError(f"images must be [B, S, H, W, 3], got {images.shape}")
    if not jnp.issubdtype(images.dtype, jnp.floating):
      raise TypeError(
        f"images must be floating point in [0, 1], got {images.dtype}"
      )
    B, S, H, W, _ = images.shape
    if (H, W) != (cfg.image_size, cfg.image_size):
      raise ValueError(
        f"images must be {cfg.image_size}x{cfg.image_size} "
        f"(config.image_size), got {H}x{W}"
      )
    p, (gh, gw) = cfg.patch, self.grid
    mean = jnp.asarray(cfg.pixel_mean, images.dtype)
    std = jnp.asarray(cfg.pixel_std, images.dtype)
    x = (
      ((images - mean) / std)
      .reshape(B, S, gh, p, gw, p, 3)
      .transpose(0, 1, 2, 4, 3, 5, 6)
    )
    cdt = self.compute_dtype
    x = self.patch_embed(x.reshape(B, S, gh * gw, p * p * 3)) + self.pos[
      ...
    ].astype(cdt)
    sp = self.special[...].astype(cdt)
    first = jnp.broadcast_to(sp[0], (B, 1) + sp.shape[1:])
    rest = jnp.broadcast_to(sp[1], (B, S - 1) + sp.shape[1:])
    special = jnp.concatenate([first, rest], 1)
    return jnp.concatenate([special, x], 2)  # [B, S, T, D]

  def _heads(self, tok):
    cfg = self.cfg
    # heads in float32 (exp activations)
    tok = self.norm_out(tok.astype(jnp.float32))
    B, S = tok.shape[:2]
    # camera
    h = jax.nn.gelu(self.cam_trunk(tok[:, :, 0]))
    pose = jnp.broadcast_to(jnp.asarray(_POSE_INIT, tok.dtype), (B, S, 9))
    stages = []
    for _ in range(cfg.camera_stages):
      pose = pose + self.cam_ref2(
        jax.nn.gelu(self.cam_ref1(jnp.concatenate([h, pose], -1)))
      )
      stages.append(pose)
    stages = jnp.stack(stages)
    # dense
    p, (gh, gw) = cfg.patch, self.grid
    d = self.dense(tok[:, :, self.num_special :])  # [B, S, P, p*p*6]
    d = d.reshape(B, S, gh, gw, p, p, _N_OUT).transpose(0, 1, 2, 4, 3, 5, 6)
    d = d.reshape(B, S, gh * p, gw * p, _N_OUT)
    depth = jnp.exp(jnp.clip(d[..., 0:1], -10.0, 10.0))
    depth_conf = 1.0 + jnp.exp(jnp.clip(d[..., 1], -10.0, 10.0))
    x = d[..., 2:5]
    points = jnp.sign(x) * jnp.expm1(jnp.minimum(jnp.abs(x), 10.0))  # inv_log
    point_conf = 1.0 + jnp.exp(jnp.clip(d[..., 5], -10.0, 10.0))
    return Predictions(
      stages[-1], depth, depth_conf, points, point_conf, stages
    )

  def backbone(self, x: jax.Array) -> jax.Array:
    """The model's token mixer on ``x [B, S, T, D]``; each subclass defines
    it."""
    raise NotImplementedError

  def __call__(self, images, *, deterministic: bool = True) -> Predictions:
    """``images [B, S, H, W, 3]`` in [0, 1] -> :class:`Predictions`."""
    del deterministic  # no dropout
    tok = self._tokens(images)
    return self._heads(self.backbone(tok))


class _SSMBlock(nnx.Module):
  def __init__(self, cfg, index, grid, num_special, *, rngs):
    D = cfg.width
    dtype = jnp.dtype(cfg.dtype)
    kw: dict[str, Any] = dict(
      state=cfg.state,
      expand=cfg.expand,
      method=cfg.method,
      chunk_size=cfg.chunk_size,
      dtype=dtype,
      rngs=rngs,
    )
    self.n1, self.n2, self.n3 = (
      nnx.LayerNorm(D, dtype=dtype, rngs=rngs) for _ in range(3)
    )
    self.frame = _ssm.BiSSM(D, **kw)
    self.glob = _ssm.BiSSM(D, **kw)
    self.mlp = SwiGLU(D, cfg.mlp_ratio * D, dtype=dtype, rngs=rngs)
    self.frame_kind = "row" if index % 2 == 0 else "col"
    self.global_kind = cfg.global_orders[index % len(cfg.global_orders)]
    self.grid, self.num_special = grid, num_special

  def __call__(self, x):  # x [B, S, T, D]
    B, S, T, D = x.shape
    perm = _ssm.scan_order(
      S, self.grid, kind=self.frame_kind, num_special=self.num_special
    )
    inv = np.argsort(perm)
    h = self.n1(x)[:, :, perm]
    x = x + self.frame(h.reshape(B * S, T, D)).reshape(B, S, T, D)[:, :, inv]
    perm = _ssm.scan_order(
      S, self.grid, kind=self.global_kind, num_special=self.num_special
    )
    inv = np.argsort(perm)
    h = self.n2(x).reshape(B, S * T, D)[:, perm]
    x = x + self.glob(h)[:, inv].reshape(B, S, T, D)
    return x + self.mlp(self.n3(x))


class FlashSSM3D(_Common):
  """Attention-free student: bidirectional selective-SSM backbone + VGGT heads
  **[reconstruction]**.

  Args:
    config: :class:`FlashSSM3DConfig`.
    rngs: ``nnx.Rngs``.

  Call: ``model(images [B, S, H, W, 3]) -> Predictions``. Time and memory are
  linear in ``S``.

  Accelerator settings (``FlashSSM3DConfig``): ``method='chunked'``
  (``L / chunk_size`` sequential steps, one chunk's state in memory),
  ``remat=True`` (``jax.checkpoint`` per block), ``dtype='bfloat16'`` (bf16
  backbone; float32 parameters, scan state, Δ and heads). The batch axis is
  independent, so sharding it over a ``jax.make_mesh`` mesh needs no model
  change.

  References: FlashSSM-3D (NeurIPS 2026; no arXiv id found); Mamba,
  arXiv:2312.00752; VGGT, arXiv:2503.11651.

  Example:
    config = FlashSSM3DConfig(image_size=32, patch=4, method="chunked")
    model = FlashSSM3D(config, rngs=nnx.Rngs(0))
    batch = render_scenes(jax.random.key(0), 2, num_views=4, image_size=32)
    pred = model(batch.images)  # pred.pose_enc [2, 4, 9], pred.depth [2, 4, 32, 32, 1]
  """

  def __init__(
    self, config: FlashSSM3DConfig = FlashSSM3DConfig(), *, rngs: nnx.Rngs
  ):
    if not isinstance(config, FlashSSM3DConfig):
      raise TypeError(f"config must be a FlashSSM3DConfig, got {type(config)}")
    self._init_common(config, rngs=rngs)
    self.blocks = nnx.List(
      [
        _SSMBlock(config, i, self.grid, self.num_special, rngs=rngs)
        for i in range(config.depth)
      ]
    )

  def backbone(self, x: jax.Array) -> jax.Array:
    """The SSM blocks on the token grid.

    Args:
      x: ``[B, S, T, D]`` tokens, ``T = 1 + registers + (image_size / patch)²``
        per frame (camera token, registers, then patches row-major).

    Returns:
      ``[B, S, T, D]`` mixed tokens.
    """
    for blk in self.blocks:
      # activations of the block are recomputed in the backward pass
      if self.cfg.remat:
        x = nnx.remat(lambda b, v: b(v))(blk, x)
      else:
        x = blk(x)
    return x


class _AABlock(nnx.Module):
  def __init__(self, cfg, *, rngs):
    D = cfg.width
    self.n1, self.n2, self.n3, self.n4 = (
      nnx.LayerNorm(D, rngs=rngs) for _ in range(4)
    )
    self.frame_attn = Attention(D, cfg.heads, rngs=rngs)
    self.frame_mlp = SwiGLU(D, cfg.mlp_ratio * D, rngs=rngs)
    self.global_attn = Attention(D, cfg.heads, rngs=rngs)
    self.global_mlp = SwiGLU(D, cfg.mlp_ratio * D, rngs=rngs)

  def __call__(self, x):  # [B, S, T, D]
    B, S, T, D = x.shape
    x = x + self.frame_attn(self.n1(x).reshape(B * S, T, D)).reshape(B, S, T, D)
    x = x + self.frame_mlp(self.n2(x))
    x = x + self.global_attn(self.n3(x).reshape(B, S * T, D)).reshape(
      B, S, T, D
    )
    return x + self.global_mlp(self.n4(x))


class AATeacher(_Common):
  """Small VGGT-style alternating-attention model (frame attention / global
  attention pairs).

  Args:
    config: :class:`TeacherConfig`.
    rngs: ``nnx.Rngs``.

  Call: ``model(images [B, S, H, W, 3]) -> Predictions``. Global attention is quadratic in ``S``.

  References: VGGT, arXiv:2503.11651.
  """

  def __init__(
    self, config: TeacherConfig = TeacherConfig(), *, rngs: nnx.Rngs
  ):
    if not isinstance(config, TeacherConfig):
      raise TypeError(f"config must be a TeacherConfig, got {type(config)}")
    self._init_common(config, rngs=rngs)
    self.blocks = nnx.List(
      [_AABlock(config, rngs=rngs) for _ in range(config.depth)]
    )

  def backbone(self, x: jax.Array) -> jax.Array:
    """The alternating-attention blocks on the token grid.

    Args:
      x: ``[B, S, T, D]`` tokens, ``T = 1 + registers + (image_size / patch)²`` per frame.

    Returns:
      ``[B, S, T, D]`` mixed tokens.
    """
    for blk in self.blocks:
      x = blk(x)
    return x


def count_params(model: nnx.Module) -> int:
  """Number of parameters of an NNX module.

  Args:
    model: any ``nnx.Module``.

  Returns:
    The total element count of its ``nnx.Param`` variables.
  """
  if not isinstance(model, nnx.Module):
    raise TypeError(f"model must be an nnx.Module, got {type(model).__name__}")
  return int(
    sum(np.prod(v.shape) for v in jax.tree.leaves(nnx.state(model, nnx.Param)))
  )
