"""Cross-vocabulary correspondence cost estimated from calibration text
(reconstruction).

Counts over calibration blocks (spec §3.2): for every MCC block ``k`` with first
teacher token ``t_k`` and first student token ``s_k``,

  N_h[t_k, s_k] += 1,    N_s[t', s_k] += p_T(t' | prefix) for t' in the teacher's top-K_c,

``N = N_h + beta N_s``. Smoothed conditionals with unigram priors ``pi``:

  P(s | t) = (N[t, s] + alpha pi_S(s)) / (N[t, .] + alpha),
  P(t | s) = (N[t, s] + alpha pi_T(t)) / (N[., s] + alpha),

and the bidirectional cost ``C(t, s) = min(C_max, -(log P(s|t) + log P(t|s))
/ 2) / C_max`` in [0, 1] on observed pairs. Unobserved pairs get the lexical
prior ``C_lex(t, s) = 1 - 2 LCP(str t, str s) / (|str t| + |str s|)`` (1 when
both strings are empty). Each id keeps its ``R`` lowest-cost partners (neighbour
tables); any other pair is priced lexically by :func:`pair_cost`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.sola._tokenize import encode_strings

__all__ = [
  "CorrespondenceTable",
  "estimate_correspondence",
  "lexical_table",
  "lexical_cost",
  "pair_cost",
]


class CorrespondenceTable(NamedTuple):
  """Neighbour tables of the cross-vocabulary cost (a pytree of arrays).

  Attributes:
    nbr_t2s: int32 [V_T, R], the R lowest-cost student ids of each teacher id.
    cost_t2s: float32 [V_T, R], their costs in [0, 1].
    nbr_s2t: int32 [V_S, R], the R lowest-cost teacher ids of each student id.
    cost_s2t: float32 [V_S, R], their costs.
    chars_t: int32 [V_T, L] code points of the teacher strings (-1 pad).
    len_t: int32 [V_T] their lengths.
    chars_s: int32 [V_S, L] code points of the student strings.
    len_s: int32 [V_S] their lengths.
  """

  nbr_t2s: jax.Array
  cost_t2s: jax.Array
  nbr_s2t: jax.Array
  cost_s2t: jax.Array
  chars_t: jax.Array
  len_t: jax.Array
  chars_s: jax.Array
  len_s: jax.Array


def lexical_cost(
  chars_a: ArrayLike, len_a: ArrayLike, chars_b: ArrayLike, len_b: ArrayLike
) -> jax.Array:
  """``1 - 2 LCP / (|a| + |b|)`` between padded code-point strings, broadcast
  over leading axes.

  Args:
    chars_a: int [..., L] code points (-1 pad).
    len_a: int [...] string lengths of ``chars_a``.
    chars_b: int [..., L] code points of the other strings.
    len_b: int [...] their lengths.

  Returns:
    float32 [...] in [0, 1]; 1 when both strings are empty.
  """
  chars_a = V.check_array(chars_a, "chars_a", dtype="int", nonempty=True)
  chars_b = V.check_array(chars_b, "chars_b", dtype="int", nonempty=True)
  if chars_a.shape[-1] != chars_b.shape[-1]:
    raise ValueError(
      "chars_a and chars_b must share the padded length L, "
      f"got {chars_a.shape} and {chars_b.shape}"
    )
  eq = (chars_a == chars_b) & (chars_a >= 0)
  lcp = jnp.cumprod(eq.astype(jnp.int32), axis=-1).sum(-1)
  tot = (jnp.asarray(len_a) + jnp.asarray(len_b)).astype(jnp.float32)
  return jnp.where(tot > 0, 1.0 - 2.0 * lcp / jnp.maximum(tot, 1.0), 1.0)


def _topr_smallest(c, r):
  neg, idx = jax.lax.top_k(-c, r)
  return idx.astype(jnp.int32), -neg


@jax.jit
def _chunk_cost(
  n_chunk, row_sum, col_sum, pi_t_chunk, pi_s, ct, lt, cs, ls, params
):
  alpha, c_max = params[0], params[1]
  p_s_t = (n_chunk + alpha * pi_s[None, :]) / (row_sum[:, None] + alpha)
  p_t_s = (n_chunk + alpha * pi_t_chunk[:, None]) / (col_sum[None, :] + alpha)
  c_cnt = jnp.minimum(c_max, -0.5 * (jnp.log(p_s_t) + jnp.log(p_t_s))) / c_max
  c_lex = lexical_cost(ct[:, None, :], lt[:, None], cs[None, :, :], ls[None, :])
  return jnp.where(n_chunk > 0, c_cnt, c_lex)


def estimate_correspondence(
  t_first: ArrayLike,
  s_first: ArrayLike,
  t_top_ids: ArrayLike,
  t_top_logp: ArrayLike,
  *,
  t_strings: Sequence[str],
  s_strings: Sequence[str],
  t_unigram: ArrayLike | None = None,
  s_unigram: ArrayLike | None = None,
  alpha: float = 1.0,
  beta: float = 1.0,
  r: int = 8,
  c_max: float = 10.0,
  use_counts: bool = True,
  soft_counts: bool = True,
  max_chars: int = 16,
  chunk: int = 2048,
) -> CorrespondenceTable:
  """Neighbour tables of the calibrated cross-vocabulary cost (host driver,
  jitted chunks).

  Args:
    t_first: int [P], the first teacher token of each calibration block.
    s_first: int [P], the first student token of each block.
    t_top_ids: int [P, K_c], the teacher's top-K_c ids at the block's aligned
      position.
    t_top_logp: float [P, K_c], their log-probabilities.
    t_strings: the V_T teacher token strings (:func:`token_strings`).
    s_strings: the V_S student token strings.
    t_unigram: optional float [V_T] teacher unigram frequencies (default: from
      ``t_first`` with add-one smoothing).
    s_unigram: optional float [V_S] student unigram frequencies (default: from
      ``s_first``).
    alpha: smoothing strength (> 0).
    beta: weight of the soft counts (>= 0).
    r: neighbours per id (1 <= r <= min(V_T, V_S)).
    c_max: cost cap in nats (> 0).
    use_counts: False gives the lexical-cost-only table (an ablation).
    soft_counts: False keeps only the hard counts (an ablation).
    max_chars: characters kept per string for the lexical cost.
    chunk: teacher rows per jitted chunk.

  Returns:
    A :class:`CorrespondenceTable` (device arrays).
  """
  v_t, v_s = len(t_strings), len(s_strings)
  r = V.check_int(r, "r", min_value=1, max_value=min(v_t, v_s))
  alpha = V.check_float(alpha, "alpha", min_value=0.0, min_inclusive=False)
  beta = V.check_float(beta, "beta", min_value=0.0)
  c_max = V.check_float(c_max, "c_max", min_value=0.0, min_inclusive=False)
  t_first = np.asarray(t_first)
  s_first = np.asarray(s_first)
  t_top_ids = np.asarray(t_top_ids)
  t_top_logp = np.asarray(t_top_logp, np.float64)
  if t_first.ndim != 1 or s_first.shape != t_first.shape:
    raise ValueError(
      "t_first and s_first must be int [P] of one length, "
      f"got {t_first.shape}, {s_first.shape}"
    )
  if t_top_ids.ndim != 2 or t_top_ids.shape[0] != t_first.shape[0]:
    raise ValueError(
      f"t_top_ids must have shape [P={t_first.shape[0]}, K_c], "
      f"got {t_top_ids.shape}"
    )
  if t_top_logp.shape != t_top_ids.shape:
    raise ValueError(
      f"t_top_logp must have the shape of t_top_ids, got {t_top_logp.shape}"
    )
  for name, x, v in (
    ("t_first", t_first, v_t),
    ("s_first", s_first, v_s),
    ("t_top_ids", t_top_ids, v_t),
  ):
    if x.size and (x.min() < 0 or x.max() >= v):
      raise ValueError(
        f"{name} must hold ids in [0, {v}), got range [{x.min()}, {x.max()}]"
      )
  # sparse counts N (COO, summed by key)
  keys = [t_first.astype(np.int64) * v_s + s_first]
  vals = [np.ones(len(t_first))]
  if soft_counts and beta > 0:
    keys.append((t_top_ids.astype(np.int64) * v_s + s_first[:, None]).ravel())
    vals.append(beta * np.exp(t_top_logp).ravel())
  if not use_counts:
    keys, vals = [np.zeros(0, np.int64)], [np.zeros(0)]
  uk, inv = np.unique(np.concatenate(keys), return_inverse=True)
  uv = np.bincount(inv, weights=np.concatenate(vals), minlength=len(uk))
  rows, cols = uk // v_s, uk % v_s
  row_sum = np.bincount(rows, weights=uv, minlength=v_t)
  col_sum = np.bincount(cols, weights=uv, minlength=v_s)
  pi_t = (
    (np.bincount(t_first, minlength=v_t) + 1.0)
    if t_unigram is None
    else np.asarray(t_unigram)
  )
  pi_s = (
    (np.bincount(s_first, minlength=v_s) + 1.0)
    if s_unigram is None
    else np.asarray(s_unigram)
  )
  pi_t, pi_s = pi_t / pi_t.sum(), pi_s / pi_s.sum()
  ct, lt = encode_strings(t_strings, max_chars=max_chars)
  cs, ls = encode_strings(s_strings, max_chars=max_chars)
  params = jnp.asarray([alpha, c_max], jnp.float32)
  nbr_t2s = np.zeros((v_t, r), np.int32)
  cost_t2s = np.zeros((v_t, r), np.float32)
  # running top-r per student column
  best_c = np.full((r, v_s), np.inf, np.float32)
  best_i = np.zeros((r, v_s), np.int32)
  jcs, jls, jpis = (
    jnp.asarray(cs),
    jnp.asarray(ls),
    jnp.asarray(pi_s, jnp.float32),
  )
  jcol = jnp.asarray(col_sum, jnp.float32)
  for r0 in range(0, v_t, chunk):
    r1 = min(v_t, r0 + chunk)
    pad = chunk - (r1 - r0)
    dense = np.zeros((chunk, v_s), np.float32)
    sel = (rows >= r0) & (rows < r1)
    np.add.at(dense, (rows[sel] - r0, cols[sel]), uv[sel])
    padr = lambda x, fill=0: np.concatenate(
      [x[r0:r1], np.full((pad,) + x.shape[1:], fill, x.dtype)]
    )
    c = _chunk_cost(
      jnp.asarray(dense),
      jnp.asarray(padr(row_sum), jnp.float32),
      jcol,
      jnp.asarray(padr(pi_t), jnp.float32),
      jpis,
      jnp.asarray(padr(ct, -1)),
      jnp.asarray(padr(lt)),
      jcs,
      jls,
      params,
    )
    c = c.at[r1 - r0 :].set(jnp.inf)
    i, cc = _topr_smallest(c, r)
    nbr_t2s[r0:r1], cost_t2s[r0:r1] = (
      np.asarray(i[: r1 - r0]),
      np.asarray(cc[: r1 - r0]),
    )
    ic, ccc = _topr_smallest(c.T, r)  # [V_S, r] within the chunk
    cand_c = np.concatenate([best_c, np.asarray(ccc).T], 0)
    cand_i = np.concatenate([best_i, np.asarray(ic).T + r0], 0)
    order = np.argsort(cand_c, axis=0, kind="stable")[:r]
    best_c = np.take_along_axis(cand_c, order, 0)
    best_i = np.take_along_axis(cand_i, order, 0)
  return CorrespondenceTable(
    nbr_t2s=jnp.asarray(nbr_t2s),
    cost_t2s=jnp.asarray(cost_t2s),
    nbr_s2t=jnp.asarray(best_i.T.copy()),
    cost_s2t=jnp.asarray(best_c.T.copy()),
    chars_t=jnp.asarray(ct),
    len_t=jnp.asarray(lt),
    chars_s=jnp.asarray(cs),
    len_s=jnp.asarray(ls),
  )


def lexical_table(
  t_strings: Sequence[str],
  s_strings: Sequence[str],
  *,
  r: int = 8,
  max_chars: int = 16,
) -> CorrespondenceTable:
  """The lexical-cost-only table (no calibration counts): the "lexical cost"
  ablation.

  Args:
    t_strings: the V_T teacher token strings.
    s_strings: the V_S student token strings.
    r: neighbours per id.
    max_chars: characters kept per string.

  Returns:
    A :class:`CorrespondenceTable` whose costs are all lexical.
  """
  return estimate_correspondence(
    np.zeros(1, np.int64),
    np.zeros(1, np.int64),
    np.zeros((1, 1), np.int64),
    np.zeros((1, 1)),
    t_strings=t_strings,
    s_strings=s_strings,
    r=r,
    use_counts=False,
    max_chars=max_chars,
  )


def pair_cost(
  table: CorrespondenceTable, t_ids: ArrayLike, s_ids: ArrayLike
) -> jax.Array:
  """Cost of (teacher id, student id) pairs, broadcast: neighbour tables first,
  else lexical.

  Args:
    table: a :class:`CorrespondenceTable`.
    t_ids: int [...] teacher ids.
    s_ids: int [...] student ids (broadcastable with ``t_ids``).

  Returns:
    float32 [...] in [0, 1].
  """
  t_ids = V.check_array(t_ids, "t_ids", dtype="int")
  s_ids = V.check_array(s_ids, "s_ids", dtype="int")
  t_ids, s_ids = jnp.broadcast_arrays(t_ids, s_ids)
  hit_ts = table.nbr_t2s[t_ids] == s_ids[..., None]  # [..., R]
  hit_st = table.nbr_s2t[s_ids] == t_ids[..., None]
  c_ts = jnp.min(jnp.where(hit_ts, table.cost_t2s[t_ids], jnp.inf), -1)
  c_st = jnp.min(jnp.where(hit_st, table.cost_s2t[s_ids], jnp.inf), -1)
  c_lex = lexical_cost(
    table.chars_t[t_ids],
    table.len_t[t_ids],
    table.chars_s[s_ids],
    table.len_s[s_ids],
  )
  c = jnp.minimum(c_ts, c_st)
  return jnp.where(jnp.isfinite(c), c, c_lex)
