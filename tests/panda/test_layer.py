"""PANDA stage/layer: the reduction to Q_N (float64 dense reference),
normalisation, equivariance."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda

FAST = panda.FAST_COMPILE


def _rand_directed(seed=0, n=11, m=6):
  rng = np.random.default_rng(seed)
  tails, heads = [], []
  for _ in range(m):
    mem = rng.choice(n, size=rng.integers(2, 6), replace=False)
    k = int(rng.integers(0, 3))
    tails.append(mem[:k].tolist())
    heads.append(mem[k:].tolist())
  return hg.from_directed_hyperedges(tails, heads, n)


def _dense_qn(inc, phases=True):
  """Q_N = D_v^{-1/2} H D_e^{-1} H^* D_v^{-1/2} from the definition (complex128)."""
  h = np.zeros((inc.num_nodes, inc.num_edges), complex)
  for v, e, pr, pi in zip(
    *(
      np.asarray(a, np.float64)
      for a in (inc.node, inc.edge, inc.phase_re, inc.phase_im)
    )
  ):
    h[int(v), int(e)] = (pr + 1j * pi) if phases else 1.0
  d, de = np.abs(h).sum(1), np.abs(h).sum(0)
  s = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-30)), 0)
  return s[:, None] * (h @ np.diag(1 / de) @ h.conj().T) * s[None]


def _layer_forward(layer, x, inc, priors, use_phase):
  gd, st = nnx.split(layer)

  def f(st, x, inc, priors):
    (yr, yi), hyp, aux = nnx.merge(gd, st)(
      (x, None), None, inc, priors, use_phase=use_phase
    )
    return yr, yi, aux

  out = jax.jit(f, compiler_options=FAST)(st, x, inc, priors)
  return jax.tree.map(np.asarray, out)


def test_reduction_gedi_layer_equals_qn_filter():
  """mix='prior', aux=None, 1 head, c_I = 1: X W_res + Q_N X W_u + b(1 + i) (the paper's claim).

  The bias enters Re and Im, as in the reference's GeDi+PANDA layer.
  """
  inc = _rand_directed()
  cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
  layer = panda.PandaLayer(
    3, 4, cfg, complex_features=True, i_complex=False, rngs=nnx.Rngs(0)
  )
  layer.bias[...] = jnp.arange(4.0) * 0.1
  x = (
    np.random.default_rng(1).normal(size=(inc.num_nodes, 3)).astype(np.float32)
  )
  yr, yi, _ = _layer_forward(
    layer, jnp.asarray(x), inc, panda.stage_priors(inc), True
  )
  wu = np.asarray(layer.w_u.kernel[...], np.float64)
  wr = np.asarray(layer.w_res.kernel[...], np.float64)
  ref = (
    x.astype(np.float64) @ wr
    + _dense_qn(inc) @ (x.astype(np.float64) @ wu)
    + 0.1 * np.arange(4) * (1 + 1j)
  )
  np.testing.assert_allclose(np.asarray(yr), ref.real, atol=2e-6)
  np.testing.assert_allclose(np.asarray(yi), ref.imag, atol=2e-6)
  assert np.abs(ref.imag).max() > 1e-2  # the directed part is really exercised


def test_reduction_hgnn_layer_equals_hgnn_operator():
  inc = hg.as_undirected(
    hg.make_data(
      _rand_directed(2),
      np.zeros((11, 1)),
      np.zeros(11, int),
      train_mask=np.ones(11, bool),
      val_mask=np.ones(11, bool),
      test_mask=np.ones(11, bool),
    )
  ).incidence
  cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
  layer = panda.PandaLayer(3, 5, cfg, rngs=nnx.Rngs(1))
  x = (
    np.random.default_rng(2).normal(size=(inc.num_nodes, 3)).astype(np.float32)
  )
  yr, yi, _ = _layer_forward(
    layer, jnp.asarray(x), inc, panda.stage_priors(inc), False
  )
  assert yi is None
  wu = np.asarray(layer.w_u.kernel[...], np.float64)
  wr = np.asarray(layer.w_res.kernel[...], np.float64)
  ref = x @ wr + _dense_qn(inc, phases=False).real @ (x @ wu)
  np.testing.assert_allclose(np.asarray(yr), ref, atol=2e-6)
  np.testing.assert_allclose(
    _dense_qn(inc, phases=False).real, hg.hgnn_operator(inc), atol=1e-12
  )


def test_attention_normalised_aux_not():
  inc = _rand_directed(3)
  cfg = panda.PandaConfig(heads=2)
  layer = panda.PandaLayer(
    3, 4, cfg, complex_features=True, i_complex=True, rngs=nnx.Rngs(2)
  )
  x = jnp.asarray(
    np.random.default_rng(3).normal(size=(inc.num_nodes, 3)), jnp.float32
  )
  _, _, (a1, a2) = _layer_forward(layer, x, inc, panda.stage_priors(inc), True)
  edge, node, perm = (np.asarray(a) for a in (inc.edge, inc.node, inc.by_node))
  seg = lambda v, ids, k: np.stack(
    [np.bincount(ids, v[:, h], minlength=k) for h in range(v.shape[1])], 1
  )
  np.testing.assert_allclose(seg(a1.att, edge, inc.num_edges), 1.0, rtol=1e-5)
  has = np.asarray(inc.deg_node) > 0
  s2 = seg(a2.att, node[perm], inc.num_nodes)
  np.testing.assert_allclose(s2[has], 1.0, rtol=1e-5)
  g1 = seg(a1.gate, edge, inc.num_edges)
  assert np.abs(g1 - 1.0).max() > 1e-2
  for a in (a1, a2):
    assert np.all((np.asarray(a.gate) > 0) & (np.asarray(a.gate) < 1))
    assert np.all(
      (np.asarray(a.alpha) >= 0) & (np.asarray(a.alpha) <= 1 + 1e-6)
    )
    np.testing.assert_allclose(np.asarray(a.pi).sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(  # alpha = pi_att * att + pi_prior * c
      a.alpha,
      a.pi[..., 1] * a.att
      + a.pi[..., 0]
      * (
        np.asarray(panda.stage_priors(inc)[0])[:, None]
        if a is a1
        else np.asarray(panda.stage_priors(inc)[1])[np.asarray(inc.by_node)][
          :, None
        ]
      ),
      rtol=1e-5,
    )


def test_stage_prior_aggregation_receivers_and_mask():
  """Featureless receivers = prior aggregation; masked pairs carry nothing."""
  cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
  stage = panda.PandaStage(2, cfg, rngs=nnx.Rngs(0))
  x = jnp.asarray([[[1.0, 2.0]], [[3.0, -1.0]], [[0.5, 0.5]]])
  send, recv = jnp.array([0, 1, 2]), jnp.array([0, 0, 1])
  prior = jnp.array([0.5, 0.25, 1.0])
  gd, st = nnx.split(stage)
  f = jax.jit(
    lambda st, x, m: nnx.merge(gd, st)(
      (x, None), None, send, recv, prior, None, 2, conj_phase=True, mask=m
    ),
    compiler_options=FAST,
  )
  (y, _), aux = f(st, x, jnp.array([True, True, False]))
  np.testing.assert_allclose(
    y[0, 0], 0.5 * np.array([1, 2]) + 0.25 * np.array([3, -1]), rtol=1e-6
  )
  np.testing.assert_allclose(y[1, 0], 0.0)
  np.testing.assert_allclose(aux.att[:2, 0].sum(), 1.0, rtol=1e-6)


def _permute(data, pn, pe):
  inc = data.incidence
  node, edge, ph = inc.to_numpy()
  inc2 = hg.from_incidence_pairs(
    pn[node],
    pe[edge],
    inc.num_nodes,
    inc.num_edges,
    phase=ph,
    allow_empty_edges=True,
  )
  inv = np.argsort(pn)
  x2 = np.asarray(data.x)[inv]
  return data.replace(incidence=inc2, x=jnp.asarray(x2), y=data.y[inv])


@pytest.mark.parametrize("backbone", ["gedi", "hgnn"])
def test_equivariance_under_relabelling(backbone):
  d = hg.make_synthetic(
    0,
    num_classes=3,
    nodes_per_class=8,
    n_intra=2,
    n_inter=2,
    size_range=(2, 4),
    features="gaussian",
    feature_dim=3,
    num_splits=1,
  )
  if backbone != "gedi":
    d = hg.as_undirected(d)
  model = panda.make_model(
    backbone,
    panda.PandaConfig(heads=2),
    in_features=3,
    num_classes=3,
    hidden=4,
    num_layers=2,
    rngs=nnx.Rngs(0),
  )
  gd, st = nnx.split(model)
  f = jax.jit(
    lambda st, data: nnx.merge(gd, st)(data, deterministic=True),
    compiler_options=FAST,
  )
  rng = np.random.default_rng(0)
  pn, pe = rng.permutation(d.num_nodes), rng.permutation(d.incidence.num_edges)
  out = np.asarray(f(st, d))
  out2 = np.asarray(f(st, _permute(d, pn, pe)))
  np.testing.assert_allclose(out2[pn], out, atol=1e-4)


def test_config_validation():
  with pytest.raises(ValueError, match="mix"):
    panda.PandaConfig(mix="nope")
  with pytest.raises(ValueError, match="aux"):
    panda.PandaConfig(aux="x")
  with pytest.raises(ValueError, match="fixed"):
    panda.PandaConfig(mix="fixed:2")
  with pytest.raises(ValueError, match="channels"):
    panda.PandaLayer(3, 0, panda.PandaConfig(heads=2), rngs=nnx.Rngs(0))
  with pytest.raises(ValueError, match="backbone"):
    panda.make_model(
      "gat", None, in_features=1, num_classes=2, rngs=nnx.Rngs(0)
    )
  with pytest.raises(TypeError, match="PandaConfig"):
    panda.make_model(
      "hgnn", {"heads": 2}, in_features=1, num_classes=2, rngs=nnx.Rngs(0)
    )


def test_fast_products_match_their_definitions_and_gradients():
  """``_scale`` (custom backward) and ``_head_dot`` against the plain formulas,
  float64."""
  from jax import test_util as jtu

  from jaxpapers.panda import _stage

  rng = np.random.default_rng(3)
  p, h, c = 7, 3, 5
  s = rng.normal(size=(p, h))
  x = rng.normal(size=(p, h, c))
  w_h = rng.normal(size=(h, c))
  w_1 = rng.normal(size=(c,))
  with jax.enable_x64(True):
    sj, xj = jnp.asarray(s), jnp.asarray(x)
    np.testing.assert_allclose(
      _stage._scale(sj, xj), s[..., None] * x, rtol=1e-12
    )
    np.testing.assert_allclose(
      _stage._head_dot(xj, jnp.asarray(w_h)),
      np.einsum("pha,ha->ph", x, w_h),
      rtol=1e-12,
    )
    np.testing.assert_allclose(
      _stage._head_dot(xj, jnp.asarray(w_1)),
      np.einsum("pha,a->ph", x, w_1),
      rtol=1e-12,
    )
    # The hand-written backward equals the derivative of the plain broadcast
    # product: a cotangent g gives ds = sum_c g x and dx = s g.
    g = rng.normal(size=(p, h, c))
    _, vjp = jax.vjp(_stage._scale, sj, xj)
    ds, dx = vjp(jnp.asarray(g))
    np.testing.assert_allclose(ds, (g * x).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(dx, s[..., None] * g, rtol=1e-12)
    jtu.check_grads(
      lambda w: _stage._head_dot(xj, w),
      (jnp.asarray(w_h),),
      order=1,
      modes=["rev"],
    )


@pytest.mark.parametrize("aux", ["diff-mlp", "same-mlp"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_stage_messages_and_coef_match_their_formulas(aux, symmetric):
  """y_r = sum_s m_sr against a float64 transcription from the returned alpha
  and gate.

  Non-symmetric: m = alpha x + (1 - alpha) g x~, coef = alpha + s (1 - alpha) g;
  symmetric: m = alpha (ReLU(g) x + ReLU(-g) x~), coef = alpha (ReLU(g) + s
  ReLU(-g)); x~ = W_aux x + b ('diff-mlp', real features) or -x ('same-mlp', s =
  -1).
  """
  rng = np.random.default_rng(7)
  s_n, r_n, p_n, h, c = 6, 4, 14, 2, 3
  send = jnp.asarray(rng.integers(0, s_n, p_n), jnp.int32)
  recv = jnp.asarray(np.sort(rng.integers(0, r_n, p_n)), jnp.int32)
  prior = jnp.asarray(rng.random(p_n), jnp.float32)
  x = jnp.asarray(rng.normal(size=(s_n, h, c)), jnp.float32)
  cfg = panda.PandaConfig(
    heads=h, aux=aux, symmetric_aux=symmetric, att_dropout=0.0
  )
  stage = panda.PandaStage(c, cfg, rngs=nnx.Rngs(1))
  (y, _), a = stage(
    (x, None), None, send, recv, prior, None, r_n, conj_phase=True
  )
  xs = np.asarray(x, np.float64)[np.asarray(send)]
  alpha, gate = (
    np.asarray(v, np.float64)[..., None] for v in (a.alpha, a.gate)
  )
  if aux == "same-mlp":
    xt, sgn = -xs, -1.0
  else:
    w, b = (np.asarray(v[...], np.float64) for v in (stage.w_aux, stage.b_aux))
    xt, sgn = (np.asarray(x, np.float64) @ w + b)[np.asarray(send)], 1.0
  if symmetric:
    pos, neg = np.maximum(gate, 0.0), np.maximum(-gate, 0.0)
    m, coef = alpha * (pos * xs + neg * xt), alpha * (pos + sgn * neg)
  else:
    m, coef = (
      alpha * xs + (1.0 - alpha) * gate * xt,
      alpha + sgn * (1.0 - alpha) * gate,
    )
  want = np.zeros((r_n, h, c))
  np.add.at(want, np.asarray(recv), m)
  np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(a.coef, coef[..., 0], rtol=1e-5, atol=1e-6)


def test_hidden_is_the_per_head_width_for_any_heads():
  """With PANDA, hidden is one head's width (the reference's heads * hidden
  layers): hidden=5 with 3 heads gives 15-wide layers, not a 5-wide layer split
  three ways; vanilla hidden is the width."""
  for backbone in ("hgnn", "gedi"):
    m = panda.make_model(
      backbone,
      panda.PandaConfig(heads=3),
      in_features=4,
      num_classes=2,
      hidden=5,
      rngs=nnx.Rngs(0),
    )
    assert m.layers[0].out == 15
  v = panda.make_model(
    "hgnn", None, in_features=4, num_classes=2, hidden=15, rngs=nnx.Rngs(0)
  )
  w = panda.make_model(
    "hgnn",
    panda.PandaConfig(heads=3),
    in_features=4,
    num_classes=2,
    hidden=5,
    rngs=nnx.Rngs(0),
  )
  # equal width: vanilla hidden = 3 * 5
  assert v.head.in_features == w.head.in_features == 15
