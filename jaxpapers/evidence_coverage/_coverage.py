"""Effective evidence coverage, reader-facing ambiguity and the budget boundary
k*.

Reconstruction (the paper gives the idea, "retrieval is useful only while
aligned evidence grows faster than reader-facing ambiguity", not the formulas).
With the unit query direction ``xhat_q = x_q / |x_q|`` and the per-item
alignment

  ``a_i(q) = (xhat_q^T x_i)^2 / (xhat_q^T M_t xhat_q)``,  ``M_t = (1/Q) sum_q x_q x_q^T``

(the target second moment along the query direction, i.e.
``E_target[(xhat_q^T x)^2]``):

  ``C_eff(k) = (1/k) sum_{i in top-k ∩ Rel(q)} a_i``                                 (aligned evidence)
  ``A(k)     = (1/k) sum_{i in top-k \\ Rel(q)} a_i |w_i - w_q|^2 / E|w - w'|^2
               + kappa max(0, k - L_train) / L_train``                              (ambiguity)
  ``Delta(k) = C_eff(k) - A(k)``                                                     (margin)

``E|w - w'|^2 = 2 tr Cov_pool(w)``. For the one-step GD reader ``yhat - w0^T
x_q = eta x_q^T [S_rel (w_q - w0) + S_irr (w_irr - w0)] + noise`` with the
(1/k)-scaled second moments S of the relevant and irrelevant retrieved inputs:
C_eff measures the first term along the query direction, A the interference of
the second.

Budget boundary. ``C_eff`` and ``A`` are per-item averages, so ``Delta(k)`` only
falls as purity falls and its argmax sits at the smallest k. "Aligned evidence
grows faster than ambiguity" is a statement about increments: the *cumulative*
margin ``k Delta(k) = sum_{i<=k} (aligned_i - ambiguous_i)`` grows while the
next item brings more aligned evidence than ambiguity, so the predicted boundary
is ``k* = argmax_k k Delta(k)`` over the budget grid (reconstruction; the spec's
``argmax_k Delta(k)`` is available as ``rule='average'``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from jaxpapers.core import validation as V
from jaxpapers.evidence_coverage._data import ICLData, check_data
from jaxpapers.evidence_coverage._retrieval import (
  _relevant,
  check_idx,
  check_ks,
)


@functools.partial(
  jax.jit, static_argnames=("ks", "l_train", "kappa", "per_query")
)
def _coverage(idx, data, ks, l_train, kappa, per_query):
  qx = data.q_x
  # [Q, d]
  xhat = qx / jnp.maximum(jnp.linalg.norm(qx, axis=-1, keepdims=True), 1e-30)
  m_t = qx.T @ qx / qx.shape[0]  # [d, d]
  norm = jnp.einsum("qd,de,qe->q", xhat, m_t, xhat)  # [Q]
  xi = data.pool_x[idx]  # [Q, K, d]
  a = jnp.einsum("qd,qkd->qk", xhat, xi) ** 2 / norm[:, None]  # [Q, K]
  pw = data.pool_w
  w_spread = 2.0 * jnp.sum(jnp.var(pw, axis=0))
  dw = jnp.sum((pw[idx] - data.q_w[:, None, :]) ** 2, -1) / w_spread  # [Q, K]
  rel = _relevant(idx, data)
  at = jnp.asarray(ks) - 1
  kf = jnp.asarray(ks, jnp.float32)
  c_eff = jnp.cumsum(jnp.where(rel, a, 0.0), 1)[:, at] / kf  # [Q, n_k]
  amb = jnp.cumsum(jnp.where(rel, 0.0, a * dw), 1)[:, at] / kf
  if l_train is not None:
    amb = amb + kappa * jnp.maximum(0.0, kf - l_train) / l_train
  if not per_query:
    c_eff, amb = c_eff.mean(0), amb.mean(0)
  return c_eff, amb, c_eff - amb


def effective_coverage(
  idx: jax.Array,
  data: ICLData,
  ks: Sequence[int],
  *,
  l_train: int | None = None,
  kappa: float = 1.0,
  per_query: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Aligned evidence ``C_eff(k)``, ambiguity ``A(k)`` and margin ``Delta(k)``
  (module docstring).

  Args:
    idx: int [Q, k_max] retrieved pool indices, best first.
    data: the :class:`ICLData` (its query tasks ``q_w`` enter the ambiguity).
    ks: strictly increasing static budgets ``<= k_max``.
    l_train: the reader's training context length (None: no length term, the
      closed-form readers).
    kappa: weight of the length term ``kappa max(0, k - L_train) / L_train``.
    per_query: return ``[Q, len(ks)]`` arrays instead of the means over queries.

  Returns:
    ``(C_eff, A, Delta)``, each float [len(ks)] (or [Q, len(ks)]).

  Under jit: an index outside ``[0, P)`` poisons every output (NaN).
  """
  data = check_data(data)
  idx, ok = check_idx(idx, data)
  ks = check_ks(ks, k_max=idx.shape[1])
  if l_train is not None:
    l_train = V.check_int(l_train, "l_train", min_value=1)
  kappa = V.check_float(kappa, "kappa", min_value=0.0)
  if not isinstance(per_query, bool):
    raise TypeError(f"per_query must be a bool, got {type(per_query).__name__}")
  return V.poison(_coverage(idx, data, ks, l_train, kappa, per_query), ok)


def budget_boundary(
  ks: Sequence[int], delta: npt.ArrayLike, *, rule: str = ("cumulative")
) -> int:
  """The predicted budget boundary k* on the grid ``ks`` (host-side).

  ``rule='cumulative'``: ``k* = argmax_k k Delta(k)`` (the budget where the
  marginal item stops adding more aligned evidence than ambiguity);
  ``rule='average'``: ``argmax_k Delta(k)``. Ties go to the smallest k.

  Args:
    ks: strictly increasing budgets.
    delta: float [len(ks)] the margin from :func:`effective_coverage`.
    rule: ``'cumulative'`` or ``'average'``.

  Returns:
    k* (an element of ``ks``).
  """
  ks = check_ks(ks)
  d = np.asarray(delta, np.float64)
  if d.shape != (len(ks),):
    raise ValueError(
      f"delta must have shape ({len(ks)},) (one value per k), got {d.shape}"
    )
  if not np.all(np.isfinite(d)):
    raise ValueError("delta must be finite (no NaN or inf)")
  if rule not in ("cumulative", "average"):
    raise ValueError(f"rule must be 'cumulative' or 'average', got {rule!r}")
  score = d * np.asarray(ks, np.float64) if rule == "cumulative" else d
  return int(ks[int(np.argmax(score))])
