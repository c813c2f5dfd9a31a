"""PANDA against float64 numpy transcriptions of the reference's definitions
(jainris/panda).

One test per place where a reimplementation is likely to drift from the
reference: weights shared across heads, the mixture MLP (LeakyReLU 0.2, no
bias), the gate's output bias, the auxiliary transform (ReLU for GeDi only), the
``[Re || Im]`` cut of complex features, the GeDi bias on both parts, HyperGCN's
coalesced graph and its sender-grouped attention, and PhenomNN's shared stage
pair with propagated degrees.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda

FAST = panda.FAST_COMPILE
f64 = np.float64


def _run(module, *args, **kw):
  """``module(*args, **kw)`` under one jit (eager dispatch of a whole model is
  slow)."""
  gd, st = nnx.split(module)
  return jax.jit(
    lambda st, *a: nnx.merge(gd, st)(*a, **kw), compiler_options=FAST
  )(st, *args)


def _lrelu(v, s=0.2):
  return np.where(v > 0, v, s * v)


def _softmax_groups(e, ids, k):
  out = np.zeros_like(e)
  for g in range(k):
    sel = ids == g
    if sel.any():
      z = np.exp(e[sel] - e[sel].max(0))
      out[sel] = z / z.sum(0)
  return out


def _np(p):
  return np.asarray(p[...], f64)


def _stage_reference(
  st, xr, xi, send, recv, prior, phase, num_recv, conj, layout_code=True
):
  """The reference's DualPathConv forward (aux 'diff-mlp', learned 'only-src'
  mixture), float64."""
  s_, h, c = xr.shape
  cx = xr + (0 if xi is None else 1j * xi)
  ph = np.ones(len(send)) if phase is None else phase[0] + 1j * phase[1]
  ph_msg = np.conj(ph) if conj else ph
  # receivers: prior aggregation with conj(phi) (stage 1)
  z = np.zeros((num_recv, h, c), complex)
  np.add.at(z, recv, (prior * np.conj(ph))[:, None, None] * cx[send])

  def feat(v):
    if xi is None:
      return v.real
    n = v.shape[0]
    if layout_code:
      return np.concatenate(
        [v.real.reshape(n, h * c), v.imag.reshape(n, h * c)], -1
      ).reshape(n, h, 2 * c)
    return np.concatenate([v.real, v.imag], -1)

  fs, fr = feat(cx), feat(z)
  wa, att = _np(st.w_att), _np(st.att)
  e = np.einsum("pha,ha->ph", _lrelu((fs @ wa)[send] + (fr @ wa)[recv]), att)
  a = _softmax_groups(e, recv, num_recv)
  logits = _lrelu(fs @ _np(st.w1)) @ _np(st.w2)
  pi = np.exp(logits - logits.max(-1, keepdims=True))
  pi = (pi / pi.sum(-1, keepdims=True))[send]
  alpha = pi[..., 1] * a + pi[..., 0] * prior[:, None]
  g = (
    np.maximum(
      (fs @ _np(st.u_s))[send] + (fr @ _np(st.u_r))[recv] + _np(st.b_g), 0
    )
  ) @ _np(st.w_o) + _np(st.b_o)
  g = 1 / (1 + np.exp(-g))
  act = (lambda v: np.maximum(v, 0)) if xi is not None else (lambda v: v)
  tr = act(cx.real) @ _np(st.w_aux) + _np(st.b_aux)
  ti = 0 if xi is None else act(cx.imag) @ _np(st.w_aux) + _np(st.b_aux)
  xt = tr + 1j * ti
  msg = alpha[..., None] * cx[send] + ((1 - alpha) * g)[..., None] * xt[send]
  y = np.zeros((num_recv, h, c), complex)
  np.add.at(y, recv, ph_msg[:, None, None] * msg)
  return y, alpha, g


def _randomise(stage, seed):
  """Non-zero biases so a missing bias shows up."""
  rng = np.random.default_rng(seed)
  for nm in ("b_g", "b_o", "b_aux"):
    p = getattr(stage, nm)
    p[...] = jnp.asarray(rng.normal(size=p[...].shape), jnp.float32)


def _rand_directed(seed=0, n=9, m=5):
  rng = np.random.default_rng(seed)
  tails, heads = [], []
  for _ in range(m):
    mem = rng.choice(n, size=rng.integers(2, 5), replace=False)
    k = int(rng.integers(0, 3))
    tails.append(mem[:k].tolist())
    heads.append(mem[k:].tolist())
  return hg.from_directed_hyperedges(tails, heads, n)


@pytest.mark.parametrize("complex_features", [True, False])
def test_stage_matches_reference_transcription(complex_features):
  """Shared weights over 2 heads, code layout, b_o, slope 0.2, no b2, aux ReLU
  only for GeDi."""
  inc = _rand_directed(1)
  h, c = 2, 3
  cfg = panda.PandaConfig(heads=h)
  stage = panda.PandaStage(
    c, cfg, complex_features=complex_features, rngs=nnx.Rngs(3)
  )
  _randomise(stage, 4)
  a_in = 2 * c if complex_features else c
  assert stage.w_att[...].shape == (a_in, a_in) and stage.att[...].shape == (
    h,
    a_in,
  )
  assert stage.w1[...].shape == (a_in, 8) and not hasattr(stage, "b2")
  rng = np.random.default_rng(5)
  xr = rng.normal(size=(inc.num_nodes, h, c)).astype(np.float32)
  xi = (
    rng.normal(size=xr.shape).astype(np.float32) if complex_features else None
  )
  prior = np.asarray(panda.stage_priors(inc)[0])
  phase = (
    (np.asarray(inc.phase_re), np.asarray(inc.phase_im))
    if complex_features
    else None
  )
  gd, st = nnx.split(stage)

  def f(st, xr, xi):
    return nnx.merge(gd, st)(
      (xr, xi),
      None,
      inc.node,
      inc.edge,
      prior,
      phase,
      inc.num_edges,
      conj_phase=True,
    )

  (yr, yi), aux = jax.jit(f, compiler_options=FAST)(st, xr, xi)
  y, alpha, g = _stage_reference(
    stage,
    xr.astype(f64),
    None if xi is None else xi.astype(f64),
    np.asarray(inc.node),
    np.asarray(inc.edge),
    prior.astype(f64),
    None if phase is None else tuple(p.astype(f64) for p in phase),
    inc.num_edges,
    conj=True,
  )
  np.testing.assert_allclose(np.asarray(aux.alpha), alpha, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(np.asarray(aux.gate), g, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(
    np.asarray(aux.coef), alpha + (1 - alpha) * g, rtol=2e-5
  )
  np.testing.assert_allclose(np.asarray(yr), y.real, rtol=2e-4, atol=2e-5)
  if complex_features:
    np.testing.assert_allclose(np.asarray(yi), y.imag, rtol=2e-4, atol=2e-5)


def test_heads_share_weights_and_widen_the_layer():
  """Only the attention vector grows with heads; a layer is heads x channels
  wide."""

  def count(m):
    return sum(x.size for x in jax.tree.leaves(nnx.state(m, nnx.Param)))

  one = panda.PandaStage(4, panda.PandaConfig(heads=1), rngs=nnx.Rngs(0))
  four = panda.PandaStage(4, panda.PandaConfig(heads=4), rngs=nnx.Rngs(0))
  assert count(four) - count(one) == 3 * 4
  layer = panda.PandaLayer(3, 5, panda.PandaConfig(heads=4), rngs=nnx.Rngs(0))
  assert layer.w_u.kernel[...].shape == (3, 20)


def test_reference_defaults():
  """i_complex False, attention dropout = feature dropout, GATv2 for
  HyperGCN."""
  assert panda.PandaConfig().att_dropout is None
  kw = dict(
    in_features=3, num_classes=2, hidden=4, dropout=0.3, rngs=nnx.Rngs(0)
  )
  gedi = panda.make_model("gedi", panda.PandaConfig(), **kw)
  assert (
    gedi.layers[0].i_complex is False and gedi.layers[0].stage1.drop.rate == 0.3
  )
  assert hg.GeDiHNN(3, 2, rngs=nnx.Rngs(0)).i_complex is False
  hgcn = panda.make_model("hypergcn", panda.PandaConfig(), **kw)
  assert (
    hgcn.stages[0].cfg.att_version == "v2" and hgcn.stages[0].drop.rate == 0.3
  )
  assert not hasattr(hgcn, "w_res")
  assert panda.PandaConfig(att_dropout=0.1).with_dropout(0.5).att_dropout == 0.1


def test_gedi_bias_on_both_parts():
  """Vanilla GeDi layer: zero filters leave b + i b (the reference adds b to Re
  and Im)."""
  inc = _rand_directed(2)
  y = np.zeros(inc.num_nodes, int)
  m = np.ones(inc.num_nodes, bool)
  data = hg.make_data(
    inc, np.ones((inc.num_nodes, 2)), y, train_mask=m, val_mask=m, test_mask=m
  )
  model = hg.GeDiHNN(2, 2, hidden=3, dropout=0.0, rngs=nnx.Rngs(0))
  for t in (model.theta0[0], model.theta1[0]):
    t.kernel[...] = jnp.zeros_like(t.kernel[...])
  b = jnp.asarray([0.5, 1.0, 2.0])
  model.bias[0][...] = b
  out = np.asarray(_run(model, data))
  want = np.asarray(
    model.head(
      jnp.tile(jnp.concatenate([b, b])[None], (inc.num_nodes, 1)),
      deterministic=True,
    )
  )
  np.testing.assert_allclose(out, want, rtol=1e-5)


# --------------------------------------------------------------------- HyperGCN


def _hypergcn_dense(members, p, n, mediators):
  """The reference's ``Laplacian``: weights summed per pair, + I, symmetric
  normalisation."""
  w = {}
  for mem in members:
    mem = list(mem)
    s, i = mem[int(np.argmax(p[mem]))], mem[int(np.argmin(p[mem]))]
    c = 2 * len(mem) - 3
    pairs = [(s, i), (i, s)]
    if mediators:
      pairs += [
        q
        for k in mem
        if k not in (s, i)
        for q in ((s, k), (i, k), (k, s), (k, i))
      ]
      wt = 1 / c
    else:
      wt = 1 / len(mem)
    for q in pairs:
      w[q] = w.get(q, 0.0) + wt
  a = np.eye(n)
  for (u, v), x in w.items():
    a[u, v] += x
  d = a.sum(1) ** -0.5
  return d[:, None] * a * d[None]


MEMBERS = [[0, 1, 2], [1, 2, 3, 4], [0, 4], [2, 3, 5], [5, 6, 0, 1], [3, 6]]


@pytest.mark.parametrize("mediators", [True, False])
def test_coalesced_graph_matches_reference_laplacian(mediators):
  inc = hg.from_hyperedges(MEMBERS, 7)
  p = np.random.default_rng(0).normal(size=7).astype(np.float32)
  graph = jax.jit(lambda p: panda.coalesced_graph(inc, p, mediators=mediators))
  snd, rcv, prior, mask = (np.asarray(a) for a in graph(p))
  ref = _hypergcn_dense(MEMBERS, p.astype(f64), 7, mediators)
  got = np.zeros((7, 7))
  np.add.at(got, (rcv[mask], snd[mask]), prior[mask])
  np.testing.assert_allclose(got, ref, atol=1e-6)
  # each pair once: duplicates merged
  assert mask.sum() == np.count_nonzero(ref)
  assert np.all(np.diff(rcv) >= 0)


def test_hypergcn_prior_reduction_and_sender_softmax():
  """mix='prior', aux=None: logits = head(ReLU(A_bar X W + b)) with the dense
  reference A_bar."""
  inc = hg.from_hyperedges(MEMBERS, 7)
  rng = np.random.default_rng(1)
  x = rng.normal(size=(7, 3)).astype(np.float32)
  m = np.ones(7, bool)
  data = hg.make_data(
    inc, x, np.zeros(7, int), train_mask=m, val_mask=m, test_mask=m
  )
  cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
  model = panda.PandaHyperGCN(
    3, 2, cfg, hidden=4, dropout=0.0, mediators=True, rngs=nnx.Rngs(2)
  )
  model.bias[0][...] = jnp.asarray(rng.normal(size=4), jnp.float32)
  out = _run(model, data)
  s = x.astype(f64) @ _np(model.w_u[0].kernel)
  a_bar = _hypergcn_dense(MEMBERS, s @ _np(model.r[0]), 7, True)
  h = np.maximum(a_bar @ s + _np(model.bias[0]), 0)
  np.testing.assert_allclose(
    np.asarray(out),
    np.asarray(model.head(jnp.asarray(h, jnp.float32), deterministic=True)),
    rtol=1e-4,
    atol=1e-5,
  )
  # default flow: attention normalised over the pairs that share a sender (the
  # reference)
  full = panda.PandaHyperGCN(
    3, 2, panda.PandaConfig(heads=2), hidden=2, rngs=nnx.Rngs(3)
  )
  _, auxes = _run(full, data, return_aux=True)
  xs = x @ np.asarray(full.w_u[0].kernel[...])
  snd, _, _, mk = (
    np.asarray(a)
    for a in panda.coalesced_graph(
      inc, xs @ np.asarray(full.r[0][...]), mediators=full.mediators
    )
  )
  att = np.asarray(auxes[0].att)
  sums = np.stack(
    [np.bincount(snd[mk], att[mk, k], minlength=7) for k in range(2)], 1
  )
  np.testing.assert_allclose(sums, 1.0, rtol=1e-5)


def test_hypergcn_graph_weight_without_mediators_is_one_over_size():
  inc = hg.from_hyperedges(MEMBERS, 7)
  p = jnp.asarray(np.random.default_rng(0).normal(size=7), jnp.float32)
  _, _, w = jax.jit(lambda p: hg.hypergcn_graph(inc, p, mediators=False))(p)
  np.testing.assert_allclose(
    np.asarray(w), [1 / len(m) for m in MEMBERS], rtol=1e-6
  )


# --------------------------------------------------------------------- PhenomNN


@pytest.mark.parametrize("gamma_edge", ["code", "inverse"])
def test_phenomnn_prior_reduction_matches_dense(gamma_edge):
  """mix='prior', aux=None: one shared stage pair for A_beta and A_gamma,
  degrees propagated."""
  inc = hg.from_hyperedges(MEMBERS, 7)
  rng = np.random.default_rng(4)
  x = rng.normal(size=(7, 3)).astype(np.float32)
  m = np.ones(7, bool)
  data = hg.make_data(
    inc, x, np.zeros(7, int), train_mask=m, val_mask=m, test_mask=m
  )
  cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
  lam0, lam1, steps = 2.0, 3.0, 3
  model = panda.PandaPhenomNN(
    3,
    2,
    cfg,
    hidden=4,
    dropout=0.0,
    lam0=lam0,
    lam1=lam1,
    num_steps=steps,
    gamma_edge=gamma_edge,
    rngs=nnx.Rngs(5),
  )
  out = np.asarray(_run(model, data))
  b = np.zeros((7, len(MEMBERS)))
  for e, mem in enumerate(MEMBERS):
    b[mem, e] = 1.0
  size = b.sum(0)
  sb = (b @ size + 1) ** -0.5
  p_beta = sb[:, None] * (b @ b.T) * sb[None]
  sg = (b.sum(1) + 1) ** -0.5
  we = size if gamma_edge == "code" else 1 / size
  p_gamma = sg[:, None] * (b @ np.diag(we) @ b.T) * sg[None]
  y0 = np.maximum(
    x.astype(f64) @ _np(model.inp.kernel) + _np(model.inp.bias), 0
  )
  q = lam0 * p_beta.sum(1) + lam1 * p_gamma.sum(1) + 1
  a = 1 / (1 + lam0 + lam1)
  y = y0
  for _ in range(steps):
    y = (1 - a) * y + a * (lam0 * p_beta @ y + lam1 * p_gamma @ y + y0) / q[
      :, None
    ]
  want = np.asarray(
    model.head(jnp.asarray(np.maximum(y, 0), jnp.float32), deterministic=True)
  )
  np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------- the README table


def _difference_rows():
  """``{what: row text}`` of the README's differences-from-the-reference
  table."""
  import pathlib

  text = (
    pathlib.Path(__file__).parents[2] / "experiments" / "panda" / "README.md"
  ).read_text()
  table = text.split("## Differences from the reference", 1)[1].split(
    "\n## ", 1
  )[0]
  rows = {}
  for line in table.splitlines():
    if (
      line.startswith("| ")
      and not line.startswith("| what")
      and "---" not in line
    ):
      cells = [c.strip() for c in line.strip("|").split("|")]
      rows[cells[0]] = line
  return rows


def test_differences_table_matches_the_code_defaults():
  """Each default-value row of the table states the value the code has (and no
  matched item is still listed as different)."""
  import inspect

  from experiments.panda.configs import default

  rows = _difference_rows()

  def default_of(cls, name):
    return inspect.signature(cls.__init__).parameters[name].default

  for cls in (panda.PandaHyperGCN, hg.HyperGCN):
    assert f"`fast={default_of(cls, 'fast')}` in both arms" in rows["HyperGCN"]
    # the reference's training-script default
    assert default_of(cls, "mediators") is False
  cfg = panda.PandaConfig()
  row = rows["attention"]
  assert (
    f"`mix='{cfg.mix}'`" in row
    and f"`stage1_receivers='{cfg.stage1_receivers}'`" in row
  )
  assert (
    cfg.att_version == "v2"
    and cfg.shared_att_weights
    and "GATv2, shared weights" in row
  )
  c = default.get_config()
  runs = rows["datasets, splits, PhenomNN steps"]
  assert (
    f"default: the four small shared sets, {c.num_splits} splits, "
    f"{c.phenom_steps} steps"
  ) in runs
  budget = rows["tuning budget"]
  assert (
    f"hidden {c.hidden}, {c.num_layers} layer, {c.heads} head, "
    f"dropout {c.dropout}"
  ) in budget
  assert f"{c.epochs} epochs" in budget
  for matched in (
    "HyperGCN singleton hyperedges",
    "PhenomNN `H` matrices (`args.H`)",
    "HyperGCN mediators (default)",
  ):
    assert matched not in rows
  # matched options keep the tuner's first value
  for cls in (panda.PandaPhenomNN, hg.PhenomNN):
    assert default_of(cls, "alp") == 0.0 and default_of(cls, "h_setting") == 0
  assert default_of(panda.PandaGeDi, "other_complex") is False
  assert panda.PandaConfig().init == "reference"


def test_coalescing_paths_agree():
  """The int32-key path (sort the keys alone, binary search) equals the two-key
  sort."""
  from jaxpapers.panda._models import _coalesce

  rng = np.random.default_rng(3)
  n, p = 7, 40
  rcv = jnp.asarray(rng.integers(0, n, p), jnp.int32)
  snd = jnp.asarray(rng.integers(0, n, p), jnp.int32)
  ww = jnp.asarray(rng.normal(size=p), jnp.float32)
  used = jnp.asarray(rng.random(p) < 0.8)
  a = _coalesce(rcv, snd, ww, used, n, int32_keys=True)
  b = _coalesce(rcv, snd, ww, used, n, int32_keys=False)
  for x, y in zip(a[:2] + a[3:], b[:2] + b[3:]):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  keep = np.asarray(a[3] & a[4])
  np.testing.assert_allclose(
    np.asarray(a[2])[keep], np.asarray(b[2])[keep], rtol=1e-6
  )
  want = {}
  for r, s, w, u in zip(*(np.asarray(v) for v in (rcv, snd, ww, used))):
    if u:
      want[(r, s)] = want.get((r, s), 0.0) + w
  got = {
    (r, s): w
    for r, s, w in zip(*(np.asarray(v)[keep] for v in (a[0], a[1], a[2])))
  }
  assert set(got) == set(want)
  np.testing.assert_allclose(
    [got[k] for k in want], list(want.values()), rtol=1e-5
  )
