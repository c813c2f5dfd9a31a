"""Config helpers: ml_collections files in, typed dataclasses at the library
boundary."""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard, TypeVar

import ml_collections
import numpy as np

T = TypeVar("T")

# Top-level config fields read by the harness (results writer), not by an
# experiment's code: config_to_dataclass drops them unless the dataclass
# declares them.
HARNESS_FIELDS = frozenset({"claims", "issue_verdicts", "report"})


def _as_dict(cfg: Any) -> dict[str, Any]:
  if isinstance(cfg, ml_collections.ConfigDict):
    return cfg.to_dict()
  if isinstance(cfg, Mapping):
    return dict(cfg)
  raise TypeError(
    "cfg must be an ml_collections.ConfigDict or a mapping, "
    f"got {type(cfg).__name__}"
  )


def config_to_dataclass(cfg: Any, cls: type[T]) -> T:
  """Converts a config into the dataclass ``cls``, rejecting unknown fields.

  Nested dataclass fields are converted recursively from nested configs. The
  harness fields (``HARNESS_FIELDS``: the claims, ``issue_verdicts`` and
  ``report``) are dropped unless ``cls`` declares them. Values are checked
  against the field annotations that are plain types (``int``, ``float``,
  ``str``, ``bool``, ``tuple``/``list``, ``X | None``, unions of those): an
  ``int`` field takes a Python or numpy integer (not a bool), a ``float`` field
  takes any real number (not a bool); other annotations are not checked.

  Args:
    cfg: an ``ml_collections.ConfigDict``, a mapping or a dataclass instance.
    cls: the dataclass type to build.

  Returns:
    an instance of ``cls``.

  Raises:
    ValueError: naming each unknown field and the allowed field names, or a
      required field that is missing.
    TypeError: naming a field whose value does not match its annotation (e.g.
      ``steps='ten'`` for ``steps: int``).
  """
  if not dataclasses.is_dataclass(cls):
    raise TypeError(f"cls must be a dataclass type, got {cls!r}")
  values = _as_dict(cfg)
  fields = {f.name: f for f in dataclasses.fields(cls)}
  values = {
    k: v for k, v in values.items() if k in fields or k not in HARNESS_FIELDS
  }
  unknown = sorted(set(values) - set(fields))
  if unknown:
    raise ValueError(
      f"Unknown config field(s) {unknown} for {cls.__name__}; "
      f"allowed fields are {sorted(fields)}."
    )
  kwargs = {}
  for name, value in values.items():
    ftype = fields[name].type
    target = _resolve_type(cls, name, ftype)
    if (
      isinstance(target, type)
      and dataclasses.is_dataclass(target)
      and isinstance(value, Mapping)
    ):
      value = config_to_dataclass(value, target)
    elif not _matches(value, target):
      raise TypeError(
        f"config field {cls.__name__}.{name} must be {_describe(target)}, got "
        f"{type(value).__name__} {value!r}"
      )
    kwargs[name] = value
  missing = [
    n
    for n, f in fields.items()
    if n not in kwargs
    and f.default is dataclasses.MISSING
    and f.default_factory is dataclasses.MISSING  # type: ignore[misc]
  ]
  if missing:
    raise ValueError(
      f"Missing required config field(s) {missing} for {cls.__name__}."
    )
  return cls(**kwargs)


# The kinds a base config's value can fix for its field, in the order they are
# tried (a bool is not an int here), as the annotations ``_matches`` checks; and
# their names in errors.
_KINDS = (bool, int, float, str, tuple)
_KIND_NAMES = {tuple: "sequence (tuple or list)", Mapping: "mapping"}


def _kind(value: Any) -> type | None:
  """The type a base config's value fixes for its field (None: any value
  fits)."""
  if isinstance(value, Mapping):
    return Mapping
  return next((t for t in _KINDS if _matches(value, t)), None)


def _check_view(
  values: Mapping[str, Any], base: Mapping[str, Any], path: str
) -> None:
  unknown = sorted(set(values) - set(base))
  missing = sorted(set(base) - set(values))
  if unknown:
    raise ValueError(
      f"unknown config field(s) {[path + k for k in unknown]}; "
      "the base config has "
      f"{sorted(base)}{' under ' + path.rstrip('.') if path else ''} (a "
      "misspelt name?)"
    )
  if missing:
    raise ValueError(
      f"config field(s) {[path + k for k in missing]} missing (the base sets "
      "them)"
    )
  for key, want in base.items():
    kind, value = _kind(want), values[key]
    if kind is Mapping and want and isinstance(value, Mapping):
      _check_view(value, want, f"{path}{key}.")
      continue
    if kind is None or value is None:
      continue
    if not (
      isinstance(value, Mapping) if kind is Mapping else _matches(value, kind)
    ):
      name = _KIND_NAMES.get(kind, kind.__name__)
      raise TypeError(
        f"config field {path}{key} must be of kind {name} like the base "
        f"config's {want!r}, got {type(value).__name__} {value!r}"
      )


def config_view(config: Any, base: Any) -> ml_collections.FrozenConfigDict:
  """A frozen view of ``config`` whose fields are exactly those of ``base``,
  each of its kind.

  The experiment's code reads its settings through this view; its default config
  file is the one place a field and its default are written (no dataclass copy
  of the fields). A variant config (``configs/full.py``, ``smoke.py``, a
  command-line override) that misspells a field, drops one, or gives one a value
  of another kind fails here, before any work, with the field's dotted name.

  Kinds: bool, int, float (an int fits a float field), str, sequence (tuple or
  list) and nested mapping (checked field by field, except an empty one, which
  takes any keys). A field that is None in either config takes any value. The
  harness fields (``HARNESS_FIELDS``: the claims, read by ``write_results`` from
  the run's config) are not in the view.

  Args:
    config: the run's ``ml_collections.ConfigDict`` (or a mapping).
    base: the experiment's base config (its ``configs/default.py``'s
      ``get_config()``).

  Returns:
    ``ml_collections.FrozenConfigDict`` of ``config`` without the
    harness fields: attribute access, immutable, hashable.

  Raises:
    ValueError: a field unknown to ``base``, or one ``base`` sets that
      ``config`` lacks.
    TypeError: a field whose value is of another kind than ``base``'s.

  Example:
    >>> import ml_collections
    >>> base = ml_collections.ConfigDict(dict(steps=10, lr=0.1, model=dict(width=8)))
    >>> cfg = config_view(dict(steps=20, lr=1, model=dict(width=16)), base)
    >>> cfg.model.width
    16
  """
  values = {
    k: v for k, v in _as_dict(config).items() if k not in HARNESS_FIELDS
  }
  reference = {
    k: v for k, v in _as_dict(base).items() if k not in HARNESS_FIELDS
  }
  _check_view(values, reference, "")
  return ml_collections.FrozenConfigDict(values)


def _resolve_type(cls: type, name: str, ftype: Any) -> Any:
  if isinstance(ftype, str):
    import typing

    try:
      hints = typing.get_type_hints(cls)
      return hints.get(name, ftype)
    except Exception:  # pylint: disable=broad-except
      return ftype
  return ftype


_UNCHECKED = object()


def _matches(value: Any, target: Any) -> bool:
  """Whether ``value`` fits the annotation ``target`` (True for annotations not
  understood)."""
  import types
  import typing

  if (
    target is Any
    or isinstance(target, str)
    or isinstance(target, typing.TypeVar)
  ):
    return True
  origin = typing.get_origin(target)
  if origin in (typing.Union, getattr(types, "UnionType", _UNCHECKED)):
    return any(_matches(value, t) for t in typing.get_args(target))
  if target is type(None):
    return value is None
  if target is bool:
    return isinstance(value, (bool, np.bool_))
  if target is int:
    return isinstance(value, numbers.Integral) and not isinstance(
      value, (bool, np.bool_)
    )
  if target is float:
    return isinstance(value, numbers.Real) and not isinstance(
      value, (bool, np.bool_)
    )
  if target is str:
    return isinstance(value, str)
  if target in (tuple, list) or origin in (tuple, list):
    return isinstance(value, (tuple, list))
  if isinstance(target, type) and dataclasses.is_dataclass(target):
    return isinstance(value, (target, Mapping))
  return True


def _describe(target: Any) -> str:
  name = getattr(target, "__name__", None)
  return (
    f"of type {name}"
    if name and not getattr(target, "__args__", None)
    else f"of type {target}"
  )


def validate_choice(value: Any, *, name: str, allowed: Iterable[Any]) -> Any:
  """Returns ``value`` if it is one of ``allowed``, else raises a ValueError
  naming both.

  A bool never matches an int of equal value (``True`` is not ``1`` here).

  Args:
    value: the value to check.
    name: the field's name, for the message.
    allowed: the allowed values.

  Returns:
    ``value`` unchanged.
  """
  allowed = list(allowed)
  try:
    ok = any(
      value is a
      or (value == a and isinstance(value, bool) == isinstance(a, bool))
      for a in allowed
    )
  except Exception:  # pylint: disable=broad-except  (e.g. arrays: ambiguous truth value)
    ok = False
  if not ok:
    raise ValueError(f"{name} must be one of {allowed}, got {value!r}.")
  return value


def validate_positive(
  value: Any, *, name: str, allow_zero: bool = False
) -> Any:
  """Returns ``value`` if it is a finite positive real number (NaN and inf never
  pass).

  Args:
    value: the value to check.
    name: the field's name, for the message.
    allow_zero: whether 0 passes.

  Returns:
    ``value`` unchanged.

  Raises:
    TypeError: not a real number. ValueError: NaN, infinite, negative, or zero
      without ``allow_zero``.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(
      f"{name} must be a real number, got {type(value).__name__} {value!r}."
    )
  if not math.isfinite(value):
    raise ValueError(f"{name} must be a finite number, got {value!r}.")
  if value < 0 or (value == 0 and not allow_zero):
    bound = ">= 0" if allow_zero else "> 0"
    raise ValueError(f"{name} must be {bound}, got {value!r}.")
  return value


def validate_seeds(
  value: Any, *, name: str = "seeds", min_count: int = 1
) -> Any:
  """Returns ``value`` if it is a seed count or a list of seeds with at least
  ``min_count``.

  Experiments take seeds as a count (``seeds = 3``: seeds 0, 1, 2 or
  ``seed, seed + 1, ...``) or as explicit seeds (``seeds = (0, 1, 2)``). Zero or
  a negative count, an empty or repeated list, or a non-integer seed would
  otherwise surface far from the config, as an error about stacking no arrays or
  as statistics over no runs.

  Args:
    value: an int ``>= min_count``, or a tuple / list of ``>= min_count``
      distinct ints ``>= 0``.
    name: the config field, for the error message.
    min_count: the fewest seeds the experiment can use (2 where a spread is
      needed).

  Returns:
    ``value`` unchanged.

  Raises:
    TypeError: not an int or a sequence of ints. ValueError: too few seeds, a
      repeated or a negative seed.
  """

  def is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(
      v, (bool, np.bool_)
    )

  if is_int(value):
    if value < min_count:
      raise ValueError(
        f"{name} must be a number of seeds >= {min_count} (or a list of "
        f"seeds), got {value!r}."
      )
    return value
  if not isinstance(value, (tuple, list)):
    raise TypeError(
      f"{name} must be a number of seeds or a tuple of int seeds, "
      f"got {type(value).__name__} {value!r}."
    )
  if not all(is_int(v) and v >= 0 for v in value):
    raise TypeError(f"{name} must hold int seeds >= 0, got {value!r}.")
  if len(value) < min_count:
    raise ValueError(
      f"{name} must name at least {min_count} seed(s), got {value!r}."
    )
  if len(set(value)) != len(value):
    raise ValueError(f"{name} must not repeat a seed, got {value!r}.")
  return value


# Config fields that hold learning rates, at any depth: lr, lrs,
# learning_rate(s), and names ending in _lr, _lrs, _learning_rate(s) (adamw_lrs,
# detector_lr, mmd_learning_rate, ...).
_LR_FIELD = re.compile(r"(^|_)(lr|lrs|learning_rate|learning_rates)$")


def _is_real(v: Any) -> TypeGuard[numbers.Real]:
  """True for a real number that is not a bool."""
  return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def validate_learning_rates(config: Any, *, name: str = "config") -> None:
  """Checks that every learning rate in a config is a finite number > 0.

  A field counts as a learning rate by its name (``lr``, ``lrs``,
  ``learning_rate``, ``learning_rates``, or a name ending in ``_lr``, ``_lrs``,
  ``_learning_rate``), at any depth of nested ``ConfigDict``s / mappings. It may
  hold a number or a sequence of numbers (a grid); an empty sequence (an arm
  switched off) passes. A sequence that holds anything other than numbers, such
  as a search-space spec ``('loguniform', 1e-3, 3e-2)``, and a string are left
  to the experiment. A negative, zero, NaN or infinite rate would otherwise
  train silently (a negative rate ascends the loss).

  Args:
    config: an ``ml_collections.ConfigDict`` or a mapping.
    name: the config's name in error messages.

  Raises:
    ValueError: naming the field (its dotted path) and the bad value.
  """
  items = (
    config.items()
    if isinstance(config, (ml_collections.ConfigDict, Mapping))
    else ()
  )
  for key, value in items:
    path = f"{name}.{key}"
    if isinstance(value, (ml_collections.ConfigDict, Mapping)):
      validate_learning_rates(value, name=path)
      continue
    if not isinstance(key, str) or not _LR_FIELD.search(key):
      continue
    if _is_real(value):
      values = [value]
    elif isinstance(value, (tuple, list)) and all(_is_real(v) for v in value):
      values = list(value)
    else:
      continue
    bad = [v for v in values if not (math.isfinite(v) and float(v) > 0)]
    if bad:
      raise ValueError(
        f"{path} must be a learning rate (a finite number > 0) or a sequence "
        f"of them, got {value!r}; {bad[0]!r} is not (a negative rate ascends "
        "the loss, zero never moves)."
      )
