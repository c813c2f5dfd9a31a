"""Runs the SODA experiment.

python -m experiments.soda.main --config=experiments/soda/configs/default.py
--workdir=runs/soda
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.soda.train")  # imported after distributed start-up
