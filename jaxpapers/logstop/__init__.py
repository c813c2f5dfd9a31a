"""LogSTOP: temporal-logic scores over sequences of local predictions.

Lifts per-frame scores p_a[t] in [0, 1] of local properties (objects, emotions,
actions) to log-scores of LTL properties over the whole sequence, for query
matching (adaptive threshold) and ranked retrieval (segment max).

References:
  A. Khare, H. Okamoto, B. Hoxha, G. Fainekos, R. Alur. LogSTOP: Temporal Scores
  over Prediction Sequences for Matching and Retrieval. arXiv:2510.06512.
"""

from jaxpapers.logstop._baselines import (
  boolean_ltlf,
  build_reverse_dfa,
  exact_probability,
  mean_score,
  robustness,
)
from jaxpapers.logstop._engine import log1mexp
from jaxpapers.logstop._formula import (
  Always,
  And,
  Atom,
  Const,
  Eventually,
  Formula,
  Implies,
  Next,
  Not,
  Or,
  Until,
  as_formula,
  atoms,
  parse,
  size,
)
from jaxpapers.logstop._logstop import (
  adaptive_threshold,
  match,
  score,
  score_many,
  scores,
  segment_max_score,
  segment_pairs,
)
from jaxpapers.logstop._reference import reference_scores
from jaxpapers.logstop._windows import block_means, centred_means, sliding_means
from jaxpapers.logstop.qmtp import (
  QMTPSample,
  evaluate_qmtp,
  load_qmtp,
  parse_query,
)

__all__ = [
  "Always",
  "And",
  "Atom",
  "Const",
  "Eventually",
  "Formula",
  "Implies",
  "Next",
  "Not",
  "Or",
  "QMTPSample",
  "Until",
  "adaptive_threshold",
  "as_formula",
  "atoms",
  "block_means",
  "boolean_ltlf",
  "build_reverse_dfa",
  "centred_means",
  "evaluate_qmtp",
  "exact_probability",
  "load_qmtp",
  "log1mexp",
  "match",
  "mean_score",
  "parse",
  "parse_query",
  "reference_scores",
  "robustness",
  "score",
  "score_many",
  "scores",
  "segment_max_score",
  "segment_pairs",
  "size",
  "sliding_means",
]
