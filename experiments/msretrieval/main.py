r"""Runs the fingerprint-prediction vs retrieval experiment.

  python -m experiments.msretrieval.main --config=experiments/msretrieval/configs/default.py \
      --workdir=runs/msretrieval
"""

from jaxpapers.core import app

if __name__ == "__main__":
  # imported after distributed start-up
  app.run("experiments.msretrieval.train")
