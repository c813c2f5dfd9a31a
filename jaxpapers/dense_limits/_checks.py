"""Argument checks shared by the package (the project's bad-input policy,
jaxpapers.core)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxpapers.core import validation as V


def check_matrix(m, name: str = "m"):
  """A real, non-empty ``[rows, cols]`` matrix as a float array (trace-time
  checks)."""
  arr = V.check_array(m, name, ndim=2, dtype="real", nonempty=True)
  if not jnp.issubdtype(arr.dtype, jnp.floating):
    arr = arr.astype(jnp.float32)
  return arr


def finite_flag(x, name: str):
  """Value check (no NaN or inf): raises eagerly, returns a traced flag under
  jit."""
  return V.debug_check_values(
    jnp.isfinite(x), f"{name} must be finite (no NaN or inf)"
  )


def check_key(key, name: str = "key"):
  """A typed PRNG key (``jax.random.key``), scalar."""
  import jax

  if not (
    hasattr(key, "dtype") and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError(
      f"{name} must be a typed PRNG key (jax.random.key), "
      f"got {type(key).__name__}"
    )
  if key.ndim != 0:
    raise ValueError(
      f"{name} must be a single key (shape ()), got shape {key.shape}"
    )
  return key


poison = V.poison_floats
