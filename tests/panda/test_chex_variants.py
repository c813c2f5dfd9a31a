"""PANDA layers and a whole model, jitted and eager, against dense float64
operators.

Layers run through ``nnx.split`` / ``nnx.merge`` in a pure wrapper: the graph
definition and ``use_phase`` are closed over, the parameters, signal, incidence
and priors are traced.
"""

import chex
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda
from tests.panda.test_layer import _dense_qn, _rand_directed


def _pure_layer(layer, use_phase):
  graphdef, state = nnx.split(layer)

  def forward(state, x, inc, priors):
    (yr, yi), _, _ = nnx.merge(graphdef, state)(
      (x, None), None, inc, priors, use_phase=use_phase
    )
    return yr, yi

  return forward, state


class LayerTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_prior_only_gedi_layer_is_the_qn_filter(self):
    """mix='prior', no aux, 1 head: X W_res + Q_N X W_u + b (1 + i)."""
    inc = _rand_directed(91, n=9, m=5)
    cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
    layer = panda.PandaLayer(
      3, 4, cfg, complex_features=True, i_complex=False, rngs=nnx.Rngs(0)
    )
    layer.bias[...] = jnp.arange(4.0) * 0.1
    forward, state = _pure_layer(layer, True)
    x = (
      np.random.default_rng(92)
      .normal(size=(inc.num_nodes, 3))
      .astype(np.float32)
    )
    yr, yi = self.variant(forward)(
      state, x, inc, panda.stage_priors(inc, dtype=np.float32)
    )
    wu = np.asarray(layer.w_u.kernel[...]).astype(np.float64)
    wr = np.asarray(layer.w_res.kernel[...]).astype(np.float64)
    x64 = x.astype(np.float64)
    want = (
      x64 @ wr + _dense_qn(inc) @ (x64 @ wu) + 0.1 * np.arange(4) * (1 + 1j)
    )
    chex.assert_shape([yr, yi], [(inc.num_nodes, 4)] * 2)
    chex.assert_trees_all_close(
      (yr, yi),
      (want.real.astype(np.float32), want.imag.astype(np.float32)),
      atol=2e-6,
    )
    self.assertGreater(np.abs(want.imag).max(), 1e-2)


class ModelTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_eval_step_of_a_one_layer_hgnn_panda_model(self):
    """Prior-only PANDA-HGNN, one layer: logits = ReLU(X W_res + Q X W_u + b) W_c + b_c."""
    members = [[0, 1, 2], [1, 3], [2, 3, 4, 5], [5, 6], [0, 6]]
    inc = hg.from_hyperedges(members, 7)
    rng = np.random.default_rng(95)
    x = rng.normal(size=(7, 3)).astype(np.float32)
    ones = np.ones(7, bool)
    data = hg.make_data(
      inc,
      x,
      rng.integers(0, 2, 7),
      train_mask=ones,
      val_mask=ones,
      test_mask=ones,
    )
    cfg = panda.PandaConfig(heads=1, mix="prior", aux=None)
    model = panda.make_model(
      "hgnn",
      cfg,
      in_features=3,
      num_classes=2,
      hidden=4,
      num_layers=1,
      dropout=0.0,
      rngs=nnx.Rngs(params=0),
    )
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    logits = self.variant(lambda p, r, d: panda.eval_step(graphdef, p, r, d))(
      params, rest, data
    )
    chex.assert_shape(logits, (7, 2))
    self.assertTrue(np.all(np.isfinite(np.asarray(logits))))

    # Independent forward: the dense HGNN operator, the layer's and the head's
    # own weights.
    def w(p):
      return np.asarray(p[...]).astype(np.float64)

    layer, head = model.layers[0], model.head
    x64 = x.astype(np.float64)
    h = x64 @ w(layer.w_res.kernel) + hg.hgnn_operator(inc) @ (
      x64 @ w(layer.w_u.kernel)
    )
    h = np.maximum(h + w(layer.bias), 0.0)
    z = h @ w(head.fc1.kernel) + w(head.fc1.bias)
    mu, var = z.mean(-1, keepdims=True), z.var(-1, keepdims=True)
    z = (z - mu) / np.sqrt(var + head.norm.epsilon) * w(head.norm.scale) + w(
      head.norm.bias
    )
    want = np.maximum(z, 0.0) @ w(head.fc2.kernel) + w(head.fc2.bias)
    chex.assert_trees_all_close(logits, want.astype(np.float32), atol=2e-5)


if __name__ == "__main__":
  absltest.main()
