"""Container validation, builders, splits, generator and the restricted
unpickler."""

import io
import pickle

import numpy as np
import pytest

from jaxpapers import hypergraph as hg


def test_from_incidence_pairs_sorts_and_counts():
  inc = hg.from_incidence_pairs([2, 0, 1, 0], [1, 1, 0, 0], 3, 2)
  assert np.all(np.diff(np.asarray(inc.edge)) >= 0)
  np.testing.assert_array_equal(inc.deg_node, [2, 1, 1])
  np.testing.assert_array_equal(inc.deg_edge, [2, 2])
  node_sorted = np.asarray(inc.node)[np.asarray(inc.by_node)]
  assert np.all(np.diff(node_sorted) >= 0)
  assert inc.num_nodes == 3 and inc.num_edges == 2


@pytest.mark.parametrize(
  "kw,msg",
  [
    (dict(node=[0, 3], edge=[0, 0], n=3, m=1), "node indices"),
    (dict(node=[0, 1], edge=[0, 2], n=3, m=2), "edge indices"),
    (dict(node=[0, 1, 2], edge=[0, 0], n=3, m=1), "same length"),
    (dict(node=[0, 0], edge=[0, 0], n=3, m=1), "duplicate"),
    (dict(node=[0, 1], edge=[0, 0], n=3, m=2), "empty"),
  ],
)
def test_validation_errors(kw, msg):
  with pytest.raises(ValueError, match=msg):
    hg.from_incidence_pairs(
      np.array(kw["node"]), np.array(kw["edge"]), kw["n"], kw["m"]
    )


def test_empty_edges_allowed_when_asked():
  inc = hg.from_incidence_pairs(
    np.array([0]), np.array([0]), 2, 2, allow_empty_edges=True
  )
  assert inc.num_edges == 2 and float(inc.deg_edge[1]) == 0


def test_star_construction_by_hand():
  # 0->1, 0->2, 2->0, 1->1 (self-loop, dropped), duplicate 0->1
  inc = hg.from_directed_edges([0, 0, 2, 1, 0], [1, 2, 0, 1, 1], 3)
  h = inc.dense()
  # e0 = {0 tail, 1, 2}, e1 = {2 tail, 0}
  expect = np.array([[1j, 1], [1, 0], [1, 1j]])
  np.testing.assert_allclose(h, expect, atol=1e-7)
  inc2 = hg.from_directed_edges([0], [1], 2, phase_convention="dshn")
  np.testing.assert_allclose(inc2.dense()[:, 0], [-1j, 1], atol=1e-7)
  with pytest.raises(ValueError, match="phase_convention"):
    hg.from_directed_edges([0], [1], 2, phase_convention="x")


def test_directed_hyperedges_and_self_loops():
  inc = hg.from_directed_hyperedges([[0], []], [[1, 2], [2, 3]], 5)
  h = inc.dense()
  np.testing.assert_allclose(h[:, 0], [1j, 1, 1, 0, 0], atol=1e-7)
  np.testing.assert_allclose(h[:, 1], [0, 0, 1, 1, 0], atol=1e-7)
  inc2 = hg.add_self_loop_hyperedges(inc)
  assert inc2.num_edges == 2 + 5
  inc3 = hg.add_self_loop_hyperedges(inc2)
  assert inc3.num_edges == inc2.num_edges


def test_make_data_validation():
  inc = hg.from_hyperedges([[0, 1], [1, 2]], 3)
  m = np.ones(3, bool)
  with pytest.raises(ValueError, match="x must have shape"):
    hg.make_data(
      inc,
      np.ones((2, 1)),
      np.zeros(3, int),
      train_mask=m,
      val_mask=m,
      test_mask=m,
    )
  with pytest.raises(ValueError, match="labels"):
    hg.make_data(
      inc,
      np.ones((3, 1)),
      np.array([0, 1, 5]),
      train_mask=m,
      val_mask=m,
      test_mask=m,
      num_classes=2,
    )
  d = hg.make_data(
    inc,
    np.ones((3, 1)),
    np.array([0, 1, 1]),
    train_mask=m,
    val_mask=m,
    test_mask=m,
  )
  assert d.train_mask.shape == (1, 3) and d.num_classes == 2 and not d.directed


def test_random_splits():
  y = np.repeat(np.arange(4), 25)
  tr, va, te = hg.random_splits(
    y, 3, train=0.6, val=0.2, num_splits=5, per_class=True
  )
  assert tr.shape == (5, 100)
  np.testing.assert_array_equal(
    tr.astype(int) + va + te, np.ones((5, 100), int)
  )
  for c in range(4):
    assert tr[:, y == c].sum(1).tolist() == [15] * 5
  tr2, _, _ = hg.random_splits(
    y, 3, train=0.6, val=0.2, num_splits=5, per_class=True
  )
  np.testing.assert_array_equal(tr, tr2)
  assert not np.array_equal(tr[0], tr[1])
  with pytest.raises(ValueError):
    hg.random_splits(y, 0, train=0.9, val=0.2)


def test_make_synthetic_recipe():
  d = hg.make_synthetic(
    1, num_classes=3, nodes_per_class=20, n_intra=4, n_inter=2, num_splits=2
  )
  d2 = hg.make_synthetic(
    1, num_classes=3, nodes_per_class=20, n_intra=4, n_inter=2, num_splits=2
  )
  np.testing.assert_array_equal(d.incidence.node, d2.incidence.node)
  assert d.incidence.num_edges == 3 * 4 + 3 * 2
  y = np.asarray(d.y)
  node, edge, ph = d.incidence.to_numpy()
  for e in range(d.incidence.num_edges):
    mem, p = node[edge == e], ph[edge == e]
    if e < 12:
      assert len(set(y[mem])) == 1 and np.allclose(p, 1)
    else:
      tails, heads = mem[np.abs(p.imag) > 0.5], mem[np.abs(p.imag) < 0.5]
      assert (
        len(set(y[tails])) == 1
        and len(set(y[heads])) == 1
        and y[tails][0] < y[heads][0]
      )
  assert d.directed and d.x.shape == (60, 1)
  g = hg.make_synthetic(
    1, num_classes=3, nodes_per_class=20, features=("gaussian"), directed=False
  )
  assert g.x.shape == (60, 16) and not g.directed
  with pytest.raises(ValueError, match="size_range"):
    hg.make_synthetic(0, nodes_per_class=5, size_range=(3, 10))


def test_backbone_input_keeps_direction_for_gedi_only():
  d = hg.make_synthetic(
    2, num_classes=3, nodes_per_class=10, n_intra=3, n_inter=3, num_splits=1
  )
  node, edge, ph = d.incidence.to_numpy()
  # the input carries tail phases
  assert d.directed and np.abs(ph.imag).max() > 0.5
  assert hg.backbone_input("gedi", d) is d
  n, m = d.incidence.num_nodes, d.incidence.num_edges
  for b in ("hgnn", "hypergcn", "phenomnn"):
    u = hg.backbone_input(b, d)
    un, ue, up = u.incidence.to_numpy()
    assert not u.directed and np.allclose(up, 1)
    # the same memberships on the original hyperedges, then one self-loop
    # hyperedge per node
    assert u.incidence.num_edges == m + n
    keep = ue < m
    assert sorted(zip(un[keep], ue[keep])) == sorted(zip(node, edge))
    assert sorted(zip(un[~keep], ue[~keep] - m)) == [(v, v) for v in range(n)]
    np.testing.assert_array_equal(u.x, d.x)


class _Evil:
  def __reduce__(self):
    return (print, ("pwned",))


def test_restricted_unpickler_refuses_other_globals(tmp_path):
  p = tmp_path / "bad.pickle"
  p.write_bytes(pickle.dumps(_Evil()))
  with pytest.raises(pickle.UnpicklingError, match="not allowed"):
    hg.safe_load_pickle(p)
  ok = tmp_path / "ok.pickle"
  ok.write_bytes(pickle.dumps({"a": np.arange(3), "b": {1, 2}}))
  out = hg.safe_load_pickle(ok)
  np.testing.assert_array_equal(out["a"], [0, 1, 2])
  with pytest.raises(FileNotFoundError, match="missing"):
    hg.safe_load_pickle(tmp_path / "nope.pickle")
  with pytest.raises(pickle.UnpicklingError):
    hg.RestrictedUnpickler(
      io.BytesIO(pickle.dumps(np.random.default_rng(0)))
    ).load()
