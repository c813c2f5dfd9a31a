r"""FlashSSM-3D experiment binary.

  python -m experiments.flashssm3d.main --config=experiments/flashssm3d/configs/default.py \
      --workdir=runs/flashssm3d
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.flashssm3d.train")  # imported after distributed start-up
