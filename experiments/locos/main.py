r"""LOCOS reproduction binary.

  python -m experiments.locos.main --config=experiments/locos/configs/default.py \
      --workdir=runs/locos
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.locos.train")  # imported after distributed start-up
