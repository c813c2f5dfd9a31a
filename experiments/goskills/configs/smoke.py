"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.goskills.main
--config=experiments/goskills/configs/smoke.py --workdir=runs/goskills_smoke
"""

from experiments.goskills.configs import default


def get_config():
  c = default.get_config()
  c.n_skills = (60,)
  c.reuse = (0.3,)
  c.decoy_rate = (0.3,)
  c.budgets = (3, 5)
  c.seeds = 2
  c.tasks = 8
  c.embed_dim = 64
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
