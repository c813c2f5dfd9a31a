"""One place that resolves where real datasets live.

Resolution order (first hit wins):

1. the ``data_dir`` argument (from a config field);
2. the ``JAXPAPERS_DATA_DIR`` environment variable;
3. ``../shared/data`` beside the checkout, when it exists (tests and CI).

Nothing is ever downloaded: a dataset that none of these holds is an error that
names all three places.
"""

from __future__ import annotations

import os
import pathlib

ENV_VAR = "JAXPAPERS_DATA_DIR"

# <checkout>/jaxpapers/core/data.py -> <checkout>/../shared/data
_CHECKOUT_ROOT = pathlib.Path(__file__).resolve().parents[2]
_SIBLING_SHARED = _CHECKOUT_ROOT.parent / "shared" / "data"


def default_data_dirs() -> list[tuple[str, pathlib.Path | None]]:
  """Returns the candidate (source, path) pairs in resolution order (no argument)."""
  env = os.environ.get(ENV_VAR)
  return [
    (f"${ENV_VAR}", pathlib.Path(env).expanduser() if env else None),
    ("../shared/data beside the checkout", _SIBLING_SHARED),
  ]


def resolve_data_dir(
  data_dir: str | os.PathLike[str] | None = None,
  *,
  subdir: str = "",
  required: bool = True,
) -> pathlib.Path | None:
  """Resolves the directory holding a real dataset.

  Args:
    data_dir: an explicit directory (usually the ``data_dir`` config field); when
      given, ``<data_dir>/<subdir>`` must exist: it is never skipped silently and
      never replaced by another place (also with ``required=False``).
    subdir: a path inside the data directory that must exist (e.g. ``"hypergraph"``).
    required: when False and no ``data_dir`` is given, return None instead of
      raising if nothing is found.

  Returns:
    ``<data dir>/<subdir>`` as an absolute path.

  Raises:
    FileNotFoundError: when an explicit ``data_dir`` lacks ``subdir`` (naming it), or
      naming all three places looked at, when none holds ``subdir``.
    TypeError: ``data_dir`` or ``subdir`` is not a path.
  """
  if not isinstance(subdir, (str, os.PathLike)):
    raise TypeError(f"subdir must be a str, got {type(subdir).__name__} {subdir!r}")
  tried: list[str] = []
  if data_dir not in (None, ""):
    if not isinstance(data_dir, (str, os.PathLike)):
      raise TypeError(
        f"data_dir must be a path (str or os.PathLike) or None, got {type(data_dir).__name__} "
        f"{data_dir!r}"
      )
    path = pathlib.Path(data_dir).expanduser().resolve() / subdir
    if path.exists():
      return path
    raise FileNotFoundError(
      f"the data_dir argument {str(data_dir)!r} was given but {path} does not exist. An "
      f"explicit data_dir "
      f"is never replaced by ${ENV_VAR} or ../shared/data: fix the path, or leave data_dir "
      "unset to search those."
    )
  else:
    tried.append("  data_dir argument: not set")
  for source, base in default_data_dirs():
    if base is None:
      tried.append(f"  {source}: not set")
      continue
    path = (base / subdir).resolve()
    if path.exists():
      return path
    tried.append(f"  {source}: {path} (does not exist)")
  if not required:
    return None
  raise FileNotFoundError(
    f"Could not find the dataset directory {subdir!r}. Looked in, in order:\n"
    + "\n".join(tried)
    + f"\nPass data_dir=..., set {ENV_VAR}, or place the data in ../shared/data "
    "beside the checkout. Nothing is downloaded at run time."
  )
