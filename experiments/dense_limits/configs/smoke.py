"""Smoke setting (seconds of compute): tests, the notebook and reproduce
--quick.

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/smoke.py \
      --workdir=/tmp/dense_limits_smoke
"""

from experiments.dense_limits.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      seeds=2,
      widths=(8, 16),
      classes=("dense", "dense_sum", "plain"),
      bounds=(1.0,),
      lrs=(1e-2,),
      steps=20,
      batch=32,
      tasks=("bumps",),
      bump_d=2,
      bump_grid=2,
      n_train=128,
      n_test=64,
      compress_ks=(1, 4),
      # the widest only: each width compiles its own factorisations
      compress_min_width=16,
      compress_restarts=4,
      compress_iters=3,
      fk_size=16,
      fk_k=4,
      exact_size=6,
      exact_trials=2,
    )
  )
  c.claims = default.claims(c.bounds)
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
