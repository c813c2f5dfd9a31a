"""LAnR heads on the LM's hidden states: query/document projections and the MLP
control head.

  e_q = normalise(P_q · ẑ),   e_d = normalise(P_d · ĥ),   s = σ(w_2ᵀ relu(W_1 ẑ + b_1) + b_2),

where ẑ = LN(z) is the hidden state standardised over its features (mean 0,
variance 1, no gain). The standardisation is a **reconstruction**: the abstract
names the heads, not their inputs; it makes the control MLP insensitive to the
residual stream's scale, and retrieval is scale-invariant anyway (the
projections are L2-normalised).

Parameters are plain dicts of arrays (pytrees), so they pass through
``jax.jit``, ``optax`` and ``core.Sweep`` unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def _check_key(key):
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError(
      f"key must be a typed PRNG key (jax.random.key(seed)), got "
      f"{getattr(key, 'dtype', type(key).__name__)}"
    )


def standardise(x: jax.Array) -> jax.Array:
  """LN without gain: (x − mean(x)) / sqrt(var(x) + 1e-6) over the last axis, in
  float32+.

  Args:
    x: float [..., H] with H >= 1.

  Returns:
    [..., H], float32 (float64 for float64 input).
  """
  x = V.check_array(x, "x", dtype="float")
  if x.ndim < 1 or x.shape[-1] < 1:
    raise ValueError(f"x must have shape [..., H] with H >= 1, got {x.shape}")
  x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
  mu = x.mean(-1, keepdims=True)
  var = ((x - mu) ** 2).mean(-1, keepdims=True)
  return (x - mu) * jax.lax.rsqrt(var + 1e-6)


def init_retrieval_heads(
  key: jax.Array, hidden_dim: int, *, rep_dim: int = 256
) -> dict[str, jax.Array]:
  """P_q and P_d, each [H, D_r], normal(0, 1/H).

  Args:
    key: a typed PRNG key.
    hidden_dim: H, the LM's hidden width.
    rep_dim: D_r, the retrieval space width.

  Returns:
    {'p_q': f32 [H, D_r], 'p_d': f32 [H, D_r]}.
  """
  _check_key(key)
  h = V.check_int(hidden_dim, "hidden_dim", min_value=1)
  r = V.check_int(rep_dim, "rep_dim", min_value=1)
  kq, kd = jax.random.split(key)
  s = h**-0.5
  return {
    "p_q": s * jax.random.normal(kq, (h, r), jnp.float32),
    "p_d": s * jax.random.normal(kd, (h, r), jnp.float32),
  }


def init_control_head(
  key: jax.Array, hidden_dim: int, *, width: int = 256
) -> dict[str, jax.Array]:
  """The 2-layer control MLP: W_1 [H, W], b_1 [W], w_2 [W], b_2 [].

  Args:
    key: a typed PRNG key.
    hidden_dim: H.
    width: W, the hidden width (256 in the reconstruction).

  Returns:
    {'w1', 'b1', 'w2', 'b2'} float32 arrays.
  """
  _check_key(key)
  h = V.check_int(hidden_dim, "hidden_dim", min_value=1)
  w = V.check_int(width, "width", min_value=1)
  k1, k2 = jax.random.split(key)
  return {
    "w1": h**-0.5 * jax.random.normal(k1, (h, w), jnp.float32),
    "b1": jnp.zeros((w,), jnp.float32),
    "w2": w**-0.5 * jax.random.normal(k2, (w,), jnp.float32),
    "b2": jnp.zeros((), jnp.float32),
  }


def _check_proj(heads, name, x, arg):
  if not isinstance(heads, dict) or name not in heads:
    raise TypeError(
      f"heads must be a dict with {name!r} (init_retrieval_heads)"
    )
  x = V.check_array(x, arg, dtype="float")
  if x.ndim < 1 or x.shape[-1] != heads[name].shape[0]:
    raise ValueError(
      f"{arg} must have shape [..., H] with H = {heads[name].shape[0]}, "
      f"got {x.shape}"
    )
  return x


def _embed(p, x):
  e = standardise(x) @ p.astype(jnp.promote_types(p.dtype, jnp.float32))
  return e * jax.lax.rsqrt(jnp.sum(e * e, -1, keepdims=True) + 1e-12)


def query_embedding(heads: dict[str, jax.Array], z: jax.Array) -> jax.Array:
  """e_q = normalise(P_qᵀ LN(z)) for [PRED] hidden states.

  LN is a parameter-free standardisation of the last axis.

  Args:
    heads: the retrieval heads of :func:`init_retrieval_heads`
      (``p_q [H, D_r]``).
    z: float [..., H] hidden states at [PRED].

  Returns:
    float [..., D_r] unit query embeddings.
  """
  z = _check_proj(heads, "p_q", z, "z")
  return _embed(heads["p_q"], z)


def doc_embedding(heads: dict[str, jax.Array], h: jax.Array) -> jax.Array:
  """e_d = normalise(P_dᵀ LN(h)) for [DOC] hidden states.

  Args:
    heads: the retrieval heads of :func:`init_retrieval_heads`
      (``p_d [H, D_r]``).
    h: float [..., H] hidden states at [DOC].

  Returns:
    float [..., D_r] unit document embeddings.
  """
  h = _check_proj(heads, "p_d", h, "h")
  return _embed(heads["p_d"], h)


def control_logits(control: dict[str, jax.Array], z: jax.Array) -> jax.Array:
  """ℓ = w_2ᵀ relu(W_1ᵀ LN(z) + b_1) + b_2; the stop probability is s = σ(ℓ).

  Args:
    control: the control MLP of :func:`init_control_head`.
    z: float [..., H] hidden states at [PRED].

  Returns:
    float [...] stop logits.
  """
  z = _check_proj(control, "w1", z, "z")
  x = jax.nn.relu(standardise(z) @ control["w1"] + control["b1"])
  return x @ control["w2"] + control["b2"]
