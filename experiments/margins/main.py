"""Runs the maximal-margin embeddings experiment.

  python -m experiments.margins.main --config=experiments/margins/configs/default.py --workdir=runs/margins
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from experiments.margins import train

_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory.", required=True)
config_flags.DEFINE_config_file("config", None, "Config file.", lock_config=True)


def main(argv):
  del argv
  train.train_and_evaluate(flags.FLAGS.config, _WORKDIR.value)


if __name__ == "__main__":
  app.run(main)
