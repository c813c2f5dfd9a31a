"""Loaders for the raw hypergraph / directed-graph benchmark files (never
download).

Every loader takes ``data_dir``, the root folder holding ``mail/``,
``cocitation/``, ``synthetic/``, ``telegram/``, ``heterophilous/`` and
``planetoid/`` exactly as published by their repositories (Stefa1994/GeDi-HNN,
SherylHYX/pytorch_geometric_signed_directed,
yandex-research/heterophilous-graphs, kimiyoung/planetoid). Pickles are read
with :class:`RestrictedUnpickler`, which allows only the globals those files
reference. Every file read must lie inside ``data_dir``: a dataset ``name`` that
is absolute or has ``..`` components, and a file or folder that is a symlink
pointing outside ``data_dir``, raise ``ValueError`` (``data_dir`` itself may be
a symlink).
"""

from __future__ import annotations

import collections
import io
import os
import pathlib
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from jaxpapers.core.data import resolve_inside
from jaxpapers.hypergraph import _structure as st

if TYPE_CHECKING:
  import scipy.sparse

__all__ = [
  "RestrictedUnpickler",
  "safe_load_pickle",
  "random_splits",
  "load",
  "load_mail",
  "load_cocitation",
  "load_gedi_synthetic",
  "load_telegram",
  "load_heterophilous",
  "load_planetoid",
  "ships_splits",
  "DATASETS",
  "FORMATS",
]


def _allowed():
  import numpy.core.multiarray  # noqa: F401  (numpy 2 keeps it as a shim)
  import scipy.sparse

  mp = {
    ("__builtin__", "set"): set,
    ("builtins", "set"): set,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
    ("collections", "defaultdict"): collections.defaultdict,
    ("numpy", "dtype"): np.dtype,
    ("numpy", "ndarray"): np.ndarray,
    ("scipy.sparse.csr", "csr_matrix"): scipy.sparse.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): scipy.sparse.csr_matrix,
  }
  from numpy.lib import format as _fmt  # noqa: F401

  try:
    from numpy._core import multiarray as ma
    from numpy._core import numeric as nu
  except ImportError:  # numpy < 2
    from numpy.core import multiarray as ma
    from numpy.core import numeric as nu
  for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    mp[(mod, "_reconstruct")] = ma._reconstruct
    mp[(mod, "scalar")] = ma.scalar
  for mod in ("numpy.core.numeric", "numpy._core.numeric"):
    # numpy's stubs leave out this private helper, which old pickles of arrays
    # reference.
    mp[(mod, "_frombuffer")] = nu._frombuffer  # pyright: ignore[reportAttributeAccessIssue]
  return mp


class RestrictedUnpickler(pickle.Unpickler):
  """Unpickler that resolves only numpy arrays/dtypes/scalars, scipy CSR and
  builtin containers.

  Old module paths (``numpy.core``, ``scipy.sparse.csr``, Python 2
  ``__builtin__``) are mapped to their current homes. Any other global raises
  ``pickle.UnpicklingError``.
  """

  _ALLOWED = None

  def find_class(self, module: str, name: str) -> object:
    """Resolves a global of the allow-list.

    Args:
      module: the module path written in the pickle (old numpy/scipy/Python 2
        paths accepted).
      name: the global's name in that module.

    Returns:
      The class or function the pickle may construct.

    Raises:
      pickle.UnpicklingError: ``module.name`` is not on the allow-list.
    """
    if RestrictedUnpickler._ALLOWED is None:
      RestrictedUnpickler._ALLOWED = _allowed()
    try:
      return RestrictedUnpickler._ALLOWED[(module, name)]
    except KeyError:
      raise pickle.UnpicklingError(
        f"global {module}.{name} is not allowed in a data pickle"
      ) from None


def safe_load_pickle(path: str | os.PathLike[str]) -> object:
  """Loads a data pickle with :class:`RestrictedUnpickler`
  (``encoding='latin1'`` for Python 2).

  Args:
    path: the pickle file.

  Returns:
    The unpickled object (numpy arrays, scipy CSR matrices, builtin containers).

  Raises:
    FileNotFoundError: no file at ``path``.
    pickle.UnpicklingError: the pickle references a global outside the
      allow-list (naming the file).
    ValueError: the file is empty, truncated or not a pickle (naming the file).
  """
  path = pathlib.Path(_check_dir(path, "path"))
  if not path.is_file():
    raise FileNotFoundError(f"missing data file: {path}")
  raw = path.read_bytes()
  if not raw:
    raise ValueError(f"data pickle {path} is empty")
  try:
    return RestrictedUnpickler(io.BytesIO(raw), encoding="latin1").load()
  except pickle.UnpicklingError as e:
    if "is not allowed" in str(e):
      raise pickle.UnpicklingError(f"{path}: {e}") from None
    raise ValueError(f"data pickle {path} is corrupt or truncated ({e})") from e
  except (
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    UnicodeDecodeError,
    MemoryError,
  ) as e:
    raise ValueError(
      f"data pickle {path} is corrupt or truncated ({type(e).__name__}: {e})"
    ) from e


_T = TypeVar("_T")


def _load_pickle_of(path: pathlib.Path, kind: type[_T]) -> _T:
  """:func:`safe_load_pickle`, refusing (``ValueError`` naming the file)
  anything not a ``kind``."""
  obj = safe_load_pickle(path)
  if not isinstance(obj, kind):
    raise ValueError(
      f"data pickle {path} holds a {type(obj).__name__}, "
      f"expected a {kind.__name__}"
    )
  return obj


def _check_dir(value, name):
  if not isinstance(value, (str, os.PathLike)):
    raise TypeError(
      f"{name} must be a path (str or os.PathLike), "
      f"got {type(value).__name__} {value!r}"
    )
  return value


def _load_array_file(path: pathlib.Path, what: str):
  """``np.load`` / ``scipy.sparse.load_npz`` with the file named in every
  error."""
  import scipy.sparse

  try:
    if what == "sparse":
      return scipy.sparse.load_npz(path)
    return np.load(path, allow_pickle=False)
  except FileNotFoundError:
    raise
  except Exception as e:  # pylint: disable=broad-except  (zipfile, numpy and pickle errors)
    raise ValueError(
      f"data file {path} is corrupt or truncated ({type(e).__name__}: {e})"
    ) from e


def _need(path: pathlib.Path) -> pathlib.Path:
  if not path.exists():
    raise FileNotFoundError(f"missing data file: {path}")
  return path


def _check_name(name, *, separators: bool = True) -> str:
  """A dataset name: a non-empty str (a folder or file stem under its format
  folder)."""
  if not isinstance(name, str) or not name:
    raise TypeError(
      "name must be a non-empty str (a dataset's folder or file stem), "
      f"got {name!r}"
    )
  if not separators and ("/" in name or os.sep in name):
    raise ValueError(f"name must be a file-name stem without '/', got {name!r}")
  return name


def _dataset_dir(data_dir, *parts: str) -> pathlib.Path:
  """``<data_dir>/<parts>`` resolved; names with '..', absolute names and
  symlinks out refused."""
  return resolve_inside(_check_dir(data_dir, "data_dir"), *parts, name="name")


def _data_file(data_dir, *parts: str) -> pathlib.Path:
  """An existing data file ``<data_dir>/<parts>``, refused when a symlink leads
  outside."""
  return _need(resolve_inside(data_dir, *parts, name="data file"))


def random_splits(
  y: npt.ArrayLike,
  seed: int,
  *,
  train: float = 0.5,
  val: float = 0.25,
  num_splits: int = 10,
  per_class: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Seeded random train/val/test masks, bool[num_splits, n] each.

  ``per_class=True`` draws the fractions inside every class (stratified, e.g.
  Telegram's 60/20/20); otherwise over all nodes (the GeDi/AllSet 50/25/25
  protocol). Split r uses ``np.random.default_rng([seed, r])`` so each split is
  reproducible on its own.

  Args:
    y: [n] labels (only their classes matter, for ``per_class``).
    seed: non-negative int.
    train: fraction of nodes in the training set, in (0, 1).
    val: fraction in the validation set; the rest is the test set.
    num_splits: R, the number of splits.
    per_class: draw the fractions within every class (stratified).

  Returns:
    ``(train_mask, val_mask, test_mask)``, each bool [R, n]; every node is in
    exactly one of them in each split.
  """
  y = np.asarray(y)
  if y.ndim != 1 or y.size == 0:
    raise ValueError(
      f"y must be a non-empty 1-D label array, got shape {y.shape}"
    )
  if (
    isinstance(seed, (bool, np.bool_))
    or not isinstance(seed, (int, np.integer))
    or seed < 0
  ):
    raise TypeError(f"seed must be a non-negative int, got {seed!r}")
  if (
    isinstance(num_splits, (bool, np.bool_))
    or not isinstance(num_splits, (int, np.integer))
    or num_splits < 1
  ):
    raise ValueError(f"num_splits must be a positive int, got {num_splits!r}")
  if not (0 < train < 1 and 0 <= val < 1 and train + val < 1):
    raise ValueError(
      f"need 0 < train, 0 <= val and train + val < 1, got {train}, {val}"
    )
  n = y.shape[0]
  out = np.zeros((3, num_splits, n), bool)
  groups = (
    [np.flatnonzero(y == c) for c in np.unique(y)]
    if per_class
    else [np.arange(n)]
  )
  for r in range(num_splits):
    rng = np.random.default_rng([seed, r])
    for g in groups:
      p = rng.permutation(g)
      a = int(round(train * p.size))
      b = a + int(round(val * p.size))
      out[0, r, p[:a]] = True
      out[1, r, p[a:b]] = True
      out[2, r, p[b:]] = True
  return out[0], out[1], out[2]


class _SplitProtocol(TypedDict):
  per_class: bool
  train: float
  val: float


# The reference's random-split protocol for mail and co-citation: 50/25/25 over
# all nodes.
_RANDOM_50_25_25 = _SplitProtocol(per_class=False, train=0.5, val=0.25)


def _degree_feature(inc: st.Incidence) -> np.ndarray:
  return np.asarray(inc.deg_node, np.float32)[:, None]


def _finish(
  inc: st.Incidence,
  x: npt.ArrayLike,
  y: npt.ArrayLike,
  name: str,
  *,
  masks: npt.NDArray[np.bool_] | None = None,
  split_seed: int = 0,
  num_splits: int = 10,
  per_class: bool = True,
  train: float = 0.6,
  val: float = 0.2,
  directed: bool = True,
) -> st.HypergraphData:
  """The dataset from its parts: seeded splits unless ``masks`` [3, R, n] is
  given."""
  y = np.asarray(y, np.int64)
  if masks is None:
    tr, va, te = random_splits(
      y,
      split_seed,
      train=train,
      val=val,
      num_splits=num_splits,
      per_class=per_class,
    )
  else:
    tr, va, te = masks
  data = st.make_data(
    inc, x, y, train_mask=tr, val_mask=va, test_mask=te, name=name
  )
  return data if directed else st.as_undirected(data)


def load_mail(
  data_dir: str | os.PathLike[str],
  name: str = "enroll",
  *,
  split_seed: int = 0,
  num_splits: int = 10,
  directed: bool = True,
  q: float = 0.25,
) -> st.HypergraphData:
  """email-Enron (``name='enroll'``) or email-EU (``'EU'``): star construction,
  degree feature.

  Note: >99.9% of email-EU edges have ``src < dst``, so its "direction" may be
  an id-order artefact of the released file; we reproduce the file as is.
  Splits: seeded 50/25/25 over all nodes (not stratified), the reference's
  protocol.

  Args:
    data_dir: the folder holding ``mail/<name>/``.
    name: ``'enroll'`` or ``'EU'``.
    split_seed: seed of the generated splits.
    num_splits: number of splits.
    directed: False gives the undirected version (:func:`as_undirected`).
    q: the phase parameter of the tails.

  Returns:
    A :class:`HypergraphData` with one [n, 1] degree feature and [num_splits, n]
    masks.
  """
  parts = ("mail", _check_name(name))
  _dataset_dir(data_dir, *parts)
  edges = np.asarray(
    safe_load_pickle(_data_file(data_dir, *parts, "weight_graph.pickle")),
    np.int64,
  )
  y = np.asarray(
    safe_load_pickle(_data_file(data_dir, *parts, "weight_label.pickle")),
    np.int64,
  )
  n = y.shape[0]
  inc = st.from_directed_edges(edges[:, 0], edges[:, 1], n, q=q)
  return _finish(
    inc,
    _degree_feature(inc),
    y,
    f"mail/{name}",
    split_seed=split_seed,
    num_splits=num_splits,
    directed=directed,
    **_RANDOM_50_25_25,
  )


def load_cocitation(
  data_dir: str | os.PathLike[str],
  name: str = "cora",
  *,
  split_seed: int = 0,
  num_splits: int = 10,
  directed: bool = True,
  q: float = 0.25,
) -> st.HypergraphData:
  """Co-citation Cora/Citeseer/Pubmed rebuilt as a directed citation graph
  [reconstruction].

  ``hypergraph.pickle`` maps a citing row to the set of rows it cites; we
  rebuild the citation edges ``cited -> citing`` and apply the star construction
  with the cited paper as the tail (as ``.cites`` rows are
  ``cited<TAB>citing``). Papers that cite only one in-set paper are missing from
  the pickle, so e.g. Cora has 4,786 instead of 5,429 citations. Pubmed has no
  feature matrix: the degree feature is used. ``directed=False`` instead returns
  the AllSet undirected co-citation hypergraph ``{citing} u cited(citing)`` plus
  self-loops. Splits: seeded 50/25/25 over all nodes (not stratified), the
  reference's protocol.

  Args:
    data_dir: the folder holding ``cocitation/<name>/``.
    name: ``'cora'``, ``'citeseer'`` or ``'pubmed'``.
    split_seed: seed of the generated splits.
    num_splits: number of splits.
    directed: False gives the undirected co-citation hypergraph.
    q: the phase parameter of the tails.

  Returns:
    A :class:`HypergraphData` with [n, F] features and [num_splits, n] masks.
  """
  parts = ("cocitation", _check_name(name))
  _dataset_dir(data_dir, *parts)
  hyp = _load_pickle_of(_data_file(data_dir, *parts, "hypergraph.pickle"), dict)
  y = np.asarray(
    safe_load_pickle(_data_file(data_dir, *parts, "labels.pickle")), np.int64
  )
  n = y.shape[0]
  src, dst = [], []
  for citing, cited in hyp.items():
    for c in cited:
      src.append(int(c))
      dst.append(int(citing))
  if directed:
    inc = st.from_directed_edges(np.asarray(src), np.asarray(dst), n, q=q)
  else:
    inc = st.from_hyperedges(
      [sorted({int(k)} | {int(c) for c in v}) for k, v in hyp.items()], n
    )
  feat = resolve_inside(data_dir, *parts, "features.pickle", name="data file")
  if feat.exists():
    import scipy.sparse

    x = np.asarray(
      _load_pickle_of(feat, scipy.sparse.csr_matrix).todense(), np.float32
    )
  else:
    x = _degree_feature(inc)
  return _finish(
    inc,
    x,
    y,
    f"cocitation/{name}",
    split_seed=split_seed,
    num_splits=num_splits,
    directed=True if directed else False,
    **_RANDOM_50_25_25,
  )


def load_gedi_synthetic(
  data_dir: str | os.PathLike[str],
  name: str = "inter10",
  *,
  directed: bool = True,
  features: str = "degree",
  split_seed: int = 0,
  num_splits: int = 10,
  q: float = 0.25,
  feature_seed: int = 0,
) -> st.HypergraphData:
  """GeDi-HNN's 500-node planted-class sets ``synthetic/inter{10,30,50}``.

  The directed pickle maps a tail tuple to a head tuple (``[()]`` marks an
  undirected hyperedge). Features are not in the files: ``'degree'`` (default)
  or ``'gaussian'`` (class means plus unit noise, 16-d, seeded by
  ``feature_seed``) [reconstruction].

  Args:
    data_dir: the folder holding ``synthetic/<name>/``.
    name: ``'inter10'``, ``'inter30'`` or ``'inter50'``.
    directed: read the directed pickle (True) or the undirected one.
    features: ``'degree'`` ([n, 1]) or ``'gaussian'`` ([n, 16]).
    split_seed: seed of the generated splits (per-class 60/20/20).
    num_splits: number of splits.
    q: the phase parameter of the tails.
    feature_seed: seed of the Gaussian features.

  Returns:
    A :class:`HypergraphData` with [num_splits, n] masks.
  """
  parts = ("synthetic", _check_name(name))
  _dataset_dir(data_dir, *parts)
  y = np.asarray(
    safe_load_pickle(_data_file(data_dir, *parts, "label.pickle")), np.int64
  )
  n = y.shape[0]
  if directed:
    d = _load_pickle_of(
      _data_file(data_dir, *parts, "hypergraph_directed.pickle"), dict
    )
    tails, heads = [], []
    for t, h in d.items():
      if len(h) == 1 and isinstance(h[0], tuple) and len(h[0]) == 0:
        tails.append([])
        heads.append([int(v) for v in t])
      else:
        tails.append([int(v) for v in t])
        heads.append([int(v) for v in h])
    inc = st.from_directed_hyperedges(tails, heads, n, q=q)
  else:
    d = _load_pickle_of(
      _data_file(data_dir, *parts, "hypergraph_undirected.pickle"), dict
    )
    inc = st.from_hyperedges([[int(v) for v in d[k]] for k in sorted(d)], n)
  if features == "degree":
    x = _degree_feature(inc)
  elif features == "gaussian":
    rng = np.random.default_rng(feature_seed)
    means = rng.normal(size=(int(y.max()) + 1, 16))
    x = means[y] + rng.normal(size=(n, 16))
  else:
    raise ValueError(
      f"features must be 'degree' or 'gaussian', got {features!r}"
    )
  return _finish(
    inc,
    x,
    y,
    f"synthetic/{name}",
    split_seed=split_seed,
    num_splits=num_splits,
    directed=directed,
  )


def load_telegram(
  data_dir: str | os.PathLike[str],
  *,
  split_seed: int = 0,
  num_splits: int = 10,
  directed: bool = True,
  q: float = 0.25,
) -> st.HypergraphData:
  """Telegram (245 nodes, 4 classes): star construction on the weighted
  adjacency.

  Standard protocol: a 1-d N(0, 1) feature from ``numpy.random.RandomState(0)``
  and 10 random per-class 60/20/20 splits.

  Args:
    data_dir: the folder holding ``telegram/``.
    split_seed: seed of the generated splits.
    num_splits: number of splits.
    directed: False gives the undirected version.
    q: the phase parameter of the tails.

  Returns:
    A :class:`HypergraphData` with one [245, 1] feature and [num_splits, 245]
    masks.
  """
  _dataset_dir(data_dir, "telegram")
  adj = _load_array_file(
    _data_file(data_dir, "telegram", "telegram_adj.npz"), "sparse"
  ).tocoo()
  y = _load_array_file(
    _data_file(data_dir, "telegram", "telegram_labels.npy"), "dense"
  )
  y = y.astype(np.int64)
  n = y.shape[0]
  inc = st.from_directed_edges(adj.row, adj.col, n, q=q)
  x = np.random.RandomState(0).normal(size=(n, 1)).astype(np.float32)
  return _finish(
    inc,
    x,
    y,
    "telegram",
    split_seed=split_seed,
    num_splits=num_splits,
    directed=directed,
  )


def _fixed_split_count(
  name: str, available: int, num_splits, split_seed
) -> int:
  """How many of a dataset's shipped splits to keep (all for
  ``num_splits=None``)."""
  if split_seed is not None:
    raise ValueError(
      f"{name} ships {available} fixed split(s), so split_seed={split_seed!r} "
      "does not apply (it seeds generated splits); "
      "pass split_seed=None and choose the first splits with num_splits"
    )
  if num_splits is None:
    return available
  if (
    isinstance(num_splits, (bool, np.bool_))
    or not isinstance(num_splits, (int, np.integer))
    or not 1 <= num_splits <= available
  ):
    raise ValueError(
      f"num_splits must be an int in [1, {available}] for {name}, "
      f"which ships {available} fixed split(s), or None for all of them; "
      f"got {num_splits!r}"
    )
  return int(num_splits)


def load_heterophilous(
  data_dir: str | os.PathLike[str],
  name: str = "texas",
  *,
  num_splits: int | None = None,
  split_seed: None = None,
  directed: bool = True,
  q: float = 0.25,
) -> st.HypergraphData:
  """yandex-research ``.npz`` sets (chameleon_filtered[_directed], texas,
  cornell, ...).

  Edge list rows are ``(src, dst)``; star construction with ``src`` as tail. The
  splits shipped in the file are used: all of them (``num_splits=None``) or the
  first ``num_splits``; asking for more than the file has, or for a
  ``split_seed``, raises ``ValueError``. A file that lacks one of the keys
  ``node_features``, ``node_labels``, ``edges``, ``train_masks``, ``val_masks``,
  ``test_masks`` raises ``ValueError`` naming the file and the key.

  Args:
    data_dir: the folder holding ``heterophilous/<name>.npz``.
    name: the file stem, e.g. ``'texas'`` or ``'chameleon_filtered_directed'``.
    num_splits: the first ``num_splits`` shipped splits, or None for all of
      them.
    split_seed: must be None (the splits are fixed).
    directed: False gives the undirected version.
    q: the phase parameter of the tails.

  Returns:
    A :class:`HypergraphData` with the file's [n, F] features and
    [num_splits, n] masks.
  """
  _dataset_dir(data_dir, "heterophilous", _check_name(name))
  path = _data_file(data_dir, "heterophilous", f"{name}.npz")
  keys = (
    "node_features",
    "node_labels",
    "edges",
    "train_masks",
    "val_masks",
    "test_masks",
  )
  with _load_array_file(path, "dense") as z:
    missing = [k for k in keys if k not in z.files]
    if missing:
      raise ValueError(
        f"data file {path} lacks the key(s) {missing} (it has "
        f"{sorted(z.files)}); expected {list(keys)}"
      )
    arrays = {}
    for k in keys:
      try:
        arrays[k] = z[k]
      except Exception as err:  # pylint: disable=broad-except  (truncated zip members)
        raise ValueError(
          f"data file {path} is corrupt or truncated at key {k!r} "
          f"({type(err).__name__}: {err})"
        ) from err
  x, y, e = arrays["node_features"], arrays["node_labels"], arrays["edges"]
  masks = np.stack([np.asarray(arrays[k], bool) for k in keys[3:]])
  if masks.ndim == 2:  # a single split stored as [n] masks
    masks = masks[:, None]
  if masks.ndim != 3 or masks.shape[2] != y.shape[0]:
    # stored as [n, num_splits]
    if masks.ndim == 3 and masks.shape[1] == y.shape[0]:
      masks = masks.transpose(0, 2, 1)
    else:
      raise ValueError(
        f"data file {path}: the split masks have shape {masks.shape[1:]}, "
        f"expected [num_splits, {y.shape[0]}] for {y.shape[0]} labelled nodes"
      )
  r = _fixed_split_count(
    f"heterophilous/{name}", masks.shape[1], num_splits, split_seed
  )
  e = np.asarray(e)
  if e.ndim != 2 or e.shape[1] != 2:
    raise ValueError(
      f"data file {path}: 'edges' must be [num_edges, 2], got {e.shape}"
    )
  inc = st.from_directed_edges(e[:, 0], e[:, 1], y.shape[0], q=q)
  return _finish(
    inc, x, y, f"heterophilous/{name}", masks=masks[:, :r], directed=directed
  )


def _csr_shape(m: scipy.sparse.csr_matrix) -> tuple[int, int]:
  """``m.shape``. Scipy has no type information: pyright infers ``shape`` from
  the base class's ``self._shape = None`` and reads it as possibly None, which
  it never is once constructed."""
  return m.shape  # pyright: ignore[reportReturnType]


def load_planetoid(
  data_dir: str | os.PathLike[str],
  name: str = "cora",
  *,
  num_splits: int | None = None,
  split_seed: None = None,
) -> st.HypergraphData:
  """Planetoid Cora/Citeseer (undirected): one neighbourhood hyperedge
  ``{v} u N(v)`` per node.

  Standard split (train = the first ``len(y)`` rows, val = the next 500, test =
  ``test.index``), the only one: ``num_splits`` other than None or 1, or any
  ``split_seed``, raises ``ValueError``. Citeseer's 15 test ids without a
  feature row get zero features and label 0 and belong to no split. The result
  is undirected (use with the undirected backbones).

  Args:
    data_dir: the folder holding ``planetoid/ind.<name>.*``.
    name: ``'cora'`` or ``'citeseer'``.
    num_splits: None or 1 (the one standard split).
    split_seed: must be None.

  Returns:
    An undirected :class:`HypergraphData` with [n, F] features and [1, n] masks.
  """
  _fixed_split_count(f"planetoid/{name}", 1, num_splits, split_seed)
  import scipy.sparse

  _check_name(name, separators=False)
  _check_dir(data_dir, "data_dir")

  def part(k: str, kind: type[_T]) -> _T:
    return _load_pickle_of(
      _data_file(data_dir, "planetoid", f"ind.{name}.{k}"), kind
    )

  csr = scipy.sparse.csr_matrix
  # unused (allx holds it), but read: a missing or corrupt file is an error
  part("x", csr)
  train_y = part("y", np.ndarray)
  tx, ty = part("tx", csr), part("ty", np.ndarray)
  allx, ally = part("allx", csr), part("ally", np.ndarray)
  graph = part("graph", dict)
  test_idx = np.loadtxt(
    _data_file(data_dir, "planetoid", f"ind.{name}.test.index"), dtype=np.int64
  )
  lo, hi = int(test_idx.min()), int(test_idx.max())
  n = max(len(graph), hi + 1, _csr_shape(allx)[0] + (hi - lo + 1))
  tx_full = scipy.sparse.lil_matrix((hi - lo + 1, _csr_shape(tx)[1]))
  ty_full = np.zeros((hi - lo + 1, ty.shape[1]))
  tx_full[test_idx - lo] = tx
  ty_full[test_idx - lo] = ty
  feats = (
    scipy.sparse.vstack([allx, tx_full.tocsr()]).toarray().astype(np.float32)
  )
  labels_1h = np.vstack([ally, ty_full])
  nl = feats.shape[0]
  if nl < n:
    feats = np.vstack([feats, np.zeros((n - nl, feats.shape[1]), np.float32)])
    labels_1h = np.vstack([labels_1h, np.zeros((n - nl, labels_1h.shape[1]))])
  y = labels_1h.argmax(1)
  members = [sorted({v} | {int(u) for u in graph.get(v, [])}) for v in range(n)]
  inc = st.from_hyperedges(members, n)
  ntr = train_y.shape[0]
  tr, va, te = (np.zeros(n, bool) for _ in range(3))
  tr[:ntr] = True
  va[ntr : ntr + 500] = True
  te[test_idx] = True
  return st.make_data(
    inc,
    feats,
    y,
    train_mask=tr,
    val_mask=va,
    test_mask=te,
    name=(f"planetoid/{name}"),
  )


# A loader: ``loader(data_dir, **kwargs) -> HypergraphData``.
_Loader = Callable[..., st.HypergraphData]

# name -> (loader, kwargs)
DATASETS: dict[str, tuple[_Loader, dict[str, object]]] = {
  "email-Enron": (load_mail, dict(name="enroll")),
  "email-EU": (load_mail, dict(name="EU")),
  "cora": (load_cocitation, dict(name="cora")),
  "citeseer": (load_cocitation, dict(name="citeseer")),
  "pubmed": (load_cocitation, dict(name="pubmed")),
  "inter10": (load_gedi_synthetic, dict(name="inter10")),
  "inter30": (load_gedi_synthetic, dict(name="inter30")),
  "inter50": (load_gedi_synthetic, dict(name="inter50")),
  "telegram": (load_telegram, {}),
  "chameleon": (load_heterophilous, dict(name="chameleon_filtered")),
  "chameleon-directed": (
    load_heterophilous,
    dict(name=("chameleon_filtered_directed")),
  ),
  "texas": (load_heterophilous, dict(name="texas")),
  "cornell": (load_heterophilous, dict(name="cornell")),
  "planetoid-cora": (load_planetoid, dict(name="cora")),
  "planetoid-citeseer": (load_planetoid, dict(name="citeseer")),
}


# Folder under data_dir -> loader, for names of the form "<folder>/<file stem>".
FORMATS: dict[str, _Loader] = {
  "mail": load_mail,
  "cocitation": load_cocitation,
  "synthetic": load_gedi_synthetic,
  "heterophilous": load_heterophilous,
  "planetoid": load_planetoid,
}


def _resolve(name: str) -> tuple[_Loader, dict[str, object]]:
  if isinstance(name, str) and name in DATASETS:
    fn, kw = DATASETS[name]
    return fn, dict(kw)
  if isinstance(name, str) and name.count("/") == 1:
    fmt, stem = name.split("/")
    if fmt in FORMATS and stem and stem not in (".", ".."):
      return FORMATS[fmt], dict(name=stem)
  raise ValueError(
    f"unknown dataset {name!r}; expected one of {sorted(DATASETS)} or "
    f"'<format>/<name>' with format in {sorted(FORMATS)} (the folder under "
    "data_dir and the dataset's file or folder name, e.g. "
    "'heterophilous/roman_empire')"
  )


def ships_splits(name: str) -> bool:
  """Whether dataset ``name`` (as for :func:`load`) comes with fixed splits (no
  ``split_seed``).

  Args:
    name: a dataset name as :func:`load` takes it.

  Returns:
    True for the heterophilous and planetoid sets, False for those with
    generated splits.
  """
  fn, _ = _resolve(name)
  return fn in (load_heterophilous, load_planetoid)


def load(
  name: str,
  data_dir: str | os.PathLike[str],
  *,
  split_seed: int | None = None,
  num_splits: int | None = None,
  directed: bool | None = None,
) -> st.HypergraphData:
  """Loads a dataset by name from ``data_dir``.

  Args:
    name: a key of ``DATASETS`` (the shared benchmark sets) or
      ``'<format>/<name>'`` for any other dataset in a supported format:
      ``format`` is the folder under ``data_dir`` (``FORMATS``: mail,
      cocitation, synthetic, heterophilous, planetoid) and ``name`` the
      dataset's folder or file stem there, e.g. ``'heterophilous/roman_empire'``
      reads ``<data_dir>/heterophilous/roman_empire.npz``.
    data_dir: the folder holding the format folders.
    split_seed: seed of the generated splits (default 0); datasets that ship
      fixed splits (:func:`ships_splits`) raise ``ValueError`` when it is given.
    num_splits: how many splits: generated ones (default 10), or the first
      ``num_splits`` of the shipped ones (default all; more than the file has
      raises ``ValueError``).
    directed: None keeps the loader's default; False gives the undirected
      version.

  Returns:
    A :class:`HypergraphData` with ``[num_splits, n]`` masks.
  """
  fn, kw = _resolve(name)
  _check_dir(data_dir, "data_dir")
  if fn in (load_heterophilous, load_planetoid):
    kw.update(split_seed=split_seed, num_splits=num_splits)
  else:
    kw.update(
      split_seed=0 if split_seed is None else split_seed,
      num_splits=10 if num_splits is None else num_splits,
    )
  if directed is not None and fn is not load_planetoid:
    kw["directed"] = directed
  return fn(data_dir, **kw)
