"""Smoke setting (seconds): tests and the notebook.

  python -m experiments.logstop.main --config=experiments/logstop/configs/smoke.py \
      --workdir=/tmp/logstop_smoke
"""

from experiments.logstop.configs import default


def get_config():
  c = default.get_config()
  c.detector_steps = 60
  c.detector_hidden = 64
  c.num_templates = 2
  c.sequences_per_template = 20
  c.T = 30
  c.windows = (2,)
  c.retrieval_templates = 2
  c.mappings_per_template = 1
  c.db_size = 32
  c.db_T = 24
  c.retrieval_windows = (1,)
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
