"""Input checks: raise eagerly, poison with NaN under ``jax.jit``.

The project's policy for bad input:

* shapes, dtypes and static configuration are checked at trace time, always, with a
  ``ValueError`` / ``TypeError`` naming the argument and the expected form;
* value checks (ranges, unit norms, finiteness, positive weights) raise ``ValueError``
  when the inputs are concrete (eager calls). Under ``jax.jit`` the inputs are tracers
  and cannot raise, so the function returns NaN for the affected result (never a
  plausible number) and registers a ``jax.experimental.checkify.debug_check``: wrap the
  jitted function in ``checkify.checkify`` to get the error message instead of NaN.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify


def is_concrete(*xs) -> bool:
  """True when no leaf of ``xs`` is a tracer (the values are known on the host)."""
  return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def check(ok, message: str):
  """Value check of the boolean array ``ok`` (all entries must hold).

  Concrete ``ok``: raises ``ValueError(message)`` when an entry is False, else returns
  None. Traced ``ok``: registers a checkify ``debug_check`` and returns the traced
  scalar ``all(ok)`` for :func:`poison`.
  """
  if is_concrete(ok):
    if not bool(np.all(np.asarray(ok))):
      raise ValueError(message)
    return None
  ok = jnp.all(ok)
  checkify.debug_check(ok, message.replace("{", "{{").replace("}", "}}"))
  return ok


def both(*oks):
  """Conjunction of results of :func:`check` (None means 'checked eagerly, fine')."""
  oks = [o for o in oks if o is not None]
  if not oks:
    return None
  out = oks[0]
  for o in oks[1:]:
    out = jnp.logical_and(out, o)
  return out


def poison(tree, ok):
  """Every float leaf of ``tree`` replaced by NaN where ``ok`` is False (None: unchanged)."""
  if ok is None:
    return tree

  def leaf(x):
    if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact):
      return jnp.where(ok, x, jnp.asarray(jnp.nan, x.dtype))
    return x

  return jax.tree.map(leaf, tree)


def finite(x):
  """``isfinite(x)`` as a boolean array (for :func:`check`)."""
  return jnp.isfinite(x) if isinstance(x, jax.Array) else np.isfinite(np.asarray(x))
