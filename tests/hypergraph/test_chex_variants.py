"""Hypergraph operators, jitted and eager, against dense float64 operators from
the definitions.

The :class:`Incidence` pytree is traced (its sizes are static fields); the
operator variant, the conjugation flag and segment counts are static and closed
over.
"""

import functools

import chex
import numpy as np
from absl.testing import absltest, parameterized

from jaxpapers import hypergraph as hg
from tests.hypergraph.test_ops import _dense_h, _qn, _rand_directed

RNG = np.random.default_rng(81)


def _l2(h):
  """The reference's ``L2`` (GeDi's 'code' variant) from its definition."""
  d = np.abs(h).sum(1)
  a = h @ np.diag(1 / np.abs(h).sum(0)) @ h.conj().T
  s1 = 1 / np.sqrt(d + 1)
  s = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-30)), 0)
  return np.diag(s1) @ (a - np.diag(np.diag(a))) @ np.diag(s1) + np.diag(
    s**2 * np.diag(a)
  )


class PropagateTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(
    ("q_n", "Q_N", False),
    ("q_n_conjugate", "Q_N", True),
    ("code", "code", False),
  )
  def test_gedi_propagate_applies_the_dense_operator(self, variant, conjugate):
    inc = _rand_directed(82, n=9, m=5)
    h = _dense_h(inc)
    op = _qn(h) if variant == "Q_N" else _l2(h)
    op = op.conj() if conjugate else op
    x, xi = RNG.normal(size=(2, inc.num_nodes, 3))
    fn = functools.partial(
      hg.gedi_propagate, variant=variant, conjugate=conjugate
    )
    yr, yi = self.variant(fn)(inc, x.astype(np.float32), xi.astype(np.float32))
    chex.assert_shape([yr, yi], [(inc.num_nodes, 3)] * 2)
    want = op @ (x + 1j * xi)
    chex.assert_trees_all_close(
      (yr, yi),
      (want.real.astype(np.float32), want.imag.astype(np.float32)),
      atol=1e-5,
    )
    self.assertGreater(np.abs(want.imag).max(), 1e-2)  # the phases really enter

  @chex.variants(with_jit=True, without_jit=True)
  def test_hgnn_and_phenom_propagate(self):
    inc = _rand_directed(83, n=9, m=5)
    b = (np.abs(_dense_h(inc)) > 0).astype(np.float64)
    x = RNG.normal(size=(inc.num_nodes, 4)).astype(np.float32)
    got = self.variant(hg.hgnn_propagate)(inc, x)
    chex.assert_trees_all_close(
      got, (_qn(b).real @ x).astype(np.float32), atol=1e-5
    )
    n = b.shape[0]
    for which, core in (
      ("beta", b @ b.T + np.eye(n)),
      ("gamma", b @ np.diag(1 / b.sum(0)) @ b.T + np.eye(n)),
    ):
      dh = core.sum(1)
      a = core / np.sqrt(np.outer(dh, dh))
      got = self.variant(functools.partial(hg.phenom_propagate, which=which))(
        inc, x
      )
      chex.assert_trees_all_close(got, (a @ x).astype(np.float32), atol=1e-5)


class KernelsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_segment_softmax_with_a_mask_and_an_empty_segment(self):
    logits = RNG.normal(size=(7, 2)).astype(np.float32)
    seg = np.array([0, 0, 0, 2, 2, 3, 3], np.int32)
    mask = np.array([True, True, False, True, True, True, False])
    fn = functools.partial(hg.segment_softmax, num_segments=5)
    got = self.variant(fn)(logits, seg, mask=mask)
    want = np.zeros((7, 2))
    for s in range(5):
      rows = np.nonzero((seg == s) & mask)[0]
      if rows.size:
        e = np.exp(logits[rows].astype(np.float64))
        want[rows] = e / e.sum(0)
    chex.assert_shape(got, (7, 2))
    chex.assert_trees_all_close(got, want.astype(np.float32), atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_graph_propagate_is_the_normalised_adjacency(self):
    src = np.array([0, 1, 2, 4, 3], np.int32)
    # (4, 4): a self pair, counted twice
    dst = np.array([1, 2, 0, 4, 1], np.int32)
    w = np.array([0.5, 1.0, 2.0, 0.3, 1.5], np.float32)
    x = RNG.normal(size=(6, 3)).astype(np.float32)  # node 5 is isolated
    a = np.eye(6)
    for s, d, wt in zip(src, dst, w):
      a[s, d] += wt
      a[d, s] += wt
    dd = a.sum(1)
    want = a / np.sqrt(np.outer(dd, dd)) @ x
    got = self.variant(functools.partial(hg.graph_propagate, num_nodes=6))(
      src, dst, w, x
    )
    chex.assert_trees_all_close(got, want.astype(np.float32), atol=1e-5)


if __name__ == "__main__":
  absltest.main()


class StagesAndComplexTest(chex.TestCase):
  """The two message-passing stages and the complex helpers, against dense
  float64 algebra."""

  @chex.variants(with_jit=True, without_jit=True)
  def test_node_to_edge_and_edge_to_node_are_h_conj_transpose_and_h(self):
    inc = _rand_directed(84, n=8, m=5)
    h = _dense_h(inc)  # [n, m] complex H_ve
    x = RNG.normal(size=(2, inc.num_nodes, 3))
    e = RNG.normal(size=(2, inc.num_edges, 3))
    f32 = lambda a: a.astype(np.float32)
    got = self.variant(hg.node_to_edge)(inc, f32(x[0]), f32(x[1]))
    want = h.conj().T @ (x[0] + 1j * x[1])
    chex.assert_trees_all_close(
      got, (f32(want.real), f32(want.imag)), atol=1e-5
    )
    got = self.variant(hg.edge_to_node)(inc, f32(e[0]), f32(e[1]))
    want = h @ (e[0] + 1j * e[1])
    chex.assert_trees_all_close(
      got, (f32(want.real), f32(want.imag)), atol=1e-5
    )
    # Without phases both stages are the 0/1 incidence matrix B and B^T on a
    # real signal.
    b = (np.abs(h) > 0).astype(np.float64)
    stage1 = functools.partial(hg.node_to_edge, use_phase=False)
    re, im = self.variant(stage1)(inc, f32(x[0]))
    self.assertIsNone(im)
    chex.assert_trees_all_close(re, f32(b.T @ x[0]), atol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_complex_helpers_match_numpy_complex_arithmetic(self):
    a = RNG.normal(size=(2, 4, 3))
    b = RNG.normal(size=(2, 4, 3))
    f32 = lambda v: v.astype(np.float32)
    za, zb = a[0] + 1j * a[1], b[0] + 1j * b[1]
    got = self.variant(hg.cmul)(f32(a[0]), f32(a[1]), f32(b[0]), f32(b[1]))
    chex.assert_trees_all_close(
      got, (f32((za * zb).real), f32((za * zb).imag)), atol=1e-5
    )
    re, im = self.variant(lambda x, y: hg.cmul(x, None, y, None))(
      f32(a[0]), f32(b[0])
    )
    self.assertIsNone(im)
    chex.assert_trees_all_close(re, f32(a[0] * b[0]), atol=1e-6)
    got = self.variant(functools.partial(hg.complex_unit_mul, i_complex=True))(
      f32(a[0]), f32(a[1])
    )
    chex.assert_trees_all_close(
      got, (f32((za * (1 + 1j)).real), f32((za * (1 + 1j)).imag))
    )
    mask = a[0] >= 0
    got = self.variant(hg.complex_relu)(f32(a[0]), f32(a[1]))
    chex.assert_trees_all_close(got, (f32(a[0] * mask), f32(a[1] * mask)))
    d = np.array([0.0, 1.0, 4.0, 2.5], np.float32)
    want = np.array([0.0, 1.0, 0.5, 1 / np.sqrt(2.5)], np.float32)
    chex.assert_trees_all_close(self.variant(hg.inv_sqrt)(d), want, rtol=1e-6)
