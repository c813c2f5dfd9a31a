r"""Runs the LeanSearch v2 experiment (single-query search and global premise
retrieval).

  python -m experiments.leansearch.main --config=experiments/leansearch/configs/default.py \
      --workdir=runs/leansearch
"""

from jaxpapers.core import app

if __name__ == "__main__":
  app.run("experiments.leansearch.train")  # imported after distributed start-up
