"""One place that resolves where real datasets live, and keeps paths inside
their root.

Resolution order (the first place that is *given* decides):

1. the ``data_dir`` argument (from a config field);
2. the ``JAXPAPERS_DATA_DIR`` environment variable;
3. ``../shared/data`` beside the checkout, when it exists (tests and CI).

A place that is given (1 or 2) is used or is an error naming it: an explicit
directory that does not exist, or lacks the requested dataset, is never skipped
for the next place, so a run never silently reads other data than the one its
user pointed at. Only when neither is set does the search fall back to
``../shared/data``, and, if that fails too, callers that have a synthetic
stand-in may use it (``required=False``). :func:`locate_data_dir` also says
which of the places was used, for the run to record.

Nothing is ever downloaded: a dataset that none of these holds is an error that
names all three places.

:func:`resolve_inside` joins names taken from users or from data files (dataset
names, file names listed in an index) to a root folder and refuses any that
would leave it: absolute paths, ``..`` components and symlinks that point
outside.
"""

from __future__ import annotations

import os
import pathlib
from typing import NamedTuple

ENV_VAR = "JAXPAPERS_DATA_DIR"

# <checkout>/jaxpapers/core/data.py -> <checkout>/../shared/data
_CHECKOUT_ROOT = pathlib.Path(__file__).resolve().parents[2]
_SIBLING_SHARED = _CHECKOUT_ROOT.parent / "shared" / "data"

SOURCE_ARGUMENT = "data_dir argument"
SOURCE_ENV = f"${ENV_VAR}"
SOURCE_SHARED = "../shared/data beside the checkout"
SOURCE_NONE = "none found"


class DataLocation(NamedTuple):
  """Where a dataset was found, for the run to record.

  Attributes:
    path: ``<data dir>/<subdir>`` as an absolute path, or None when nothing was
      given and nothing was found (only with ``required=False``).
    source: which place it came from: ``"data_dir argument"``,
      ``"$JAXPAPERS_DATA_DIR"``, ``"../shared/data beside the checkout"``, or
      ``"none found"``.
  """

  path: pathlib.Path | None
  source: str


def default_data_dirs() -> list[tuple[str, pathlib.Path | None]]:
  """Returns the candidate (source, path) pairs in resolution order (no
  argument)."""
  env = os.environ.get(ENV_VAR)
  return [
    (SOURCE_ENV, pathlib.Path(env).expanduser() if env else None),
    (SOURCE_SHARED, _SIBLING_SHARED),
  ]


def resolve_inside(
  root: str | os.PathLike[str],
  *parts: str | os.PathLike[str],
  name: str = "name",
  within: str | os.PathLike[str] | None = None,
) -> pathlib.Path:
  """``root / parts[0] / parts[1] ...``, refused unless it stays inside
  ``root``.

  The root itself may be a symlink (e.g. a data folder linked into a checkout);
  what is checked is everything below it. Each part must be a relative path
  without ``..`` components, and the joined path, with every symlink that exists
  followed, must lie inside the resolved root (or inside ``within``, a folder
  above it that the caller trusts as well). The path need not exist.

  Args:
    root: the folder the parts are relative to.
    *parts: names taken from a user or a data file (an empty part adds nothing).
    name: what the parts are called in error messages (the argument or field
      they came from).
    within: the folder the result must stay inside; default ``root``.

  Returns:
    The joined path, resolved (absolute, symlinks followed).

  Raises:
    TypeError: ``root`` or a part is not a path.
    ValueError: a part is absolute or has a ``..`` component, or the joined path
      leaves the root through a symlink; the message names ``name``, the part
      and the root.

  Example:
    >>> resolve_inside("/data", "mail", "../../etc/passwd", name="dataset name")
    Traceback (most recent call last):
    ...
    ValueError: dataset name '../../etc/passwd' must be a relative path inside /data ...
  """
  if not isinstance(root, (str, os.PathLike)):
    raise TypeError(
      f"root must be a path (str or os.PathLike), got {type(root).__name__}"
    )
  for part in parts:
    if not isinstance(part, (str, os.PathLike)):
      raise TypeError(
        f"{name} must be a path (str or os.PathLike), "
        f"got {type(part).__name__} {part!r}"
      )
    pure = pathlib.PurePath(part)
    if pure.is_absolute() or pure.anchor or ".." in pure.parts:
      raise ValueError(
        f"{name} {os.fspath(part)!r} must be a relative path inside {root} "
        "without '..' components (absolute paths and '..' would read files "
        "outside it)"
      )
  base = pathlib.Path(root).expanduser().resolve()
  fence = (
    base if within is None else pathlib.Path(within).expanduser().resolve()
  )
  path = base.joinpath(*parts).resolve()
  if path != fence and not path.is_relative_to(fence):
    raise ValueError(
      f"{name} {os.fspath(pathlib.PurePath(*parts))!r} leads outside {fence}: "
      f"{base.joinpath(*parts)} resolves to {path} (through a symlink). "
      "Data must stay inside its root; copy it there or point the root at "
      "the folder that holds it."
    )
  return path


def _given(
  source: str, shown: str, base: pathlib.Path, subdir: str
) -> pathlib.Path:
  """``<base>/<subdir>`` of a place the user gave, or an error naming that
  place."""
  if not base.is_dir():
    raise FileNotFoundError(
      f"the {source} {shown} was given but {base} "
      f"{'is not a directory' if base.exists() else 'does not exist'}. "
      "An explicit data directory is never replaced by a later place "
      f"(${ENV_VAR}, ../shared/data) or by synthetic data: fix the path, "
      "or unset it to search those."
    )
  path = resolve_inside(base, subdir, name="subdir")
  if not path.exists():
    raise FileNotFoundError(
      f"the {source} {shown} was given but it has no {subdir!r} ({path} does "
      "not exist). An explicit data directory is never replaced by a later "
      f"place (${ENV_VAR}, ../shared/data) or by synthetic data: "
      "put the dataset there, or unset it to search those."
    )
  return path


def locate_data_dir(
  data_dir: str | os.PathLike[str] | None = None,
  *,
  subdir: str = "",
  required: bool = True,
) -> DataLocation:
  """Resolves the directory holding a real dataset and says where it came from.

  Args:
    data_dir: an explicit directory (usually the ``data_dir`` config field);
      ``None`` or ``""`` means not given.
    subdir: a relative path inside the data directory that must exist (e.g.
      ``"hypergraph"``); ``..`` components and symlinks leading outside are
      refused.
    required: when False and *neither* ``data_dir`` nor ``$JAXPAPERS_DATA_DIR``
      is given, return ``DataLocation(None, "none found")`` instead of raising
      if ``../shared/data`` lacks ``subdir``. A place that was given is an error
      whenever it lacks ``subdir``.

  Returns:
    A :class:`DataLocation` ``(path, source)``.

  Raises:
    FileNotFoundError: a given ``data_dir`` or ``$JAXPAPERS_DATA_DIR`` does not
      exist or lacks ``subdir`` (naming it); or, with ``required=True``, none of
      the three places holds ``subdir`` (naming all three).
    TypeError: ``data_dir`` or ``subdir`` is not a path.
    ValueError: ``subdir`` is absolute, has ``..`` components or leaves the data
      directory.
  """
  if not isinstance(subdir, (str, os.PathLike)):
    raise TypeError(
      f"subdir must be a str, got {type(subdir).__name__} {subdir!r}"
    )
  if data_dir not in (None, ""):
    if not isinstance(data_dir, (str, os.PathLike)):
      raise TypeError(
        "data_dir must be a path (str or os.PathLike) or None, "
        f"got {type(data_dir).__name__} {data_dir!r}"
      )
    base = pathlib.Path(data_dir).expanduser()
    shown = repr(str(data_dir))
    return DataLocation(
      _given(SOURCE_ARGUMENT, shown, base, subdir), SOURCE_ARGUMENT
    )
  tried = [f"  {SOURCE_ARGUMENT}: not set"]
  env = os.environ.get(ENV_VAR, "")
  if env:
    base = pathlib.Path(env).expanduser()
    shown = f"= {env!r}"
    return DataLocation(_given(SOURCE_ENV, shown, base, subdir), SOURCE_ENV)
  tried.append(f"  {SOURCE_ENV}: not set")
  path = resolve_inside(_SIBLING_SHARED, subdir, name="subdir")
  if path.exists():
    return DataLocation(path, SOURCE_SHARED)
  tried.append(f"  {SOURCE_SHARED}: {path} (does not exist)")
  if not required:
    return DataLocation(None, SOURCE_NONE)
  raise FileNotFoundError(
    f"Could not find the dataset directory {subdir!r}. Looked in, in order:\n"
    + "\n".join(tried)
    + (
      f"\nPass data_dir=..., set {ENV_VAR}, or place the data in "
      "../shared/data beside the checkout. Nothing is downloaded at run time."
    )
  )


def resolve_data_dir(
  data_dir: str | os.PathLike[str] | None = None,
  *,
  subdir: str = "",
  required: bool = True,
) -> pathlib.Path | None:
  """Resolves the directory holding a real dataset (:func:`locate_data_dir`
  without the source).

  Args:
    data_dir: an explicit directory (usually the ``data_dir`` config field);
      when given, ``<data_dir>/<subdir>`` must exist: it is never skipped
      silently and never replaced by another place (also with
      ``required=False``). ``$JAXPAPERS_DATA_DIR``, when set, is treated the
      same way.
    subdir: a relative path inside the data directory that must exist (e.g.
      ``"hypergraph"``).
    required: when False and no directory was given (neither argument nor
      environment variable), return None instead of raising if
      ``../shared/data`` lacks ``subdir``.

  Returns:
    ``<data dir>/<subdir>`` as an absolute path, or None (see ``required``).

  Raises:
    FileNotFoundError: when a given directory lacks ``subdir`` (naming it), or
      naming all three places looked at, when none holds ``subdir``.
    TypeError: ``data_dir`` or ``subdir`` is not a path.
    ValueError: ``subdir`` is absolute, has ``..`` components or leaves the data
      directory.
  """
  return locate_data_dir(data_dir, subdir=subdir, required=required).path
