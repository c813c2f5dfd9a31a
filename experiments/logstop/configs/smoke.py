"""Smoke setting (seconds of compute): tests and the notebook.

  python -m experiments.logstop.main --config=experiments/logstop/configs/smoke.py \
      --workdir=/tmp/logstop_smoke

Every phase runs (detector training, balanced sampling, video rendering, every matching arm,
database planting, every retrieval arm, metrics, the plot) on one matching template and two
retrieval queries; most of what remains is XLA compiling one program per formula and arm.
"""

from experiments.logstop.configs import default


def get_config():
  c = default.get_config()
  c.detector_steps = 20
  c.detector_batch = 64
  c.detector_hidden = 32
  c.num_templates = 1
  c.sequences_per_template = 12
  c.T = 16
  c.windows = (2,)
  c.seeds = (0,)
  c.retrieval_templates = 2
  c.mappings_per_template = 1
  c.db_size = 24
  c.db_T = 16
  c.min_len = 3
  c.max_len = 6
  c.retrieval_windows = (1,)
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
