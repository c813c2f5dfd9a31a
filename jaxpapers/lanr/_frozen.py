r"""Retrieval on the frozen hidden states without trained heads (the baselines
of the heads).

Two label-free scorers of a [PRED] state z against a [DOC] state h, over the
same frozen LM states the trained projections read:

* the **untrained cosine** ``cos(z, h) = zᵀh / (|z| |h|)``;
* the **whitened cosine** ``cos((z − μ_q) W, (h − μ_d) W)`` (whitening as in
  BERT-whitening, Su et al. 2021): each side is centred with its own mean
  (queries: states of training contexts; documents: the index), and one PCA
  whitening ``W = U_k Λ_k^{−1/2}`` (the top k eigenpairs of the pooled centred
  covariance) maps both into one k-dimensional space where every kept direction
  has unit variance. Whitening removes the few residual-stream directions of
  very large variance that dominate a raw cosine; keeping k below the number of
  states keeps ``W`` finite.

Neither uses a retrieval label: a trained head that does not beat them has
learned nothing the frozen states do not already give.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def cosine_scores(q: jax.Array, d: jax.Array) -> jax.Array:
  """``cos(q_b, d_n)`` for every pair of rows.

  A zero row has cosine 0 with everything.

  Args:
    q: float [B, H] query states.
    d: float [N, H] document states.

  Returns:
    [B, N] cosines, float32 or wider.
  """
  q = V.check_array(q, "q", ndim=2, dtype="float", nonempty=True)
  d = V.check_array(d, "d", ndim=2, dtype="float", nonempty=True)
  if q.shape[1] != d.shape[1]:
    raise ValueError(
      f"q and d must share the feature width H, got {q.shape} and {d.shape}"
    )
  dt = jnp.promote_types(jnp.promote_types(q.dtype, d.dtype), jnp.float32)

  def unit(x):
    x = x.astype(dt)
    n2 = jnp.sum(x * x, -1, keepdims=True)
    return jnp.where(n2 > 0, x * jax.lax.rsqrt(jnp.where(n2 > 0, n2, 1.0)), 0.0)

  return unit(q) @ unit(d).T


def fit_whitening(
  x: jax.Array, *, dim: int | None = None
) -> dict[str, jax.Array]:
  """PCA whitening of states x [M, H]: their mean and ``W = U_k Λ_k^{−1/2}``
  [H, k].

  ``Λ_k``, ``U_k``: the k largest eigenvalues of the covariance
  ``(1/M) Σ (x − μ)(x − μ)ᵀ`` and their eigenvectors; whitened states
  ``(x − μ) W`` have identity covariance.

  Args:
    x: float [M, H], M >= 2 states.
    dim: k, the directions kept (default ``min(H, M − 1)``, the covariance's
      largest possible rank); 1 <= k <= min(H, M − 1).

  Returns:
    ``{'mean': [H], 'w': [H, k]}``, float32 or wider; apply with :func:`whiten`.
  """
  x = V.check_array(x, "x", ndim=2, dtype="float")
  M, H = x.shape
  if M < 2:
    raise ValueError(
      f"x must hold at least 2 states to estimate a covariance, got {x.shape}"
    )
  k = min(H, M - 1) if dim is None else V.check_int(dim, "dim", min_value=1)
  if k > min(H, M - 1):
    raise ValueError(
      f"dim must be <= min(H, M - 1) = {min(H, M - 1)} for x of shape {x.shape}"
    )
  x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
  mu = x.mean(0)
  xc = x - mu
  lam, u = jnp.linalg.eigh(xc.T @ xc / M)  # ascending
  lam, u = lam[::-1][:k], u[:, ::-1][:, :k]
  floor = jnp.finfo(x.dtype).eps * jnp.maximum(lam[0], 1e-30)
  return {"mean": mu, "w": u * jax.lax.rsqrt(jnp.maximum(lam, floor))}


def whiten(stats: dict[str, jax.Array], x: jax.Array) -> jax.Array:
  """``(x − mean) W``: states in the whitened coordinates of
  :func:`fit_whitening`.

  Args:
    stats: ``{'mean': [H], 'w': [H, k]}`` from :func:`fit_whitening`.
    x: float [..., H] states.

  Returns:
    [..., k] whitened states, in the dtype of ``stats['w']``.
  """
  if not isinstance(stats, dict) or "mean" not in stats or "w" not in stats:
    raise TypeError("stats must be the dict of fit_whitening ({'mean', 'w'})")
  H = stats["w"].shape[0]
  x = V.check_array(x, "x", dtype="float")
  if x.ndim < 1 or x.shape[-1] != H:
    raise ValueError(f"x must have shape [..., H] with H = {H}, got {x.shape}")
  return (x.astype(stats["w"].dtype) - stats["mean"]) @ stats["w"]


def frozen_scorers(z_train: jax.Array, doc_h: jax.Array, *, dim: int) -> dict:
  """Both label-free scorers of the module docstring, fitted on the frozen
  states.

  The whitened cosine centres queries by the training contexts' mean ``μ_q`` and
  documents by the index's mean ``μ_d``, fits one PCA whitening
  (:func:`fit_whitening`) on both centred sets stacked, and compares ``cos((z −
  μ_q) W, (h − μ_d) W)``.

  Args:
    z_train: float [M, H] [PRED] states of training contexts (queries; only
      their mean and covariance are used, no label).
    doc_h: float [N, H] [DOC] states of the index.
    dim: k, the whitened directions kept.

  Returns:
    ``{"untrained_cosine", "whitened_cosine"}``: each ``z [B, H] -> scores [B, N]``.
  """
  z_train = V.check_array(z_train, "z_train", ndim=2, dtype="float")
  doc_h = V.check_array(doc_h, "doc_h", ndim=2, dtype="float")
  if z_train.shape[1] != doc_h.shape[1]:
    raise ValueError(
      f"z_train {z_train.shape} and doc_h {doc_h.shape} must share H"
    )
  mq, md = z_train.mean(0), doc_h.mean(0)
  st = fit_whitening(jnp.concatenate([z_train - mq, doc_h - md]), dim=dim)
  dw = whiten(st, doc_h - md)
  return {
    "untrained_cosine": lambda z: cosine_scores(z, doc_h),
    "whitened_cosine": lambda z: cosine_scores(whiten(st, z - mq), dw),
  }
