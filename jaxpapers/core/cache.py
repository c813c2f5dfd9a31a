"""Files that hold computed values: written atomically by process 0, verified
when read.

Every file the harness keeps so that a rerun need not recompute something (a
finished cell of :class:`~jaxpapers.core.sweep.CellStore`, an experiment's
prepared data or embeddings, a row of a table) goes through this module, which
gives each of them the same three properties:

* **Atomic writes.** The content goes to a temporary file in the same directory,
  which is then renamed over the final path: a crash (``kill -9`` included)
  leaves the previous file or none, never a partial one.
* **Process-0 writes.** In a multi-process job only process 0 writes; the other
  processes read the same files and compute what is missing themselves (the
  computations are deterministic).
* **Verified reads.** Each file records the SHA-256 digest of its content. A
  file that cannot be parsed or whose digest does not match is *corrupt*:
  :func:`read_json` and :func:`read_arrays` raise :class:`CorruptFileError`
  naming it, and :func:`cached_json` and :func:`cached_arrays` log a warning
  naming it and compute the value again. Files written before digests were
  recorded (no digest field) are read unverified.

Two formats:

* JSON records (:func:`write_json` / :func:`read_json`): a JSON object with a
  ``"sha256"`` field, the digest of the record's canonical JSON (sorted keys, no
  spaces) without that field. numpy arrays and scalars are converted with
  ``tolist()`` / ``item()``.
* arrays (:func:`write_arrays` / :func:`read_arrays`): an ``.npz`` file of named
  numpy arrays whose member ``__sha256__`` holds the digest of the names,
  dtypes, shapes and bytes.

Example::

  data = core.cached_arrays(workdir / "data.npz", lambda: {"x": prepare(), "y": labels()})
  row = core.cached_json(workdir / "rows" / "baseline.json", lambda: evaluate("baseline"))

Paths are ``etils.epath`` paths, so remote directories work wherever epath does.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np
from absl import logging
from etils import epath

__all__ = [
  "CorruptFileError",
  "RowCache",
  "read_tree",
  "write_tree",
  "atomic_write",
  "cached_arrays",
  "cached_json",
  "read_arrays",
  "read_json",
  "write_arrays",
  "write_json",
]

DIGEST_KEY = "sha256"
_ARRAYS_DIGEST = "__sha256__"


class CorruptFileError(ValueError):
  """A cache or cell file that cannot be parsed or does not match its recorded
  digest.

  ``path`` is kept as an attribute (an ``etils.epath.Path``).

  Args:
    path: the file.
    reason: what is wrong with it (part of the message).
  """

  def __init__(self, path: Any, reason: str):
    self.path = epath.Path(path)
    super().__init__(f"{path} is corrupt: {reason}")


def _is_writer() -> bool:
  return jax.process_index() == 0


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> bool:
  """Writes ``data`` to ``path`` through a temporary file and a rename (process
  0 only).

  The parent directory is created if needed. A failure (or a kill) part-way
  leaves the previous file, or no file, and no temporary file on failure.

  Args:
    path: the file.
    data: its whole content (``str`` is written as UTF-8).

  Returns:
    Whether this process wrote the file (False on processes other than 0).
  """
  if not _is_writer():
    return False
  path = epath.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
  try:
    with tmp.open("wb") as f:
      f.write(data.encode() if isinstance(data, str) else data)
    tmp.replace(path)
  except BaseException:
    if tmp.exists():
      tmp.unlink()
    raise
  return True


# ---------------------------------------------------------------------- JSON --


def _json_default(obj: Any) -> Any:
  if isinstance(obj, np.ndarray):
    return obj.tolist()
  if isinstance(obj, np.generic):
    return obj.item()
  if isinstance(obj, jax.Array):
    return np.asarray(obj).tolist()
  raise TypeError(f"values must be JSON-serialisable, got {type(obj).__name__}")


def _canonical(record: Mapping[str, Any]) -> bytes:
  return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def _sha256(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def write_json(
  path: str | os.PathLike[str], record: Mapping[str, Any]
) -> dict[str, Any]:
  """Writes ``record`` as a JSON object with its digest, atomically (process 0
  only).

  Args:
    path: the file.
    record: a mapping of JSON-able values (numpy and JAX arrays and scalars are
      converted); it must not have a ``"sha256"`` key.

  Returns:
    The record as :func:`read_json` will return it (tuples become lists, numpy
    becomes Python), on every process.

  Raises:
    TypeError: a value is not JSON-serialisable (nothing is written).
    ValueError: ``record`` has a ``"sha256"`` key.
  """
  if not isinstance(record, Mapping):
    raise TypeError(
      "record must be a mapping name -> JSON value, "
      f"got {type(record).__name__}"
    )
  if DIGEST_KEY in record:
    raise ValueError(
      f"record must not have a {DIGEST_KEY!r} key (the digest goes there)"
    )
  normalized = json.loads(json.dumps(dict(record), default=_json_default))
  text = json.dumps(
    {**normalized, DIGEST_KEY: _sha256(_canonical(normalized))},
    separators=(",", ":"),
  )
  atomic_write(path, text)
  return normalized


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
  """The record of a file written by :func:`write_json`, verified against its
  digest.

  A JSON object without a ``"sha256"`` field (written before digests were
  recorded) is returned unverified.

  Raises:
    FileNotFoundError: no such file.
    CorruptFileError: the file is not a JSON object, or does not match its
      digest.
  """
  path = epath.Path(path)
  raw = path.read_bytes()
  try:
    record = json.loads(raw)
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    raise CorruptFileError(
      path, f"not valid JSON ({e}); it was cut off or overwritten"
    ) from e
  if not isinstance(record, dict):
    raise CorruptFileError(
      path, f"expected a JSON object, got {type(record).__name__}"
    )
  if DIGEST_KEY not in record:
    return record
  digest = record.pop(DIGEST_KEY)
  if digest != _sha256(_canonical(record)):
    raise CorruptFileError(
      path, "its content does not match its recorded SHA-256 digest"
    )
  return record


# -------------------------------------------------------------------- arrays --


def _arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
  h = hashlib.sha256()
  for name in sorted(arrays):
    a = np.ascontiguousarray(arrays[name])
    h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
    h.update(a.tobytes())
  return h.hexdigest()


def write_arrays(
  path: str | os.PathLike[str],
  arrays: Mapping[str, Any],
  *,
  compress: bool = False,
) -> dict[str, np.ndarray]:
  """Writes named arrays as an ``.npz`` file with their digest, atomically
  (process 0 only).

  Args:
    path: the file (conventionally ``*.npz``).
    arrays: name -> array-like (numeric, bool or string dtypes; no Python
      objects).
    compress: zip-deflate the members (``np.savez_compressed``).

  Returns:
    The arrays as numpy arrays (what :func:`read_arrays` returns), on every
    process.

  Raises:
    ValueError: a name is ``"__sha256__"``, or an array has the object dtype.
  """
  out = {str(k): np.asarray(v) for k, v in arrays.items()}
  if _ARRAYS_DIGEST in out:
    raise ValueError(
      f"array name {_ARRAYS_DIGEST!r} is reserved for the digest"
    )
  # np.savez would take it as its own flag and not save the array
  if "allow_pickle" in out:
    raise ValueError(
      "array name 'allow_pickle' cannot be stored (NumPy's savez reserves it)"
    )
  for k, v in out.items():
    if v.dtype == object:
      raise ValueError(
        f"array {k!r} has the object dtype; only plain dtypes can be cached"
      )
  if _is_writer():
    buf = io.BytesIO()
    # Called with the array names as keywords (any name but 'allow_pickle',
    # refused above).
    save: Callable[..., None] = np.savez_compressed if compress else np.savez
    save(buf, **out, **{_ARRAYS_DIGEST: np.asarray(_arrays_digest(out))})
    atomic_write(path, buf.getvalue())
  return out


def read_arrays(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
  """The arrays of a file written by :func:`write_arrays`, verified against
  their digest.

  An ``.npz`` file without a digest (written before digests were recorded) is
  returned unverified.

  Raises:
    FileNotFoundError: no such file.
    CorruptFileError: the file is not a readable ``.npz`` file, or does not
      match its digest.
  """
  path = epath.Path(path)
  if not path.exists():
    raise FileNotFoundError(f"no such file: {path}")
  try:
    with path.open("rb") as f, np.load(f, allow_pickle=False) as z:
      out = {k: z[k] for k in z.files}
  except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as e:
    raise CorruptFileError(
      path, f"not a readable .npz file ({type(e).__name__}: {e})"
    ) from e
  if _ARRAYS_DIGEST not in out:
    return out
  digest = str(out.pop(_ARRAYS_DIGEST))
  if digest != _arrays_digest(out):
    raise CorruptFileError(
      path, "its arrays do not match their recorded SHA-256 digest"
    )
  return out


# -------------------------------------------------------------------- cached --


def _cached(
  path: Any,
  compute: Callable[[], Any],
  read: Callable[[Any], Any],
  write: Callable[[Any, Any], Any],
  valid: Callable[[Any], bool] | None,
) -> Any:
  path = epath.Path(path)
  if path.exists():
    try:
      value = read(path)
    except CorruptFileError as e:
      logging.warning("%s; computing it again", e)
    else:
      if valid is None or valid(value):
        return value
      logging.info(
        "%s holds a value for other inputs; computing it again", path
      )
  return write(path, compute())


def cached_json(
  path: str | os.PathLike[str],
  compute: Callable[[], Any],
  *,
  valid: Callable[[Any], bool] | None = None,
) -> Any:
  """The JSON value cached in ``path``, or ``compute()`` written there and
  returned.

  Args:
    path: the cache file.
    compute: ``() -> value``, a JSON-able value (numpy converted); called when
      the file is missing, corrupt (a warning names it) or not ``valid``.
    valid: optional ``value -> bool``; False marks a readable value as stale
      (computed for other inputs), so it is recomputed.

  Returns:
    The value as read back from the file (JSON types), whether computed now or
    not.
  """
  return _cached(
    path,
    compute,
    _read_value,
    lambda p, v: write_json(p, {"value": v})["value"],
    valid,
  )


def _read_value(path: Any) -> Any:
  record = read_json(path)
  if "value" not in record:
    raise CorruptFileError(path, 'the record has no "value" field')
  return record["value"]


def cached_arrays(
  path: str | os.PathLike[str],
  compute: Callable[[], Mapping[str, Any]],
  *,
  valid: Callable[[dict[str, np.ndarray]], bool] | None = None,
  compress: bool = False,
) -> dict[str, np.ndarray]:
  """The arrays cached in ``path`` (``.npz``), or ``compute()`` written there
  and returned.

  Args:
    path: the cache file.
    compute: ``() -> {name: array}``; called when the file is missing, corrupt
      (a warning names it) or not ``valid``.
    valid: optional ``arrays -> bool``; False marks readable arrays as stale.
    compress: write a compressed ``.npz``.

  Returns:
    name -> numpy array, the same whether computed now or read back.
  """
  return _cached(
    path,
    compute,
    read_arrays,
    lambda p, v: write_arrays(p, v, compress=compress),
    valid,
  )


class RowCache:
  """Rows of named arrays keyed by string, kept in one verified ``.npz`` file.

  The memo of an expensive per-item computation (an LM reading one context, ...)
  that is filled a batch at a time: :meth:`put` adds rows and rewrites the file
  (atomically, through :func:`write_arrays`, process 0 only), so a killed run
  resumes with every batch it finished. The file holds ``keys`` (``[R]``
  strings) and one ``[R, ...]`` array per field. A corrupt file is left out with
  a warning naming it: its rows are computed again.

  Args:
    path: the cache file (``*.npz``), or None for a memo kept in memory only.
    fields: the names of every row's arrays.

  Example::

    cache = RowCache(workdir / "contexts.npz", ("z", "logp"))
    todo = cache.missing(keys)
    cache.put(dict(zip(todo, read(todo))))  # each value: {"z": ..., "logp": ...}
    arrays = cache.stack(keys)  # {"z": [len(keys), ...], "logp": [len(keys)]}
  """

  def __init__(
    self, path: str | os.PathLike[str] | None, fields: tuple[str, ...]
  ):
    self.path, self.fields = path, tuple(fields)
    self.rows: dict[str, dict[str, np.ndarray]] = {}
    if path is not None and epath.Path(path).exists():
      try:
        z = read_arrays(path)
      except CorruptFileError as e:
        logging.warning("%s; computing its rows again", e)
      else:
        for i, k in enumerate(str(k) for k in z["keys"]):
          self.rows[k] = {f: z[f][i] for f in self.fields}

  def __len__(self) -> int:
    return len(self.rows)

  def missing(self, keys) -> list[str]:
    """The keys without a row, each once, in the order of ``keys``.

    Args:
      keys: iterable of row keys.

    Returns:
      list of str.
    """
    return list(dict.fromkeys(k for k in keys if k not in self.rows))

  def put(self, rows: Mapping[str, Mapping[str, Any]]) -> None:
    """Adds ``rows`` (key -> {field: array}) and rewrites the file.

    Args:
      rows: the new rows, each with every field.
    """
    for k, row in rows.items():
      self.rows[k] = {f: np.asarray(row[f]) for f in self.fields}
    if self.path is not None and self.rows:
      keys = list(self.rows)
      arrays = {
        f: np.stack([self.rows[k][f] for k in keys]) for f in self.fields
      }
      write_arrays(self.path, {"keys": np.asarray(keys), **arrays})

  def stack(self, keys) -> dict[str, np.ndarray]:
    """The rows of ``keys`` stacked per field (each key must have a row).

    Args:
      keys: sequence of row keys.

    Returns:
      ``{field: [len(keys), ...]}``.
    """
    return {f: np.stack([self.rows[k][f] for k in keys]) for f in self.fields}


def write_tree(path: str | os.PathLike[str], tree: Any) -> None:
  """Writes the array leaves of a pytree (``arr_<i>`` in ``jax.tree.leaves``
  order) through :func:`write_arrays`; :func:`read_tree` reads them back into a
  tree of the same structure.

  Args:
    path: the file (``*.npz``).
    tree: a pytree of arrays.
  """
  write_arrays(
    path, {f"arr_{i}": x for i, x in enumerate(jax.tree.leaves(tree))}
  )


def read_tree(path: str | os.PathLike[str], like: Any) -> Any:
  """The tree written by :func:`write_tree`, in the structure of ``like``.

  Args:
    path: the file.
    like: a pytree of the structure written (its leaves' values are not read).

  Returns:
    The tree of numpy arrays.

  Raises:
    FileNotFoundError: no such file.
    CorruptFileError: the file is cut off or does not match its digest, or holds
      another number of leaves than ``like``.
  """
  z = read_arrays(path)
  treedef = jax.tree.structure(like)
  if len(z) != treedef.num_leaves:
    raise CorruptFileError(
      path, f"it holds {len(z)} arrays, the tree {treedef.num_leaves}"
    )
  return jax.tree.unflatten(treedef, [z[f"arr_{i}"] for i in range(len(z))])
