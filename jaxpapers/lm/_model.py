"""One decoder forward pass for Llama- and Gemma-3-style models, with hooks.

Parameters use an explicit per-head layout and are stacked over layers so the
forward is a single `lax.scan`:

  embed       [V, d]          attn_norm [L, d]        ffn_norm [L, d]
  wq          [L, d, H, dh]   wk, wv    [L, d, KV, dh]
  wo          [L, H, dh, d]   w_gate, w_up [L, d, F]  w_down [L, F, d]
  final_norm  [d]             unembed [V, d] (only when embeddings are untied)
  q_norm, k_norm [L, dh] (qk_norm)     post_attn_norm, post_ffn_norm [L, d] (post_norms)

Per layer l, with x the residual stream [B, T, d]:

  h = RMSNorm(x);  q = h wq,  k = h wk,  v = h wv       (per head)
  q, k = RoPE(QKNorm(q)), RoPE(QKNorm(k))
  α = softmax(scale · q kᵀ + mask)                      query head h reads KV head h // G
  z_h = Σ_j α_{h,j} v_{kv(h), j}                        head output before o_proj  [B, T, H, dh]
  x += PostNorm(Σ_h z_h wo_h);   x += PostNorm(W_down(act(h W_gate) ⊙ h W_up))

α and z are computed densely ([B, H, T, S] scores) or blockwise with an online
softmax (`jaxpapers.lm._attention`: memory linear in T, tiles outside the
causal/sliding-window mask skipped); `forward(..., attention='auto')` switches
to blockwise from `BLOCKWISE_MIN_QUERIES` (128) query rows on.

The hooks (`Capture`) only read intermediate values; `HeadAblation` replaces
chosen heads' query vectors (before QK-norm and RoPE) or head outputs (before
o_proj) and is data, so one compilation serves every head set.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from flax import nnx, struct
from jax.typing import ArrayLike, DTypeLike

from jaxpapers.core import validation as V
from jaxpapers.lm._attention import (
  _blockwise,
  attention_rows,
  auto_block_size,
  bucket_length,
  dense_attention,
  resolve_impl,
)
from jaxpapers.lm._config import LMConfig

Params = dict[str, jax.Array]

_ABLATION_MODES = ("mean_q", "zero_q", "mean_out", "zero_out")
_ATTN_CAPTURE = ("none", "last", "rows", "all")


class Capture(NamedTuple):
  """What `forward` records besides logits (all off by default).

  Attributes:
    attn: 'none', 'last' (the last query row: [B, L, H, S]), 'rows' (the query
      rows given to `forward` as attn_rows int [B, R]: [B, L, H, R, S]) or 'all'
      ([B, L, H, T, S], dense only); S is the number of key slots (T, or the
      cache size). 'last' and 'rows' are computed for those rows only, so they
      keep the blockwise path's memory linear in T.
    values: V per layer, [B, L, KV, S, dh] (after the cache update).
    queries: q before QK-norm and RoPE (for mean-query statistics),
      [B, L, T, H, dh].
    head_outputs: z = Σ_j α_j v_j before o_proj, [B, L, T, H, dh].
    residual: the residual stream entering each layer, [B, L, T, d].
  """

  attn: str = "none"
  values: bool = False
  queries: bool = False
  head_outputs: bool = False
  residual: bool = False


@struct.dataclass
class HeadAblation:
  """Replace chosen heads' query vectors or outputs.

  Attributes:
    mask: bool [L, H], True marks an ablated (layer, query head); or bool
      [B, L, H], one head set per batch row (rows are independent, so B probes
      under B different head sets cost one batched call: the same result as B
      calls with the rows' [L, H] masks).
    mean: f32 [L, H, dh], the replacement for the 'mean_*' modes.
    mode: 'mean_q' (query := mean, before QK-norm and RoPE), 'zero_q' (q := 0,
      i.e. uniform causal attention), 'mean_out' / 'zero_out' (the head output
      z before o_proj := mean / 0). Static.
  """

  mask: jax.Array
  mean: jax.Array | None = None
  mode: str = struct.field(pytree_node=False, default="mean_q")


class KVCache(NamedTuple):
  """Key/value cache with absolute positions per slot.

  Attributes:
    k, v: [L, B, S, KV, dh] (k after QK-norm and RoPE).
    pos: int32 [B, S], absolute position of each slot.
    valid: bool [B, S], whether a slot holds a real token.
    index: int32 [], the next slot to write.
    next_pos: int32 [B], the absolute position of the next real token.
  """

  k: jax.Array
  v: jax.Array
  pos: jax.Array
  valid: jax.Array
  # The field shadows tuple.index (a method no caller uses on a cache): the
  # checker sees an override, the NamedTuple a field.
  index: jax.Array  # pyright: ignore[reportIncompatibleMethodOverride]
  next_pos: jax.Array


def init_cache(
  config: LMConfig, batch: int, max_len: int, dtype: DTypeLike = jnp.float32
) -> KVCache:
  """An empty cache with `max_len` slots.

  Args:
    config: the model's `LMConfig`.
    batch: B, the number of rows.
    max_len: S, the number of key/value slots per row.
    dtype: dtype of the cached keys and values.

  Returns:
    A `KVCache` with k, v zeros [L, B, S, KV, dh], every slot invalid, `index`
    0.
  """
  _check_config(config)
  batch = V.check_int(batch, "batch", min_value=1)
  max_len = V.check_int(max_len, "max_len", min_value=1)
  shape = (config.n_layers, batch, max_len, config.n_kv_heads, config.head_dim)
  return KVCache(
    k=jnp.zeros(shape, dtype),
    v=jnp.zeros(shape, dtype),
    pos=jnp.zeros((batch, max_len), jnp.int32),
    valid=jnp.zeros((batch, max_len), bool),
    index=jnp.zeros((), jnp.int32),
    next_pos=jnp.zeros((batch,), jnp.int32),
  )


# ---------------------------------------------------------------------------
# parameters


def _check_config(config) -> None:
  if not isinstance(config, LMConfig):
    raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")


def param_shapes(config: LMConfig) -> dict[str, tuple[int, ...]]:
  """Expected shape of every parameter for `config`.

  Args:
    config: the model's `LMConfig`.

  Returns:
    A dict from parameter name to shape, e.g. `'wq': (L, d, H, dh)`; `unembed`
    only for untied embeddings, `q_norm`/`k_norm` and `post_*_norm` only when
    the config uses them.
  """
  _check_config(config)
  L, d, H, KV, dh, F, V = (
    config.n_layers,
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
    config.vocab_size,
  )
  shapes = {
    "embed": (V, d),
    "attn_norm": (L, d),
    "wq": (L, d, H, dh),
    "wk": (L, d, KV, dh),
    "wv": (L, d, KV, dh),
    "wo": (L, H, dh, d),
    "ffn_norm": (L, d),
    "w_gate": (L, d, F),
    "w_up": (L, d, F),
    "w_down": (L, F, d),
    "final_norm": (d,),
  }
  if not config.tie_embeddings:
    shapes["unembed"] = (V, d)
  if config.qk_norm:
    shapes["q_norm"] = (L, dh)
    shapes["k_norm"] = (L, dh)
  if config.post_norms:
    shapes["post_attn_norm"] = (L, d)
    shapes["post_ffn_norm"] = (L, d)
  return shapes


def init_params(
  key: jax.Array,
  config: LMConfig,
  *,
  dtype: DTypeLike = jnp.float32,
  std: float = 0.02,
) -> Params:
  """Random parameters for `config` (normal(0, std); output projections scaled
  by 1/sqrt(2L)).

  Norm gains start at 1 (the GGUF convention, also for Gemma, whose "+1" is
  already folded into the stored gains).

  Args:
    key: a PRNG key (`jax.random.key(seed)`).
    config: the model's `LMConfig`.
    dtype: dtype of the parameters (drawn in float32, then cast).
    std: standard deviation (> 0) of the weights.

  Returns:
    The parameter dict, shapes as `param_shapes(config)`.
  """
  _check_config(config)
  if not (
    isinstance(key, jax.Array)
    and (
      jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
      or (key.dtype == jnp.uint32 and key.shape == (2,))
    )
  ):
    raise TypeError(
      f"key must be a PRNG key (jax.random.key(seed)), got "
      f"{getattr(key, 'dtype', type(key).__name__)}{getattr(key, 'shape', '')}"
    )
  std = V.check_float(std, "std", min_value=0.0, min_inclusive=False)
  shapes = param_shapes(config)
  keys = jax.random.split(key, len(shapes))
  out_scale = 1.0 / math.sqrt(2 * config.n_layers)
  params = {}
  for k, (name, shape) in zip(keys, sorted(shapes.items())):
    if "norm" in name:
      params[name] = jnp.ones(shape, dtype)
    else:
      s = std * (out_scale if name in ("wo", "w_down") else 1.0)
      params[name] = (s * jax.random.normal(k, shape, jnp.float32)).astype(
        dtype
      )
  return params


def validate_params(params: Params, config: LMConfig) -> None:
  """Raise ValueError naming the first parameter whose shape is not the expected
  one.

  Args:
    params: the parameter dict to check.
    config: the model's `LMConfig`.

  Raises:
    TypeError: `params` is not a dict, or an entry is not floating point.
    ValueError: a missing entry or one of the wrong shape.
  """
  if not isinstance(params, dict):
    raise TypeError(
      "params must be a dict of arrays (see param_shapes), "
      f"got {type(params).__name__}"
    )
  shapes = param_shapes(config)
  missing = sorted(set(shapes) - set(params))
  if missing:
    raise ValueError(f"params is missing {missing} for this LMConfig")
  for name, shape in shapes.items():
    if tuple(jnp.shape(params[name])) != shape:
      raise ValueError(
        f"params[{name!r}] has shape {tuple(jnp.shape(params[name]))}, "
        f"expected {shape}"
      )
    dt = jnp.result_type(params[name])
    if not jnp.issubdtype(dt, jnp.floating):
      raise TypeError(f"params[{name!r}] must be floating point, got {dt}")


def unembedding(params: Params, config: LMConfig) -> jax.Array:
  """W_U [V, d] (the embedding matrix when tied).

  Args:
    params: the parameter dict.
    config: the model's `LMConfig`.

  Returns:
    [V, d], `params['embed']` when tied, else `params['unembed']`.
  """
  _check_config(config)
  name = "embed" if config.tie_embeddings else "unembed"
  if not isinstance(params, dict) or name not in params:
    raise ValueError(
      f"params has no {name!r} entry (tie_embeddings={config.tie_embeddings})"
    )
  return params[name]


# ---------------------------------------------------------------------------
# building blocks


def rms_norm(x: jax.Array, gain: jax.Array, eps: float) -> jax.Array:
  """x / sqrt(mean(x²) + eps) · gain, computed in float32.

  Args:
    x: float [..., d].
    gain: [d].
    eps: a finite float >= 0 (static).

  Returns:
    float32 [..., d].
  """
  if jnp.ndim(gain) != 1 or jnp.shape(gain)[0] != jnp.shape(x)[-1]:
    raise ValueError(
      f"gain must have shape [d] = ({jnp.shape(x)[-1]},) to match x "
      f"{jnp.shape(x)}, got {jnp.shape(gain)}"
    )
  if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
    raise TypeError(f"x must be floating point, got {jnp.result_type(x)}")
  if not isinstance(eps, jax.core.Tracer):
    V.check_float(eps, "eps", min_value=0.0)
  x32 = x.astype(jnp.float32)
  y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
  return y * gain.astype(jnp.float32)


def apply_rope(
  x: jax.Array,
  positions: jax.Array,
  base: ArrayLike,
  layout: str,
  scale: ArrayLike = 1.0,
) -> jax.Array:
  """Rotary embedding of x [B, T, N, dh] at integer positions [B, T].

  Pair i (0 <= i < dh/2) is rotated by angle (pos / scale) · base^(-2i/dh)
  (scale > 1 is linear RoPE scaling). 'neox' pairs coordinates (i, i + dh/2);
  'interleaved' pairs (2i, 2i + 1).

  Args:
    x: float [B, T, N, dh] queries or keys (N heads, dh even).
    positions: int [B, T] absolute positions.
    base: the RoPE base (scalar).
    layout: 'neox' or 'interleaved'.
    scale: linear RoPE scaling factor (scalar; 1 means none).

  Returns:
    float32 [B, T, N, dh].
  """
  if layout not in ("neox", "interleaved"):
    raise ValueError(f"layout must be 'neox' or 'interleaved', got {layout!r}")
  if jnp.ndim(x) != 4 or jnp.shape(x)[-1] % 2:
    raise ValueError(
      f"x must have shape [B, T, N, dh] with dh even, got {jnp.shape(x)}"
    )
  if tuple(jnp.shape(positions)) != tuple(jnp.shape(x)[:2]):
    raise ValueError(
      f"positions must have shape [B, T] = {tuple(jnp.shape(x)[:2])}, got "
      f"{tuple(jnp.shape(positions))}"
    )
  if not jnp.issubdtype(jnp.result_type(positions), jnp.integer):
    raise TypeError(
      f"positions must be integers, got {jnp.result_type(positions)}"
    )
  return _rotate(x, *_rope_table(positions, x.shape[-1], base, scale), layout)


def _rope_table(positions, dh: int, base, scale):
  """(cos, sin) of the RoPE angles, each float32 [B, T, 1, dh/2] (see
  `apply_rope`).

  A forward computes the tables once per distinct (base, scale) and every layer
  of that kind reads them: computed inside a layer, the sines and cosines are
  fused into the rotation and evaluated again for every head (several times the
  cost of the rotation itself).
  """
  inv_freq = jnp.asarray(base, jnp.float32) ** (
    -jnp.arange(0, dh, 2, dtype=jnp.float32) / dh
  )
  pos = positions.astype(jnp.float32) / jnp.asarray(scale, jnp.float32)
  ang = pos[:, :, None, None] * inv_freq  # [B, T, 1, dh/2]
  return jnp.cos(ang), jnp.sin(ang)


def _rotate(x, cos, sin, layout: str):
  """x [B, T, N, dh] rotated by the angles whose (cos, sin) are [B, T, 1, dh/2]:
  float32."""
  dh = x.shape[-1]
  x = x.astype(jnp.float32)
  if layout == "neox":
    x1, x2 = x[..., : dh // 2], x[..., dh // 2 :]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
  x1, x2 = x[..., 0::2], x[..., 1::2]
  return jnp.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).reshape(
    x.shape
  )


def _mm(eq: str, a: jax.Array, w: jax.Array) -> jax.Array:
  return jnp.einsum(
    eq, a.astype(w.dtype), w, preferred_element_type=jnp.float32
  )


def _act(x: jax.Array, act: str) -> jax.Array:
  return jax.nn.silu(x) if act == "silu" else jax.nn.gelu(x, approximate=True)


def _row_mask(abl_mask):
  """One layer's ablation mask, [H] or per row [B, H], broadcast against
  [B, T, H, dh]."""
  return (
    abl_mask[None, None, :, None]
    if abl_mask.ndim == 1
    else abl_mask[:, None, :, None]
  )


def _layer(
  x,
  xs,
  *,
  config: LMConfig,
  positions,
  q_valid,
  cache_pos,
  cache_valid,
  index,
  capture: Capture,
  ablation_mode: str | None,
  attn_impl: str = "dense",
  block_size: int | None = None,
  local_block_size: int | None = None,
  attn_rows=None,
  rope_tables=None,
):
  """One transformer block. x: [B, T, d]; xs: this layer's params and extras.

  The blockwise path tiles a global layer by `block_size` and a sliding-window
  layer by `local_block_size` (None: the same). `rope_tables`: the RoPE (cos,
  sin) tables of every layer, or those of the (global, local) layers, computed
  once per forward; None: this layer computes its own from the scanned (base,
  scale).
  """
  lp, (rope_base, rope_scale), is_global, abl_mask, abl_mean, ck, cv = xs
  B, T, _ = x.shape
  out = {}
  if capture.residual:
    out["residual"] = x

  qkv = functools.partial(_qkv_projections, lp=lp, config=config)
  q, k, v = (
    a.reshape(B, T, *a.shape[1:])
    for a in _in_row_chunks(qkv, x.reshape(B * T, -1))
  )  # [B, T, H, dh], [B, T, KV, dh], [B, T, KV, dh]
  if capture.queries:
    out["queries"] = q
  if ablation_mode in ("mean_q", "zero_q"):
    repl = abl_mean if ablation_mode == "mean_q" else jnp.zeros_like(abl_mean)
    q = jnp.where(_row_mask(abl_mask), repl[None, None].astype(q.dtype), q)
  if config.qk_norm:
    q = rms_norm(q, lp["q_norm"], config.norm_eps)
    k = rms_norm(k, lp["k_norm"], config.norm_eps)
  if rope_tables is None:
    cos, sin = _rope_table(positions, config.head_dim, rope_base, rope_scale)
  elif len(rope_tables) == 1:
    cos, sin = rope_tables[0]
  else:  # (global, local) tables, picked by the layer's scanned flag
    (cg, sg), (cl, sl) = rope_tables
    cos, sin = jnp.where(is_global, cg, cl), jnp.where(is_global, sg, sl)
  q = _rotate(q, cos, sin, config.rope_layout)
  k = _rotate(k, cos, sin, config.rope_layout)

  if ck is None:  # no cache: the keys are this call's tokens
    k_all, v_all = k, v
    key_pos, key_valid = positions, q_valid
  else:
    k_all = jax.lax.dynamic_update_slice(
      ck, k.astype(ck.dtype), (0, index, 0, 0)
    )
    v_all = jax.lax.dynamic_update_slice(
      cv, v.astype(cv.dtype), (0, index, 0, 0)
    )
    key_pos, key_valid = cache_pos, cache_valid
    out["k_cache"], out["v_cache"] = k_all, v_all

  window = config.sliding_window
  if attn_impl == "blockwise":

    def blockwise(size):
      return _blockwise(
        q,
        k_all,
        v_all,
        positions,
        key_pos,
        key_valid,
        scale=config.scale,
        window=window,
        is_global=is_global,
        block_size=size,
      )

    if window is None or local_block_size in (None, block_size):
      z = blockwise(block_size)
    else:  # the layer's kind is a scanned flag: both tilings compiled, one run
      z = jax.lax.cond(
        is_global,
        lambda: blockwise(block_size),
        lambda: blockwise(local_block_size),
      )
    probs = None
  else:
    z, probs = dense_attention(
      q,
      k_all,
      v_all,
      positions,
      key_pos,
      key_valid,
      scale=config.scale,
      window=window,
      is_global=is_global,
    )
  if ablation_mode in ("mean_out", "zero_out"):
    repl = abl_mean if ablation_mode == "mean_out" else jnp.zeros_like(abl_mean)
    z = jnp.where(_row_mask(abl_mask), repl[None, None].astype(z.dtype), z)
  if capture.attn == "all":
    out["attn"] = probs
  elif capture.attn in ("last", "rows"):
    # Capture(attn='rows') always comes with attn_rows (checked by _forward).
    if capture.attn == "rows" and attn_rows is not None:
      rows = attn_rows
    else:
      rows = jnp.full((B, 1), T - 1, jnp.int32)
    if probs is not None:
      # [B, H, R, S]
      sel = jnp.take_along_axis(probs, rows[:, None, :, None], axis=2)
    else:
      sel = attention_rows(
        jnp.take_along_axis(q, rows[:, :, None, None], axis=1),
        k_all,
        jnp.take_along_axis(positions, rows, axis=1),
        key_pos,
        key_valid,
        scale=config.scale,
        window=window,
        is_global=is_global,
      )
    out["attn"] = sel[:, :, 0] if capture.attn == "last" else sel
  if capture.values:
    # [B, KV, S, dh]
    out["values"] = jnp.swapaxes(v_all, 1, 2).astype(jnp.float32)
  if capture.head_outputs:
    out["head_outputs"] = z
  rows = functools.partial(_output_and_ffn, lp=lp, config=config)
  x = _in_row_chunks(rows, x.reshape(B * T, -1), z.reshape(B * T, *z.shape[2:]))
  return x.reshape(B, T, -1), out


def _qkv_projections(x, *, lp, config: LMConfig):
  """The row-wise start of a block: RMSNorm(x [N, d]) times wq, wk, wv: [N, H | KV, dh]."""
  h = rms_norm(x, lp["attn_norm"], config.norm_eps)
  q = _mm("nd,dhk->nhk", h, lp["wq"])
  k = _mm("nd,dgk->ngk", h, lp["wk"])
  v = _mm("nd,dgk->ngk", h, lp["wv"])
  return q, k, v


def _output_and_ffn(x, z, *, lp, config: LMConfig):
  """The row-wise rest of a block: x [N, d] + o_proj(z [N, H, dh]), then + FFN:
  [N, d]."""
  attn_out = _mm("nhk,hkd->nd", z, lp["wo"])
  if config.post_norms:
    attn_out = rms_norm(attn_out, lp["post_attn_norm"], config.norm_eps)
  x = x + attn_out

  h = rms_norm(x, lp["ffn_norm"], config.norm_eps)
  g = _act(_mm("nd,df->nf", h, lp["w_gate"]), config.act) * _mm(
    "nd,df->nf", h, lp["w_up"]
  )
  m = _mm("nf,fd->nd", g, lp["w_down"])
  if config.post_norms:
    m = rms_norm(m, lp["post_ffn_norm"], config.norm_eps)
  return x + m


#: Row-wise work (norms, the q, k, v, output and FFN projections) runs on at most this many rows
#: at a time.
ROW_CHUNK = 1024


def row_chunk_size(rows: int, max_rows: int | None = None) -> int:
  """Rows per chunk of a block's row-wise work on `rows` = B·T rows.

  The fewest chunks of at most `max_rows` rows, as equal as possible: ceil(rows
  / n) with n = ceil(rows / max_rows) (8,192 rows: 1,024; 1,280 rows: 640; up to
  `max_rows`: all).

  Args:
    rows: B·T >= 1, the rows of a forward call.
    max_rows: the largest chunk; None: `ROW_CHUNK`.

  Returns:
    The chunk size, in [1, rows].
  """
  rows = V.check_int(rows, "rows", min_value=1)
  max_rows = (
    ROW_CHUNK
    if max_rows is None
    else V.check_int(max_rows, "max_rows", min_value=1)
  )
  n = -(-rows // max_rows)
  return -(-rows // n)


def _in_row_chunks(fn, *arrays, max_rows: int | None = None):
  """fn(*arrays) for a row-wise fn (row i of every output depends on row i of
  the inputs only), computed on chunks of at most `max_rows` rows: [N, ...]
  arrays in, an [N, ...] array or a tuple of them out.

  On a CPU a long prompt's FFN intermediates ([N, F] per product, 50 MB for
  8,192 SmolLM2 rows) outgrow the caches between the products that write and
  read them; chunks of about 1,024 rows keep them cached
  (`benchmarks/lm_context.py`). Each row sees the same arithmetic, so the result
  equals the unchunked one up to float32 round-off of the matrix products.
  Chunks have `row_chunk_size(N, max_rows)` rows (`max_rows` None: `ROW_CHUNK`,
  read at trace time).
  """
  N = arrays[0].shape[0]
  size = row_chunk_size(N, max_rows)
  if size == N:
    return fn(*arrays)
  # chunks of `size` rows, then one shorter chunk of the rest (if any)
  full = N // size
  head = jax.lax.map(
    lambda a: fn(*a),
    tuple(a[: full * size].reshape(full, size, *a.shape[1:]) for a in arrays),
  )
  out = jax.tree.map(lambda h: h.reshape(full * size, *h.shape[2:]), head)
  if full * size < N:
    rest = fn(*(a[full * size :] for a in arrays))
    out = jax.tree.map(lambda h, r: jnp.concatenate([h, r]), out, rest)
  return out


_LAYER_PARAMS = (
  "attn_norm",
  "wq",
  "wk",
  "wv",
  "wo",
  "ffn_norm",
  "w_gate",
  "w_up",
  "w_down",
  "q_norm",
  "k_norm",
  "post_attn_norm",
  "post_ffn_norm",
)


def _forward(
  params: Params,
  tokens: jax.Array,
  *,
  config: LMConfig,
  positions=None,
  mask=None,
  cache: KVCache | None = None,
  capture: Capture = Capture(),
  ablation: HeadAblation | None = None,
  logits_mode: str = "all",
  logits_idx=None,
  attention: str = "auto",
  block_size: int | None = None,
  attn_rows=None,
):
  """Unvalidated, un-jitted forward (see `forward`). logits_mode: all|last|index|none."""
  B, T = tokens.shape
  attn_impl = resolve_impl(attention, T, capture.attn == "all")
  if block_size is None:
    block_size = auto_block_size(T)
    local_block_size = auto_block_size(T, config.sliding_window)
  else:
    local_block_size = block_size
  if capture.attn == "rows":
    if attn_rows is None:
      raise ValueError(
        "Capture(attn='rows') needs attn_rows, int [B, R] query indices"
      )
    attn_rows = jnp.clip(jnp.asarray(attn_rows, jnp.int32), 0, T - 1)
  L = config.n_layers
  if mask is None:
    mask = jnp.ones((B, T), bool)
  mask = mask.astype(bool)
  if positions is None:
    start = cache.next_pos[:, None] if cache is not None else 0
    positions = start + jnp.maximum(jnp.cumsum(mask, axis=1) - 1, 0)
  positions = positions.astype(jnp.int32)

  x = jnp.take(params["embed"], tokens, axis=0).astype(jnp.float32)
  if config.embed_scale is not None:
    x = x * config.embed_scale

  flags = config.global_flags()
  rope_bases = jnp.asarray(
    [
      config.rope_base
      if g or config.rope_base_local is None
      else config.rope_base_local
      for g in flags
    ],
    jnp.float32,
  )
  rope_scales = jnp.asarray(
    [
      config.rope_scale if g or config.rope_base_local is None else 1.0
      for g in flags
    ],
    jnp.float32,
  )
  is_global = jnp.asarray(flags, bool)
  # the RoPE tables, once per forward: one (base, scale) for every layer, or a
  # global and a local one
  kinds = [(config.rope_base, config.rope_scale)]
  if config.rope_base_local is not None and not all(flags):
    kinds = ([kinds[0]] if any(flags) else []) + [(config.rope_base_local, 1.0)]
  rope_tables = tuple(
    _rope_table(positions, config.head_dim, b, s) for b, s in kinds
  )
  if ablation is not None:
    abl_mask = ablation.mask.astype(bool)
    # per-row head sets [B, L, H]: scanned over layers as [L, B, H]
    if abl_mask.ndim == 3:
      abl_mask = jnp.moveaxis(abl_mask, 1, 0)
    abl_mean = (
      ablation.mean
      if ablation.mean is not None
      else jnp.zeros((L, config.n_heads, config.head_dim), jnp.float32)
    )
    mode = ablation.mode
  else:
    abl_mask = jnp.zeros((L, config.n_heads), bool)
    abl_mean = jnp.zeros((L, config.n_heads, config.head_dim), jnp.float32)
    mode = None

  layer_params = {k: params[k] for k in _LAYER_PARAMS if k in params}
  if cache is not None:
    index = cache.index
    cache_pos = jax.lax.dynamic_update_slice(cache.pos, positions, (0, index))
    cache_valid = jax.lax.dynamic_update_slice(cache.valid, mask, (0, index))
    ck, cv = cache.k, cache.v
  else:
    index = cache_pos = cache_valid = ck = cv = None

  body = functools.partial(
    _layer,
    config=config,
    positions=positions,
    q_valid=mask,
    cache_pos=cache_pos,
    cache_valid=cache_valid,
    index=index,
    capture=capture,
    ablation_mode=mode,
    attn_impl=attn_impl,
    block_size=block_size,
    local_block_size=local_block_size,
    attn_rows=attn_rows,
    rope_tables=rope_tables,
  )
  xs = (
    layer_params,
    (rope_bases, rope_scales),
    is_global,
    abl_mask,
    abl_mean.astype(jnp.float32),
    ck,
    cv,
  )
  x, outs = jax.lax.scan(body, x, xs)

  new_cache = None
  # all or none
  if cache is not None and cache_pos is not None and cache_valid is not None:
    new_cache = KVCache(
      k=outs.pop("k_cache"),
      v=outs.pop("v_cache"),
      pos=cache_pos,
      valid=cache_valid,
      index=cache.index + T,
      next_pos=cache.next_pos + mask.sum(axis=1).astype(jnp.int32),
    )
  # layer axis -> 1
  captured = {k: jnp.moveaxis(a, 0, 1) for k, a in outs.items()}
  if capture.attn != "none" or capture.values:
    captured["key_pos"] = cache_pos if cache_pos is not None else positions
    captured["key_valid"] = cache_valid if cache_valid is not None else mask

  if logits_mode == "none":
    return None, new_cache, captured
  if logits_mode == "last":
    x = x[:, -1]
  elif logits_mode == "index":
    if logits_idx is None:
      raise ValueError(
        "logits_mode='index' needs logits_idx, int [B, R] positions"
      )
    x = jnp.take_along_axis(x, logits_idx[:, :, None].astype(jnp.int32), axis=1)
  h = rms_norm(x, params["final_norm"], config.norm_eps)
  w_u = unembedding(params, config)
  logits = jnp.einsum(
    "...d,vd->...v",
    h.astype(w_u.dtype),
    w_u,
    preferred_element_type=jnp.float32,
  )
  if config.final_logit_softcap is not None:
    c = config.final_logit_softcap
    logits = c * jnp.tanh(logits / c)
  return logits, new_cache, captured


@functools.partial(
  jax.jit,
  static_argnames=(
    "config",
    "capture",
    "logits_mode",
    "attention",
    "block_size",
  ),
)
def _forward_jit(
  params,
  tokens,
  positions,
  mask,
  cache,
  ablation,
  logits_idx,
  attn_rows,
  *,
  config,
  capture,
  logits_mode,
  attention,
  block_size,
):
  return _forward(
    params,
    tokens,
    config=config,
    positions=positions,
    mask=mask,
    cache=cache,
    capture=capture,
    ablation=ablation,
    logits_mode=logits_mode,
    logits_idx=logits_idx,
    attention=attention,
    block_size=block_size,
    attn_rows=attn_rows,
  )


def _check_ablation(ablation, config, batch=None):
  if ablation is None:
    return
  if not isinstance(ablation, HeadAblation):
    raise TypeError(
      f"ablation must be a HeadAblation or None, got {type(ablation).__name__}"
    )
  if ablation.mode not in _ABLATION_MODES:
    raise ValueError(
      f"ablation.mode must be one of {_ABLATION_MODES}, got {ablation.mode!r}"
    )
  L, H, dh = config.n_layers, config.n_heads, config.head_dim
  shape = tuple(ablation.mask.shape)
  if shape != (L, H) and not (len(shape) == 3 and shape[1:] == (L, H)):
    raise ValueError(
      f"ablation.mask must have shape [L, H] = {(L, H)} or [B, L, H], "
      f"got {shape}"
    )
  if len(shape) == 3 and batch is not None and shape[0] != batch:
    raise ValueError(
      f"a per-row ablation.mask [B, L, H] needs B = the batch size {batch}, "
      f"got {shape}"
    )
  if ablation.mode.startswith("mean"):
    if ablation.mean is None or tuple(ablation.mean.shape) != (L, H, dh):
      raise ValueError(
        f"ablation mode {ablation.mode!r} needs mean of shape [L, H, "
        f"dh] = {(L, H, dh)}"
      )


def _check_attn_rows(attn_rows, capture: Capture, batch: int):
  """int32 [B, R] rows for Capture(attn='rows'), else None (trace-time shape
  checks)."""
  if capture.attn != "rows":
    if attn_rows is not None:
      raise ValueError("attn_rows is only used with Capture(attn='rows')")
    return None
  if attn_rows is None:
    raise ValueError(
      "Capture(attn='rows') needs attn_rows, int [B, R] query indices"
    )
  rows = V.check_array(attn_rows, "attn_rows", dtype="int", ndim=2)
  if rows.shape[0] != batch or rows.shape[1] == 0:
    raise ValueError(
      f"attn_rows must be int [B={batch}, R >= 1], got shape {rows.shape}"
    )
  return rows.astype(jnp.int32)


def _check_tokens(tokens, config: LMConfig, mask=None, name: str = "tokens"):
  """Trace-time dtype/rank checks and the id-range value check:
  ``(tokens, ok)``."""
  raw = tokens
  tokens = V.check_array(tokens, name, dtype="int", ndim=2)
  if mask is not None and tuple(jnp.shape(mask)) != tuple(tokens.shape):
    raise ValueError(
      f"mask must have the shape of {name} {tokens.shape}, "
      f"got {jnp.shape(mask)}"
    )
  # concrete ids are checked on the host: no device program per prompt length
  xp = np if V.is_concrete(tokens, mask) else jnp
  ids = np.asarray(raw) if xp is np else tokens
  in_range = (ids >= 0) & (ids < config.vocab_size)
  if mask is not None:
    in_range = in_range | ~xp.asarray(mask, bool)
  ok = V.check_values(
    xp.all(in_range),
    f"{name} must be token ids in [0, vocab_size={config.vocab_size})",
  )
  return tokens, ok


def _check_cache(cache, config: LMConfig, batch: int):
  if cache is None:
    return
  if not isinstance(cache, KVCache):
    raise TypeError(
      "cache must be a KVCache (init_cache) or None, "
      f"got {type(cache).__name__}"
    )
  want = (config.n_layers, batch, None, config.n_kv_heads, config.head_dim)
  got = tuple(cache.k.shape)
  if len(got) != 5 or any(w is not None and w != g for w, g in zip(want, got)):
    raise ValueError(
      f"cache.k must have shape [L, B, S, KV, dh] = "
      f"{tuple('S' if w is None else w for w in want)}, got {got}"
    )


def forward(
  params: Params,
  tokens: ArrayLike,
  *,
  config: LMConfig,
  positions: ArrayLike | None = None,
  mask: ArrayLike | None = None,
  cache: KVCache | None = None,
  capture: Capture = Capture(),
  ablation: HeadAblation | None = None,
  logits_at: Any = None,
  attention: str = "auto",
  block_size: int | None = None,
  attn_rows: Any = None,
  pad_to: Any = None,
) -> tuple[jax.Array | None, KVCache | None, dict[str, jax.Array]]:
  """Jitted decoder forward pass with optional cache, hooks and head ablation.

  Attention is dense (scores [B, H, T, S]) or blockwise (online softmax over
  tiles of `block_size` queries × keys, memory linear in T; see
  `blockwise_attention`); both give the same result to float32 round-off. 'auto'
  picks blockwise for calls with at least `BLOCKWISE_MIN_QUERIES` (128) tokens,
  unless every attention row is captured.

  Args:
    params: parameter dict (see the module docstring for the layout).
    tokens: int [B, T].
    config: the model's `LMConfig` (static).
    positions: int [B, T] absolute positions; default: running count of valid
      tokens (so left padding starts every row at position 0), continuing from
      `cache.next_pos` when a cache is given.
    mask: bool [B, T], False marks padding (padded keys are never attended).
    cache: a `KVCache`; the T tokens are written at slots [index, index + T).
    capture: which intermediates to return (static).
    ablation: optional `HeadAblation`.
    logits_at: None (every position, [B, T, V]), 'last' ([B, V]), 'none' (no
      logits) or int [B, P] positions ([B, P, V]).
    attention: 'auto', 'dense' or 'blockwise' (static). 'blockwise' cannot
      capture every row (Capture(attn='all')); use Capture(attn='rows') for
      chosen rows.
    block_size: tile size of the blockwise path (static); None:
      `auto_block_size(T)`, and `auto_block_size(T, W)` on sliding-window
      layers.
    attn_rows: int [B, R] query indices (into the T axis) whose attention rows
      Capture(attn='rows') records, [B, L, H, R, S]; computed for those rows
      only.
    pad_to: None (no padding), an int T' >= T, or 'bucket' (T' =
      `bucket_length(T)`): the call is left-padded to T' columns (mask False;
      positions, when given, repeat the first one) and the T' - T padding
      columns are cut from the outputs, so every length in a bucket reuses one
      compiled program and the results equal the unpadded call's up to float32
      round-off. Without a cache the key axis S is cut too (S = T); with a cache
      the padding takes T' - T cache slots (key_valid False there).

  Returns:
    (logits, new_cache or None, captured dict with the layer axis at position 1,
    plus 'key_pos'/'key_valid' [B, S] when attention or values are captured).

  Raises:
    TypeError, ValueError: wrong dtypes or shapes of tokens, params, mask,
      cache, ablation; eagerly, a token id outside [0, vocab_size) (at unmasked
      positions).

  Under jit: an out-of-range token id makes every float output NaN (and every
  integer output -1).
  """
  _check_config(config)
  validate_params(params, config)
  if not isinstance(capture, Capture):
    raise TypeError(f"capture must be a Capture, got {type(capture).__name__}")
  shape = tuple(jnp.shape(tokens))
  if len(shape) != 2:
    # raises, naming the expected form
    V.check_array(tokens, "tokens", dtype="int", ndim=2)
  for name, a in (("positions", positions), ("mask", mask)):
    if a is not None and tuple(jnp.shape(a)) != shape:
      raise ValueError(
        f"{name} must have the shape of tokens {shape}, got {jnp.shape(a)}"
      )
  T = shape[1]
  pad = pad_target(pad_to, T) - T
  # on the host before any check, so that the device only sees the bucket's
  # shape
  if pad:
    tokens = _left_pad_columns(tokens, pad, 0)
    mask = _left_pad_columns(
      np.ones((tokens.shape[0], T), bool) if mask is None else mask, pad, False
    )
    if positions is not None:
      positions = _left_pad_columns(positions, pad, None)
  tokens, ok = _check_tokens(tokens, config, mask)
  _check_cache(cache, config, tokens.shape[0])
  if capture.attn not in _ATTN_CAPTURE:
    raise ValueError(
      f"capture.attn must be one of {_ATTN_CAPTURE}, got {capture.attn!r}"
    )
  _check_ablation(ablation, config, tokens.shape[0])
  resolve_impl(attention, tokens.shape[1], capture.attn == "all")
  if block_size is not None:
    block_size = V.check_int(block_size, "block_size", min_value=1)
  attn_rows = _check_attn_rows(attn_rows, capture, tokens.shape[0])
  logits_idx = None
  if logits_at is None:
    mode = "all"
  elif isinstance(logits_at, str):
    if logits_at not in ("last", "none"):
      raise ValueError(
        "logits_at must be None, 'last', 'none' or int [B, P], "
        f"got {logits_at!r}"
      )
    mode = logits_at
  else:
    logits_idx = jnp.asarray(logits_at)
    if logits_idx.ndim != 2 or logits_idx.shape[0] != tokens.shape[0]:
      raise ValueError(
        f"logits_at must be int [B, P], got shape {logits_idx.shape}"
      )
    mode = "index"
  if pad:
    if logits_idx is not None:
      logits_idx = logits_idx + pad
    if attn_rows is not None:
      attn_rows = attn_rows + pad
  logits, new_cache, captured = _forward_jit(
    params,
    tokens,
    positions,
    mask,
    cache,
    ablation,
    logits_idx,
    attn_rows,
    config=config,
    capture=capture,
    logits_mode=mode,
    attention=attention,
    block_size=block_size,
  )
  if pad:
    logits, captured = _cut_padding(
      logits, captured, pad, mode, capture, cut_keys=cache is None
    )
  return V.poison((logits, new_cache, captured), ok)


def pad_target(pad_to, length: int) -> int:
  """The padded length for `pad_to` (None, an int >= length, or 'bucket')."""
  if pad_to is None:
    return length
  if isinstance(pad_to, str):
    if pad_to != "bucket":
      raise ValueError(
        f"pad_to must be None, an int or 'bucket', got {pad_to!r}"
      )
    return bucket_length(length)
  return V.check_int(pad_to, "pad_to", min_value=length)


def _left_pad_columns(x, n: int, fill):
  """x [B, T, ...] with n columns put in front: `fill`, or copies of column 0
  when None.

  Concrete arrays are padded on the host (no device program per length)."""
  if V.is_concrete(x):
    x = np.asarray(x)
    if fill is None:
      return np.concatenate([np.repeat(x[:, :1], n, axis=1), x], axis=1)
    widths = [(0, 0), (n, 0)] + [(0, 0)] * (x.ndim - 2)
    return np.pad(x, widths, constant_values=fill)
  if fill is None:
    return jnp.concatenate([jnp.repeat(x[:, :1], n, axis=1), x], axis=1)
  widths = [(0, 0), (n, 0)] + [(0, 0)] * (x.ndim - 2)
  return jnp.pad(x, widths, constant_values=fill)


def _cut_padding(
  logits, captured, pad: int, mode: str, capture: Capture, *, cut_keys: bool
):
  """Drop the first `pad` query columns (and key slots when cut_keys) from
  forward's outputs."""
  if mode == "all":
    logits = logits[:, pad:]
  out = {}
  for name, a in captured.items():
    if name in ("queries", "head_outputs", "residual"):  # [B, L, T, ...]
      a = a[:, :, pad:]
    elif name == "attn":  # [B, L, H, S] | [B, L, H, R, S] | [B, L, H, T, S]
      if capture.attn == "all":
        a = a[:, :, :, pad:]
      if cut_keys:
        a = a[..., pad:]
    elif name == "values" and cut_keys:  # [B, L, KV, S, dh]
      a = a[:, :, :, pad:]
    elif name in ("key_pos", "key_valid") and cut_keys:  # [B, S]
      a = a[:, pad:]
    out[name] = a
  return logits, out


# ---------------------------------------------------------------------------
# NNX module


class Decoder(nnx.Module):
  """Flax NNX wrapper around the functional forward.

  Every parameter is an `nnx.Param` holding the stacked array named in the
  module docstring, so `nnx.split(model)` gives a state whose arrays are the
  `Params` dict and `model(tokens)` equals `forward(model.params(), tokens)`.

  Args:
    config: the model's `LMConfig`.
    rngs: random streams for a random init (`init_params`); needed without
      `params`.
    params: the parameter dict (e.g. from `load_gguf`); checked with
      `validate_params`.
    dtype: dtype of a random init.
  """

  def __init__(
    self,
    config: LMConfig,
    *,
    rngs: nnx.Rngs | None = None,
    params: Params | None = None,
    dtype: DTypeLike = jnp.float32,
  ):
    _check_config(config)
    if params is None:
      if rngs is None:
        raise ValueError(
          "Decoder needs rngs (random init) or params (e.g. from load_gguf)"
        )
      params = init_params(rngs.params(), config, dtype=dtype)
    validate_params(params, config)
    self.config = config
    for name, value in params.items():
      setattr(self, name, nnx.Param(jnp.asarray(value)))

  def params(self) -> Params:
    """The parameters as the functional API takes them.

    Returns:
      The parameter dict (the arrays of the `nnx.Param`s), as `forward` takes
      it.
    """
    return {
      name: getattr(self, name)[...] for name in param_shapes(self.config)
    }

  def __call__(
    self,
    tokens,
    *,
    positions=None,
    mask=None,
    cache=None,
    capture=Capture(),
    ablation=None,
    logits_at=None,
    attention="auto",
    block_size=None,
    attn_rows=None,
  ):
    """Same arguments (except `pad_to`: this call is traced by the caller's jit)
    and bad-input behaviour as `forward` (NaN outputs for bad ids under jit)."""
    tokens, ok = _check_tokens(tokens, self.config, mask)
    _check_cache(cache, self.config, tokens.shape[0])
    _check_ablation(ablation, self.config, tokens.shape[0])
    resolve_impl(attention, tokens.shape[1], capture.attn == "all")
    if block_size is not None:
      block_size = V.check_int(block_size, "block_size", min_value=1)
    attn_rows = _check_attn_rows(attn_rows, capture, tokens.shape[0])
    mode, idx = "all", None
    if isinstance(logits_at, str):
      mode = logits_at
    elif logits_at is not None:
      mode, idx = "index", jnp.asarray(logits_at)
    return V.poison(
      _forward(
        self.params(),
        tokens,
        config=self.config,
        positions=positions,
        mask=mask,
        cache=cache,
        capture=capture,
        ablation=ablation,
        logits_mode=mode,
        logits_idx=idx,
        attention=attention,
        block_size=block_size,
        attn_rows=attn_rows,
      ),
      ok,
    )


def left_pad(
  sequences: Sequence[Sequence[int]],
  *,
  pad_id: int = 0,
  length: int | None = None,
) -> tuple[jax.Array, jax.Array]:
  """Left-pad a list of token lists into (ids int32 [B, T], mask bool [B, T]).

  Left padding puts every row's last real token in the last column, which is
  what `generate` needs.

  Args:
    sequences: B non-empty lists of integer token ids.
    pad_id: the id written in the padding columns.
    length: T, at least the longest sequence; default the longest sequence's
      length.

  Returns:
    `(ids, mask)`: int32 [B, T] ids and bool [B, T], True at the real tokens.
  """
  pad_id = V.check_int(pad_id, "pad_id")
  seqs = []
  for s in sequences:
    s = list(s)
    for t in s:
      if isinstance(t, (bool, np.bool_)) or not isinstance(
        t, (int, np.integer)
      ):
        raise TypeError(
          f"sequences must hold integer token ids, got {type(t).__name__} {t!r}"
        )
    seqs.append([int(t) for t in s])
  if not seqs or any(len(s) == 0 for s in seqs):
    raise ValueError(
      "sequences must be a non-empty list of non-empty token lists"
    )
  if length is not None:
    length = V.check_int(length, "length", min_value=1)
  T = max(len(s) for s in seqs) if length is None else length
  if any(len(s) > T for s in seqs):
    raise ValueError(f"a sequence is longer than length={T}")
  ids = np.full((len(seqs), T), pad_id, np.int32)
  mask = np.zeros((len(seqs), T), bool)
  for i, s in enumerate(seqs):
    ids[i, T - len(s) :] = s
    mask[i, T - len(s) :] = True
  return jnp.asarray(ids), jnp.asarray(mask)
