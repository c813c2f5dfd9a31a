"""Smoke setting (seconds of compute): tests, the notebook and reproduce --quick.

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/smoke.py \
      --workdir=/tmp/dense_limits_smoke
"""

from experiments.dense_limits.configs import default


def get_config():
  c = default.get_config()
  c.seeds = 2
  c.widths = (8, 16)
  c.classes = ("dense", "dense_sum", "plain")
  c.bounds = (1.0,)
  c.claims = default.claims(c.bounds)
  c.lrs = (1e-2,)
  c.steps = 20
  c.batch = 32
  c.tasks = ("bumps",)
  c.bump_d = 2
  c.bump_grid = 2
  c.n_train = 128
  c.n_test = 64
  c.compress_ks = (1, 4)
  c.compress_min_width = 16  # the widest only: each width compiles its own factorisations
  c.compress_restarts = 4
  c.compress_iters = 3
  c.fk_size = 16
  c.fk_k = 4
  c.exact_size = 6
  c.exact_trials = 2
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
