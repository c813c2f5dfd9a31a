"""Operators and kernels against dense float64 numpy references built from the
definitions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import hypergraph as hg


def _rand_directed(seed=0, n=12, m=7):
  rng = np.random.default_rng(seed)
  tails, heads = [], []
  for _e in range(m):
    mem = rng.choice(n, size=rng.integers(2, 6), replace=False)
    k = rng.integers(0, 2)
    tails.append(mem[:k].tolist())
    heads.append(mem[k:].tolist())
  return hg.from_directed_hyperedges(tails, heads, n)


def _dense_h(inc):
  h = np.zeros((inc.num_nodes, inc.num_edges), complex)
  for v, e, pr, pi in zip(
    *(np.asarray(a) for a in (inc.node, inc.edge, inc.phase_re, inc.phase_im))
  ):
    h[v, e] = pr + 1j * pi
  return h


def _qn(h):
  d, de = np.abs(h).sum(1), np.abs(h).sum(0)
  s = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-30)), 0)
  return np.diag(s) @ h @ np.diag(1 / de) @ h.conj().T @ np.diag(s)


def test_qn_hermitian_spectrum_and_segment_form():
  inc = _rand_directed()
  q = _qn(_dense_h(inc))
  np.testing.assert_allclose(q, q.conj().T, atol=1e-12)
  ev = np.linalg.eigvalsh(np.eye(q.shape[0]) - q)
  assert ev.min() > -1e-9 and ev.max() < 2 + 1e-9
  re, im = hg.gedi_operator(inc, variant="Q_N")
  np.testing.assert_allclose(re + 1j * im, q, atol=1e-12)
  x = np.random.default_rng(1).normal(size=(inc.num_nodes, 3))
  xi = np.random.default_rng(2).normal(size=(inc.num_nodes, 3))
  yr, yi = hg.gedi_propagate(
    inc, jnp.asarray(x, jnp.float32), jnp.asarray(xi, jnp.float32)
  )
  np.testing.assert_allclose(
    np.asarray(yr) + 1j * np.asarray(yi), q @ (x + 1j * xi), atol=1e-5
  )
  yr, yi = hg.gedi_propagate(
    inc, jnp.asarray(x, jnp.float32), None, conjugate=True
  )
  np.testing.assert_allclose(
    np.asarray(yr) + 1j * np.asarray(yi), q.conj() @ x, atol=1e-5
  )


def test_code_variant_l2():
  inc = _rand_directed(3)
  h = _dense_h(inc)
  d = np.abs(h).sum(1)
  a = h @ np.diag(1 / np.abs(h).sum(0)) @ h.conj().T
  s1 = 1 / np.sqrt(d + 1)
  s = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-30)), 0)
  l2 = np.diag(s1) @ (a - np.diag(np.diag(a))) @ np.diag(s1) + np.diag(
    s**2 * np.diag(a)
  )
  re, im = hg.gedi_operator(inc, variant="code")
  np.testing.assert_allclose(re + 1j * im, l2, atol=1e-12)
  x = np.random.default_rng(1).normal(size=(inc.num_nodes, 2))
  yr, yi = hg.gedi_propagate(
    inc, jnp.asarray(x, jnp.float32), None, variant=("code")
  )
  np.testing.assert_allclose(
    np.asarray(yr) + 1j * np.asarray(yi), l2 @ x, atol=1e-5
  )


def test_all_phases_one_gives_hgnn():
  inc = _rand_directed(4)
  und = hg.from_incidence_pairs(
    np.asarray(inc.node), np.asarray(inc.edge), inc.num_nodes, inc.num_edges
  )
  h = np.abs(_dense_h(inc))
  re, im = hg.gedi_operator(und, variant="Q_N")
  np.testing.assert_allclose(im, 0, atol=1e-12)
  np.testing.assert_allclose(re, _qn(h).real, atol=1e-12)
  np.testing.assert_allclose(hg.hgnn_operator(inc), _qn(h).real, atol=1e-12)
  x = (
    np.random.default_rng(0).normal(size=(inc.num_nodes, 4)).astype(np.float32)
  )
  np.testing.assert_allclose(
    hg.hgnn_propagate(inc, x), _qn(h).real @ x, atol=1e-5
  )


def test_phenom_operators_segment_form():
  inc = _rand_directed(5)
  b = (np.abs(_dense_h(inc)) > 0).astype(float)
  n = b.shape[0]
  core_g = b @ np.diag(1 / b.sum(0)) @ b.T + np.eye(n)
  dh = core_g.sum(1)
  a_g = core_g / np.sqrt(np.outer(dh, dh))
  _, ag, _, dg = hg.phenom_operators(inc)
  np.testing.assert_allclose(ag, a_g, atol=1e-12)
  np.testing.assert_allclose(dg, a_g.sum(1), atol=1e-12)
  x = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
  ab, ag, _, _ = hg.phenom_operators(inc)
  np.testing.assert_allclose(
    hg.phenom_propagate(inc, x, which="gamma"), ag @ x, atol=1e-5
  )
  np.testing.assert_allclose(
    hg.phenom_propagate(inc, x, which="beta"), ab @ x, atol=1e-5
  )


def test_segment_softmax_sums_and_guards():
  logits = jnp.array([[1.0], [2.0], [3.0], [0.5]])
  seg = jnp.array([0, 0, 2, 2])
  out = hg.segment_softmax(
    logits, seg, 4, mask=jnp.array([True, True, True, False])
  )
  np.testing.assert_allclose(
    out[:2, 0], np.exp([1, 2]) / np.exp([1, 2]).sum(), rtol=1e-6
  )
  np.testing.assert_allclose(out[2:, 0], [1.0, 0.0], atol=1e-7)
  assert np.all(np.isfinite(np.asarray(out)))
  big = hg.segment_softmax(jnp.array([1000.0, 999.0]), jnp.array([1, 1]), 3)
  np.testing.assert_allclose(big.sum(), 1.0, rtol=1e-6)
  with pytest.raises(ValueError, match="axis 0"):
    hg.segment_softmax(jnp.ones(3), jnp.zeros(2, jnp.int32), 1)


def test_hypergcn_graph_brute_force():
  inc = _rand_directed(6, n=10, m=6)
  und = hg.from_incidence_pairs(
    np.asarray(inc.node), np.asarray(inc.edge), 10, 6
  )
  rng = np.random.default_rng(0)
  p = rng.normal(size=10).astype(np.float32)
  s = rng.normal(size=(10, 3)).astype(np.float32)
  for mediators in (True, False):
    src, dst, w = hg.hypergcn_graph(und, jnp.asarray(p), mediators=mediators)
    a = np.zeros((10, 10))
    node, edge = np.asarray(und.node), np.asarray(und.edge)
    for e in range(6):
      mem = node[edge == e]
      i, j = mem[np.argmax(p[mem])], mem[np.argmin(p[mem])]
      # the reference Laplacian
      wt = 1 / (2 * len(mem) - 3) if mediators else 1 / len(mem)
      pairs = [(i, j)] + (
        [(i, k) for k in mem if k not in (i, j)]
        + [(j, k) for k in mem if k not in (i, j)]
        if mediators
        else []
      )
      for u, v in pairs:
        a[u, v] += wt
        a[v, u] += wt
    ai = a + np.eye(10)
    dd = ai.sum(1)
    abar = ai / np.sqrt(np.outer(dd, dd))
    np.testing.assert_allclose(
      hg.graph_propagate(src, dst, w, jnp.asarray(s), 10), abar @ s, atol=1e-5
    )


def test_padding_path_dummy_segment():
  inc = _rand_directed(7)
  padded, valid = hg.pad_incidence(inc, inc.nnz + 5)
  assert int(valid.sum()) == inc.nnz
  x = jnp.asarray(
    np.random.default_rng(0).normal(size=(inc.num_nodes + 1, 2)), jnp.float32
  )
  w = jnp.where(valid, padded.phase_re, 0.0)
  h = jax.ops.segment_sum(
    w[:, None] * x[padded.node], padded.edge, inc.num_edges + 1
  )[:-1]
  ref = jax.ops.segment_sum(
    inc.phase_re[:, None] * x[inc.node], inc.edge, inc.num_edges
  )
  np.testing.assert_allclose(h, ref, atol=1e-6)
  with pytest.raises(ValueError):
    hg.pad_incidence(inc, 1)
