r"""Runs the PANDA benchmark (all backbones, vanilla vs PANDA, equal tuning
budget).

  python -m experiments.panda.main --config=experiments/panda/configs/default.py \
      --workdir=runs/panda
"""

import importlib

from jaxpapers.core import app


def train_and_evaluate(config, workdir) -> dict:
  """The fixed sweep of ``train``, or for a config with a search space the
  random search of ``search`` (imported here, after distributed start-up;
  ``train`` never imports ``search``)."""
  module = importlib.import_module(
    f"experiments.panda.{'search' if 'space' in config else 'train'}"
  )
  return module.train_and_evaluate(config, workdir)


if __name__ == "__main__":
  app.run(train_and_evaluate)
