r"""Lipschitz targets built from narrow bumps (project choice, not the paper's hard function).

.. math:: f(x) = \sum_{r=1}^{R} s_r\, \rho\, \max\big(0,\ 1 - \|x - c_r\|_2 / \rho\big),

with signs :math:`s_r \in \{\pm 1\}`. The centres are the cell centres of a regular grid with
``g`` points per axis on :math:`[0,1]^d` (``R = g^d``) and :math:`\rho = 1/(2g)`, so the
supports are disjoint and :math:`\mathrm{Lip}(f) = 1`. (The spec draws the centres uniformly;
a grid keeps the bumps from vanishing in higher dimension and the supports disjoint.)
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V
from jaxpapers.dense_limits._checks import check_key


class BumpTarget(NamedTuple):
  """A sum of signed bumps.

  Attributes:
    centers: ``[R, d]``.
    signs: ``[R]`` in ``{-1, +1}``.
    radius: ``[]`` the bump radius ``rho``.
  """

  centers: jax.Array
  signs: jax.Array
  radius: jax.Array


def bump_target(key: jax.Array, d: int, grid: int) -> BumpTarget:
  """A random-sign bump target on the ``grid^d`` cell centres of ``[0, 1]^d``.

  Args:
    key: typed PRNG key (signs).
    d: input dimension.
    grid: points per axis ``g`` (``R = g^d`` bumps, radius ``1/(2g)``).

  Returns:
    A :class:`BumpTarget`.
  """
  check_key(key)
  d = V.check_int(d, "d", min_value=1)
  grid = V.check_int(grid, "grid", min_value=1)
  if grid**d > 1 << 16:
    raise ValueError(f"grid**d must be <= 65536 bumps, got {grid}**{d} = {grid**d}")
  axis = (jnp.arange(grid) + 0.5) / grid
  centers = jnp.asarray(list(itertools.product(*([axis.tolist()] * d))), jnp.float32)
  signs = jnp.where(jax.random.bernoulli(key, 0.5, (grid**d,)), 1.0, -1.0)
  return BumpTarget(centers, signs, jnp.asarray(0.5 / grid, jnp.float32))


def eval_bumps(t: BumpTarget, x: jax.Array) -> jax.Array:
  """Evaluates the bump target.

  Args:
    t: a :class:`BumpTarget`.
    x: ``[batch, d]``.

  Returns:
    ``[batch]``.
  """
  if not isinstance(t, BumpTarget):
    raise TypeError(f"t must be a BumpTarget, got {type(t).__name__}")
  x = V.check_array(x, "x", ndim=2, dtype="real")
  if x.shape[1] != t.centers.shape[1]:
    raise ValueError(f"x must have shape [batch, {t.centers.shape[1]}], got {x.shape}")
  dist = jnp.sqrt(jnp.maximum(jnp.sum((x[:, None, :] - t.centers[None]) ** 2, -1), 0.0))
  return jnp.sum(t.signs * t.radius * jax.nn.relu(1.0 - dist / t.radius), -1)
