"""Timing pilot of `size.py` / `size_needle.py` (debugging and CPU sizing only; no verdicts).

  python -m experiments.locos.main --config=experiments/locos/configs/size_pilot.py \
    --workdir=runs/locos_size_pilot

SmolLM2 with `size.py`'s form and grid on 16 evaluation items (the paper protocol on 8),
8 detection probes. It decides nothing (`issue_verdicts = False`); nothing in it sets a
threshold, a seed or an item count of the decisive configs.
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
