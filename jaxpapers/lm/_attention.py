"""Masked multi-head attention, dense or blockwise (online softmax), for
`jaxpapers.lm`.

Both paths compute, for query row t (position p_t) of query head h and the key
slots j (position p_j, valid flag m_j) of its KV head kv(h) = h // G,

  s_tj = scale · q_t · k_j,      allowed_tj = m_j ∧ p_j ≤ p_t ∧ (global ∨ p_t − p_j < W)
  α_tj = exp(s_tj − max_j s_tj) / Σ_j exp(s_tj − max_j s_tj)   over allowed j
  z_t  = Σ_j α_tj v_j

**Dense** materialises s and α as [B, H, T, S] float32 tensors: memory
O(B·H·T·S), i.e. quadratic in the context length at prefill (T = S).

**Blockwise** (flash-style) splits queries into blocks Q_a and keys into blocks
K_b of `block_size` rows and never forms more than one [B, H, bq, bk] tile. For
each query block it runs over the key blocks keeping, per row, a reference
maximum m, the running normaliser ℓ and the running unnormalised output o (the
online softmax):

  m' = max(m, max_{j∈K_b} s_tj)
  ℓ' = ℓ · e^{m − m'} + Σ_{j∈K_b} e^{s_tj − m'}
  o' = o · e^{m − m'} + Σ_{j∈K_b} e^{s_tj − m'} v_j
  z_t = o / ℓ  after the last block,

which equals the dense result exactly in exact arithmetic (the rescaling by e^{m
− m'} makes every term relative to the final reference). Disallowed pairs get
the finite score −1e30, so a row whose first tiles are fully masked accumulates
garbage that the factor e^{−1e30 − m'} = 0 erases once an allowed key arrives.

*Lazy rescaling.* Any reference m gives the same z as long as no e^{s − m}
overflows, so after the first tile of a query block a tile first tries the cheap
step m' = m (no row-maximum pass, no rescaling of ℓ and o: ℓ' = ℓ + Σ e^{s − m},
o' = o + Σ e^{s − m} v). If any row's tile sum Σ_j e^{s_tj − m} exceeds
e^{LAZY_RESCALE_LOG} (a new maximum far above m, or a row with no allowed key so
far), the tile takes the exact step above instead. m is always an exact maximum
of earlier scores, so the largest term of ℓ is at least 1 (no underflow) and
every term stays below e^{LAZY_RESCALE_LOG} (no overflow): the result equals the
exact-step result to float32 round-off.

*Which tiles run.* A tile's kind is judged on positions over the whole batch, so
it is exact for any positions and padding: *skipped* when no query of the block
can attend any valid key of the tile (min valid key position > max query
position, or, on sliding-window layers, min query position − max valid key
position ≥ W); *full* (no mask is built) when every key slot is valid and every
query may attend every key; *masked* otherwise. Each query block loops
(`lax.fori_loop`) only from its first to its last needed key block and
`lax.switch`es on the kind, so a causal prefill computes the T(T+1)/2 allowed
pairs plus about T·block/2 masked ones on the diagonal tiles, and a
sliding-window layer about T·(W + 2·block) pairs.

*Layout.* Keys and values are laid out tile by tile once per call (the keys
transposed), so a tile's two products read contiguous [dh, bk] and [bk, dh]
operands; a tile's rows are the (batch, KV head, group member, query) rows
flattened, so its elementwise work (mask, exp, row sums) splits evenly over a
CPU's threads whatever the number of KV heads.

Memory: the live intermediates are one tile [B, H, bq, bk] plus the carries
[B, H, bq] (m, ℓ) and [B, H, bq, dh] (o) and the output [B, T, H, dh]:
O(B·H·(T·dh + bq·bk)), linear in T.

Attention probabilities for a few query rows (what LOCOS-style detectors read:
the last row, or the answer positions) are computed separately by
`attention_rows`, one dense softmax per requested row: O(B·H·R·S) memory for R
rows.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

NEG = -1e30
ATTENTION_IMPLS = ("auto", "dense", "blockwise")
#: `attention='auto'` uses the blockwise path when a call has at least this many query rows.
BLOCKWISE_MIN_QUERIES = 128
#: The largest tile side `auto_block_size` picks (and the smallest).
MAX_BLOCK_SIZE = 256
MIN_BLOCK_SIZE = 32
#: A tile keeps the running row maxima while its row sums stay below e^LAZY_RESCALE_LOG.
LAZY_RESCALE_LOG = 40.0
_LAZY_LIMIT = float(math.exp(LAZY_RESCALE_LOG))


def auto_block_size(num_queries: int, window: int | None = None) -> int:
  """The tile side for a call with T = `num_queries` rows: T/4 rounded down to a
  power of 2, clipped to [MIN_BLOCK_SIZE, MAX_BLOCK_SIZE] (T = 128: 32, 256: 64,
  512: 128, >= 1024: 256); for a sliding-window layer (`window` W) at most W/4
  rounded down to a power of 2 as well.

  Small tiles waste less of the diagonal tiles of a causal prefill (about
  T·block/2 of the T²/2 computed pairs are masked out), large ones amortise the
  per-tile work; on a 2-core CPU (`benchmarks/lm_context.py`) this choice was
  within a few percent of the best fixed size at every length from 128 to 4,096
  tokens. A query block of a sliding-window layer reads about W + block keys for
  the W it may attend, so its tile is kept to W/4 (Gemma-3's W = 512: 128, which
  ran a local layer at 4,096 tokens about 1.25x faster than 256-tiles,
  single-threaded).

  Args:
    num_queries: T >= 1, the number of query rows of the call.
    window: the sliding window W >= 1 of a local layer, or None (a global
      layer).

  Returns:
    The tile side, a power of 2 in [MIN_BLOCK_SIZE, MAX_BLOCK_SIZE].
  """
  t = max(V.check_int(num_queries, "num_queries", min_value=1) // 4, 1)
  if window is not None:
    t = min(t, max(V.check_int(window, "window", min_value=1) // 4, 1))
  return int(
    min(MAX_BLOCK_SIZE, max(MIN_BLOCK_SIZE, 1 << (t.bit_length() - 1)))
  )


def resolve_impl(impl: str, num_queries: int, capture_all: bool) -> str:
  """'dense' or 'blockwise' for a call with `num_queries` rows ('auto' picks by
  length).

  'auto' stays dense when every attention row is to be captured (the dense
  [T, S] probabilities are the output then) and below `BLOCKWISE_MIN_QUERIES`
  rows.
  """
  if impl not in ATTENTION_IMPLS:
    raise ValueError(
      f"attention must be one of {ATTENTION_IMPLS}, got {impl!r}"
    )
  if impl == "auto":
    return (
      "blockwise"
      if (num_queries >= BLOCKWISE_MIN_QUERIES and not capture_all)
      else "dense"
    )
  if impl == "blockwise" and capture_all:
    raise ValueError(
      "attention='blockwise' cannot capture every attention row "
      "(Capture(attn='all') needs the dense [T, S] probabilities): "
      "use Capture(attn='rows') with attn_rows, or attention='dense'"
    )
  return impl


def _allowed(q_pos, key_pos, key_valid, window, is_global):
  """bool [B, 1, Tq, S] (broadcasts over heads)."""
  qp = q_pos[:, None, :, None]
  kp = key_pos[:, None, None, :]
  ok = key_valid[:, None, None, :] & (kp <= qp)
  if window is not None:
    ok = ok & (is_global | (qp - kp < window))
  return ok


def _scores(q, k, scale):
  """q [B, Tq, H, dh], k [B, S, KV, dh] -> scale · q kᵀ as [B, H, Tq, S] (GQA grouping)."""
  B, T, H, dh = q.shape
  KV = k.shape[2]
  qg = q.reshape(B, T, KV, H // KV, dh)
  s = jnp.einsum("btkgd,bskd->bkgts", qg, k.astype(jnp.float32)) * scale
  return s.reshape(B, H, T, k.shape[1])


def dense_attention(
  q, k, v, q_pos, key_pos, key_valid, *, scale, window=None, is_global=True
):
  """Dense masked attention: (z [B, T, H, dh], probabilities [B, H, T, S])."""
  B, T, H, dh = q.shape
  KV, S = k.shape[2], k.shape[1]
  s = jnp.where(
    _allowed(q_pos, key_pos, key_valid, window, is_global),
    _scores(q, k, scale),
    NEG,
  )
  probs = jax.nn.softmax(s, axis=-1)
  z = jnp.einsum(
    "bkgts,bskd->btkgd",
    probs.reshape(B, KV, H // KV, T, S),
    v.astype(jnp.float32),
  ).reshape(B, T, H, dh)
  return z, probs


def attention_rows(
  q_rows,
  k,
  q_pos_rows,
  key_pos,
  key_valid,
  *,
  scale,
  window=None,
  is_global=True,
):
  """Attention probabilities of selected query rows only: [B, H, R, S].

  Args:
    q_rows: f32 [B, R, H, dh], the (RoPE'd) queries of the R requested rows.
    k: [B, S, KV, dh] keys.
    q_pos_rows: int [B, R] their positions.
    key_pos, key_valid: [B, S].
  """
  s = _scores(q_rows, k, scale)
  s = jnp.where(
    _allowed(q_pos_rows, key_pos, key_valid, window, is_global), s, NEG
  )
  return jax.nn.softmax(s, axis=-1)


def _pad_axis(x, axis, n, *, value=None):
  if n == 0:
    return x
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, n)
  if value is None:
    return jnp.pad(x, widths, mode="edge")
  return jnp.pad(x, widths, constant_values=value)


def _tile_kinds(q_pos, key_pos, key_valid, *, bq, bk, window, is_global):
  """Per (query block, key block) tile: 0 skip, 1 every pair allowed, 2 masked:
  int32 [nq, nk].

  Judged on positions (so exact for any positions and padding), over the whole
  batch: a tile is skipped when no query of the block may attend any valid key
  of the tile, and is 'full' when every key slot is valid and every query may
  attend every key.
  """
  B, Tp = q_pos.shape
  Sp = key_pos.shape[1]
  qp = q_pos.reshape(B, Tp // bq, bq)
  kp = key_pos.reshape(B, Sp // bk, bk)
  kv = key_valid.reshape(B, Sp // bk, bk)
  big = jnp.int32(2**30)
  # [nq, 1]
  qmin, qmax = (
    jnp.min(qp, axis=(0, 2))[:, None],
    jnp.max(qp, axis=(0, 2))[:, None],
  )
  # [1, nk]; big: no valid key
  kmin = jnp.min(jnp.where(kv, kp, big), axis=(0, 2))[None]
  kmax = jnp.max(jnp.where(kv, kp, -big), axis=(0, 2))[None]
  kall = jnp.all(kv, axis=(0, 2))[None]
  needed = kmin <= qmax
  full = kall & (kmax <= qmin)
  if window is not None:
    needed = needed & (is_global | (qmin - kmax < window))
    full = full & (is_global | (qmax - kmin < window))
  return jnp.where(needed, jnp.where(full, 1, 2), 0).astype(jnp.int32)


def _blockwise(
  q, k, v, q_pos, key_pos, key_valid, *, scale, window, is_global, block_size
):
  B, T, H, dh = q.shape
  S, KV = k.shape[1], k.shape[2]
  G = H // KV
  bq, bk = min(block_size, T), min(block_size, S)
  nq, nk = -(-T // bq), -(-S // bk)
  # padded query rows repeat the last position (they never widen a block's
  # range) and are cut; padded key slots are invalid. float32, or float64 for
  # float64 inputs
  dt = jnp.promote_types(q.dtype, jnp.float32)
  q = _pad_axis(q.astype(dt) * scale, 1, nq * bq - T, value=0.0)
  q_pos = _pad_axis(q_pos, 1, nq * bq - T)
  k = _pad_axis(k.astype(dt), 1, nk * bk - S, value=0)
  v = _pad_axis(v.astype(dt), 1, nk * bk - S, value=0)
  key_pos = _pad_axis(key_pos, 1, nk * bk - S)
  key_valid = _pad_axis(key_valid, 1, nk * bk - S, value=False)
  kinds = _tile_kinds(
    q_pos, key_pos, key_valid, bq=bq, bk=bk, window=window, is_global=is_global
  )
  needed = kinds > 0  # [nq, nk]
  # first needed key block (0 if none)
  j_lo = jnp.argmax(needed, axis=1).astype(jnp.int32)
  j_hi = jnp.where(
    jnp.any(needed, axis=1), nk - jnp.argmax(needed[:, ::-1], axis=1), j_lo
  )
  j_hi = j_hi.astype(jnp.int32)

  # Tiles are laid out for the CPU's threads and the products' operands: the
  # rows of a tile are the B·KV·G·bq (batch, KV head, group member, query) rows
  # flattened, so the elementwise work on a tile splits evenly over any number
  # of threads (not by KV head: 3 heads over 2 threads would idle one of them a
  # third of the time); the products are batched over N = B·KV with [G·bq, dh]
  # queries against contiguous [dh, bk] keys and [bk, dh] values, laid out tile
  # by tile once per call (no transpose per tile).
  N, M = B * KV, G * bq  # product batch, query rows per product
  R = N * M  # rows of a tile
  qb = (
    q.reshape(B, nq, bq, KV, G, dh)
    .transpose(1, 0, 3, 4, 2, 5)
    .reshape(nq, N, M, dh)
  )
  qpb = q_pos.reshape(B, nq, bq).transpose(1, 0, 2)  # [nq, B, bq]
  kt = (
    k.reshape(B, nk, bk, KV, dh).transpose(1, 0, 3, 4, 2).reshape(nk, N, dh, bk)
  )
  vt = (
    v.reshape(B, nk, bk, KV, dh).transpose(1, 0, 3, 2, 4).reshape(nk, N, bk, dh)
  )

  def query_block(args):
    qi, qp, kind_row, lo, hi = args  # [N, M, dh], [B, bq], [nk], [], []
    # each flattened row's query position: [B, KV·G·bq, 1]
    q_rows = jnp.broadcast_to(qp[:, None, :], (B, KV * G, bq)).reshape(
      B, KV * G * bq, 1
    )

    def scores(j, masked):
      kj = jax.lax.dynamic_index_in_dim(kt, j, keepdims=False)  # [N, dh, bk]
      s = jnp.einsum("nmd,nds->nms", qi, kj)  # [N, M, bk]
      if masked:
        s = s.reshape(B, KV * G * bq, bk)
        kp = jax.lax.dynamic_slice_in_dim(key_pos, j * bk, bk, axis=1)[
          :, None, :
        ]
        kval = jax.lax.dynamic_slice_in_dim(key_valid, j * bk, bk, axis=1)[
          :, None, :
        ]
        ok = kval & (kp <= q_rows)
        if window is not None:
          ok = ok & (is_global | (q_rows - kp < window))
        s = jnp.where(ok, s, NEG)
      return s.reshape(R, bk)

    def pv(j, p):
      """p [R, bk] times the tile's values: [R, dh]."""
      vj = jax.lax.dynamic_index_in_dim(vt, j, keepdims=False)  # [N, bk, dh]
      return jnp.einsum("nms,nsd->nmd", p.reshape(N, M, bk), vj).reshape(R, dh)

    def rescaled(j, s, carry):
      """The online-softmax step with the tile's exact row maxima."""
      m, l, o = carry
      m_new = jnp.maximum(m, jnp.max(s, axis=-1))
      p = jnp.exp(s - m_new[:, None])
      corr = jnp.exp(m - m_new)
      l = l * corr + jnp.sum(p, axis=-1)
      o = o * corr[:, None] + pv(j, p)
      return m_new, l, o

    def first(j, carry, masked):
      return rescaled(j, scores(j, masked), carry)

    def later(j, carry, masked):
      """Reuse the running maxima m while the tile's row sums stay below
      e^LAZY_RESCALE_LOG."""
      m, l, o = carry
      p = jnp.exp(scores(j, masked) - m[:, None])
      lt = jnp.sum(p, axis=-1)
      lazy = (m, l + lt, o + pv(j, p))
      # a row whose sum passes the limit (a maximum far above m, or m still NEG)
      # makes the whole tile take the exact step instead
      return jax.lax.cond(
        jnp.all(lt <= _LAZY_LIMIT),
        lambda: lazy,
        lambda: first(j, carry, masked),
      )

    def body(j, carry):
      branch = jnp.where(kind_row[j] == 0, 0, kind_row[j] + 2 * (j > lo))
      return jax.lax.switch(
        branch,
        (
          lambda c: c,
          lambda c: first(j, c, False),
          lambda c: first(j, c, True),
          lambda c: later(j, c, False),
          lambda c: later(j, c, True),
        ),
        carry,
      )

    init = (
      jnp.full((R,), NEG, dt),
      jnp.zeros((R,), dt),
      jnp.zeros((R, dh), dt),
    )
    _, l, o = jax.lax.fori_loop(lo, hi, body, init)
    # l == 0 only when every tile was skipped
    return o / jnp.where(l > 0, l, 1.0)[:, None]

  z = jax.lax.map(query_block, (qb, qpb, kinds, j_lo, j_hi))  # [nq, R, dh]
  z = (
    z.reshape(nq, B, KV, G, bq, dh)
    .transpose(1, 0, 4, 2, 3, 5)
    .reshape(B, nq * bq, H, dh)
  )
  return z[:, :T]


def blockwise_attention(
  q: jax.Array,
  k: jax.Array,
  v: jax.Array,
  q_pos: jax.Array,
  key_pos: jax.Array,
  key_valid: jax.Array,
  *,
  scale: float | None = None,
  window: int | None = None,
  is_global: bool | jax.Array = True,
  block_size: int | None = None,
) -> jax.Array:
  """Masked GQA attention with memory linear in the context length (online
  softmax).

  Computes z_t = Σ_j softmax_j(scale · q_t·k_j | allowed_tj) v_j tile by tile (see the
  module docstring for the update equations and the tile-skipping rule), where a key slot j
  is allowed for query t iff key_valid[j], key_pos[j] <= q_pos[t] and, unless `is_global`,
  q_pos[t] - key_pos[j] < window. Equals the dense softmax attention to float32 round-off
  for every query row with at least one allowed key; a row with none (e.g. a padding query
  before any real token) gets a finite, meaningless output, as in the dense path.

  Args:
    q: float [B, T, H, dh] queries (after RoPE).
    k, v: float [B, S, KV, dh]; H must be a multiple of KV (query head h reads
      KV head h // (H // KV)).
    q_pos: int [B, T] absolute positions of the queries.
    key_pos: int [B, S] absolute positions of the key slots.
    key_valid: bool [B, S]; False marks padding or unwritten cache slots.
    scale: logit scale; default 1/sqrt(dh).
    window: sliding window W (keys with q_pos - key_pos < W), or None.
    is_global: bool (may be traced); True disables the window.
    block_size: rows per query block and per key block (static); None:
      `auto_block_size(T)`, or `auto_block_size(T, window)` when `is_global` is
      the constant False.

  Returns:
    [B, T, H, dh], the head outputs z before the output projection: float32
    (float64 for float64 inputs, with `jax.enable_x64`).

  Raises:
    ValueError, TypeError: wrong ranks, mismatched shapes, H not a multiple of
      KV, non-integer positions, a bad block_size or window (at trace time, also
      under jit).

  Example:
    >>> z = blockwise_attention(q, k, v, pos, pos, jnp.ones(pos.shape, bool), block_size=128)
  """
  q = V.check_array(q, "q", dtype="float", ndim=4)
  k = V.check_array(k, "k", dtype="float", ndim=4)
  v = V.check_array(v, "v", dtype="float", ndim=4)
  B, T, H, dh = q.shape
  if k.shape[0] != B or k.shape[3] != dh or v.shape != k.shape:
    raise ValueError(
      f"k and v must have shape [B, S, KV, dh] = [{B}, S, KV, {dh}], "
      f"got {k.shape} and {v.shape}"
    )
  if H % k.shape[2]:
    raise ValueError(
      f"q's heads H={H} must be a multiple of k's KV heads {k.shape[2]}"
    )
  q_pos = V.check_array(q_pos, "q_pos", dtype="int", shape=(B, T))
  key_pos = V.check_array(
    key_pos, "key_pos", dtype="int", shape=(B, k.shape[1])
  )
  key_valid = V.check_array(
    key_valid, "key_valid", dtype="intbool", shape=(B, k.shape[1])
  )
  if block_size is None:
    local = window is not None and isinstance(is_global, bool) and not is_global
    block_size = auto_block_size(T, window if local else None)
  block_size = V.check_int(block_size, "block_size", min_value=1)
  if window is not None:
    window = V.check_int(window, "window", min_value=1)
  scale = (
    1.0 / math.sqrt(dh) if scale is None else V.check_float(scale, "scale")
  )
  return _blockwise(
    q,
    k,
    v,
    q_pos.astype(jnp.int32),
    key_pos.astype(jnp.int32),
    key_valid.astype(bool),
    scale=scale,
    window=window,
    is_global=jnp.asarray(is_global, bool),
    block_size=block_size,
  )


def bucket_length(
  n: int, *, min_length: int = 16, steps_per_octave: int = 4
) -> int:
  """The padded length of an n-token prompt: few distinct lengths, at most
  1/steps waste.

  Buckets are `min_length` and then, in each octave [2^e, 2^(e+1)), the
  multiples of 2^e / steps_per_octave (16, 20, 24, 28, 32, 40, 48, 56, 64,
  80, ..., 1024, 1280, ...), so a prompt is padded by less than
  1/steps_per_octave of its length and a model compiles at most steps_per_octave
  programs per doubling of the prompt length.

  Args:
    n: prompt length (>= 1).
    min_length: the smallest bucket.
    steps_per_octave: buckets per doubling.

  Returns:
    An int >= n.
  """
  n = V.check_int(n, "n", min_value=1)
  min_length = V.check_int(min_length, "min_length", min_value=1)
  steps_per_octave = V.check_int(
    steps_per_octave, "steps_per_octave", min_value=1
  )
  if n <= min_length:
    return min_length
  e = n.bit_length() - 1  # 2^e <= n < 2^(e+1)
  step = max(1, (1 << e) // steps_per_octave)
  return -(-n // step) * step
