r"""Runs the LogSTOP experiment.

  python -m experiments.logstop.main --config=experiments/logstop/configs/default.py \
      --workdir=runs/logstop
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.logstop.train")  # imported after distributed start-up
