"""Hypergraph containers with static sizes, host-side builders and validation.

Incidence convention (GeDi-HNN / PANDA, see the package docstring): ``H_ve = 1``
for heads and undirected membership, ``H_ve = exp(s * 2 pi i q)`` for tails,
where ``s = +1`` under the ``'code'`` phase convention (the official code, tails
get ``i`` for ``q = 1/4``) and ``s = -1`` under the ``'dshn'`` convention.
Degrees count incidences (``w_e = 1``).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

__all__ = [
  "Incidence",
  "HypergraphData",
  "from_incidence_pairs",
  "from_hyperedges",
  "from_directed_hyperedges",
  "from_directed_edges",
  "add_self_loop_hyperedges",
  "as_undirected",
  "make_data",
  "pad_incidence",
]

_CONVENTIONS = ("code", "dshn")


def _check_count(value, name, minimum):
  if isinstance(value, (bool, np.bool_)) or not isinstance(
    value, (int, np.integer)
  ):
    raise TypeError(
      f"{name} must be an int, got {type(value).__name__} {value!r}"
    )
  if value < minimum:
    raise ValueError(f"{name} must be >= {minimum}, got {value}")
  return int(value)


def _as_index(values, name) -> np.ndarray:
  """Node ids as int64, refusing non-integer values (1.7 is never truncated to
  1)."""
  a = np.asarray(values)
  if a.size == 0:
    return a.astype(np.int64).reshape(-1)
  if a.dtype == np.bool_ or not (
    np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)
  ):
    raise TypeError(f"{name} must hold integer node ids, got dtype {a.dtype}")
  if np.issubdtype(a.dtype, np.floating):
    if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
      bad = a[~np.isfinite(a) | (a != np.round(a))].ravel()[:3].tolist()
      raise ValueError(
        f"{name} must hold integer node ids, got non-integer values {bad}"
      )
  return a.astype(np.int64).reshape(-1)


def _check_inc(inc, name="inc"):
  if not isinstance(inc, Incidence):
    raise TypeError(f"{name} must be an Incidence, got {type(inc).__name__}")


class Incidence(flax.struct.PyTreeNode):
  """Incidence pairs of a (possibly directed) hypergraph, sorted by hyperedge
  then node.

  Attributes:
    node: int32[nnz] node of each incidence pair.
    edge: int32[nnz] hyperedge of each pair (non-decreasing: stage-1 segment ids
      are sorted).
    phase_re: f32[nnz] real part of ``H_ve`` (1 for heads/undirected, cos 2 pi q
      for tails).
    phase_im: f32[nnz] imaginary part of ``H_ve`` (0 for heads, +-sin 2 pi q for
      tails).
    deg_node: f32[n] ``d_v = sum_e |H_ve|`` (number of incidences of v).
    deg_edge: f32[m] ``delta_e = sum_v |H_ve|`` (hyperedge size).
    by_edge: int32[nnz] permutation sorting the pairs by edge (identity, kept
      for symmetry).
    by_node: int32[nnz] stable permutation sorting the pairs by node (stage 2
      order).
    num_nodes: static n.
    num_edges: static m, explicit and independent of ``num_nodes``.
  """

  node: jax.Array
  edge: jax.Array
  phase_re: jax.Array
  phase_im: jax.Array
  deg_node: jax.Array
  deg_edge: jax.Array
  by_edge: jax.Array
  by_node: jax.Array
  num_nodes: int = flax.struct.field(pytree_node=False)
  num_edges: int = flax.struct.field(pytree_node=False)

  @property
  def nnz(self) -> int:
    return int(self.node.shape[0])

  @property
  def is_directed(self) -> bool:
    return bool(np.any(np.asarray(self.phase_im) != 0))

  def to_numpy(
    self,
  ) -> tuple[
    npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.complex128]
  ]:
    """The incidence pairs as host arrays.

    Returns:
      ``(node, edge, H)``: int32 [nnz], int32 [nnz] and complex128 [nnz], the
      phase ``H_ve`` of each pair, in the edge-sorted pair order.
    """
    return (
      np.asarray(self.node),
      np.asarray(self.edge),
      np.asarray(self.phase_re, np.float64)
      + 1j * np.asarray(self.phase_im, np.float64),
    )

  def dense(self) -> npt.NDArray[np.complex128]:
    """Dense complex128 incidence matrix ``H`` (for tests and small graphs).

    Returns:
      [n, m] complex128 numpy array with ``H_ve`` at each incidence pair and 0
      elsewhere.
    """
    node, edge, ph = self.to_numpy()
    h = np.zeros((self.num_nodes, self.num_edges), np.complex128)
    np.add.at(h, (node, edge), ph)
    return h


class HypergraphData(flax.struct.PyTreeNode):
  """A node-classification hypergraph dataset with static sizes.

  Attributes:
    incidence: the :class:`Incidence` (directed phases if ``directed``).
    x: f32[n, F] node features.
    y: int32[n] labels in ``[0, num_classes)``.
    train_mask, val_mask, test_mask: bool[R, n] masks of R splits.
    num_classes: static number of classes.
    directed: static, whether the incidence carries complex tail phases.
    name: static dataset name.
  """

  incidence: Incidence
  x: jax.Array
  y: jax.Array
  train_mask: jax.Array
  val_mask: jax.Array
  test_mask: jax.Array
  num_classes: int = flax.struct.field(pytree_node=False)
  directed: bool = flax.struct.field(pytree_node=False)
  name: str = flax.struct.field(pytree_node=False, default="hypergraph")

  @property
  def num_nodes(self) -> int:
    return self.incidence.num_nodes

  @property
  def num_splits(self) -> int:
    return int(self.train_mask.shape[0])

  def split(self, r: int) -> HypergraphData:
    """The same data with only split ``r`` (masks of shape [1, n]).

    Args:
      r: index of the split, in ``[0, num_splits)``.

    Returns:
      A :class:`HypergraphData` whose three masks are ``[1, n]``.
    """
    if not 0 <= r < self.num_splits:
      raise ValueError(
        f"split index r must be in [0, {self.num_splits}), got {r}"
      )
    return self.replace(
      train_mask=self.train_mask[r : r + 1],
      val_mask=self.val_mask[r : r + 1],
      test_mask=self.test_mask[r : r + 1],
    )

  def summary(self) -> dict[str, int | str | bool]:
    """Sizes of the dataset, for logs and tables.

    Returns:
      A dict with ``name``, ``nodes``, ``hyperedges``, ``incidences``,
      ``max_edge_size``, ``isolated_nodes``, ``features``, ``classes``,
      ``splits`` and ``directed``.
    """
    inc = self.incidence
    deg = np.asarray(inc.deg_node)
    return dict(
      name=self.name,
      nodes=inc.num_nodes,
      hyperedges=inc.num_edges,
      incidences=inc.nnz,
      max_edge_size=int(np.max(np.asarray(inc.deg_edge)))
      if inc.num_edges
      else 0,
      isolated_nodes=int(np.sum(deg == 0)),
      features=int(self.x.shape[1]),
      classes=self.num_classes,
      splits=self.num_splits,
      directed=self.directed,
    )


def _check_q(q):
  if isinstance(q, (bool, np.bool_)) or not isinstance(
    q, (int, float, np.integer, np.floating)
  ):
    raise TypeError(f"q must be a real number, got {type(q).__name__} {q!r}")
  if not np.isfinite(q):
    raise ValueError(f"q must be finite, got {q!r}")
  return float(q)


def _phase(q: float, phase_convention: str) -> complex:
  if phase_convention not in _CONVENTIONS:
    raise ValueError(
      f"phase_convention must be one of {_CONVENTIONS}, "
      f"got {phase_convention!r}"
    )
  sign = 1.0 if phase_convention == "code" else -1.0
  return complex(np.exp(sign * 2j * np.pi * q))


def from_incidence_pairs(
  node: npt.ArrayLike,
  edge: npt.ArrayLike,
  num_nodes: int,
  num_edges: int,
  *,
  phase: npt.ArrayLike | None = None,
  allow_empty_edges: bool = False,
) -> Incidence:
  """Builds an :class:`Incidence` from explicit pairs (host side, validated).

  Args:
    node: int[nnz] node index of each pair, in ``[0, num_nodes)``.
    edge: int[nnz] hyperedge index of each pair, in ``[0, num_edges)``.
    num_nodes: n (static).
    num_edges: m (static), given explicitly.
    phase: optional complex[nnz] ``H_ve`` per pair (default 1, undirected). Must
      have modulus 1.
    allow_empty_edges: if False, a hyperedge with no member raises
      ``ValueError``.

  Returns:
    The :class:`Incidence`, pairs sorted by hyperedge then node.

  Raises:
    ValueError: on mismatched lengths, out-of-range indices, duplicate pairs,
      bad phases or empty hyperedges.
  """
  node = np.asarray(node)
  edge = np.asarray(edge)
  if node.ndim != 1 or edge.ndim != 1:
    raise ValueError(
      f"node and edge must be 1-D index arrays, got shapes {node.shape}, "
      f"{edge.shape}"
    )
  if node.shape != edge.shape:
    raise ValueError(
      f"node and edge must have the same length, got {node.shape[0]} and "
      f"{edge.shape[0]}"
    )
  if node.size and not (
    np.issubdtype(node.dtype, np.integer)
    and np.issubdtype(edge.dtype, np.integer)
  ):
    raise TypeError(
      f"node and edge must be integer arrays, got {node.dtype} and {edge.dtype}"
    )
  num_nodes = _check_count(num_nodes, "num_nodes", 1)
  num_edges = _check_count(num_edges, "num_edges", 0)
  if node.size and (node.min() < 0 or node.max() >= num_nodes):
    raise ValueError(
      f"node indices must lie in [0, {num_nodes}), got range [{node.min()}, "
      f"{node.max()}]"
    )
  if edge.size and (edge.min() < 0 or edge.max() >= num_edges):
    raise ValueError(
      f"edge indices must lie in [0, {num_edges}), got range [{edge.min()}, "
      f"{edge.max()}]"
    )
  if phase is None:
    phase = np.ones(node.shape, np.complex128)
  phase = np.asarray(phase, np.complex128)
  if phase.shape != node.shape:
    raise ValueError(f"phase must have shape {node.shape}, got {phase.shape}")
  if phase.size and not np.allclose(np.abs(phase), 1.0, atol=1e-6):
    raise ValueError("phase entries must have modulus 1")
  key = edge.astype(np.int64) * num_nodes + node
  if np.unique(key).size != key.size:
    raise ValueError("duplicate (node, edge) incidence pairs")
  order = np.lexsort((node, edge))
  node, edge, phase = (
    node[order].astype(np.int32),
    edge[order].astype(np.int32),
    phase[order],
  )
  deg_edge = np.bincount(edge, minlength=num_edges).astype(np.float32)
  if not allow_empty_edges and num_edges and np.any(deg_edge == 0):
    raise ValueError(
      f"hyperedges {np.flatnonzero(deg_edge == 0)[:5].tolist()}... are empty; "
      "pass allow_empty_edges=True to keep them"
    )
  deg_node = np.bincount(node, minlength=num_nodes).astype(np.float32)
  by_node = np.argsort(node, kind="stable").astype(np.int32)
  return Incidence(
    node=jnp.asarray(node),
    edge=jnp.asarray(edge),
    phase_re=jnp.asarray(phase.real, jnp.float32),
    phase_im=jnp.asarray(phase.imag, jnp.float32),
    deg_node=jnp.asarray(deg_node),
    deg_edge=jnp.asarray(deg_edge),
    by_edge=jnp.arange(node.size, dtype=jnp.int32),
    by_node=jnp.asarray(by_node),
    num_nodes=int(num_nodes),
    num_edges=int(num_edges),
  )


def from_hyperedges(
  members: Sequence[Sequence[int]], num_nodes: int
) -> Incidence:
  """Undirected hypergraph from a list of member lists (repeated members are
  merged).

  Args:
    members: one sequence of node ids per hyperedge, each id in ``[0,
      num_nodes)``.
    num_nodes: n.

  Returns:
    The undirected :class:`Incidence` (all phases 1) with ``len(members)``
    hyperedges.

  Raises:
    TypeError, ValueError: non-integer members (1.7 is not truncated), members
      outside ``[0, num_nodes)``, empty hyperedges, no hyperedge at all.
  """
  num_nodes = _check_count(num_nodes, "num_nodes", 1)
  node, edge = [], []
  for e, mem in enumerate(members):
    mem = np.unique(_as_index(list(mem), f"members[{e}]"))
    node.append(mem)
    edge.append(np.full(mem.size, e, np.int64))
  if not members:
    raise ValueError("members must contain at least one hyperedge")
  return from_incidence_pairs(
    np.concatenate(node), np.concatenate(edge), num_nodes, len(members)
  )


def from_directed_hyperedges(
  tails: Sequence[Sequence[int]],
  heads: Sequence[Sequence[int]],
  num_nodes: int,
  *,
  q: float = 0.25,
  phase_convention: str = "code",
) -> Incidence:
  """Directed hypergraph: hyperedge e = T(e) u H(e), tails get phase
  ``exp(+-2 pi i q)``.

  A node listed both as tail and head is kept once, as a tail. An empty tail set
  gives an undirected hyperedge.

  Args:
    tails: one sequence of tail node ids per hyperedge.
    heads: one sequence of head node ids per hyperedge (as many as ``tails``).
    num_nodes: n.
    q: the phase parameter (``i`` on tails for ``q = 1/4``).
    phase_convention: ``'code'`` (``exp(+2 pi i q)``) or ``'dshn'`` (its
      conjugate).

  Returns:
    The directed :class:`Incidence` with ``len(tails)`` hyperedges.
  """
  if len(tails) != len(heads):
    raise ValueError(
      "tails and heads must have the same length, "
      f"got {len(tails)} and {len(heads)}"
    )
  num_nodes = _check_count(num_nodes, "num_nodes", 1)
  q = _check_q(q)
  tail_phase = _phase(q, phase_convention)
  if len(tails) == 0:
    raise ValueError("tails and heads must describe at least one hyperedge")
  node, edge, ph = [], [], []
  for e, (t, h) in enumerate(zip(tails, heads)):
    t = np.unique(_as_index(list(t), f"tails[{e}]"))
    h = np.setdiff1d(_as_index(list(h), f"heads[{e}]"), t)
    node += [t, h]
    edge.append(np.full(t.size + h.size, e, np.int64))
    ph += [np.full(t.size, tail_phase), np.ones(h.size, np.complex128)]
  return from_incidence_pairs(
    np.concatenate(node),
    np.concatenate(edge),
    num_nodes,
    len(tails),
    phase=np.concatenate(ph),
  )


def from_directed_edges(
  src: npt.ArrayLike,
  dst: npt.ArrayLike,
  num_nodes: int,
  *,
  q: float = 0.25,
  phase_convention: str = "code",
) -> Incidence:
  """GeDi-HNN star construction from a directed graph.

  For every node t with out-neighbours, the hyperedge ``e_t = {t} u N_out(t)``
  has t as its tail (phase ``exp(+-2 pi i q)``) and ``N_out(t) \\ {t}`` as heads
  (phase 1). Duplicate edges are merged and self-loop edges ``t -> t`` are
  dropped first, as in the reference (a node whose only out-edge is a self-loop
  gets no hyperedge). Hyperedges are numbered by increasing anchor t.

  Args:
    src: int[E] source node of each directed edge ``src -> dst``.
    dst: int[E] target node of each edge.
    num_nodes: n.
    q: the phase parameter (``i`` on tails for ``q = 1/4``).
    phase_convention: ``'code'`` (``exp(+2 pi i q)``) or ``'dshn'`` (its
      conjugate).

  Returns:
    The directed :class:`Incidence`, one hyperedge per node with an out-edge.
  """
  num_nodes = _check_count(num_nodes, "num_nodes", 1)
  q = _check_q(q)
  src = _as_index(src, "src")
  dst = _as_index(dst, "dst")
  if src.shape != dst.shape:
    raise ValueError(
      f"src and dst must have the same length, got {src.size} and {dst.size}"
    )
  if src.size == 0:
    raise ValueError("the directed graph has no edges")
  for name, a in (("src", src), ("dst", dst)):
    if a.min() < 0 or a.max() >= num_nodes:
      raise ValueError(
        f"{name} indices must lie in [0, {num_nodes}), got [{a.min()}, "
        f"{a.max()}]"
      )
  pairs = np.unique(np.stack([src, dst], 1), axis=0)
  pairs = pairs[pairs[:, 0] != pairs[:, 1]]
  if pairs.shape[0] == 0:
    raise ValueError("the directed graph has only self-loop edges")
  anchors = np.unique(pairs[:, 0])
  eid = np.searchsorted(anchors, pairs[:, 0])
  heads = np.ones(pairs.shape[0], bool)
  node = np.concatenate([anchors, pairs[heads, 1]])
  edge = np.concatenate([np.arange(anchors.size), eid[heads]])
  ph = np.concatenate(
    [
      np.full(anchors.size, _phase(q, phase_convention)),
      np.ones(int(heads.sum()), np.complex128),
    ]
  )
  return from_incidence_pairs(node, edge, num_nodes, anchors.size, phase=ph)


def add_self_loop_hyperedges(inc: Incidence) -> Incidence:
  """Adds a singleton hyperedge {v} for every node v that is not already a
  singleton hyperedge.

  Args:
    inc: the :class:`Incidence` (n nodes, m hyperedges).

  Returns:
    A new :class:`Incidence` with the m hyperedges first, then the added
    singletons (phase 1).
  """
  _check_inc(inc)
  node, edge, ph = inc.to_numpy()
  sizes = np.bincount(edge, minlength=inc.num_edges)
  has_loop = np.zeros(inc.num_nodes, bool)
  has_loop[node[sizes[edge] == 1]] = True
  new = np.flatnonzero(~has_loop)
  return from_incidence_pairs(
    np.concatenate([node, new]),
    np.concatenate([edge, inc.num_edges + np.arange(new.size)]),
    inc.num_nodes,
    inc.num_edges + new.size,
    phase=np.concatenate([ph, np.ones(new.size)]),
    allow_empty_edges=True,
  )


def as_undirected(
  data: HypergraphData, *, self_loops: bool = True
) -> HypergraphData:
  """Drops phases (all ``H_ve = 1``) and, by default, adds self-loop hyperedges
  (undirected path).

  Args:
    data: the (directed) hypergraph dataset.
    self_loops: add a singleton hyperedge for every node without one.

  Returns:
    ``data`` with the undirected incidence and ``directed=False``.
  """
  if not isinstance(data, HypergraphData):
    raise TypeError(f"data must be a HypergraphData, got {type(data).__name__}")
  node, edge, _ = data.incidence.to_numpy()
  inc = from_incidence_pairs(
    node,
    edge,
    data.incidence.num_nodes,
    data.incidence.num_edges,
    allow_empty_edges=True,
  )
  if self_loops:
    inc = add_self_loop_hyperedges(inc)
  return data.replace(incidence=inc, directed=False)


def make_data(
  inc: Incidence,
  x: npt.ArrayLike,
  y: npt.ArrayLike,
  *,
  train_mask: npt.ArrayLike,
  val_mask: npt.ArrayLike,
  test_mask: npt.ArrayLike,
  num_classes: int | None = None,
  name: str = "hypergraph",
) -> HypergraphData:
  """Validated :class:`HypergraphData` constructor (host arrays in, device
  arrays out).

  Args:
    inc: the :class:`Incidence` (n nodes).
    x: [n, F] real node features (stored as float32).
    y: [n] integer labels.
    train_mask: [R, n] or [n] bool (or 0/1) mask of the training nodes of R
      splits.
    val_mask: [R, n] or [n] validation mask.
    test_mask: [R, n] or [n] test mask.
    num_classes: K; default ``max(y) + 1``.
    name: the dataset's name.

  Returns:
    The :class:`HypergraphData` (masks [R, n]; ``directed`` set from the
    phases).

  Raises:
    TypeError, ValueError: wrong shapes; non-finite features; labels that are
      not integers (float labels are accepted only when every value is a whole
      number: 1.6 is never truncated) or outside ``[0, num_classes)``; masks
      that are not boolean (or 0/1).
  """
  _check_inc(inc)
  n = inc.num_nodes
  x = np.asarray(x)
  if not (
    np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)
  ):
    raise TypeError(f"x must be a real feature matrix, got dtype {x.dtype}")
  x = x.astype(np.float32)
  y = np.asarray(y)
  if x.ndim != 2 or x.shape[0] != n:
    raise ValueError(f"x must have shape [num_nodes={n}, F], got {x.shape}")
  if not np.all(np.isfinite(x)):
    raise ValueError("x must be finite (no NaN or inf features)")
  if y.shape != (n,):
    raise ValueError(f"y must have shape [{n}], got {y.shape}")
  y = _as_index(y, "y (labels)")
  if num_classes is None:
    num_classes = int(y.max()) + 1
  num_classes = _check_count(num_classes, "num_classes", 1)
  if y.min() < 0 or y.max() >= num_classes:
    raise ValueError(
      f"labels must lie in [0, {num_classes}), got [{y.min()}, {y.max()}]"
    )
  masks = []
  for nm, m in (
    ("train_mask", train_mask),
    ("val_mask", val_mask),
    ("test_mask", test_mask),
  ):
    m = np.asarray(m)
    if m.dtype != np.bool_:
      if not (
        np.issubdtype(m.dtype, np.number) and np.all((m == 0) | (m == 1))
      ):
        raise TypeError(f"{nm} must be boolean (or 0/1), got dtype {m.dtype}")
      m = m.astype(bool)
    if m.ndim == 1:
      m = m[None]
    if m.ndim != 2 or m.shape[1] != n:
      raise ValueError(f"{nm} must have shape [R, {n}] or [{n}], got {m.shape}")
    masks.append(m)
  if not masks[0].shape[0] == masks[1].shape[0] == masks[2].shape[0]:
    raise ValueError("train/val/test masks must have the same number of splits")
  return HypergraphData(
    incidence=inc,
    x=jnp.asarray(x),
    y=jnp.asarray(y, jnp.int32),
    train_mask=jnp.asarray(masks[0]),
    val_mask=jnp.asarray(masks[1]),
    test_mask=jnp.asarray(masks[2]),
    num_classes=int(num_classes),
    directed=bool(np.any(np.asarray(inc.phase_im) != 0)),
    name=name,
  )


def pad_incidence(inc: Incidence, nnz: int) -> tuple[Incidence, jax.Array]:
  """Pads the pairs to length ``nnz`` so several graphs can share one compiled
  shape.

  Padded pairs point at node ``n`` and hyperedge ``m`` (one dummy segment past
  the end) with phase 0. Kernels called with ``num_segments = n + 1`` (or
  ``m + 1``) and then sliced ignore them.

  Args:
    inc: the :class:`Incidence`.
    nnz: the padded number of pairs, >= ``inc.nnz``.

  Returns:
    ``(padded, valid)``: the padded incidence (``num_nodes``/``num_edges``
    unchanged) and the bool [nnz] validity mask.
  """
  _check_inc(inc)
  nnz = _check_count(nnz, "nnz", 0)
  k = inc.nnz
  if nnz < k:
    raise ValueError(
      f"nnz must be >= the current number of pairs {k}, got {nnz}"
    )
  pad = nnz - k
  f = lambda a, v: jnp.concatenate([a, jnp.full((pad,), v, a.dtype)])
  valid = jnp.arange(nnz) < k
  padded = inc.replace(
    node=f(inc.node, inc.num_nodes),
    edge=f(inc.edge, inc.num_edges),
    phase_re=f(inc.phase_re, 0.0),
    phase_im=f(inc.phase_im, 0.0),
    by_edge=jnp.arange(nnz, dtype=jnp.int32),
    by_node=jnp.concatenate([inc.by_node, jnp.arange(k, nnz, dtype=jnp.int32)]),
  )
  return padded, valid
