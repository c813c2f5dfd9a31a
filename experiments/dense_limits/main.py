r"""Runs the dense-network limits experiment (saturation, compression,
regularity).

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/default.py \
      --workdir=runs/dense_limits
"""

from jaxpapers.core import app

if __name__ == "__main__":
  # imported after distributed start-up
  app.run("experiments.dense_limits.train")
