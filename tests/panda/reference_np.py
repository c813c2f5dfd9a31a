"""Float64 NumPy transcription of the reference PANDA propagation
(jainris/panda).

Written from the reference's definitions, independently of ``jaxpapers``: it
reads the weights in the reference's own naming (a PyTorch ``state_dict`` as
numpy arrays, ``nn.Linear`` weights ``[out, in]``) and follows its data flow:
message passing over ``edge_index`` (row 0 sends, row 1 receives, except
HyperGCN's target-to-source flow), PyG's grouped softmax, the GeDi stage's four
real propagations over the edges whose weight has a positive real or imaginary
part, HyperGCN's dictionary-built graph and PhenomNN's unrolled update. Each
``*_forward`` returns the node representation that enters the classifier, and
the per-layer (per-step) states.

Attention settings are the reference's strings: a stage's ``types`` is its
``attention_type`` split on ``'+'`` (``['gedi', 'gedi-att']`` is the learned
mixture of the prior and the attention over prior-aggregated receivers,
``['att']`` attention alone).
"""

from __future__ import annotations

import numpy as np

PRIORS = ("gedi", "phenom", "gcn")


def _lrelu(v, s=0.2):
  return np.where(v > 0, v, s * v)


def _sigmoid(v):
  return 1.0 / (1.0 + np.exp(-v))


def _lin(sd, name, x, bias=True):
  y = x @ sd[name + ".weight"].T
  if bias and name + ".bias" in sd:
    y = y + sd[name + ".bias"]
  return y


def _scatter(vals, idx, size):
  out = np.zeros((size,) + vals.shape[1:])
  np.add.at(out, idx, vals)
  return out


def _softmax(e, idx):
  """PyG ``softmax(e, index=idx)``: normalised within groups of equal
  ``idx``."""
  out = np.zeros_like(e)
  for g in np.unique(idx):
    sel = idx == g
    z = np.exp(e[sel] - e[sel].max(0))
    out[sel] = z / z.sum(0)
  return out


class Stage:
  """One reference stage (``MainPathConv`` / ``DualPathConv``) with its weights
  and options.

  Args:
    sd: the state dict; ``pre`` the stage's prefix (``'Chebs.0.att_conv1.'``).
    heads, channels: H and C.
    types: the attention types (see the module docstring).
    version: ``'v1'`` or ``'v2'``; ``shared``: shared attention weights.
    aux: whether the auxiliary path exists (``DualPathConv``); ``aux_relu``:
      GeDi's ``aux_lin(ReLU(x))``; ``gate_prior``: the gate always reads the
      prior aggregation (PhenomNN's ``DualPathConv``).
    complex_: GeDi's complex stage; ``imag_sign``: +1 in stage 1 (conjugate
      phases), -1 in stage 2.
  """

  def __init__(
    self,
    sd,
    pre,
    *,
    heads,
    channels,
    types,
    version="v2",
    shared=True,
    aux=True,
    aux_relu=False,
    gate_prior=False,
    complex_=False,
    imag_sign=-1,
  ):
    self.sd, self.pre, self.h, self.c = sd, pre, heads, channels
    self.types, self.version, self.shared = list(types), version, shared
    self.aux, self.aux_relu, self.gate_prior = aux, aux_relu, gate_prior
    self.complex, self.imag_imag = complex_, -imag_sign

  def w(self, name):
    return self.sd[self.pre + name]

  def lin(self, name, x, bias=True):
    return _lin(self.sd, self.pre + name, x, bias)

  # -- features as the attention reads them: [N, H, A]
  def feat(self, x):
    if self.complex:
      return np.concatenate([x[0], x[1]], -1).reshape(
        x[0].shape[0], self.h, 2 * self.c
      )
    return x.reshape(x.shape[0], self.h, self.c)

  def propagate(self, x, alpha, src, dst, size, sigma=None, x_aux=None):
    """``sum_{(s, r)} msg`` at r; x, x_aux [N, H*C]; alpha, sigma [P, H] or
    [P, 1]."""
    xj = x.reshape(x.shape[0], self.h, self.c)[src]
    if sigma is None:
      msg = alpha[..., None] * xj
    else:
      xa = x_aux.reshape(x_aux.shape[0], self.h, self.c)[src]
      msg = alpha[..., None] * xj + ((1 - alpha) * sigma)[..., None] * xa
    return _scatter(msg, dst, size).reshape(size, self.h * self.c)

  def complex_propagate(
    self, x, alpha, src, dst, weight, size, sigma=None, x_aux=None
  ):
    """The GeDi stage's four real propagations over the real and imaginary
    edges."""
    re, im = weight.real > 0, weight.imag > 0

    def prop(xx, sel, xa):
      return self.propagate(
        xx,
        alpha[sel],
        src[sel],
        dst[sel],
        size,
        None if sigma is None else sigma[sel],
        xa,
      )

    xar, xai = (None, None) if x_aux is None else x_aux
    rr, ii = prop(x[0], re, xar), prop(x[1], im, xai)
    ir, ri = prop(x[1], re, xai), prop(x[0], im, xar)
    return rr - self.imag_imag * ii, ir + self.imag_imag * ri

  def aggregate(self, x, prior, src, dst, size, weight):
    if self.complex:
      return self.complex_propagate(x, prior, src, dst, weight, size)
    return self.propagate(x, prior, src, dst, size)

  def attention(self, xs, xd, src, dst, group):
    fs, fd = self.feat(xs)[src], self.feat(xd)[dst]
    if self.version == "v2":
      ls = self.lin("lin" if self.shared else "lin_src", fs, bias=False)
      ld = self.lin("lin" if self.shared else "lin_dst", fd, bias=False)
      e = (_lrelu(ls + ld) * self.w("att")).sum(-1)
    else:
      ls, ld = self.lin("lin", fs, bias=False), self.lin("lin", fd, bias=False)
      a_s = self.w("att") if self.shared else self.w("att_src")
      a_d = self.w("att") if self.shared else self.w("att_dst")
      e = _lrelu((ls * a_s).sum(-1) + (ld * a_d).sum(-1))
    return _softmax(e, group)

  def mixture(self, alphas, xs_rows):
    """``alpha = sum_i w_i alpha_i`` with ``w = softmax(lin2(LeakyReLU(lin1(x_src))))``."""
    if len(alphas) == 1:
      return 1.0 * alphas[0]
    z = _lrelu(self.lin("att_wt_lin1", xs_rows, bias=False))
    w = self.lin("att_wt_lin2", z, bias=False)
    w = np.exp(w - w.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return sum(w[..., i] * a for i, a in enumerate(alphas))

  def gate(self, xs_rows, xd_rows):
    g = np.maximum(
      self.lin("aux_src", xs_rows) + self.lin("aux_dst", xd_rows), 0
    )
    return _sigmoid(self.lin("aux_out", g))[..., 0]

  def aux_x(self, x):
    act = (lambda v: np.maximum(v, 0)) if self.aux_relu else (lambda v: v)
    if self.complex:
      return tuple(
        self.lin("aux_lin", act(p.reshape(-1, self.h, self.c))).reshape(p.shape)
        for p in x
      )
    return self.lin("aux_lin", act(x.reshape(-1, self.h, self.c))).reshape(
      x.shape
    )

  def __call__(self, xs, xd, src, dst, prior, *, weight=None, deg=None):
    """Stage over pairs ``src -> dst`` (source to target). Returns
    ``(out, deg_out)``.

    ``xs``: senders ``[S, H*C]`` (GeDi: ``(re, im)``); ``xd``: receivers or
    None; ``prior``: ``[P, 1]``; ``weight``: GeDi's complex edge weights;
    ``deg``: PhenomNN's degree signal. Outputs are sized by the senders, as
    PyG's ``propagate(size=None)`` does.
    """
    size = (xs[0] if self.complex else xs).shape[0]
    agg = None

    def prior_agg():
      nonlocal agg
      if agg is None:
        agg = self.aggregate(xs, prior, src, dst, size, weight)
      return agg

    alphas = []
    for t in self.types:
      if t in PRIORS:
        alphas.append(prior)
      elif t == "att":
        alphas.append(self.attention(xs, xd, src, dst, dst))
      elif t == "hgat":
        alphas.append(
          self.attention(xs, prior_agg() if xd is None else xd, src, dst, dst)
        )
      elif t in ("gedi-att", "phenom-att"):
        alphas.append(self.attention(xs, prior_agg(), src, dst, dst))
      else:
        raise ValueError(t)
    alpha = self.mixture(alphas, self.feat(xs)[src])
    if not self.aux:
      out = (
        self.complex_propagate(xs, alpha, src, dst, weight, size)
        if self.complex
        else self.propagate(xs, alpha, src, dst, size)
      )
      dout = None if deg is None else self.propagate(deg, alpha, src, dst, size)
      return out, dout
    xg = prior_agg() if (xd is None or self.gate_prior) else xd
    sigma = self.gate(self.feat(xs)[src], self.feat(xg)[dst])
    xa = self.aux_x(xs)
    if self.complex:
      out = self.complex_propagate(xs, alpha, src, dst, weight, size, sigma, xa)
    else:
      out = self.propagate(xs, alpha, src, dst, size, sigma, xa)
    dout = (
      None
      if deg is None
      else self.propagate(deg, alpha, src, dst, size, sigma, deg)
    )
    return out, dout


def _prior(src, dst, dtype=np.float64):
  """``deg_src^{-1/2}[s] deg_dst^{-1/2}[r]`` with degrees counting pairs
  (``[P, 1]``)."""
  d1 = np.bincount(src).astype(dtype) ** -0.5
  d2 = np.bincount(dst).astype(dtype) ** -0.5
  return (d1[src] * d2[dst])[:, None]


def _two_stage(
  sd,
  pre,
  x,
  h,
  node,
  edge,
  *,
  heads,
  channels,
  types1,
  types2,
  version,
  shared,
  aux,
  complex_=False,
  weight=None,
  i_complex=False,
):
  """The GeDi/HGNN layer: ``lin_update``, two stages, ``lin_res``, bias (complex
  for GeDi)."""
  kw = dict(
    heads=heads,
    channels=channels,
    version=version,
    shared=shared,
    aux=aux,
    aux_relu=complex_,
    complex_=complex_,
  )
  s1 = Stage(sd, pre + "att_conv1.", types=types1, imag_sign=1, **kw)
  s2 = Stage(sd, pre + "att_conv2.", types=types2, imag_sign=-1, **kw)
  upd = lambda v: _lin(sd, pre + "lin_update", v, bias=False)
  res = lambda v: _lin(sd, pre + "lin_res", v, bias=False)
  p1, p2 = _prior(node, edge), _prior(edge, node)
  if complex_:
    xu = (upd(x[0]), upd(x[1]))
    hyp, _ = s1(xu, h, node, edge, p1, weight=weight)
    y, _ = s2(hyp, xu, edge, node, p2, weight=weight)
    rr, ri = res(x[0]), res(x[1])
    if i_complex:
      rr, ri = rr - ri, rr + ri
    b = sd[pre + "bias"]
    return (rr + y[0] + b, ri + y[1] + b), hyp
  xu = upd(x)
  hyp, _ = s1(xu, h, node, edge, p1)
  y, _ = s2(hyp, xu, edge, node, p2)
  return y + res(x) + sd[pre + "bias"], hyp


def gedi_forward(
  sd,
  x,
  node,
  edge,
  weight,
  *,
  layers,
  heads,
  channels,
  types1,
  types2,
  version="v2",
  shared=True,
  aux=True,
  other_complex=False,
):
  """GeDiPANDA up to the classifier: ``([Re || Im] [n, 2HC], per-layer (re,
  im))``."""
  re, im = x, (x if other_complex else np.zeros_like(x))
  h, states = None, []
  for l in range(layers):
    prev = (re, im)
    (re, im), h = _two_stage(
      sd,
      f"Chebs.{l}.",
      (re, im),
      h,
      node,
      edge,
      heads=heads,
      channels=channels,
      types1=types1,
      types2=types2,
      version=version,
      shared=shared,
      aux=aux,
      complex_=True,
      weight=weight,
    )
    mask = re >= 0
    re, im = re * mask, im * mask
    if l > 0:
      re, im = re + prev[0], im + prev[1]
    states.append((re, im))
  return np.concatenate([re, im], -1), states


def hgnn_forward(
  sd,
  x,
  node,
  edge,
  *,
  layers,
  heads,
  channels,
  types1,
  types2,
  version="v2",
  shared=True,
  aux=True,
):
  """HGNNPANDA up to the classifier: ``(x [n, HC], per-layer states)``."""
  h, states = None, []
  for l in range(layers):
    prev = x
    x, h = _two_stage(
      sd,
      f"Chebs.{l}.",
      x,
      h,
      node,
      edge,
      heads=heads,
      channels=channels,
      types1=types1,
      types2=types2,
      version=version,
      shared=shared,
      aux=aux,
    )
    x = np.maximum(x, 0)
    if l > 0:
      x = x + prev
    states.append(x)
  return x, states


def hypergcn_laplacian(members, feats, rv, n, mediators):
  """The reference's ``Laplacian``: ``D^{-1/2}(A + I)D^{-1/2}`` as a dense
  [n, n] matrix.

  Weights are accumulated in a dictionary per ordered pair (a self pair (v, v)
  from a singleton or a tie receives both of its updates), then ``+ I`` and the
  symmetric normalisation with ``d^{-1/2} = 0`` where ``d = 0`` (NaN where
  ``d < 0``, as numpy gives).
  """
  w = {}

  def add(a, b, v):
    w[(a, b)] = w.get((a, b), 0.0) + v

  for mem in members:
    mem = list(mem)
    p = feats[mem] @ rv
    se, ie = mem[int(np.argmax(p))], mem[int(np.argmin(p))]
    if mediators:
      c = 2 * len(mem) - 3
      add(se, ie, 1 / c)
      add(ie, se, 1 / c)
      for k in mem:
        if k != se and k != ie:
          for a, b in ((se, k), (ie, k), (k, se), (k, ie)):
            add(a, b, 1 / c)
    else:
      add(se, ie, 1 / len(mem))
      add(ie, se, 1 / len(mem))
  a = np.eye(n)
  for (u, v), x in w.items():
    a[u, v] += x
  d = a.sum(1)
  with np.errstate(divide="ignore", invalid="ignore"):
    dhi = d**-0.5
  dhi[np.isinf(dhi)] = 0.0
  return dhi[:, None] * a * dhi[None]


def hypergcn_forward(
  sd,
  x,
  members,
  *,
  layers,
  heads,
  channels,
  types,
  rv,
  fast,
  mediators,
  version="v2",
  shared=True,
  aux=True,
):
  """HyperGCNPANDA up to ``lin_out``: ``(H [n, HC], per-layer states)``.

  ``rv``: the random projection vectors (one of length F with ``fast``, else one
  per layer).
  """
  n = x.shape[0]
  fixed = hypergcn_laplacian(members, x, rv[0], n, mediators) if fast else None
  hcur, states = x, []
  for l in range(layers):
    pre = f"layers.{l}."
    hw = hcur @ sd[pre + "W"]
    a = fixed if fast else hypergcn_laplacian(members, hw, rv[l], n, mediators)
    # coalesced, sorted by row (receiver) then column (sender)
    rows, cols = np.nonzero(a)
    ew = a[rows, cols]
    st = Stage(
      sd,
      pre,
      heads=heads,
      channels=channels,
      types=types,
      version=version,
      shared=shared,
      aux=aux,
    )
    # target to source: receivers are edge_index[0] = rows, senders
    # edge_index[1] = cols
    alphas = []
    for t in types:
      if t == "gcn":
        alphas.append(ew[:, None])
      else:
        # grouped by sender
        alphas.append(st.attention(hw, hw, rows, cols, cols))
    alpha = st.mixture(alphas, st.feat(hw)[rows])
    sig = st.gate(st.feat(hw)[rows], st.feat(hw)[cols]) if aux else None
    xa = st.aux_x(hw) if aux else None
    out = st.propagate(hw, alpha, cols, rows, n, sig, xa)
    hcur = np.maximum(out + sd[pre + "bias"], 0)
    states.append(hcur)
  return hcur, states


def phenom_forward(
  sd,
  x,
  node,
  edge,
  *,
  heads,
  channels,
  types1,
  types2,
  steps,
  lam0,
  lam1,
  alp=0.0,
  h_setting=0,
  version="v2",
  shared=True,
  aux=True,
):
  """PhenomNNPANDA up to ``fcs[-1]`` (no dropout): ``(ReLU(Y) [n, HC], per-step
  Y)``."""
  pre = "midlayer.0."
  y0 = np.maximum(_lin(sd, pre + "fcs.0", x), 0)
  n, m = x.shape[0], int(edge.max()) + 1
  edge_deg = np.bincount(edge, minlength=m).astype(np.float64)
  kw = dict(
    heads=heads,
    channels=channels,
    version=version,
    shared=shared,
    aux=aux,
    gate_prior=True,
  )
  s1 = Stage(sd, pre + "convs.0.node_to_edge.", types=types1, **kw)
  s2 = Stage(sd, pre + "convs.0.edge_to_node.", types=types2, **kw)
  norms = {}
  for nm, en in (("beta", np.ones(m)), ("gamma", 1.0 / edge_deg)):
    node_deg = _scatter(en[edge] * edge_deg[edge], node, n) + 1.0
    norms[nm] = (node_deg**-0.5, en**-0.5)
  step = alp if alp != 0 else 1.0 / (1.0 + lam0 + lam1)
  hmat = {
    k: sd[pre + f"convs.0.H.{k}"]
    for k in ("beta", "gamma1", "gamma2")
    if pre + f"convs.0.H.{k}" in sd
  }
  y, feats, states = y0, {"beta": None, "gamma": None}, []
  for _ in range(steps):
    outs = {}
    for nm in ("beta", "gamma"):
      nn_, en_ = norms[nm]
      p1 = (nn_[node] * en_[edge])[:, None]
      p2 = (en_[edge] * nn_[node])[:, None]
      ef, d1 = s1(y, feats[nm], node, edge, p1, deg=np.ones_like(y))
      out, d2 = s2(ef, y, edge, node, p2, deg=d1)
      feats[nm] = ef
      outs[nm] = (out, d2.mean(-1))
    (ab, db), (ag, dg) = outs["beta"], outs["gamma"]
    q = lam0 * db + lam1 * dg + 1.0
    if h_setting == 0:
      y_hat = lam0 * ab + y0 + lam1 * ag
    elif h_setting == 2:
      y_hat = lam0 * (2 * ab - db[:, None] * y) + y0 + lam1 * ag
    else:
      h1, h2 = hmat["beta"], hmat["gamma1"]
      lg = dg[:, None] * y - ag
      b_term = ab @ (h1 + h1.T) - (db[:, None] * y) @ h1 @ h1.T
      g_term = lg + ag @ (h2 + h2.T) - (dg[:, None] * y) @ h2 @ h2.T
      if h_setting == 3:
        h3 = hmat["gamma2"]
        g_term = 0.5 * (g_term + ag @ (h3 + h3.T) - ag @ h3 @ h3.T)
      y_hat = lam0 * b_term + y0 + lam1 * g_term
    y = (1 - step) * y + step * (y_hat / q[:, None])
    states.append(y)
  return np.maximum(y, 0), states
