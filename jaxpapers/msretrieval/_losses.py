"""Fingerprint losses and retrieval-aware contrastive losses, as the reference
code defines them.

Reference: gdewael/ms-mole ``ms_mole/loss.py``. Every loss returns a scalar
averaged over the batch. Fingerprint losses take logits ``z [B, F]`` and binary
targets ``y [B, F]`` and act on ``p = sigmoid(z)`` where the reference does
(cosine, IoU). Contrastive losses take candidate scores ``s [B, C]`` (e.g.
``cos(p, y_c)``), ``labels [B, C]`` (True for the candidates equal to the true
molecule) and ``cand_mask [B, C]`` (False for padding).

Degenerate input (documented, tested): a query with no positive candidate is
left out of the contrastive mean (the reference code would fail on it); a
pairwise query with no negative contributes nothing; if no query is usable the
contrastive loss is 0.

Bad input: shapes, dtypes and static values at trace time; non-binary targets
eagerly (``ValueError``), and under jit they make the loss NaN.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from jaxpapers.core import validation as V

_COS_EPS = 1e-12  # torch cosine_embedding_loss's EPSILON under the square root


def _check_fp(logits, fp):
  logits = V.check_array(logits, "logits", ndim=2, dtype="float")
  fp = V.check_array(fp, "fp", shape=logits.shape, dtype="real")
  if logits.shape[1] == 0:
    raise ValueError(
      f"logits must have at least one bit, got shape {logits.shape}"
    )
  return logits, fp


def _fp_loss(impl):
  """Jits ``impl(logits, fp float, **static) -> scalar`` together with the
  binary check."""

  @functools.partial(jax.jit, static_argnames=("gamma",))
  def run(logits, fp, **static):
    ok = jnp.all((fp == 0) | (fp == 1))
    return impl(logits, fp.astype(logits.dtype), **static), ok

  def call(logits, fp, **static):
    logits, fp = _check_fp(logits, fp)
    out, ok = run(logits, fp, **static)
    return V.poison(
      out, V.check_values(ok, "fp must be binary (entries in {0, 1})")
    )

  return call


@_fp_loss
def _bce(logits, fp):
  return optax.sigmoid_binary_cross_entropy(logits, fp).mean()


@_fp_loss
def _focal(logits, fp, gamma):
  ce = optax.sigmoid_binary_cross_entropy(logits, fp)
  pt = jnp.exp(-ce)
  return ((1.0 - pt) ** gamma * ce).mean()


@_fp_loss
def _cosine(logits, fp):
  p = jax.nn.sigmoid(logits)
  cos = (p * fp).sum(-1) / jnp.sqrt(
    ((p * p).sum(-1) + _COS_EPS) * ((fp * fp).sum(-1) + _COS_EPS)
  )
  return (1.0 - cos).mean()


@_fp_loss
def _iou(logits, fp):
  p = jax.nn.sigmoid(logits)
  inter = (p * fp).sum(-1)
  # sigmoid is never exactly 0
  return 1.0 - (inter / (p.sum(-1) + fp.sum(-1) - inter)).mean()


def bce_loss(logits: jax.Array, fp: jax.Array) -> jax.Array:
  """Binary cross-entropy over bits: ``mean_{b,j} BCE(z_bj, y_bj)`` (from
  logits, stable).

  Args:
    logits: ``[B, F]`` float logits.
    fp: ``[B, F]`` binary targets.

  Returns:
    Scalar. Under jit a non-binary target gives NaN.
  """
  return _bce(logits, fp)


def focal_loss(
  logits: jax.Array, fp: jax.Array, *, gamma: float = 2.0
) -> jax.Array:
  """Focal loss ``mean_{b,j} (1 - p_t)^γ BCE_bj`` with ``p_t = exp(-BCE_bj)``.

  The reference class default is γ = 2; its training script uses γ = 5.

  Args:
    logits: ``[B, F]`` float logits.
    fp: ``[B, F]`` binary targets.
    gamma: the focusing exponent ``γ >= 0`` (static).

  Returns:
    Scalar. Under jit a non-binary target gives NaN.
  """
  gamma = V.check_float(gamma, "gamma", min_value=0.0)
  return _focal(logits, fp, gamma=gamma)


def cosine_loss(logits: jax.Array, fp: jax.Array) -> jax.Array:
  """Cosine loss ``mean_b [1 - cos(σ(z_b), y_b)]`` (torch
  ``cosine_embedding_loss``, target 1).

  ``cos = p·y / sqrt((‖p‖² + ε)(‖y‖² + ε))`` with ε = 1e-12 as in torch.

  Args:
    logits: ``[B, F]`` float logits.
    fp: ``[B, F]`` binary targets.

  Returns:
    Scalar. Under jit a non-binary target gives NaN.
  """
  return _cosine(logits, fp)


def soft_iou_loss(logits: jax.Array, fp: jax.Array) -> jax.Array:
  """Soft-Tanimoto (IoU) loss ``1 - mean_b Σ p y / (Σ p + Σ y - Σ p y)`` with ``p = σ(z)``.

  Args:
    logits: ``[B, F]`` float logits.
    fp: ``[B, F]`` binary targets.

  Returns:
    Scalar. Under jit a non-binary target gives NaN.
  """
  return _iou(logits, fp)


def _check_contrastive(scores, labels, cand_mask, temperature):
  temperature = V.check_float(
    temperature, "temperature", min_value=0.0, min_inclusive=False
  )
  scores = V.check_array(scores, "scores", ndim=2, dtype="float")
  labels = V.check_array(labels, "labels", shape=scores.shape, dtype="bool")
  cand_mask = V.check_array(
    cand_mask, "cand_mask", shape=scores.shape, dtype=("bool")
  )
  if scores.shape[1] == 0:
    raise ValueError(
      f"scores must hold at least one candidate slot, got shape {scores.shape}"
    )
  return scores, labels, cand_mask, temperature


def _positives(scores, labels, cand_mask, temperature):
  pos = labels & cand_mask
  # The first positive (reference: torch.where(l)[0][[0]]); the other positives
  # are excluded.
  first = jnp.argmax(pos, axis=-1)  # [B]
  s_pos = (
    jnp.take_along_axis(scores, first[:, None], axis=-1)[:, 0] / temperature
  )
  neg = cand_mask & ~labels
  return scores / temperature, s_pos, neg, pos.any(-1)


def _mean_over(values, valid):
  n = valid.sum()
  return jnp.where(
    n > 0, jnp.where(valid, values, 0.0).sum() / jnp.maximum(n, 1), 0.0
  )


@functools.partial(jax.jit, static_argnames=("temperature",))
def _listwise(scores, labels, cand_mask, temperature):
  s, s_pos, neg, has_pos = _positives(scores, labels, cand_mask, temperature)
  s_neg = jnp.where(neg, s, -jnp.inf)
  lse = jnp.logaddexp(s_pos, jax.nn.logsumexp(s_neg, axis=-1))
  return _mean_over(lse - s_pos, has_pos), ~jnp.any(jnp.isnan(scores))


@functools.partial(jax.jit, static_argnames=("temperature",))
def _pairwise(scores, labels, cand_mask, temperature):
  s, s_pos, neg, has_pos = _positives(scores, labels, cand_mask, temperature)
  pair = jax.nn.softplus(jnp.where(neg, s - s_pos[:, None], 0.0))
  n_neg = neg.sum(-1)
  per_q = jnp.where(neg, pair, 0.0).sum(-1) / jnp.maximum(n_neg, 1)
  return _mean_over(per_q, has_pos & (n_neg > 0)), ~jnp.any(jnp.isnan(scores))


def _contrastive(impl, scores, labels, cand_mask, temperature):
  args = _check_contrastive(scores, labels, cand_mask, temperature)
  out, ok = impl(*args[:3], temperature=args[3])
  return V.poison(out, V.check_values(ok, "scores must not contain NaN"))


def listwise_contrastive_loss(
  scores: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  *,
  temperature: float = 1.0,
) -> jax.Array:
  """Listwise contrastive loss: softmax cross-entropy of the first positive
  against the negatives.

  Per query ``b``: ``L_b = -s_{c+}/τ + log(exp(s_{c+}/τ) + Σ_{n ∈ N_b}
  exp(s_n/τ))`` with ``c+`` the first positive and ``N_b = {c : mask_c, not
  label_c}``; mean over queries that have a positive.

  Args:
    scores: ``[B, C]`` float candidate scores.
    labels: ``[B, C]`` bool, True for positives.
    cand_mask: ``[B, C]`` bool, False for padding.
    temperature: ``τ > 0`` (static).

  Returns:
    Scalar. Under jit a NaN score gives NaN.
  """
  return _contrastive(_listwise, scores, labels, cand_mask, temperature)


def pairwise_contrastive_loss(
  scores: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  *,
  temperature: float = 1.0,
) -> jax.Array:
  """Pairwise contrastive loss: ``L_b = mean_{n ∈ N_b} softplus((s_n - s_{c+}) / τ)``.

  (Two-way cross-entropy of each (positive, negative) pair, as the reference's
  ``pairwise_contrastive_loss``); mean over queries with a positive and a
  negative.

  Args:
    scores: ``[B, C]`` float candidate scores.
    labels: ``[B, C]`` bool, True for positives.
    cand_mask: ``[B, C]`` bool, False for padding.
    temperature: ``τ > 0`` (static).

  Returns:
    Scalar. Under jit a NaN score gives NaN.
  """
  return _contrastive(_pairwise, scores, labels, cand_mask, temperature)


def combined_loss(
  logits: jax.Array,
  fp: jax.Array,
  cand_fp: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  *,
  weight: float = 0.5,
  temperature: float = 1.0,
  listwise: bool = True,
) -> jax.Array:
  """The reference's ``CombinedLoss``: ``w · contrastive(cos(σ(z), y_c)) +
  (1 - w) · IoU``.

  Args:
    logits: ``[B, F]`` float logits.
    fp: ``[B, F]`` binary targets.
    cand_fp: ``[B, C, F]`` binary candidate fingerprints.
    labels: ``[B, C]`` bool positives.
    cand_mask: ``[B, C]`` bool, False for padding.
    weight: ``w`` in [0, 1] on the contrastive term (reference default 0.5).
    temperature: ``τ > 0``.
    listwise: listwise (True) or pairwise (False) contrastive term.

  Returns:
    Scalar.
  """
  from jaxpapers.msretrieval._similarity import candidate_scores

  weight = V.check_float(weight, "weight", min_value=0.0, max_value=1.0)
  if not isinstance(listwise, bool):
    raise TypeError(f"listwise must be a bool, got {listwise!r}")
  iou = soft_iou_loss(logits, fp)
  s = candidate_scores(jax.nn.sigmoid(logits), cand_fp, cand_mask, sim="cosine")
  s = jnp.where(cand_mask, s, 0.0)
  fn = listwise_contrastive_loss if listwise else pairwise_contrastive_loss
  return (
    weight * fn(s, labels, cand_mask, temperature=temperature)
    + (1.0 - weight) * iou
  )
