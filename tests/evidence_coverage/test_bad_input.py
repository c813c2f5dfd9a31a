"""Bad-input battery for ``jaxpapers.evidence_coverage``: malformed calls,
eagerly and under jit."""

import jax
import numpy as np
import pytest

import jaxpapers.evidence_coverage as E
from jaxpapers import core
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
KEY = jax.random.key(0)
DATA = E.make_shifted_linear_icl(KEY, E.ShiftConfig(d=4, n_clusters=5), 64, 8)
IDX = np.asarray(E.dense_topk(DATA.q_x, DATA.pool_x, 12)[0])
BAD_IDX = IDX.copy()
BAD_IDX[2, 3] = 64  # one index past the pool
KS = (1, 2, 4)
_rng = np.random.default_rng(0)
X = _rng.normal(size=(5, 4)).astype(F32)
Y = _rng.normal(size=5).astype(F32)
M = np.ones(5, bool)
XQ = _rng.normal(size=4).astype(F32)
W0 = np.zeros(4, F32)
SIMS = -np.sort(-_rng.uniform(size=(8, 12)), axis=1).astype(F32)
POOL_RANGE = r"idx must hold pool indices in \[0, 64\)"
HOST = "host-side rule on concrete curves (NumPy)"
STATIC = "static configuration object, validated at construction"

CASES = [
  Case(
    "ShiftConfig",
    E.ShiftConfig,
    (),
    {"d": 0},
    match=r"ShiftConfig.d must be >= 1",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "ShiftConfig",
    E.ShiftConfig,
    (),
    {"task": "nli"},
    match="ShiftConfig.task must be one of",
    jit=None,
    jit_reason=STATIC,
    id="ShiftConfig-task",
  ),
  Case(
    "make_shifted_linear_icl",
    E.make_shifted_linear_icl,
    (KEY, E.ShiftConfig(), 0, 4),
    match="n_pool must be >= 1",
  ),
  Case(
    "make_shifted_linear_icl",
    E.make_shifted_linear_icl,
    (np.zeros(2, np.uint32), E.ShiftConfig(), 4, 4),
    error=TypeError,
    match="key must be a typed PRNG key",
    id="make-raw-key",
  ),
  Case(
    "dense_topk",
    E.dense_topk,
    (XQ[None], X[:, :3], 2),
    match=("share the feature dimension"),
  ),
  Case(
    "dense_topk",
    E.dense_topk,
    (XQ[None], X, 6),
    match="k_max must be <= 5",
    id=("topk-kmax"),
  ),
  Case(
    "recall_curve",
    E.recall_curve,
    (BAD_IDX, DATA, KS),
    match=POOL_RANGE,
    jit=("nan"),
  ),
  Case(
    "recall_curve",
    E.recall_curve,
    (IDX, DATA, (1, 4, 2)),
    match="strictly increasing",
    id="recall-ks-order",
  ),
  Case(
    "recall_curve",
    E.recall_curve,
    (IDX, DATA, (1, 13)),
    match="ks must be <= k_max = 12",
    id="recall-ks-too-long",
  ),
  Case(
    "purity_curve",
    E.purity_curve,
    (IDX.astype(F32), DATA, KS),
    error=TypeError,
    match="idx must have a integer dtype",
  ),
  Case(
    "effective_coverage",
    E.effective_coverage,
    (BAD_IDX, DATA, KS),
    match=POOL_RANGE,
    jit=("nan"),
  ),
  Case(
    "effective_coverage",
    E.effective_coverage,
    (IDX, DATA, KS),
    {"kappa": -1.0},
    match="kappa must be >= 0",
    id="coverage-kappa",
  ),
  Case(
    "effective_coverage",
    E.effective_coverage,
    (IDX[:3], DATA, KS),
    match=r"idx must have shape \(8, \?\)",
    id="coverage-idx-rows",
  ),
  Case(
    "budget_boundary",
    E.budget_boundary,
    (KS, [0.1, 0.2]),
    match=r"delta must have shape \(3,\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "gd_reader",
    E.gd_reader,
    (X, Y[:4], M, XQ),
    {"w0": W0, "eta": 0.1},
    match=r"y must have shape \(5,\)",
  ),
  Case(
    "gd_reader",
    E.gd_reader,
    (X, Y, M, XQ),
    {"w0": W0, "eta": float("nan")},
    match="eta must be a finite number",
    id="gd-eta-nan",
  ),
  Case(
    "ridge_reader",
    E.ridge_reader,
    (X, Y, M, XQ),
    {"w0": W0, "lam": 0.0},
    match=("lam must be > 0"),
  ),
  Case(
    "ridge_reader",
    E.ridge_reader,
    (X, Y, M.astype(F32), XQ),
    {"w0": W0, "lam": 1.0},
    error=TypeError,
    match="mask must have a bool dtype",
    id="ridge-mask-dtype",
  ),
  Case(
    "linesearch_gd_reader",
    E.linesearch_gd_reader,
    (X[:, :3], Y, M, XQ),
    {"w0": W0},
    match=r"x_q must have shape \(3,\)",
  ),
  Case(
    "LineSearchGDReader",
    E.LineSearchGDReader(),
    (X, Y, M[:4], XQ, W0),
    match=r"mask must have shape \(5,\)",
  ),
  Case(
    "prior_reader",
    E.prior_reader,
    (X, Y, M, XQ[:3]),
    {"w0": W0},
    match=r"x_q must have shape \(4,\)",
  ),
  Case(
    "GDReader",
    E.GDReader,
    (float("inf"),),
    match="GDReader.eta must be a finite number",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "RidgeReader",
    E.RidgeReader,
    (-1.0,),
    match="RidgeReader.lam must be > 0",
    jit=None,
    jit_reason=STATIC,
  ),
  Case(
    "PriorReader",
    E.PriorReader(),
    (X, Y, M, XQ, W0[:2]),
    match=(r"w0 must have shape \(4,\)"),
  ),
  Case(
    "k_sweep",
    E.k_sweep,
    (E.GDReader(0.1), DATA, BAD_IDX, KS),
    match=POOL_RANGE,
    jit=("nan"),
  ),
  Case(
    "k_sweep",
    E.k_sweep,
    (E.PriorReader(), DATA, IDX, KS),
    {"y_override": IDX[:, :3] * 1.0},
    match=r"y_override must have shape \(8, 12\)",
    id="k_sweep-y_override",
  ),
  Case(
    "k_sweep",
    E.k_sweep,
    (E.GDReader(0.1), DATA, IDX, KS),
    {"mesh": core.make_mesh(3)},
    match=r"number of queries \(8\) must be divisible",
    id="k_sweep-mesh",
  ),
  Case(
    "k_sweep",
    E.k_sweep,
    (E.GDReader(0.1), DATA, IDX, KS, None, None),
    error=TypeError,
    match="positional",
    id="k_sweep-positional-extras",
  ),
  Case(
    "predict_at_budget",
    E.predict_at_budget,
    (E.RidgeReader(1.0), DATA, IDX, np.full(8, 13, np.int32)),
    match=r"k_per_query must be in \[0, 12\]",
    jit="nan",
  ),
  Case(
    "answer_metrics",
    E.answer_metrics,
    (Y, Y),
    {"tol": 0.0},
    match=("tol must be > 0"),
  ),
  Case(
    "answer_metrics",
    E.answer_metrics,
    (Y, Y[:3]),
    match=r"y must have shape \(5,\)",
    id="answer_metrics-y",
  ),
  Case(
    "oracle_context",
    E.oracle_context,
    (DATA.q_x, DATA.pool_x, DATA, 65),
    match="k_max must be <= 64",
  ),
  Case(
    "shuffled_context",
    E.shuffled_context,
    (KEY, IDX, DATA),
    {"mode": "swap"},
    match="mode must be 'labels' or 'other_query'",
  ),
  Case(
    "shuffled_context",
    E.shuffled_context,
    (KEY, BAD_IDX, DATA),
    match=POOL_RANGE,
    jit="nan",
    id="shuffled-range",
  ),
  Case(
    "random_context",
    E.random_context,
    (np.zeros(2, np.uint32), DATA, 3),
    error=TypeError,
    match="key must be a typed PRNG key",
  ),
  Case(
    "classify_regime",
    E.classify_regime,
    ([0.1, np.nan, 0.2], [0.1, 0.2, 0.3], KS),
    match="acc_ret must be finite",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "classify_regime",
    E.classify_regime,
    ([0.1, 0.2], [0.1, 0.2], (1, 2)),
    match="at least 3 budgets",
    jit=None,
    jit_reason=HOST,
    id="classify_regime-short",
  ),
  Case(
    "threshold_controller",
    E.threshold_controller,
    (SIMS, 0.5, (1, 20)),
    match="ks must be <= k_max = 12",
  ),
  Case(
    "calibrate_threshold",
    E.calibrate_threshold,
    (SIMS, np.ones((2, 8)), KS, [0.1]),
    match=r"correct_dev must have shape \(3, 8\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "coverage_summary",
    E.coverage_summary,
    (IDX, DATA, (1, 4, 2)),
    match="strictly increasing",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "k_peak",
    E.k_peak,
    ([0.1, 0.2], KS),
    match=r"acc must have shape \(3,\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cluster_k",
    E.cluster_k,
    (100, 0, KS),
    match="n_clusters must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "decoupled",
    E.decoupled,
    ([0.1, 0.2, 0.1], [0.1, 0.2]),
    {"decline_tol": 0.0, "recall_rise": 0.1},
    match=r"recall must have shape \(3,\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "controller_summary",
    E.controller_summary,
    (SIMS, np.ones((3, 8)), SIMS, np.ones((3, 7)), KS),
    match=r"correct must have shape \(3, 8\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "diagnose_budget",
    E.diagnose_budget,
    (KEY, DATA, {"prior": E.PriorReader()}, KS),
    {"n_dev": 8, "tol": 0.1, "regime_tol": 0.01},
    match="n_dev must be <= 7",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "control_contexts",
    E.control_contexts,
    (np.zeros(2, np.uint32), DATA, IDX, 4),
    error=TypeError,
    match="key must be a typed PRNG key",
    jit=None,
    jit_reason=(
      "returns a dict of the controls' arrays; each control is checked under "
      "jit"
    ),
  ),
]

EXEMPT = {
  "REGIMES": "a constant tuple",
  "ICLData": (
    "a flax.struct container; every function taking one checks its shapes"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(E, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_query_without_relevant_pool_items_has_recall_zero():
  # a cluster absent from the pool
  data = DATA.replace(q_task=DATA.q_task.at[0].set(99))
  rec = np.asarray(E.recall_curve(IDX, data, (12,)))
  pt, qt = np.asarray(DATA.pool_task), np.asarray(DATA.q_task)
  want = [0.0] + [
    np.isin(IDX[q], np.flatnonzero(pt == qt[q])).sum() / (pt == qt[q]).sum()
    for q in range(1, 8)
  ]
  assert rec[0] == pytest.approx(np.mean(want), rel=1e-6)


def test_empty_mask_gives_the_prior_and_budget_zero_too():
  got = E.gd_reader(X, Y, np.zeros(5, bool), XQ, w0=XQ, eta=1.0)
  assert float(got) == pytest.approx(float(XQ @ XQ), rel=1e-6)
  at = E.predict_at_budget(E.GDReader(0.1), DATA, IDX, np.zeros(8, np.int32))
  want = np.asarray(DATA.q_x) @ np.asarray(DATA.w0)
  np.testing.assert_allclose(np.asarray(at), want, rtol=1e-5)
