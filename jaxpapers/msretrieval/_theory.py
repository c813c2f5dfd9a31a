"""The decision-theoretic view, made exact on small fingerprints (F <= 20 bits)
by enumeration.

Setting (a reconstruction: the paper's theorems are not quoted here). A query
has ``n`` candidates with fingerprints ``y_c ∈ {0,1}^F`` and a posterior
``π_c = P(y = y_c | x)``.

* The retrieval-optimal (Bayes HR@1) decision returns ``argmax_c π_c``; it is
  realised by the fingerprint ``ŷ = y_{argmax π}``, so its HR@1 is
  ``max_c π_c``.
* The similarity-optimal fingerprint for Jaccard is ``ŷ_J = argmax_{ŷ ∈ {0,1}^F}
  Σ_c π_c J(ŷ, y_c)`` (found by enumerating all ``2^F`` vectors, bit-packed,
  with ``lax.population_count``).
* The BCE-optimal prediction is the marginal ``p = Σ_c π_c y_c``; retrieval then
  ranks by ``cos(p, y_c)`` (the reference's default retrieval score).
* The HR@1 regret of a decision fingerprint ``d`` under similarity S is
  ``R = max_c π_c - E[π_ĉ]``, ``ĉ`` the top candidate by ``S(d, y_c)`` with ties
  broken uniformly at random (the expectation of the reference's noise
  tie-breaking).
* The similarity band of a pool: ``σ_min / σ_max`` = min / max of
  ``J(y_c, y_c')`` over pairs.
* Candidates listed twice with the same fingerprint tie under every similarity;
  deduplicate them by structure (:func:`merge_duplicate_candidates`) before
  reading a regret as a mismatch between the two Bayes decisions.

Sufficient-margin lemma (our derivation; ``1 - J`` is a metric): if ``J(ŷ,
y_true) > (1 + σ_max)/2`` then ``y_true`` is ranked first by Jaccard.
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

MAX_BITS = 20
_TIE_TOL = 1e-6


def _codes(bits: jax.Array) -> jax.Array:
  """Binary ``[..., F]`` (F <= 20) as int32 codes ``Σ_j bits_j 2^j``."""
  return (
    bits.astype(jnp.int32) << jnp.arange(bits.shape[-1], dtype=jnp.int32)
  ).sum(-1)


def _jaccard_codes(a: jax.Array, b: jax.Array) -> jax.Array:
  inter = jax.lax.population_count(a & b).astype(jnp.float32)
  union = jax.lax.population_count(a | b).astype(jnp.float32)
  return jnp.where(union > 0, inter / jnp.where(union > 0, union, 1.0), 0.0)


def _check_problem(posterior, cands):
  posterior = V.check_array(posterior, "posterior", ndim=(1, 2), dtype="float")
  cands = V.check_array(cands, "cands", ndim=posterior.ndim + 1, dtype="real")
  if cands.shape[:-1] != posterior.shape:
    raise ValueError(
      f"cands must have shape posterior.shape + (F,) = {posterior.shape} + "
      f"(F,), got {cands.shape}"
    )
  f = cands.shape[-1]
  if not 1 <= f <= MAX_BITS:
    raise ValueError(
      f"cands must have 1 <= F <= {MAX_BITS} bits for exact enumeration, "
      f"got {f}"
    )
  if posterior.shape[-1] < 1:
    raise ValueError(
      f"posterior must have at least one candidate, got {posterior.shape}"
    )
  return posterior.astype(jnp.float32), cands


def _problem_flags(posterior, cands):
  return (
    jnp.all(
      (posterior >= 0).all(-1) & (jnp.abs(posterior.sum(-1) - 1.0) < 1e-4)
    ),
    jnp.all((cands == 0) | (cands == 1)),
  )


_PROBLEM_MESSAGES = (
  "posterior must be non-negative and sum to 1 over candidates",
  "cands must be binary (entries in {0, 1})",
)


def _finish(out, flags, messages=_PROBLEM_MESSAGES):
  ok = True
  for flag, msg in zip(flags, messages):
    ok = ok & V.check_values(flag, msg)
  return V.poison(out, ok)


@functools.partial(jax.jit, static_argnames=("f", "batch_size"))
def _enumerate(posterior, codes, f, batch_size):
  all_codes = jnp.arange(2**f, dtype=jnp.int32)  # every fingerprint ŷ

  def one(args):
    pi, c = args
    # [2^F] expected Jaccard
    e = _jaccard_codes(all_codes[:, None], c[None, :]) @ pi
    best = jnp.argmax(e)  # the first maximiser (lowest code)
    return best, e[best]

  best, val = jax.lax.map(one, (posterior, codes), batch_size=batch_size)
  bits = ((best[:, None] >> jnp.arange(f, dtype=jnp.int32)) & 1).astype(
    jnp.uint8
  )
  return bits, val


def enumerate_bayes_fingerprint(
  posterior: jax.Array, cands: jax.Array, *, batch_size: int = 16
) -> tuple[jax.Array, jax.Array]:
  """The Jaccard-Bayes fingerprint ``argmax_ŷ Σ_c π_c J(ŷ, y_c)`` over all
  ``2^F`` vectors.

  Exact enumeration, vectorised over the ``2^F`` candidates ŷ (bit-packed,
  popcount) and mapped over problems in blocks of ``batch_size``. Ties between
  maximisers: the lowest integer code ``Σ_j ŷ_j 2^j`` wins. ``J(0, 0) = 0``.

  Args:
    posterior: ``[n]`` or ``[P, n]`` float posteriors (non-negative, summing to
      1).
    cands: ``[n, F]`` or ``[P, n, F]`` binary candidate fingerprints,
      ``F <= 20``.
    batch_size: problems per vectorised block (memory ``batch_size · 2^F · n``
      floats).

  Returns:
    ``(ŷ, value)``: ``[..., F]`` uint8 fingerprint and ``[...]`` float32
    expected Jaccard. Under jit a bad posterior or non-binary candidate makes
    ``value`` NaN.
  """
  batch_size = V.check_int(batch_size, "batch_size", min_value=1)
  posterior, cands = _check_problem(posterior, cands)
  f = cands.shape[-1]
  single = posterior.ndim == 1
  pi = posterior[None] if single else posterior
  c = cands[None] if single else cands
  bits, val = _enumerate(pi, _codes(c), f, batch_size)
  if single:
    bits, val = bits[0], val[0]
  return bits, _finish(val, _flags(pi, c))


_flags = jax.jit(_problem_flags)


def marginal_fingerprint(posterior: jax.Array, cands: jax.Array) -> jax.Array:
  """The BCE-Bayes prediction: bit marginals ``p_j = Σ_c π_c y_cj``.

  Args:
    posterior: ``[..., n]`` posteriors.
    cands: ``[..., n, F]`` binary candidates.

  Returns:
    ``[..., F]`` float32 probabilities. Under jit bad input gives NaN.
  """
  posterior, cands = _check_problem(posterior, cands)
  return _finish(*_marginal(posterior, cands))


@jax.jit
def _marginal(posterior, cands):
  out = jnp.einsum("...n,...nf->...f", posterior, cands.astype(jnp.float32))
  return out, _problem_flags(posterior, cands)


def hr1_regret(
  posterior: jax.Array,
  cands: jax.Array,
  decision: jax.Array,
  *,
  sim: Literal["jaccard", "cosine"] = "jaccard",
  mask: jax.Array | None = None,
) -> jax.Array:
  """HR@1 regret ``max_c π_c - E[π_ĉ]`` of retrieving with ``decision`` under
  ``sim``.

  ``ĉ`` maximises ``S(decision, y_c)`` over the real candidates; candidates
  within 1e-6 of the top score are tied and averaged uniformly (the expected
  value under random tie-breaking).

  Args:
    posterior: ``[..., n]`` posteriors.
    cands: ``[..., n, F]`` binary candidates.
    decision: ``[..., F]`` the predicted fingerprint (binary for ``'jaccard'``;
      any non-negative vector for ``'cosine'``).
    sim: ``'jaccard'`` or ``'cosine'``.
    mask: optional ``[..., n]`` bool, False for slots that are not candidates
      (padding, or the duplicates removed by
      :func:`merge_duplicate_candidates`): they are never retrieved and do not
      count in ``max_c π_c``. Each problem needs at least one real candidate.

  Returns:
    ``[...]`` float32 regret in [0, 1]. Under jit a problem without a real
    candidate gives NaN.
  """
  if sim not in ("jaccard", "cosine"):
    raise ValueError(f"sim must be 'jaccard' or 'cosine', got {sim!r}")
  posterior, cands = _check_problem(posterior, cands)
  decision = V.check_array(
    decision, "decision", shape=cands.shape[:-2] + cands.shape[-1:]
  )
  if mask is None:
    mask = jnp.ones(posterior.shape, bool)
  mask = V.check_array(mask, "mask", shape=posterior.shape, dtype="bool")
  out, flags, dec_ok, any_real = _regret(
    posterior, cands, decision, mask, sim=sim
  )
  checks = (*flags, any_real)
  messages = (
    *_PROBLEM_MESSAGES,
    "mask must keep at least one candidate per problem",
  )
  if sim == "jaccard":
    return _finish(
      out, (*checks, dec_ok), (*messages, "decision must be binary")
    )
  return _finish(out, checks, messages)


@functools.partial(jax.jit, static_argnames=("sim",))
def _regret(posterior, cands, decision, mask, *, sim):
  y = cands.astype(jnp.float32)
  d = decision.astype(jnp.float32)[..., None, :]
  if sim == "jaccard":
    inter = (d * y).sum(-1)
    union = d.sum(-1) + y.sum(-1) - inter
    s = jnp.where(union > 0, inter / jnp.where(union > 0, union, 1.0), 0.0)
  else:
    s = (d * y).sum(-1) / jnp.maximum(
      jnp.sqrt((d * d).sum(-1) * y.sum(-1)), 1e-8
    )
  s = jnp.where(mask, s, -jnp.inf)
  top = mask & (s >= s.max(-1, keepdims=True) - _TIE_TOL)
  got = (posterior * top).sum(-1) / jnp.maximum(top.sum(-1), 1)
  best = jnp.where(mask, posterior, -jnp.inf).max(-1)
  dec_ok = jnp.all((decision == 0) | (decision == 1))
  return (
    best - got,
    _problem_flags(posterior, cands),
    dec_ok,
    jnp.all(mask.any(-1)),
  )


def merge_duplicate_candidates(
  posterior: jax.Array, cands: jax.Array, *, drop_empty: bool = False
) -> tuple[jax.Array, jax.Array]:
  """Deduplicates candidates by structure: identical fingerprints become one
  candidate.

  A problem that lists the same fingerprint twice asks a fingerprint-based
  retriever to break a tie no fingerprint can break; its HR@1 regret then
  measures the tie, not the decision. Here the first occurrence of each distinct
  fingerprint keeps its slot and receives the summed posterior of all its
  copies, ``π'_c = Σ_{c': y_c' = y_c} π_c'``; the later copies get ``π' = 0``
  and ``mask = False``. Shapes stay static (no compaction), so the result feeds
  :func:`enumerate_bayes_fingerprint` and :func:`marginal_fingerprint` directly
  (a zero posterior contributes nothing) and :func:`hr1_regret` /
  :func:`similarity_band` through ``mask``.

  With ``drop_empty=True`` an all-zero fingerprint is also removed (no molecule
  has one, and ``J(ŷ, 0) = 0`` for every ``ŷ`` makes it tie with everything) and
  the posterior of the kept candidates is renormalised to sum to 1; a problem
  whose candidates are all empty keeps no candidate (its posterior is all zero
  and its mask all False: leave it out).

  Args:
    posterior: ``[..., n]`` posteriors.
    cands: ``[..., n, F]`` binary candidates.
    drop_empty: also remove empty fingerprints (above).

  Returns:
    ``(π', mask)``: ``[..., n]`` float32 and ``[..., n]`` bool. Under jit a bad
    posterior or a non-binary candidate makes ``π'`` NaN.
  """
  if not isinstance(drop_empty, bool):
    raise TypeError(f"drop_empty must be True or False, got {drop_empty!r}")
  posterior = V.check_array(posterior, "posterior", dtype="float")
  if posterior.ndim < 1 or posterior.shape[-1] < 1:
    raise ValueError(
      f"posterior must have shape [..., n] with n >= 1, got {posterior.shape}"
    )
  cands = V.check_array(cands, "cands", ndim=posterior.ndim + 1, dtype="real")
  if cands.shape[:-1] != posterior.shape:
    raise ValueError(
      f"cands must have shape posterior.shape + (F,) = {posterior.shape} + "
      f"(F,), got {cands.shape}"
    )
  merged, mask, flags = _merge(
    posterior.astype(jnp.float32), cands, drop_empty=drop_empty
  )
  return _finish(merged, flags), mask


@functools.partial(jax.jit, static_argnames=("drop_empty",))
def _merge(posterior, cands, *, drop_empty):
  n = cands.shape[-2]
  # [..., n, n]
  same = jnp.all(cands[..., :, None, :] == cands[..., None, :, :], axis=-1)
  # the first slot holding the same fingerprint (<= own)
  first = jnp.argmax(same, axis=-1)
  mask = first == jnp.arange(n)
  # [..., n (copy), n (owner)]
  owner = jax.nn.one_hot(first, n, dtype=posterior.dtype)
  merged = jnp.einsum("...c,...co->...o", posterior, owner)
  if drop_empty:
    mask = mask & jnp.any(cands != 0, axis=-1)
    merged = jnp.where(mask, merged, 0.0)
    total = merged.sum(-1, keepdims=True)
    merged = jnp.where(
      total > 0, merged / jnp.where(total > 0, total, 1.0), 0.0
    )
  return merged, mask, _problem_flags(posterior, cands)


def similarity_band(
  cands: jax.Array, mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
  """``(σ_min, σ_max)``: min and max Tanimoto over pairs of distinct real
  candidates.

  Args:
    cands: ``[..., n, F]`` binary fingerprints (any F).
    mask: optional ``[..., n]`` bool, False for padding.

  Returns:
    ``([...], [...])`` float32; a pool with fewer than two real candidates gives
    ``(1, 0)`` (the empty min and max), which satisfies no lemma's premise
    vacuously.
  """
  cands = V.check_array(cands, "cands", dtype="real")
  if cands.ndim < 2:
    raise ValueError(f"cands must have shape [..., n, F], got {cands.shape}")
  if mask is None:
    mask = jnp.ones(cands.shape[:-1], bool)
  mask = V.check_array(mask, "mask", shape=cands.shape[:-1], dtype="bool")
  out, ok = _band(cands, mask)
  return _finish(out, (ok,), ("cands must be binary (entries in {0, 1})",))


@jax.jit
def _band(cands, mask):
  n = cands.shape[-2]
  y = cands.astype(jnp.float32)
  inter = jnp.einsum("...if,...jf->...ij", y, y)
  cnt = y.sum(-1)
  union = cnt[..., :, None] + cnt[..., None, :] - inter
  j = jnp.where(union > 0, inter / jnp.where(union > 0, union, 1.0), 0.0)
  pair = mask[..., :, None] & mask[..., None, :] & ~jnp.eye(n, dtype=bool)
  lo = jnp.where(pair, j, jnp.inf).min((-2, -1))
  hi = jnp.where(pair, j, -jnp.inf).max((-2, -1))
  has = pair.any((-2, -1))
  out = (jnp.where(has, lo, 1.0), jnp.where(has, hi, 0.0))
  return out, jnp.all((cands == 0) | (cands == 1))
