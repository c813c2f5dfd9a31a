"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.lanr.main --config=experiments/lanr/configs/smoke.py
--workdir=runs/lanr_smoke

A random-init 2-layer decoder on a word-level vocabulary stands in for SmolLM2.
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.lm = "random"
  c.kb.update(n_people=6, n_cities=3, n_countries=2, n_companies=2)
  c.n_train_per_hop = 4
  c.n_test_per_hop = 3
  c.rep_dim = 16
  c.control_width = 16
  c.steps = 20
  c.lm_batch = 8
  c.width_bucket = 128  # one width: one compilation of the reader
  c.seeds = 2
  c.n_boot = 200
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
