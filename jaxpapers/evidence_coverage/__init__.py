"""Retrieval-augmented ICL budget under distribution shift: effective evidence
coverage.

A diagnostic for choosing the retrieval budget top-k: a shifted local linear-ICL
generator, dense top-k retrieval evaluated as nested prefixes, finite readers
(one-step GD with a fixed or a line-search step, ridge, prior), recall / purity
curves, the effective-coverage margin ``Delta(k) = C_eff(k) - A(k)`` and its
budget boundary k*, oracle / shuffled / random context controls, the regime
rule, a calibrated similarity-threshold controller, the host-side summaries of
one sweep (the accuracy peak, the cluster-size budget, the recall-accuracy
decoupling indicator) and the whole diagnosis of one episode
(:func:`diagnose_budget`). The paper's equations are not public; every formula
here is a documented reconstruction (see each module's docstring).
"""

from jaxpapers.evidence_coverage._budget import (
  cluster_k,
  controller_summary,
  coverage_summary,
  decoupled,
  k_peak,
)
from jaxpapers.evidence_coverage._controls import (
  REGIMES,
  calibrate_threshold,
  classify_regime,
  control_contexts,
  oracle_context,
  random_context,
  shuffled_context,
  threshold_controller,
)
from jaxpapers.evidence_coverage._coverage import (
  budget_boundary,
  effective_coverage,
)
from jaxpapers.evidence_coverage._data import (
  ICLData,
  ShiftConfig,
  make_shifted_linear_icl,
)
from jaxpapers.evidence_coverage._diagnose import diagnose_budget
from jaxpapers.evidence_coverage._readers import (
  GDReader,
  LineSearchGDReader,
  PriorReader,
  RidgeReader,
  gd_reader,
  linesearch_gd_reader,
  prior_reader,
  ridge_reader,
)
from jaxpapers.evidence_coverage._retrieval import (
  dense_topk,
  purity_curve,
  recall_curve,
)
from jaxpapers.evidence_coverage._sweep import (
  answer_metrics,
  k_sweep,
  predict_at_budget,
)

__all__ = [
  "REGIMES",
  "GDReader",
  "ICLData",
  "LineSearchGDReader",
  "PriorReader",
  "RidgeReader",
  "ShiftConfig",
  "answer_metrics",
  "budget_boundary",
  "calibrate_threshold",
  "classify_regime",
  "cluster_k",
  "control_contexts",
  "controller_summary",
  "coverage_summary",
  "decoupled",
  "dense_topk",
  "diagnose_budget",
  "effective_coverage",
  "gd_reader",
  "k_peak",
  "k_sweep",
  "linesearch_gd_reader",
  "make_shifted_linear_icl",
  "oracle_context",
  "predict_at_budget",
  "prior_reader",
  "purity_curve",
  "random_context",
  "recall_curve",
  "ridge_reader",
  "shuffled_context",
  "threshold_controller",
]
