r"""ALM-style chunk likelihood matching over MCC blocks (a baseline;
reconstruction).

Approximate Likelihood Matching (ALM, Minixhofer et al., NeurIPS 2025) compares
teacher and student on *chunks* of text where both tokenizations share
boundaries. Here the chunks are the MCC blocks of :mod:`._mcc`. For block
:math:`k` with teacher tokens :math:`I_k` and student tokens :math:`J_k`, the
chunk log-likelihoods are the sums of the realised tokens' log-probabilities
(the chunk likelihood is the product of token probabilities):

.. math::
   \ell^T_k = \sum_{i \in I_k} \log p_T(t_i \mid t_{<i}), \qquad
   \ell^S_k = \sum_{j \in J_k} \log p_S(s_j \mid s_{<j}).

Both condition on the same text prefix (the block starts at a common cut), so
:math:`e^{\ell^T_k}` and :math:`e^{\ell^S_k}` are two models' probabilities of
the same event (the block's text follows the prefix, under each model's own
segmentation). The loss is the binarised KL between the Bernoulli distributions
of that event:

.. math::
   L_{ALM} = \frac{1}{|\mathcal K|} \sum_k
     a_k (\ell^T_k - \ell^S_k) + (1 - a_k)
     \big(\log(1 - e^{\ell^T_k}) - \log(1 - e^{\ell^S_k})\big), \quad a_k = e^{\ell^T_k}.

What is reconstructed (the spec restates ALM in one line, §3.6): the direction
KL(teacher ‖ student); no temperature on either side (ALM's tokenkit has one and
several f-divergences); the chunks are the MCC blocks rather than ALM's own
chunking with its constraints; only the realised tokens enter (ALM also sums
over alternative segmentations in some variants, not here); and the clip of both
chunk log-likelihoods to at most ``-clip`` so that :math:`\log(1 - e^\ell)`
stays finite when a chunk has probability 1 in float32 (the clipped side gets no
gradient there).

With identical tokenizers every token is its own block, so the loss reduces to
per-token likelihood matching: the binarised KL between :math:`p_T(x_i)` and
:math:`p_S(x_i)` of each realised token (tested).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

__all__ = ["chunk_logliks", "binary_kl_from_logp", "alm_chunk_loss"]


def chunk_logliks(
  tok_logp: ArrayLike, tok_block: ArrayLike, n_blocks: int
) -> jax.Array:
  """Per-block sums of token log-probabilities: ``out[..., k] = sum_{p: block[p] = k} logp[p]``.

  Args:
    tok_logp: float [..., T], log-probability of the token at each position.
    tok_block: int [..., T], the MCC block of that token; ``-1`` for positions
      that belong to no block (padding, BOS); values must lie in ``[-1,
      n_blocks)``.
    n_blocks: K, the static number of block slots.

  Returns:
    float32 [..., K] (0 for blocks with no token).

  Under jit: a block index outside ``[-1, n_blocks)`` makes the result NaN
  (eagerly: ValueError).
  """
  tok_logp = V.check_array(tok_logp, "tok_logp", dtype="float", nonempty=True)
  tok_block = V.check_array(
    tok_block, "tok_block", dtype="int", shape=tok_logp.shape
  )
  n_blocks = V.check_int(n_blocks, "n_blocks", min_value=1)
  ok = V.debug_check_values(
    (tok_block >= -1) & (tok_block < n_blocks),
    f"tok_block must hold block indices in [-1, {n_blocks}) (-1: no block)",
  )
  # [..., T, K]; -1 matches nothing
  onehot = tok_block[..., :, None] == jnp.arange(n_blocks)
  out = jnp.einsum(
    "...t,...tk->...k", tok_logp.astype(jnp.float32), onehot.astype(jnp.float32)
  )
  return V.poison_floats(out, ok)


def _log1mexp(x):
  """``log(1 - exp(x))`` for ``x < 0`` (Maechler's two-branch form)."""
  small = x > -math.log(2.0)
  # keep the unused branch finite (no NaN gradients)
  a = jnp.where(small, x, -1.0)
  b = jnp.where(small, -1.0, x)
  return jnp.where(small, jnp.log(-jnp.expm1(a)), jnp.log1p(-jnp.exp(b)))


def binary_kl_from_logp(
  l_t: ArrayLike, l_s: ArrayLike, *, clip: float = 1e-6
) -> jax.Array:
  r"""``KL(Bernoulli(e^{l_t}) || Bernoulli(e^{l_s}))`` from log-probabilities
  (elementwise).

  Both are first clipped to at most ``-clip`` (float32 cannot represent
  :math:`1 - e^\ell` for :math:`\ell` closer to 0).

  Args:
    l_t: float [...] teacher log-probabilities (<= 0).
    l_s: float [...] student log-probabilities, the shape of ``l_t``.
    clip: > 0.

  Returns:
    float32 [...], the elementwise KL (>= 0).
  """
  l_t = V.check_array(l_t, "l_t", dtype="float")
  l_s = V.check_array(l_s, "l_s", dtype="float", shape=l_t.shape)
  clip = V.check_float(clip, "clip", min_value=0.0, min_inclusive=False)
  l_t = jnp.minimum(l_t.astype(jnp.float32), -clip)
  l_s = jnp.minimum(l_s.astype(jnp.float32), -clip)
  a = jnp.exp(l_t)
  return a * (l_t - l_s) + (1.0 - a) * (_log1mexp(l_t) - _log1mexp(l_s))


def alm_chunk_loss(
  t_tok_logp: ArrayLike,
  t_block: ArrayLike,
  s_tok_logp: ArrayLike,
  s_block: ArrayLike,
  *,
  n_blocks: int,
  mask: ArrayLike | None = None,
  clip: float = 1e-6,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  r"""ALM-style chunk loss: binarised KL of teacher vs student chunk likelihoods
  per MCC block.

  Args:
    t_tok_logp: float [..., T_t], the teacher's log-probability of each realised
      teacher token (e.g. ``TeacherCache.tok_logp``; constant, no gradient).
    t_block: int [..., T_t], the block of each teacher position (``-1``: none).
    s_tok_logp: float [..., T_s], the student's (differentiated).
    s_block: int [..., T_s], the block of each student position.
    n_blocks: K, the static number of block slots.
    mask: optional bool [..., K], the blocks to average over (default every
      block that holds tokens on both sides).
    clip: both chunk log-likelihoods are clipped to at most ``-clip`` (> 0).

  Returns:
    ``(loss, aux)``: the mean over the masked blocks, and ``{'l_t': [..., K],
    'l_s': [..., K], 'per_block': [..., K]}``.

  Under jit: a block index outside ``[-1, n_blocks)`` makes every output NaN
  (eagerly: ValueError).
  """
  t_tok_logp = V.check_array(
    t_tok_logp, "t_tok_logp", dtype="float", nonempty=True
  )
  s_tok_logp = V.check_array(
    s_tok_logp, "s_tok_logp", dtype="float", nonempty=True
  )
  if t_tok_logp.shape[:-1] != s_tok_logp.shape[:-1]:
    raise ValueError(
      "s_tok_logp must have the leading axes of t_tok_logp "
      f"{t_tok_logp.shape[:-1]} + (T_s,), got {s_tok_logp.shape}"
    )
  clip = V.check_float(clip, "clip", min_value=0.0, min_inclusive=False)
  n_blocks = V.check_int(n_blocks, "n_blocks", min_value=1)
  t_block = V.check_array(
    t_block, "t_block", dtype="int", shape=t_tok_logp.shape
  )
  s_block = V.check_array(
    s_block, "s_block", dtype="int", shape=s_tok_logp.shape
  )
  ok = V.all_flags(
    V.debug_check_values(
      (t_block >= -1) & (t_block < n_blocks),
      f"t_block must hold indices in [-1, {n_blocks})",
    ),
    V.debug_check_values(
      (s_block >= -1) & (s_block < n_blocks),
      f"s_block must hold indices in [-1, {n_blocks})",
    ),
  )
  l_t = chunk_logliks(jax.lax.stop_gradient(t_tok_logp), t_block, n_blocks)
  l_s = chunk_logliks(s_tok_logp, s_block, n_blocks)
  ar = jnp.arange(n_blocks)
  has_t = jnp.any(t_block[..., :, None] == ar, -2)
  has_s = jnp.any(s_block[..., :, None] == ar, -2)
  if mask is None:
    m = has_t & has_s
  else:
    m = V.check_array(mask, "mask", dtype="intbool", shape=l_t.shape).astype(
      bool
    )
  per = jnp.where(m, binary_kl_from_logp(l_t, l_s, clip=clip), 0.0)
  mf = m.astype(jnp.float32)
  loss = per.sum() / jnp.maximum(mf.sum(), 1.0)
  return V.poison_floats((loss, {"l_t": l_t, "l_s": l_s, "per_block": per}), ok)
