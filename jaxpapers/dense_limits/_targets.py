r"""Lipschitz targets built from narrow bumps (project choice, not the paper's
hard function).

.. math:: f(x) = \sum_{r=1}^{R} s_r\, \rho\, \max\big(0,\ 1 - \|x - c_r\|_2 / \rho\big),

with signs :math:`s_r \in \{\pm 1\}`. The centres are the cell centres of a
regular grid with ``g`` points per axis on :math:`[0,1]^d` (``R = g^d``) and
:math:`\rho = 1/(2g)`, so the supports are disjoint and
:math:`\mathrm{Lip}(f) = 1`. (The spec draws the centres uniformly; a grid keeps
the bumps from vanishing in higher dimension and the supports disjoint.)
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

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
    raise ValueError(
      f"grid**d must be <= 65536 bumps, got {grid}**{d} = {grid**d}"
    )
  axis = (jnp.arange(grid) + 0.5) / grid
  centers = jnp.asarray(
    list(itertools.product(*([axis.tolist()] * d))), jnp.float32
  )
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
    raise ValueError(
      f"x must have shape [batch, {t.centers.shape[1]}], got {x.shape}"
    )
  dist = jnp.sqrt(
    jnp.maximum(jnp.sum((x[:, None, :] - t.centers[None]) ** 2, -1), 0.0)
  )
  return jnp.sum(t.signs * t.radius * jax.nn.relu(1.0 - dist / t.radius), -1)


def bump_data(
  seed: int, *, d: int, grid: int, n_train: int, n_test: int
) -> tuple[dict, float]:
  """A regression task on a random bump target, scaled to unit train variance.

  The target is ``bump_target(jax.random.key(seed), d, grid)``; the
  ``n_train + n_test`` inputs are uniform on ``[0, 1]^d``
  (``np.random.default_rng(seed)``), train rows first. The targets are centred
  and divided by the train rows' standard deviation ``sd``, so the mean squared
  error is relative to the constant predictor's and the normalised target is
  ``1 / sd``-Lipschitz.

  Args:
    seed: non-negative seed of the target and the inputs.
    d: input dimension.
    grid: bumps per axis (:func:`bump_target`).
    n_train, n_test: row counts (>= 2 and >= 1).

  Returns:
    ``({"xtr": [n_train, d], "ytr": [n_train, 1], "xte", "yte"}, sd)``: float32
    numpy arrays and the raw targets' train standard deviation.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n_train = V.check_int(n_train, "n_train", min_value=2)
  n_test = V.check_int(n_test, "n_test", min_value=1)
  rng = np.random.default_rng(seed)
  target = bump_target(jax.random.key(seed), d, grid)
  x = rng.uniform(size=(n_train + n_test, d)).astype(np.float32)
  y = np.asarray(eval_bumps(target, jnp.asarray(x)))
  mu, sd = y[:n_train].mean(), y[:n_train].std()
  # unit variance: loss = relative MSE
  y = ((y - mu) / sd).astype(np.float32)[:, None]
  return dict(
    xtr=x[:n_train], ytr=y[:n_train], xte=x[n_train:], yte=y[n_train:]
  ), float(sd)
