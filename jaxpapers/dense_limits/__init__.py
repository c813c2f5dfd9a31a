"""Dense neural networks are not universal approximators (Rauchwerger, Jegelka &
Levie; arXiv:2602.07618), made computable.

Weight-bounded, width-normalised ("strongly dense") ReLU MLPs with sparse and
unconstrained comparisons; the cut norm (exact enumeration, local search, and a
certified Grothendieck-SDP bracket); the Frieze–Kannan weak-regularity
decomposition; compression of a network into a few cut terms per layer; the
network as a message-passing graph; Lipschitz bump targets; the Lipschitz bound
of the dense class and the weak-regularity checks (``lipschitz_summary``,
``regularity_checks``).
"""

from jaxpapers.dense_limits._compress import (
  METHODS,
  CompressedMLP,
  FactoredLayer,
  apply_compressed,
  compress_mlp,
  compression_errors,
  refit_compressed,
  truncate_compressed,
)
from jaxpapers.dense_limits._cut import (
  KRIVINE_BOUND,
  CutNormBounds,
  augment,
  cut_norm_exact,
  cut_norm_lb,
  cut_norm_sdp,
)
from jaxpapers.dense_limits._models import (
  CLASSES,
  ComputationalGraph,
  PlainMLP,
  SparseFaninMLP,
  StronglyDenseMLP,
  box_projection,
  computational_graph,
  make_model,
  message_passing_apply,
  project_params,
)
from jaxpapers.dense_limits._regularity import (
  CutDecomposition,
  FKTrace,
  fk_decompose,
  reconstruct,
)
from jaxpapers.dense_limits._targets import (
  BumpTarget,
  bump_data,
  bump_target,
  eval_bumps,
)
from jaxpapers.dense_limits._theory import (
  lipschitz_summary,
  regularity_checks,
  regularity_summary,
)

__all__ = [
  "CLASSES",
  "KRIVINE_BOUND",
  "METHODS",
  "BumpTarget",
  "CompressedMLP",
  "ComputationalGraph",
  "CutDecomposition",
  "CutNormBounds",
  "FKTrace",
  "FactoredLayer",
  "PlainMLP",
  "SparseFaninMLP",
  "StronglyDenseMLP",
  "apply_compressed",
  "augment",
  "box_projection",
  "bump_data",
  "bump_target",
  "compress_mlp",
  "compression_errors",
  "computational_graph",
  "cut_norm_exact",
  "cut_norm_lb",
  "cut_norm_sdp",
  "eval_bumps",
  "fk_decompose",
  "lipschitz_summary",
  "make_model",
  "message_passing_apply",
  "project_params",
  "reconstruct",
  "regularity_checks",
  "regularity_summary",
  "refit_compressed",
  "truncate_compressed",
]
