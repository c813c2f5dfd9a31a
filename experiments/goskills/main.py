r"""Runs the GoSkills retrieval experiment on generated skill libraries.

  python -m experiments.goskills.main --config=experiments/goskills/configs/default.py \
      --workdir=runs/goskills
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.goskills.train")  # imported after distributed start-up
