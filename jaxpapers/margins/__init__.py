"""Maximal-margin embeddings for retrieval.

The margin theory of "Is Dimensionality a Barrier for Retrieval Models?"
(Bangachev, Bresler, Kogan, Polyanskiy; arXiv:2605.23556) made computable: the three
margin notions of a retrieval problem, relevance matrices, constructions with
certificates, the unrestricted optimum ``m^rd(inf, A)``, and free-embedding fitting
with the sigmoid, InfoNCE and direct margin losses.
"""

from jaxpapers.margins._constructions import Construction
from jaxpapers.margins._constructions import coherence
from jaxpapers.margins._constructions import cs_construction
from jaxpapers.margins._constructions import dimension_reduction_construction
from jaxpapers.margins._constructions import jl_bound
from jaxpapers.margins._constructions import jl_project
from jaxpapers.margins._constructions import orthogonal_construction
from jaxpapers.margins._fit import FitResult
from jaxpapers.margins._fit import LOSSES
from jaxpapers.margins._fit import critical_n
from jaxpapers.margins._fit import fit_free_embeddings
from jaxpapers.margins._losses import infonce_loss
from jaxpapers.margins._losses import margin_loss
from jaxpapers.margins._losses import sigmoid_loss
from jaxpapers.margins._margins import all_margins
from jaxpapers.margins._margins import global_threshold_margin
from jaxpapers.margins._margins import margin
from jaxpapers.margins._margins import per_query_margin
from jaxpapers.margins._margins import topk_accuracy
from jaxpapers.margins._optimum import MaxMarginResult
from jaxpapers.margins._optimum import QueryResult
from jaxpapers.margins._optimum import dual_upper_bound
from jaxpapers.margins._optimum import k_sparse_optimal_margin
from jaxpapers.margins._optimum import max_margin_queries
from jaxpapers.margins._optimum import sdp_max_margin
from jaxpapers.margins._relevance import k_sparse_relevance
from jaxpapers.margins._relevance import limit_relevance
from jaxpapers.margins._relevance import random_k_sparse_relevance
from jaxpapers.margins._relevance import sample_k_subsets

__all__ = [
    "Construction", "FitResult", "LOSSES", "MaxMarginResult", "QueryResult", "all_margins",
    "coherence", "critical_n", "cs_construction", "dimension_reduction_construction",
    "dual_upper_bound", "fit_free_embeddings", "global_threshold_margin", "infonce_loss",
    "jl_bound", "jl_project", "k_sparse_optimal_margin", "k_sparse_relevance",
    "limit_relevance", "margin", "margin_loss", "max_margin_queries", "orthogonal_construction",
    "per_query_margin", "random_k_sparse_relevance", "sample_k_subsets", "sdp_max_margin",
    "sigmoid_loss", "topk_accuracy",
]
