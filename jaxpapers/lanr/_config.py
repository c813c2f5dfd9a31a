"""Static configuration of LAnR (defaults from the reconstruction, spec §3)."""

from __future__ import annotations

import dataclasses

from jaxpapers.core import validation as V

_LABELS = ("entropy", "oracle")


@dataclasses.dataclass(frozen=True)
class LAnRConfig:
  """LAnR hyperparameters.

  Attributes:
    rep_dim: D_r, the retrieval space width.
    rep_layer: ℓ*, the layer whose input residual stream is the hidden state
      (−1: last).
    t_max: T_max, the most retrieval calls per question.
    tau_stop: τ_stop, stop when s_t > τ_stop.
    tau_ret: τ_r, the InfoNCE temperature.
    lambda_ret, lambda_ctl: loss weights λ_r, λ_c (L = λ_r L_ret + λ_c L_ctl with a frozen LM).
    control_labels: 'entropy' (y = 1[H̄ < ε]) or 'oracle' (y = 1[all gold documents read]).
    control_width: hidden width of the control MLP.
  """

  rep_dim: int = 256
  rep_layer: int = -1
  t_max: int = 3
  tau_stop: float = 0.5
  tau_ret: float = 0.05
  lambda_ret: float = 1.0
  lambda_ctl: float = 0.5
  control_labels: str = "entropy"
  control_width: int = 256

  def __post_init__(self):
    V.check_int(self.rep_dim, "rep_dim", min_value=1)
    V.check_int(self.rep_layer, "rep_layer")
    V.check_int(self.t_max, "t_max", min_value=1)
    V.check_float(self.tau_stop, "tau_stop", min_value=0.0, max_value=1.0)
    V.check_float(self.tau_ret, "tau_ret", min_value=0.0, min_inclusive=False)
    V.check_float(self.lambda_ret, "lambda_ret", min_value=0.0)
    V.check_float(self.lambda_ctl, "lambda_ctl", min_value=0.0)
    V.check_int(self.control_width, "control_width", min_value=1)
    if self.control_labels not in _LABELS:
      raise ValueError(
        f"control_labels must be one of {_LABELS}, got {self.control_labels!r}"
      )
