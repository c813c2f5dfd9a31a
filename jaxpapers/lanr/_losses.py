"""LAnR objectives and scores: multi-positive InfoNCE, answer entropy, control
labels and loss.

Reconstructions (the paper gives the mechanism, not the losses): L_ret is
InfoNCE with temperature tau_r over the document index, L_ctl is a binary
cross-entropy on the control head's logit, with labels from answer entropy (the
arXiv abstract's motivation) or an oracle.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

_NEG = -1e30


def _f32(x):
  return jnp.asarray(x).astype(
    jnp.promote_types(jnp.result_type(x), jnp.float32)
  )


def info_nce(
  e_q: jax.Array,
  e_d: jax.Array,
  pos_mask: jax.Array,
  *,
  tau: float,
  cand_mask: jax.Array | None = None,
) -> jax.Array:
  r"""Multi-positive InfoNCE over a candidate set (L_ret).

  For query b with positives P_b and candidates C_b (P_b ⊆ C_b),

    ℓ_b = −log Σ_{m∈P_b} exp(⟨e_q^b, e_d^m⟩/τ) + log Σ_{m∈C_b} exp(⟨e_q^b, e_d^m⟩/τ),

  and the loss is the mean of ℓ_b over the queries with at least one positive (a
  query with none contributes nothing; with no such query the loss is 0).

  Args:
    e_q: float [B, D] query vectors (unit norm in LAnR; not required here).
    e_d: float [M, D] document vectors.
    pos_mask: bool or {0, 1} [B, M], the positives of each query.
    tau: temperature τ_r > 0 (static).
    cand_mask: optional bool [B, M]; False removes a candidate (e.g.
      already-retrieved documents). Positives are always candidates.

  Returns:
    float [] loss.

  Under jit: a pos_mask entry outside {0, 1} makes the loss NaN.
  """
  e_q = V.check_array(e_q, "e_q", ndim=2, dtype="float")
  e_d = V.check_array(e_d, "e_d", ndim=2, dtype="float")
  if e_q.shape[1] != e_d.shape[1]:
    raise ValueError(
      f"e_q [B, D] and e_d [M, D] must share D, got {e_q.shape} and {e_d.shape}"
    )
  shape = (e_q.shape[0], e_d.shape[0])
  pos_mask = V.check_array(pos_mask, "pos_mask", shape=shape, dtype="real")
  tau = V.check_float(tau, "tau", min_value=0.0, min_inclusive=False)
  ok = V.check_values(
    jnp.all((pos_mask == 0) | (pos_mask == 1)),
    "pos_mask must hold only 0/1 (or bool) entries",
  )
  pos = pos_mask.astype(bool)
  if cand_mask is None:
    cand = jnp.ones(shape, bool)
  else:
    cand = V.check_array(
      cand_mask, "cand_mask", shape=shape, dtype="intbool"
    ).astype(bool)
  cand = cand | pos
  s = jnp.einsum("bd,md->bm", _f32(e_q), _f32(e_d)) / tau
  lse_all = jax.nn.logsumexp(jnp.where(cand, s, _NEG), axis=1)
  lse_pos = jax.nn.logsumexp(jnp.where(pos, s, _NEG), axis=1)
  has = pos.any(axis=1)
  per = jnp.where(has, lse_all - lse_pos, 0.0)
  loss = per.sum() / jnp.maximum(has.sum(), 1)
  return V.poison(loss, ok)


def answer_entropy(logits: jax.Array, answer_mask: jax.Array) -> jax.Array:
  r"""Mean predictive entropy over the answer tokens (H̄_t of the control
  labels).

    H̄ = (1/|A|) Σ_{i∈A} H(p_θ(· | c, a_{<i})),   H(p) = −Σ_v p_v log p_v,

  with the teacher-forced distributions ``logits[b, i]`` that predict answer
  token i. A row with no answer token gets 0.

  Args:
    logits: float [B, L, V], logits[b, i] predicts answer token i.
    answer_mask: bool [B, L], True at real answer tokens.

  Returns:
    float32 (or float64) [B] mean entropy in nats.
  """
  logits = V.check_array(logits, "logits", ndim=3, dtype="float")
  answer_mask = V.check_array(
    answer_mask, "answer_mask", shape=logits.shape[:2], dtype="intbool"
  ).astype(bool)
  lp = jax.nn.log_softmax(_f32(logits), axis=-1)
  h = -jnp.sum(jnp.exp(lp) * lp, axis=-1)  # [B, L]
  n = answer_mask.sum(axis=1)
  return jnp.where(answer_mask, h, 0.0).sum(axis=1) / jnp.maximum(n, 1)


def entropy_labels(h: jax.Array, eps: float) -> jax.Array:
  r"""Sufficiency labels from answer entropy, y = 1[H̄ < ε] (rule (a) of the
  reconstruction).

  Args:
    h: float [...] mean answer entropies H̄ (nats).
    eps: threshold ε (static float), e.g. the median of H̄ on calibration
      contexts.

  Returns:
    float [...] labels in {0, 1}.

  Under jit: a NaN entropy gives a NaN label (never a silent 0).
  """
  h = V.check_array(h, "h", dtype="float")
  eps = V.check_float(eps, "eps")
  ok = V.check_values(~jnp.any(jnp.isnan(h)), "h must not contain NaN")
  return V.poison((h < eps).astype(_f32(h).dtype), ok)


def entropy_threshold_stop(h: jax.Array, eps: float) -> jax.Array:
  """The FLARE-like rule without a learned head: stop when the entropy is below
  ε.

  Returns a stop probability in {0, 1} (the same value as `entropy_labels`), so
  it plugs into `stop_hops` like a control head's σ(logit).

  Args:
    h: float [..., T] entropies of the prediction at each hop's [PRED] position.
    eps: threshold ε (static).

  Returns:
    float [..., T] in {0, 1}.
  """
  return entropy_labels(h, eps)


def control_loss(
  logits: jax.Array, labels: jax.Array, valid: jax.Array | None = None
) -> jax.Array:
  r"""Binary cross-entropy of the control head (L_ctl), mean over valid entries.

    L_ctl = mean_{valid} [ softplus(ℓ) − y ℓ ],  s = σ(ℓ).

  Args:
    logits: float [...] control logits ℓ.
    labels: [...] targets y in [0, 1] (same shape).
    valid: optional bool [...]; False drops an entry. With no valid entry the
      loss is 0.

  Returns:
    float [] loss.

  Under jit: a label outside [0, 1] makes the loss NaN.
  """
  logits = V.check_array(logits, "logits", dtype="float")
  labels = V.check_array(labels, "labels", shape=logits.shape, dtype="real")
  ok = V.check_values(
    jnp.all((labels >= 0) & (labels <= 1)), "labels must lie in [0, 1]"
  )
  if valid is None:
    valid = jnp.ones(logits.shape, bool)
  valid = V.check_array(
    valid, "valid", shape=logits.shape, dtype="intbool"
  ).astype(bool)
  x = _f32(logits)
  per = jax.nn.softplus(x) - labels.astype(x.dtype) * x
  loss = jnp.where(valid, per, 0.0).sum() / jnp.maximum(valid.sum(), 1)
  return V.poison(loss, ok)


def auroc(scores: jax.Array, labels: jax.Array) -> jax.Array:
  r"""Area under the ROC curve, P(score_pos > score_neg) + ½ P(tie)
  (Mann–Whitney).

  Used for the paper's motivating observation: −H̄ as a predictor of retrieval
  sufficiency.

  Args:
    scores: float [N].
    labels: bool or {0, 1} [N]; both classes must be present (else NaN).

  Returns:
    float [] in [0, 1]; NaN when a class is missing.
  """
  scores = V.check_array(scores, "scores", ndim=1, dtype="real", nonempty=True)
  labels = V.check_array(labels, "labels", shape=scores.shape, dtype="real")
  ok = V.check_values(
    jnp.all((labels == 0) | (labels == 1)),
    "labels must hold only 0/1 (or bool) entries",
  )
  y = labels.astype(bool)
  s = _f32(scores)
  gt = (s[:, None] > s[None, :]).astype(s.dtype)
  eq = (s[:, None] == s[None, :]).astype(s.dtype)
  pair = (y[:, None] & ~y[None, :]).astype(s.dtype)
  n = pair.sum()
  a = jnp.where(
    n > 0, ((gt + 0.5 * eq) * pair).sum() / jnp.maximum(n, 1), jnp.nan
  )
  return V.poison(a, ok)
