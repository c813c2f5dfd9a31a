"""The four vanilla backbones as Flax NNX modules (two-stage message passing on
segment ops).

Every model maps ``data: HypergraphData`` to logits ``[n, K]`` with
``__call__(data, *, deterministic, rngs)``. Undirected backbones (HGNN,
HyperGCN, PhenomNN) ignore phases; feed them ``as_undirected(data)`` (phases 1
and self-loop hyperedges), as the reference does; :func:`backbone_input` picks
the form a backbone takes by its name. All share :class:`ClassifierHead` (2
layers with LayerNorm), so PANDA variants differ from their vanilla counterparts
only in the propagation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers.hypergraph import _ops
from jaxpapers.hypergraph._structure import HypergraphData, as_undirected

__all__ = [
  "ClassifierHead",
  "GeDiHNN",
  "HGNN",
  "HyperGCN",
  "PhenomNN",
  "BACKBONES",
  "backbone_input",
  "complex_unit_mul",
  "phenom_step",
  "PHENOM_H_SETTINGS",
  "phenom_h_init",
  "uniform_init",
  "torch_linear",
  "check_phenom_args",
]


def _check(data, in_features: int | None = None):
  """``data`` is a HypergraphData whose features match the model's
  ``in_features``."""
  if not isinstance(data, HypergraphData):
    raise TypeError(f"data must be a HypergraphData, got {type(data).__name__}")
  if in_features is not None and (
    data.x.ndim != 2 or data.x.shape[1] != in_features
  ):
    raise ValueError(
      f"data.x has shape {tuple(data.x.shape)}, but the model was built for "
      f"in_features={in_features} ([num_nodes, {in_features}])"
    )


def _check_dims(in_features, num_classes, hidden, num_layers, dropout):
  """Constructor arguments shared by every backbone (static config, checked at
  build time)."""
  for nm, v, lo in (
    ("in_features", in_features, 1),
    ("num_classes", num_classes, 1),
    ("hidden", hidden, 1),
    ("num_layers", num_layers, 1),
  ):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
      raise ValueError(f"{nm} must be an int >= {lo}, got {v!r}")
  if (
    isinstance(dropout, bool)
    or not isinstance(dropout, (int, float))
    or not 0.0 <= dropout < 1.0
  ):
    raise ValueError(f"dropout must be a float in [0, 1), got {dropout!r}")


def complex_unit_mul(
  re: jax.Array, im: jax.Array | None, i_complex: bool
) -> tuple[jax.Array, jax.Array | None]:
  """Multiplies ``re + i im`` by ``c_I = 1 + i`` (``i_complex``) or 1.

  Args:
    re: float array of any shape, the real part.
    im: float array of ``re``'s shape, the imaginary part, or None for a real
      signal.
    i_complex: multiply by ``1 + i`` (True) or return the input unchanged
      (False).

  Returns:
    ``(re_out, im_out)`` of ``re``'s shape: ``(re - im, re + im)`` when
    ``i_complex``, else ``(re, im)`` as given (``im_out`` None for a real
    input).
  """
  if im is not None and jnp.shape(im) != jnp.shape(re):
    raise ValueError(
      f"im must have the shape of re {jnp.shape(re)}, got {jnp.shape(im)}"
    )
  if not isinstance(i_complex, (bool, np.bool_)):
    raise TypeError(f"i_complex must be a bool, got {type(i_complex).__name__}")
  if not i_complex:
    return re, im
  im0 = jnp.zeros_like(re) if im is None else im
  return re - im0, re + im0


def uniform_init(bound: float) -> nnx.Initializer:
  """Initializer drawing ``U(-bound, bound)`` (PyTorch's ``nn.Linear`` default
  uses ``bound = 1/sqrt(fan_in)`` for its weight and bias).

  Args:
    bound: finite float >= 0, the half-width of the interval.

  Returns:
    An initializer ``init(key, shape, dtype=float32) -> jax.Array`` of the given
    shape.
  """
  if (
    isinstance(bound, bool)
    or not isinstance(bound, (int, float))
    or not 0 <= bound < np.inf
  ):
    raise ValueError(f"bound must be a finite float >= 0, got {bound!r}")
  bound = float(bound)

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, shape, dtype, -bound, bound)

  return init


def torch_linear(
  in_features: int, out_features: int, *, use_bias: bool = True, rngs: nnx.Rngs
) -> nnx.Linear:
  """``nnx.Linear`` initialised as PyTorch's ``nn.Linear``: weight and bias
  ``U(+-1/sqrt(in))``.

  Args:
    in_features: input width.
    out_features: output width.
    use_bias: whether the layer has a bias.
    rngs: the parameter random streams.

  Returns:
    An ``nnx.Linear`` with kernel ``[in_features, out_features]`` (and bias
    ``[out_features]``).
  """
  b = uniform_init(in_features**-0.5)
  return nnx.Linear(
    in_features,
    out_features,
    use_bias=use_bias,
    kernel_init=b,
    bias_init=b,
    rngs=rngs,
  )


# PhenomNN's learned-H settings (the reference tuner's ``H_setting``): which
# ``H`` matrices the update uses. 0: none (the plain update); 1: ``H_beta``,
# ``H_gamma``; 2: ``H = I`` in the beta term (no parameters); 3: ``H_beta`` and
# two gamma matrices, the gamma term halved.
PHENOM_H_SETTINGS = {
  0: (),
  1: ("beta", "gamma1"),
  2: (),
  3: ("beta", "gamma1", "gamma2"),
}


def phenom_h_init(
  key: jax.Array, width: int, h_setting: int
) -> dict[str, jax.Array]:
  """The reference's initial ``H`` matrices ``N(0, (1/width)^2) + I``
  ``[width, width]``.

  Args:
    key: a JAX random key.
    width: W, the hidden width.
    h_setting: one of :data:`PHENOM_H_SETTINGS` (0..3).

  Returns:
    A dict from the setting's matrix names (``'beta'``, ``'gamma1'``,
    ``'gamma2'``) to ``[W, W]`` float32 arrays; empty for settings 0 and 2.
  """
  if isinstance(h_setting, bool) or h_setting not in PHENOM_H_SETTINGS:
    raise ValueError(
      f"h_setting must be one of {sorted(PHENOM_H_SETTINGS)}, got {h_setting!r}"
    )
  names = PHENOM_H_SETTINGS[h_setting]
  keys = jax.random.split(key, max(len(names), 1))
  return {
    t: jax.random.normal(k, (width, width)) / width + jnp.eye(width)
    for t, k in zip(names, keys)
  }


def phenom_step(
  y: jax.Array,
  y0: jax.Array,
  a_beta_y: jax.Array,
  a_gamma_y: jax.Array,
  d_beta: jax.Array,
  d_gamma: jax.Array,
  *,
  lam0: float | jax.Array,
  lam1: float | jax.Array,
  step: float | jax.Array,
  h_setting: int = 0,
  h: dict[str, jax.Array] | None = None,
) -> jax.Array:
  """One unrolled PhenomNN step (Wang et al., ICML 2023, simplified form with
  diagonal ``D``).

  ``Y' = (1 - step) Y + step Y_hat / (lam0 D_beta + lam1 D_gamma + 1)`` with, by
  ``h_setting`` (the reference's ``H``, ``HisI``, ``twoHgamma`` flags; ``L_gamma
  Y = D_gamma Y - A_gamma Y``):

  * 0: ``Y_hat = lam0 A_beta Y + lam1 A_gamma Y + Y^0``;
  * 1: ``lam0 (A_beta Y (H1 + H1^T) - D_beta Y H1 H1^T) + Y^0
    + lam1 (L_gamma Y + A_gamma Y (H2 + H2^T) - D_gamma Y H2 H2^T)``;
  * 2: ``lam0 (2 A_beta Y - D_beta Y) + lam1 A_gamma Y + Y^0``;
  * 3: as 1 with the gamma term ``lam1 / 2 (L_gamma Y + A_gamma Y (H2 + H2^T) -
    D_gamma Y H2 H2^T
    + A_gamma Y (H3 + H3^T) - A_gamma Y H3 H3^T)``.

  Args:
    y, y0, a_beta_y, a_gamma_y: ``[n, W]`` current state, ``Y^0`` and the two
      propagations.
    d_beta, d_gamma: ``[n]`` degrees.
    lam0, lam1, step: floats; ``step`` is the reference's ``alpha``.
    h_setting: 0..3 (see above).
    h: dict of ``[W, W]`` matrices ``'beta'``, ``'gamma1'``, ``'gamma2'`` as the
      setting needs.

  Returns:
    ``[n, W]`` the next state.
  """
  if isinstance(h_setting, bool) or h_setting not in PHENOM_H_SETTINGS:
    raise ValueError(
      f"h_setting must be one of {sorted(PHENOM_H_SETTINGS)}, got {h_setting!r}"
    )
  shp = jnp.shape(y)
  if len(shp) != 2:
    raise ValueError(f"y must have shape [n, W], got {shp}")
  for nm, a in (("y0", y0), ("a_beta_y", a_beta_y), ("a_gamma_y", a_gamma_y)):
    if jnp.shape(a) != shp:
      raise ValueError(
        f"{nm} must have the shape of y {shp}, got {jnp.shape(a)}"
      )
  for nm, a in (("d_beta", d_beta), ("d_gamma", d_gamma)):
    if jnp.shape(a) != shp[:1]:
      raise ValueError(
        f"{nm} must have shape [n] = {shp[:1]}, got {jnp.shape(a)}"
      )
  need = PHENOM_H_SETTINGS[h_setting]
  mats = h if isinstance(h, dict) else {}
  if any(t not in mats or jnp.shape(mats[t]) != (shp[1],) * 2 for t in need):
    raise ValueError(
      f"h_setting={h_setting} needs h with [{shp[1]}, {shp[1]}] matrices {need}"
    )
  db, dg = d_beta[:, None], d_gamma[:, None]
  if h_setting == 0:
    y_hat = lam0 * a_beta_y + y0 + lam1 * a_gamma_y
  elif h_setting == 2:
    y_hat = lam0 * (2.0 * a_beta_y - db * y) + y0 + lam1 * a_gamma_y
  else:
    h1, h2 = mats["beta"], mats["gamma1"]
    beta = a_beta_y @ (h1 + h1.T) - ((db * y) @ h1) @ h1.T
    gamma = (
      dg * y - a_gamma_y + a_gamma_y @ (h2 + h2.T) - ((dg * y) @ h2) @ h2.T
    )
    if h_setting == 3:
      h3 = mats["gamma2"]
      gamma = 0.5 * (gamma + a_gamma_y @ (h3 + h3.T) - (a_gamma_y @ h3) @ h3.T)
    y_hat = lam0 * beta + y0 + lam1 * gamma
  q = lam0 * d_beta + lam1 * d_gamma + 1.0
  return (1.0 - step) * y + step * y_hat / q[:, None]


def check_phenom_args(
  lam0: float, lam1: float, alp: float, h_setting: int
) -> float:
  """Checks PhenomNN's static options and returns ``alp`` as a float.

  The step size is ``alp``, or ``1/(1 + lam0 + lam1)`` for ``alp = 0`` (the
  reference's rule), computed where the model runs so that traced
  ``lam0``/``lam1`` enter it.

  Args:
    lam0: finite float >= 0, the weight of the ``A_beta`` term.
    lam1: finite float >= 0, the weight of the ``A_gamma`` term.
    alp: finite float >= 0, the step size (0: the reference's rule above).
    h_setting: one of :data:`PHENOM_H_SETTINGS` (0..3).

  Returns:
    ``alp`` as a Python float.

  Raises:
    ValueError: an option out of range or of the wrong type.
  """
  for nm, v in (("lam0", lam0), ("lam1", lam1), ("alp", alp)):
    if (
      isinstance(v, bool)
      or not isinstance(v, (int, float))
      or not 0.0 <= v < float("inf")
    ):
      raise ValueError(f"{nm} must be a finite float >= 0, got {v!r}")
  if isinstance(h_setting, bool) or h_setting not in PHENOM_H_SETTINGS:
    raise ValueError(
      f"h_setting must be one of {sorted(PHENOM_H_SETTINGS)}, got {h_setting!r}"
    )
  return float(alp)


class ClassifierHead(nnx.Module):
  """``Linear -> LayerNorm -> ReLU -> Dropout -> Linear`` (the PANDA/GeDi 2-layer classifier).

  Maps ``x: [..., in_features]`` to logits ``[..., num_classes]``.

  Args:
    in_features: width of the input's last axis.
    num_classes: K, the number of logits.
    hidden: width of the hidden layer.
    dropout: dropout rate in ``[0, 1)`` before the second layer.
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    *,
    hidden: int = 64,
    dropout: float = 0.5,
    rngs: nnx.Rngs,
  ):
    _check_dims(in_features, num_classes, hidden, 1, dropout)
    self.in_features = in_features
    self.fc1 = nnx.Linear(in_features, hidden, rngs=rngs)
    self.norm = nnx.LayerNorm(hidden, rngs=rngs)
    self.drop = nnx.Dropout(dropout)
    self.fc2 = nnx.Linear(hidden, num_classes, rngs=rngs)

  def __call__(
    self, x: jax.Array, *, deterministic: bool, rngs: nnx.Rngs | None = None
  ) -> jax.Array:
    """The logits of ``x``.

    Args:
      x: [..., in_features] float array.
      deterministic: skip the dropout (evaluation).
      rngs: random streams with a ``dropout`` stream; needed unless
        ``deterministic``.

    Returns:
      [..., num_classes] logits in ``x``'s dtype.
    """
    if jnp.ndim(x) < 1 or jnp.shape(x)[-1] != self.in_features:
      raise ValueError(
        f"x must have {self.in_features} features on its last axis, "
        f"got shape {jnp.shape(x)}"
      )
    h = jax.nn.relu(self.norm(self.fc1(x)))
    return self.fc2(self.drop(h, deterministic=deterministic, rngs=rngs))


class GeDiHNN(nnx.Module):
  """GeDi-HNN (Fiorini et al., TMLR 2024): complex first-order filter on
  directed hypergraphs.

  Per layer (SigMaNet-style, K = 1): ``X' = (X Theta0) c_I + L (X Theta1) + b``
  with ``c_I = 1 + i`` if ``i_complex``; ``L = Q_N = D_v^{-1/2} H D_e^{-1} H^*
  D_v^{-1/2}`` (``operator_variant='Q_N'``) or the reference's ``L2``
  (``'code'``, default, see ``gedi_propagate``). The real ``Theta`` acts on Re
  and Im separately; the input imaginary part is 0; the activation is the
  complex ReLU (``Re >= 0`` mask on both parts); the real bias b is added to Re
  and Im (as in the reference); ``i_complex`` defaults to False (the reference's
  training script passes False); skip connections from layer 2; final dropout;
  the classifier reads ``[Re || Im]``. Phase convention: ``H_ve = i`` on tails
  (q = 1/4, ``'code'``); ``conjugate=True`` applies ``conj(L)`` as PyG's
  propagation of the reference does. ``other_complex=True`` feeds the input as
  ``X + iX`` instead of ``X + 0i`` (the reference's ``other_complex``, which its
  tuner searches).

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    hidden: width of every layer.
    num_layers: number of complex filter layers (>= 1).
    dropout: dropout rate in ``[0, 1)``.
    i_complex: multiply the ``Theta0`` term by ``c_I = 1 + i``.
    operator_variant: ``'Q_N'`` or ``'code'`` (see :func:`gedi_propagate`).
    conjugate: apply ``conj(L)``.
    other_complex: feed ``X + iX`` instead of ``X + 0i``.
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    i_complex: bool = False,
    operator_variant: str = "code",
    conjugate: bool = False,
    other_complex: bool = False,
    rngs: nnx.Rngs,
  ):
    if not isinstance(other_complex, (bool, np.bool_)):
      raise TypeError(
        f"other_complex must be a bool, got {type(other_complex).__name__}"
      )
    self.other_complex = bool(other_complex)
    if operator_variant not in ("Q_N", "code"):
      raise ValueError(
        f"operator_variant must be 'Q_N' or 'code', got {operator_variant!r}"
      )
    _check_dims(in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    self.i_complex, self.variant, self.conjugate = (
      i_complex,
      operator_variant,
      conjugate,
    )
    dims = [in_features] + [hidden] * num_layers
    self.theta0 = nnx.List(
      [
        nnx.Linear(a, b, use_bias=False, rngs=rngs)
        for a, b in zip(dims, dims[1:])
      ]
    )
    self.theta1 = nnx.List(
      [
        nnx.Linear(a, b, use_bias=False, rngs=rngs)
        for a, b in zip(dims, dims[1:])
      ]
    )
    self.bias = nnx.List(
      [nnx.Param(jnp.zeros((hidden,))) for _ in range(num_layers)]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = ClassifierHead(
      2 * hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def __call__(
    self,
    data: HypergraphData,
    *,
    deterministic: bool = True,
    rngs: nnx.Rngs | None = None,
  ) -> jax.Array:
    """Node logits of ``data``.

    Args:
      data: the hypergraph dataset, n nodes with ``data.x: [n, in_features]``.
      deterministic: skip the dropout (evaluation).
      rngs: random streams with a ``dropout`` stream; needed unless
        ``deterministic``.

    Returns:
      [n, num_classes] float logits.
    """
    _check(data, self.in_features)
    inc = data.incidence
    re, im = data.x, (data.x if self.other_complex else None)
    for l, (t0, t1, b) in enumerate(zip(self.theta0, self.theta1, self.bias)):
      r0, i0 = complex_unit_mul(
        t0(re), None if im is None else t0(im), self.i_complex
      )
      r1, i1 = _ops.gedi_propagate(
        inc,
        t1(re),
        None if im is None else t1(im),
        variant=self.variant,
        conjugate=self.conjugate,
      )
      nr = r0 + r1 + b[...]
      ni = (
        (0.0 if i0 is None else i0)
        + (jnp.zeros_like(nr) if i1 is None else i1)
        + b[...]
      )
      nr, ni = _ops.complex_relu(nr, ni)
      if l > 0:
        nr, ni = nr + re, ni + (jnp.zeros_like(re) if im is None else im)
      re, im = nr, ni
    # Every layer sets im; the zeros stand for the "+ 0i" of a real input that
    # met no layer.
    im = jnp.zeros_like(re) if im is None else im
    h = self.drop(
      jnp.concatenate([re, im], -1), deterministic=deterministic, rngs=rngs
    )
    return self.head(h, deterministic=deterministic, rngs=rngs)


class HGNN(nnx.Module):
  """HGNN (Feng et al., AAAI 2019): ``X' = ReLU(D_v^{-1/2} H D_e^{-1} H^T D_v^{-1/2} X Theta + b)``.

  Two stages: ``h_e = delta_e^{-1} sum_{u in e} d_u^{-1/2} (X Theta)_u``,
  ``x'_v = d_v^{-1/2} sum_{e ni v} h_e``. Input dropout per layer, skip
  connections from layer 2, shared classifier head.

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    hidden: width of every layer.
    num_layers: number of propagation layers (>= 1).
    dropout: dropout rate in ``[0, 1)``.
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    rngs: nnx.Rngs,
  ):
    _check_dims(in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    dims = [in_features] + [hidden] * num_layers
    self.lins = nnx.List(
      [nnx.Linear(a, b, rngs=rngs) for a, b in zip(dims, dims[1:])]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = ClassifierHead(
      hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def __call__(
    self,
    data: HypergraphData,
    *,
    deterministic: bool = True,
    rngs: nnx.Rngs | None = None,
  ) -> jax.Array:
    """Node logits of ``data``.

    Args:
      data: the hypergraph dataset, n nodes with ``data.x: [n, in_features]``.
      deterministic: skip the dropout (evaluation).
      rngs: random streams with a ``dropout`` stream; needed unless
        ``deterministic``.

    Returns:
      [n, num_classes] float logits.
    """
    _check(data, self.in_features)
    x = data.x
    for l, lin in enumerate(self.lins):
      h = self.drop(x, deterministic=deterministic, rngs=rngs)
      h = jax.nn.relu(_ops.hgnn_propagate(data.incidence, lin(h)))
      x = h + x if l > 0 else h
    return self.head(x, deterministic=deterministic, rngs=rngs)


class HyperGCN(nnx.Module):
  """HyperGCN (Yadati et al., NeurIPS 2019), rebuilt graph per layer, O(nnz).

  Per layer: ``S = X Theta``, ``p = S r`` with a fixed random ``r ~ U[0, 1)``
  (drawn at init, non-trainable; the reference draws the same distribution),
  graph from each hyperedge's ``(argmax p, argmin p)`` (+ mediators), ``X' =
  ReLU(A_bar S + b)``, ``A_bar = D~^{-1/2}(A + I)D~^{-1/2}``. ``fast=True``
  (FastHyperGCN) builds the graph once from the input features. ``mediators``
  defaults to False, as in the reference's training script: with mediators, a
  singleton hyperedge puts -2 on its node's diagonal (the reference's
  ``1/(2|e| - 3)``, counted twice), so on the undirected data, where every node
  has one, most rows of ``A + I`` sum to a non-positive number and those nodes
  are cut off.

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    hidden: width of every layer.
    num_layers: number of propagation layers (>= 1).
    dropout: dropout rate in ``[0, 1)``.
    mediators: build the graph with mediators (see :func:`hypergcn_graph`).
    fast: FastHyperGCN, one graph from the input features for every layer.
    rngs: the parameter random streams (also draw the fixed projections ``r``).
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    mediators: bool = False,
    fast: bool = False,
    rngs: nnx.Rngs,
  ):
    _check_dims(in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    dims = [in_features] + [hidden] * num_layers
    self.mediators, self.fast = mediators, fast
    self.lins = nnx.List(
      [nnx.Linear(a, b, rngs=rngs) for a, b in zip(dims, dims[1:])]
    )
    self.r = nnx.List(
      [
        nnx.Variable(jax.random.uniform(rngs.params(), (d,)))
        for d in ([in_features] if fast else dims[1:])
      ]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = ClassifierHead(
      hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def graph(
    self, data: HypergraphData, s: jax.Array, layer: int
  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The graph of layer ``layer`` (from ``data.x`` for every layer when
    ``fast``).

    Args:
      data: the (undirected) hypergraph, n nodes.
      s: [n, hidden] float array, the layer's ``X Theta``.
      layer: index of the layer (selects its projection ``r``).

    Returns:
      ``(src, dst, w)``, the undirected weighted edge list of
      :func:`hypergcn_graph`: int32 [K], int32 [K] and float [K]
      (``K = 2 nnz + m`` with mediators, ``K = m`` without).
    """
    if self.fast:
      return _ops.hypergcn_graph(
        data.incidence, data.x @ self.r[0][...], mediators=self.mediators
      )
    return _ops.hypergcn_graph(
      data.incidence, s @ self.r[layer][...], mediators=self.mediators
    )

  def __call__(
    self,
    data: HypergraphData,
    *,
    deterministic: bool = True,
    rngs: nnx.Rngs | None = None,
  ) -> jax.Array:
    """Node logits of ``data``.

    Args:
      data: the hypergraph dataset, n nodes with ``data.x: [n, in_features]``.
      deterministic: skip the dropout (evaluation).
      rngs: random streams with a ``dropout`` stream; needed unless
        ``deterministic``.

    Returns:
      [n, num_classes] float logits.
    """
    _check(data, self.in_features)
    x = data.x
    for l, lin in enumerate(self.lins):
      s = lin(self.drop(x, deterministic=deterministic, rngs=rngs))
      src, dst, w = self.graph(data, s, l)
      h = jax.nn.relu(_ops.graph_propagate(src, dst, w, s, data.num_nodes))
      x = h + x if l > 0 else h
    return self.head(x, deterministic=deterministic, rngs=rngs)


class PhenomNN(nnx.Module):
  """Simplified PhenomNN (Wang et al., ICML 2023), unrolled energy minimisation.

  ``Y^0 = MLP(X)``; ``Y^{k+1} = (1 - a) Y^k + a Q~^{-1}(lam0 A_beta Y^k + lam1
  A_gamma Y^k + Y^0)`` with ``Q~ = lam0 D_beta + lam1 D_gamma + I`` and
  ``a = alp`` or, for ``alp = 0`` (default), ``1/(1 + lam0 + lam1)`` (see
  ``phenom_operators``); ``h_setting`` 1-3 use learned ``H`` matrices as the
  reference's tuner does (:func:`phenom_step`). ``num_steps`` unrolled steps. As
  in the reference's block: dropout on the input and on ``Y^0``, ReLU and
  dropout after the propagation, then the classifier.

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    hidden: W, the width of ``Y``.
    num_layers: accepted for a signature shared with the other backbones;
      unused.
    dropout: dropout rate in ``[0, 1)``.
    lam0: finite float >= 0, the weight of the ``A_beta`` term.
    lam1: finite float >= 0, the weight of the ``A_gamma`` term.
    num_steps: number of unrolled steps (>= 0).
    alp: the step size (0: ``1/(1 + lam0 + lam1)``).
    h_setting: one of :data:`PHENOM_H_SETTINGS` (0..3).
    rngs: the parameter random streams.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    lam0: float = 10.0,
    lam1: float = 10.0,
    num_steps: int = 4,
    alp: float = 0.0,
    h_setting: int = 0,
    rngs: nnx.Rngs,
  ):
    _check_dims(in_features, num_classes, hidden, num_layers, dropout)
    del num_layers
    self.alp = check_phenom_args(lam0, lam1, alp, h_setting)
    if (
      isinstance(num_steps, bool)
      or not isinstance(num_steps, int)
      or num_steps < 0
    ):
      raise ValueError(f"num_steps must be an int >= 0, got {num_steps!r}")
    self.in_features = in_features
    self.lam0, self.lam1, self.num_steps = (
      float(lam0),
      float(lam1),
      int(num_steps),
    )
    self.h_setting = int(h_setting)
    self.h = nnx.Dict(
      {
        k: nnx.Param(v)
        for k, v in (
          phenom_h_init(rngs.params(), hidden, h_setting)
          if PHENOM_H_SETTINGS[h_setting]
          else {}
        ).items()
      }
    )
    self.inp = nnx.Linear(in_features, hidden, rngs=rngs)
    self.drop = nnx.Dropout(dropout)
    self.head = ClassifierHead(
      hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def __call__(
    self,
    data: HypergraphData,
    *,
    deterministic: bool = True,
    rngs: nnx.Rngs | None = None,
  ) -> jax.Array:
    """Node logits of ``data``.

    Args:
      data: the hypergraph dataset, n nodes with ``data.x: [n, in_features]``.
      deterministic: skip the dropout (evaluation).
      rngs: random streams with a ``dropout`` stream; needed unless
        ``deterministic``.

    Returns:
      [n, num_classes] float logits.
    """
    _check(data, self.in_features)
    inc = data.incidence
    drop = lambda a: self.drop(a, deterministic=deterministic, rngs=rngs)
    y0 = drop(jax.nn.relu(self.inp(drop(data.x))))
    ones = jnp.ones((inc.num_nodes,), y0.dtype)
    d_b = _ops.phenom_propagate(inc, ones, which="beta")
    d_g = _ops.phenom_propagate(inc, ones, which="gamma")
    h = {k: v[...] for k, v in self.h.items()}
    y = y0
    for _ in range(self.num_steps):
      y = phenom_step(
        y,
        y0,
        _ops.phenom_propagate(inc, y, which="beta"),
        _ops.phenom_propagate(inc, y, which="gamma"),
        d_b,
        d_g,
        lam0=self.lam0,
        lam1=self.lam1,
        step=self.alp if self.alp else 1.0 / (1.0 + self.lam0 + self.lam1),
        h_setting=self.h_setting,
        h=h,
      )
    y = drop(jax.nn.relu(y))
    return self.head(y, deterministic=deterministic, rngs=rngs)


BACKBONES = {
  "gedi": GeDiHNN,
  "hgnn": HGNN,
  "hypergcn": HyperGCN,
  "phenomnn": PhenomNN,
}


def backbone_input(backbone: str, data: HypergraphData) -> HypergraphData:
  """The hypergraph that ``backbone`` (vanilla or with PANDA) is trained on.

  GeDi-HNN reads the directed incidence (phases ``exp(2 pi i q)`` on tails) and
  takes ``data`` as it is; HGNN, HyperGCN and PhenomNN ignore phases and take
  ``as_undirected(data)`` (all ``H_ve = 1`` plus one self-loop hyperedge per
  node), as the reference code feeds them.

  Args:
    backbone: one of :data:`BACKBONES` (``'gedi'``, ``'hgnn'``, ``'hypergcn'``,
      ``'phenomnn'``).
    data: the (directed) hypergraph dataset.

  Returns:
    ``data`` itself for ``'gedi'``, else ``as_undirected(data)``.
  """
  if not isinstance(backbone, str) or backbone not in BACKBONES:
    raise ValueError(
      f"backbone must be one of {sorted(BACKBONES)}, got {backbone!r}"
    )
  _check(data)
  return data if backbone == "gedi" else as_undirected(data)
