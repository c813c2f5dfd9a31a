"""Seconds-long E4 setting (tests): n = 8, k = 2, three d, two seeds; no
verdicts.

python -m experiments.margins.main_e4
--config=experiments/margins/configs/e4_smoke.py --workdir=runs/margins_e4_smoke
"""

from experiments.margins.configs import e4


def get_config():
  c = e4.get_config()
  c.n = 8
  c.k = 2
  c.Ns = (7, 28)
  c.ds = (8, 64, 512)
  c.seeds = 2
  c.steps = 200
  c.source_steps = 500
  c.issue_verdicts = False
  return c
