"""The PANDA stage and two-stage layer (Prior-guided AttentioNal Dual-path Architecture).

One stage sends from senders S to receivers R over incidence pairs (s, r):

  receiver init  z_r = sum_{s in N(r)} c_sr conj(phi_sr) x_s           (featureless receivers)
  attention      a_sr,h = softmax_{s in N(r)} a_h^T LeakyReLU_0.2(W_a [x_s] + W_a [z_r])   (GATv2)
  mixture        [pi^prior, pi^att]_sr,h = softmax(W_2 LeakyReLU(W_1 x_s))   (sender-only)
                 alpha_sr,h = pi^att a_sr,h + pi^prior c_sr               (not normalised)
  aux gate       g_sr,h = sigmoid(w_o^T ReLU(U_s x_s + U_r z_r + b))       (non-competitive)
  aux transform  x~_s = W_aux ReLU(x_s) + b_aux                            ('diff-mlp')
  message        y_r = sum_s phi~_sr [alpha_sr x_s + (1 - alpha_sr) g_sr x~_s]

with ``phi~ = conj(phi)`` in stage 1 (V -> E) and ``phi`` in stage 2 (E -> V). Complex features
are ``(re, im)`` pairs of real arrays of shape ``[N, H, C]``; attention, gates and the mixture
read ``[Re || Im]``; real transforms act on Re and Im separately (the ``b_aux`` bias is added to
both parts [inferred]). References: PANDA (NeurIPS 2026, official code jainris/panda; no arXiv id
yet); GeDi-HNN (Fiorini et al., TMLR 2024); GATv2 (Brody et al., arXiv:2105.14491).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from jaxpapers import hypergraph as hg

__all__ = ["PandaConfig", "StageAux", "PandaStage", "PandaLayer", "stage_priors"]

_MIX = ("learned", "prior", "att", "mul")


@dataclasses.dataclass(frozen=True)
class PandaConfig:
  """PANDA options (defaults of the official code).

  Attributes:
    heads: attention heads H; hidden channels are split as ``hidden // heads`` per head.
    mix: ``'learned'`` (per-incidence, per-head gate), ``'prior'`` (alpha = c, the reduction),
      ``'att'`` (alpha = a, used by WithoutPriorAux), ``'fixed:<w_prior>'`` or ``'mul'``
      (alpha = a * c, auxiliary share ``c - alpha``) [reconstruction of the product mode].
    att_version: ``'v2'`` (GATv2) or ``'v1'`` (GAT).
    shared_att_weights: share ``W_a`` between sender and receiver (v2).
    mix_hidden: width of ``W_1`` in the mixture MLP.
    aux: ``None`` (no auxiliary path), ``'diff-mlp'`` or ``'same-mlp'`` (``x~ = -x``).
    aux_dim: hidden width of the auxiliary gate.
    symmetric_aux: gate ``tanh`` and message ``alpha (ReLU(g) x + ReLU(-g) x~)``.
    att_dropout: dropout on the attention coefficients.
    shared_alphas: reuse layer 1's coefficients in later layers (not implemented: must be False).
    recv_init: ``'prior'``: featureless receivers are the prior aggregation of their senders.
  """

  heads: int = 4
  mix: str = "learned"
  att_version: str = "v2"
  shared_att_weights: bool = True
  mix_hidden: int = 8
  aux: str | None = "diff-mlp"
  aux_dim: int = 16
  symmetric_aux: bool = False
  att_dropout: float = 0.0
  shared_alphas: bool = False
  recv_init: str = "prior"

  def __post_init__(self):
    for nm in ("heads", "mix_hidden", "aux_dim"):
      v = getattr(self, nm)
      if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{nm} must be a positive int, got {v!r}")
    if not isinstance(self.mix, str) or not (self.mix in _MIX or self.mix.startswith("fixed:")):
      raise ValueError(f"mix must be one of {_MIX} or 'fixed:<w_prior>', got {self.mix!r}")
    if (
      isinstance(self.att_dropout, bool)
      or not isinstance(self.att_dropout, (int, float))
      or not 0.0 <= self.att_dropout < 1.0
    ):
      raise ValueError(f"att_dropout must be a float in [0, 1), got {self.att_dropout!r}")
    if self.mix.startswith("fixed:"):
      try:
        w = float(self.mix.split(":", 1)[1])
      except ValueError:
        raise ValueError(
          f"mix='fixed:<w_prior>' needs a number in [0, 1] after 'fixed:', got {self.mix!r}"
        ) from None
      if not 0.0 <= w <= 1.0:
        raise ValueError(f"fixed prior weight must lie in [0, 1], got {w}")
    if self.att_version not in ("v1", "v2"):
      raise ValueError(f"att_version must be 'v1' or 'v2', got {self.att_version!r}")
    if self.aux not in (None, "diff-mlp", "same-mlp"):
      raise ValueError(f"aux must be None, 'diff-mlp' or 'same-mlp', got {self.aux!r}")
    if self.shared_alphas:
      raise ValueError("shared_alphas=True is not supported")
    if self.recv_init != "prior":
      raise ValueError(f"recv_init must be 'prior', got {self.recv_init!r}")


class StageAux(NamedTuple):
  """Per-incidence coefficients of one stage, ``[P, H]`` (``pi``: ``[P, H, 2]`` or None)."""

  alpha: jax.Array
  pi: jax.Array | None
  gate: jax.Array | None
  att: jax.Array


def _glorot(key, shape):
  fan_in, fan_out = shape[-2], shape[-1]
  lim = jnp.sqrt(6.0 / (fan_in + fan_out))
  return jax.random.uniform(key, shape, jnp.float32, -lim, lim)


def _feat(re, im):
  return re if im is None else jnp.concatenate([re, im], -1)


def _hd(x, w):
  """[N, H, A] x [H, A, B] -> [N, H, B]."""
  return jnp.einsum("nha,hab->nhb", x, w)


class PandaStage(nnx.Module):
  """One PANDA message-passing stage (see the module docstring for the equations).

  Args:
    channels: per-head channels C of the sender/receiver features.
    cfg: the :class:`PandaConfig`.
    complex_features: whether features are complex ``(re, im)`` (GeDi) or real.
    aux_linear: HyperGCN's auxiliary transform ``W_aux x`` (no ReLU, no bias).
  """

  def __init__(
    self,
    channels: int,
    cfg: PandaConfig,
    *,
    complex_features: bool = False,
    aux_linear: bool = False,
    rngs: nnx.Rngs,
  ):
    if not isinstance(cfg, PandaConfig):
      raise TypeError(f"cfg must be a PandaConfig, got {type(cfg).__name__}")
    if isinstance(channels, bool) or not isinstance(channels, int) or channels <= 0:
      raise ValueError(f"channels must be a positive int, got {channels!r}")
    self.channels = channels
    h, c = cfg.heads, channels
    a_in = 2 * c if complex_features else c
    self.cfg, self.complex, self.aux_linear = cfg, complex_features, aux_linear
    k = lambda: rngs.params()
    self.w_att = nnx.Param(_glorot(k(), (h, a_in, c)))
    self.w_att_r = (
      None
      if (cfg.shared_att_weights or cfg.att_version == "v1")
      else nnx.Param(_glorot(k(), (h, a_in, c)))
    )
    self.att = nnx.Param(_glorot(k(), (h, c, 1))[..., 0])
    self.att_r = nnx.Param(_glorot(k(), (h, c, 1))[..., 0]) if cfg.att_version == "v1" else None
    if cfg.mix == "learned":
      self.w1 = nnx.Param(_glorot(k(), (h, a_in, cfg.mix_hidden)))
      self.w2 = nnx.Param(_glorot(k(), (h, cfg.mix_hidden, 2)))
      self.b2 = nnx.Param(jnp.zeros((h, 2)))
    if cfg.aux is not None:
      self.u_s = nnx.Param(_glorot(k(), (h, a_in, cfg.aux_dim)))
      self.u_r = nnx.Param(_glorot(k(), (h, a_in, cfg.aux_dim)))
      self.b_g = nnx.Param(jnp.zeros((h, cfg.aux_dim)))
      self.w_o = nnx.Param(_glorot(k(), (h, cfg.aux_dim, 1))[..., 0])
      if cfg.aux == "diff-mlp":
        self.w_aux = nnx.Param(_glorot(k(), (h, c, c)))
        self.b_aux = None if aux_linear else nnx.Param(jnp.zeros((h, c)))
    self.drop = nnx.Dropout(cfg.att_dropout)

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
  ):
    """Runs the stage.

    Args:
      x_send: ``(re, im)`` sender features ``[S, H, C]`` (``im`` None for real backbones).
      z_recv: ``(re, im)`` receiver features ``[R, H, C]``, or None (then the prior aggregation).
      send_idx, recv_idx: int32[P] incidence pairs.
      prior: f32[P] structural prior ``c_sr``.
      phase: ``(re, im)`` f32[P] phases ``phi_sr`` or None (all 1).
      num_recv: static R.
      conj_phase: use ``conj(phi)`` (stage 1) or ``phi`` (stage 2).
      mask: optional bool[P]; masked pairs carry no message and no attention mass.
      recv_sorted: ``recv_idx`` is non-decreasing (sorted segment sums).

    Returns:
      ``(y, StageAux)`` with ``y = (re, im)`` of shape ``[R, H, C]``.
    """
    cfg = self.cfg
    if not isinstance(x_send, tuple) or len(x_send) != 2:
      raise TypeError("x_send must be a pair (re, im) (im None for real features)")
    xr, xi = x_send
    if (xi is not None) != self.complex:
      raise ValueError(
        f"x_send must be {'complex (re, im)' if self.complex else 'real (re, None)'}"
      )
    want = (cfg.heads, self.channels)
    for nm, a in (("x_send", xr), ("z_recv", None if z_recv is None else z_recv[0])):
      if a is not None and (jnp.ndim(a) != 3 or tuple(jnp.shape(a)[1:]) != want):
        raise ValueError(
          f"{nm} must have shape [N, heads={want[0]}, channels={want[1]}], got {jnp.shape(a)}"
        )
    p_len = jnp.shape(send_idx)[0] if jnp.ndim(send_idx) == 1 else None
    if p_len is None or jnp.shape(recv_idx) != (p_len,) or jnp.shape(prior) != (p_len,):
      raise ValueError(
        f"send_idx, recv_idx and prior must be 1-D of one length P, got "
        f"{jnp.shape(send_idx)}, {jnp.shape(recv_idx)}, {jnp.shape(prior)}"
      )
    if isinstance(num_recv, bool) or not isinstance(num_recv, int) or num_recv < 1:
      raise ValueError(f"num_recv must be a positive int, got {num_recv!r}")
    seg = lambda a: jax.ops.segment_sum(a, recv_idx, num_recv, indices_are_sorted=recv_sorted)
    if phase is None:
      pr, pi = jnp.ones_like(prior), None
    else:
      pr, pi = phase
      pi = None if pi is None else (-pi if conj_phase else pi)
    c = prior if mask is None else jnp.where(mask, prior, 0.0)
    c_ph = c[:, None, None]
    gr, gi = xr[send_idx], (None if xi is None else xi[send_idx])  # [P, H, C]
    if z_recv is None:  # prior aggregation z_r = sum c conj(phi) x_s (stage 1 conjugation)
      qi = None if phase is None or phase[1] is None else -phase[1]
      zr_, zi_ = hg.cmul(pr[:, None, None], None if qi is None else qi[:, None, None], gr, gi)
      z_recv = (seg(c_ph * zr_), None if zi_ is None else seg(c_ph * zi_))
      if self.complex and z_recv[1] is None:
        z_recv = (z_recv[0], jnp.zeros_like(z_recv[0]))
    fs, fr = _feat(*x_send), _feat(*z_recv)  # [S, H, A], [R, H, A]
    # attention
    if cfg.att_version == "v2":
      hs = _hd(fs, self.w_att[...])
      hr = _hd(fr, self.w_att[...] if self.w_att_r is None else self.w_att_r[...])
      e = jnp.einsum(
        "phc,hc->ph", jax.nn.leaky_relu(hs[send_idx] + hr[recv_idx], 0.2), self.att[...]
      )
    else:
      hs, hr = _hd(fs, self.w_att[...]), _hd(fr, self.w_att[...])
      e = jax.nn.leaky_relu(
        jnp.einsum("nhc,hc->nh", hs, self.att[...])[send_idx]
        + jnp.einsum("nhc,hc->nh", hr, self.att_r[...])[recv_idx],
        0.2,
      )
    att = hg.segment_softmax(e, recv_idx, num_recv, mask=mask, indices_are_sorted=recv_sorted)
    if cfg.att_dropout > 0:
      att = self.drop(att, deterministic=deterministic, rngs=rngs)
    # main-path mixture
    cb = c[:, None]
    pi_mix = None
    if cfg.mix == "learned":
      logits = (
        jnp.einsum("nhk,hkt->nht", jax.nn.leaky_relu(_hd(fs, self.w1[...]), 0.01), self.w2[...])
        + self.b2[...]
      )
      pi_mix = jax.nn.softmax(logits, -1)[send_idx]  # [P, H, 2] = (prior, att)
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
    a3 = alpha[..., None]
    gate = None
    mr, mi = a3 * gr, (None if gi is None else a3 * gi)
    if cfg.aux is not None:
      us, ur = _hd(fs, self.u_s[...]), _hd(fr, self.u_r[...])
      g = jnp.einsum(
        "phk,hk->ph", jax.nn.relu(us[send_idx] + ur[recv_idx] + self.b_g[...]), self.w_o[...]
      )
      gate = jnp.tanh(g) if cfg.symmetric_aux else jax.nn.sigmoid(g)
      if mask is not None:
        gate = jnp.where(mask[:, None], gate, 0.0)
      if cfg.aux == "same-mlp":
        tr_, ti_ = -gr, (None if gi is None else -gi)
      else:
        act = (lambda v: v) if self.aux_linear else jax.nn.relu
        b = 0.0 if self.b_aux is None else self.b_aux[...]
        tr_ = _hd(act(xr), self.w_aux[...])[send_idx] + b
        ti_ = None if xi is None else _hd(act(xi), self.w_aux[...])[send_idx] + b
      g3 = gate[..., None]
      if cfg.symmetric_aux:
        pos, neg = jax.nn.relu(g3), jax.nn.relu(-g3)
        mr = a3 * (pos * gr + neg * tr_)
        mi = None if gi is None else a3 * (pos * gi + neg * ti_)
      else:
        share = (c_ph[:, :, 0][..., None] - a3) if cfg.mix == "mul" else (1.0 - a3)
        mr = mr + share * g3 * tr_
        mi = None if gi is None else mi + share * g3 * ti_
    if phase is not None:
      mr, mi = hg.cmul(pr[:, None, None], None if pi is None else pi[:, None, None], mr, mi)
    y = (seg(mr), None if mi is None else seg(mi))
    if self.complex and y[1] is None:
      y = (y[0], jnp.zeros_like(y[0]))
    return y, StageAux(alpha=alpha, pi=pi_mix, gate=gate, att=att)


def stage_priors(inc: hg.Incidence, kind: str = "sym"):
  """Structural priors ``(c1, c2)`` per incidence pair (edge-sorted order) for the two stages.

  ``'sym'`` (GeDi, HGNN): ``c = d_v^{-1/2} delta_e^{-1/2}`` in both stages, whose product gives
  ``d_u^{-1/2} delta_e^{-1} d_v^{-1/2}``. ``'phenom'``: PhenomNN's ``A_gamma`` normalisation with
  ``d^_v = d_v + 1`` (its self-loop term is kept outside the stages).
  """
  if kind not in ("sym", "phenom"):
    raise ValueError(f"kind must be 'sym' or 'phenom', got {kind!r}")
  if not isinstance(inc, hg.Incidence):
    raise TypeError(f"inc must be an Incidence, got {type(inc).__name__}")
  dv = inc.deg_node + (1.0 if kind == "phenom" else 0.0)
  c = hg.inv_sqrt(dv)[inc.node] * hg.inv_sqrt(inc.deg_edge)[inc.edge]
  return c, c


class PandaLayer(nnx.Module):
  """One two-stage PANDA layer (node -> hyperedge -> node), pre-activation output.

  ::

    X_u = X W_u ; X_res = X W_res
    Hyp = Stage1(send=X_u, recv=Hyp_prev or prior aggregation, pairs v->e, conj(phi))
    X'  = Stage2(send=Hyp, recv=X_u, pairs e->v, phi) + X_res c_I + b

  The caller applies the activation (ReLU / complex ReLU) and the skip connection. With
  ``mix='prior'``, ``aux=None``, one head and ``c_I = 1`` this is exactly
  ``X W_res + Q_N X W_u + b`` (the paper's reduction to GeDi's complex convolution).

  Args:
    in_features, out_features: ``out_features`` must be divisible by ``cfg.heads``.
    complex_features: GeDi (complex) or a real backbone.
    use_res: include ``X W_res c_I`` (PhenomNN uses the stages only).
    i_complex: ``c_I = 1 + i`` on the residual (GeDi) instead of 1.
  """

  def __init__(
    self,
    in_features: int,
    out_features: int,
    cfg: PandaConfig,
    *,
    complex_features: bool = False,
    use_res: bool = True,
    i_complex: bool = False,
    rngs: nnx.Rngs,
  ):
    if not isinstance(cfg, PandaConfig):
      raise TypeError(f"cfg must be a PandaConfig, got {type(cfg).__name__}")
    for nm, v in (("in_features", in_features), ("out_features", out_features)):
      if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{nm} must be a positive int, got {v!r}")
    if out_features % cfg.heads:
      raise ValueError(f"out_features={out_features} must be divisible by heads={cfg.heads}")
    self.in_features = in_features
    self.cfg, self.complex, self.i_complex = cfg, complex_features, i_complex
    self.out = out_features
    self.w_u = nnx.Linear(in_features, out_features, use_bias=False, rngs=rngs)
    self.w_res = (
      nnx.Linear(in_features, out_features, use_bias=False, rngs=rngs) if use_res else None
    )
    self.bias = nnx.Param(jnp.zeros((out_features,))) if use_res else None
    ch = out_features // cfg.heads
    self.stage1 = PandaStage(ch, cfg, complex_features=complex_features, rngs=rngs)
    self.stage2 = PandaStage(ch, cfg, complex_features=complex_features, rngs=rngs)

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
  ):
    """x: ``(re, im)`` [n, F]; hyp_prev: ``(re, im)`` [m, H, C] or None; priors: ``(c1, c2)``.

    Returns ``((re, im) [n, out], hyp (re, im) [m, H, C], (aux1, aux2))``.
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
          f"{nm} must have shape [num_nodes, in_features] = {want}, got {tuple(jnp.shape(a))}"
        )
    n, m, h = inc.num_nodes, inc.num_edges, self.cfg.heads
    shp = lambda a: None if a is None else a.reshape(a.shape[0], h, -1)
    ur, ui = self.w_u(xr), (None if xi is None else self.w_u(xi))
    if self.complex and ui is None:
      ui = jnp.zeros_like(ur)
    xu = (shp(ur), shp(ui))
    c1, c2 = priors
    ph = (inc.phase_re, inc.phase_im if self.complex else None) if use_phase else None
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
    )
    p = inc.by_node
    ph2 = None if ph is None else (ph[0][p], None if ph[1] is None else ph[1][p])
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
    if self.w_res is not None:
      rr, ri = self.w_res(xr), (None if xi is None else self.w_res(xi))
      rr, ri = hg.complex_unit_mul(rr, ri, self.i_complex)
      yr = yr + rr + self.bias[...]
      if yi is not None:
        yi = yi + (0.0 if ri is None else ri)
    return (yr, yi), hyp, (aux1, aux2)
