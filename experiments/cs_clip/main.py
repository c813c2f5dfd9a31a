r"""Runs the CS-CLIP half-truth experiment on synthetic scenes.

  python -m experiments.cs_clip.main --config=experiments/cs_clip/configs/default.py \
      --workdir=runs/cs_clip
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.cs_clip.train")  # imported after distributed start-up
