"""Finite in-context readers of a masked demonstration list (one query; vmap for
many).

Every reader maps ``(x [k, d], y [k], mask [k], x_q [d], w0 [d]) -> yhat`` (a
scalar), where ``mask`` marks the demonstrations the reader sees (a prefix of
the retrieved list). The readers are frozen dataclasses so that :func:`k_sweep`
compiles one program per reader configuration; the functions ``gd_reader``,
``linesearch_gd_reader``, ``ridge_reader`` and ``prior_reader`` are the same
maps with explicit keyword arguments.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


def _check(x, y, mask, x_q, w0):
  x = V.check_array(x, "x", ndim=2, dtype="float")
  k, d = x.shape
  y = V.check_array(y, "y", shape=(k,), dtype="real")
  mask = V.check_array(mask, "mask", shape=(k,), dtype="bool")
  x_q = V.check_array(x_q, "x_q", shape=(d,), dtype="float")
  w0 = V.check_array(w0, "w0", shape=(d,), dtype="float")
  return x, y.astype(x.dtype), mask, x_q, w0


def gd_reader(
  x: ArrayLike,
  y: ArrayLike,
  mask: ArrayLike,
  x_q: ArrayLike,
  *,
  w0: ArrayLike,
  eta: float,
) -> jax.Array:
  """One gradient step of least squares from the prior (the linear-attention
  reader).

  ``w_hat = w0 + (eta / k) sum_{i: mask_i} (y_i - w0^T x_i) x_i``,  ``yhat = w_hat^T x_q``,
  with ``k = max(1, sum mask)``. The fixed step ``eta`` and the ``1/k`` make the reader finite:
  irrelevant demonstrations dilute the relevant ones (von Oswald et al. 2023 show that one
  linear self-attention layer implements this step).

  Args:
    x: [k, d] float demonstrations.
    y: [k] real labels.
    mask: [k] bool, the demonstrations the reader sees.
    x_q: [d] float query.
    w0: [d] float prior weights.
    eta: step size (static, finite).

  Returns:
    float scalar ``yhat``; with an empty mask, the prior prediction
    ``w0^T x_q``.
  """
  x, y, mask, x_q, w0 = _check(x, y, mask, x_q, w0)
  eta = V.check_float(eta, "eta")
  m = mask.astype(x.dtype)
  k = jnp.maximum(m.sum(), 1.0)
  r = (y - x @ w0) * m  # [k]
  w = w0 + (eta / k) * (r @ x)
  return w @ x_q


def linesearch_gd_reader(
  x: ArrayLike, y: ArrayLike, mask: ArrayLike, x_q: ArrayLike, *, w0: ArrayLike
) -> jax.Array:
  """One gradient step from the prior with the exact line-search step (no fixed
  step size).

  With ``S = (1/k) sum_{i: mask_i} x_i x_i^T`` and the averaged gradient ``g =
  (1/k) sum_{i: mask_i} (y_i - w0^T x_i) x_i``, the step that minimises the
  context's squared loss along ``g`` is ``eta_k = g^T g / (g^T S g)``, and

  ``w_hat = w0 + eta_k g``,  ``yhat = w_hat^T x_q``.

  ``eta_k`` is invariant to rescaling the context (it carries no ``1/k`` and no
  step hyper-parameter): this is the one-step reader whose step is normalised by
  the context it reads, so that a longer context does not shrink or inflate the
  step. On a context whose second moment is isotropic, ``S = c I``, one step
  recovers the least-squares solution.

  Args:
    x: [k, d] float demonstrations.
    y: [k] real labels.
    mask: [k] bool, the demonstrations the reader sees.
    x_q: [d] float query.
    w0: [d] float prior weights.

  Returns:
    float scalar ``yhat``; with an empty mask or a zero gradient, the prior
    prediction ``w0^T x_q`` (``eta_k`` is taken as 0 where ``g^T S g = 0``).
  """
  x, y, mask, x_q, w0 = _check(x, y, mask, x_q, w0)
  m = mask.astype(x.dtype)
  k = jnp.maximum(m.sum(), 1.0)
  r = (y - x @ w0) * m  # [k]
  g = (r @ x) / k  # [d]
  xg = x @ g  # [k]
  curv = (m * xg * xg).sum() / k  # g^T S g
  safe = jnp.where(curv > 0, curv, 1.0)
  eta = jnp.where(curv > 0, (g @ g) / safe, 0.0)
  return (w0 + eta * g) @ x_q


def ridge_reader(
  x: ArrayLike,
  y: ArrayLike,
  mask: ArrayLike,
  x_q: ArrayLike,
  *,
  w0: ArrayLike,
  lam: float,
) -> jax.Array:
  """Ridge regression on the visible demonstrations, shrunk towards the prior
  ``w0``.

  ``w_hat = w0 + (X^T M X + lam I)^{-1} X^T M (y - X w0)``,  ``yhat = w_hat^T x_q``, with
  ``M = diag(mask)``. With ``w0 = 0`` this is the spec's ``(X^T X + lam I)^{-1} X^T y``. It has no
  1/k dilution: the capacity-unlimited reference reader.

  Args:
    x: [k, d] float demonstrations.
    y: [k] real labels.
    mask: [k] bool, the demonstrations the reader sees.
    x_q: [d] float query.
    w0: [d] float prior weights.
    lam: ridge strength (static, > 0).

  Returns:
    float scalar ``yhat``.
  """
  x, y, mask, x_q, w0 = _check(x, y, mask, x_q, w0)
  lam = V.check_float(lam, "lam", min_value=0.0, min_inclusive=False)
  m = mask.astype(x.dtype)
  xm = x * m[:, None]
  g = xm.T @ x + lam * jnp.eye(x.shape[1], dtype=x.dtype)
  w = w0 + jnp.linalg.solve(g, xm.T @ (y - x @ w0))
  return w @ x_q


def prior_reader(
  x: ArrayLike, y: ArrayLike, mask: ArrayLike, x_q: ArrayLike, *, w0: ArrayLike
) -> jax.Array:
  """The input-independent-context baseline: ``yhat = w0^T x_q`` (ignores the
  demonstrations).

  Args:
    x: [k, d] float demonstrations (ignored; shape-checked).
    y: [k] real labels (ignored; shape-checked).
    mask: [k] bool (ignored; shape-checked).
    x_q: [d] float query.
    w0: [d] float prior weights.

  Returns:
    float scalar ``w0^T x_q``.
  """
  x, y, mask, x_q, w0 = _check(x, y, mask, x_q, w0)
  return w0 @ x_q


@dataclasses.dataclass(frozen=True)
class GDReader:
  """:func:`gd_reader` with a fixed step ``eta`` (hashable: one compile per
  ``eta``).

  Args:
    eta: the step size (finite).
  """

  eta: float

  def __post_init__(self):
    V.check_float(self.eta, "GDReader.eta")

  def __call__(self, x, y, mask, x_q, w0):
    return gd_reader(x, y, mask, x_q, w0=w0, eta=self.eta)


@dataclasses.dataclass(frozen=True)
class LineSearchGDReader:
  """:func:`linesearch_gd_reader` (hashable; no hyper-parameter)."""

  def __call__(self, x, y, mask, x_q, w0):
    return linesearch_gd_reader(x, y, mask, x_q, w0=w0)


@dataclasses.dataclass(frozen=True)
class RidgeReader:
  """:func:`ridge_reader` with a fixed ``lam`` (hashable).

  Args:
    lam: the ridge strength (> 0).
  """

  lam: float

  def __post_init__(self):
    V.check_float(
      self.lam, "RidgeReader.lam", min_value=0.0, min_inclusive=False
    )

  def __call__(self, x, y, mask, x_q, w0):
    return ridge_reader(x, y, mask, x_q, w0=w0, lam=self.lam)


@dataclasses.dataclass(frozen=True)
class PriorReader:
  """:func:`prior_reader` (hashable)."""

  def __call__(self, x, y, mask, x_q, w0):
    return prior_reader(x, y, mask, x_q, w0=w0)
