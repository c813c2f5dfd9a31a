"""Selective state-space scan (Mamba S6) and a bidirectional SSM block for
FlashSSM-3D.

Recurrence per channel ``e`` and state ``n`` (Gu & Dao, arXiv:2312.00752, Alg.
2; ZOH on A, Euler on B)::

    Δ_t = softplus(W_Δ x_t + b_Δ),  B_t = W_B x_t,  C_t = W_C x_t,  A = −exp(A_log) ∈ R^{E×N}
    h_t = exp(Δ_t ⊗ A) ⊙ h_{t−1} + (Δ_t ⊙ x_t) ⊗ B_t
    y_t = h_t C_t + D ⊙ x_t

``h_t = a_t h_{t−1} + b_t`` is associative under ``(a_i, b_i) • (a_j, b_j) =
(a_j a_i, a_j b_i + b_j)`` (i earlier than j). Three implementations with
identical outputs:

* ``'scan'``: ``lax.scan`` over time, O(L) work, O(E·N) live state: the default,
  fastest on CPU;
* ``'associative'``: ``lax.associative_scan``, O(log L) depth, materialises
  ``[L, E, N]``;
* ``'chunked'``: ``lax.scan`` across chunks of ``chunk_size`` steps, an
  associative scan inside each; only one chunk's ``[chunk, M, E, N]`` state is
  materialised at a time (the accelerator path: ``L / chunk_size`` sequential
  steps instead of ``L``).

The state is always accumulated in float32 or wider (bfloat16 inputs give a
bfloat16 ``y``).

A is kept real (complex associative scans compile very slowly on CPU,
jax-ml/jax#18221). How the block is used in FlashSSM-3D (scan orders,
bidirectionality) is a **reconstruction**.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.typing import DTypeLike

from jaxpapers.core import validation as val

__all__ = [
  "selective_scan",
  "BiSSM",
  "scan_order",
  "SCAN_METHODS",
  "SCAN_ORDERS",
]

SCAN_METHODS = ("scan", "associative", "chunked")
SCAN_ORDERS = ("row", "col", "frame_major", "position_major")


def _combine(c1, c2):
  a1, b1 = c1
  a2, b2 = c2
  return a2 * a1, a2 * b1 + b2


def _scan_tm(x, dt, A, B, C, D, reverse, method, chunk_size):
  """Time-major core: x, dt ``[L, M, E]``; B, C ``[L, M, N]``; A ``[E, N]``; D
  ``[E]``.

  The state is accumulated in float32 (float64 for float64 input) whatever the
  input dtype, so bfloat16 activations do not lose the small increments of a
  slowly decaying state; ``y`` is cast back to the dtype of ``x``.
  """
  out_dtype = x.dtype
  acc = jnp.promote_types(x.dtype, jnp.float32)
  x, dt, A, B, C, D = (v.astype(acc) for v in (x, dt, A, B, C, D))
  L = x.shape[0]
  if method == "scan":

    def step(h, inp):
      x_t, dt_t, B_t, C_t = inp
      a = jnp.exp(dt_t[..., None] * A)  # [M, E, N]
      h = a * h + (dt_t * x_t)[..., None] * B_t[:, None, :]
      return h, jnp.einsum("men,mn->me", h, C_t)

    h0 = jnp.zeros(x.shape[1:] + (A.shape[-1],), acc)
    _, y = jax.lax.scan(step, h0, (x, dt, B, C), reverse=reverse)
    return (y + D * x).astype(out_dtype)
  if method == "associative":
    a = jnp.exp(dt[..., None] * A)  # [L, M, E, N]
    b = (dt * x)[..., None] * B[:, :, None, :]
    _, h = jax.lax.associative_scan(_combine, (a, b), reverse=reverse, axis=0)
    return (jnp.einsum("lmen,lmn->lme", h, C) + D * x).astype(out_dtype)
  # chunked: lax.scan over chunks of ``chunk_size`` steps, an associative scan
  # inside a chunk. The decay a and input b are formed inside the chunk step, so
  # only one chunk's [chunk, M, E, N] state is live at a time (O(chunk·M·E·N)
  # memory, L / chunk loop steps).
  xs = (x, dt, B, C)
  if reverse:
    xs = tuple(v[::-1] for v in xs)
  n_chunks = -(-L // chunk_size)
  pad = n_chunks * chunk_size - L
  # dt = 0 appended after the sequence: a = 1, b = 0 (identity steps, outputs
  # dropped)
  if pad:
    xs = tuple(
      jnp.concatenate([v, jnp.zeros((pad,) + v.shape[1:], acc)], 0) for v in xs
    )
  xs = tuple(v.reshape((n_chunks, chunk_size) + v.shape[1:]) for v in xs)

  def chunk_step(h, inp):
    xc, dtc, Bc, Cc = inp
    a = jnp.exp(dtc[..., None] * A)  # [chunk, M, E, N]
    b = (dtc * xc)[..., None] * Bc[:, :, None, :]
    a_cum, h_loc = jax.lax.associative_scan(_combine, (a, b), axis=0)
    hs = a_cum * h + h_loc
    return hs[-1], jnp.einsum("lmen,lmn->lme", hs, Cc)

  h0 = jnp.zeros(x.shape[1:] + (A.shape[-1],), acc)
  _, y = jax.lax.scan(chunk_step, h0, xs)
  y = y.reshape((n_chunks * chunk_size,) + y.shape[2:])[:L]
  if reverse:
    y = y[::-1]
  return (y + D * x).astype(out_dtype)


def selective_scan(
  x: jax.Array,
  dt: jax.Array,
  A: jax.Array,
  B: jax.Array,
  C: jax.Array,
  D: jax.Array,
  *,
  reverse: bool = False,
  method: str = "scan",
  chunk_size: int = 64,
) -> jax.Array:
  """Selective scan ``y = S6(x)`` along the second-to-last axis.

  Args:
    x: ``[..., L, E]`` inputs.
    dt: ``[..., L, E]`` positive step sizes Δ.
    A: ``[E, N]`` (negative real) state matrix.
    B: ``[..., L, N]`` input projections.
    C: ``[..., L, N]`` output projections.
    D: ``[E]`` skip.
    reverse: scan from the end (the backward half of a bidirectional SSM).
    method: ``'scan'`` | ``'associative'`` | ``'chunked'``.
    chunk_size: chunk length for ``'chunked'``.

  Returns:
    ``y`` with the shape of ``x``; an empty sequence (``L = 0``) gives an empty
    ``y``.

  Bad values: ``dt`` must be ``>= 0`` and ``A <= 0`` (otherwise the recurrence
  grows without bound) and both finite. Eagerly a violation raises
  ``ValueError``; under ``jax.jit`` ``y`` is NaN (wrap with
  ``jax.experimental.checkify.checkify`` to get the error).
  """
  y = _selective_scan(
    x, dt, A, B, C, D, reverse=reverse, method=method, chunk_size=chunk_size
  )
  ok = val.debug_check_values(
    jnp.all(jnp.isfinite(dt) & (dt >= 0)) & jnp.all(jnp.isfinite(A) & (A <= 0)),
    (
      "dt must be finite step sizes >= 0 and A a finite (negative) state "
      "matrix <= 0"
    ),
  )
  return val.poison_floats(y, ok)


def _selective_scan(x, dt, A, B, C, D, *, reverse, method, chunk_size):
  """:func:`selective_scan` with shape checks only (the block's Δ = softplus(·)
  >= 0)."""
  if method not in SCAN_METHODS:
    raise ValueError(f"method must be one of {SCAN_METHODS}, got {method!r}")
  if x.ndim < 2 or dt.shape != x.shape:
    raise ValueError(
      f"x and dt must both be [..., L, E]; got {x.shape} and {dt.shape}"
    )
  E = x.shape[-1]
  if A.ndim != 2 or A.shape[0] != E:
    raise ValueError(f"A must be [E={E}, N], got {A.shape}")
  N = A.shape[1]
  if B.shape != x.shape[:-1] + (N,) or C.shape != B.shape:
    raise ValueError(
      f"B and C must be {x.shape[:-1] + (N,)}, got {B.shape} and {C.shape}"
    )
  if D.shape != (E,):
    raise ValueError(f"D must be [E={E}], got {D.shape}")
  for name, a in (("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D)):
    if not jnp.issubdtype(a.dtype, jnp.floating):
      raise TypeError(f"{name} must be a floating-point array, got {a.dtype}")
  if (
    isinstance(chunk_size, bool)
    or not isinstance(chunk_size, (int, np.integer))
    or chunk_size < 1
  ):
    raise ValueError(f"chunk_size must be an int >= 1, got {chunk_size!r}")
  lead = x.shape[:-2]
  L = x.shape[-2]
  if L == 0 or math.prod(lead) == 0:
    return D * x  # nothing to scan: an empty y of the shape of x
  # [L, M, ...]
  tm = lambda a: jnp.moveaxis(a.reshape((-1,) + a.shape[-2:]), 1, 0)
  y = _scan_tm(
    tm(x), tm(dt), A, tm(B), tm(C), D, reverse, method, int(chunk_size)
  )
  return jnp.moveaxis(y, 0, 1).reshape(lead + (L, E))


def scan_order(
  num_views: int, grid_hw: tuple[int, int], *, kind: str, num_special: int = 0
) -> np.ndarray:
  """Token permutation for a scan order **[reconstruction]**.

  Tokens of a frame are ``[special (camera + registers), patches (row-major)]``,
  ``T`` in total; all frames concatenated frame by frame give ``S·T`` tokens.

  Args:
    num_views: ``S``.
    grid_hw: patch grid ``(gh, gw)``.
    kind: ``'row'`` / ``'col'`` (within one frame: length ``T``, patches row- or
      column-major, special tokens first) or ``'frame_major'`` /
      ``'position_major'`` (all frames: length ``S·T``; position-major visits
      token slot 0 of every view, then slot 1, ... so that corresponding pixels
      of different views are adjacent).
    num_special: number of camera + register tokens per frame.

  Returns:
    int permutation ``perm`` with ``ordered = tokens[perm]``.
  """
  if kind not in SCAN_ORDERS:
    raise ValueError(f"kind must be one of {SCAN_ORDERS}, got {kind!r}")
  try:
    gh, gw = (int(v) for v in grid_hw)
  except (TypeError, ValueError):
    raise ValueError(
      f"grid_hw must be a pair (gh, gw) of positive ints, got {grid_hw!r}"
    ) from None
  if gh < 1 or gw < 1:
    raise ValueError(
      f"grid_hw must be a pair (gh, gw) of positive ints, got {grid_hw!r}"
    )
  for name, v, lo in (
    ("num_views", num_views, 1),
    ("num_special", num_special, 0),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
      raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
  P = gh * gw
  T = num_special + P
  if kind == "row":
    return np.arange(T)
  if kind == "col":
    patches = num_special + (np.arange(P).reshape(gh, gw).T.ravel())
    return np.concatenate([np.arange(num_special), patches])
  if kind == "frame_major":
    return np.arange(num_views * T)
  if kind == "position_major":
    return np.arange(num_views * T).reshape(num_views, T).T.ravel()
  raise ValueError(f"kind must be one of {SCAN_ORDERS}, got {kind!r}")


class _Direction(nnx.Module):
  """Per-direction selective parameters: Δ, B, C projections, A_log, D."""

  def __init__(
    self, inner: int, state: int, dt_rank: int, *, dtype=None, rngs: nnx.Rngs
  ):
    self.dt_rank, self.state = dt_rank, state
    self.x_proj = nnx.Linear(
      inner, dt_rank + 2 * state, use_bias=False, dtype=dtype, rngs=rngs
    )
    dt = jnp.exp(
      jax.random.uniform(
        rngs.params(), (inner,), minval=math.log(1e-3), maxval=math.log(1e-1)
      )
    )
    # Δ stays float32 (exp(Δ·A) compounds over the sequence)
    self.dt_proj = nnx.Linear(
      dt_rank,
      inner,
      rngs=rngs,
      bias_init=lambda *_: dt + jnp.log(-jnp.expm1(-dt)),
    )
    self.A_log = nnx.Param(
      jnp.log(jnp.tile(jnp.arange(1, state + 1, dtype=jnp.float32), (inner, 1)))
    )
    self.D = nnx.Param(jnp.ones((inner,)))

  def __call__(self, u, *, reverse, method, chunk_size):
    xp = self.x_proj(u)
    r, n = self.dt_rank, self.state
    r_in = xp[..., :r]
    dt = jax.nn.softplus(
      self.dt_proj(r_in.astype(jnp.promote_types(r_in.dtype, jnp.float32)))
    )
    Bm, Cm = xp[..., r : r + n], xp[..., r + n :]
    A = -jnp.exp(self.A_log[...])
    return _selective_scan(
      u,
      dt,
      A,
      Bm,
      Cm,
      self.D[...],
      reverse=reverse,
      method=method,
      chunk_size=chunk_size,
    )


class BiSSM(nnx.Module):
  """Bidirectional Mamba-style mixer: ``out = W_o((S6_fwd(u) + S6_bwd(u)) ⊙ SiLU(z))``.

  ``[u, z] = W_in x``; each direction has its own Δ/B/C/A/D (as in Vision
  Mamba). The causal depthwise convolution of Mamba is omitted (a simplification
  of this reconstruction).

  Args:
    dim: model width ``D``.
    state: SSM state size ``N``.
    expand: inner width ``E = expand · D``.
    method: scan implementation (see :func:`selective_scan`).
    chunk_size: chunk length of ``method='chunked'``.
    dtype: compute dtype of the projections (e.g. ``jnp.bfloat16``; parameters
      stay float32, Δ and the scan state are float32). ``None``: the input's
      dtype.
    rngs: ``nnx.Rngs`` for the initialisation.

  Call: ``x [..., L, D] -> [..., L, D]``.
  """

  def __init__(
    self,
    dim: int,
    *,
    state: int = 16,
    expand: int = 1,
    method: str = "scan",
    chunk_size: int = 64,
    dtype: DTypeLike | None = None,
    rngs: nnx.Rngs,
  ):
    if method not in SCAN_METHODS:
      raise ValueError(f"method must be one of {SCAN_METHODS}, got {method!r}")
    for name, v in (
      ("dim", dim),
      ("state", state),
      ("expand", expand),
      ("chunk_size", chunk_size),
    ):
      if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    inner = expand * dim
    dt_rank = max(1, math.ceil(dim / 16))
    self.method, self.chunk_size = method, chunk_size
    self.in_proj = nnx.Linear(
      dim, 2 * inner, use_bias=False, dtype=dtype, rngs=rngs
    )
    self.fwd = _Direction(inner, state, dt_rank, dtype=dtype, rngs=rngs)
    self.bwd = _Direction(inner, state, dt_rank, dtype=dtype, rngs=rngs)
    self.out_proj = nnx.Linear(
      inner, dim, use_bias=False, dtype=dtype, rngs=rngs
    )

  def __call__(self, x):
    u, z = jnp.split(self.in_proj(x), 2, axis=-1)
    kw = dict(method=self.method, chunk_size=self.chunk_size)
    y = self.fwd(u, reverse=False, **kw) + self.bwd(u, reverse=True, **kw)
    return self.out_proj(y * jax.nn.silu(z))
