"""Larger digit-video run for a GPU/TPU host (not run in CI).

  python -m experiments.logstop.main --config=experiments/logstop/configs/full.py \
      --workdir=runs/logstop_full

Expected hardware: one GPU, or a many-core CPU (~1 hour). 16 templates x 1,000
sequences (T=100), a 5,000-sequence retrieval database (T=50, the reference's
50-frame cap) with 40 queries. Scores from real detectors (YOLO, OWLv2, HuBERT,
SlowR50) are out of scope offline; `jaxpapers.logstop.score` takes such
per-frame scores directly as [..., T] arrays, and with per-frame detector scores
of the paper's QMTP-video clips on disk (format: jaxpapers/logstop/qmtp.py)

  python -m experiments.logstop.main --config=experiments/logstop/configs/full.py \
      --config.qmtp_dir=/path/to/qmtp_video --config.windows='(1,)' --workdir=runs/qmtp

scores the paper's matching benchmark instead.
"""

from experiments.logstop.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      detector_steps=3000,
      detector_hidden=512,
      sequences_per_template=1000,
      T=100,
      windows=(1, 3, 5, 10),
      mappings_per_template=4,
      db_size=5000,
      db_T=50,
      max_len=20,
      retrieval_windows=(1, 2, 5),
    )
  )
  return c
