"""Language-aware retrieval metrics over padded pools: ranks, LPR, Lang-nDCG,
the 4-way split.

Notation (one row per query ``q``; ``P`` candidate slots per pool, some masked
out):

* ``sem(d) = 1[content(d) = κ_q]``: the passage carries the query's content (any
  language);
* ``lm(d) = 1[lang(d) = ℓ_q]``: the passage is in the query's language;
* ``p*``: the relevant passage in the query language (``sem ∧ lm``); ``R(q)``:
  all relevant passages (``sem = 1``); ``rank(d)``: 1-based position in the
  descending-score order.

The paper (arXiv:2605.07249) names LPR, Lang-nDCG and a 4-way decomposition; the
exact formulas below are **reconstructions** from its abstract and protocol
outline (each function's docstring says what is reconstructed). Everything is
computed on padded ``[Q, P]`` arrays with a pool mask, jitted, with no Python
loop over queries; the per-query work is independent, so arrays sharded over the
query axis (``jax.make_mesh``) run sharded.

Bad input (policy in :mod:`jaxpapers.core.validation`): shapes, dtypes and
static arguments are checked at trace time. NaN scores on unmasked slots (a NaN
would rank silently) and query languages outside ``[0, n_langs)`` (for the
per-language breakdown) raise ``ValueError`` on concrete data; under ``jax.jit``
every float output becomes NaN and every count -1.
"""

from __future__ import annotations

import functools
from typing import Literal

import flax.struct
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

TIES = ("pessimistic", "index")
LPR_VARIANTS = ("strict", "pairwise", "topk")
GAINS = ("linear", "exp")
FOUR_WAY = ("S+L+", "S+L-", "S-L+", "S-L-")


@flax.struct.dataclass
class PoolBatch:
  """Scores and labels of ``Q`` queries over padded pools of ``P`` candidate
  passages.

  Attributes:
    scores: ``[Q, P]`` float retriever scores ``s(q, d)`` (higher ranks first);
      masked slots are ignored whatever their value.
    doc_lang: ``[Q, P]`` int language id of each candidate.
    doc_content: ``[Q, P]`` int content id of each candidate (parallel
      translations share it).
    mask: ``[Q, P]`` bool, True for real candidates, False for padding.
    q_lang: ``[Q]`` int language id of each query (``ℓ_q``).
    q_content: ``[Q]`` int content id each query asks for (``κ_q``).
  """

  scores: jax.Array
  doc_lang: jax.Array
  doc_content: jax.Array
  mask: jax.Array
  q_lang: jax.Array
  q_content: jax.Array


def pool_batch(
  scores: ArrayLike,
  doc_lang: ArrayLike,
  doc_content: ArrayLike,
  mask: ArrayLike,
  q_lang: ArrayLike,
  q_content: ArrayLike,
) -> PoolBatch:
  """A checked :class:`PoolBatch` (shapes and dtypes as in its attributes).

  Args:
    scores: ``[Q, P]`` float retriever scores.
    doc_lang: ``[Q, P]`` int language id of each candidate.
    doc_content: ``[Q, P]`` int content id of each candidate.
    mask: ``[Q, P]`` bool, True for real candidates.
    q_lang: ``[Q]`` int language id of each query.
    q_content: ``[Q]`` int content id each query asks for.

  Returns:
    The :class:`PoolBatch`.

  Raises:
    TypeError/ValueError: a field of the wrong dtype kind or shape.
  """
  return _check_fields(scores, doc_lang, doc_content, mask, q_lang, q_content)


def _check_float_array(x, name, **kw):
  """``check_array`` for a floating dtype, bfloat16 included."""
  x = V.check_array(x, name, **kw)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    raise TypeError(
      f"{name} must have a floating dtype (float32, bfloat16, ...), "
      f"got {x.dtype}"
    )
  return x


def _check_batch(b) -> PoolBatch:
  if not isinstance(b, PoolBatch):
    raise TypeError(f"b must be a PoolBatch, got {type(b).__name__}")
  return _check_fields(
    b.scores, b.doc_lang, b.doc_content, b.mask, b.q_lang, b.q_content
  )


def _check_fields(
  scores: ArrayLike,
  doc_lang: ArrayLike,
  doc_content: ArrayLike,
  mask: ArrayLike,
  q_lang: ArrayLike,
  q_content: ArrayLike,
) -> PoolBatch:
  """The checked :class:`PoolBatch` of these fields (errors name them
  ``b.<field>``)."""
  scores = _check_float_array(scores, "b.scores", ndim=2)
  q, p = scores.shape
  if q < 1 or p < 1:
    raise ValueError(
      f"b.scores must have at least one query and one candidate, got {(q, p)}"
    )
  doc_lang = V.check_array(doc_lang, "b.doc_lang", shape=(q, p), dtype="int")
  doc_content = V.check_array(
    doc_content, "b.doc_content", shape=(q, p), dtype=("int")
  )
  mask = V.check_array(mask, "b.mask", shape=(q, p), dtype="bool")
  q_lang = V.check_array(q_lang, "b.q_lang", shape=(q,), dtype="int")
  q_content = V.check_array(q_content, "b.q_content", shape=(q,), dtype="int")
  return PoolBatch(scores, doc_lang, doc_content, mask, q_lang, q_content)


def _check_ties(ties):
  if ties not in TIES:
    raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
  return ties


def _labels(b: PoolBatch):
  """``sem`` and ``lm`` indicators ``[Q, P]`` (False on masked slots)."""
  sem = (b.doc_content == b.q_content[:, None]) & b.mask
  lm = (b.doc_lang == b.q_lang[:, None]) & b.mask
  return sem, lm


def _ranks(b: PoolBatch, ties: str) -> jax.Array:
  """1-based ranks ``[Q, P]``; masked slots get ``P + 1``. One sort per row."""
  q, p = b.scores.shape
  sem, lm = _labels(b)
  masked_key = (~b.mask).astype(jnp.int32)  # real candidates first
  neg = jnp.where(b.mask, -b.scores.astype(jnp.float32), 0.0)
  # among equal scores: irrelevant, other-language relevant, then p*
  if ties == "pessimistic":
    tier = sem.astype(jnp.int32) * (1 + lm.astype(jnp.int32))
  else:
    tier = jnp.zeros((q, p), jnp.int32)
  idx = jnp.broadcast_to(jnp.arange(p, dtype=jnp.int32), (q, p))
  *_, order = jax.lax.sort(
    (masked_key, neg, tier, idx), dimension=1, num_keys=3, is_stable=True
  )
  pos = jnp.broadcast_to(jnp.arange(1, p + 1, dtype=jnp.int32), (q, p))
  r = jnp.zeros((q, p), jnp.int32).at[jnp.arange(q)[:, None], order].set(pos)
  return jnp.where(b.mask, r, p + 1)


def _score_ok(b: PoolBatch) -> jax.Array:
  return ~jnp.any(jnp.isnan(b.scores) & b.mask)


def _finish(out, *flags_and_messages):
  ok = True
  for flag, message in flags_and_messages:
    ok = ok & V.check_values(flag, message)
  return V.poison(out, ok)


_NAN_MSG = (
  "b.scores must not contain NaN on unmasked candidates (a NaN would rank "
  "silently)"
)


# ---------------------------------------------------------- per-query pieces --


def _per_query(
  b: PoolBatch, r: jax.Array, k: int, w_lang: float, w_other: float, gain: str
):
  """Every per-query quantity ``[Q]`` and its eligibility mask, from the ranks
  ``r``."""
  q, p = b.scores.shape
  sem, lm = _labels(b)
  big = p + 1
  f32 = jnp.float32
  star = sem & lm  # p* (query-language relevant)
  other = sem & ~lm  # other-language relevant
  r_star = jnp.min(jnp.where(star, r, big), axis=1)
  r_other = jnp.min(jnp.where(other, r, big), axis=1)
  n_other = other.sum(1)
  eligible = star.any(1) & other.any(1)
  out = {}
  out["lpr_strict"] = ((r_star < r_other).astype(f32), eligible)
  pair = (other & (r > r_star[:, None])).sum(1) / jnp.maximum(n_other, 1)
  out["lpr_pairwise"] = (pair.astype(f32), eligible)
  intop = r <= k
  n_rel_top = (sem & intop).sum(1)
  share = (sem & lm & intop).sum(1) / jnp.maximum(n_rel_top, 1)
  out["lpr_topk"] = (share.astype(f32), eligible & (n_rel_top > 0))
  # Lang-nDCG and semantic nDCG at k.
  disc = jnp.where(intop, 1.0 / jnp.log2(r.astype(f32) + 1.0), 0.0)  # [Q, P]
  kk = min(k, p)
  ideal_disc = 1.0 / jnp.log2(jnp.arange(kk, dtype=f32) + 2.0)
  g = jnp.where(star, w_lang, jnp.where(other, w_other, 0.0)).astype(f32)
  if gain == "exp":
    g = jnp.exp2(g) - 1.0
  has_rel = sem.any(1)
  for name, gg in (("lang_ndcg", g), ("ndcg", sem.astype(f32))):
    dcg = (gg * disc).sum(1)
    ideal = -jnp.sort(-gg, axis=1)[:, :kk]
    idcg = (ideal * ideal_disc).sum(1)
    val = jnp.where(idcg > 0, dcg / jnp.where(idcg > 0, idcg, 1.0), 0.0)
    out[name] = (val, has_rel)
  out["recall"] = (
    ((sem & intop).sum(1) / jnp.maximum(sem.sum(1), 1)).astype(f32),
    has_rel,
  )
  r_first = jnp.min(jnp.where(sem, r, big), axis=1)
  out["mrr"] = (jnp.where(has_rel, 1.0 / r_first.astype(f32), 0.0), has_rel)
  out["sem_at_1"] = ((r_first == 1).astype(f32), has_rel)
  return out


def _four_way_onehot(b: PoolBatch, r: jax.Array, positions: jax.Array):
  """``[Q, K, 4]`` category of the candidate at each 1-based position and
  ``[Q, K]`` presence."""
  sem, lm = _labels(b)
  at = r[:, :, None] == positions[None, None, :]  # [Q, P, K]
  # [Q, P, 4]
  cats = jnp.stack([sem & lm, sem & ~lm, ~sem & lm, ~sem & ~lm], -1)
  cats = cats & b.mask[:, :, None]
  onehot = jnp.einsum(
    "qpk,qpc->qkc", at.astype(jnp.float32), cats.astype(jnp.float32)
  )
  return onehot, at.any(1)


def _mean(x, w):
  """Weighted mean over queries with its count; NaN when no query is
  eligible."""
  w = w.astype(jnp.float32)
  n = w.sum(-1)
  return jnp.where(
    n > 0, (x * w).sum(-1) / jnp.where(n > 0, n, 1.0), jnp.nan
  ), n


# -------------------------------------------------------------------- public --


@functools.partial(jax.jit, static_argnames=("ties",))
def _ranks_jit(b, ties):
  return _ranks(b, ties), _score_ok(b)


def ranks(
  b: PoolBatch, *, ties: Literal["pessimistic", "index"] = "pessimistic"
) -> jax.Array:
  """1-based rank of every candidate in descending score order, masked slots
  last.

  ``rank(d) = 1 + #{d' unmasked : s(d') > s(d)} + #{tied d' ordered before d}``.
  Tie policy (the paper does not say; reconstruction): ``'pessimistic'`` orders
  equal scores irrelevant first, then other-language relevant, then the
  query-language relevant ``p*`` (ties count against the retriever on every
  metric), then by slot index; ``'index'`` orders equal scores by slot index
  only (as :mod:`jaxpapers.metrics`).

  Args:
    b: the pools (:class:`PoolBatch`, ``Q`` queries x ``P`` slots).
    ties: the tie policy.

  Returns:
    int32 ``[Q, P]``: ranks ``1..n_q`` on the ``n_q`` unmasked slots of row
    ``q``, ``P + 1`` on masked ones. Under jit, NaN scores on unmasked slots
    make every rank -1.

  Example:
    >>> r = ranks(pool_batch(scores, doc_lang, doc_content, mask, q_lang, q_content))
  """
  b = _check_batch(b)
  r, ok = _ranks_jit(b, _check_ties(ties))
  return _finish(r, (ok, _NAN_MSG))


def _check_k(k, name="k"):
  return V.check_int(k, name, min_value=1)


@functools.partial(
  jax.jit, static_argnames=("k", "ties", "w_lang", "w_other", "gain")
)
def _per_query_jit(b, k, ties, w_lang=2.0, w_other=1.0, gain="linear"):
  r = _ranks(b, ties)
  return _per_query(b, r, k, w_lang, w_other, gain), _score_ok(b)


def lpr(
  b: PoolBatch,
  *,
  variant: Literal["strict", "pairwise", "topk"] = "strict",
  k: int | None = None,
  ties: Literal["pessimistic", "index"] = "pessimistic",
) -> tuple[jax.Array, jax.Array]:
  """Language Preference Rate: how often the query-language version outranks its
  translations.

  Eligible queries have ``p*`` in the pool and at least one other-language
  relevant passage. With ``r* = min rank over query-language relevant passages``
  (reconstruction; the paper's exact LPR formula is not public in text we could
  read):

  * ``'strict'``: ``LPR = mean_q 1[r* < min_{d ∈ R(q), lang(d) ≠ ℓ_q}
    rank(d)]``; a language-neutral random order of ``m`` parallel versions gives
    ``1/m``;
  * ``'pairwise'``: ``LPR = mean_q mean_{d ∈ R(q), lang(d) ≠ ℓ_q} 1[r* <
    rank(d)]`` (per query, then over queries); neutral = 0.5;
  * ``'topk'``: ``LPR@k = mean_q |{d ∈ R(q) ∩ top-k : lm(d)}| / |R(q) ∩ top-k|``
    over eligible queries with at least one relevant passage in the top ``k``
    (the others are left out and not counted in ``n_eligible``).

  Args:
    b: the pools.
    variant: ``'strict'``, ``'pairwise'`` or ``'topk'``.
    k: cutoff, required for ``'topk'`` only (int >= 1).
    ties: tie policy of :func:`ranks`.

  Returns:
    ``(value, n_eligible)``: float32 scalar (NaN when no query is eligible, e.g.
    pools without ``p*``) and the float32 count of queries it averages. Under
    jit, NaN scores make the value NaN and the count NaN.
  """
  b = _check_batch(b)
  if variant not in LPR_VARIANTS:
    raise ValueError(f"variant must be one of {LPR_VARIANTS}, got {variant!r}")
  if variant == "topk":
    if k is None:
      raise ValueError("k must be given for variant='topk' (the top-k cutoff)")
    k = _check_k(k)
  elif k is not None:
    raise ValueError(
      f"k is only used by variant='topk', got k={k!r} for variant={variant!r}"
    )
  pq, ok = _per_query_jit(b, k or 1, _check_ties(ties))
  x, w = pq[f"lpr_{variant}"]
  return _finish(_mean(x, w), (ok, _NAN_MSG))


def _check_gains(w_lang, w_other, gain):
  w_other = V.check_float(w_other, "w_other", min_value=0.0)
  w_lang = V.check_float(w_lang, "w_lang", min_value=0.0, min_inclusive=False)
  if w_lang < w_other:
    raise ValueError(
      "w_lang must be >= w_other (the query-language version is worth at "
      f"least a translation), got w_lang={w_lang}, w_other={w_other}"
    )
  if gain not in GAINS:
    raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
  return w_lang, w_other, gain


def lang_ndcg(
  b: PoolBatch,
  k: int,
  *,
  w_lang: float = 2.0,
  w_other: float = 1.0,
  gain: Literal["linear", "exp"] = "linear",
  ties: Literal["pessimistic", "index"] = "pessimistic",
) -> jax.Array:
  """Lang-nDCG@k: nDCG with a graded gain that prefers the query-language
  version.

  ``g(d) = w_L`` if ``sem ∧ lm``, ``w_O`` if ``sem ∧ ¬lm``, else 0
  (``gain='exp'`` uses ``2^g - 1``); ``DCG@k = Σ_{r ≤ k} g(d_r) / log2(r + 1)``;
  ``IDCG@k`` is the DCG of the ideal order (``p*`` first, then the other
  relevant versions); ``Lang-nDCG@k = DCG@k / IDCG@k`` averaged over queries (0
  for a query with no relevant passage). The graded-gain form and the defaults
  ``w_L = 2, w_O = 1`` are a reconstruction.

  Args:
    b: the pools.
    k: cutoff (int >= 1; ``k > P`` means the whole pool).
    w_lang: gain of a relevant passage in the query language (> 0, >=
      ``w_other``).
    w_other: gain of a relevant passage in another language (>= 0).
    gain: ``'linear'`` or ``'exp'``.
    ties: tie policy of :func:`ranks`.

  Returns:
    float32 scalar in ``[0, 1]``. Under jit, NaN scores make it NaN.
  """
  b = _check_batch(b)
  k = _check_k(k)
  w_lang, w_other, gain = _check_gains(w_lang, w_other, gain)
  pq, ok = _per_query_jit(b, k, _check_ties(ties), w_lang, w_other, gain)
  return _finish(pq["lang_ndcg"][0].mean(), (ok, _NAN_MSG))


def semantic_ndcg(
  b: PoolBatch, k: int, *, ties: Literal["pessimistic", "index"] = "pessimistic"
) -> jax.Array:
  """Standard (language-blind) nDCG@k with binary gain ``sem(d)``.

  ``DCG@k = Σ_{r ≤ k} sem(d_r) / log2(r + 1)``, normalised by the ideal DCG; the
  mean over queries. With ``ties='index'`` and no masked slot it equals
  ``jaxpapers.metrics.ndcg_at_k(scores, sem, k).mean()``.

  Args:
    b: the pools.
    k: cutoff (int >= 1).
    ties: tie policy of :func:`ranks`.

  Returns:
    float32 scalar in ``[0, 1]``. Under jit, NaN scores make it NaN.
  """
  b = _check_batch(b)
  k = _check_k(k)
  pq, ok = _per_query_jit(b, k, _check_ties(ties))
  return _finish(pq["ndcg"][0].mean(), (ok, _NAN_MSG))


def ndcg_per_query(
  b: PoolBatch,
  k: int,
  *,
  w_lang: float = 2.0,
  w_other: float = 1.0,
  gain: Literal["linear", "exp"] = "linear",
  ties: Literal["pessimistic", "index"] = "pessimistic",
) -> dict[str, jax.Array]:
  """Standard nDCG@k and Lang-nDCG@k of every query (for intervals over
  queries).

  The per-query values whose means are :func:`semantic_ndcg` and
  :func:`lang_ndcg` (0 for a query with no relevant passage, as there).

  Args:
    b: the pools (``Q`` x ``P``).
    k: cutoff (int >= 1).
    w_lang, w_other, gain: Lang-nDCG gains (:func:`lang_ndcg`).
    ties: tie policy of :func:`ranks`.

  Returns:
    ``{"ndcg": [Q], "lang_ndcg": [Q]}`` float32 in ``[0, 1]``. Under jit, NaN
    scores make every entry NaN.
  """
  b = _check_batch(b)
  k = _check_k(k)
  w_lang, w_other, gain = _check_gains(w_lang, w_other, gain)
  pq, ok = _per_query_jit(b, k, _check_ties(ties), w_lang, w_other, gain)
  out = {"ndcg": pq["ndcg"][0], "lang_ndcg": pq["lang_ndcg"][0]}
  return _finish(out, (ok, _NAN_MSG))


@functools.partial(jax.jit, static_argnames=("k", "ties"))
def _four_way_jit(b, k, ties):
  r = _ranks(b, ties)
  onehot, present = _four_way_onehot(b, r, jnp.arange(1, k + 1))
  n = present.sum(0).astype(jnp.float32)  # [K]
  frac = onehot.sum(0) / jnp.maximum(n, 1.0)[:, None]
  return jnp.where(n[:, None] > 0, frac, jnp.nan), _score_ok(b)


def four_way(
  b: PoolBatch,
  *,
  rank: int = 1,
  ties: Literal["pessimistic", "index"] = ("pessimistic"),
) -> jax.Array:
  """The 4-way decomposition of the candidate at position ``rank``.

  For the passage ``d_rank`` at that position of each query's ranking, the
  fraction of queries in each cell of ``(sem, lm)``:
  ``[S+L+, S+L−, S−L+, S−L−]`` = success, right content in the wrong language
  (language miss), query-language passage with the wrong content
  (preference-driven semantic failure), plain semantic failure. Queries with
  fewer than ``rank`` real candidates are left out. The four fractions sum to 1.

  Args:
    b: the pools.
    rank: 1-based position (int in ``[1, P]``).
    ties: tie policy of :func:`ranks`.

  Returns:
    float32 ``[4]`` (NaN if no query has ``rank`` candidates). Under jit, NaN
    scores make it NaN.
  """
  b = _check_batch(b)
  rank = V.check_int(rank, "rank", min_value=1, max_value=b.scores.shape[1])
  prof, ok = _four_way_jit(b, rank, _check_ties(ties))
  return _finish(prof[rank - 1], (ok, _NAN_MSG))


def four_way_profile(
  b: PoolBatch, k: int, *, ties: Literal["pessimistic", "index"] = "pessimistic"
) -> jax.Array:
  """:func:`four_way` at every position ``r = 1..k``.

  Args:
    b: the pools.
    k: last position (int in ``[1, P]``).
    ties: tie policy of :func:`ranks`.

  Returns:
    float32 ``[k, 4]``, row ``r - 1`` = ``four_way(b, rank=r)``. Under jit, NaN
    scores make it NaN.
  """
  b = _check_batch(b)
  k = V.check_int(k, "k", min_value=1, max_value=b.scores.shape[1])
  prof, ok = _four_way_jit(b, k, _check_ties(ties))
  return _finish(prof, (ok, _NAN_MSG))


REPORT_KEYS = (
  "ndcg",
  "lang_ndcg",
  "recall",
  "mrr",
  "sem_at_1",
  "lpr_strict",
  "lpr_pairwise",
  "lpr_topk",
)


@functools.partial(
  jax.jit, static_argnames=("k", "n_langs", "ties", "w_lang", "w_other", "gain")
)
def _report_jit(b, k, n_langs, ties, w_lang, w_other, gain):
  q, p = b.scores.shape
  r = _ranks(b, ties)
  pq = _per_query(b, r, k, w_lang, w_other, gain)
  kk = min(k, p)
  # [Q, K, 4], [Q, K]
  onehot, present = _four_way_onehot(b, r, jnp.arange(1, kk + 1))
  out = {}
  groups = [jnp.ones((1, q), bool)]
  if n_langs:
    groups.append(b.q_lang[None, :] == jnp.arange(n_langs)[:, None])  # [L, Q]
  for gi, grp in enumerate(groups):
    suffix = "" if gi == 0 else "_by_lang"
    for name in REPORT_KEYS:
      x, w = pq[name]
      val, n = _mean(x[None, :], grp & w[None, :])
      out[name + suffix] = val if gi else val[0]
      if name.startswith("lpr"):
        out[f"n_{name}{suffix}"] = n if gi else n[0]
    pres = present[None] & grp[:, :, None]  # [G, Q, K]
    cnt = pres.sum(1).astype(jnp.float32)  # [G, K]
    # [G, K, 4]
    tot = (pres.astype(jnp.float32)[..., None] * onehot[None]).sum(1)
    prof = jnp.where(
      cnt[..., None] > 0, tot / jnp.maximum(cnt, 1.0)[..., None], jnp.nan
    )
    out["four_way_profile" + suffix] = prof if gi else prof[0]
    out["four_way" + suffix] = prof[:, 0] if gi else prof[0, 0]
  lang_ok = (
    (b.q_lang >= 0) & (b.q_lang < max(n_langs, 1))
    if n_langs
    else jnp.asarray(True)
  )
  return out, _score_ok(b), jnp.all(lang_ok)


def mlaire_report(
  b: PoolBatch,
  *,
  k: int = 10,
  n_langs: int | None = None,
  w_lang: float = 2.0,
  w_other: float = 1.0,
  gain: Literal["linear", "exp"] = "linear",
  ties: Literal["pessimistic", "index"] = "pessimistic",
) -> dict[str, jax.Array]:
  """Every MLAIRE metric in one jitted pass, overall and (optionally) per query
  language.

  Semantic (language-blind): ``ndcg`` (nDCG@k), ``recall`` (Recall@k), ``mrr``,
  ``sem_at_1`` (a relevant passage at rank 1). Language-aware: ``lang_ndcg``
  (:func:`lang_ndcg`), ``lpr_strict``/``lpr_pairwise``/``lpr_topk``
  (:func:`lpr`, top-k share at ``k``) with their eligible-query counts
  ``n_lpr_*``, ``four_way`` (:func:`four_way` at rank 1) and
  ``four_way_profile`` (:func:`four_way_profile` up to ``min(k, P)``). Means are
  over the queries each metric is defined for.

  Args:
    b: the pools (``Q`` x ``P``); arrays sharded over the query axis run
      sharded.
    k: cutoff for nDCG, Recall, LPR@k and the profile (int >= 1).
    n_langs: if given (int >= 1), also every metric per query language
      ``0..n_langs-1`` under ``<name>_by_lang`` (a leading ``[n_langs]`` axis;
      NaN for a language with no query).
    w_lang, w_other, gain: Lang-nDCG gains (:func:`lang_ndcg`).
    ties: tie policy of :func:`ranks`.

  Returns:
    dict of float32 arrays: scalars (``four_way [4]``, ``four_way_profile
    [min(k,P), 4]``), plus the ``_by_lang`` versions. Under jit, NaN scores or a
    query language outside ``[0, n_langs)`` make every entry NaN.

  Example:
    >>> rep = mlaire_report(pool_batch(...), k=10, n_langs=6)
    >>> rep["lpr_strict"], rep["four_way"]  # scalar, [4]
  """
  b = _check_batch(b)
  k = _check_k(k)
  if n_langs is not None:
    n_langs = V.check_int(n_langs, "n_langs", min_value=1)
  w_lang, w_other, gain = _check_gains(w_lang, w_other, gain)
  out, ok, lang_ok = _report_jit(
    b, k, n_langs or 0, _check_ties(ties), w_lang, w_other, gain
  )
  return _finish(
    out,
    (ok, _NAN_MSG),
    (
      lang_ok,
      (
        f"b.q_lang must lie in [0, n_langs) = [0, {n_langs}) for the "
        "per-language report"
      ),
    ),
  )
