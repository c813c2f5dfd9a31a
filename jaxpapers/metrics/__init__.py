"""Shared metrics, in JAX, jit/vmap-friendly.

Classification: :func:`accuracy`, :func:`balanced_accuracy`.
Ranking (``scores [Q, N]``, ``relevance [Q, N]`` -> ``[Q]``): :func:`ndcg_at_k`,
:func:`hit_rate_at_k`, :func:`recall_at_k`, :func:`precision_at_k`, :func:`mrr`,
:func:`average_precision`, :func:`mean_average_precision`.
Distributions: :func:`frechet_distance`, :func:`frechet_distance_from_moments`,
:func:`kernel_inception_distance`.
"""

from jaxpapers.metrics._classification import accuracy, balanced_accuracy
from jaxpapers.metrics._distribution import (
  frechet_distance,
  frechet_distance_from_moments,
  kernel_inception_distance,
)
from jaxpapers.metrics._ranking import (
  average_precision,
  hit_rate_at_k,
  mean_average_precision,
  mrr,
  ndcg_at_k,
  precision_at_k,
  recall_at_k,
)

__all__ = [
  "accuracy",
  "balanced_accuracy",
  "frechet_distance",
  "frechet_distance_from_moments",
  "kernel_inception_distance",
  "average_precision",
  "hit_rate_at_k",
  "mean_average_precision",
  "mrr",
  "ndcg_at_k",
  "precision_at_k",
  "recall_at_k",
]
