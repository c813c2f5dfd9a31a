"""Timing pilot of `size.py` (CPU sizing only; no verdicts): 16 evaluation items (the paper
protocol on 8), 8 detection probes.

  python -m experiments.locos.main --config=experiments/locos/configs/size_pilot.py \
    --workdir=runs/locos_size_pilot
"""

from experiments.locos.configs import size


def get_config():
  c = size.get_config()
  r = c.real
  r.num_detect = 8
  r.num_eval = 16
  r.paper_num_eval = 8
  r.num_calibration = 8
  c.issue_verdicts = False
  return c
