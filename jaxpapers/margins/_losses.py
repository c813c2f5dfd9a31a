"""Training losses on free embeddings: sigmoid (SigLIP-style), InfoNCE and a
direct margin.

All losses take raw ``U [N, d]``, ``V [n, d]`` and normalise rows inside with
the safe norm ``u / sqrt(||u||^2 + 1e-12)`` (finite gradients at zero rows),
then work on the cosine scores ``S = U V^T``. All reductions are **means**
(SigLIP implementations often sum over pairs and divide by the batch size
instead, which rescales the loss by ``n``; see google-research/big_vision#115).

References:
  arXiv:2605.23556 (sigmoid vs InfoNCE for large margins); Zhai et al., SigLIP,
  arXiv:2303.15343; van den Oord et al., arXiv:1807.03748 (InfoNCE).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.margins import _validation as val

# The default log-temperature: a learned scale initialised at t = 10 (a Python
# float, so importing this module starts no JAX backend).
LOG_10 = math.log(10.0)

INFONCE_VARIANTS = ("all", "exclude_other_positives")


def _scores(U, V):
  return val.safe_normalize_rows(U) @ val.safe_normalize_rows(V).T  # [N, n]


def sigmoid_loss(
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  *,
  log_temperature: ArrayLike = LOG_10,
  bias: ArrayLike = 0.0,
) -> jax.Array:
  r"""Pairwise sigmoid loss.

  .. math:: L = \frac{1}{N n} \sum_{j, i} \operatorname{softplus}\big(-Y_{ji} (t S_{ji} + b)\big),
            \qquad t = e^{\text{log\_temperature}},\ Y = 2A - 1.

  The implied threshold on the scores is ``-b / t`` (0 when ``b = 0``). Whether
  ``t`` and ``b`` are learned is the caller's choice
  (:func:`fit_free_embeddings` learns both by default, from ``t = 10`` and
  ``b = log(p / (1 - p))``, ``p = mean(A)``; cf. mlfoundations/open_clip#650).

  Args:
    U: ``[N, d]`` raw query embeddings.
    V: ``[n, d]`` raw document embeddings.
    A: ``[N, n]`` binary relevance.
    log_temperature: scalar ``log t``.
    bias: scalar ``b``.

  Returns:
    Scalar mean loss.

  Bad values: a non-binary ``A`` (e.g. soft labels) raises ``ValueError``
  eagerly and gives NaN under ``jax.jit`` (wrap with
  ``jax.experimental.checkify.checkify`` to get the error); the same holds for
  :func:`infonce_loss` and :func:`margin_loss`.
  """
  U, V, A, ok = val.check_embeddings_ok(U, V, A)
  Y = jnp.where(A.astype(bool), 1.0, -1.0)
  S = _scores(U, V)
  return val.poison(
    jnp.mean(jax.nn.softplus(-Y * (jnp.exp(log_temperature) * S + bias))), ok
  )


def _infonce_rows(logits, A, variant):
  """Mean over rows with >= 1 positive of -(1/|P_j|) sum_{i in P_j} log p_ji."""
  A = A.astype(bool)
  if variant == "all":
    log_p = jax.nn.log_softmax(logits, axis=-1)
  else:  # exclude_other_positives: denominator {i} U negatives
    neg_lse = jax.nn.logsumexp(
      jnp.where(A, -jnp.inf, logits), axis=-1, keepdims=True
    )
    log_p = logits - jnp.logaddexp(logits, neg_lse)
  num_pos = jnp.sum(A, axis=-1)
  per_row = -jnp.sum(jnp.where(A, log_p, 0.0), axis=-1) / jnp.maximum(
    num_pos, 1
  )
  has_pos = num_pos > 0
  return jnp.sum(jnp.where(has_pos, per_row, 0.0)) / jnp.maximum(
    jnp.sum(has_pos), 1
  )


def infonce_loss(
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  *,
  log_temperature: ArrayLike = LOG_10,
  variant: str = "all",
  symmetric: bool = False,
) -> jax.Array:
  r"""Multi-positive InfoNCE.

  ``variant='all'`` (each positive competes with every document):

  .. math:: L = -\frac{1}{|J|} \sum_{j \in J} \frac{1}{|P_j|} \sum_{i \in P_j}
            \log \frac{e^{t S_{ji}}}{\sum_{i'=1}^{n} e^{t S_{ji'}}}

  ``variant='exclude_other_positives'``: the denominator for positive ``i`` is
  ``e^{t S_ji} + sum_{i' not in P_j} e^{t S_ji'}`` (other positives removed).
  ``J`` is the set of rows with at least one positive. With ``symmetric=True``
  the same loss on the transposed problem (documents retrieving queries) is
  averaged in. The loss only sees score differences within a row, so it is
  invariant to adding a constant to a query's scores: it never pins the absolute
  threshold, which is why it can leave ``m_0 < 0`` while ``m_q > 0``.

  Args:
    U: ``[N, d]`` raw query embeddings.
    V: ``[n, d]`` raw document embeddings.
    A: ``[N, n]`` binary relevance.
    log_temperature: scalar ``log t``.
    variant: ``'all'`` or ``'exclude_other_positives'``.
    symmetric: also add the document-to-query direction.

  Returns:
    Scalar mean loss (0 when no row has a positive).
  """
  if variant not in INFONCE_VARIANTS:
    raise ValueError(
      f"variant must be one of {INFONCE_VARIANTS}, got {variant!r}."
    )
  U, V, A, ok = val.check_embeddings_ok(U, V, A)
  logits = jnp.exp(log_temperature) * _scores(U, V)
  loss = _infonce_rows(logits, A, variant)
  if symmetric:
    loss = 0.5 * (loss + _infonce_rows(logits.T, A.T, variant))
  return val.poison(loss, ok)


def margin_loss(
  U: ArrayLike,
  V: ArrayLike,
  A: ArrayLike,
  *,
  beta: ArrayLike = 50.0,
  hinge_target: ArrayLike | None = None,
) -> jax.Array:
  r"""Direct margin objective: the negated soft-min of ``Y * S``.

  .. math:: L = \frac{1}{\beta} \log \sum_{j, i} e^{-\beta Y_{ji} S_{ji}}
            \;\ge\; -m_0, \qquad L \to -m_0 \text{ as } \beta \to \infty,

  so minimising ``L`` maximises a smooth lower bound on the paper's margin
  ``m_0`` (``-L >= m_0 - log(N n) / beta``). With ``hinge_target = m`` the loss
  is instead ``mean relu(m - Y * S)``. ``beta`` must be > 0 (checked when
  concrete).

  Args:
    U: ``[N, d]`` raw query embeddings.
    V: ``[n, d]`` raw document embeddings.
    A: ``[N, n]`` binary relevance.
    beta: soft-min sharpness ``β > 0``.
    hinge_target: target margin ``m`` of the hinge form; None uses the soft-min.

  Returns:
    Scalar loss.
  """
  U, V, A, ok = val.check_embeddings_ok(U, V, A)
  if val.is_concrete(beta) and not float(np.asarray(beta)) > 0:
    raise ValueError(f"beta must be > 0, got {beta!r}.")
  Y = jnp.where(A.astype(bool), 1.0, -1.0)
  YS = Y * _scores(U, V)
  if hinge_target is not None:
    return val.poison(jnp.mean(jax.nn.relu(hinge_target - YS)), ok)
  return val.poison(jax.nn.logsumexp(-(beta * YS)) / beta, ok)
