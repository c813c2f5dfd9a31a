"""Runs the SODA experiment.

  python -m experiments.soda.main --config=experiments/soda/configs/default.py --workdir=runs/soda
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from experiments.soda import train

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
config_flags.DEFINE_config_file('config', None, 'Config file.', lock_config=True)


def main(argv):
  del argv
  train.train_and_evaluate(flags.FLAGS.config, _WORKDIR.value)


if __name__ == '__main__':
  app.run(main)
