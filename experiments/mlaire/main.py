r"""Runs the MLAIRE language-aware retrieval evaluation.

  python -m experiments.mlaire.main --config=experiments/mlaire/configs/default.py \
      --workdir=runs/mlaire
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.mlaire.train")  # imported after distributed start-up
