"""Bad-input battery for jaxpapers.hypergraph (eager and under jax.jit), plus
degenerate inputs.

Corrupt files (truncated pickles and ``.npz``, a pickle with a forbidden global)
are written here into a temporary folder laid out like the real data folder.
"""

import io
import os
import pathlib
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse
from flax import nnx

from jaxpapers import hypergraph as hg
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

HOST = "host-side (files and numpy graph building), never traced"
f32 = np.float32
INC = hg.from_hyperedges([[0, 1], [1, 2, 3]], 4)
X = np.arange(12, dtype=f32).reshape(4, 3)
Y = np.array([0, 1, 1, 0])
MASK = np.array([True, True, False, False])
DATA = hg.make_data(INC, X, Y, train_mask=MASK, val_mask=~MASK, test_mask=~MASK)
UNDIR = hg.as_undirected(DATA)
_ROOT = pathlib.Path(tempfile.mkdtemp(prefix="badinput_hg_"))


def _write(rel: str, payload: bytes) -> pathlib.Path:
  path = _ROOT / rel
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_bytes(payload)
  return path


def _truncated_pickle(rel: str) -> pathlib.Path:
  return _write(rel, pickle.dumps(np.arange(50), protocol=2)[:40])


def _truncated_npz(rel: str, sparse: bool = False) -> pathlib.Path:
  buf = io.BytesIO()
  if sparse:
    scipy.sparse.save_npz(buf, scipy.sparse.csr_matrix(np.eye(5)))
  else:
    np.savez(buf, node_features=np.ones((4, 2)), node_labels=np.zeros(4, int))
  raw = buf.getvalue()
  return _write(rel, raw[: len(raw) // 2])


class _Evil:
  def __reduce__(self):
    return (os.getcwd, ())


def _setup_files():
  _truncated_pickle("mail/enroll/weight_graph.pickle")
  _truncated_pickle("cocitation/cora/hypergraph.pickle")
  _truncated_pickle("synthetic/inter10/label.pickle")
  _write("cocitation/as_list/hypergraph.pickle", pickle.dumps([[0, 1], [1, 2]]))
  _truncated_npz("telegram/telegram_adj.npz", sparse=True)
  _truncated_npz("heterophilous/texas.npz")
  _write("evil.pickle", pickle.dumps(_Evil()))
  _write("empty.pickle", b"")
  outside = pathlib.Path(tempfile.mkdtemp(prefix="badinput_hg_outside_"))
  # a dataset folder outside data_dir
  (_ROOT / "mail" / "linked_out").symlink_to(outside)


_setup_files()


def _with_x(model, x):
  return model(DATA.replace(x=x))


def _with_x_undirected(model, x):
  return model(UNDIR.replace(x=x))


RNGS = nnx.Rngs(0)
GEDI = hg.GeDiHNN(3, 2, hidden=4, rngs=RNGS)
HGNN = hg.HGNN(3, 2, hidden=4, rngs=RNGS)
HGCN = hg.HyperGCN(3, 2, hidden=4, rngs=RNGS)
PHEN = hg.PhenomNN(3, 2, hidden=4, num_steps=1, rngs=RNGS)
HEAD = hg.ClassifierHead(3, 2, hidden=4, rngs=RNGS)
X2 = np.ones((4, 2), f32)  # 2 features for models built for 3

CASES = [
  # files
  Case(
    "hypergraph.RestrictedUnpickler",
    lambda: hg.safe_load_pickle(_ROOT / "evil.pickle"),
    error=pickle.UnpicklingError,
    match=r"evil.pickle: global posix.getcwd is not allowed",
    jit=None,
    jit_reason=HOST,
    id="unpickler-forbidden-global",
  ),
  Case(
    "hypergraph.safe_load_pickle",
    lambda: hg.safe_load_pickle(_ROOT / "empty.pickle"),
    match=r"data pickle .*empty.pickle is empty",
    jit=None,
    jit_reason=HOST,
    id="pickle-empty",
  ),
  Case(
    "hypergraph.safe_load_pickle",
    lambda: hg.safe_load_pickle(_ROOT / "mail/enroll/weight_graph.pickle"),
    match=r"data pickle .*weight_graph.pickle is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="pickle-truncated",
  ),
  Case(
    "hypergraph.safe_load_pickle",
    lambda: hg.safe_load_pickle(3),
    error=TypeError,
    match="path must be a path",
    jit=None,
    jit_reason=HOST,
    id="pickle-path-type",
  ),
  Case(
    "hypergraph.load_mail",
    lambda: hg.load_mail(_ROOT),
    match=r"mail/enroll/weight_graph.pickle is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="mail-truncated",
  ),
  Case(
    "hypergraph.load_cocitation",
    lambda: hg.load_cocitation(_ROOT),
    match=r"cocitation/cora/hypergraph.pickle is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="cocitation-truncated",
  ),
  Case(
    "hypergraph.load_cocitation",
    lambda: hg.load_cocitation(_ROOT, "as_list"),
    match=(
      r"data pickle .*cocitation/as_list/hypergraph.pickle holds a list, "
      r"expected a dict"
    ),
    jit=None,
    jit_reason=HOST,
    id="cocitation-not-a-dict",
  ),
  Case(
    "hypergraph.load_gedi_synthetic",
    lambda: hg.load_gedi_synthetic(_ROOT),
    match=r"synthetic/inter10/label.pickle is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="gedi-synthetic-truncated",
  ),
  Case(
    "hypergraph.load_telegram",
    lambda: hg.load_telegram(_ROOT),
    match=r"telegram_adj.npz is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="telegram-truncated-npz",
  ),
  Case(
    "hypergraph.load_heterophilous",
    lambda: hg.load_heterophilous(_ROOT, "texas"),
    match=r"heterophilous/texas.npz is corrupt or truncated",
    jit=None,
    jit_reason=HOST,
    id="heterophilous-truncated-npz",
  ),
  Case(
    "hypergraph.load_mail",
    lambda: hg.load_mail(_ROOT, "../../etc"),
    match=(
      r"name '../../etc' must be a relative path inside .* without '..' "
      r"components"
    ),
    jit=None,
    jit_reason=HOST,
    id="mail-name-dotdot",
  ),
  Case(
    "hypergraph.load_mail",
    lambda: hg.load_mail(_ROOT, "linked_out"),
    match=r"name 'mail/linked_out' leads outside .*\(through a symlink\)",
    jit=None,
    jit_reason=HOST,
    id="mail-name-symlink-out",
  ),
  Case(
    "hypergraph.load_cocitation",
    lambda: hg.load_cocitation(_ROOT, "/etc"),
    match=r"name '/etc' must be a relative path inside",
    jit=None,
    jit_reason=HOST,
    id="cocitation-name-absolute",
  ),
  Case(
    "hypergraph.load_heterophilous",
    lambda: hg.load_heterophilous(_ROOT, "../texas"),
    match=r"name '../texas' must be a relative path inside",
    jit=None,
    jit_reason=HOST,
    id="heterophilous-name-dotdot",
  ),
  Case(
    "hypergraph.load_gedi_synthetic",
    lambda: hg.load_gedi_synthetic(_ROOT, ""),
    error=TypeError,
    match=r"name must be a non-empty str",
    jit=None,
    jit_reason=HOST,
    id="gedi-synthetic-name-empty",
  ),
  Case(
    "hypergraph.load_planetoid",
    lambda: hg.load_planetoid(_ROOT, "../cora"),
    match=r"name must be a file-name stem without '/', got '../cora'",
    jit=None,
    jit_reason=HOST,
    id="planetoid-name-dotdot",
  ),
  Case(
    "hypergraph.load_planetoid",
    lambda: hg.load_planetoid(_ROOT / "nowhere"),
    error=FileNotFoundError,
    match=r"missing data file: .*nowhere/planetoid/ind.cora.x",
    jit=None,
    jit_reason=HOST,
    id="planetoid-missing",
  ),
  Case(
    "hypergraph.load",
    lambda: hg.load("cora2", _ROOT),
    match="unknown dataset 'cora2'",
    jit=None,
    jit_reason=HOST,
    id="load-unknown",
  ),
  Case(
    "hypergraph.load",
    lambda: hg.load("parquet/cora", _ROOT),
    match=r"unknown dataset 'parquet/cora'.*'<format>/<name>'",
    jit=None,
    jit_reason=HOST,
    id="load-unknown-format",
  ),
  Case(
    "hypergraph.ships_splits",
    lambda: hg.ships_splits("cora2"),
    match="unknown dataset 'cora2'",
    jit=None,
    jit_reason=HOST,
    id="ships-splits-unknown",
  ),
  Case(
    "hypergraph.load_planetoid",
    lambda: hg.load_planetoid(_ROOT, num_splits=3),
    match=r"num_splits must be an int in \[1, 1\] for planetoid/cora",
    jit=None,
    jit_reason=HOST,
    id="planetoid-num-splits",
  ),
  Case(
    "hypergraph.load_planetoid",
    lambda: hg.load_planetoid(_ROOT, split_seed=1),
    match=(
      r"planetoid/cora ships 1 fixed split\(s\), so split_seed=1 does not "
      r"apply"
    ),
    jit=None,
    jit_reason=HOST,
    id="planetoid-split-seed",
  ),
  Case(
    "hypergraph.load",
    lambda: hg.load("telegram", None),
    error=TypeError,
    match="data_dir must be a path",
    jit=None,
    jit_reason=HOST,
    id="load-no-dir",
  ),
  Case(
    "hypergraph.random_splits",
    lambda: hg.random_splits(np.zeros((3, 2)), 0),
    match="y must be a non-empty 1-D label array",
    jit=None,
    jit_reason=HOST,
    id="splits-2d",
  ),
  Case(
    "hypergraph.random_splits",
    lambda: hg.random_splits(Y, 0, train=0.8, val=0.3),
    match="train \\+ val < 1",
    jit=None,
    jit_reason=HOST,
    id="splits-fractions",
  ),
  # builders
  Case(
    "hypergraph.from_hyperedges",
    lambda: hg.from_hyperedges([[0, 1.7], [2]], 3),
    match=(
      r"members\[0\] must hold integer node ids, got non-integer values "
      r"\[1.7\]"
    ),
    jit=None,
    jit_reason=HOST,
    id="hyperedges-float-member",
  ),
  Case(
    "hypergraph.from_hyperedges",
    lambda: hg.from_hyperedges([[0, 5]], 3),
    match=r"node indices must lie in \[0, 3\)",
    jit=None,
    jit_reason=HOST,
    id="hyperedges-range",
  ),
  Case(
    "hypergraph.from_directed_hyperedges",
    lambda: hg.from_directed_hyperedges([[0.5]], [[1]], 3),
    match=r"tails\[0\] must hold integer node ids",
    jit=None,
    jit_reason=HOST,
    id="directed-hyperedges-float",
  ),
  Case(
    "hypergraph.from_directed_hyperedges",
    lambda: hg.from_directed_hyperedges([[0]], [[1]], 3, q=float("nan")),
    match="q must be finite",
    jit=None,
    jit_reason=HOST,
    id="directed-hyperedges-q",
  ),
  Case(
    "hypergraph.from_directed_edges",
    lambda: hg.from_directed_edges([0, 1.5], [1, 2], 3),
    match="src must hold integer node ids",
    jit=None,
    jit_reason=HOST,
    id="directed-edges-float",
  ),
  Case(
    "hypergraph.from_incidence_pairs",
    lambda: hg.from_incidence_pairs([0, 1], [0, 0], 2.5, 1),
    error=TypeError,
    match="num_nodes must be an int, got float",
    jit=None,
    jit_reason=HOST,
    id="pairs-float-count",
  ),
  Case(
    "hypergraph.from_incidence_pairs",
    lambda: hg.from_incidence_pairs([0, 0], [0, 0], 2, 1),
    match="duplicate .node, edge. incidence pairs",
    jit=None,
    jit_reason=HOST,
    id="pairs-duplicate",
  ),
  Case(
    "hypergraph.make_data",
    lambda: hg.make_data(
      INC,
      X,
      np.array([0, 1.6, 2.2, 0.9]),
      train_mask=MASK,
      val_mask=MASK,
      test_mask=MASK,
    ),
    match=(
      r"y \(labels\) must hold integer node ids, got non-integer values \[1.6"
    ),
    jit=None,
    jit_reason=HOST,
    id="make-data-float-labels",
  ),
  Case(
    "hypergraph.make_data",
    lambda: hg.make_data(
      INC, X * np.nan, Y, train_mask=MASK, val_mask=MASK, test_mask=MASK
    ),
    match="x must be finite",
    jit=None,
    jit_reason=HOST,
    id="make-data-nan-x",
  ),
  Case(
    "hypergraph.make_data",
    lambda: hg.make_data(
      INC, X, Y, train_mask=MASK * 0.5, val_mask=MASK, test_mask=MASK
    ),
    error=TypeError,
    match="train_mask must be boolean",
    jit=None,
    jit_reason=HOST,
    id="make-data-float-mask",
  ),
  Case(
    "hypergraph.make_data",
    lambda: hg.make_data(
      INC, X, Y, train_mask=MASK, val_mask=MASK, test_mask=MASK, num_classes=1
    ),
    match=r"labels must lie in \[0, 1\)",
    jit=None,
    jit_reason=HOST,
    id="make-data-num-classes",
  ),
  Case(
    "hypergraph.pad_incidence",
    lambda: hg.pad_incidence(INC, 2),
    match="nnz must be >= the current number of pairs 5",
    jit=None,
    jit_reason=HOST,
    id="pad-too-small",
  ),
  Case(
    "hypergraph.add_self_loop_hyperedges",
    lambda: hg.add_self_loop_hyperedges(DATA),
    error=TypeError,
    match="inc must be an Incidence, got HypergraphData",
    jit=None,
    jit_reason=HOST,
    id="self-loops-type",
  ),
  Case(
    "hypergraph.backbone_input",
    lambda: hg.backbone_input("GeDi", DATA),
    match=(
      r"backbone must be one of \['gedi', 'hgnn', 'hypergcn', 'phenomnn'\], "
      r"got 'GeDi'"
    ),
    jit=None,
    jit_reason=HOST,
    id="backbone-input-name",
  ),
  Case(
    "hypergraph.backbone_input",
    lambda: hg.backbone_input("hgnn", INC),
    error=TypeError,
    match="data must be a HypergraphData, got Incidence",
    jit=None,
    jit_reason=HOST,
    id="backbone-input-type",
  ),
  Case(
    "hypergraph.as_undirected",
    lambda: hg.as_undirected(INC),
    error=TypeError,
    match="data must be a HypergraphData, got Incidence",
    jit=None,
    jit_reason=HOST,
    id="as-undirected-type",
  ),
  Case(
    "hypergraph.make_synthetic",
    lambda: hg.make_synthetic(0, direction_noise=1.5),
    match=r"direction_noise must be a finite float in \[0, 1.0\]",
    jit=None,
    jit_reason=HOST,
    id="synthetic-noise",
  ),
  Case(
    "hypergraph.make_synthetic",
    lambda: hg.make_synthetic(0, features="pca"),
    match="features must be 'degree' or 'gaussian'",
    jit=None,
    jit_reason=HOST,
    id="synthetic-features",
  ),
  # operators
  Case(
    "hypergraph.inv_sqrt",
    hg.inv_sqrt,
    (np.array([1.0, -2.0], f32),),
    match="degrees d must be >= 0",
    jit="nan",
    id="inv-sqrt-negative",
  ),
  Case(
    "hypergraph.segment_softmax",
    hg.segment_softmax,
    (np.ones(3, f32), np.array([0.0, 0.0, 1.0], f32), 2),
    error=TypeError,
    match="segment_ids must have a integer dtype",
    id="segment-softmax-float-ids",
  ),
  Case(
    "hypergraph.segment_softmax",
    hg.segment_softmax,
    (np.ones(3, f32), np.array([0, 0, 1]), 2),
    kwargs=dict(mask=np.ones(2, bool)),
    match=r"mask must have shape \(3,\)",
    id="segment-softmax-mask",
  ),
  Case(
    "hypergraph.complex_relu",
    hg.complex_relu,
    (np.ones(3, f32), np.ones(2, f32)),
    match=r"im must have shape \(3,\)",
    id="complex-relu-shapes",
  ),
  Case(
    "hypergraph.cmul",
    hg.cmul,
    (np.ones(3, f32), np.ones(2, f32), np.ones(3, f32), None),
    match="a: the imaginary part has shape",
    id="cmul-shapes",
  ),
  Case(
    "hypergraph.complex_unit_mul",
    hg.complex_unit_mul,
    (np.ones(3, f32), np.ones(4, f32), True),
    match="im must have the shape of re",
    id="complex-unit-mul-shapes",
  ),
  Case(
    "hypergraph.node_to_edge",
    lambda x: hg.node_to_edge(INC, x),
    (np.ones((3, 2), f32),),
    match="node signal must have leading axis 4",
    id="node-to-edge-rows",
  ),
  Case(
    "hypergraph.node_to_edge",
    lambda x: hg.node_to_edge(INC, x),
    (np.ones((4, 2), int),),
    error=TypeError,
    match="must have a floating dtype",
    id="node-to-edge-int",
  ),
  Case(
    "hypergraph.edge_to_node",
    lambda h: hg.edge_to_node(INC, h),
    (np.ones((4, 2), f32),),
    match="hyperedge signal must have leading axis 2",
    id="edge-to-node-rows",
  ),
  Case(
    "hypergraph.gedi_propagate",
    lambda x: hg.gedi_propagate(INC, x, variant="L1"),
    (X,),
    match="variant must be 'Q_N' or 'code'",
    id="gedi-variant",
  ),
  Case(
    "hypergraph.gedi_propagate",
    lambda x, i: hg.gedi_propagate(INC, x, i),
    (X, X[:, :2]),
    match="imaginary part has shape",
    id="gedi-im-shape",
  ),
  Case(
    "hypergraph.hgnn_propagate",
    lambda x: hg.hgnn_propagate(INC, x),
    (X[:3],),
    match="x must have leading axis 4",
    id="hgnn-rows",
  ),
  Case(
    "hypergraph.phenom_propagate",
    lambda y: hg.phenom_propagate(INC, y, which="alpha"),
    (X,),
    match="which must be 'beta' or 'gamma'",
    id="phenom-which",
  ),
  Case(
    "hypergraph.gedi_operator",
    lambda: hg.gedi_operator(INC, variant="x"),
    match="variant must be",
    jit=None,
    jit_reason="float64 numpy reference",
    id="gedi-operator-variant",
  ),
  Case(
    "hypergraph.hgnn_operator",
    lambda: hg.hgnn_operator(DATA),
    error=TypeError,
    match="inc must be an Incidence",
    jit=None,
    jit_reason="float64 numpy reference",
    id="hgnn-operator-type",
  ),
  Case(
    "hypergraph.phenom_operators",
    lambda: hg.phenom_operators(None),
    error=TypeError,
    match="inc must be an Incidence",
    jit=None,
    jit_reason="float64 numpy reference",
    id="phenom-operators-type",
  ),
  Case(
    "hypergraph.hypergcn_graph",
    lambda p: hg.hypergcn_graph(INC, p),
    (np.array([0.0, np.nan, 1.0, 2.0], f32),),
    match="p must not contain NaN",
    jit="nan",
    id="hypergcn-graph-nan",
  ),
  Case(
    "hypergraph.hypergcn_graph",
    lambda p: hg.hypergcn_graph(INC, p),
    (np.ones(3, f32),),
    match=r"p must have shape \(4,\)",
    id="hypergcn-graph-shape",
  ),
  Case(
    "hypergraph.graph_propagate",
    hg.graph_propagate,
    (np.array([0, 1]), np.array([1, 7]), np.array([1.0, -1.0], f32), X, 4),
    match=r"node ids must lie in \[0, 4\)",
    jit="nan",
    id="graph-propagate-node-range",
  ),
  # models
  Case(
    "hypergraph.GeDiHNN",
    lambda x: _with_x(GEDI, x),
    (X2,),
    match=(
      r"data.x has shape \(4, 2\), but the model was built for in_features=3"
    ),
    id="gedi-features",
  ),
  Case(
    "hypergraph.HGNN",
    lambda x: _with_x_undirected(HGNN, x),
    (X2,),
    match="built for in_features=3",
    id="hgnn-features",
  ),
  Case(
    "hypergraph.HyperGCN",
    lambda x: _with_x_undirected(HGCN, x),
    (X2,),
    match="built for in_features=3",
    id="hypergcn-features",
  ),
  Case(
    "hypergraph.PhenomNN",
    lambda x: _with_x_undirected(PHEN, x),
    (X2,),
    match="built for in_features=3",
    id="phenomnn-features",
  ),
  Case(
    "hypergraph.PhenomNN",
    lambda: hg.PhenomNN(3, 2, lam0=float("nan"), rngs=nnx.Rngs(0)),
    match="lam0 must be a finite float",
    id="phenomnn-lam",
  ),
  Case(
    "hypergraph.HGNN",
    lambda: hg.HGNN(3, 2, dropout=1.5, rngs=nnx.Rngs(0)),
    match=r"dropout must be a float in \[0, 1\)",
    id="hgnn-dropout",
  ),
  Case(
    "hypergraph.ClassifierHead",
    lambda x: HEAD(x, deterministic=True),
    (X2,),
    match="x must have 3 features on its last axis",
    id="head-features",
  ),
]

_Y = np.zeros((4, 2), f32)
_D = np.ones(4, f32)
CASES += [
  Case(
    "hypergraph.phenom_step",
    lambda y: hg.phenom_step(
      y, y, y, y, _D, _D, lam0=1.0, lam1=1.0, step=0.5, h_setting=5
    ),
    (_Y,),
    match=r"h_setting must be one of \[0, 1, 2, 3\]",
    id="phenom-step-setting",
  ),
  Case(
    "hypergraph.phenom_step",
    lambda y: hg.phenom_step(
      y, y, y, y[:3], _D, _D, lam0=1.0, lam1=1.0, step=0.5
    ),
    (_Y,),
    match=r"a_gamma_y must have the shape of y",
    id="phenom-step-shape",
  ),
  Case(
    "hypergraph.phenom_step",
    lambda y: hg.phenom_step(
      y, y, y, y, _D, _D, lam0=1.0, lam1=1.0, step=0.5, h_setting=1
    ),
    (_Y,),
    match=r"h_setting=1 needs h with \[2, 2\] matrices",
    id="phenom-step-h",
  ),
  Case(
    "hypergraph.phenom_h_init",
    lambda: hg.phenom_h_init(jax.random.key(0), 3, 4),
    match=r"h_setting must be one of",
    jit=None,
    jit_reason=(
      "host-side initialisation of parameters, not a traced computation"
    ),
  ),
  Case(
    "hypergraph.check_phenom_args",
    lambda: hg.check_phenom_args(1.0, 1.0, -0.5, 0),
    match=r"alp must be a finite float >= 0",
    jit=None,
    jit_reason="checks static Python options, not arrays",
  ),
  Case(
    "hypergraph.uniform_init",
    lambda: hg.uniform_init(-1.0),
    match=r"bound must be a finite float >= 0",
    jit=None,
    jit_reason="builds an initializer function, not a traced computation",
  ),
]

EXEMPT = {
  "torch_linear": (
    "an nnx.Linear with uniform_init (validated) for kernel and bias"
  ),
  "HypergraphData": (
    "a container; build it with make_data, which validates every field"
  ),
  "Incidence": (
    "a container; build it with from_incidence_pairs / from_* (validated)"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(hg, CASES, EXEMPT)


def test_degenerate_values():
  """Documented values for legal edge cases."""
  # Whole-number float labels are accepted as the integers they are.
  d = hg.make_data(
    INC, X, Y.astype(f32), train_mask=MASK, val_mask=MASK, test_mask=MASK
  )
  np.testing.assert_array_equal(d.y, Y)
  # An isolated node / empty hyperedge has inverse square-root degree 0.
  np.testing.assert_array_equal(hg.inv_sqrt(jnp.array([0.0, 4.0])), [0.0, 0.5])
  # Repeated members are merged, whole-number floats accepted.
  inc = hg.from_hyperedges([[0, 1, 1], [2.0, 3.0]], 4)
  np.testing.assert_array_equal(np.asarray(inc.deg_edge), [2, 2])
  # A node in no hyperedge propagates to 0.
  inc = hg.from_hyperedges([[0, 1]], 3)
  out = hg.hgnn_propagate(inc, jnp.ones((3, 1)))
  assert float(out[2, 0]) == 0.0
