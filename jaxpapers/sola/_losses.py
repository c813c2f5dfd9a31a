"""The SOLA loss on a bidirectional local support, and the ULD / MinED-style
baselines.

All losses act on *aligned prediction pairs* (one per MCC block, see
:mod:`._mcc`): the teacher's cached top-K_c log-probabilities at its aligned
position and the student's logits at its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.sola._cost import CorrespondenceTable, pair_cost
from jaxpapers.sola._ot import entropic_ot_cost, pad_with_dummy_bucket
from jaxpapers.sola._tokenize import encode_strings

__all__ = [
  "SUPPORTS",
  "Support",
  "local_support",
  "sola_loss",
  "uld_loss",
  "mined_map",
  "mined_kl_loss",
]

SUPPORTS = ("bidirectional", "teacher_side", "none")
_BIG = np.iinfo(np.int32).max


class Support(NamedTuple):
  """The local support of each aligned pair (leading axes ``[...]``;
  ``M = k + k R + 1``).

  Attributes:
    ids_t: int32 [..., M] teacher ids (sorted, de-duplicated; 0 where masked).
    mask_t: bool [..., M].
    ids_s: int32 [..., M] student ids.
    mask_s: bool [..., M].
    p: float32 [..., M] teacher probabilities on the support (0 where masked,
      not renormalised).
    q: float32 [..., M] student probabilities (differentiable).
    cost: float32 [..., M, M] the cost submatrix ``C(ids_t[a], ids_s[b])``.
    coverage: float32 [...], ``p_T(U_T) * p_S(U_S)``.
  """

  ids_t: jax.Array
  mask_t: jax.Array
  ids_s: jax.Array
  mask_s: jax.Array
  p: jax.Array
  q: jax.Array
  cost: jax.Array
  coverage: jax.Array


def _dedup(ids, valid):
  x = jnp.sort(jnp.where(valid, ids, _BIG), axis=-1)
  dup = jnp.concatenate(
    [jnp.zeros_like(x[..., :1], bool), x[..., 1:] == x[..., :-1]], -1
  )
  keep = (x != _BIG) & ~dup
  return jnp.where(keep, x, 0).astype(jnp.int32), keep


def _check_pairs(t_ids, t_logp, s_logits, k):
  t_ids = V.check_array(
    t_ids, "t_ids", dtype="int", ndim=range(2, 6), nonempty=True
  )
  t_logp = V.check_array(t_logp, "t_logp", dtype="float", shape=t_ids.shape)
  s_logits = V.check_array(s_logits, "s_logits", dtype="float")
  if s_logits.shape[:-1] != t_ids.shape[:-1]:
    raise ValueError(
      f"s_logits must have shape {t_ids.shape[:-1]} + (V_S,) (the leading "
      f"axes of t_ids), got {s_logits.shape}"
    )
  k = V.check_int(
    k, "k", min_value=1, max_value=min(t_ids.shape[-1], s_logits.shape[-1])
  )
  return t_ids, t_logp, s_logits, k


def local_support(
  t_ids: ArrayLike,
  t_logp: ArrayLike,
  s_logits: ArrayLike,
  table: CorrespondenceTable,
  *,
  k: int = 8,
  support: str = "bidirectional",
) -> Support:
  """The bidirectional local support around each teacher prediction
  (reconstruction, §3.3).

  ``U_T = dedup(K_T ∪ nbr_s2t[K_S])`` restricted to ids in the teacher cache,
  and ``U_S = dedup(K_S ∪ nbr_t2s[K_T])``, where ``K_T`` are the teacher's
  top-``k`` ids and ``K_S`` the student's (chosen under stop-gradient).
  ``support='teacher_side'`` keeps ``U_T = K_T`` (unidirectional ablation);
  ``'none'`` uses ``K_T x K_S`` only.

  Args:
    t_ids: int [..., K_c] cached teacher ids.
    t_logp: float [..., K_c] their log-probabilities.
    s_logits: float [..., V_S] student logits at the aligned positions.
    table: the :class:`CorrespondenceTable`.
    k: top-k per side (1 <= k <= K_c).
    support: one of ``SUPPORTS``.

  Returns:
    A :class:`Support` with static size ``M = k + k R + 1`` (one slot always padded).
  """
  t_ids, t_logp, s_logits, k = _check_pairs(t_ids, t_logp, s_logits, k)
  if support not in SUPPORTS:
    raise ValueError(
      f"support must be one of {list(SUPPORTS)}, got {support!r}"
    )
  r = table.nbr_t2s.shape[-1]
  m = k + k * r + 1
  lead = t_ids.shape[:-1]
  s_logp = jax.nn.log_softmax(s_logits.astype(jnp.float32), axis=-1)
  _, k_t_idx = jax.lax.top_k(t_logp, k)
  k_t = jnp.take_along_axis(t_ids, k_t_idx, -1)  # [..., k]
  _, k_s = jax.lax.top_k(jax.lax.stop_gradient(s_logp), k)
  none_t = jnp.zeros(lead + (k * r,), jnp.int32)
  if support == "bidirectional":
    cand_t = jnp.concatenate(
      [k_t, table.nbr_s2t[k_s].reshape(lead + (k * r,))], -1
    )
    ok_t = jnp.ones(cand_t.shape, bool)
  else:
    cand_t = jnp.concatenate([k_t, none_t], -1)
    ok_t = jnp.arange(k + k * r) < k
  if support == "none":
    cand_s = jnp.concatenate([k_s, none_t], -1)
    ok_s = jnp.broadcast_to(jnp.arange(k + k * r) < k, cand_s.shape)
  else:
    cand_s = jnp.concatenate(
      [k_s, table.nbr_t2s[k_t].reshape(lead + (k * r,))], -1
    )
    ok_s = jnp.ones(cand_s.shape, bool)
  pad = jnp.zeros(lead + (1,), jnp.int32)
  cand_t = jnp.concatenate([cand_t.astype(jnp.int32), pad], -1)
  cand_s = jnp.concatenate([cand_s.astype(jnp.int32), pad], -1)
  ok_t = jnp.concatenate(
    [jnp.broadcast_to(ok_t, lead + (m - 1,)), pad.astype(bool)], -1
  )
  ok_s = jnp.concatenate(
    [jnp.broadcast_to(ok_s, lead + (m - 1,)), pad.astype(bool)], -1
  )
  in_cache = jnp.any(cand_t[..., :, None] == t_ids[..., None, :], -1)
  ids_t, mask_t = _dedup(cand_t, ok_t & in_cache)
  ids_s, mask_s = _dedup(cand_s, ok_s)
  match = ids_t[..., :, None] == t_ids[..., None, :]  # [..., M, K_c]
  lp_t = jnp.max(jnp.where(match, t_logp[..., None, :], -jnp.inf), -1)
  p = jnp.where(mask_t, jnp.exp(lp_t), 0.0).astype(jnp.float32)
  q = jnp.where(mask_s, jnp.exp(jnp.take_along_axis(s_logp, ids_s, -1)), 0.0)
  cost = pair_cost(table, ids_t[..., :, None], ids_s[..., None, :])
  coverage = p.sum(-1) * jax.lax.stop_gradient(q.sum(-1))
  return Support(ids_t, mask_t, ids_s, mask_s, p, q, cost, coverage)


def _reduce(per, mask):
  if mask is None:
    return per.mean()
  mask = V.check_array(mask, "mask", shape=per.shape, dtype="intbool").astype(
    per.dtype
  )
  return (per * mask).sum() / jnp.maximum(mask.sum(), 1.0)


def sola_loss(
  t_ids: ArrayLike,
  t_logp: ArrayLike,
  s_logits: ArrayLike,
  table: CorrespondenceTable,
  *,
  mask: ArrayLike | None = None,
  k: int = 8,
  epsilon: float = 0.05,
  iters: int = 30,
  delta: float = 1e-6,
  unroll: bool = True,
  support: str = "bidirectional",
  coverage_weighted: bool = False,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  r"""SOLA: entropic OT between teacher and student on the local support
  (reconstruction).

  :math:`L = \frac{1}{|\mathcal K|}\sum_k \langle C_k, P_\varepsilon(\tilde p_k,
  \tilde q_k)\rangle` with ``p~``, ``q~`` the teacher and student probabilities
  renormalised on ``U_T``, ``U_S`` (padded with the dummy bucket of mass
  ``delta``), ``C_k`` the calibrated cost submatrix and ``P_eps`` ott-jax's
  Sinkhorn plan. It is 0 when both sides put the same mass on the same ids under
  a zero-cost diagonal. Gradients reach the student logits only.

  Args:
    t_ids: int [..., K_c], the cached teacher ids at the aligned positions.
    t_logp: float [..., K_c], their log-probabilities.
    s_logits: float [..., V_S], the student's logits at its aligned positions.
    table: the :class:`CorrespondenceTable`.
    mask: optional bool [...] of aligned pairs to average over.
    k: top-k per side.
    epsilon: entropic regularisation (cost in [0, 1]).
    iters: Sinkhorn iterations.
    delta: dummy-bucket mass.
    unroll: differentiate by unrolling the iterations (see
      :func:`entropic_ot_cost`).
    support: one of ``SUPPORTS`` (the ablations).
    coverage_weighted: weight each pair by its coverage (ablation).

  Returns:
    ``(loss, aux)``: the scalar loss and ``{'coverage': mean coverage,
    'per_pair': [...]}``.

  Example:
    al = align_texts(texts, teacher_tok, student_tok, max_len=128)
    cache = cache_teacher(teacher_logits_fn, al.t_tokens, al.t_len, top_k=64)
    t_ids, t_logp = gather_cache(cache, al.blk_t_pos)  # [N, K, K_c] each
    v = al.blk_valid
    table = estimate_correspondence(al.blk_t_id[v], al.blk_s_id[v], t_ids[v], t_logp[v],
                                    t_strings=token_strings(teacher_tok),
                                    s_strings=token_strings(student_tok))
    logits = student_logits(params, al.s_tokens, cfg)  # [N, T_s, V_S]
    s_logits = jnp.take_along_axis(logits, al.blk_s_pos[..., None], 1)  # [N, K, V_S]
    loss, aux = sola_loss(t_ids, t_logp, s_logits, table, mask=v)
  """
  sup = local_support(t_ids, t_logp, s_logits, table, k=k, support=support)
  a, b, c = pad_with_dummy_bucket(
    sup.p, sup.mask_t, sup.q, sup.mask_s, sup.cost, delta=delta
  )
  per = entropic_ot_cost(a, b, c, epsilon=epsilon, iters=iters, unroll=unroll)
  if coverage_weighted:
    per = per * jax.lax.stop_gradient(sup.coverage)
  cov = _reduce(sup.coverage, mask)
  return _reduce(per, mask), {"coverage": cov, "per_pair": per}


def uld_loss(
  t_logp: ArrayLike,
  s_logits: ArrayLike,
  *,
  mask: ArrayLike | None = None,
  k: int | None = None,
) -> jax.Array:
  r"""Universal Logit Distillation (Boizard et al.):
  :math:`\sum_i |p^\downarrow_{T,i} - p^\downarrow_{S,i}|`.

  Sorted (descending) teacher and student probabilities over the top-``k`` of
  each side, zero-padded to a common length: a Wasserstein-1 between the sorted
  vectors, no token identity.

  Args:
    t_logp: float [..., K_c] cached teacher log-probabilities.
    s_logits: float [..., V_S] student logits.
    mask: optional bool [...].
    k: student entries kept (default K_c).

  Returns:
    The scalar loss.
  """
  t_logp = V.check_array(t_logp, "t_logp", dtype="float", nonempty=True)
  s_logits = V.check_array(s_logits, "s_logits", dtype="float")
  if s_logits.shape[:-1] != t_logp.shape[:-1]:
    raise ValueError(
      f"s_logits must have shape {t_logp.shape[:-1]} + (V_S,), "
      f"got {s_logits.shape}"
    )
  kc = t_logp.shape[-1]
  k = (
    kc
    if k is None
    else V.check_int(k, "k", min_value=1, max_value=s_logits.shape[-1])
  )
  k = min(k, s_logits.shape[-1])
  p_t = -jnp.sort(-jnp.exp(t_logp.astype(jnp.float32)), -1)
  p_s, _ = jax.lax.top_k(jax.nn.softmax(s_logits.astype(jnp.float32), -1), k)
  n = max(kc, k)
  p_t = jnp.pad(p_t, [(0, 0)] * (p_t.ndim - 1) + [(0, n - kc)])
  p_s = jnp.pad(p_s, [(0, 0)] * (p_s.ndim - 1) + [(0, n - k)])
  return _reduce(jnp.abs(p_t - p_s).sum(-1), mask)


def _levenshtein(a, la, b, lb):
  """Edit distances between every row of ``a`` [n, L] and of ``b`` [m, L] (numpy
  DP)."""
  n, L = a.shape
  m = b.shape[0]
  prev = np.broadcast_to(np.arange(L + 1, dtype=np.int32), (n, m, L + 1)).copy()
  out = np.where(la[:, None] == 0, lb[None, :], 0).astype(np.int32)
  for i in range(1, L + 1):
    cur = np.empty_like(prev)
    cur[..., 0] = i
    sub = a[:, None, i - 1, None] != b[None, :, :]  # [n, m, L]
    for j in range(1, L + 1):
      cur[..., j] = np.minimum(
        np.minimum(prev[..., j] + 1, cur[..., j - 1] + 1),
        prev[..., j - 1] + sub[..., j - 1],
      )
    hit = la == i
    if hit.any():
      out[hit] = np.take_along_axis(cur[hit], lb[None, :, None], -1)[..., 0]
    prev = cur
  return out


def mined_map(
  t_strings: Sequence[str],
  s_strings: Sequence[str],
  *,
  max_chars: int = 12,
  chunk: int = 256,
) -> np.ndarray:
  """Each teacher string's closest student string by edit distance (MinED,
  FuseLLM/DSKD).

  Ties go to the student id with the lower |length difference|, then the lower id; strings
  are truncated to ``max_chars`` characters. Empty student strings are never chosen unless all
  are empty.

  Args:
    t_strings: the teacher strings to map (e.g. only the ids that occur in a
      cache).
    s_strings: the V_S student strings.
    max_chars: characters kept per string.
    chunk: teacher strings per edit-distance block (memory ``O(chunk · V_S ·
      max_chars)``).

  Returns:
    int32 [len(t_strings)] student ids.
  """
  if not len(s_strings):
    raise ValueError("s_strings must not be empty")
  a, la = encode_strings(t_strings, max_chars=max_chars)
  b, lb = encode_strings(s_strings, max_chars=max_chars)
  out = np.zeros(len(t_strings), np.int32)
  for c0 in range(0, len(t_strings), chunk):
    d = _levenshtein(a[c0 : c0 + chunk], la[c0 : c0 + chunk], b, lb).astype(
      np.int64
    )
    d = np.where(lb[None, :] == 0, 10**6, d)
    key = d * 1000 + np.abs(la[c0 : c0 + chunk, None] - lb[None, :])
    out[c0 : c0 + chunk] = np.argmin(key, axis=1)
  return out


def mined_kl_loss(
  mapped_ids: ArrayLike,
  t_logp: ArrayLike,
  s_logits: ArrayLike,
  *,
  mask: ArrayLike | None = None,
) -> jax.Array:
  r"""MinED-style KD: KL(mapped teacher ‖ student) on the teacher's top-K mapped
  to student ids.

  The teacher's top-K probabilities are renormalised, summed per mapped student
  id (:func:`mined_map`), and compared with the student's full-vocabulary
  distribution: :math:`\sum_s \hat p(s) (\log \hat p(s) - \log p_S(s))`.

  Args:
    mapped_ids: int [..., K] student ids of the teacher's top-K ids.
    t_logp: float [..., K] teacher log-probabilities of those ids.
    s_logits: float [..., V_S].
    mask: optional bool [...].

  Returns:
    The scalar loss.

  Under jit: an id outside [0, V_S) makes the result NaN (eagerly: ValueError).
  """
  mapped_ids = V.check_array(
    mapped_ids, "mapped_ids", dtype="int", nonempty=True
  )
  t_logp = V.check_array(
    t_logp, "t_logp", dtype="float", shape=mapped_ids.shape
  )
  s_logits = V.check_array(s_logits, "s_logits", dtype="float")
  if s_logits.shape[:-1] != mapped_ids.shape[:-1]:
    raise ValueError(
      f"s_logits must have shape {mapped_ids.shape[:-1]} + (V_S,), "
      f"got {s_logits.shape}"
    )
  v = s_logits.shape[-1]
  ok = V.debug_check_values(
    (mapped_ids >= 0) & (mapped_ids < v),
    f"mapped_ids must be student ids in [0, {v})",
  )
  ids = jnp.clip(mapped_ids, 0, v - 1)
  p = jax.nn.softmax(t_logp.astype(jnp.float32), -1)
  same = ids[..., :, None] == ids[..., None, :]
  agg = (same * p[..., None, :]).sum(-1)  # mass of each entry's mapped id
  kk = ids.shape[-1]
  first = ~jnp.any(
    same & (jnp.arange(kk)[:, None] > jnp.arange(kk)[None, :]), -1
  )
  s_logp = jnp.take_along_axis(
    jax.nn.log_softmax(s_logits.astype(jnp.float32), -1), ids, -1
  )
  per = jnp.where(
    first, agg * (jnp.log(jnp.maximum(agg, 1e-30)) - s_logp), 0.0
  ).sum(-1)
  return V.poison_floats(_reduce(per, mask), ok)
