"""Input validation shared by every package: the project's bad-input policy and
its helpers.

Bad input
=========

A malformed call gets a clear ``TypeError`` or ``ValueError`` that names the
argument and the expected form. No public function returns a plausible but wrong
number, eagerly or under ``jax.jit``. Three kinds of checks, with one rule each:

1. **Trace-time checks (always).** Shapes, ranks, dtypes, pytree structures and
   static configuration (Python ints, floats, strings, config dataclasses) are
   known while tracing, so they raise the same error eagerly and under
   ``jax.jit``/``vmap``/``grad``. A NaN or infinite *static* float
   (``temperature=float('nan')``) is a trace-time error too. Ranks and shapes
   are checked with chex's static assertions, re-raised with a message that
   names the argument.

2. **Value checks on array data (eagerly: raise; traced: poison).** Checks that
   need the data (labels in ``[0, C)``, no NaN scores, token ids below the
   vocabulary size, non-negative weights) raise a ``ValueError`` whenever the
   data is concrete: numpy arrays, Python numbers, and JAX arrays outside a
   trace. Under a trace the function cannot raise, so it *poisons* its result
   instead: every float output becomes NaN (integer outputs that index
   something, such as generated tokens, become -1, the library's "no value"
   marker). A bad value therefore never comes back as a plausible number. Each
   function that poisons says so in its docstring under "Under jit". Call it
   eagerly once (or test ``jnp.isnan`` on the output) to get the error message;
   :func:`check_values` and :func:`poison` implement the rule.

3. **Host-side functions** (file loaders, numpy graph builders, config parsing)
   always see concrete data and always raise. A corrupt, truncated or missing
   file raises an error that names the file (and, for checkpoints, the step and
   directory).

**Degenerate but legal input** returns a documented value, tested in the
package's ``tests/<pkg>/test_bad_input.py`` (for example, a ranking query with
no relevant candidate scores 0; balanced accuracy averages over the classes
present). Empty inputs whose size is static (no candidates, no samples) are
trace-time errors, not degenerate values.

Every package's public surface is covered by a battery,
``tests/<pkg>/test_bad_input.py``: a table of malformed calls run eagerly and
under ``jax.jit``, with a check that every public callable has a row (or a
stated exemption).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from typing import Any

import chex
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

__all__ = [
  "is_concrete",
  "check_array",
  "check_int",
  "check_float",
  "check_values",
  "poison",
  "check_path",
]

_KINDS = {
  "int": ("integer", lambda dt: np.issubdtype(dt, np.integer)),
  "float": ("floating", lambda dt: np.issubdtype(dt, np.floating)),
  "bool": ("bool", lambda dt: dt == np.bool_),
  "intbool": (
    "integer or bool",
    lambda dt: np.issubdtype(dt, np.integer) or dt == np.bool_,
  ),
  "real": (
    "real (integer, bool or floating)",
    lambda dt: (
      np.issubdtype(dt, np.integer)
      or np.issubdtype(dt, np.floating)
      or dt == np.bool_
    ),
  ),
}


def is_concrete(*xs: Any) -> bool:
  """True when no leaf of ``xs`` is a JAX tracer, i.e. its values can be read
  now.

  Args:
    *xs: pytrees to inspect.

  Returns:
    False when any leaf is a ``jax.core.Tracer``.
  """
  return not any(
    isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(xs)
  )


def _dtype_of(x: Any) -> np.dtype:
  dt = getattr(x, "dtype", None)
  if dt is not None:
    return np.dtype(dt)
  return np.asarray(x).dtype


def _chex_or_raise(
  assertion: Any, arr: jax.Array, expected: Any, message: str
) -> None:
  """Runs a static chex assertion on ``arr``; a failure becomes
  ``ValueError(message)``.

  The rank and shape checks are chex's (``chex.assert_rank`` /
  ``chex.assert_shape``, the trace-time checks JAX libraries share); the
  re-raise keeps this module's message, which names the caller's argument, and
  its exception type.
  """
  try:
    assertion(arr, expected)
  except AssertionError as e:
    raise ValueError(message) from e


def check_array(
  x: Any,
  name: str,
  *,
  ndim: int | Iterable[int] | None = None,
  shape: tuple | None = None,
  dtype: str | None = None,
  nonempty: bool = False,
) -> jax.Array:
  """Checks an array argument at trace time and returns it as a JAX array.

  Args:
    x: the argument (array-like).
    name: its name in the caller's signature (used in the message).
    ndim: the required rank, or a collection of allowed ranks.
    shape: the required shape; ``None`` entries match any size.
    dtype: ``'int'``, ``'float'``, ``'bool'``, ``'intbool'`` or ``'real'`` (a
      dtype kind), or None for any.
    nonempty: require at least one element.

  Returns:
    ``jnp.asarray(x)`` (a tracer stays a tracer).

  Raises:
    TypeError: wrong dtype kind (or not array-like). ValueError: wrong rank,
      shape or size.

  Rank and shape go through ``chex.assert_rank`` / ``chex.assert_shape``, so
  ``chex.disable_asserts()`` turns them off as it does every chex assertion.
  """
  if dtype is not None:
    try:
      dt = _dtype_of(x)
    except Exception as e:  # pylint: disable=broad-except
      raise TypeError(f"{name} must be an array, got {type(x).__name__}") from e
    label, ok = _KINDS[dtype]
    if not ok(dt):
      raise TypeError(f"{name} must have a {label} dtype, got {dt}")
  try:
    arr = jnp.asarray(x)
  except Exception as e:  # pylint: disable=broad-except
    raise TypeError(f"{name} must be an array, got {type(x).__name__}") from e
  if ndim is not None:
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    want = allowed[0] if len(allowed) == 1 else f"one of {allowed}"
    _chex_or_raise(
      chex.assert_rank,
      arr,
      set(allowed),
      f"{name} must have rank {want}, got shape {arr.shape}",
    )
  if shape is not None:
    dims = ", ".join("?" if s is None else str(s) for s in shape)
    want = f"({dims},)" if len(shape) == 1 else f"({dims})"
    _chex_or_raise(
      chex.assert_shape,
      arr,
      tuple(shape),
      f"{name} must have shape {want}, got {arr.shape}",
    )
  if nonempty and arr.size == 0:
    raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
  return arr


def check_int(
  value: Any,
  name: str,
  *,
  min_value: int | None = None,
  max_value: int | None = None,
) -> int:
  """A static integer argument (Python or numpy int, not bool) as a Python int.

  Args:
    value: the argument.
    name: its name in the caller's signature (used in the message).
    min_value: the smallest allowed value, or None.
    max_value: the largest allowed value, or None.

  Returns:
    ``int(value)``.

  Raises:
    TypeError: not an integer. ValueError: outside ``[min_value, max_value]``.
  """
  if isinstance(value, (bool, np.bool_)) or not isinstance(
    value, numbers.Integral
  ):
    raise TypeError(
      f"{name} must be an int, got {type(value).__name__} {value!r}"
    )
  value = int(value)
  if min_value is not None and value < min_value:
    raise ValueError(f"{name} must be >= {min_value}, got {value}")
  if max_value is not None and value > max_value:
    raise ValueError(f"{name} must be <= {max_value}, got {value}")
  return value


def check_float(
  value: Any,
  name: str,
  *,
  min_value: float | None = None,
  max_value: float | None = None,
  min_inclusive: bool = True,
  max_inclusive: bool = True,
  allow_inf: bool = False,
) -> float:
  """A static real argument as a Python float: finite (NaN never passes) and in
  range.

  Args:
    value: the argument.
    name: its name in the caller's signature (used in the message).
    min_value: the lower bound, or None.
    max_value: the upper bound, or None.
    min_inclusive: whether ``min_value`` itself passes.
    max_inclusive: whether ``max_value`` itself passes.
    allow_inf: whether +-inf pass (still subject to the bounds).

  Returns:
    ``float(value)``.

  Raises:
    TypeError: not a real number. ValueError: NaN, infinite (unless
      ``allow_inf``) or out of range.
  """
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
    raise TypeError(
      f"{name} must be a real number, got {type(value).__name__} {value!r}"
    )
  value = float(value)
  if math.isnan(value) or (math.isinf(value) and not allow_inf):
    raise ValueError(f"{name} must be a finite number, got {value!r}")
  if min_value is not None and (
    value < min_value or (value == min_value and not min_inclusive)
  ):
    raise ValueError(
      f"{name} must be {'>=' if min_inclusive else '>'} {min_value}, "
      f"got {value!r}"
    )
  if max_value is not None and (
    value > max_value or (value == max_value and not max_inclusive)
  ):
    raise ValueError(
      f"{name} must be {'<=' if max_inclusive else '<'} {max_value}, "
      f"got {value!r}"
    )
  return value


def check_values(
  ok: Any, message: str, *, error: type[Exception] = ValueError
) -> bool | jax.Array:
  """A value check following the policy: raise when concrete, else return a
  traced flag.

  Args:
    ok: a boolean array (any shape) that must be all True for valid input.
    message: the error message (name the argument and the expected form).
    error: the exception type raised eagerly.

  Returns:
    ``True`` (a Python bool) when ``ok`` is concrete and all True; a traced
    boolean scalar when ``ok`` is traced, to be passed to :func:`poison`.

  Raises:
    ``error`` when ``ok`` is concrete and some entry is False.
  """
  if is_concrete(ok):
    if not bool(np.all(np.asarray(ok))):
      raise error(message)
    return True
  return jnp.all(ok)


def poison(tree: Any, ok: Any, *, int_fill: int = -1) -> Any:
  """Replaces every float leaf of ``tree`` by NaN (integer leaves by
  ``int_fill``) unless ``ok``.

  ``ok`` is what :func:`check_values` returned (several flags may be combined
  with ``&``); ``True`` returns ``tree`` unchanged. Bool leaves and non-array
  leaves are left alone.

  Args:
    tree: a pytree of arrays (and other leaves).
    ok: ``True``, or a traced boolean scalar.
    int_fill: the value that replaces integer leaves when ``ok`` is False.

  Returns:
    ``tree`` of the same structure, shapes and dtypes.
  """
  if ok is True:
    return tree
  ok = jnp.asarray(ok)
  if ok.dtype != jnp.bool_ or ok.ndim != 0:
    raise TypeError(
      "ok must be a boolean scalar (from check_values), "
      f"got {ok.dtype}{ok.shape}"
    )

  def leaf(x):
    if not isinstance(x, (jax.Array, np.ndarray)):
      return x
    if jnp.issubdtype(x.dtype, jnp.inexact):
      return jnp.where(ok, x, jnp.nan)
    if jnp.issubdtype(x.dtype, jnp.integer):
      return jnp.where(ok, x, jnp.asarray(int_fill, x.dtype))
    return x

  return jax.tree_util.tree_map(leaf, tree)


def check_path(value: Any, name: str) -> os.PathLike | str:
  """A filesystem path argument (str or ``os.PathLike``); raises TypeError
  otherwise.

  Args:
    value: the argument.
    name: its name in the caller's signature (used in the message).

  Returns:
    ``value`` unchanged.
  """
  if not isinstance(value, (str, os.PathLike)):
    raise TypeError(
      f"{name} must be a path (str or os.PathLike), "
      f"got {type(value).__name__} {value!r}"
    )
  return value


# The variant used by flashssm3d, dual_rate, logstop, locos and margins: the
# same eager rule, plus a ``checkify.debug_check`` under a trace (a no-op under
# a plain ``jax.jit``; wrapping the jitted function in ``checkify.checkify``
# turns it into the error message). Its flags are ``None`` for "checked eagerly,
# fine", and poisoning touches float leaves only.


def traced_flag(ok: Any, message: str) -> jax.Array:
  """Registers a checkify ``debug_check`` that all of the traced ``ok`` holds;
  returns ``all(ok)``."""
  ok = jnp.all(ok)
  checkify.debug_check(ok, message.replace("{", "{{").replace("}", "}}"))
  return ok


def debug_check_values(ok: Any, message: str) -> jax.Array | None:
  """Value check of the boolean array ``ok`` (all entries must hold).

  Concrete ``ok``: raises ``ValueError(message)`` when an entry is False, else
  returns None. Traced ``ok``: registers a checkify ``debug_check`` and returns
  the traced scalar ``all(ok)`` for :func:`poison_floats`.
  """
  if is_concrete(ok):
    check_values(ok, message)
    return None
  return traced_flag(ok, message)


def all_flags(*oks: Any) -> jax.Array | None:
  """Conjunction of flags from :func:`debug_check_values` (None: checked
  eagerly, fine)."""
  flags = [o for o in oks if o is not None]
  if not flags:
    return None
  out = flags[0]
  for o in flags[1:]:
    out = jnp.logical_and(out, o)
  return out


def poison_floats(tree: Any, ok: Any) -> Any:
  """Every float leaf of ``tree`` replaced by NaN where ``ok`` is False (None:
  unchanged)."""
  if ok is None:
    return tree

  def leaf(x):
    if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact):
      return jnp.where(ok, x, jnp.asarray(jnp.nan, x.dtype))
    return x

  return jax.tree.map(leaf, tree)
