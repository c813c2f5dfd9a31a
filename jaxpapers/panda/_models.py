"""PANDA-equipped backbones: the vanilla models of :mod:`jaxpapers.hypergraph`
with PANDA propagation.

Each model keeps its backbone's input handling, activation, skip connections and
the shared :class:`jaxpapers.hypergraph.ClassifierHead`, and swaps the fixed
operator for PANDA layers whose structural prior is the backbone's own
normalisation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers.panda._stage import (
  PandaConfig,
  PandaLayer,
  PandaStage,
  stage_prior_factors,
  stage_priors,
)

__all__ = [
  "PandaGeDi",
  "PandaHGNN",
  "PandaHyperGCN",
  "PandaPhenomNN",
  "make_model",
  "ABLATIONS",
  "coalesced_graph",
]


def _check_data(data, in_features: int):
  """``data`` is a HypergraphData with ``in_features`` node features (trace-time
  check)."""
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
  if (
    isinstance(dropout, bool)
    or not isinstance(dropout, (int, float))
    or not 0.0 <= dropout < 1.0
  ):
    raise ValueError(f"dropout must be a float in [0, 1), got {dropout!r}")


# ablation name -> PandaConfig overrides. The reference's two ([code]:
# WithoutAux, WithoutPriorAux = attention only) and two more: ``without_gate``
# replaces the learned prior/attention mixture pi by the constant 1/2 (alpha =
# (c + a) / 2, auxiliary path kept); ``prior_only`` keeps only the structural
# prior (alpha = c, no auxiliary path: the reduction of §3.4, the vanilla
# operator inside the PANDA layer).
ABLATIONS = {
  "panda": {},
  "without_aux": dict(aux=None),
  "without_prior_aux": dict(aux=None, mix="att"),
  "without_gate": dict(mix="fixed:0.5"),
  "prior_only": dict(aux=None, mix="prior"),
}


def _imag(re: jax.Array, im: jax.Array | None) -> jax.Array:
  """The imaginary part of ``(re, im)``, with None an identically zero one."""
  return jnp.zeros_like(re) if im is None else im


class PandaGeDi(nnx.Module):
  """GeDi-HNN with PANDA layers: complex features, phases ``H_ve`` (tail = i),
  complex ReLU.

  Layer: ``X' = CReLU(Stage2(Stage1(X W_u)) + X W_res c_I + b)`` (+ skip from
  layer 2), priors ``c = d_v^{-1/2} delta_e^{-1/2}`` per stage, classifier on
  ``[Re || Im]``. ``hidden`` is the per-head width: layers are
  ``cfg.heads * hidden`` wide, as in the reference. ``other_complex=True`` feeds
  the input as ``X + iX`` instead of ``X + 0i`` (the reference's
  ``other_complex``, which its tuner searches).

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    cfg: the PANDA options (:class:`PandaConfig`).
    hidden: the per-head width.
    num_layers: number of PANDA layers (>= 1).
    dropout: dropout rate in ``[0, 1)`` (also the attention dropout of ``cfg``).
    i_complex: multiply the residual term by ``c_I = 1 + i``.
    other_complex: feed ``X + iX`` instead of ``X + 0i``.
    rngs: the parameter random streams.
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
    i_complex: bool = False,
    other_complex: bool = False,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    if not isinstance(other_complex, bool):
      raise TypeError(
        f"other_complex must be a bool, got {type(other_complex).__name__}"
      )
    self.other_complex = other_complex
    cfg = cfg.with_dropout(dropout)
    self.in_features = in_features
    width = cfg.heads * hidden
    dims = [in_features] + [width] * num_layers
    self.layers = nnx.List(
      [
        PandaLayer(
          a, hidden, cfg, complex_features=True, i_complex=i_complex, rngs=rngs
        )
        for a in dims[:-1]
      ]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(
      2 * width, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
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
    priors = stage_priors(inc, "sym", dtype=data.x.dtype)
    xr, xi = data.x, (data.x if self.other_complex else None)
    hyp, auxes = None, []
    for l, layer in enumerate(self.layers):
      (yr, yi), hyp, aux = layer(
        (xr, xi), hyp, inc, priors, deterministic=deterministic, rngs=rngs
      )
      yr, yi = hg.complex_relu(yr, yi)
      yi = _imag(yr, yi)
      if l > 0:
        yr, yi = yr + xr, yi + _imag(xr, xi)
      xr, xi = yr, yi
      auxes.append(aux)
    h = self.drop(
      jnp.concatenate([xr, _imag(xr, xi)], -1),
      deterministic=deterministic,
      rngs=rngs,
    )
    out = self.head(h, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


class PandaHGNN(nnx.Module):
  """HGNN with PANDA layers (real, phases ignored): ``X' = ReLU(PANDA(X) + X W_res + b)``.

  As in the reference: no dropout between layers, dropout before the classifier;
  layers are ``cfg.heads * hidden`` wide.

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    cfg: the PANDA options (:class:`PandaConfig`).
    hidden: the per-head width.
    num_layers: number of PANDA layers (>= 1).
    dropout: dropout rate in ``[0, 1)``.
    rngs: the parameter random streams.
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
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    cfg = cfg.with_dropout(dropout)
    self.in_features = in_features
    width = cfg.heads * hidden
    dims = [in_features] + [width] * num_layers
    self.layers = nnx.List(
      [PandaLayer(a, hidden, cfg, rngs=rngs) for a in dims[:-1]]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(
      width, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
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
    priors = stage_priors(inc, "sym", dtype=data.x.dtype)
    factors = stage_prior_factors(inc, "sym", dtype=data.x.dtype)
    x, hyp, auxes = data.x, None, []
    for l, layer in enumerate(self.layers):
      (y, _), hyp, aux = layer(
        (x, None),
        hyp,
        inc,
        priors,
        use_phase=False,
        deterministic=deterministic,
        rngs=rngs,
        prior_factors=factors,
      )
      y = jax.nn.relu(y)
      x = y + x if l > 0 else y
      auxes.append(aux)
    x = self.drop(x, deterministic=deterministic, rngs=rngs)
    out = self.head(x, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


def _coalesce(rcv, snd, ww, used, n: int, *, int32_keys: bool):
  """Pairs sorted by (receiver, sender), weights summed over repeated pairs
  (static size).

  Returns ``(rcv, snd, wsum, first, valid)``: ``wsum`` is the group's total at
  every position, ``first`` marks the first pair of each group and ``valid`` the
  used slots (which sort first).
  """
  if int32_keys:
    # Sort the int32 keys alone (XLA:CPU's fast single-operand sort; an argsort
    # carrying a permutation is ~5x slower) and find each pair's group by binary
    # search.
    key = jnp.where(used, rcv * n + snd, n * n)  # unused slots sort last
    ks = jax.lax.sort(key)
    first = jnp.concatenate([jnp.ones((1,), bool), ks[1:] != ks[:-1]])
    grp_sorted = jnp.cumsum(first) - 1
    # first occurrence's group
    grp = grp_sorted[jnp.searchsorted(ks, key, method="scan")]
    wsum = jax.ops.segment_sum(ww, grp, key.shape[0])[grp_sorted]
    valid = ks < n * n
    # unused slots last: recv stays sorted
    rcv = jnp.where(valid, ks // n, n - 1)
    snd = jnp.where(valid, ks % n, n - 1)
  # keys do not fit in int32: sort by (receiver, sender) with the weights as
  # payload
  else:
    rk, sk, ww = jax.lax.sort(
      (jnp.where(used, rcv, n), jnp.where(used, snd, n), ww), num_keys=2
    )
    first = jnp.concatenate(
      [jnp.ones((1,), bool), (rk[1:] != rk[:-1]) | (sk[1:] != sk[:-1])]
    )
    grp = jnp.cumsum(first) - 1
    wsum = jax.ops.segment_sum(ww, grp, rk.shape[0], indices_are_sorted=True)[
      grp
    ]
    valid = rk < n
    rcv = jnp.where(valid, rk, n - 1)
    snd = jnp.where(valid, sk, n - 1)
  return rcv, snd, wsum, first, valid


def coalesced_graph(
  inc: hg.Incidence, p: jax.Array, *, mediators: bool = True
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """HyperGCN's rebuilt graph as the reference hands it to PANDA: ``A_bar``
  entries per pair.

  The pairs of :func:`jaxpapers.hypergraph.hypergcn_graph` in both directions
  plus one self-loop per node are coalesced (weights of repeated pairs summed,
  as the reference's weight dictionary and ``+ I`` do) and normalised, ``A_bar =
  D~^{-1/2}(A + I)D~^{-1/2}``. Static size: duplicates and unused slots stay in
  the list with ``mask = False``.

  Singleton hyperedges (and hyperedges whose members tie in ``p``) add their
  self pair twice, as the reference does (see
  :func:`jaxpapers.hypergraph.hypergcn_graph`): the diagonal of ``A + I`` is
  then -1 with mediators and 3 without for a singleton. A node whose row sum is
  not positive gets the normaliser 0 (the reference: 0 for a zero sum, NaN for a
  negative one).

  Args:
    inc: the (undirected) incidence.
    p: float[n] projections of the node features on HyperGCN's random vector;
      the weights take its dtype.
    mediators: HyperGCN's mediator edges (weight ``1/(2|e|-3)``), else ``1/|e|``
      per pair.

  Returns:
    ``(send, recv, prior, mask)``, each of length ``2 * L + n`` (L = length of
    the ``hypergcn_graph`` list), sorted by ``(recv, send)``.
  """
  n = inc.num_nodes
  src, dst, w = hg.hypergcn_graph(inc, p, mediators=mediators)
  loops = jnp.arange(n, dtype=jnp.int32)
  snd = jnp.concatenate([src, dst, loops])
  rcv = jnp.concatenate([dst, src, loops])
  ww = jnp.concatenate([w, w, jnp.ones((n,), w.dtype)])
  used = jnp.concatenate([w != 0, w != 0, jnp.ones((n,), bool)])
  rcv, snd, wsum, first, valid = _coalesce(
    rcv, snd, ww, used, n, int32_keys=n * n < 2**31 - 1
  )
  mask = first & valid  # (a pair whose normalised weight is 0 is dropped below)
  wsum = jnp.where(mask, wsum, 0.0)
  deg = jax.ops.segment_sum(wsum, rcv, n)
  isq = jnp.where(deg > 0, jax.lax.rsqrt(jnp.where(deg > 0, deg, 1.0)), 0.0)
  prior = wsum * isq[snd] * isq[rcv]
  # the reference's sparse matrix keeps no zero entries: such pairs get no
  # attention either
  mask = mask & (prior != 0)
  return snd, rcv, jnp.where(mask, prior, 0.0), mask


class PandaHyperGCN(nnx.Module):
  """HyperGCN with one node -> node PANDA stage per layer over its rebuilt
  graph.

  As in the reference: ``S = X W`` (``W: F -> heads * hidden``), the graph
  rebuilt from ``S`` and coalesced (:func:`coalesced_graph`), prior = the entry
  of ``A_bar``, GATv2 attention by default, linear auxiliary transform,
  ``X' = ReLU(Stage(S) + b)``, dropout between layers, no residual weight.
  ``fast=True`` (FastHyperGCN, the only value the reference's tuner uses) builds
  the graph once from the input features, ``p = X r``, and every layer uses it.
  The random vector ``r ~ U[0, 1)`` is drawn at init (the reference draws the
  same distribution; with ``fast`` it keeps it too). ``flow='code'`` (default)
  normalises the attention over the pairs that share a sender and reads the
  mixture from the receiver, as the reference's target-to-source message passing
  does; ``flow='receiver'`` normalises over each receiver's senders. With
  ``cfg.init='reference'``, ``W`` and ``b`` start as the reference's
  ``U(+-1/sqrt(heads * hidden))``. ``mediators`` defaults to False, as for
  :class:`jaxpapers.hypergraph.HyperGCN` (see there).

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    cfg: the PANDA options (:class:`PandaConfig`).
    hidden: the per-head width.
    num_layers: number of layers (>= 1).
    dropout: dropout rate in ``[0, 1)``.
    mediators: build the graph with mediators (see :func:`coalesced_graph`).
    fast: FastHyperGCN, one graph from the input features for every layer.
    flow: ``'code'`` (normalise over a sender's pairs) or ``'receiver'``.
    rngs: the parameter random streams (also draw the fixed projections ``r``).
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
    mediators: bool = False,
    fast: bool = False,
    flow: str = "code",
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    if flow not in ("code", "receiver"):
      raise ValueError(f"flow must be 'code' or 'receiver', got {flow!r}")
    for nm, v in (("mediators", mediators), ("fast", fast)):
      if not isinstance(v, bool):
        raise TypeError(f"{nm} must be a bool, got {type(v).__name__}")
    cfg = cfg.with_dropout(dropout)
    self.in_features = in_features
    self.heads, self.mediators, self.flow, self.fast = (
      cfg.heads,
      mediators,
      flow,
      fast,
    )
    width = cfg.heads * hidden
    dims = [in_features] + [width] * num_layers
    if cfg.init == "reference":
      u = hg.uniform_init(width**-0.5)
      self.w_u = nnx.List(
        [
          nnx.Linear(a, width, use_bias=False, kernel_init=u, rngs=rngs)
          for a in dims[:-1]
        ]
      )
      self.bias = nnx.List(
        [nnx.Param(u(rngs.params(), (width,))) for _ in range(num_layers)]
      )
    else:
      self.w_u = nnx.List(
        [nnx.Linear(a, width, use_bias=False, rngs=rngs) for a in dims[:-1]]
      )
      self.bias = nnx.List(
        [nnx.Param(jnp.zeros((width,))) for _ in range(num_layers)]
      )
    self.stages = nnx.List(
      [PandaStage(hidden, cfg, rngs=rngs) for _ in range(num_layers)]
    )
    self.r = nnx.List(
      [
        nnx.Variable(jax.random.uniform(rngs.params(), (d,)))
        for d in ([in_features] if fast else [width] * num_layers)
      ]
    )
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(
      width, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
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
    inc, n = data.incidence, data.num_nodes
    x, auxes = data.x, []
    graph = lambda p: coalesced_graph(inc, p, mediators=self.mediators)
    fixed = (
      graph(data.x @ self.r[0][...].astype(data.x.dtype)) if self.fast else None
    )
    for l in range(len(self.stages)):
      if l > 0:
        x = self.drop(x, deterministic=deterministic, rngs=rngs)
      s = self.w_u[l](x)
      snd, rcv, prior, mask = (
        fixed
        if fixed is not None
        else graph(s @ self.r[l][...].astype(s.dtype))
      )
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
        mask=mask,
        recv_sorted=True,
        sender_softmax=self.flow == "code",
      )
      x = jax.nn.relu(y.reshape(n, -1) + self.bias[l][...])
      auxes.append(aux)
    out = self.head(x, deterministic=deterministic, rngs=rngs)
    return (out, auxes) if return_aux else out


class PandaPhenomNN(nnx.Module):
  """PhenomNN whose ``A_beta`` and ``A_gamma`` products are PANDA stage pairs,
  as in the reference.

  ``Y^0 = Drop(ReLU(W_in Drop(X)))`` (width ``heads * hidden``); per unrolled
  step ``A_beta Y`` and ``A_gamma Y`` go through one shared pair of stages (node
  -> hyperedge -> node; no ``W_u``; stage-2 receivers = ``Y``; stage-1 attention
  reads the prior aggregation (``cfg.stage1_receivers='prior'``, the reference's
  ``phenom-att``) or, from the second step on, the previous step's hyperedge
  states of the same operator (``'previous'``, its ``hgat``); the gate reads the
  prior aggregation), with priors ``stage_priors(inc, 'phenom_beta' |
  'phenom_gamma')``. The degrees ``D_beta, D_gamma`` are the ones vector
  propagated with the same coefficients (auxiliary path included), averaged over
  heads. Each step is :func:`jaxpapers.hypergraph.phenom_step`:

  ``Y^{k+1} = (1 - a) Y^k + a Y_hat / (lam0 D_beta + lam1 D_gamma + 1)``, with
  ``Y_hat = lam0 P_beta(Y^k) + lam1 P_gamma(Y^k) + Y^0`` (``h_setting=0``; 1-3
  add the learned ``H`` matrices of the reference's tuner, ``[W, W]`` with
  ``W = heads * hidden``, initialised ``N(0, 1/W^2) + I``) and ``a = alp`` or
  ``1/(1 + lam0 + lam1)`` for ``alp = 0``; then ReLU and the classifier. With
  ``mix='prior'`` and ``aux=None``, ``P`` is the dense operator ``D^{-1/2} B W_E
  B^T D^{-1/2}`` of each prior (see the tests).

  Args:
    in_features: F, the node feature width (``data.x: [n, F]``).
    num_classes: K, the number of logits per node.
    cfg: the PANDA options (:class:`PandaConfig`).
    hidden: the per-head width (``W = cfg.heads * hidden``).
    num_layers: accepted for a signature shared with the other backbones;
      unused.
    dropout: dropout rate in ``[0, 1)``.
    lam0: finite float >= 0, the weight of the beta term.
    lam1: finite float >= 0, the weight of the gamma term.
    num_steps: number of unrolled steps (>= 1).
    gamma_edge: the hyperedge weight of the gamma prior, ``'code'`` or
      ``'inverse'`` (see :func:`stage_priors`).
    alp: the step size (0: ``1/(1 + lam0 + lam1)``).
    h_setting: one of :data:`jaxpapers.hypergraph.PHENOM_H_SETTINGS` (0..3).
    rngs: the parameter random streams.
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
    gamma_edge: str = "code",
    alp: float = 0.0,
    h_setting: int = 0,
    rngs: nnx.Rngs,
  ):
    _check_args(cfg, in_features, num_classes, hidden, num_layers, dropout)
    if (
      isinstance(num_steps, bool)
      or not isinstance(num_steps, int)
      or num_steps < 1
    ):
      raise ValueError(f"num_steps must be an int >= 1, got {num_steps!r}")
    if gamma_edge not in ("code", "inverse"):
      raise ValueError(
        f"gamma_edge must be 'code' or 'inverse', got {gamma_edge!r}"
      )
    cfg = cfg.with_dropout(dropout)
    self.in_features = in_features
    del num_layers
    self.alp = hg.check_phenom_args(lam0, lam1, alp, h_setting)
    self.lam0, self.lam1, self.heads = float(lam0), float(lam1), cfg.heads
    self.num_steps, self.gamma_edge, self.h_setting = (
      num_steps,
      gamma_edge,
      int(h_setting),
    )
    self.att_prior = cfg.stage1_receivers == "prior"
    width = cfg.heads * hidden
    if cfg.init == "reference":
      self.inp = hg.torch_linear(in_features, width, rngs=rngs)
    else:
      self.inp = nnx.Linear(in_features, width, rngs=rngs)
    self.h = nnx.Dict(
      {
        k: nnx.Param(v)
        for k, v in (
          hg.phenom_h_init(rngs.params(), width, h_setting)
          if hg.PHENOM_H_SETTINGS[h_setting]
          else {}
        ).items()
      }
    )
    self.stage1 = PandaStage(hidden, cfg, rngs=rngs)
    self.stage2 = PandaStage(hidden, cfg, rngs=rngs)
    self.drop = nnx.Dropout(dropout)
    self.head = hg.ClassifierHead(
      width, num_classes, hidden=hidden, dropout=dropout, rngs=rngs
    )

  def _apply(self, y, hyp, inc, c, factors, memo, **kw):
    """One stage pair: ``(P(y) [n, H, C], hyperedge states, degrees [n], (aux1,
    aux2))``.

    ``factors``: ``(f_node, f_edge)`` with ``c = f_node[node] f_edge[edge]``;
    ``memo``: the step's table memo, shared by the two operators (both stage
    pairs read ``y``).
    """
    n, m, perm = inc.num_nodes, inc.num_edges, inc.by_node
    fn, fe = factors
    hyp, a1 = self.stage1(
      (y, None),
      hyp,
      inc.node,
      inc.edge,
      c,
      None,
      m,
      conj_phase=True,
      recv_sorted=True,
      gate_recv="prior",
      att_prior=self.att_prior,
      prior_factors=(fn, fe),
      tables_memo=memo,
      **kw,
    )
    (out, _), a2 = self.stage2(
      hyp,
      (y, None),
      inc.edge[perm],
      inc.node[perm],
      c[perm],
      None,
      n,
      conj_phase=False,
      recv_sorted=True,
      gate_recv="prior",
      prior_factors=(fe, fn),
      tables_memo=memo,
      **kw,
    )
    # [m, H]
    d1 = jax.ops.segment_sum(a1.coef, inc.edge, m, indices_are_sorted=True)
    d2 = jax.ops.segment_sum(
      a2.coef * d1[inc.edge[perm]], inc.node[perm], n, indices_are_sorted=True
    )
    return out, hyp, d2.mean(-1), (a1, a2)

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
    kw = dict(deterministic=deterministic, rngs=rngs)
    x = self.drop(data.x, **kw)
    y0 = self.drop(jax.nn.relu(self.inp(x)), **kw).reshape(n, self.heads, -1)
    dt = y0.dtype
    cb, _ = stage_priors(inc, "phenom_beta", dtype=dt)
    cg, _ = stage_priors(
      inc, "phenom_gamma", gamma_edge=self.gamma_edge, dtype=dt
    )
    fb = stage_prior_factors(inc, "phenom_beta", dtype=dt)
    fg = stage_prior_factors(
      inc, "phenom_gamma", gamma_edge=self.gamma_edge, dtype=dt
    )
    h = {k: v[...] for k, v in self.h.items()}
    y, hb, hgm, auxes = y0, None, None, []
    flat = lambda a: a.reshape(n, -1)
    for _ in range(self.num_steps):
      memo: dict = {}  # y's tables, projected once for both operators
      pb, hb, db, ab = self._apply(y, hb, inc, cb, fb, memo, **kw)
      pg, hgm, dg, ag = self._apply(y, hgm, inc, cg, fg, memo, **kw)
      y = hg.phenom_step(
        flat(y),
        flat(y0),
        flat(pb),
        flat(pg),
        db,
        dg,
        lam0=self.lam0,
        lam1=self.lam1,
        step=self.alp if self.alp else 1.0 / (1.0 + self.lam0 + self.lam1),
        h_setting=self.h_setting,
        h=h,
      ).reshape(y0.shape)
      auxes.append(ab + ag)
    y = jax.nn.relu(y.reshape(n, -1))
    y = self.drop(y, deterministic=deterministic, rngs=rngs)
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
  """Builds a backbone, vanilla (``cfg=None``) or with PANDA (``cfg`` a
  :class:`PandaConfig`).

  ``backbone`` is one of ``'gedi'``, ``'hgnn'``, ``'hypergcn'``, ``'phenomnn'``;
  ``kwargs`` go to the model (hidden, num_layers, dropout, backbone-specific
  options).

  ``hidden`` means two different things, as in the reference code: for a vanilla
  backbone it is the layer width; with PANDA it is the width of *one head*, so a
  PANDA layer is ``cfg.heads * hidden`` wide (``hidden`` need not be divisible
  by ``heads``). To compare at equal width, give the vanilla backbone ``hidden =
  cfg.heads * hidden``; to compare at equal parameter count, widen it further
  (the experiment's ``vanilla_matched`` arm).

  Args:
    backbone: ``'gedi'``, ``'hgnn'``, ``'hypergcn'`` or ``'phenomnn'``.
    cfg: the PANDA options, or None for the vanilla backbone.
    in_features: F, the node feature width.
    num_classes: K, the number of logits per node.
    rngs: the parameter random streams.
    **kwargs: the model's other constructor arguments.

  Returns:
    The model: ``model(data) -> [n, K]`` logits.
  """
  if not isinstance(backbone, str) or backbone not in _PANDA:
    raise ValueError(
      f"backbone must be one of {sorted(_PANDA)}, got {backbone!r}"
    )
  if cfg is None:
    return hg.BACKBONES[backbone](in_features, num_classes, rngs=rngs, **kwargs)
  if not isinstance(cfg, PandaConfig):
    raise TypeError(
      f"cfg must be a PandaConfig or None, got {type(cfg).__name__}"
    )
  return _PANDA[backbone](in_features, num_classes, cfg, rngs=rngs, **kwargs)
