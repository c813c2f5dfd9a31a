r"""Runs the LAnR latent multi-hop retrieval experiment.

  python -m experiments.lanr.main --config=experiments/lanr/configs/default.py \
      --workdir=runs/lanr
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.lanr.train")  # imported after distributed start-up
