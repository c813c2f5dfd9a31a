"""Pilot (issues no verdicts): the cost of one dense and one width-unbounded cell at the default
scale, to size the decisive run. Not used to choose thresholds, seeds or widths.

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/pilot.py \
      --workdir=runs/dense_limits_pilot
"""

from experiments.dense_limits.configs import default


def get_config():
  c = default.get_config()
  c.update(dict(tasks=("bumps",), classes=("dense", "dense_sum"), widths=(64, 512), bounds=(16.0,)))
  c.bound = 16.0
  c.claims = default.claims(c.bounds)
  c.compress_min_width = 1 << 30  # no compression in the pilot
  c.update(dict(fk_size=16, fk_k=4, exact_size=6, exact_trials=2))
  c.issue_verdicts = False  # a pilot judges nothing
  return c
