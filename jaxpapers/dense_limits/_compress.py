r"""Compression of a strongly dense MLP: each hidden-to-hidden layer as a few
cut terms.

With the cut decomposition :math:`W^{(l)} \approx \sum_{r \le K} a_r 1_{S_r}
1_{T_r}^\top` (:func:`fk_decompose`), the normalised map becomes

.. math:: \frac{1}{n} W h \approx \sum_r a_r 1_{S_r}\, u_r, \qquad
   u_r = \frac{1}{n} \sum_{j \in T_r} h_j ,

so a layer communicates ``K`` scalars and costs :math:`O(K(n_{in} + n_{out}))`
instead of :math:`O(n_{in} n_{out})`; its neurons fall into at most :math:`2^K`
types (cells of :math:`S_1..S_K`). The input and output layers (fixed
:math:`d_0`, :math:`d_L`, cost linear in the width) stay dense. For comparison
the same factored form ``W^T ~ P^T diag(q) Q`` is filled by a truncated SVD
(equal forward cost) or by ``K`` random cut terms with least-squares
coefficients.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.dense_limits._checks import check_key
from jaxpapers.dense_limits._models import StronglyDenseMLP
from jaxpapers.dense_limits._regularity import _fk_jit

METHODS = ("cut", "svd", "random")


class FactoredLayer(NamedTuple):
  """``pre = scale * ((h @ t.T) * q) @ p + bias``: ``W^T ~ p.T @ diag(q) @ t``.

  Attributes:
    p: ``[K, n_out]`` (0/1 row sets ``S_r`` for cut terms).
    q: ``[K]`` coefficients ``a_r``.
    t: ``[K, n_in]`` (0/1 column sets ``T_r`` for cut terms).
    bias: ``[n_out]``.
    rel_error: ``[]`` ``||W - approx||_F / ||W||_F``.
  """

  p: jax.Array
  q: jax.Array
  t: jax.Array
  bias: jax.Array
  rel_error: jax.Array


class CompressedMLP(NamedTuple):
  """A strongly dense MLP with factored hidden-to-hidden layers.

  Attributes:
    first: ``(kernel [d_0, n_1], bias [n_1])``, dense.
    mids: one :class:`FactoredLayer` per hidden-to-hidden layer.
    last: ``(kernel [n_{L-1}, d_L], bias [d_L])``, dense.
    scales: aggregation factor per layer (static floats).
  """

  first: tuple
  mids: tuple
  last: tuple
  scales: tuple


@functools.partial(jax.jit, static_argnums=(1, 3, 4, 5))
def _factor(w_t, k, key, method, restarts, iters):
  """``w_t [n_out, n_in] ~ p.T diag(q) t``; returns ``(p, q, t, relative Frobenius error)``."""
  p, q, t = _factor_terms(w_t, k, key, method, restarts, iters)
  approx = jnp.einsum("km,k,kn->mn", p, q, t)
  rel = jnp.linalg.norm(w_t - approx) / jnp.maximum(jnp.linalg.norm(w_t), 1e-30)
  return p, q, t, rel


def _factor_terms(w_t, k, key, method, restarts, iters):
  if method == "cut":
    dec, _ = _fk_jit(w_t, k, key, restarts, iters, False)
    return dec.s, dec.a, dec.t
  if method == "svd":
    u, sv, vt = jnp.linalg.svd(w_t, full_matrices=False)
    kk = min(k, sv.shape[0])
    p = jnp.zeros((k, w_t.shape[0])).at[:kk].set(u[:, :kk].T)
    q = jnp.zeros((k,)).at[:kk].set(sv[:kk])
    t = jnp.zeros((k, w_t.shape[1])).at[:kk].set(vt[:kk])
    return p, q, t
  ks, kt = jax.random.split(key)
  p = jax.random.bernoulli(ks, 0.5, (k, w_t.shape[0])).astype(w_t.dtype)
  t = jax.random.bernoulli(kt, 0.5, (k, w_t.shape[1])).astype(w_t.dtype)
  gram = (p @ p.T) * (t @ t.T)  # [K, K]: <s_r t_r^T, s_r' t_r'^T>_F
  rhs = jnp.einsum("km,mn,kn->k", p, w_t, t)
  q = jnp.linalg.lstsq(gram, rhs)[0]
  return p, q, t


def compress_mlp(
  model: StronglyDenseMLP,
  k: int,
  key: jax.Array,
  *,
  method: str = "cut",
  restarts: int = 32,
  iters: int = 10,
) -> CompressedMLP:
  """Factors every hidden-to-hidden layer of ``model`` into ``k`` terms.

  Args:
    model: a :class:`StronglyDenseMLP` (at least two hidden layers to have
      anything to compress).
    k: number of terms ``K`` per layer.
    key: typed PRNG key (cut oracle starts, random terms).
    method: ``'cut'`` (Frieze–Kannan, :func:`fk_decompose`), ``'svd'``
      (rank-``K`` truncated SVD, equal forward cost) or ``'random'`` (``K``
      random cut terms, least-squares coefficients).
    restarts, iters: the cut oracle's local search.

  Returns:
    A :class:`CompressedMLP`; evaluate with :func:`apply_compressed`.
  """
  if not isinstance(model, StronglyDenseMLP):
    raise TypeError(
      f"model must be a StronglyDenseMLP, got {type(model).__name__}"
    )
  k = V.check_int(k, "k", min_value=1)
  check_key(key)
  if method not in METHODS:
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")
  layers = model.layers()
  scales = model.scales()
  mids = []
  for l in range(1, len(layers) - 1):
    w, b = layers[l]
    w_t = w.T
    p, q, t, rel = _factor(
      w_t, k, jax.random.fold_in(key, l), method, restarts, iters
    )
    mids.append(FactoredLayer(p, q, t, b, rel))
  return CompressedMLP(
    tuple(layers[0]), tuple(mids), tuple(layers[-1]), tuple(scales)
  )


def apply_compressed(c: CompressedMLP, x: jax.Array) -> jax.Array:
  """Forward pass of a :class:`CompressedMLP`: ``O(K (n_in + n_out))`` per
  factored layer.

  Args:
    c: from :func:`compress_mlp`.
    x: ``[batch, d_0]``.

  Returns:
    ``[batch, d_L]``.
  """
  if not isinstance(c, CompressedMLP):
    raise TypeError(f"c must be a CompressedMLP, got {type(c).__name__}")
  w0, b0 = c.first
  x = V.check_array(x, "x", ndim=2, dtype="real")
  if x.shape[1] != w0.shape[0]:
    raise ValueError(f"x must have shape [batch, {w0.shape[0]}], got {x.shape}")
  h = jax.nn.relu(c.scales[0] * (x @ w0) + b0)
  for i, layer in enumerate(c.mids):
    u = h @ layer.t.T  # [batch, K]: the K messages
    h = jax.nn.relu(c.scales[i + 1] * ((u * layer.q) @ layer.p) + layer.bias)
  w, b = c.last
  return c.scales[-1] * (h @ w) + b


def truncate_compressed(c: CompressedMLP, k: int) -> CompressedMLP:
  """The first ``k`` terms of every factored layer (``rel_error`` is left as it
  was).

  The cut and SVD terms are nested (greedy and ordered by singular value), so
  the prefix of a ``K_max``-term factorisation is the ``k``-term one.

  Args:
    c: from :func:`compress_mlp`.
    k: terms to keep per layer, ``1 <= k``.

  Returns:
    A :class:`CompressedMLP` whose factored layers have ``p [k, n_out]``,
    ``q [k]``, ``t [k, n_in]``.
  """
  k = V.check_int(k, "k", min_value=1)
  mids = tuple(m._replace(p=m.p[:k], q=m.q[:k], t=m.t[:k]) for m in c.mids)
  return c._replace(mids=mids)


def refit_compressed(
  c: CompressedMLP, model: StronglyDenseMLP, k: int
) -> CompressedMLP:
  """The first ``k`` terms of every layer with their own least-squares
  coefficients (float64).

  For random cut terms the prefix of a ``K_max``-term fit is not the ``k``-term
  fit: the coefficients ``q`` minimise ``||W^T - p^T diag(q) t||_F`` over the
  kept terms, solved on the host in float64 (``rel_error`` is left as it was).

  Args:
    c: from :func:`compress_mlp` on ``model`` (typically ``method='random'``).
    model: the compressed :class:`StronglyDenseMLP`.
    k: terms to keep per layer, ``1 <= k``.

  Returns:
    A :class:`CompressedMLP` with ``p [k, n_out]``, ``q [k]`` (float32),
    ``t [k, n_in]``.
  """
  k = V.check_int(k, "k", min_value=1)
  layers = model.layers()
  mids = []
  for i, m in enumerate(c.mids):
    w_t = np.asarray(layers[i + 1][0], np.float64).T
    p, t = np.asarray(m.p[:k], np.float64), np.asarray(m.t[:k], np.float64)
    gram = (p @ p.T) * (t @ t.T)
    rhs = np.einsum("km,mn,kn->k", p, w_t, t)
    q = np.linalg.lstsq(gram, rhs, rcond=None)[0]
    mids.append(m._replace(p=m.p[:k], q=jnp.asarray(q, jnp.float32), t=m.t[:k]))
  return c._replace(mids=tuple(mids))


_apply_jit = jax.jit(apply_compressed)


def compression_errors(
  model: StronglyDenseMLP,
  x: jax.Array,
  ks: Sequence[int],
  key: jax.Array,
  *,
  restarts: int = 32,
  iters: int = 10,
) -> dict[str, list[float]]:
  """Relative output error of each method of :data:`METHODS` at each number of
  terms.

  One ``max(ks)``-term factorisation per method; cut and SVD are truncated to
  each ``k`` (:func:`truncate_compressed`), random terms are refitted
  (:func:`refit_compressed`). The error is ``RMS(g - f) / std(f)`` over the
  outputs ``f = model(x)`` and ``g`` of the compressed network, in float64 (1 is
  the constant predictor's error).

  Args:
    model: a :class:`StronglyDenseMLP` with at least two hidden layers.
    x: ``[batch, d_0]`` inputs.
    ks: the numbers of terms, each ``<= max(ks)``.
    key: typed PRNG key of :func:`compress_mlp`.
    restarts, iters: the cut oracle's local search.

  Returns:
    ``{method: [len(ks)] errors}``.
  """
  if not ks or any(
    isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks
  ):
    raise ValueError(
      f"ks must be a non-empty sequence of ints >= 1, got {ks!r}"
    )
  f = np.asarray(model(x), np.float64)
  scale = np.sqrt(np.mean((f - f.mean(0)) ** 2))
  kmax = max(ks)
  full = {
    m: compress_mlp(model, kmax, key, method=m, restarts=restarts, iters=iters)
    for m in METHODS
  }
  out: dict[str, list[float]] = {m: [] for m in METHODS}
  for k in ks:
    comps = {m: truncate_compressed(full[m], k) for m in ("cut", "svd")}
    comps["random"] = refit_compressed(full["random"], model, k)
    for m, c in comps.items():
      g = np.asarray(_apply_jit(c, x), np.float64)
      out[m].append(float(np.sqrt(np.mean((g - f) ** 2)) / scale))
  return out
