"""Distances between two feature sets: Fréchet distance and KID.

Bad input (policy in :mod:`jaxpapers.core.validation`): shapes and static
options are checked at trace time; non-finite features or moments raise
``ValueError`` on concrete data and give NaN under ``jax.jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


def _finite(name, *xs):
  return V.check_values(
    jnp.all(jnp.asarray([jnp.all(jnp.isfinite(x)) for x in xs])),
    f"{name} must be finite (no NaN or inf)",
  )


def _check_features(a: ArrayLike, b: ArrayLike) -> tuple[jax.Array, jax.Array]:
  a = V.check_array(a, "feats_a", dtype="real")
  b = V.check_array(b, "feats_b", dtype="real")
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
    raise ValueError(
      "feats_a and feats_b must have shapes [N, D] and [M, "
      f"D] with the same D; got {a.shape} and {b.shape}"
    )
  if a.shape[0] < 2 or b.shape[0] < 2:
    raise ValueError(
      f"need at least 2 samples per set for a covariance; got {a.shape[0]}, "
      f"{b.shape[0]}"
    )
  return a, b


def _sqrt_psd(m: jax.Array) -> jax.Array:
  """Symmetric square root of a PSD matrix by eigendecomposition (eigenvalues
  clipped at 0)."""
  w, v = jnp.linalg.eigh((m + m.T) / 2)
  return (v * jnp.sqrt(jnp.clip(w, 0.0))) @ v.T


def frechet_distance_from_moments(
  mu1: ArrayLike, sigma1: ArrayLike, mu2: ArrayLike, sigma2: ArrayLike
) -> jax.Array:
  """Fréchet distance between Gaussians ``N(mu1, sigma1)`` and
  ``N(mu2, sigma2)``.

  ``d² = ||μ1 − μ2||² + tr(Σ1) + tr(Σ2) − 2 tr((Σ1^{1/2} Σ2 Σ1^{1/2})^{1/2})``.

  The cross term uses the symmetric form ``Σ1^{1/2} Σ2 Σ1^{1/2}`` (PSD, so its
  square root comes from ``eigh`` with clipped eigenvalues) instead of the
  non-symmetric ``sqrtm(Σ1 Σ2)``; the two have the same trace, and this one
  never produces complex values from round-off. Use float64
  (``jax.experimental.enable_x64``) for features of high dimension.

  Args:
    mu1: [D] real mean of the first Gaussian, D >= 1.
    sigma1: [D, D] real covariance (symmetric PSD) of the first Gaussian.
    mu2: [D] real mean of the second Gaussian.
    sigma2: [D, D] real covariance (symmetric PSD) of the second Gaussian.

  Returns:
    float scalar ``d²`` (clipped at 0), in the inputs' float dtype.
  """
  mu1, mu2, sigma1, sigma2 = (
    V.check_array(x, n, dtype="real")
    for x, n in (
      (mu1, "mu1"),
      (mu2, "mu2"),
      (sigma1, "sigma1"),
      (sigma2, "sigma2"),
    )
  )
  if mu1.shape != mu2.shape or mu1.ndim != 1:
    raise ValueError(
      f"mu1 and mu2 must be vectors of the same length; got {mu1.shape}, "
      f"{mu2.shape}"
    )
  d = mu1.shape[0]
  if sigma1.shape != (d, d) or sigma2.shape != (d, d):
    raise ValueError(
      f"sigma1 and sigma2 must have shape {(d, d)}; got {sigma1.shape}, "
      f"{sigma2.shape}"
    )
  if d == 0:
    raise ValueError("mu1 and mu2 must have at least one dimension")
  ok = _finite("mu1, mu2, sigma1 and sigma2", mu1, mu2, sigma1, sigma2)
  s1_half = _sqrt_psd(sigma1)
  cross = _sqrt_psd(s1_half @ sigma2 @ s1_half)
  diff = mu1 - mu2
  return V.poison(
    jnp.maximum(
      diff @ diff
      + jnp.trace(sigma1)
      + jnp.trace(sigma2)
      - 2 * jnp.trace(cross),
      0.0,
    ),
    ok,
  )


def frechet_distance(feats_a: ArrayLike, feats_b: ArrayLike) -> jax.Array:
  """Fréchet distance (FID-style) between two feature sets.

  Means and unbiased covariances are estimated from the samples, then
  :func:`frechet_distance_from_moments` is applied.

  Args:
    feats_a: [N, D] real features, N >= 2, finite.
    feats_b: [M, D] real features, M >= 2, finite.

  Returns:
    float scalar, the squared Fréchet distance (>= 0).
  """
  a, b = _check_features(feats_a, feats_b)
  ok = _finite("feats_a and feats_b", a, b)
  a, b = V.poison((a, b), ok)
  return frechet_distance_from_moments(
    a.mean(0), jnp.cov(a, rowvar=False), b.mean(0), jnp.cov(b, rowvar=False)
  )


def _unbiased_mmd2(
  x: jax.Array, y: jax.Array, degree: int, coef0: float
) -> jax.Array:
  d = x.shape[1]
  kern = lambda u, v: (u @ v.T / d + coef0) ** degree
  m, n = x.shape[0], y.shape[0]
  kxx, kyy, kxy = kern(x, x), kern(y, y), kern(x, y)
  sxx = (kxx.sum() - jnp.trace(kxx)) / (m * (m - 1))
  syy = (kyy.sum() - jnp.trace(kyy)) / (n * (n - 1))
  return sxx + syy - 2 * kxy.mean()


def kernel_inception_distance(
  feats_a: ArrayLike,
  feats_b: ArrayLike,
  *,
  degree: int = 3,
  coef0: float = 1.0,
  num_subsets: int = 0,
  subset_size: int = 100,
  key: jax.Array | None = None,
) -> jax.Array:
  """KID: the unbiased MMD² with the polynomial kernel ``k(x, y) = (xᵀy / D +
  coef0)^degree``.

  With ``num_subsets == 0`` the estimate uses all samples; otherwise it is the
  mean over ``num_subsets`` random subsets of ``subset_size`` from each set
  (drawn without replacement with ``key``), as in Bińkowski et al. (2018),
  "Demystifying MMD GANs", arXiv:1801.01401.

  Args:
    feats_a: [N, D] real features, N >= 2, finite.
    feats_b: [M, D] real features, M >= 2, finite.
    degree: the kernel's degree, an int >= 1.
    coef0: the kernel's constant term.
    num_subsets: number of random subsets averaged; 0 uses all samples once.
    subset_size: largest subset size (>= 2; capped at N and M).
    key: PRNG key for the subsets; required when ``num_subsets > 0``.

  Returns:
    float scalar, the unbiased MMD² estimate (may be slightly negative).
  """
  a, b = _check_features(feats_a, feats_b)
  degree = V.check_int(degree, "degree", min_value=1)
  coef0 = V.check_float(coef0, "coef0")
  num_subsets = V.check_int(num_subsets, "num_subsets", min_value=0)
  ok = _finite("feats_a and feats_b", a, b)
  if num_subsets == 0:
    return V.poison(_unbiased_mmd2(a, b, degree, coef0), ok)
  if key is None:
    raise ValueError("key is required when num_subsets > 0")
  subset_size = V.check_int(subset_size, "subset_size", min_value=2)
  size = min(subset_size, a.shape[0], b.shape[0])

  def one(k):
    ka, kb = jax.random.split(k)
    ia = jax.random.choice(ka, a.shape[0], (size,), replace=False)
    ib = jax.random.choice(kb, b.shape[0], (size,), replace=False)
    return _unbiased_mmd2(a[ia], b[ib], degree, coef0)

  return V.poison(jax.vmap(one)(jax.random.split(key, num_subsets)).mean(), ok)
