"""LogSTOP: temporal-logic scores over sequences of local predictions.

Lifts per-frame scores p_a[t] in [0, 1] of local properties (objects, emotions,
actions) to log-scores of LTL properties over the whole sequence, for query
matching (adaptive threshold) and ranked retrieval (segment max).

References:
  A. Khare, H. Okamoto, B. Hoxha, G. Fainekos, R. Alur. LogSTOP: Temporal Scores
  over Prediction Sequences for Matching and Retrieval. arXiv:2510.06512.
"""

from jaxpapers.logstop._baselines import boolean_ltlf
from jaxpapers.logstop._baselines import build_reverse_dfa
from jaxpapers.logstop._baselines import exact_probability
from jaxpapers.logstop._baselines import mean_score
from jaxpapers.logstop._baselines import robustness
from jaxpapers.logstop._engine import log1mexp
from jaxpapers.logstop._formula import Always
from jaxpapers.logstop._formula import And
from jaxpapers.logstop._formula import as_formula
from jaxpapers.logstop._formula import Atom
from jaxpapers.logstop._formula import atoms
from jaxpapers.logstop._formula import Const
from jaxpapers.logstop._formula import Eventually
from jaxpapers.logstop._formula import Formula
from jaxpapers.logstop._formula import Implies
from jaxpapers.logstop._formula import Next
from jaxpapers.logstop._formula import Not
from jaxpapers.logstop._formula import Or
from jaxpapers.logstop._formula import parse
from jaxpapers.logstop._formula import size
from jaxpapers.logstop._formula import Until
from jaxpapers.logstop._logstop import adaptive_threshold
from jaxpapers.logstop._logstop import match
from jaxpapers.logstop._logstop import score
from jaxpapers.logstop._logstop import scores
from jaxpapers.logstop._logstop import segment_max_score
from jaxpapers.logstop._logstop import segment_pairs
from jaxpapers.logstop._reference import reference_scores

__all__ = [
    "Always", "And", "Atom", "Const", "Eventually", "Formula", "Implies", "Next",
    "Not", "Or", "Until", "adaptive_threshold", "as_formula", "atoms",
    "boolean_ltlf", "build_reverse_dfa", "exact_probability", "log1mexp", "match",
    "mean_score", "parse", "reference_scores", "robustness", "score", "scores",
    "segment_max_score", "segment_pairs", "size",
]
