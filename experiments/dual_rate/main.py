"""Dual-Rate Diffusion: quality vs compute of dual-rate sampling, the single-network baseline and
moment matching distillation.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/default.py \
      --workdir=runs/dual_rate
"""

from absl import app, flags
from ml_collections import config_flags

from experiments.dual_rate import train

FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", "runs/dual_rate", "Where results.json, plots and checkpoints go.")
config_flags.DEFINE_config_file("config", "experiments/dual_rate/configs/default.py", "Config file.")


def main(argv):
  del argv
  train.train_and_evaluate(FLAGS.config, FLAGS.workdir)


if __name__ == "__main__":
  app.run(main)
