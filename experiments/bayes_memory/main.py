r"""Runs the Bayes-factor memory experiment.

  python -m experiments.bayes_memory.main --config=experiments/bayes_memory/configs/default.py \
      --workdir=runs/bayes_memory
"""

from jaxpapers.core import app

if __name__ == "__main__":
  # imported after distributed start-up
  app.run("experiments.bayes_memory.train")
