"""Personalized PageRank as Graph of Skills runs it, batched over seeds.

GoS iterates (``gos/core/retrieval.py``)::

    pi_0 = p,   pi_{k+1} = d * p + (1 - d) * T^T pi_k                                  (3)

with teleport ``d = 0.2``, stopping when ``||pi_{k+1} - pi_k||_1 <= tol`` (1e-6)
or after ``iters`` (50) updates, then renormalising ``pi / sum(pi)``. Seeds are
weighted by rank, ``p_i ∝ 1 / (rank_i + 1)`` (:func:`rank_seed_weights`), and
``p`` is normalised to sum 1.

Here one ``lax.while_loop`` runs a batch of seeds ``[B, n]``; each row stops on
its own L1 rule (a finished row is frozen), so a batched call equals the per-row
GoS loop.

Bad input: shapes, dtypes and static options raise at trace time; values (a
row-stochastic ``t``, non-negative finite seeds) raise eagerly and give NaN
under ``jax.jit``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


def rank_seed_weights(k: int) -> jax.Array:
  """GoS's seed weights for ranks 0..k-1: ``(1 / (r + 1)) / sum_j 1 / (j + 1)``.

  Args:
    k: number of seeds (>= 1).

  Returns:
    ``[k]`` float32 weights summing to 1.
  """
  k = V.check_int(k, "k", min_value=1)
  w = 1.0 / jnp.arange(1, k + 1, dtype=jnp.float32)
  return w / w.sum()


@functools.partial(jax.jit, static_argnames=("d", "iters", "tol"))
def _ppr(t, p, *, d, iters, tol):
  fs = (jnp.isfinite(p) & (p >= 0)).all()
  tot = p.sum(-1, keepdims=True)
  p = jnp.where(tot > 0, p / jnp.where(tot > 0, tot, 1.0), 0.0)

  def cond(c):
    k, _, done = c
    return (k < iters) & ~done.all()

  def body(c):
    k, pi, done = c
    new = d * p + (1.0 - d) * (pi @ t)
    conv = jnp.abs(new - pi).sum(-1) <= tol
    pi = jnp.where(done[:, None], pi, new)
    return k + 1, pi, done | conv

  _, pi, _ = jax.lax.while_loop(cond, body, (0, p, jnp.zeros(p.shape[0], bool)))
  s = pi.sum(-1, keepdims=True)
  ft = (t >= 0).all() & (jnp.abs(t.sum(-1) - 1.0) < 1e-3).all()
  return jnp.where(s > 0, pi / jnp.where(s > 0, s, 1.0), pi), ft, fs


def personalized_pagerank(
  t: ArrayLike,
  seed: ArrayLike,
  *,
  teleport: float = 0.2,
  iters: int = 50,
  tol: float = 1e-6,
  validate: bool = True,
) -> jax.Array:
  """Eq. (3): personalized PageRank with GoS's stopping rule and final
  renormalisation.

  Args:
    t: ``[n, n]`` row-stochastic transition matrix (:func:`transition_matrix`).
    seed: ``[n]`` or ``[B, n]`` non-negative personalization (normalised here;
      an all-zero row returns all zeros, as GoS).
    teleport: the restart probability ``d`` in (0, 1].
    iters: the maximum number of updates (>= 1).
    tol: the L1 stopping tolerance (>= 0).
    validate: run the value checks (skip inside hot loops whose inputs are built
      correctly).

  Returns:
    ``seed``-shaped float32 scores summing to 1 per row.

  Under jit: a non-stochastic ``t`` or a negative/NaN seed makes the output NaN.

  Example:
    >>> t = jnp.array([[0.0, 1.0], [1.0, 0.0]])
    >>> personalized_pagerank(t, jnp.array([1.0, 0.0]), tol=0.0, iters=200).round(4).tolist()
    [0.5556, 0.4444]
  """
  t = V.check_array(t, "t", ndim=2, dtype="float")
  n = t.shape[0]
  if t.shape != (n, n) or n == 0:
    raise ValueError(
      f"t must be a non-empty square [n, n] matrix, got shape {t.shape}"
    )
  seed = V.check_array(seed, "seed", ndim=(1, 2), dtype="real")
  if seed.shape[-1] != n:
    raise ValueError(
      f"seed must be [n] or [B, n] with n = {n} (t's size), got {seed.shape}"
    )
  d = V.check_float(
    teleport, "teleport", min_value=0.0, min_inclusive=False, max_value=1.0
  )
  iters = V.check_int(iters, "iters", min_value=1)
  tol = V.check_float(tol, "tol", min_value=0.0)
  single = seed.ndim == 1
  pi, ft, fs = _ppr(
    t, jnp.atleast_2d(seed).astype(t.dtype), d=d, iters=iters, tol=tol
  )
  ok = True
  if validate:
    ok = V.check_values(
      ft, "t must be row-stochastic (non-negative rows summing to 1)"
    )
    ok = ok & V.check_values(fs, "seed must be finite and non-negative")
  pi = pi[0] if single else pi
  return V.poison(pi, ok)
