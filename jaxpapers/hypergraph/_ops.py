"""Segment kernels and the fixed hypergraph operators (GeDi ``Q_N``/``L2``,
HGNN, PhenomNN, HyperGCN).

All propagations work on the incidence pairs with ``jax.ops.segment_*`` in
O(nnz); dense builders (``*_operator``) are float64 numpy references for tests
and small graphs. Complex quantities are carried as two real arrays
``(re, im)``; ``im=None`` means real.

Bad input (policy in :mod:`jaxpapers.core.validation`): the incidence type,
signal shapes (leading axis ``num_nodes`` or ``num_edges``), dtypes and options
are checked at trace time.
"""

from __future__ import annotations

from typing import overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.hypergraph._structure import Incidence, _check_inc


def _check_signal(re, im, rows: int, name: str):
  """Real/imaginary parts ``[rows, ...]``, float, with matching shapes."""
  re = V.check_array(re, f"{name} (real part)", dtype="float")
  if re.ndim < 1 or re.shape[0] != rows:
    raise ValueError(
      f"{name} must have leading axis {rows}, got shape {re.shape}"
    )
  if im is not None:
    im = V.check_array(im, f"{name} (imaginary part)", dtype="float")
    if im.shape != re.shape:
      raise ValueError(
        f"{name}: the imaginary part has shape {im.shape}, "
        f"the real part {re.shape}"
      )
  return re, im


__all__ = [
  "segment_softmax",
  "complex_relu",
  "cmul",
  "inv_sqrt",
  "node_to_edge",
  "edge_to_node",
  "gedi_propagate",
  "hgnn_propagate",
  "gedi_operator",
  "hgnn_operator",
  "phenom_operators",
  "phenom_propagate",
  "hypergcn_graph",
  "graph_propagate",
]


def inv_sqrt(d: jax.Array) -> jax.Array:
  """``d^{-1/2}`` with 0 where ``d == 0`` (isolated nodes / empty hyperedges).

  Degrees must be >= 0: a negative degree raises ``ValueError`` eagerly and
  gives NaN under jit (it would otherwise read as an isolated node).

  Args:
    d: real array of any shape, the degrees (node or hyperedge), all >= 0.

  Returns:
    An array of ``d``'s shape and dtype: ``d^{-1/2}`` where ``d > 0``, 0 where
    ``d == 0``.
  """
  d = V.check_array(d, "d", dtype="real")
  ok = V.check_values(
    jnp.all(d >= 0) & ~jnp.any(jnp.isnan(d)), "degrees d must be >= 0"
  )
  out = jnp.where(d > 0, jax.lax.rsqrt(jnp.maximum(d, 1e-12)), 0.0)
  return V.poison(out, ok)


def _inv(d):
  return jnp.where(d > 0, 1.0 / jnp.maximum(d, 1e-12), 0.0)


def segment_softmax(
  logits: jax.Array,
  segment_ids: jax.Array,
  num_segments: int,
  *,
  mask: jax.Array | None = None,
  indices_are_sorted: bool = False,
) -> jax.Array:
  """Softmax of ``logits[P, ...]`` within groups of equal ``segment_ids[P]``.

  Entries with ``mask == False`` get weight exactly 0 and do not enter the
  normaliser. Empty segments are guarded (``segment_max`` gives -inf there; it
  is replaced by 0 before ``exp``).

  Args:
    logits: [P, ...] float array, one row of scores per entry (trailing axes,
      e.g. heads, are normalised independently).
    segment_ids: [P] int array, the group of each entry, in ``[0,
      num_segments)``.
    num_segments: number of groups (static, >= 1).
    mask: optional [P] bool array; False entries are left out of their group's
      softmax.
    indices_are_sorted: whether ``segment_ids`` is non-decreasing (a hint to
      XLA).

  Returns:
    [P, ...] array of ``logits``' dtype: the weights within each group sum to 1
    (an all-masked group gives all zeros).
  """
  logits = V.check_array(logits, "logits", dtype="float", ndim=range(1, 8))
  segment_ids = V.check_array(segment_ids, "segment_ids", dtype="int", ndim=1)
  num_segments = V.check_int(num_segments, "num_segments", min_value=1)
  if mask is not None:
    mask = V.check_array(
      mask, "mask", dtype="bool", shape=(segment_ids.shape[0],)
    )
  if logits.shape[0] != segment_ids.shape[0]:
    raise ValueError(
      f"logits and segment_ids must agree on axis 0, got {logits.shape[0]} and "
      f"{segment_ids.shape[0]}"
    )
  neg = jnp.finfo(logits.dtype).min
  m = (
    None
    if mask is None
    else mask.reshape(mask.shape + (1,) * (logits.ndim - 1))
  )
  if m is not None:
    logits = jnp.where(m, logits, neg)
  mx = jax.ops.segment_max(
    logits, segment_ids, num_segments, indices_are_sorted=indices_are_sorted
  )
  mx = jnp.where(jnp.isfinite(mx), mx, 0.0)
  ex = jnp.exp(logits - jax.lax.stop_gradient(mx)[segment_ids])
  if m is not None:
    ex = jnp.where(m, ex, 0.0)
  den = jax.ops.segment_sum(
    ex, segment_ids, num_segments, indices_are_sorted=indices_are_sorted
  )
  return ex / jnp.where(den > 0, den, 1.0)[segment_ids]


@overload
def complex_relu(
  re: jax.Array, im: jax.Array
) -> tuple[jax.Array, jax.Array]: ...
@overload
def complex_relu(re: jax.Array, im: None) -> tuple[jax.Array, None]: ...
@overload
def complex_relu(
  re: jax.Array, im: jax.Array | None
) -> tuple[jax.Array, jax.Array | None]: ...


def complex_relu(
  re: jax.Array, im: jax.Array | None
) -> tuple[jax.Array, jax.Array | None]:
  """GeDi/SigMaNet complex ReLU: ``mask = (Re >= 0)`` applied to both parts.

  Args:
    re: float array of any shape, the real part.
    im: float array of ``re``'s shape, the imaginary part, or None for a real
      signal.

  Returns:
    ``(re_out, im_out)`` of the input shapes: both parts zeroed where
    ``re < 0``; ``im_out`` is None when ``im`` is.
  """
  re = V.check_array(re, "re", dtype="float")
  if im is not None:
    im = V.check_array(im, "im", dtype="float", shape=re.shape)
  mask = re >= 0
  return jnp.where(mask, re, 0.0), (
    None if im is None else jnp.where(mask, im, 0.0)
  )


def cmul(
  ar: ArrayLike, ai: ArrayLike | None, br: ArrayLike, bi: ArrayLike | None
) -> tuple[jax.Array, jax.Array | None]:
  """(ar + i ai)(br + i bi) with ``None`` meaning a zero imaginary part.

  Args:
    ar: real part of ``a``; any shape that broadcasts against ``br``.
    ai: imaginary part of ``a`` (``ar``'s shape), or None for a real ``a``.
    br: real part of ``b``.
    bi: imaginary part of ``b`` (``br``'s shape), or None for a real ``b``.

  Returns:
    ``(re, im)`` of the product, with the broadcast shape of ``a`` and ``b``;
    ``im`` is None when both factors are real.
  """
  for nm, re_, im_ in (("a", ar, ai), ("b", br, bi)):
    if im_ is not None and jnp.shape(im_) != jnp.shape(re_):
      raise ValueError(
        f"{nm}: the imaginary part has shape {jnp.shape(im_)}, "
        f"the real part {jnp.shape(re_)}"
      )
  ar, br = jnp.asarray(ar), jnp.asarray(br)
  if ai is None:
    return ar * br, (None if bi is None else ar * jnp.asarray(bi))
  ai = jnp.asarray(ai)
  if bi is None:
    return ar * br, ai * br
  bi = jnp.asarray(bi)
  return ar * br - ai * bi, ar * bi + ai * br


def _b(w, x):
  """Broadcasts a per-pair/per-row vector over the trailing axes of x."""
  return w.reshape(w.shape + (1,) * (x.ndim - w.ndim))


def node_to_edge(
  inc: Incidence,
  re: jax.Array,
  im: jax.Array | None = None,
  *,
  weight: jax.Array | None = None,
  conj_phase: bool = True,
  use_phase: bool = True,
) -> tuple[jax.Array, jax.Array | None]:
  """Stage 1: ``h_e = sum_{v in e} w_ve conj(H_ve) x_v`` (sorted segment sum). x: [n, ...].

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes, m hyperedges, nnz pairs).
    re: [n, ...] float array, real part of the node signal ``x``.
    im: [n, ...] float array, its imaginary part, or None for a real signal.
    weight: optional [nnz] real array ``w_ve`` per incidence pair (default 1).
    conj_phase: multiply by ``conj(H_ve)`` (True) or by ``H_ve`` (False).
    use_phase: if False, every ``H_ve`` is taken as 1 (the undirected operator).

  Returns:
    ``(h_re, h_im)``, each [m, ...] in the signal's dtype; ``h_im`` is None when
    both the signal and the phases used are real.
  """
  _check_inc(inc)
  re, im = _check_signal(re, im, inc.num_nodes, "node signal")
  if weight is not None:
    weight = V.check_array(weight, "weight", dtype="real", shape=(inc.nnz,))
  dt = re.dtype
  wr, wi = (
    (
      inc.phase_re.astype(dt),
      (-inc.phase_im if conj_phase else inc.phase_im).astype(dt),
    )
    if use_phase
    else (jnp.ones(inc.phase_re.shape, dt), None)
  )
  if weight is not None:
    wr, wi = wr * weight, (None if wi is None else wi * weight)
  xr, xi = re[inc.node], (None if im is None else im[inc.node])
  mr, mi = cmul(_b(wr, xr), None if wi is None else _b(wi, xr), xr, xi)
  seg = lambda a: jax.ops.segment_sum(
    a, inc.edge, inc.num_edges, indices_are_sorted=True
  )
  return seg(mr), (None if mi is None else seg(mi))


def edge_to_node(
  inc: Incidence,
  re: jax.Array,
  im: jax.Array | None = None,
  *,
  weight: jax.Array | None = None,
  conj_phase: bool = False,
  use_phase: bool = True,
) -> tuple[jax.Array, jax.Array | None]:
  """Stage 2: ``x_v = sum_{e ni v} w_ve H_ve h_e`` (segment sum in node order). h: [m, ...].

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes, m hyperedges, nnz pairs).
    re: [m, ...] float array, real part of the hyperedge signal ``h``.
    im: [m, ...] float array, its imaginary part, or None for a real signal.
    weight: optional [nnz] real array ``w_ve`` per incidence pair, in the
      incidence's (edge-sorted) pair order (default 1).
    conj_phase: multiply by ``conj(H_ve)`` (True) or by ``H_ve`` (False).
    use_phase: if False, every ``H_ve`` is taken as 1 (the undirected operator).

  Returns:
    ``(x_re, x_im)``, each [n, ...] in the signal's dtype; ``x_im`` is None when
    both the signal and the phases used are real.
  """
  _check_inc(inc)
  re, im = _check_signal(re, im, inc.num_edges, "hyperedge signal")
  if weight is not None:
    weight = V.check_array(weight, "weight", dtype="real", shape=(inc.nnz,))
  p = inc.by_node
  node, edge = inc.node[p], inc.edge[p]
  dt = re.dtype
  if use_phase:
    wr = inc.phase_re[p].astype(dt)
    wi = (-inc.phase_im[p] if conj_phase else inc.phase_im[p]).astype(dt)
  else:
    wr, wi = jnp.ones(inc.phase_re.shape, dt), None
  if weight is not None:
    wr, wi = wr * weight[p], (None if wi is None else wi * weight[p])
  hr, hi = re[edge], (None if im is None else im[edge])
  mr, mi = cmul(_b(wr, hr), None if wi is None else _b(wi, hr), hr, hi)
  seg = lambda a: jax.ops.segment_sum(
    a, node, inc.num_nodes, indices_are_sorted=True
  )
  return seg(mr), (None if mi is None else seg(mi))


def gedi_propagate(
  inc: Incidence,
  re: jax.Array,
  im: jax.Array | None = None,
  *,
  variant: str = "Q_N",
  conjugate: bool = False,
) -> tuple[jax.Array, jax.Array | None]:
  """Applies GeDi's operator to a complex signal in O(nnz).

  ``variant='Q_N'``: ``Q_N X = D_v^{-1/2} H D_e^{-1} H^* D_v^{-1/2} X``.
  ``variant='code'``: the reference's ``L2``: with ``A = H D_e^{-1} H^*``, the
  off-diagonal of A scaled by ``(D_v + I)^{-1/2}`` on both sides plus
  ``diag(D_v^{-1/2} A D_v^{-1/2})``. ``conjugate=True`` applies ``conj(L)``
  instead (what PyG's source-to-target propagation computes for a Hermitian L).

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes).
    re: [n, ...] float array, real part of the node signal ``X``.
    im: [n, ...] float array, its imaginary part, or None for a real signal.
    variant: ``'Q_N'`` (the paper's operator) or ``'code'`` (the reference's
      ``L2``).
    conjugate: apply ``conj(L)`` instead of ``L``.

  Returns:
    ``(y_re, y_im)``, each [n, ...] in the signal's dtype; ``y_im`` is None only
    when the signal and the incidence are both real.
  """
  if variant not in ("Q_N", "code"):
    raise ValueError(f"variant must be 'Q_N' or 'code', got {variant!r}")
  _check_inc(inc)
  re, im = _check_signal(re, im, inc.num_nodes, "re/im")
  # counts are exact in float32; normalise in the signal dtype
  d = inc.deg_node.astype(re.dtype)
  s = inv_sqrt(d) if variant == "Q_N" else inv_sqrt(d + 1.0)
  hr, hi = node_to_edge(
    inc,
    _b(s, re) * re,
    None if im is None else _b(s, im) * im,
    conj_phase=not conjugate,
  )
  de = _inv(inc.deg_edge.astype(re.dtype))
  hr, hi = _b(de, hr) * hr, (None if hi is None else _b(de, hi) * hi)
  yr, yi = edge_to_node(inc, hr, hi, conj_phase=conjugate)
  yr, yi = _b(s, yr) * yr, (None if yi is None else _b(s, yi) * yi)
  if variant == "code":
    ph2 = (inc.phase_re**2 + inc.phase_im**2).astype(re.dtype)
    diag_a = jax.ops.segment_sum(de[inc.edge] * ph2, inc.node, inc.num_nodes)
    corr = diag_a * (_inv(d) - 1.0 / (d + 1.0))
    yr = yr + _b(corr, re) * re
    if im is not None:
      yi = _b(corr, im) * im if yi is None else yi + _b(corr, im) * im
  return yr, yi


def hgnn_propagate(inc: Incidence, x: jax.Array) -> jax.Array:
  """HGNN (Zhou et al. 2006): ``D_v^{-1/2} H D_e^{-1} H^T D_v^{-1/2} x`` with
  all phases 1.

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes); its phases are ignored.
    x: [n, ...] float array, the node signal.

  Returns:
    [n, ...] array of ``x``'s dtype.
  """
  _check_inc(inc)
  x, _ = _check_signal(x, None, inc.num_nodes, "x")
  s = inv_sqrt(inc.deg_node.astype(x.dtype))
  h, _ = node_to_edge(inc, _b(s, x) * x, use_phase=False)
  h = _b(_inv(inc.deg_edge.astype(x.dtype)), h) * h
  y, _ = edge_to_node(inc, h, use_phase=False)
  return _b(s, y) * y


# ------------------------------------------------------------- dense references


def gedi_operator(
  inc: Incidence, *, variant: str = "Q_N", conjugate: bool = False
) -> tuple[np.ndarray, np.ndarray]:
  """Dense float64 ``Q_N`` (or the reference ``L2``) as ``(re, im)`` numpy
  arrays [n, n].

  The reference for :func:`gedi_propagate`: ``gedi_propagate(inc, x)`` equals
  ``Q @ x``.

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes).
    variant: ``'Q_N'`` or ``'code'``, as in :func:`gedi_propagate`.
    conjugate: build ``conj(L)`` instead of ``L``.

  Returns:
    ``(re, im)``: two [n, n] float64 numpy arrays, the real and imaginary parts.
  """
  _check_inc(inc)
  if variant not in ("Q_N", "code"):
    raise ValueError(f"variant must be 'Q_N' or 'code', got {variant!r}")
  h = inc.dense()
  if conjugate:
    h = h.conj()
  d = np.abs(h).sum(1)
  de = np.abs(h).sum(0)
  a = h @ np.diag(np.where(de > 0, 1 / np.maximum(de, 1e-300), 0)) @ h.conj().T
  if variant == "Q_N":
    s = np.where(d > 0, d**-0.5, 0)
    q = s[:, None] * a * s[None, :]
  elif variant == "code":
    s1 = (d + 1) ** -0.5
    off = a - np.diag(np.diag(a))
    s = np.where(d > 0, d**-0.5, 0)
    q = s1[:, None] * off * s1[None, :] + np.diag(s * np.diag(a) * s)
  else:
    raise ValueError(f"variant must be 'Q_N' or 'code', got {variant!r}")
  return q.real, q.imag


def hgnn_operator(inc: Incidence) -> np.ndarray:
  """Dense float64 HGNN operator (phases ignored), the reference for
  :func:`hgnn_propagate`.

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes).

  Returns:
    [n, n] float64 numpy array ``D_v^{-1/2} B D_e^{-1} B^T D_v^{-1/2}`` with ``B = |H| > 0``.
  """
  _check_inc(inc)
  h = (np.abs(inc.dense()) > 0).astype(np.float64)
  d, de = h.sum(1), h.sum(0)
  s = np.where(d > 0, d**-0.5, 0)
  return (
    s[:, None]
    * (h @ np.diag(np.where(de > 0, 1 / np.maximum(de, 1e-300), 0)) @ h.T)
    * s[None]
  )


def phenom_operators(
  inc: Incidence,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Dense PhenomNN operators ``(A_beta, A_gamma, D_beta, D_gamma)`` (float64,
  phases ignored).

  ``A_beta = Dh^{-1/2}(B B^T + I)Dh^{-1/2}`` and ``A_gamma = Dh^{-1/2}(B
  D_E^{-1} B^T + I)Dh^{-1/2}``, each with ``Dh`` the row sums of its own
  bracket; ``D_beta``/``D_gamma`` are the row sums of the normalised matrices
  (Wang et al., ICML 2023, simplified PhenomNN).

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes).

  Returns:
    ``(A_beta, A_gamma, D_beta, D_gamma)``: two [n, n] and two [n] float64 numpy
    arrays.
  """
  _check_inc(inc)
  b = (np.abs(inc.dense()) > 0).astype(np.float64)
  n = b.shape[0]
  de = b.sum(0)
  out = []
  for core in (
    b @ b.T + np.eye(n),
    b @ np.diag(1 / np.maximum(de, 1)) @ b.T + np.eye(n),
  ):
    s = core.sum(1) ** -0.5
    out.append(s[:, None] * core * s[None])
  return out[0], out[1], out[0].sum(1), out[1].sum(1)


def phenom_propagate(inc: Incidence, y: jax.Array, *, which: str) -> jax.Array:
  """Segment form of ``A_beta y`` (``which='beta'``) or ``A_gamma y``
  (``'gamma'``).

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes); its phases are ignored.
    y: [n, ...] float array, the node signal.
    which: ``'beta'`` or ``'gamma'``, the operator of :func:`phenom_operators`
      to apply.

  Returns:
    [n, ...] array of ``y``'s dtype.
  """
  if which not in ("beta", "gamma"):
    raise ValueError(f"which must be 'beta' or 'gamma', got {which!r}")
  _check_inc(inc)
  y, _ = _check_signal(y, None, inc.num_nodes, "y")
  ones = jnp.ones((inc.num_nodes,), y.dtype)
  de = inc.deg_edge.astype(y.dtype)
  ew = jnp.ones_like(de) if which == "beta" else _inv(de)

  def core(v):
    h, _ = node_to_edge(inc, v, use_phase=False)
    h = _b(ew, h) * h
    out, _ = edge_to_node(inc, h, use_phase=False)
    return out + v

  s = inv_sqrt(core(ones))
  return _b(s, y) * core(_b(s, y) * y)


# --------------------------------------------------------------------- HyperGCN


def hypergcn_graph(
  inc: Incidence, p: jax.Array, *, mediators: bool = True
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """HyperGCN's per-layer graph from projections ``p[n]`` in O(nnz) (no pair
  enumeration).

  In each hyperedge take ``i_e = argmax p``, ``j_e = argmin p`` (ties: lowest
  index, as numpy's ``argmax`` over members in node order). With mediators, add
  (i_e, j_e) and (i_e, k), (j_e, k) for every other member k, each with weight
  ``1/(2|e| - 3)``; without, only (i_e, j_e) with weight ``1/|e|`` (as the
  reference's ``Laplacian``). As in the reference, a singleton hyperedge {v}
  (and a hyperedge whose members all project to one value, ``i_e = j_e``) gives
  the self pair (v, v), which the symmetric graph counts twice: weight
  ``2/(2|e| - 3)`` (-2 for a singleton with mediators) or ``2/|e|``. Returns a
  static-size undirected edge list ``(src, dst, w)`` of length ``2 nnz + m``
  (unused slots have w = 0); ``w`` has ``p``'s dtype.

  A NaN in ``p`` raises ``ValueError`` eagerly; under jit every weight ``w`` is
  NaN.

  Args:
    inc: the hypergraph's :class:`Incidence` (n nodes, m hyperedges, nnz pairs).
    p: [n] float array, each node's projection (no gradient flows through it).
    mediators: add the mediator pairs (HyperGCN) or only (i_e, j_e)
      (1-HyperGCN).

  Returns:
    ``(src, dst, w)``: int32 [K], int32 [K] and [K] in ``p``'s dtype, with
    ``K = 2 nnz + m`` with mediators and ``K = m`` without.
  """
  _check_inc(inc)
  p = V.check_array(p, "p", dtype="float", shape=(inc.num_nodes,))
  ok = V.check_values(~jnp.any(jnp.isnan(p)), "p must not contain NaN")
  p = jax.lax.stop_gradient(p)
  n, m = inc.num_nodes, inc.num_edges
  pv = p[inc.node]
  seg_max = lambda a: jax.ops.segment_max(
    a, inc.edge, m, indices_are_sorted=True
  )
  seg_min = lambda a: jax.ops.segment_min(
    a, inc.edge, m, indices_are_sorted=True
  )
  pmax, pmin = seg_max(pv), seg_min(pv)
  i_e = seg_min(jnp.where(pv == pmax[inc.edge], inc.node, n))
  j_e = seg_min(jnp.where(pv == pmin[inc.edge], inc.node, n))
  i_e, j_e = jnp.minimum(i_e, n - 1), jnp.minimum(j_e, n - 1)
  size = inc.deg_edge.astype(p.dtype)
  used = size >= 1
  if mediators:
    w_e = jnp.where(used, 1.0 / (2.0 * jnp.maximum(size, 1.0) - 3.0), 0.0)
    ie, je = i_e[inc.edge], j_e[inc.edge]
    med = (inc.node != ie) & (inc.node != je)
    wm = jnp.where(med, w_e[inc.edge], 0.0)
    src = jnp.concatenate([ie, je, i_e])
    dst = jnp.concatenate([inc.node, inc.node, j_e])
    w = jnp.concatenate([wm, wm, w_e])
  else:
    src, dst, w = i_e, j_e, jnp.where(used, 1.0 / jnp.maximum(size, 1.0), 0.0)
  return src.astype(jnp.int32), dst.astype(jnp.int32), V.poison(w, ok)


def graph_propagate(
  src: jax.Array, dst: jax.Array, w: jax.Array, x: jax.Array, num_nodes: int
) -> jax.Array:
  """``D~^{-1/2}(A + I)D~^{-1/2} x`` for the symmetric graph given by undirected
  ``(src, dst, w)``.

  Each listed pair enters ``A`` in both directions (a self pair (v, v) therefore
  twice), as the reference's weight dictionary does. Weights may be negative
  (HyperGCN's singleton hyperedges with mediators); a node whose degree ``D~``
  is not positive gets the normaliser 0 (the reference gives 0 where the degree
  is 0 and NaN where it is negative). Node ids outside ``[0, num_nodes)`` raise
  ``ValueError`` eagerly and give NaN under jit.

  Args:
    src: [K] int array, one end of each undirected pair.
    dst: [K] int array, the other end.
    w: [K] real array, the pair weights (0 for unused slots).
    x: [num_nodes, ...] float array, the node signal.
    num_nodes: n (static).

  Returns:
    [num_nodes, ...] array of ``x``'s dtype.
  """
  num_nodes = V.check_int(num_nodes, "num_nodes", min_value=1)
  src = V.check_array(src, "src", dtype="int", ndim=1)
  dst = V.check_array(dst, "dst", dtype="int", shape=src.shape)
  w = V.check_array(w, "w", dtype="real", shape=src.shape)
  x, _ = _check_signal(x, None, num_nodes, "x")
  ok = V.check_values(
    jnp.all((src >= 0) & (src < num_nodes))
    & jnp.all((dst >= 0) & (dst < num_nodes)),
    f"src, dst node ids must lie in [0, {num_nodes})",
  )
  return V.poison(
    _graph_propagate(src, dst, w.astype(x.dtype), x, num_nodes), ok
  )


def _pos_rsqrt(d):
  """``d^{-1/2}`` where ``d > 0``, else 0."""
  return jnp.where(d > 0, jax.lax.rsqrt(jnp.where(d > 0, d, 1.0)), 0.0)


def _graph_propagate(src, dst, w, x, num_nodes):
  deg = (
    1.0
    + jax.ops.segment_sum(w, src, num_nodes)
    + jax.ops.segment_sum(w, dst, num_nodes)
  )
  s = _pos_rsqrt(deg)
  xs = _b(s, x) * x
  agg = jax.ops.segment_sum(
    _b(w, x) * xs[dst], src, num_nodes
  ) + jax.ops.segment_sum(_b(w, x) * xs[src], dst, num_nodes)
  return _b(s, x) * (agg + xs)
