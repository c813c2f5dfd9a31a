"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.margins.main --config=experiments/margins/configs/smoke.py
--workdir=runs/margins_smoke
"""

from experiments.margins.configs import default


def get_config():
  c = default.get_config()
  c.ns = (8,)
  c.ks = (2,)
  c.ds = (4, 8)
  c.loss_n = 8
  c.losses = ("sigmoid", "infonce", "margin")
  c.seeds = 2
  c.steps = 200
  c.svm_steps = 100
  c.critical_ds = (2,)
  c.critical_n_max = 4
  c.critical_restarts = 1
  c.critical_steps = 200
  # the bisection is tested on its own (test_experiment.py)
  c.refine_threshold = False
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
