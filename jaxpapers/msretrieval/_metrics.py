"""Retrieval and fingerprint-accuracy metrics as the reference evaluates them,
plus Pareto fronts.

Reference: gdewael/ms-mole ``ms_mole/models.py`` (``evaluate_retrieval_step``,
``log_fingerprint``) and torchmetrics' ``retrieval_hit_rate``.
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from jaxpapers.core import validation as V
from jaxpapers.msretrieval._similarity import _ratio

TIES = ("noise", "pessimistic", "optimistic")
CLOSE_MATCH = 0.675  # reference: "close match" Tanimoto threshold
MEANINGFUL_MATCH = 0.40  # reference: "meaningful match" Tanimoto threshold


def hit_rate_at_k(
  scores: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  k: int,
  *,
  ties: Literal["noise", "pessimistic", "optimistic"] = "noise",
  key: jax.Array | None = None,
) -> jax.Array:
  """HR@k over padded candidate sets: 1 if a positive is among the top ``k``
  real candidates.

  Ties follow the reference by default (``ties='noise'``): the scores get
  ``N(0, 1) · eps`` noise with ``eps`` the machine epsilon of the scores' dtype
  (float32: 1.19e-7), then the top ``k`` are taken, so exactly tied candidates
  are ordered at random. (Noise of one eps does not always separate values near
  1 after float32 rounding; values still equal are ordered by a uniform random
  permutation, which is what the noise is meant to achieve.) ``'pessimistic'``
  ranks every tied negative above the best positive, ``'optimistic'`` below it
  (bounds on the noisy value). With noise, the best positive's rank is
  ``1 + #{negatives scoring higher}``.

  A query with no positive scores 0 (torchmetrics' ``retrieval_hit_rate``
  convention; mask such queries out of the mean yourself if your protocol drops
  them). Padded candidates never count.

  Args:
    scores: ``[B, C]`` float scores (padding may be ``-inf``).
    labels: ``[B, C]`` bool, True for positives.
    cand_mask: ``[B, C]`` bool, False for padding.
    k: the cut-off, a static int >= 1.
    ties: ``'noise'`` (needs ``key``), ``'pessimistic'`` or ``'optimistic'``.
    key: a typed PRNG key for ``ties='noise'``.

  Returns:
    ``[B]`` float32 in {0, 1}. Under jit a NaN score makes every output NaN.
  """
  k = V.check_int(k, "k", min_value=1)
  if ties not in TIES:
    raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
  scores = V.check_array(scores, "scores", ndim=2, dtype="float")
  labels = V.check_array(labels, "labels", shape=scores.shape, dtype="bool")
  cand_mask = V.check_array(
    cand_mask, "cand_mask", shape=scores.shape, dtype=("bool")
  )
  if scores.shape[1] == 0:
    raise ValueError(
      f"scores must hold at least one candidate slot, got shape {scores.shape}"
    )
  if ties == "noise":
    if key is None:
      raise ValueError(
        "key is required for ties='noise' (the reference's random tie-breaking)"
      )
    if not (
      isinstance(key, jax.Array)
      and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    ):
      raise TypeError(
        f"key must be a typed PRNG key (jax.random.key), got {key!r}"
      )
  if key is None:
    key = jax.random.key(0)  # unused by the deterministic conventions
  out, ok = _hit_rate(scores, labels, cand_mask, key, k=k, ties=ties)
  return V.poison(out, V.check_values(ok, "scores must not contain NaN"))


@functools.partial(jax.jit, static_argnames=("k", "ties"))
def _hit_rate(scores, labels, cand_mask, key, *, k, ties):
  ok = ~jnp.any(jnp.isnan(scores))
  pos = labels & cand_mask
  neg = cand_mask & ~labels
  k_noise, k_order = jax.random.split(key)  # used by ties='noise' only
  if ties == "noise":
    eps = jnp.finfo(scores.dtype).eps
    scores = (
      scores + jax.random.normal(k_noise, scores.shape, scores.dtype) * eps
    )
  # [B, 1]
  best = jnp.max(jnp.where(pos, scores, -jnp.inf), axis=-1, keepdims=True)
  if ties == "optimistic":
    above = (neg & (scores > best)).sum(-1)
  elif ties == "pessimistic":
    above = (neg & (scores >= best)).sum(-1)
  # values still equal after the noise (float32 rounding) are ordered at random
  else:
    u = jax.random.uniform(k_order, scores.shape)
    u_best = jnp.max(
      jnp.where(pos & (scores == best), u, -1.0), axis=-1, keepdims=True
    )
    above = (neg & ((scores > best) | ((scores == best) & (u > u_best)))).sum(
      -1
    )
  hit = pos.any(-1) & (above < k)
  return hit.astype(jnp.float32), ok


def bit_f1(pred_bits: jax.Array, fp: jax.Array) -> jax.Array:
  """Per-bit F1 over a batch: ``F1_j = 2 TP_j / (2 TP_j + FP_j + FN_j)``; 0 when a bit is never on.

  Args:
    pred_bits: ``[B, F]`` binary predictions.
    fp: ``[B, F]`` binary targets.

  Returns:
    ``[F]`` float32 (sklearn's ``f1_score(average=None, zero_division=0)`` per
    bit).
  """
  pred_bits = V.check_array(pred_bits, "pred_bits", ndim=2, dtype="real")
  fp = V.check_array(fp, "fp", shape=pred_bits.shape, dtype="real")
  out, ok1, ok2 = _bit_f1(pred_bits, fp)
  ok = V.check_values(ok1, "pred_bits must be binary")
  ok = ok & V.check_values(ok2, "fp must be binary (entries in {0, 1})")
  return V.poison(out, ok)


@jax.jit
def _bit_f1(pred_bits, fp):
  p, y = pred_bits.astype(jnp.float32), fp.astype(jnp.float32)
  tp = (p * y).sum(0)
  den = p.sum(0) + y.sum(0)
  return (
    _ratio(2.0 * tp, den),
    jnp.all((p == 0) | (p == 1)),
    jnp.all((y == 0) | (y == 1)),
  )


def fingerprint_metrics(
  probs: jax.Array, fp: jax.Array, *, threshold: float = 0.5
) -> dict:
  """The reference's fingerprint accuracy, per query (and micro-F1 / macro-F1 of
  the batch).

  ``tanimoto``: ``T(1[p > threshold], y)``; ``close_match`` /
  ``meaningful_match``: ``T > 0.675`` / ``T > 0.40``; ``cont_iou``: continuous
  Tanimoto ``Σmin/Σmax``; ``cosine``: ``cos(p, y)``; ``micro_f1``: pooled over
  bits and queries; ``macro_f1``: mean per-bit F1.

  Args:
    probs: ``[B, F]`` probabilities in [0, 1].
    fp: ``[B, F]`` binary targets.
    threshold: the bit threshold.

  Returns:
    A dict of ``[B]`` float32 arrays (``micro_f1``, ``macro_f1``: scalars).
    Under jit an out-of-range probability or non-binary target gives NaN
    everywhere.
  """
  threshold = V.check_float(threshold, "threshold")
  probs = V.check_array(probs, "probs", ndim=2, dtype="float")
  fp = V.check_array(fp, "fp", shape=probs.shape, dtype="real")
  out, ok1, ok2 = _fingerprint_metrics(probs, fp, threshold=threshold)
  ok = V.check_values(ok1, "probs must be probabilities in [0, 1]")
  ok = ok & V.check_values(ok2, "fp must be binary (entries in {0, 1})")
  return V.poison(out, ok)


@functools.partial(jax.jit, static_argnames=("threshold",))
def _fingerprint_metrics(probs, fp, *, threshold):
  ok1 = jnp.all((probs >= 0) & (probs <= 1))
  ok2 = jnp.all((fp == 0) | (fp == 1))
  y = fp.astype(jnp.float32)
  p = jnp.clip(probs.astype(jnp.float32), 0.0, 1.0)
  b = (p > threshold).astype(jnp.float32)
  inter = (b * y).sum(-1)
  tan = _ratio(inter, b.sum(-1) + y.sum(-1) - inter)
  total = (p + y).sum(-1)
  diff = jnp.abs(p - y).sum(-1)
  norm = jnp.sqrt((p * p).sum(-1) * y.sum(-1))
  out = {
    "tanimoto": tan,
    "close_match": (tan > CLOSE_MATCH).astype(jnp.float32),
    "meaningful_match": (tan > MEANINGFUL_MATCH).astype(jnp.float32),
    "cont_iou": _ratio(total - diff, total + diff),
    "cosine": (p * y).sum(-1) / jnp.maximum(norm, 1e-8),
    "micro_f1": _ratio(2.0 * inter.sum(), b.sum() + y.sum()),
    "macro_f1": _ratio(2.0 * (b * y).sum(0), b.sum(0) + y.sum(0)).mean(),
  }
  return out, ok1, ok2


def pareto_front(points: npt.ArrayLike) -> np.ndarray:
  """Mask of the non-dominated points when both coordinates are maximised
  (host-side numpy).

  A point is dominated if another is ``>=`` in both coordinates and ``>`` in
  one. Duplicates of a non-dominated point are all kept.

  Args:
    points: ``[N, 2]`` finite reals.

  Returns:
    ``[N]`` bool numpy array.
  """
  pts = np.asarray(points, dtype=np.float64)
  if pts.ndim != 2 or pts.shape[1] != 2:
    raise ValueError(f"points must have shape [N, 2], got {pts.shape}")
  if not np.all(np.isfinite(pts)):
    raise ValueError("points must be finite")
  # [i, j]: j >= i in both
  ge = np.all(pts[None, :, :] >= pts[:, None, :], axis=-1)
  gt = np.any(pts[None, :, :] > pts[:, None, :], axis=-1)
  return ~np.any(ge & gt, axis=1)
