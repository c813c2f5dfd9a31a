"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.denseam.main --config=experiments/denseam/configs/smoke.py
--workdir=runs/denseam_smoke
"""

from experiments.denseam.configs import default


def get_config():
  c = default.get_config()
  c.settings = ("poly3:standard", "poly3:derived")
  c.widths = (8, 32)
  c.base_width = 8
  c.lrs = (3e-3, 1e-2, 3e-2)
  c.steps = 10
  c.seeds = 2
  c.batch_size = 16
  c.dyn_steps = 2
  c.coord_widths = (8, 32)
  c.coord_steps = 2
  c.logreg_baseline = False
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
