r"""Runs the SOLA cross-tokenizer distillation experiment.

  python -m experiments.sola.main --config=experiments/sola/configs/default.py \
      --workdir=runs/sola
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.sola.train")  # imported after distributed start-up
