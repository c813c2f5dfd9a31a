r"""Runs the PANDA benchmark (all backbones, vanilla vs PANDA, equal tuning budget).

  python -m experiments.panda.main --config=experiments/panda/configs/default.py \
      --workdir=runs/panda
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.panda.experiment")  # imported after distributed start-up
