r"""Runs the maximal-margin embeddings experiment.

  python -m experiments.margins.main --config=experiments/margins/configs/default.py \
      --workdir=runs/margins
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.margins.train")  # imported after distributed start-up
