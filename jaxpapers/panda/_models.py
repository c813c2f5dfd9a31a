"""PANDA-equipped backbones: the vanilla models of :mod:`jaxpapers.hypergraph` with PANDA propagation.

Each model keeps its backbone's input handling, activation, skip connections and the shared
:class:`jaxpapers.hypergraph.ClassifierHead`, and swaps the fixed operator for PANDA layers
whose structural prior is the backbone's own normalisation.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers.panda._stage import PandaConfig, PandaLayer, PandaStage, stage_priors

__all__ = ["PandaGeDi", "PandaHGNN", "PandaHyperGCN", "PandaPhenomNN", "make_model", "ABLATIONS"]


def _check_data(data, in_features: int):
  """``data`` is a HypergraphData with ``in_features`` node features (trace-time check)."""
  if not isinstance(data, hg.HypergraphData):
    raise TypeError(f"data must be a HypergraphData, got {type(data).__name__}")
  if data.x.ndim != 2 or data.x.shape[1] != in_features:
    raise ValueError(
      f"data.x has shape {tuple(data.x.shape)}, but the model was built for "
      f"in_features={in_features} ([num_nodes, {in_features}])"
    )


def _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout):
  if not isinstance(cfg, PandaConfig):
    raise TypeError(f"cfg must be a PandaConfig, got {type(cfg).__name__}")
  for nm, v in (
    ("in_features", in_features),
    ("num_classes", num_classes),
    ("hidden", hidden),
    ("num_layers", num_layers),
  ):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"{nm} must be an int >= 1, got {v!r}")
  if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
    raise ValueError(f"dropout must be a float in [0, 1), got {dropout!r}")


# ablation name -> PandaConfig overrides [code]
ABLATIONS = {
  "panda": {},
  "without_aux": dict(aux=None),
  "without_prior_aux": dict(aux=None, mix="att"),
}


class PandaGeDi(nnx.Module):
  """GeDi-HNN with PANDA layers: complex features, phases ``H_ve`` (tail = i), complex ReLU.

  Layer: ``X' = CReLU(Stage2(Stage1(X W_u)) + X W_res c_I + b)`` (+ skip from layer 2), priors
  ``c = d_v^{-1/2} delta_e^{-1/2}`` per stage, classifier on ``[Re || Im]``.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    cfg: PandaConfig = PandaConfig(),
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    i_complex: bool = True,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    dims = [in_features] + [hidden] * num_layers
    self.layers = nnx.List(
      [
        PandaLayer(a, b, cfg, complex_features=True, i_complex=i_complex, rngs=rngs)
        for a, b in zip(dims, dims[1:])
      ]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(
      2 * hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def __call__(
    self,
    data: hg.HypergraphData,
    *,
    deterministic: bool = True,
    rngs=None,
    return_aux: bool = False,
  ):
    _check_data(data, self.in_features)
    inc = data.incidence
    priors = stage_priors(inc, "sym")
    x, hyp, auxes = (data.x, None), None, []
    for l, layer in enumerate(self.layers):
      (yr, yi), hyp, aux = layer(x, hyp, inc, priors, deterministic=deterministic, rngs=rngs)
      yr, yi = hg.complex_relu(yr, yi)
      if l > 0:
        yr, yi = yr + x[0], yi + x[1]
      x = (yr, yi)
      auxes.append(aux)
    h = self.drop(jnp.concatenate(x, -1), deterministic=deterministic, rngs=rngs)
    out = self.head(h, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


class PandaHGNN(nnx.Module):
  """HGNN with PANDA layers (real, phases ignored): ``X' = ReLU(PANDA(X) + X W_res + b)``."""

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    cfg: PandaConfig = PandaConfig(),
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    dims = [in_features] + [hidden] * num_layers
    self.layers = nnx.List([PandaLayer(a, b, cfg, rngs=rngs) for a, b in zip(dims, dims[1:])])
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs)

  def __call__(
    self,
    data: hg.HypergraphData,
    *,
    deterministic: bool = True,
    rngs=None,
    return_aux: bool = False,
  ):
    _check_data(data, self.in_features)
    inc = data.incidence
    priors = stage_priors(inc, "sym")
    x, hyp, auxes = data.x, None, []
    for l, layer in enumerate(self.layers):
      h = self.drop(x, deterministic=deterministic, rngs=rngs)
      (y, _), hyp, aux = layer(
        (h, None), hyp, inc, priors, use_phase=False, deterministic=deterministic, rngs=rngs
      )
      y = jax.nn.relu(y)
      x = y + x if l > 0 else y
      auxes.append(aux)
    out = self.head(x, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


class PandaHyperGCN(nnx.Module):
  """HyperGCN with a single node -> node PANDA stage per layer over its rebuilt graph.

  Pairs are the graph's edges in both directions plus self-loops; the prior is the entry of
  ``A_bar = D~^{-1/2}(A + I)D~^{-1/2}``; attention is GAT v1 (the reference allows type 1
  only); the auxiliary transform is linear. ``X' = ReLU(Stage(X W_u) + X W_res + b)``.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    cfg: PandaConfig = PandaConfig(),
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    mediators: bool = True,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    if hidden % cfg.heads:
      raise ValueError(f"hidden={hidden} must be divisible by heads={cfg.heads}")
    cfg = dataclasses.replace(cfg, att_version="v1")
    self.heads, self.mediators = cfg.heads, mediators
    dims = [in_features] + [hidden] * num_layers
    self.w_u = nnx.List(
      [nnx.Linear(a, b, use_bias=False, rngs=rngs) for a, b in zip(dims, dims[1:])]
    )
    self.w_res = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(dims, dims[1:])])
    self.stages = nnx.List(
      [PandaStage(hidden // cfg.heads, cfg, aux_linear=True, rngs=rngs) for _ in range(num_layers)]
    )
    self.r = nnx.List(
      [nnx.Variable(jax.random.normal(rngs.params(), (hidden,))) for _ in range(num_layers)]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs)

  def __call__(
    self,
    data: hg.HypergraphData,
    *,
    deterministic: bool = True,
    rngs=None,
    return_aux: bool = False,
  ):
    _check_data(data, self.in_features)
    inc, n = data.incidence, data.num_nodes
    x, auxes = data.x, []
    for l in range(len(self.stages)):
      h = self.drop(x, deterministic=deterministic, rngs=rngs)
      s = self.w_u[l](h)
      src, dst, w = hg.hypergcn_graph(inc, s @ self.r[l][...], mediators=self.mediators)
      deg = 1.0 + jax.ops.segment_sum(w, src, n) + jax.ops.segment_sum(w, dst, n)
      isq = jax.lax.rsqrt(deg)
      loops = jnp.arange(n, dtype=jnp.int32)
      snd = jnp.concatenate([src, dst, loops])
      rcv = jnp.concatenate([dst, src, loops])
      ww = jnp.concatenate([w, w, jnp.ones((n,))])
      prior = ww * isq[snd] * isq[rcv]
      sh = s.reshape(n, self.heads, -1)
      (y, _), aux = self.stages[l](
        (sh, None),
        (sh, None),
        snd,
        rcv,
        prior,
        None,
        n,
        conj_phase=False,
        deterministic=deterministic,
        rngs=rngs,
        mask=ww > 0,
      )
      y = jax.nn.relu(y.reshape(n, -1) + self.w_res[l](h))
      x = y + x if l > 0 else y
      auxes.append(aux)
    out = self.head(x, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


class PandaPhenomNN(nnx.Module):
  """PhenomNN whose ``A_gamma`` propagation is a PANDA two-stage layer per unrolled step.

  ``Y^{k+1} = (1 - a) Y^k + a Q~^{-1}(lam0 A_beta Y^k + lam1 (P_k(Y^k) + D^^{-1} Y^k) + Y^0)``
  where ``P_k`` is PANDA with PhenomNN's prior ``c = d^_v^{-1/2} delta_e^{-1/2}`` (``d^ = d + 1``),
  and ``Q~ = lam0 D_beta + lam1 D_P + I`` with ``D_P`` the ones vector propagated through the same
  main-path coefficients (per head) [reconstruction of the reference's degree propagation].
  With ``mix='prior'``, ``aux=None`` and ``W_u = I`` this is vanilla PhenomNN.
  """

  def __init__(
    self,
    in_features: int,
    num_classes: int,
    cfg: PandaConfig = PandaConfig(),
    *,
    hidden: int = 64,
    num_layers: int = 1,
    dropout: float = 0.5,
    lam0: float = 10.0,
    lam1: float = 10.0,
    num_steps: int = 4,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    self.in_features = in_features
    del num_layers
    self.lam0, self.lam1, self.heads = float(lam0), float(lam1), cfg.heads
    self.inp = nnx.Linear(in_features, hidden, rngs=rngs)
    self.layers = nnx.List(
      [PandaLayer(hidden, hidden, cfg, use_res=False, rngs=rngs) for _ in range(num_steps)]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(hidden, num_classes, hidden=hidden, dropout=dropout, rngs=rngs)

  def __call__(
    self,
    data: hg.HypergraphData,
    *,
    deterministic: bool = True,
    rngs=None,
    return_aux: bool = False,
  ):
    _check_data(data, self.in_features)
    inc, n = data.incidence, data.num_nodes
    y0 = jax.nn.relu(self.inp(self.drop(data.x, deterministic=deterministic, rngs=rngs)))
    priors = stage_priors(inc, "phenom")
    d_b = hg.phenom_propagate(inc, jnp.ones((n,)), which="beta")
    inv_dh = 1.0 / (inc.deg_node + 1.0)
    a = 1.0 / (1.0 + self.lam0 + self.lam1)
    y, hyp, auxes = y0, None, []
    for layer in self.layers:
      (p, _), hyp, (a1, a2) = layer(
        (y, None), hyp, inc, priors, use_phase=False, deterministic=deterministic, rngs=rngs
      )
      e_deg = jax.ops.segment_sum(
        a1.alpha, inc.edge, inc.num_edges, indices_are_sorted=True
      )  # [m, H]
      perm = inc.by_node
      d_p = jax.ops.segment_sum(
        a2.alpha * e_deg[inc.edge[perm]], inc.node[perm], n, indices_are_sorted=True
      )  # [n, H]
      d_p = jnp.repeat(d_p, y.shape[1] // self.heads, axis=1) + inv_dh[:, None]
      qinv = 1.0 / (self.lam0 * d_b[:, None] + self.lam1 * d_p + 1.0)
      t = (
        self.lam0 * hg.phenom_propagate(inc, y, which="beta")
        + self.lam1 * (p + inv_dh[:, None] * y)
        + y0
      )
      y = (1 - a) * y + a * qinv * t
      auxes.append((a1, a2))
    out = self.head(y, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


_PANDA = {
  "gedi": PandaGeDi,
  "hgnn": PandaHGNN,
  "hypergcn": PandaHyperGCN,
  "phenomnn": PandaPhenomNN,
}


def make_model(
  backbone: str,
  cfg: PandaConfig | None,
  *,
  in_features: int,
  num_classes: int,
  rngs: nnx.Rngs,
  **kwargs,
) -> nnx.Module:
  """Builds a backbone, vanilla (``cfg=None``) or with PANDA (``cfg`` a :class:`PandaConfig`).

  ``backbone`` is one of ``'gedi'``, ``'hgnn'``, ``'hypergcn'``, ``'phenomnn'``; ``kwargs`` go to
  the model (hidden, num_layers, dropout, backbone-specific options).
  """
  if not isinstance(backbone, str) or backbone not in _PANDA:
    raise ValueError(f"backbone must be one of {sorted(_PANDA)}, got {backbone!r}")
  if cfg is None:
    return hg.BACKBONES[backbone](in_features, num_classes, rngs=rngs, **kwargs)
  if not isinstance(cfg, PandaConfig):
    raise TypeError(f"cfg must be a PandaConfig or None, got {type(cfg).__name__}")
  return _PANDA[backbone](in_features, num_classes, cfg, rngs=rngs, **kwargs)
