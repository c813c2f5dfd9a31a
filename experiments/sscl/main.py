r"""Runs the SSCL shapes-world experiment.

python -m experiments.sscl.main --config=experiments/sscl/configs/default.py
--workdir=runs/sscl
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.sscl.train")  # imported after distributed start-up
