"""Input validation shared by the margin, loss and construction functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_UNIT_TOL = 1e-3


def is_concrete(x) -> bool:
  """True when ``x`` holds values on the host side (not a tracer under jit)."""
  return not isinstance(x, jax.core.Tracer)


def check_embeddings(U, V, A, *, names=("U", "V", "A")):
  """Checks shapes/dtypes of ``U [N, d]``, ``V [n, d]``, ``A [N, n]``; returns jnp arrays.

  ``A`` must be binary (bool, or numbers in {0, 1}); the value check runs only
  when ``A`` is concrete (outside ``jit``).
  """
  un, vn, an = names
  U = jnp.asarray(U)
  V = jnp.asarray(V)
  A = jnp.asarray(A)
  if U.ndim != 2:
    raise ValueError(f"{un} must be a 2-D array [N, d] of query embeddings, got shape {U.shape}.")
  if V.ndim != 2:
    raise ValueError(f"{vn} must be a 2-D array [n, d] of document embeddings, got shape {V.shape}.")
  if A.ndim != 2:
    raise ValueError(f"{an} must be a 2-D binary relevance matrix [N, n], got shape {A.shape}.")
  if U.shape[1] != V.shape[1]:
    raise ValueError(
        f"{un} and {vn} must share the embedding dimension d: {un} has shape {U.shape}, "
        f"{vn} has shape {V.shape}.")
  if A.shape != (U.shape[0], V.shape[0]):
    raise ValueError(
        f"{an} must have shape [N, n] = [{U.shape[0]}, {V.shape[0]}] (rows of {un} x rows of "
        f"{vn}), got {A.shape}.")
  if not (jnp.issubdtype(U.dtype, jnp.floating) and jnp.issubdtype(V.dtype, jnp.floating)):
    raise TypeError(f"{un} and {vn} must be floating point arrays, got {U.dtype} and {V.dtype}.")
  check_binary(A, name=an)
  return U, V, A


def check_binary(A, *, name="A"):
  if A.dtype == jnp.bool_:
    return
  if not (jnp.issubdtype(A.dtype, jnp.integer) or jnp.issubdtype(A.dtype, jnp.floating)):
    raise TypeError(f"{name} must be bool or numeric with entries in {{0, 1}}, got {A.dtype}.")
  if is_concrete(A):
    a = np.asarray(A)
    bad = ~((a == 0) | (a == 1))
    if bad.any():
      vals = np.unique(a[bad])[:5]
      raise ValueError(
          f"{name} must be a binary relevance matrix with entries in {{0, 1}}; found other "
          f"values such as {vals.tolist()}.")


def check_unit_rows(X, *, name):
  """Raises ValueError if a concrete ``X`` has rows whose norm is not 1 (tolerance 1e-3)."""
  if not is_concrete(X):
    return
  norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=-1)
  bad = np.abs(norms - 1.0) > _UNIT_TOL
  if bad.any():
    i = int(np.argmax(bad))
    raise ValueError(
        f"{name} must have unit-norm rows (the margin is defined for unit embeddings); row {i} "
        f"has norm {norms[i]:.6g}. Pass normalize=True to normalise the rows first.")


def check_nonzero_rows(X, *, name):
  if not is_concrete(X):
    return
  norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=-1)
  if (norms == 0).any():
    i = int(np.argmax(norms == 0))
    raise ValueError(f"{name} has an all-zero row ({i}), which cannot be normalised to unit norm.")


def normalize_rows(X):
  """Divides each row by its Euclidean norm (no epsilon: zero rows are rejected upstream)."""
  return X / jnp.linalg.norm(X, axis=-1, keepdims=True)


def safe_normalize_rows(X, eps: float = 1e-12):
  """``x / sqrt(||x||^2 + eps)``: finite values and gradients even for all-zero rows."""
  return X * jax.lax.rsqrt(jnp.sum(X * X, axis=-1, keepdims=True) + eps)
