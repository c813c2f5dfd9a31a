"""Input validation shared by the margin, loss and construction functions.

Policy: shapes, dtypes and static arguments are checked at trace time, always.
Value checks (binary ``A``, unit-norm rows, no NaN) raise ``ValueError`` when
the inputs are concrete; under ``jax.jit`` they cannot raise, so the checking
functions return a traced flag, the public functions return NaN for their float
results when it is False (never a plausible number), and a
``jax.experimental.checkify.debug_check`` is registered: wrap the jitted
function in ``checkify.checkify`` to get the error message instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as _core_validation

_UNIT_TOL = 1e-3


# The shared helpers of the policy (jaxpapers.core.validation), under the names
# this package uses.
is_concrete = _core_validation.is_concrete
traced_check = _core_validation.traced_flag
both = _core_validation.all_flags
poison = _core_validation.poison_floats


def check_embeddings(U, V, A, *, names=("U", "V", "A")):
  """Checks shapes/dtypes of ``U [N, d]``, ``V [n, d]``, ``A [N, n]``; returns
  jnp arrays.

  ``A`` must be binary (bool, or numbers in {0, 1}); the value check raises when
  ``A`` is concrete (outside ``jit``). See :func:`check_embeddings_ok` for the
  flag that the traced check produces.
  """
  return check_embeddings_ok(U, V, A, names=names)[:3]


def check_embeddings_ok(U, V, A, *, names=("U", "V", "A")):
  """:func:`check_embeddings` plus the traced value-check flag (None when
  concrete)."""
  un, vn, an = names
  U = jnp.asarray(U)
  V = jnp.asarray(V)
  A = jnp.asarray(A)
  if U.ndim != 2:
    raise ValueError(
      f"{un} must be a 2-D array [N, d] of query embeddings, "
      f"got shape {U.shape}."
    )
  if V.ndim != 2:
    raise ValueError(
      f"{vn} must be a 2-D array [n, d] of document embeddings, "
      f"got shape {V.shape}."
    )
  if A.ndim != 2:
    raise ValueError(
      f"{an} must be a 2-D binary relevance matrix [N, n], got shape {A.shape}."
    )
  if U.shape[1] != V.shape[1]:
    raise ValueError(
      f"{un} and {vn} must share the embedding dimension d: "
      f"{un} has shape {U.shape}, {vn} has shape {V.shape}."
    )
  if A.shape != (U.shape[0], V.shape[0]):
    raise ValueError(
      f"{an} must have shape [N, n] = [{U.shape[0]}, "
      f"{V.shape[0]}] (rows of {un} x rows of {vn}), got {A.shape}."
    )
  if not (
    jnp.issubdtype(U.dtype, jnp.floating)
    and jnp.issubdtype(V.dtype, jnp.floating)
  ):
    raise TypeError(
      f"{un} and {vn} must be floating point arrays, "
      f"got {U.dtype} and {V.dtype}."
    )
  if 0 in U.shape or V.shape[0] == 0:
    raise ValueError(
      "need at least one query, one document and one dimension: "
      f"{un} has shape {U.shape}, {vn} has shape {V.shape}."
    )
  return U, V, A, check_binary(A, name=an)


def check_binary(A, *, name="A"):
  """Dtype check (trace time) and value check of a binary matrix.

  Returns None when ``A`` is bool or concrete (a bad concrete value raises
  ``ValueError``); a traced flag ``all(A in {0, 1})`` otherwise.
  """
  if A.dtype == jnp.bool_:
    return None
  if not (
    jnp.issubdtype(A.dtype, jnp.integer)
    or jnp.issubdtype(A.dtype, jnp.floating)
  ):
    raise TypeError(
      f"{name} must be bool or numeric with entries in {{0, 1}}, got {A.dtype}."
    )
  if is_concrete(A):
    a = np.asarray(A)
    bad = ~((a == 0) | (a == 1))
    if bad.any():
      vals = np.unique(a[bad])[:5]
      raise ValueError(
        f"{name} must be a binary relevance matrix with entries in {{0, 1}}; "
        f"found other values such as {vals.tolist()}."
      )
    return None
  return traced_check(
    (A == 0) | (A == 1),
    f"{name} must be a binary relevance matrix with entries in {{0, 1}}",
  )


# The rounding error of a norm computed in the array's own dtype (float32 at
# worst: a sum of d squares has relative error <= d * 2^-24, well under this
# slack for any d below 10^4).
_FAST_SLACK = 1e-4


@jax.jit
def _unit_rows_within(X, tol):
  norms = jnp.sqrt(jnp.sum(jnp.square(X), axis=-1))
  return jnp.all(jnp.abs(norms - 1.0) <= tol)


def _clearly_unit_rows(X) -> bool:
  """True when every row norm, computed in ``X``'s dtype, is within
  ``_UNIT_TOL - slack`` of 1.

  A fast, compiled screen for the eager check: rows it accepts pass the float64
  check as well (the slack exceeds the rounding error of a float32 norm for
  ``d < 10^4``), and anything else (a row near the tolerance, a NaN, half
  precision, ``d >= 10^4``) goes to the exact float64 check, so the decision is
  the float64 one whatever the screen says.
  """
  if X.shape[-1] >= 10_000 or X.dtype not in (jnp.float32, jnp.float64):
    # half precision: its own rounding could accept a row float64 rejects
    return False
  return bool(_unit_rows_within(X, _UNIT_TOL - _FAST_SLACK))


def check_unit_rows(X, *, name):
  """Rows of ``X`` must have norm 1 (tolerance 1e-3; NaN rows fail).

  Concrete ``X``: raises ``ValueError``, returns None. Traced ``X``: returns a
  flag.
  """
  if not is_concrete(X):
    norms = jnp.linalg.norm(X, axis=-1)
    return traced_check(
      jnp.abs(norms - 1.0) <= _UNIT_TOL,
      f"{name} must have unit-norm rows (tolerance {_UNIT_TOL})",
    )
  if _clearly_unit_rows(X):
    return None
  norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=-1)
  bad = ~(np.abs(norms - 1.0) <= _UNIT_TOL)
  if bad.any():
    i = int(np.argmax(bad))
    raise ValueError(
      f"{name} must have unit-norm rows (the margin is defined for unit "
      f"embeddings); row {i} has norm {norms[i]:.6g}. "
      "Pass normalize=True to normalise the rows first."
    )
  return None


def check_nonzero_rows(X, *, name):
  """Rows of ``X`` must be finite and nonzero (flag under jit, ``ValueError``
  eagerly)."""
  if not is_concrete(X):
    norms = jnp.linalg.norm(X, axis=-1)
    return traced_check(
      jnp.isfinite(norms) & (norms > 0),
      f"{name} must have finite, nonzero rows to be normalised",
    )
  norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=-1)
  if not (np.isfinite(norms) & (norms > 0)).all():
    i = int(np.argmax(~(np.isfinite(norms) & (norms > 0))))
    raise ValueError(
      f"{name} has an all-zero row or a non-finite row ({i}), which cannot be "
      f"normalised to unit norm."
    )
  return None


def normalize_rows(X):
  """Divides each row by its Euclidean norm (no epsilon: zero rows are rejected
  upstream)."""
  return X / jnp.linalg.norm(X, axis=-1, keepdims=True)


def safe_normalize_rows(X, eps: float = 1e-12):
  """``x / sqrt(||x||^2 + eps)``: finite values and gradients even for all-zero
  rows."""
  return X * jax.lax.rsqrt(jnp.sum(X * X, axis=-1, keepdims=True) + eps)
