"""The PANDA stage and two-stage layer (Prior-guided AttentioNal Dual-path
Architecture).

One stage sends from senders S to receivers R over incidence pairs (s, r):

  receiver init  z_r = sum_{s in N(r)} c_sr conj(phi_sr) x_s           (featureless receivers)
  attention      a_sr,h = softmax_{s in N(r)} a_h^T LeakyReLU_0.2(W_a [x_s] + W_a [z_r])   (GATv2)
  mixture        [pi^prior, pi^att]_sr,h = softmax(W_2 LeakyReLU_0.2(W_1 x_s))  (sender-only)
                 alpha_sr,h = pi^att a_sr,h + pi^prior c_sr               (not normalised)
  aux gate       g_sr,h = sigmoid(w_o^T ReLU(U_s x_s + U_r z_r + b) + b_o)  (non-competitive)
  aux transform  x~_s = W_aux ReLU(x_s) + b_aux (GeDi), W_aux x_s + b_aux (real backbones)
  message        y_r = sum_s phi~_sr [alpha_sr x_s + (1 - alpha_sr) g_sr x~_s]

with ``phi~ = conj(phi)`` in stage 1 (V -> E) and ``phi`` in stage 2 (E -> V).
Complex features are ``(re, im)`` pairs of real arrays of shape ``[N, H, C]``;
attention, gates and the mixture read ``[Re || Im]``; real transforms act on Re
and Im separately (the ``b_aux`` bias is added to both parts, as in the
reference). All weights are shared across heads except the attention vectors
``a_h``; each head carries C channels, so a layer is ``H * C`` wide. References:
PANDA (NeurIPS 2026, official code jainris/panda; no arXiv id yet); GeDi-HNN
(Fiorini et al., TMLR 2024); GATv2 (Brody et al., arXiv:2105.14491).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from functools import partial
from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers import hypergraph as hg

__all__ = [
  "PandaConfig",
  "StageAux",
  "PandaStage",
  "PandaLayer",
  "stage_priors",
  "stage_prior_factors",
  "glorot_linear",
]

_MIX = ("learned", "prior", "att", "mul")


@dataclasses.dataclass(frozen=True)
class PandaConfig:
  """PANDA options; the defaults are those of the official code
  (``training_args.py``).

  Attributes:
    heads: attention heads H. Every head has ``channels`` features, so a layer
      is ``heads * channels`` wide; all weights except the attention vector
      ``a_h`` are shared across heads (as in the reference).
    mix: ``'learned'`` (per-incidence, per-head gate), ``'prior'`` (alpha = c,
      the reduction), ``'att'`` (alpha = a, used by WithoutPriorAux),
      ``'fixed:<w_prior>'`` or ``'mul'`` (alpha = a * c, auxiliary message
      ``(c - alpha) g x``).
    att_version: ``'v2'`` (GATv2) or ``'v1'`` (GAT).
    shared_att_weights: share ``W_a`` (v2) or the attention vector (v1) between
      sender and receiver.
    mix_hidden: width of ``W_1`` in the mixture MLP (no biases, LeakyReLU slope
      0.2).
    aux: ``None`` (no auxiliary path), ``'diff-mlp'`` or ``'same-mlp'`` (``x~ = -x``).
    aux_dim: hidden width of the auxiliary gate.
    symmetric_aux: gate ``tanh`` and message ``alpha (ReLU(g) x + ReLU(-g)
      x~)``.
    att_dropout: dropout on the attention coefficients; ``None`` (the
      reference's default) means the model's feature dropout.
    shared_alphas: reuse layer 1's coefficients in later layers (not
      implemented: must be False).
    recv_init: ``'prior'``: featureless receivers are the prior aggregation of
      their senders.
    stage1_receivers: what stage 1's attention reads as the hyperedge (receiver)
      features from layer 2 on (PhenomNN: from the second unrolled step on):
      ``'prior'`` (default, the reference tuner's ``gedi-att`` /
      ``phenom-att``): the prior aggregation of the current senders, as in layer
      1; ``'previous'`` (the reference's ``hgat``): the previous layer's
      (step's) hyperedge states. The auxiliary gate reads the previous states in
      both cases (GeDi, HGNN; PhenomNN's gate always reads the prior
      aggregation), as the reference does.
    init: ``'reference'`` (default): the reference's initialisation:
      glorot-uniform for the attention and mixture weights and for
      ``W_u``/``W_res``, PyTorch's ``nn.Linear`` default ``U(+-1/sqrt(fan_in))``
      for the gate and auxiliary transform (weights and biases; the gate bias
      ``b`` is the sum of the reference's two biases, so it starts as the sum of
      two such draws); ``'glorot'``: glorot-uniform stage weights, zero stage
      biases and Flax's default ``nnx.Linear`` (the earlier behaviour).
    complex_layout: how complex features enter attention, mixture and gate:
      ``'code'`` (the reference: ``[Re || Im]`` of the whole layer cut into H
      pieces, so with H >= 2 a head sees the real or the imaginary parts of
      several heads) or ``'per_head'`` (head h sees ``[Re_h || Im_h]``).
  """

  heads: int = 1
  mix: str = "learned"
  att_version: str = "v2"
  shared_att_weights: bool = True
  mix_hidden: int = 8
  aux: str | None = "diff-mlp"
  aux_dim: int = 16
  symmetric_aux: bool = False
  att_dropout: float | None = None
  shared_alphas: bool = False
  recv_init: str = "prior"
  complex_layout: str = "code"
  stage1_receivers: str = "prior"
  init: str = "reference"

  def __post_init__(self):
    for nm in ("heads", "mix_hidden", "aux_dim"):
      v = getattr(self, nm)
      if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{nm} must be a positive int, got {v!r}")
    if not isinstance(self.mix, str) or not (
      self.mix in _MIX or self.mix.startswith("fixed:")
    ):
      raise ValueError(
        f"mix must be one of {_MIX} or 'fixed:<w_prior>', got {self.mix!r}"
      )
    if self.att_dropout is not None and (
      isinstance(self.att_dropout, bool)
      or not isinstance(self.att_dropout, (int, float))
      or not 0.0 <= self.att_dropout < 1.0
    ):
      raise ValueError(
        "att_dropout must be None or a float in [0, 1), "
        f"got {self.att_dropout!r}"
      )
    if self.mix.startswith("fixed:"):
      try:
        w = float(self.mix.split(":", 1)[1])
      except ValueError:
        raise ValueError(
          "mix='fixed:<w_prior>' needs a number in [0, 1] after 'fixed:', "
          f"got {self.mix!r}"
        ) from None
      if not 0.0 <= w <= 1.0:
        raise ValueError(f"fixed prior weight must lie in [0, 1], got {w}")
    if self.att_version not in ("v1", "v2"):
      raise ValueError(
        f"att_version must be 'v1' or 'v2', got {self.att_version!r}"
      )
    if self.aux not in (None, "diff-mlp", "same-mlp"):
      raise ValueError(
        f"aux must be None, 'diff-mlp' or 'same-mlp', got {self.aux!r}"
      )
    if self.shared_alphas:
      raise ValueError("shared_alphas=True is not supported")
    if self.recv_init != "prior":
      raise ValueError(f"recv_init must be 'prior', got {self.recv_init!r}")
    if self.complex_layout not in ("code", "per_head"):
      raise ValueError(
        "complex_layout must be 'code' or 'per_head', "
        f"got {self.complex_layout!r}"
      )
    if self.stage1_receivers not in ("prior", "previous"):
      raise ValueError(
        "stage1_receivers must be 'prior' or 'previous', "
        f"got {self.stage1_receivers!r}"
      )
    if self.init not in ("reference", "glorot"):
      raise ValueError(
        f"init must be 'reference' or 'glorot', got {self.init!r}"
      )

  def with_dropout(self, dropout: float) -> PandaConfig:
    """This config with ``att_dropout=None`` resolved to the model's feature
    ``dropout``.

    Args:
      dropout: the model's feature dropout rate in ``[0, 1)``.

    Returns:
      ``self`` when ``att_dropout`` is set, else a copy with
      ``att_dropout=dropout``.
    """
    if self.att_dropout is not None:
      return self
    return dataclasses.replace(self, att_dropout=float(dropout))


class StageAux(NamedTuple):
  """Per-incidence coefficients of one stage, ``[P, H]`` (``pi``: ``[P, H, 2]``
  or None).

  ``coef`` is the total weight a sender's signal gets when the auxiliary
  transform maps it to itself (``'diff-mlp'``) or to its negative
  (``'same-mlp'``): ``alpha + (1 - alpha) g`` (resp. ``alpha - (1 - alpha) g``),
  ``alpha`` without auxiliary path. PhenomNN propagates its degree vector with
  it, as the reference does.
  """

  alpha: jax.Array
  pi: jax.Array | None
  gate: jax.Array | None
  att: jax.Array
  coef: jax.Array


def _glorot(key, shape):
  fan_in, fan_out = shape[-2], shape[-1]
  lim = jnp.sqrt(6.0 / (fan_in + fan_out))
  return jax.random.uniform(key, shape, jnp.float32, -lim, lim)


def _torch_uniform(key, shape, fan_in):
  """PyTorch's ``nn.Linear`` default for weights and biases:
  ``U(+-1/sqrt(fan_in))``."""
  lim = fan_in**-0.5
  return jax.random.uniform(key, shape, jnp.float32, -lim, lim)


def glorot_linear(
  in_features: int, out_features: int, *, rngs: nnx.Rngs
) -> nnx.Linear:
  """A bias-free ``nnx.Linear`` with glorot-uniform kernel (the reference's
  ``W_u``, ``W_res``)."""
  return nnx.Linear(
    in_features,
    out_features,
    use_bias=False,
    kernel_init=lambda k, shp, dt=jnp.float32: _glorot(k, shp).astype(dt),
    rngs=rngs,
  )


@jax.custom_vjp
def _scale(s, x):
  """``s[..., None] * x`` for per-pair, per-head coefficients ``s`` ``[P, H]``
  and ``x`` ``[P, H, C]``.

  The same product as the broadcast, with a backward pass that forms
  ``ds = sum_c g x`` as a contraction (``einsum``) instead of the broadcast's
  last-axis ``reduce_sum``: on XLA:CPU that reduction runs about 10x slower than
  the equivalent contraction and dominated the PANDA step.
  """
  return s[..., None] * x


def _scale_fwd(s, x):
  return s[..., None] * x, (s, x)


def _scale_bwd(res, g):
  s, x = res
  return jnp.einsum("phc,phc->ph", g, x).astype(s.dtype), (
    s[..., None] * g
  ).astype(x.dtype)


_scale.defvjp(_scale_fwd, _scale_bwd)


@jax.custom_vjp
def _scale_k(s, x):
  """``s[..., None] * x[:, :, None]``: ``K`` per-pair coefficients ``s``
  ``[P, H, K]`` times ``x`` ``[P, H, C]``, ``[P, H, K, C]``; the backward
  contracts (see :func:`_scale`)."""
  return s[..., None] * x[:, :, None]


def _scale_k_fwd(s, x):
  return _scale_k(s, x), (s, x)


def _scale_k_bwd(res, g):
  s, x = res
  ds = jnp.einsum("phkc,phc->phk", g, x).astype(s.dtype)
  return ds, jnp.einsum("phkc,phk->phc", g, s).astype(x.dtype)


_scale_k.defvjp(_scale_k_fwd, _scale_k_bwd)


def _mm(x, w):
  """``x @ w`` over the last axis, ``[..., A] @ [A, K] -> [..., K]``, as one 2-D
  product.

  With a 3-D ``x`` (``[N, H, A]``) XLA:CPU forms the weight gradient by
  transposing the whole incoming gradient first (about half of a HyperGCN
  stage's backward on Pubmed at one head); the 2-D product's gradient is a plain
  transposed-operand matrix product.
  """
  return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[-1])


def _head_dot(x, w):
  """``out[p, h] = sum_a x[p, h, a] w[h, a]`` (``w`` ``[H, A]``) or ``w[a]`` (``w`` ``[A]``).

  One matrix product against a block-diagonal ``[H * A, H]`` matrix (or
  ``[P * H, A] @ [A, 1]``): rows of ``x`` stay contiguous, where the equivalent
  einsum makes XLA:CPU transpose the whole ``[P, H, A]`` operand first.
  """
  p, h, a = x.shape
  if w.ndim == 1:
    return (x.reshape(p * h, a) @ w[:, None]).reshape(p, h)
  block = (jnp.eye(h, dtype=w.dtype)[:, None, :] * w[:, :, None]).reshape(
    h * a, h
  )
  return x.reshape(p, h * a) @ block


def _feat(re, im, layout="per_head"):
  """``[Re || Im]`` per head ``[N, H, 2C]`` (``'per_head'``) or the reference's
  cut (``'code'``)."""
  if im is None:
    return re
  if layout == "per_head":
    return jnp.concatenate([re, im], -1)
  n, h, c = re.shape
  return jnp.concatenate(
    [re.reshape(n, h * c), im.reshape(n, h * c)], -1
  ).reshape(n, h, 2 * c)


def _proj(re, im, w, layout, complex_features):
  """``_feat(re, im, layout) @ w``: ``[N, H, C]`` parts times ``w`` ``[A, K]`` -> ``[N, H, K]``.

  For complex features an ``im`` of None is an identically zero imaginary part.
  Where the layout puts it in a block of its own (``'per_head'``, or one head)
  that block is skipped, ``re @ w[:C]``, which is exactly ``[re || 0] @ w``;
  otherwise the zeros are materialised.
  """
  if im is None and complex_features:
    c = re.shape[-1]
    if layout == "per_head" or re.shape[1] == 1:
      return _mm(re, w[:c])
    im = jnp.zeros_like(re)
  return _mm(_feat(re, im, layout), w)


@jax.custom_vjp
def _outer(s, v):
  """``s[..., None] * v`` for per-pair, per-head ``s`` ``[P, H]`` and one row
  ``v`` ``[C]``.

  The auxiliary message of a zero imaginary part, whose transform is the bias
  alone. As in :func:`_scale`, the backward forms ``ds`` as a contraction
  instead of a last-axis reduction.
  """
  return s[..., None] * v


def _outer_fwd(s, v):
  return s[..., None] * v, (s, v)


def _outer_bwd(res, g):
  s, v = res
  return jnp.einsum("phc,c->ph", g, v).astype(s.dtype), jnp.einsum(
    "phc,ph->c", g, s
  ).astype(v.dtype)


_outer.defvjp(_outer_fwd, _outer_bwd)


# (re, im) features, im None for a zero part
_Feats = tuple[jax.Array, jax.Array | None]


def _tables(
  requests: dict[str, tuple[_Feats, str]],
  weight: Callable[[str], jax.Array],
  proj: Callable[[_Feats, jax.Array], jax.Array],
  memo: dict | None = None,
) -> dict[str, jax.Array]:
  """Projected tables ``{name: proj(feats, weight(w_name))}``, one product per
  distinct table.

  Requests whose features are the same arrays share one matrix product against
  their weights side by side (``[A, K1 + K2 + ...]``), and a weight requested
  twice for one table is applied once: a stage whose senders are its receivers
  (HyperGCN) projects its node table once for the attention, the gate and the
  mixture, and the backward pass forms one weight gradient and one table
  gradient per table instead of one per weight.

  Args:
    requests: ``{name: ((re, im), w_name)}``; ``re`` ``[N, H, C]``.
    weight: ``w_name -> [A, K]`` weight matrix.
    proj: ``((re, im), w) -> [N, H, K]``, linear in ``w``'s columns.
    memo: None, or a dict kept by the caller across calls whose ``weight`` is
      the same (one stage's weights): a table already projected by an earlier
      call on the same feature arrays with the same weights is reused, so its
      product, and in the backward pass its weight and table gradients, are
      formed once (PhenomNN's two operators read one node table per step).

  Returns:
    ``{name: [N, H, K]}`` for every request.
  """
  same = lambda a, b: a[0] is b[0] and a[1] is b[1]
  groups: list[tuple[_Feats, list[str]]] = []
  for feats, wn in requests.values():
    names = next((g[1] for g in groups if same(g[0], feats)), None)
    if names is None:
      groups.append((feats, [wn]))
    elif wn not in names:
      names.append(wn)
  out: dict[str, jax.Array] = {}
  for feats, names in groups:
    ws = [weight(k) for k in names]
    key = (id(feats[0]), id(feats[1]), tuple(names))
    hit = None if memo is None else memo.get(key)
    if hit is not None and same(hit[0], feats):
      t = hit[1]
    else:
      t = proj(feats, ws[0] if len(ws) == 1 else jnp.concatenate(ws, -1))
      # the features are kept with the table: their ids stay theirs
      if memo is not None:
        memo[key] = (feats, t)
    cols, lo = {}, 0
    for k, w in zip(names, ws):
      cols[k] = t if len(ws) == 1 else t[..., lo : lo + w.shape[-1]]
      lo += w.shape[-1]
    out.update(
      {nm: cols[wn] for nm, (f, wn) in requests.items() if same(f, feats)}
    )
  return out


# stands for a stage's prior aggregation among its table requests (see
# PandaStage.__call__)
_AGG: tuple = ("prior aggregation", None)


# the cost of one per-pair entry (gathered, summed per segment, and both again
# in the backward) in units of one flop of a dense product, which XLA:CPU runs
# at a far higher rate: measured on email-EU's HGNN and PhenomNN steps, a wider
# per-pair aggregation cost more time than the products it saved
_PAIR_ENTRY_COST = 16


# the decision lists of the active prior_table_layout blocks (appended to at
# trace time)
_LAYOUT_RECORDS: list[list[bool]] = []


@contextlib.contextmanager
def prior_table_layout(
  pair_entry_cost: int | None = None,
) -> Iterator[list[bool]]:
  """Traces steps with a given per-pair entry cost and records each stage's
  table layout.

  A stage's prior aggregation forms its tables either by projecting the
  aggregation or by aggregating the senders' projected tables, whichever costs
  less from static shapes, with a per-pair entry (gathered, segment-summed, and
  both again in the backward pass) counted as ``pair_entry_cost`` dense-product
  flops (default 16). Both orders compute the same values; this block lets a
  benchmark A/B the choice. Only tracing inside the block is affected: a program
  compiled earlier keeps its layout.

  Args:
    pair_entry_cost: int >= 1, or None to keep the default.

  Yields:
    A list that receives one bool per stage call traced inside the block: True
    where the tables were formed by aggregating the senders' tables.

  Example:
    >>> with prior_table_layout(1) as orders:
    ...   pass  # trace or lower a PANDA step here
  """
  global _PAIR_ENTRY_COST
  if pair_entry_cost is not None and (
    isinstance(pair_entry_cost, bool)
    or not isinstance(pair_entry_cost, int)
    or pair_entry_cost < 1
  ):
    raise ValueError(
      f"pair_entry_cost must be an int >= 1 or None, got {pair_entry_cost!r}"
    )
  old, orders = _PAIR_ENTRY_COST, []
  _PAIR_ENTRY_COST = old if pair_entry_cost is None else pair_entry_cost
  _LAYOUT_RECORDS.append(orders)
  try:
    yield orders
  finally:
    _LAYOUT_RECORDS.remove(orders)
    _PAIR_ENTRY_COST = old


def _prior_tables_by_rows(
  pairs: int, send: int, recv: int, c: int, k: int, k_new: int
) -> bool:
  """Whether the prior aggregation's tables are cheaper as aggregated sender
  tables.

  Per head: projecting the aggregation takes ``P C`` per-pair sums and
  ``2 R C K`` flops of products; aggregating the senders' projections takes
  ``P K`` per-pair sums and ``2 S C K_new`` (the columns the senders' own tables
  lack). A per-pair entry counts ``_PAIR_ENTRY_COST`` product flops. Static
  shapes only.
  """
  w = _PAIR_ENTRY_COST
  by_rows = (
    w * pairs * k + 2 * send * c * k_new < w * pairs * c + 2 * recv * c * k
  )
  for orders in _LAYOUT_RECORDS:
    orders.append(by_rows)
  return by_rows


def _add(a, b):
  """``a + b`` where None is an identically zero term."""
  return b if a is None else a if b is None else a + b


class PandaStage(nnx.Module):
  """One PANDA message-passing stage (see the module docstring for the
  equations).

  Weights are shared across heads (``W_a``, ``W_1``, ``W_2``, ``U_s``, ``U_r``,
  ``w_o``, ``W_aux``); only the attention vector ``a_h`` is per head, as in the
  reference.

  Args:
    channels: per-head channels C of the sender/receiver features.
    cfg: the :class:`PandaConfig`.
    complex_features: whether features are complex ``(re, im)`` (GeDi) or real.
    aux_relu: ``'diff-mlp'`` transform ``W_aux ReLU(x) + b`` (True) or
      ``W_aux x + b`` (False); None: True for complex features (the reference's
      GeDi), False otherwise (its HGNN, HyperGCN and PhenomNN).
  """

  def __init__(
    self,
    channels: int,
    cfg: PandaConfig,
    *,
    complex_features: bool = False,
    aux_relu: bool | None = None,
    rngs: nnx.Rngs,
  ):
    if not isinstance(cfg, PandaConfig):
      raise TypeError(f"cfg must be a PandaConfig, got {type(cfg).__name__}")
    if (
      isinstance(channels, bool)
      or not isinstance(channels, int)
      or channels <= 0
    ):
      raise ValueError(f"channels must be a positive int, got {channels!r}")
    self.channels = channels
    h, c = cfg.heads, channels
    a_in = 2 * c if complex_features else c
    self.cfg, self.complex = cfg, complex_features
    self.aux_relu = complex_features if aux_relu is None else bool(aux_relu)
    k = lambda: rngs.params()
    two_w = cfg.att_version == "v2" and not cfg.shared_att_weights
    two_a = cfg.att_version == "v1" and not cfg.shared_att_weights
    self.w_att = nnx.Param(_glorot(k(), (a_in, a_in)))
    self.w_att_r = nnx.Param(_glorot(k(), (a_in, a_in))) if two_w else None
    self.att = nnx.Param(_glorot(k(), (h, a_in)))
    self.att_r = nnx.Param(_glorot(k(), (h, a_in))) if two_a else None
    if cfg.mix == "learned":
      self.w1 = nnx.Param(_glorot(k(), (a_in, cfg.mix_hidden)))
      self.w2 = nnx.Param(_glorot(k(), (cfg.mix_hidden, 2)))
    if cfg.aux is not None:
      d = cfg.aux_dim
      # PyTorch nn.Linear defaults; b = b_src + b_dst
      if cfg.init == "reference":
        self.u_s = nnx.Param(_torch_uniform(k(), (a_in, d), a_in))
        self.u_r = nnx.Param(_torch_uniform(k(), (a_in, d), a_in))
        self.b_g = nnx.Param(
          _torch_uniform(k(), (d,), a_in) + _torch_uniform(k(), (d,), a_in)
        )
        self.w_o = nnx.Param(_torch_uniform(k(), (d,), d))
        self.b_o = nnx.Param(_torch_uniform(k(), (), d))
      else:
        self.u_s = nnx.Param(_glorot(k(), (a_in, d)))
        self.u_r = nnx.Param(_glorot(k(), (a_in, d)))
        self.b_g = nnx.Param(jnp.zeros((d,)))
        self.w_o = nnx.Param(_glorot(k(), (d, 1))[:, 0])
        self.b_o = nnx.Param(jnp.zeros(()))
      if cfg.aux == "diff-mlp":
        if cfg.init == "reference":
          self.w_aux = nnx.Param(_torch_uniform(k(), (c, c), c))
          self.b_aux = nnx.Param(_torch_uniform(k(), (c,), c))
        else:
          self.w_aux = nnx.Param(_glorot(k(), (c, c)))
          self.b_aux = nnx.Param(jnp.zeros((c,)))
    self.drop = nnx.Dropout(cfg.att_dropout or 0.0)

  def __call__(
    self,
    x_send,
    z_recv,
    send_idx,
    recv_idx,
    prior,
    phase,
    num_recv: int,
    *,
    conj_phase: bool,
    deterministic: bool = True,
    rngs=None,
    mask=None,
    recv_sorted: bool = False,
    gate_recv=None,
    sender_softmax: bool = False,
    att_prior: bool = False,
    prior_factors=None,
    tables_memo: dict | None = None,
  ):
    """Runs the stage.

    Args:
      x_send: ``(re, im)`` sender features ``[S, H, C]``; ``im`` None for real
        backbones and, for a complex stage, for an identically zero imaginary
        part (GeDi's first layer, whose input is real), whose products are then
        skipped rather than computed on zeros.
      z_recv: ``(re, im)`` receiver features ``[R, H, C]`` (``im`` as for
        ``x_send``), or None (then the prior aggregation).
      send_idx, recv_idx: int32[P] incidence pairs.
      prior: f32[P] structural prior ``c_sr``.
      phase: ``(re, im)`` f32[P] phases ``phi_sr`` or None (all 1).
      num_recv: static R.
      conj_phase: use ``conj(phi)`` (stage 1) or ``phi`` (stage 2).
      mask: optional bool[P]; masked pairs carry no message and no attention
        mass.
      recv_sorted: ``recv_idx`` is non-decreasing (sorted segment sums).
      gate_recv: ``'prior'`` to feed the gate the prior aggregation instead of
        ``z_recv`` (the reference's PhenomNN), else None.
      sender_softmax: normalise the attention over the pairs that share a sender
        and read the mixture from the receiver (the reference's HyperGCN, whose
        messages flow target to source over a symmetric graph); False: over the
        pairs that share a receiver.
      att_prior: the attention reads the prior aggregation as receiver features
        even when ``z_recv`` is given (the reference's ``gedi-att`` /
        ``phenom-att``); ``z_recv`` then feeds only the gate.
      prior_factors: None, or ``(f_send [S], f_recv [R])`` (either None for
        ones) with ``prior = f_send[send_idx] * f_recv[recv_idx]`` (the priors
        of :func:`stage_prior_factors` are such products). The prior aggregation
        of a stage without phases and mask then scales sender and receiver rows
        instead of every pair: ``z_r = f_r sum_s (f_s x_s)``.
      tables_memo: None, or a dict the caller passes to every call of this stage
        that reads the same feature arrays (PhenomNN's two operators per step):
        each sender or receiver table is then projected once (see
        :func:`_tables`).

    The prior, the phases and every per-pair coefficient are computed in the
    features' dtype (float64 under ``jax_enable_x64`` with float64 features).

    Returns:
      ``(y, StageAux)`` with ``y = (re, im)`` of shape ``[R, H, C]``.
    """
    cfg = self.cfg
    if not isinstance(x_send, tuple) or len(x_send) != 2:
      raise TypeError(
        "x_send must be a pair (re, im) (im None for real features)"
      )
    xr, xi = x_send
    if xi is not None and not self.complex:
      raise ValueError(
        "x_send must be real (re, None) for a stage built without "
        "complex_features"
      )
    if z_recv is not None and z_recv[1] is not None and not self.complex:
      raise ValueError(
        "z_recv must be real (re, None) for a stage built without "
        "complex_features"
      )
    want = (cfg.heads, self.channels)
    for nm, a in (
      ("x_send", xr),
      ("z_recv", None if z_recv is None else z_recv[0]),
    ):
      if a is not None and (
        jnp.ndim(a) != 3 or tuple(jnp.shape(a)[1:]) != want
      ):
        raise ValueError(
          f"{nm} must have shape [N, heads={want[0]}, channels={want[1]}], "
          f"got {jnp.shape(a)}"
        )
    p_len = jnp.shape(send_idx)[0] if jnp.ndim(send_idx) == 1 else None
    if (
      p_len is None
      or jnp.shape(recv_idx) != (p_len,)
      or jnp.shape(prior) != (p_len,)
    ):
      raise ValueError(
        f"send_idx, recv_idx and prior must be 1-D of one length P, got "
        f"{jnp.shape(send_idx)}, {jnp.shape(recv_idx)}, {jnp.shape(prior)}"
      )
    if (
      isinstance(num_recv, bool)
      or not isinstance(num_recv, int)
      or num_recv < 1
    ):
      raise ValueError(f"num_recv must be a positive int, got {num_recv!r}")
    if gate_recv not in (None, "prior"):
      raise ValueError(f"gate_recv must be None or 'prior', got {gate_recv!r}")
    if prior_factors is not None:
      if not isinstance(prior_factors, tuple) or len(prior_factors) != 2:
        raise TypeError("prior_factors must be None or a pair (f_send, f_recv)")
      for nm, f, size in zip(
        ("f_send", "f_recv"), prior_factors, (xr.shape[0], num_recv)
      ):
        if f is not None and tuple(jnp.shape(f)) != (size,):
          raise ValueError(
            f"prior_factors: {nm} must be None or of shape [{size}], "
            f"got {tuple(jnp.shape(f))}"
          )
    seg = lambda a: jax.ops.segment_sum(
      a, recv_idx, num_recv, indices_are_sorted=recv_sorted
    )
    dt = xr.dtype
    prior = prior.astype(dt)
    if phase is None:
      pr, pi = jnp.ones_like(prior), None
    else:
      pr, pi = phase
      pr = pr.astype(dt)
      pi = None if pi is None else (-pi if conj_phase else pi).astype(dt)
    c = prior if mask is None else jnp.where(mask, prior, 0.0)
    c_ph = c[:, None, None]
    gr, gi = xr[send_idx], (None if xi is None else xi[send_idx])  # [P, H, C]

    # sum_s c_sr v_s for a real [S, H, K] row table v (no phases)
    def agg_rows(v):
      if v is None:
        return None
      if mask is None and prior_factors is not None:
        # c = f_s f_r: scale the sender and receiver rows, sum the pairs
        # unscaled
        fs, fr = (
          None if f is None else f.astype(dt)[:, None, None]
          for f in prior_factors
        )
        sc_ = lambda f, a: a if f is None else f * a
        return sc_(fr, seg(sc_(fs, v)[send_idx]))
      return seg(c_ph * v[send_idx])

    def prior_agg():  # z_r = sum c phi~ x_s, with this stage's phase direction
      if phase is None:
        return agg_rows(xr), agg_rows(xi)
      zr_, zi_ = hg.cmul(
        pr[:, None, None], None if pi is None else pi[:, None, None], gr, gi
      )
      return (seg(c_ph * zr_), None if zi_ is None else seg(c_ph * zi_))

    # the prior aggregation is read only through its tables: _AGG stands for it
    # until the requests below decide how to form them
    z_prior = (
      _AGG if z_recv is None or att_prior or gate_recv == "prior" else None
    )
    if z_recv is None:
      z_recv = z_prior
    z_att = z_prior if att_prior else z_recv
    # [S, H, A] @ [A, K] and [R, H, A] @ [A, K] tables ([Re || Im] features, a zero Im skipped),
    # one matrix product per distinct table (see _tables)
    proj = lambda z, w: _proj(z[0], z[1], w, cfg.complex_layout, self.complex)
    src_feat, src_idx = (
      (z_recv, recv_idx) if sender_softmax else (x_send, send_idx)
    )
    # the receivers as the gate reads them
    fg = z_recv if gate_recv is None else z_prior
    # z_prior exists wherever one of these is it (set above for them)
    assert z_att is not None and fg is not None and src_feat is not None
    w_r = (
      "w_att_r"
      if cfg.att_version == "v2" and self.w_att_r is not None
      else "w_att"
    )
    req: dict[str, tuple[_Feats, str]] = {
      "hs": (x_send, "w_att"),
      "hr": (z_att, w_r),
    }
    if cfg.mix == "learned":
      req["mix"] = (src_feat, "w1")
    if cfg.aux is not None:
      req["us"], req["ur"] = (x_send, "u_s"), (fg, "u_r")
    weight = lambda k: getattr(self, k)[...]
    agg_req = {nm: wn for nm, (f, wn) in req.items() if f is _AGG}
    by_rows = False
    if agg_req:
      # The tables of the prior aggregation: project the aggregation, [R, H, C]
      # @ [C, K] (P C sums and R C K products), or, for a real stage without
      # phases, aggregate the senders' projections, sum_s c_sr (x_s W) (P K
      # sums, and S C K products for the weights the senders do not already
      # meet). The same linear map either way; the cheaper order (see
      # _prior_tables_by_rows).
      width = lambda wns: sum(weight(w).shape[-1] for w in set(wns))
      on_send = {wn for f, wn in req.values() if f is x_send}
      k_r, k_new = (
        width(agg_req.values()),
        width(set(agg_req.values()) - on_send),
      )
      by_rows = (
        phase is None
        and xi is None
        and not self.complex
        and _prior_tables_by_rows(
          p_len, xr.shape[0], num_recv, self.channels, k_r, k_new
        )
      )
      # what the _AGG tables project
      z_agg = x_send if by_rows else cast(_Feats, prior_agg())
      req = {nm: (z_agg if f is _AGG else f, wn) for nm, (f, wn) in req.items()}
    memo = None if tables_memo is None else tables_memo.setdefault(id(self), {})
    tab = _tables(req, weight, proj, memo)
    if by_rows:  # the senders' projections, aggregated by the prior
      tab.update({nm: cast(jax.Array, agg_rows(tab[nm])) for nm in agg_req})
    # attention (W_a shared over heads, a_h per head); z_att: receivers as the
    # attention reads them
    grp = send_idx if sender_softmax else recv_idx
    hs, hr = tab["hs"], tab["hr"]
    if cfg.att_version == "v2":
      e = _head_dot(
        jax.nn.leaky_relu(hs[send_idx] + hr[recv_idx], 0.2), self.att[...]
      )
    else:
      ar = self.att[...] if self.att_r is None else self.att_r[...]
      e = jax.nn.leaky_relu(
        jnp.einsum("nha,ha->nh", hs, self.att[...])[send_idx]
        + jnp.einsum("nha,ha->nh", hr, ar)[recv_idx],
        0.2,
      )
    att = hg.segment_softmax(
      e,
      grp,
      num_recv if not sender_softmax else xr.shape[0],
      mask=mask,
      indices_are_sorted=recv_sorted and not sender_softmax,
    )
    if cfg.att_dropout:
      att = self.drop(att, deterministic=deterministic, rngs=rngs)
    # main-path mixture (sender-only: 'only-src')
    cb = c[:, None]
    pi_mix = None
    if cfg.mix == "learned":
      logits = _mm(jax.nn.leaky_relu(tab["mix"], 0.2), self.w2[...])
      pi_mix = jax.nn.softmax(logits, -1)[src_idx]  # [P, H, 2] = (prior, att)
      alpha = pi_mix[..., 1] * att + pi_mix[..., 0] * cb
    elif cfg.mix == "prior":
      alpha = jnp.broadcast_to(cb, att.shape)
    elif cfg.mix == "att":
      alpha = att
    elif cfg.mix == "mul":
      alpha = att * cb
    else:
      w = float(cfg.mix.split(":", 1)[1])
      alpha = w * cb + (1.0 - w) * att
    if mask is not None:
      alpha = jnp.where(mask[:, None], alpha, 0.0)
    gate, coef = None, alpha
    # None: a zero imaginary part
    sc = lambda s_, x_: None if x_ is None else _scale(s_, x_)
    mr, mi, y = _scale(alpha, gr), sc(alpha, gi), None
    if cfg.aux is not None:
      # the gate's bias joins the receiver table: added per receiver row, not
      # per pair
      us, ur = tab["us"], tab["ur"] + self.b_g[...]
      g = (
        _head_dot(jax.nn.relu(us[send_idx] + ur[recv_idx]), self.w_o[...])
        + self.b_o[...]
      )
      gate = jnp.tanh(g) if cfg.symmetric_aux else jax.nn.sigmoid(g)
      if mask is not None:
        gate = jnp.where(mask[:, None], gate, 0.0)
      sgn = -1.0 if cfg.aux == "same-mlp" else 1.0
      if cfg.aux == "same-mlp" or (cfg.mix == "mul" and not cfg.symmetric_aux):
        tr_, ti_ = sgn * gr, (None if gi is None else sgn * gi)
        if cfg.mix == "mul":  # the reference's product mode sends x, not x~
          tr_, ti_ = gr, gi
        # s x~ of the imaginary part (None: zero)
        aux_im = lambda s_: sc(s_, ti_)
      else:
        act = jax.nn.relu if self.aux_relu else (lambda v: v)
        b = self.b_aux[...]
        # a real, linear transform without phases sums per receiver (see below):
        # no x~ per pair
        fused = (
          not self.complex
          and not self.aux_relu
          and phase is None
          and not cfg.symmetric_aux
        )
        tr_ = None if fused else (_mm(act(xr), self.w_aux[...]) + b)[send_idx]
        if xi is not None:
          ti_ = (_mm(act(xi), self.w_aux[...]) + b)[send_idx]
          aux_im = lambda s_: _scale(s_, ti_)
        # a zero imaginary part: W_aux act(0) + b = b for every pair
        elif self.complex:
          aux_im = lambda s_: _outer(s_, b)
        else:
          aux_im = lambda s_: None
      if cfg.symmetric_aux:
        pos, neg = alpha * jax.nn.relu(gate), alpha * jax.nn.relu(-gate)
        mr = _scale(pos, gr) + _scale(neg, tr_)
        mi = _add(sc(pos, gi), aux_im(neg))
        coef = pos + sgn * neg
      else:
        if cfg.mix == "mul":
          share, sg = cb - alpha, 1.0
        else:
          share, sg = 1.0 - alpha, sgn
        w_aux = share * gate
        # fused: y_r = sum alpha x_s + [sum w x_s || sum w] [W_aux; b]
        if tr_ is None:
          # one reduction of [x_s || 1] weighted by (alpha, w): [R, H, 2, C + 1]; the bias enters
          # through the matrix product, whose gradients are contractions too
          x1 = jnp.concatenate([xr, jnp.ones((*xr.shape[:-1], 1), dt)], -1)[
            send_idx
          ]
          agg = seg(_scale_k(jnp.stack([alpha, w_aux], -1), x1))
          # [C + 1, C]
          wb = jnp.concatenate([self.w_aux[...], self.b_aux[...][None]], 0)
          y = (agg[:, :, 0, :-1] + _mm(agg[:, :, 1], wb), None)
        else:
          mr = mr + _scale(w_aux, tr_)
          mi = _add(mi, aux_im(w_aux))
        coef = alpha + sg * share * gate
    if y is None:
      if phase is not None:
        mr, mi = hg.cmul(
          pr[:, None, None], None if pi is None else pi[:, None, None], mr, mi
        )
      y = (seg(mr), None if mi is None else seg(mi))
    if self.complex and y[1] is None:
      y = (y[0], jnp.zeros_like(y[0]))
    return y, StageAux(alpha=alpha, pi=pi_mix, gate=gate, att=att, coef=coef)


def stage_priors(
  inc: hg.Incidence,
  kind: str = "sym",
  *,
  gamma_edge: str = "code",
  dtype: jax.typing.DTypeLike | None = None,
) -> tuple[jax.Array, jax.Array]:
  """Structural priors ``(c1, c2)`` per incidence pair (edge-sorted order) for
  the two stages.

  ``'sym'`` (GeDi, HGNN): ``c = d_v^{-1/2} delta_e^{-1/2}`` in both stages,
  whose product gives ``d_u^{-1/2} delta_e^{-1} d_v^{-1/2}``. PhenomNN (the
  reference's ``_normalized_operator``): ``'phenom_beta'``: ``c = d^b_v^{-1/2}``
  with ``d^b_v = sum_{e ni v} |e| + 1`` (the row sums of ``B B^T + I``);
  ``'phenom_gamma'``: ``c = (d_v + 1)^{-1/2} |e|^{s}`` with ``s = +1/2``
  (``gamma_edge='code'``: the reference raises its edge norm ``1/|e|`` to the
  power -1/2, so the two stages multiply to ``|e|``) or ``s = -1/2``
  (``'inverse'``: ``B D_E^{-1} B^T`` as in PhenomNN's definition). ``dtype``:
  the dtype of the priors (default: the default float dtype, float64 under
  ``jax_enable_x64``); the degrees are cast to it before the inverse square
  roots, so float64 priors carry no float32 rounding.

  Args:
    inc: the hypergraph's :class:`~jaxpapers.hypergraph.Incidence` (nnz pairs).
    kind: ``'sym'``, ``'phenom_beta'`` or ``'phenom_gamma'``.
    gamma_edge: ``'code'`` or ``'inverse'``, the hyperedge factor of
      ``'phenom_gamma'``.
    dtype: a floating dtype for the priors (default: the default float dtype).

  Returns:
    ``(c1, c2)``, the stage-1 and stage-2 priors, each [nnz] of ``dtype`` (the
    same array for every kind here).
  """
  fn, fe = stage_prior_factors(inc, kind, gamma_edge=gamma_edge, dtype=dtype)
  c = fn[inc.node] if fe is None else fn[inc.node] * fe[inc.edge]
  return c, c


def stage_prior_factors(
  inc: hg.Incidence,
  kind: str = "sym",
  *,
  gamma_edge: str = "code",
  dtype: jax.typing.DTypeLike | None = None,
) -> tuple[jax.Array, jax.Array | None]:
  """The node and hyperedge factors of :func:`stage_priors`:
  ``c = f_node[v] f_edge[e]``.

  Every prior here is such a product (``'sym'``: ``d_v^{-1/2}`` and
  ``delta_e^{-1/2}``; ``'phenom_beta'``: ``d^b_v^{-1/2}`` and 1;
  ``'phenom_gamma'``: ``(d_v + 1)^{-1/2}`` and ``|e|^{+-1/2}``), so a stage's
  prior aggregation can scale rows instead of pairs (the ``prior_factors`` of
  :class:`PandaStage`). Arguments as for :func:`stage_priors`.

  Returns:
    ``(f_node [n], f_edge [m] or None)`` of ``dtype``; None stands for a factor
    of 1.
  """
  kinds = ("sym", "phenom_beta", "phenom_gamma")
  if kind not in kinds:
    raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
  if gamma_edge not in ("code", "inverse"):
    raise ValueError(
      f"gamma_edge must be 'code' or 'inverse', got {gamma_edge!r}"
    )
  if not isinstance(inc, hg.Incidence):
    raise TypeError(f"inc must be an Incidence, got {type(inc).__name__}")
  dt = (
    jax.dtypes.canonicalize_dtype(float) if dtype is None else jnp.dtype(dtype)
  )
  if not jnp.issubdtype(dt, jnp.floating):
    raise TypeError(f"dtype must be a floating dtype, got {dt}")
  dn, de_ = inc.deg_node.astype(dt), inc.deg_edge.astype(dt)
  if kind == "sym":
    return hg.inv_sqrt(dn), hg.inv_sqrt(de_)
  if kind == "phenom_beta":
    db = jax.ops.segment_sum(de_[inc.edge], inc.node, inc.num_nodes) + 1.0
    return hg.inv_sqrt(db), None
  return hg.inv_sqrt(dn + 1.0), (
    jnp.sqrt(de_) if gamma_edge == "code" else hg.inv_sqrt(de_)
  )


class PandaLayer(nnx.Module):
  """One two-stage PANDA layer (node -> hyperedge -> node), pre-activation
  output.

  ::

    X_u = X W_u ; X_res = X W_res                      (W_u, W_res: in -> heads * channels)
    Hyp = Stage1(send=X_u, recv=Hyp_prev or prior aggregation, pairs v->e, conj(phi))
    X'  = Stage2(send=Hyp, recv=X_u, pairs e->v, phi) + X_res c_I + b     (b on Re and Im)

  The caller applies the activation (ReLU / complex ReLU) and the skip
  connection. With ``mix='prior'``, ``aux=None``, one head and ``c_I = 1`` this
  is exactly ``X W_res + Q_N X W_u + b (1 + i)`` (the paper's reduction to
  GeDi's complex convolution).

  Args:
    in_features: input width F.
    channels: per-head width C; the output is ``heads * channels`` wide (the
      reference's ``lin_update: F -> heads * hidden``).
    complex_features: GeDi (complex) or a real backbone.
    use_res: include ``X W_res c_I + b`` (PhenomNN uses the stages only).
    i_complex: ``c_I = 1 + i`` on the residual instead of 1 (the reference
      passes False).
    aux_relu: see :class:`PandaStage`.
  """

  def __init__(
    self,
    in_features: int,
    channels: int,
    cfg: PandaConfig,
    *,
    complex_features: bool = False,
    use_res: bool = True,
    i_complex: bool = False,
    aux_relu: bool | None = None,
    rngs: nnx.Rngs,
  ):
    if not isinstance(cfg, PandaConfig):
      raise TypeError(f"cfg must be a PandaConfig, got {type(cfg).__name__}")
    for nm, v in (("in_features", in_features), ("channels", channels)):
      if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{nm} must be a positive int, got {v!r}")
    self.in_features = in_features
    self.cfg, self.complex, self.i_complex = cfg, complex_features, i_complex
    self.out = cfg.heads * channels
    lin = (
      glorot_linear
      if cfg.init == "reference"
      else partial(nnx.Linear, use_bias=False)
    )
    self.w_u = lin(in_features, self.out, rngs=rngs)
    self.w_res = lin(in_features, self.out, rngs=rngs) if use_res else None
    self.bias = nnx.Param(jnp.zeros((self.out,))) if use_res else None
    self.stage1, self.stage2 = (
      PandaStage(
        channels,
        cfg,
        complex_features=complex_features,
        aux_relu=aux_relu,
        rngs=rngs,
      )
      for _ in range(2)
    )

  def __call__(
    self,
    x,
    hyp_prev,
    inc: hg.Incidence,
    priors,
    *,
    use_phase: bool = True,
    deterministic: bool = True,
    rngs=None,
    prior_factors=None,
  ):
    """x: ``(re, im)`` [n, F]; hyp_prev: ``(re, im)`` [m, H, C] or None; priors:
    ``(c1, c2)``.

    ``prior_factors``: None, or ``(f_node [n], f_edge [m])`` of stage 1's prior
    (see :func:`stage_prior_factors`), which then aggregates by rows where it
    has no phases.

    Returns ``((re, im) [n, H * C], hyp (re, im) [m, H, C], (aux1, aux2))``.
    """
    if not isinstance(x, tuple) or len(x) != 2:
      raise TypeError("x must be a pair (re, im) (im None for real features)")
    if not isinstance(inc, hg.Incidence):
      raise TypeError(f"inc must be an Incidence, got {type(inc).__name__}")
    xr, xi = x
    want = (inc.num_nodes, self.in_features)
    for nm, a in (("x re", xr), ("x im", xi)):
      if a is not None and tuple(jnp.shape(a)) != want:
        raise ValueError(
          f"{nm} must have shape [num_nodes, in_features] = {want}, "
          f"got {tuple(jnp.shape(a))}"
        )
    n, m, h = inc.num_nodes, inc.num_edges, self.cfg.heads
    shp = lambda a: None if a is None else a.reshape(a.shape[0], h, -1)
    # a real input (GeDi's first layer) keeps im None: stage 1 skips the zero
    # imaginary part
    ur, ui = self.w_u(xr), (None if xi is None else self.w_u(xi))
    xu = (shp(ur), shp(ui))
    c1, c2 = priors
    ph = (
      (inc.phase_re, inc.phase_im if self.complex else None)
      if use_phase
      else None
    )
    hyp, aux1 = self.stage1(
      xu,
      hyp_prev,
      inc.node,
      inc.edge,
      c1,
      ph,
      m,
      conj_phase=True,
      deterministic=deterministic,
      rngs=rngs,
      recv_sorted=True,
      att_prior=self.cfg.stage1_receivers == "prior",
      prior_factors=prior_factors,
    )
    p = inc.by_node
    ph2 = (
      None if ph is None else (ph[0][p], None if ph[1] is None else ph[1][p])
    )
    y, aux2 = self.stage2(
      hyp,
      xu,
      inc.edge[p],
      inc.node[p],
      c2[p],
      ph2,
      n,
      conj_phase=False,
      deterministic=deterministic,
      rngs=rngs,
      recv_sorted=True,
    )
    yr = y[0].reshape(n, self.out)
    yi = None if y[1] is None else y[1].reshape(n, self.out)
    # both or neither (use_res)
    if self.w_res is not None and self.bias is not None:
      rr, ri = self.w_res(xr), (None if xi is None else self.w_res(xi))
      rr, ri = hg.complex_unit_mul(rr, ri, self.i_complex)
      yr = yr + rr + self.bias[...]
      if yi is not None:
        yi = yi + (0.0 if ri is None else ri) + self.bias[...]
    return (yr, yi), hyp, (aux1, aux2)
