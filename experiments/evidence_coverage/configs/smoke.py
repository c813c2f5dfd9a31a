"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.evidence_coverage.main \
    --config=experiments/evidence_coverage/configs/smoke.py --workdir=runs/evidence_coverage_smoke
"""

from experiments.evidence_coverage.configs import default


def get_config():
  c = default.get_config()
  c.d = 4
  c.settings = ((400, 8), (400, 32))
  c.n_dev = 16
  c.n_test = 16
  c.query_chunk = 8
  c.ks = (1, 2, 4, 8, 16, 32, 64)
  c.s_x = (2.0,)
  c.s_w = (0.0, 2.0)
  c.seeds = 1
  c.n_boot = 200
  # the sharded sweep is tested on its own (tests/evidence_coverage)
  c.use_mesh = False
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
