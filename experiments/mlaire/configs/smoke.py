"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``): no e5,
tiny pools.

python -m experiments.mlaire.main --config=experiments/mlaire/configs/smoke.py
--workdir=runs/mlaire_smoke
"""

from experiments.mlaire.configs import default


def get_config():
  c = default.get_config()
  c.langs = ("en", "de", "fr")
  c.report = default.report_for(c.langs)
  c.units_per_fact = 8
  c.n_hard = 2
  c.n_easy = 3
  c.n_trap = 2
  c.p_max = 16
  c.k = 5
  c.seeds = 2
  c.use_e5 = False
  c.lambdas = ()
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
