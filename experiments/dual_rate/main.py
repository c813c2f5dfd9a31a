r"""Dual-Rate Diffusion: quality vs compute of dual-rate sampling, the
single-network baseline and moment matching distillation.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/default.py \
    --workdir=runs/dual_rate
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.dual_rate.train")  # imported after distributed start-up
