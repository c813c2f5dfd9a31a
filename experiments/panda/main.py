"""Runs the PANDA benchmark (all backbones, vanilla vs PANDA, equal tuning budget).

  python -m experiments.panda.main --config=experiments/panda/configs/default.py --workdir=runs/panda
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from experiments.panda import train

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.', required=True)
config_flags.DEFINE_config_file('config', None, 'Config file.', lock_config=True)


def main(argv):
  del argv
  train.train_and_evaluate(flags.FLAGS.config, _WORKDIR.value)


if __name__ == '__main__':
  app.run(main)
