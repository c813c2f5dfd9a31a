"""Loaders on the real files reproduce the statistics in the spec.

When the shared data folder is absent these tests skip, saying so, outside CI
and fail in CI (see tests/resources.py).
"""

import numpy as np
import pytest

from jaxpapers import core
from jaxpapers import hypergraph as hg
from tests import resources

_MISSING = resources.hypergraph_data_missing()
DATA = None if _MISSING else core.resolve_data_dir(subdir="hypergraph")


@pytest.fixture
def _hypergraph_data():
  resources.require(_MISSING)


needs_data = pytest.mark.usefixtures("_hypergraph_data")

# name -> (nodes, hyperedges, incidences, max size or None, classes, class
# counts or None)
EXPECTED = {
  "email-Enron": (143, 139, 2722, 78, 7, None),
  "email-EU": (986, 787, 34123, 294, 10, None),
  "telegram": (245, 183, 9095, 148, 4, None),
  "chameleon": (890, 797, 9651, None, 5, [242, 134, 209, 164, 141]),
  "chameleon-directed": (890, 888, 14422, None, 5, [242, 134, 209, 164, 141]),
  "texas": (183, 102, 381, None, 5, [33, 1, 18, 101, 30]),
  "cornell": (183, 102, 379, None, 5, [38, 16, 30, 82, 17]),
  "inter10": (500, 250, None, None, 5, [100] * 5),
  "inter30": (500, 450, None, None, 5, [100] * 5),
  "inter50": (500, 650, None, None, 5, [100] * 5),
}


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loader_statistics(name):
  d = hg.load(name, DATA)
  n, m, nnz, mx, k, counts = EXPECTED[name]
  s = d.summary()
  assert (s["nodes"], s["hyperedges"], s["classes"]) == (n, m, k)
  if nnz is not None:
    assert s["incidences"] == nnz
  if mx is not None:
    assert s["max_edge_size"] == mx
  if counts is not None:
    assert np.bincount(np.asarray(d.y)).tolist() == counts
  assert d.directed and d.num_splits == 10
  tr, va, te = (np.asarray(a) for a in (d.train_mask, d.val_mask, d.test_mask))
  assert not np.any(tr & va) and not np.any(tr & te) and not np.any(va & te)


@needs_data
def test_mail_splits_are_random_50_25_25():
  """Mail (and co-citation) use the reference's 50/25/25 over all nodes, not
  stratified."""
  d = hg.load("email-Enron", DATA, split_seed=0, num_splits=2)
  y = np.asarray(d.y)
  want = hg.random_splits(
    y, 0, train=0.5, val=0.25, num_splits=2, per_class=False
  )
  for got, ref in zip((d.train_mask, d.val_mask, d.test_mask), want):
    np.testing.assert_array_equal(np.asarray(got), ref)
  assert np.asarray(d.train_mask).sum(1).tolist() == [72, 72]


@needs_data
def test_mail_raw_edge_counts():
  e = np.asarray(
    hg.safe_load_pickle(DATA / "mail" / "EU" / "weight_graph.pickle")
  )
  assert e.shape == (33336, 2) and np.mean(e[:, 0] < e[:, 1]) > 0.999
  assert (
    len(hg.safe_load_pickle(DATA / "mail" / "enroll" / "weight_graph.pickle"))
    == 2583
  )


@needs_data
@pytest.mark.parametrize(
  "name,n,sets,pairs,feats,k",
  [
    ("cora", 2708, 1579, 4786, 1433, 7),
    ("citeseer", 3312, 1079, 3453, 3703, 6),
    ("pubmed", 19717, 7963, 34629, 1, 3),
  ],
)
def test_cocitation(name, n, sets, pairs, feats, k):
  hyp = hg.safe_load_pickle(DATA / "cocitation" / name / "hypergraph.pickle")
  assert len(hyp) == sets and sum(len(v) for v in hyp.values()) == pairs
  d = hg.load_cocitation(DATA, name, num_splits=2)
  assert d.num_nodes == n and d.x.shape == (n, feats) and d.num_classes == k
  # star construction: nnz = number of non-self citation edges + one tail per
  # anchor
  non_self = sum(int(c) != int(k) for k, v in hyp.items() for c in v)
  assert d.incidence.nnz == non_self + d.incidence.num_edges
  assert d.incidence.num_edges == len(
    {int(c) for k, v in hyp.items() for c in v if int(c) != int(k)}
  )


@needs_data
def test_synthetic_files_directed_undirected_agree():
  d = hg.load_gedi_synthetic(DATA, "inter10")
  u = hg.load_gedi_synthetic(DATA, "inter10", directed=False)
  # the undirected path adds one self-loop hyperedge per node (none are
  # singletons here)
  assert d.incidence.num_edges == 250 and u.incidence.num_edges == 250 + 500
  assert u.incidence.nnz == d.incidence.nnz + 500 and not u.directed
  tails = np.asarray(d.incidence.phase_im) > 0.5
  # 100 directed inter edges
  assert len(np.unique(np.asarray(d.incidence.edge)[tails])) == 100


@needs_data
@pytest.mark.parametrize(
  "name,n,k,tr,va,te",
  [
    ("planetoid-cora", 2708, 7, 140, 500, 1000),
    ("planetoid-citeseer", 3327, 6, 120, 500, 1000),
  ],
)
def test_planetoid(name, n, k, tr, va, te):
  d = hg.load(name, DATA)
  assert d.num_nodes == n and d.num_classes == k and not d.directed
  assert (
    int(d.train_mask.sum()),
    int(d.val_mask.sum()),
    int(d.test_mask.sum()),
  ) == (tr, va, te)
  if name == "planetoid-citeseer":
    assert int((np.abs(np.asarray(d.x)).sum(1) == 0).sum()) >= 15


def test_missing_file_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="weight_graph"):
    hg.load("email-Enron", tmp_path)
  with pytest.raises(ValueError, match="unknown dataset"):
    hg.load("nope", tmp_path)


@needs_data
def test_shipped_splits_select_the_first_ones_or_raise():
  """num_splits picks the file's first splits; more than it has, or a
  split_seed, raise."""
  with np.load(DATA / "heterophilous" / "texas.npz") as z:
    want = np.asarray(z["train_masks"], bool)
  assert want.shape == (10, 183)
  d = hg.load("texas", DATA, num_splits=3)
  assert d.num_splits == 3
  np.testing.assert_array_equal(np.asarray(d.train_mask), want[:3])
  assert hg.load("texas", DATA).num_splits == 10
  with pytest.raises(
    ValueError, match=(r"num_splits must be an int in \[1, 10\]")
  ):
    hg.load("texas", DATA, num_splits=11)
  with pytest.raises(ValueError, match="ships 10 fixed split"):
    hg.load("texas", DATA, split_seed=3)
  assert hg.ships_splits("texas") and hg.ships_splits("planetoid-cora")
  assert not hg.ships_splits("telegram") and not hg.ships_splits("mail/EU")


@needs_data
def test_any_dataset_in_a_supported_format_loads_by_format_and_name(tmp_path):
  """'<format>/<name>' reads a file that is not among the named sets, by the
  same loader."""
  (tmp_path / "heterophilous").mkdir()
  (tmp_path / "heterophilous" / "my_graph.npz").write_bytes(
    (DATA / "heterophilous" / "cornell.npz").read_bytes()
  )
  a = hg.load("heterophilous/my_graph", tmp_path, num_splits=2)
  b = hg.load("cornell", DATA, num_splits=2)
  assert a.summary() == {**b.summary(), "name": a.summary()["name"]}
  np.testing.assert_array_equal(
    np.asarray(a.test_mask), np.asarray(b.test_mask)
  )
  e = hg.load("mail/enroll", DATA, split_seed=1, num_splits=2)
  f = hg.load("email-Enron", DATA, split_seed=1, num_splits=2)
  np.testing.assert_array_equal(
    np.asarray(e.train_mask), np.asarray(f.train_mask)
  )


@needs_data
def test_npz_without_a_key_names_the_file_and_the_key(tmp_path):
  (tmp_path / "heterophilous").mkdir()
  with np.load(DATA / "heterophilous" / "texas.npz") as z:
    arrays = {k: z[k] for k in z.files if k != "val_masks"}
  np.savez(tmp_path / "heterophilous" / "texas.npz", **arrays)
  with pytest.raises(
    ValueError, match=(r"texas.npz lacks the key\(s\) \['val_masks'\]")
  ):
    hg.load("texas", tmp_path)


def _tiny_sets(root):
  """Tiny files in the telegram, heterophilous and mail formats under ``root``
  (6 nodes)."""
  import pickle

  import scipy.sparse

  y = np.array([0, 0, 0, 1, 1, 1])
  (root / "telegram").mkdir(parents=True)
  adj = scipy.sparse.coo_matrix(
    ([1.0] * 5, ([0, 1, 2, 3, 4], [1, 2, 3, 4, 5])), shape=(6, 6)
  )
  scipy.sparse.save_npz(root / "telegram" / "telegram_adj.npz", adj.tocsr())
  np.save(root / "telegram" / "telegram_labels.npy", y)
  (root / "heterophilous").mkdir()
  masks = np.zeros((2, 6), bool)
  np.savez(
    root / "heterophilous" / "g.npz",
    node_features=np.eye(6, dtype=np.float32),
    node_labels=y,
    edges=np.array([[0, 1], [1, 2], [3, 4], [4, 5]]),
    train_masks=masks | (np.arange(6) < 2),
    val_masks=masks | (np.arange(6) == 2),
    test_masks=masks | (np.arange(6) > 2),
  )
  (root / "mail" / "m").mkdir(parents=True)
  with open(root / "mail" / "m" / "weight_graph.pickle", "wb") as f:
    pickle.dump(np.array([[0, 1], [1, 2], [3, 4], [4, 5]]), f)
  with open(root / "mail" / "m" / "weight_label.pickle", "wb") as f:
    pickle.dump(y, f)
  return root


def test_loaders_read_only_inside_data_dir(tmp_path):
  """Names with '..', absolute names and symlinks out of data_dir are refused by
  every loader (the files outside are valid: without the check they would
  load)."""
  outside = _tiny_sets(tmp_path / "outside")
  root = tmp_path / "root"
  for fmt in ("heterophilous", "mail", "cocitation", "synthetic", "planetoid"):
    # so that '<fmt>/../..' resolves on every OS
    (root / fmt).mkdir(parents=True)
  # valid where they are
  assert hg.load_heterophilous(outside, "g").num_nodes == 6
  assert hg.load_mail(outside, "m", num_splits=1).num_nodes == 6
  rel = r"must be a relative path inside .* without '\.\.'"
  escapes = [
    (lambda: hg.load_heterophilous(root, "../../outside/heterophilous/g"), rel),
    (
      lambda: hg.load_heterophilous(root, str(outside / "heterophilous" / "g")),
      rel,
    ),
    (lambda: hg.load_mail(root, "../../outside/mail/m"), rel),
    (lambda: hg.load_mail(root, str(outside / "mail" / "m")), rel),
    (lambda: hg.load_cocitation(root, "../../outside/mail/m"), rel),
    (lambda: hg.load_gedi_synthetic(root, "../x"), rel),
    (lambda: hg.load_planetoid(root, "../../outside/x"), "without '/'"),
    (lambda: hg.load("heterophilous/..", root), "unknown dataset"),
  ]
  for call, pattern in escapes:
    with pytest.raises(ValueError, match=pattern):
      call()
  # Symlinks inside data_dir that point out of it: a format folder, a dataset
  # folder, a file.
  (root / "telegram").symlink_to(outside / "telegram")
  (root / "mail" / "m").symlink_to(outside / "mail" / "m")
  (root / "heterophilous" / "g.npz").symlink_to(
    outside / "heterophilous" / "g.npz"
  )
  for call in (
    lambda: hg.load_telegram(root),
    lambda: hg.load("telegram", root),
    lambda: hg.load_mail(root, "m"),
    lambda: hg.load("mail/m", root),
    lambda: hg.load_heterophilous(root, "g"),
    lambda: hg.load("heterophilous/g", root),
  ):
    with pytest.raises(
      ValueError, match=(r"leads outside .*\(through a symlink\)")
    ):
      call()
  # A data_dir that is itself a symlink is fine (e.g. a shared folder linked
  # into a checkout).
  (tmp_path / "linked").symlink_to(outside)
  assert hg.load("heterophilous/g", tmp_path / "linked").num_nodes == 6
  assert hg.load("telegram", tmp_path / "linked", num_splits=1).num_nodes == 6
