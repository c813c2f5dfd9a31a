"""Bad-input battery for ``jaxpapers.margins``: malformed calls, eagerly and
under jit."""

import jax
import numpy as np
import pytest

from jaxpapers import margins as mg
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
_rng = np.random.default_rng(0)
U = _rng.normal(size=(3, 4)).astype(F32)
U /= np.linalg.norm(U, axis=1, keepdims=True)
V = _rng.normal(size=(5, 4)).astype(F32)
V /= np.linalg.norm(V, axis=1, keepdims=True)
A = _rng.random((3, 5)) < 0.5
SOFT = np.where(A, 0.7, 0.0).astype(F32)
UNIT = "unit-norm rows"
BINARY = r"binary relevance matrix with entries in \{0, 1\}"
U_NAN = U.copy()
U_NAN[1] = np.nan
HOST = "host-side construction (NumPy / SciPy, float64 certificate)"

CASES = [
  Case("margin", mg.margin, (10 * U, V, A), match=UNIT, jit="nan"),
  Case(
    "margin",
    mg.margin,
    (U_NAN, V, A),
    match=UNIT,
    jit="nan",
    id=("margin-nan-row"),
  ),
  Case(
    "margin",
    mg.margin,
    (U, V, SOFT),
    match=BINARY,
    jit="nan",
    id=("margin-soft-A"),
  ),
  Case(
    "margin",
    mg.margin,
    (U[:0], V, A[:0]),
    match="at least one query",
    id=("margin-empty"),
  ),
  Case(
    "margin",
    mg.margin,
    (U, V, A.T),
    match=r"A must have shape \[N, n\]",
    id=("margin-A-shape"),
  ),
  Case(
    "global_threshold_margin",
    mg.global_threshold_margin,
    (U, 2 * V, A),
    match=UNIT,
    jit=("nan"),
  ),
  Case(
    "per_query_margin",
    mg.per_query_margin,
    (U, V, SOFT),
    match=BINARY,
    jit=("nan"),
  ),
  Case(
    "topk_accuracy",
    mg.topk_accuracy,
    (0 * U, V, A),
    match="all-zero row",
    jit=("nan"),
  ),
  Case("all_margins", mg.all_margins, (10 * U, V, A), match=UNIT, jit="nan"),
  Case(
    "all_margins",
    mg.all_margins,
    (U[:0], V, A[:0]),
    match="at least one query",
    id="all_margins-empty",
  ),
  Case("sigmoid_loss", mg.sigmoid_loss, (U, V, SOFT), match=BINARY, jit="nan"),
  Case(
    "infonce_loss",
    mg.infonce_loss,
    (U, V, SOFT),
    match=BINARY,
    jit=("checkify"),
  ),
  Case(
    "infonce_loss",
    mg.infonce_loss,
    (U, V, A),
    {"variant": "hard"},
    match="variant must be",
    id="infonce_loss-variant",
  ),
  Case("margin_loss", mg.margin_loss, (U, V, SOFT), match=BINARY, jit="nan"),
  Case(
    "margin_loss",
    mg.margin_loss,
    (U, V, A),
    {"beta": 0.0},
    match="beta must be > 0",
    id="margin_loss-beta",
  ),
  Case(
    "max_margin_queries",
    mg.max_margin_queries,
    (3 * V, A),
    {"steps": 5},
    match=UNIT,
    jit=("nan"),
  ),
  Case(
    "k_sparse_relevance",
    mg.k_sparse_relevance,
    (4, 5),
    match=r"k \(relevant documents",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "random_k_sparse_relevance",
    mg.random_k_sparse_relevance,
    (jax.random.key(0), 0, 4, 2),
    match="num_queries must be a positive int",
    jit=None,
    jit_reason="static sizes",
  ),
  Case(
    "sample_k_subsets",
    mg.sample_k_subsets,
    (0, -1, 4, 2),
    match="num_queries must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "limit_relevance",
    mg.limit_relevance,
    (6, 2),
    {"num_docs": 3, "num_queries": 5},
    match="num_docs must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "orthogonal_construction",
    mg.orthogonal_construction,
    (3, 0),
    match=r"k \(relevant",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "coherence",
    mg.coherence,
    (np.zeros((3, 4)),),
    match="nonzero columns",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cs_construction",
    mg.cs_construction,
    (jax.random.key(0), 4, 2, 1),
    match="d must be an int",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cs_embeddings",
    mg.cs_embeddings,
    (jax.random.key(0), SOFT, 4),
    match=BINARY,
    jit=("nan"),
  ),
  Case(
    "cs_embeddings",
    lambda A: mg.cs_embeddings(jax.random.key(0), A, 1),
    (A,),
    match="d must be an int",
    id="cs-embeddings-d",
  ),
  Case(
    "cs_embeddings",
    lambda A: mg.cs_embeddings(0, A, 4),
    (A,),
    error=TypeError,
    match="key must be a jax.random.key",
    id="cs-embeddings-key",
  ),
  Case(
    "jl_bound",
    mg.jl_bound,
    (float("nan"), 3, 4, 8),
    match="source_margin must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "jl_project",
    mg.jl_project,
    (jax.random.key(0), U, V, A, 0),
    match="d must be a positive",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "project_documents",
    mg.project_documents,
    (jax.random.key(0), V, SOFT, 3),
    {"steps": 5},
    match=BINARY,
    jit="nan",
  ),
  Case(
    "project_documents",
    mg.project_documents,
    (jax.random.key(0), 0 * V, A, 3),
    {"steps": 5},
    match="V has an all-zero row",
    jit="nan",
    id="project_documents-zero-row",
  ),
  Case(
    "half_margin_dimensions",
    mg.half_margin_dimensions,
    (jax.random.key(0), A, np.zeros((2, 3)), (4, 8), 0.5),
    match=r"m0 must be \[S, D\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "symmetric_optimum",
    mg.symmetric_optimum,
    (4, 4),
    match=r"need ints 1 <= k < n",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "documents_only_bound",
    mg.documents_only_bound,
    (0.3, 0, 8),
    match="n must be a positive int",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "gaussian_map",
    mg.gaussian_map,
    (jax.random.key(0), 4, 0),
    match=("d must be a positive"),
  ),
  Case(
    "dimension_reduction_construction",
    mg.dimension_reduction_construction,
    (jax.random.key(0), SOFT, 3),
    match=BINARY,
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dual_upper_bound",
    mg.dual_upper_bound,
    (A, np.zeros((3, 5)), np.ones(3), np.ones(5)),
    match="nonzero sum",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "sdp_max_margin",
    mg.sdp_max_margin,
    (A.astype(F32),),
    {"key": jax.random.key(0), "lr": -0.02},
    match=(
      r"lr must be a finite number > 0 \(the Adam learning rate\), got -0.02"
    ),
    jit=None,
    jit_reason=HOST,
    id="sdp_max_margin-negative-lr",
  ),
  Case(
    "sdp_max_margin",
    mg.sdp_max_margin,
    (A.astype(F32),),
    {"key": jax.random.key(0), "steps": 0},
    match=r"steps must be an int >= 1 \(Adam steps\), got 0",
    jit=None,
    jit_reason=HOST,
    id="sdp_max_margin-empty-scan",
  ),
  Case(
    "sdp_max_margin",
    mg.sdp_max_margin,
    (SOFT,),
    {"key": jax.random.key(0)},
    match=BINARY,
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "k_sparse_optimal_margin",
    mg.k_sparse_optimal_margin,
    (3, 4),
    match="1 <= k <= n",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "fit_free_embeddings",
    mg.fit_free_embeddings,
    (jax.random.key(0), A, 2),
    {"loss": "hinge"},
    match="loss must be one of",
    jit=None,
    jit_reason="host-side optimisation driver",
  ),
  Case(
    "fit_free_embeddings_minibatch",
    mg.fit_free_embeddings_minibatch,
    (jax.random.key(0), A, 2),
    {"batch_size": 4},
    match=r"batch_size must be <= N = 3",
    jit=None,
    jit_reason="host-side optimisation driver",
  ),
  Case(
    "fit_free_embeddings_minibatch",
    mg.fit_free_embeddings_minibatch,
    (jax.random.key(0), SOFT, 2),
    {"batch_size": 2},
    match=BINARY,
    jit=None,
    jit_reason="host-side optimisation driver",
    id="fit_free_embeddings_minibatch-soft-A",
  ),
  Case(
    "critical_n",
    mg.critical_n,
    (jax.random.key(0), 0),
    match="d must be a positive int",
    jit=None,
    jit_reason="host-side search over n",
  ),
  Case(
    "margins_float64",
    mg.margins_float64,
    (U, V, A[:, :2]),
    match=r"A \[N, n\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "critical_n_grid",
    mg.critical_n_grid,
    (4, 4),
    match="1 <= k < n_max",
    jit=None,
    jit_reason=HOST,
  ),
]

CASES += [
  Case(
    "needed_dimension",
    mg.needed_dimension,
    ([2, 4], [0.5], 0.5),
    match="retained must have shape",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "growth_slope",
    mg.growth_slope,
    ([10, 10], [1.0, 2.0]),
    match="Ns must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bound_dimension",
    mg.bound_dimension,
    (0.5, 0.5),
    error=TypeError,
    match="bound must be a callable",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "projected_row_margins",
    mg.projected_row_margins,
    (jax.random.key(0), U[:, :2], V, A, 2),
    match=r"U must have shape \[N, D\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dimension_growth",
    mg.dimension_growth,
    ({"projected": np.zeros((1, 2, 2))}, (4, 8), (10, 100), (0.5,)),
    kwargs={"m_src": 0.5, "n": 8, "delta": 0.01},
    match="retained must hold 'projected' and 'resolved'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dimension_growth",
    mg.dimension_growth,
    (
      {"projected": np.zeros((1, 3, 2)), "resolved": np.zeros((1, 3, 2))},
      (4, 8),
      (10, 100),
      (0.5,),
    ),
    kwargs={"m_src": 0.5, "n": 8, "delta": 0.01},
    match=r"must be \[S, 2, 2\]",
    jit=None,
    jit_reason=HOST,
    id="dimension_growth-shape",
  ),
  Case(
    "threshold_constants",
    mg.threshold_constants,
    ([{"n": 8, "k": 2, "d": 4}], (8,), (2,)),
    match="a row lacks",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "seed_threshold_constants",
    mg.seed_threshold_constants,
    (8, 8, {"d_half": [4], "censored": [None], "rounds": 1}),
    match="0 < k < n",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "pooled_threshold_constants",
    mg.pooled_threshold_constants,
    ([], 0),
    match="seeds must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "loss_wins",
    mg.loss_wins,
    ([], 16),
    kwargs={"tie": -0.1},
    match="tie must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "critical_n_fit",
    mg.critical_n_fit,
    ([], [], 0, 48, 2.0),
    match="k must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {
  "Construction": "a NamedTuple result container",
  "DocumentProjection": "a NamedTuple result container",
  "FitResult": "a NamedTuple result container",
  "MaxMarginResult": "a NamedTuple result container",
  "QueryResult": "a NamedTuple result container",
  "SymmetricOptimum": "a NamedTuple result container",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(mg, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_global_threshold_margin_without_negatives_is_inf():
  assert (
    float(mg.global_threshold_margin(U, V, np.ones((3, 5), bool))) == np.inf
  )


def test_unit_rows_within_tolerance_pass_and_give_the_margin():
  Y = np.where(A, 1.0, -1.0)
  want = np.min(Y * (U.astype(np.float64) @ V.T.astype(np.float64)))
  assert float(mg.margin(U * (1 + 5e-4), V, A)) == pytest.approx(
    want * (1 + 5e-4), abs=1e-5
  )
