"""Smoke setting (seconds of compute): tests and the notebook.

  python -m experiments.logstop.main --config=experiments/logstop/configs/smoke.py \
      --workdir=/tmp/logstop_smoke

Every phase runs (detector training, balanced sampling, video rendering, every
matching arm, database planting, every retrieval arm, metrics, the plot) on one
matching template and two retrieval queries; most of what remains is XLA
compiling one program per formula and arm.
"""

from experiments.logstop.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      detector_steps=20,
      detector_batch=64,
      detector_hidden=32,
      num_templates=1,
      sequences_per_template=12,
      T=16,
      windows=(2,),
      seeds=(0,),
      retrieval_templates=2,
      mappings_per_template=1,
      db_size=24,
      db_T=16,
      min_len=3,
      max_len=6,
      retrieval_windows=(1,),
    )
  )
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
