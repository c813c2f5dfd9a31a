"""Maximal-margin embeddings for retrieval.

The margin theory of "Is Dimensionality a Barrier for Retrieval Models?"
(Bangachev, Bresler, Kogan, Polyanskiy; arXiv:2605.23556) made computable: the
three margin notions of a retrieval problem, relevance matrices, constructions
with certificates, the unrestricted optimum ``m^rd(inf, A)``, and free-embedding
fitting with the sigmoid, InfoNCE and direct margin losses.
"""

from jaxpapers.margins._constructions import (
  Construction,
  DocumentProjection,
  SymmetricOptimum,
  coherence,
  cs_construction,
  cs_embeddings,
  dimension_reduction_construction,
  documents_only_bound,
  gaussian_map,
  jl_bound,
  jl_project,
  orthogonal_construction,
  project_documents,
  symmetric_optimum,
)
from jaxpapers.margins._dimensions import (
  bound_dimension,
  dimension_growth,
  growth_slope,
  needed_dimension,
  projected_row_margins,
)
from jaxpapers.margins._fit import (
  LOSSES,
  FitResult,
  critical_n,
  critical_n_grid,
  fit_free_embeddings,
  fit_free_embeddings_minibatch,
  half_margin_dimensions,
)
from jaxpapers.margins._losses import infonce_loss, margin_loss, sigmoid_loss
from jaxpapers.margins._margins import (
  all_margins,
  global_threshold_margin,
  margin,
  margins_float64,
  per_query_margin,
  topk_accuracy,
)
from jaxpapers.margins._optimum import (
  MaxMarginResult,
  QueryResult,
  dual_upper_bound,
  k_sparse_optimal_margin,
  max_margin_queries,
  sdp_max_margin,
)
from jaxpapers.margins._relevance import (
  k_sparse_relevance,
  limit_relevance,
  random_k_sparse_relevance,
  sample_k_subsets,
)
from jaxpapers.margins._threshold import (
  NOTIONS,
  critical_n_fit,
  loss_wins,
  pooled_threshold_constants,
  seed_threshold_constants,
  threshold_constants,
)

__all__ = [
  "NOTIONS",
  "critical_n_fit",
  "loss_wins",
  "pooled_threshold_constants",
  "seed_threshold_constants",
  "threshold_constants",
  "Construction",
  "DocumentProjection",
  "SymmetricOptimum",
  "FitResult",
  "LOSSES",
  "MaxMarginResult",
  "QueryResult",
  "all_margins",
  "bound_dimension",
  "dimension_growth",
  "coherence",
  "critical_n",
  "critical_n_grid",
  "cs_construction",
  "cs_embeddings",
  "dimension_reduction_construction",
  "documents_only_bound",
  "dual_upper_bound",
  "fit_free_embeddings",
  "fit_free_embeddings_minibatch",
  "half_margin_dimensions",
  "gaussian_map",
  "global_threshold_margin",
  "growth_slope",
  "infonce_loss",
  "jl_bound",
  "jl_project",
  "k_sparse_optimal_margin",
  "k_sparse_relevance",
  "limit_relevance",
  "margin",
  "margins_float64",
  "margin_loss",
  "needed_dimension",
  "max_margin_queries",
  "orthogonal_construction",
  "per_query_margin",
  "project_documents",
  "projected_row_margins",
  "symmetric_optimum",
  "random_k_sparse_relevance",
  "sample_k_subsets",
  "sdp_max_margin",
  "sigmoid_loss",
  "topk_accuracy",
]
