r"""Runs E4 (dimension reduction: documents-only vs projected queries).

  python -m experiments.margins.main_e4 --config=experiments/margins/configs/e4.py \
      --workdir=runs/margins_e4
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.margins.e4")  # imported after distributed start-up
