"""LOCOS reproduction binary.

  python -m experiments.locos.main --config=experiments/locos/configs/default.py --workdir=runs/locos
"""

from absl import app, flags
from ml_collections import config_flags

from experiments.locos import train

_WORKDIR = flags.DEFINE_string("workdir", "runs/locos", "Where results, plots and checkpoints go.")
config_flags.DEFINE_config_file("config", "experiments/locos/configs/default.py",
                                "Experiment configuration file.")


def main(argv):
  del argv
  train.train_and_evaluate(flags.FLAGS.config, _WORKDIR.value)


if __name__ == "__main__":
  app.run(main)
