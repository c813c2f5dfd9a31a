r"""Runs the DenseAM learning-rate transfer experiment.

  python -m experiments.denseam.main --config=experiments/denseam/configs/default.py \
      --workdir=runs/denseam
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.denseam.train")  # imported after distributed start-up
