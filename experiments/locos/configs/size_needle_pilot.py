"""Timing pilot of `size_needle.py` (CPU sizing only; no verdicts): 1,024 tokens, 2 detection
and 4 evaluation probes, every probe ablated.

  python -m experiments.locos.main --config=experiments/locos/configs/size_needle_pilot.py \
    --workdir=runs/locos_size_needle_pilot
"""

from experiments.locos.configs import size_needle


def get_config():
  c = size_needle.get_config()
  n = c.needle
  n.context_tokens = (1024,)
  n.num_detect = 2
  n.num_eval = 4
  n.ablate_answered = False
  n.num_resamples = 100
  c.issue_verdicts = False
  return c
