r"""Weight-bounded ReLU MLPs: the strongly dense class, sparse and unconstrained
comparisons.

Strongly dense MLP (the class of "Dense neural networks are not universal
approximators", Rauchwerger, Jegelka & Levie, arXiv:2602.07618; the width
normalisation is a **reconstruction**: without it ``n`` copies of a weight-``B``
unit act as one unit of weight ``nB`` and universality returns). Widths
:math:`n_0 = d_0, n_1, \dots, n_L = d_L`:

.. math:: h^{(l)} = \sigma\Big(\frac{1}{n_{l-1}} W^{(l)} h^{(l-1)} + b^{(l)}\Big),
   \qquad |W^{(l)}_{ij}| \le B,\ |b^{(l)}_i| \le B,

with ReLU :math:`\sigma` on hidden layers and the identity on the output. The
first layer may be left unnormalised (``normalize_first=False``, the default:
:math:`d_0` is fixed, so its normalisation is a constant). The bound is kept by
projecting after each optimiser step (:func:`project_params`, or
:func:`box_projection` at the end of an optax chain).

Kernels are stored as ``[n_in, n_out]`` (``h @ W``), so the paper's
:math:`W^{(l)}` is the kernel's transpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax import lax

from jaxpapers.core import validation as V

NORMALIZE = ("mean", "none")
INITS = ("bound", "fan_in")


def _check_widths(d_in, d_out, widths):
  V.check_int(d_in, "d_in", min_value=1)
  V.check_int(d_out, "d_out", min_value=1)
  if (
    isinstance(widths, (int, str))
    or not isinstance(widths, Sequence)
    or len(widths) == 0
  ):
    raise ValueError(
      f"widths must be a non-empty sequence of hidden widths, got {widths!r}"
    )
  for i, w in enumerate(widths):
    V.check_int(w, f"widths[{i}]", min_value=1)
  return (int(d_in), *map(int, widths), int(d_out))


def _check_input(x, d_in):
  x = V.check_array(x, "x", ndim=2, dtype="real")
  if x.shape[1] != d_in:
    raise ValueError(f"x must have shape [batch, {d_in}], got {x.shape}")
  return x


class StronglyDenseMLP(nnx.Module):
  """ReLU MLP with every weight and bias in ``[-B, B]`` and mean aggregation
  (see module doc).

  Args:
    d_in: input dimension ``d_0``.
    d_out: output dimension ``d_L``.
    widths: hidden widths ``n_1..n_{L-1}``.
    bound: ``B > 0``.
    normalize: ``'mean'`` (divide by the fan-in ``n_{l-1}``) or ``'none'`` (sum
      aggregation: the bounded-unnormalised control).
    normalize_first: also divide the first layer by ``d_0``.
    init: ``'bound'`` (weights ``~ U[-B, B]``: the scale of the class under mean
      aggregation) or ``'fan_in'`` (weights ``~ U[-a, a]`` with ``a = min(B,
      sqrt(3 / n_{l-1}))``, variance ``1 / n_{l-1}`` where the bound allows:
      pre-activations start O(1) under sum aggregation, ``normalize='none'``,
      whatever the width).
    rngs: ``nnx.Rngs``; weights as ``init`` says, biases 0.

  Call: ``x [batch, d_in] -> [batch, d_out]``.
  """

  def __init__(
    self,
    d_in: int,
    d_out: int,
    *,
    widths: Sequence[int],
    bound: float,
    normalize: str = "mean",
    normalize_first: bool = False,
    init: str = "bound",
    rngs: nnx.Rngs,
  ):
    self.sizes = _check_widths(d_in, d_out, widths)
    self.bound = V.check_float(
      bound, "bound", min_value=0.0, min_inclusive=False
    )
    if normalize not in NORMALIZE:
      raise ValueError(
        f"normalize must be one of {NORMALIZE}, got {normalize!r}"
      )
    if init not in INITS:
      raise ValueError(f"init must be one of {INITS}, got {init!r}")
    self.normalize = normalize
    self.normalize_first = bool(normalize_first)
    self.num_layers = len(self.sizes) - 1
    for l in range(self.num_layers):
      n_in, n_out = self.sizes[l], self.sizes[l + 1]
      a = (
        self.bound if init == "bound" else min(self.bound, (3.0 / n_in) ** 0.5)
      )
      w = jax.random.uniform(rngs.params(), (n_in, n_out), minval=-a, maxval=a)
      setattr(self, f"w{l}", nnx.Param(w))
      setattr(self, f"b{l}", nnx.Param(jnp.zeros((n_out,))))

  def scales(self) -> tuple[float, ...]:
    """The aggregation factor of each layer (``1/n_{l-1}`` or 1).

    Returns:
      ``num_layers`` Python floats: ``1/n_in`` of a mean-normalised layer, else
      1.
    """
    out = []
    for l in range(self.num_layers):
      norm = self.normalize == "mean" and (l > 0 or self.normalize_first)
      out.append(1.0 / self.sizes[l] if norm else 1.0)
    return tuple(out)

  def layers(self) -> list[tuple[jax.Array, jax.Array]]:
    """The layers' parameters, first layer first.

    Returns:
      ``[(kernel [n_in, n_out], bias [n_out]), ...]``, one pair of float arrays
      per layer.
    """
    return [
      (getattr(self, f"w{l}")[...], getattr(self, f"b{l}")[...])
      for l in range(self.num_layers)
    ]

  def __call__(self, x: jax.Array) -> jax.Array:
    h = _check_input(x, self.sizes[0])
    for l, ((w, b), c) in enumerate(zip(self.layers(), self.scales())):
      h = c * (h @ w) + b
      if l < self.num_layers - 1:
        h = jax.nn.relu(h)
    return h


class SparseFaninMLP(nnx.Module):
  """ReLU MLP whose hidden neurons each read ``fan_in`` inputs, with weights in
  ``[-B, B]``.

  **Reconstruction** (the paper's sparse counterpart is not specified): neuron
  ``i`` of a hidden layer computes ``relu(sum_r w[i, r] h[idx[i, r]] + b[i])``
  with no width normalisation; the ``idx`` are drawn once without replacement
  and stored as a non-trainable variable. The readout sums all neurons of the
  last hidden layer (bounded weights, no normalisation, zero init): with a
  fan-in readout the output would see at most ``fan_in^L`` neurons whatever the
  width. In the strongly dense view (weights times ``n``) these weights are
  unbounded, which is what "not dense" means here.

  Args:
    d_in, d_out, widths, bound: as :class:`StronglyDenseMLP`.
    fan_in: inputs per hidden neuron (``min(fan_in, n_{l-1})`` where the
      previous layer is narrower).
    rngs: ``nnx.Rngs``; weights ``~ U[-B, B] / sqrt(fan_in)`` (so
      pre-activations start O(1)), biases 0, readout 0.

  Call: ``x [batch, d_in] -> [batch, d_out]``.
  """

  def __init__(
    self,
    d_in: int,
    d_out: int,
    *,
    widths: Sequence[int],
    bound: float,
    fan_in: int,
    rngs: nnx.Rngs,
  ):
    self.sizes = _check_widths(d_in, d_out, widths)
    self.bound = V.check_float(
      bound, "bound", min_value=0.0, min_inclusive=False
    )
    fan_in = V.check_int(fan_in, "fan_in", min_value=1)
    self.num_layers = len(self.sizes) - 1
    for l in range(self.num_layers - 1):
      n_in, n_out = self.sizes[l], self.sizes[l + 1]
      k = min(fan_in, n_in)
      scores = jax.random.uniform(rngs.params(), (n_out, n_in))
      idx = jnp.argsort(scores, axis=1)[:, :k]  # k distinct inputs per neuron
      w = jax.random.uniform(rngs.params(), (n_out, k), minval=-1.0, maxval=1.0)
      setattr(self, f"idx{l}", nnx.Variable(idx.astype(jnp.int32)))
      setattr(self, f"w{l}", nnx.Param(self.bound * w / jnp.sqrt(k)))
      setattr(self, f"b{l}", nnx.Param(jnp.zeros((n_out,))))
    last = self.num_layers - 1
    setattr(
      self, f"w{last}", nnx.Param(jnp.zeros((self.sizes[last], self.sizes[-1])))
    )
    setattr(self, f"b{last}", nnx.Param(jnp.zeros((self.sizes[-1],))))

  def __call__(self, x: jax.Array) -> jax.Array:
    h = _check_input(x, self.sizes[0])
    for l in range(self.num_layers - 1):
      idx = getattr(self, f"idx{l}")[...]  # [n_out, k]
      w = getattr(self, f"w{l}")[...]  # [n_out, k]
      # sum_r w[i, r] h[:, idx[i, r]], as h @ K with K [n_in, n_out] scattered
      # from w: the scatter touches n_out * k parameters, not the batch (a
      # batched gather is slow on CPU).
      rows = jnp.broadcast_to(jnp.arange(idx.shape[0])[:, None], idx.shape)
      kernel = (
        jnp.zeros((h.shape[1], idx.shape[0]), w.dtype).at[idx, rows].add(w)
      )
      h = jax.nn.relu(h @ kernel + getattr(self, f"b{l}")[...])
    last = self.num_layers - 1
    return h @ getattr(self, f"w{last}")[...] + getattr(self, f"b{last}")[...]


class PlainMLP(nnx.Module):
  """Unconstrained ReLU MLP (``nnx.Linear`` layers, default init, no bound).

  Args:
    d_in, d_out, widths: as :class:`StronglyDenseMLP`.
    rngs: ``nnx.Rngs``.

  Call: ``x [batch, d_in] -> [batch, d_out]``.
  """

  def __init__(
    self, d_in: int, d_out: int, *, widths: Sequence[int], rngs: nnx.Rngs
  ):
    self.sizes = _check_widths(d_in, d_out, widths)
    self.num_layers = len(self.sizes) - 1
    for l in range(self.num_layers):
      setattr(
        self, f"lin{l}", nnx.Linear(self.sizes[l], self.sizes[l + 1], rngs=rngs)
      )

  def __call__(self, x: jax.Array) -> jax.Array:
    h = _check_input(x, self.sizes[0])
    for l in range(self.num_layers):
      h = getattr(self, f"lin{l}")(h)
      if l < self.num_layers - 1:
        h = jax.nn.relu(h)
    return h


CLASSES = ("dense", "dense_sum", "sparse", "plain")


def make_model(
  cls: str,
  d_in: int,
  d_out: int,
  *,
  widths: Sequence[int],
  bound: float | None,
  fan_in: int,
  rngs: nnx.Rngs,
) -> nnx.Module:
  """One network of the classes the paper compares, by name.

  ``'dense'``: :class:`StronglyDenseMLP` (mean aggregation, ``|w| <= B``);
  ``'dense_sum'``: the width-unbounded control, the same bounded weights summed
  instead of averaged (``normalize='none'``, fan-in initialisation), so n units
  of weight B act as one of weight nB and universality returns as the width
  grows; ``'sparse'``: :class:`SparseFaninMLP` (``fan_in`` inputs per unit,
  ``|w| <= B``); ``'plain'``: an unconstrained :class:`PlainMLP`.

  Args:
    cls: one of ``CLASSES``.
    d_in, d_out: input and output widths.
    widths: the hidden widths.
    bound: B (ignored by ``'plain'``).
    fan_in: the sparse class's fan-in.
    rngs: the parameter random streams.

  Returns:
    The module.
  """
  if cls not in CLASSES:
    raise ValueError(f"cls must be one of {CLASSES}, got {cls!r}")
  if cls == "plain":
    return PlainMLP(d_in, d_out, widths=widths, rngs=rngs)
  if bound is None:
    raise ValueError(f"bound must be a number for the class {cls!r}")
  if cls == "dense":
    return StronglyDenseMLP(d_in, d_out, widths=widths, bound=bound, rngs=rngs)
  if cls == "dense_sum":
    return StronglyDenseMLP(
      d_in,
      d_out,
      widths=widths,
      bound=bound,
      normalize="none",
      init="fan_in",
      rngs=rngs,
    )
  return SparseFaninMLP(
    d_in, d_out, widths=widths, bound=bound, fan_in=fan_in, rngs=rngs
  )


def project_params(params: Any, bound: float) -> Any:
  """Projects every leaf of a parameter pytree onto the box ``[-bound, bound]``.

  Wraps ``optax.projections.projection_box``. Call it after
  ``optax.apply_updates`` (not inside the gradient transformation), or use
  :func:`box_projection` as the last link of a chain.

  Args:
    params: pytree of float arrays (e.g. the ``nnx.Param`` state of a model).
    bound: ``B > 0``.

  Returns:
    The projected pytree (same structure).
  """
  bound = V.check_float(bound, "bound", min_value=0.0, min_inclusive=False)
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    V.check_array(leaf, f"params{jax.tree_util.keystr(path)}", dtype="float")
  lower = jax.tree.map(lambda x: jnp.full_like(x, -bound), params)
  upper = jax.tree.map(lambda x: jnp.full_like(x, bound), params)
  return optax.projections.projection_box(params, lower, upper)


def box_projection(bound: float) -> optax.GradientTransformation:
  """An optax link that makes ``params + updates`` land in ``[-bound, bound]``.

  Put it last in a chain: ``optax.chain(optax.adam(1e-3), box_projection(B))``.
  Its update is ``clip(params + u, -B, B) - params``, so ``optax.apply_updates``
  returns the projected iterate (the optimiser's moments see the raw gradients,
  as with projecting after the step).

  Args:
    bound: ``B > 0``.

  Returns:
    An ``optax.GradientTransformation`` (stateless; ``update`` needs
    ``params``).
  """
  bound = V.check_float(bound, "bound", min_value=0.0, min_inclusive=False)

  def init_fn(params):
    del params
    return optax.EmptyState()

  def update_fn(updates, state, params=None):
    if params is None:
      raise ValueError(
        "box_projection needs params: call tx.update(grads, state, params)"
      )
    new = jax.tree.map(
      lambda p, u: jnp.clip(p + u, -bound, bound) - p, params, updates
    )
    return new, state

  return optax.GradientTransformation(init_fn, update_fn)


class ComputationalGraph(NamedTuple):
  r"""An MLP as a weighted graph with a node signal (message-passing view).

  Nodes are all neurons (inputs, hidden, outputs), in layer order. Edge
  ``j -> i`` from layer ``l-1`` to layer ``l`` carries :math:`\frac{1}{n_{l-1}}
  W^{(l)}_{ij}` (the aggregation factor times the weight); the node signal is
  the bias (0 on input nodes).

  Attributes:
    adjacency: ``[N, N]``, ``adjacency[i, j]`` the weight of edge ``j -> i``.
    bias: ``[N]``.
    layer: ``[N]`` int32 layer index of each node (0 = input).
    num_layers: ``L`` (number of weight layers).
  """

  adjacency: jax.Array
  bias: jax.Array
  layer: jax.Array
  num_layers: int


def computational_graph(model: StronglyDenseMLP) -> ComputationalGraph:
  """The computational graph of a :class:`StronglyDenseMLP` (see
  :class:`ComputationalGraph`).

  Args:
    model: a strongly dense MLP.

  Returns:
    Its graph with ``N = sum(sizes)`` nodes.
  """
  if not isinstance(model, StronglyDenseMLP):
    raise TypeError(
      f"model must be a StronglyDenseMLP, got {type(model).__name__}"
    )
  sizes = model.sizes
  offs = [0]
  for s in sizes:
    offs.append(offs[-1] + s)
  n = offs[-1]
  adj = jnp.zeros((n, n))
  bias = jnp.zeros((n,))
  for l, ((w, b), c) in enumerate(zip(model.layers(), model.scales())):
    rows = slice(offs[l + 1], offs[l + 2])
    cols = slice(offs[l], offs[l + 1])
    adj = adj.at[rows, cols].set(c * w.T)
    bias = bias.at[rows].set(b)
  layer = jnp.concatenate(
    [jnp.full((s,), l, jnp.int32) for l, s in enumerate(sizes)]
  )
  return ComputationalGraph(adj, bias, layer, len(sizes) - 1)


def message_passing_apply(graph: ComputationalGraph, x: jax.Array) -> jax.Array:
  r"""Runs the MLP as ``L`` rounds of message passing on its computational
  graph.

  Round ``l``: every node aggregates :math:`f \leftarrow A f + b`; nodes of
  layer ``l`` take the result (through ReLU unless ``l = L``), the others keep
  their value. Equals the MLP's forward.

  Args:
    graph: from :func:`computational_graph`.
    x: ``[batch, d_0]``.

  Returns:
    ``[batch, d_L]``: the signal on the output nodes.
  """
  if not isinstance(graph, ComputationalGraph):
    raise TypeError(
      f"graph must be a ComputationalGraph, got {type(graph).__name__}"
    )
  layer = graph.layer
  if not V.is_concrete(layer):
    raise TypeError(
      "graph.layer must be concrete: close over the graph instead of tracing it"
    )
  d_in = int((layer == 0).sum())
  d_out = int((layer == graph.num_layers).sum())
  x = V.check_array(x, "x", ndim=2, dtype="real")
  if x.shape[1] != d_in:
    raise ValueError(f"x must have shape [batch, {d_in}], got {x.shape}")
  n = graph.adjacency.shape[0]
  f = (
    jnp.zeros((x.shape[0], n), graph.adjacency.dtype).at[:, : x.shape[1]].set(x)
  )
  big_l = graph.num_layers

  def body(l, f):
    agg = f @ graph.adjacency.T + graph.bias
    agg = jnp.where(l < big_l, jax.nn.relu(agg), agg)
    return jnp.where((layer == l)[None, :], agg, f)

  f = lax.fori_loop(1, big_l + 1, body, f)
  return f[:, n - d_out :]
