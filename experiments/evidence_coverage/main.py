r"""Runs the effective-evidence-coverage experiment (top-k sweeps on shifted
linear ICL).

  python -m experiments.evidence_coverage.main \
      --config=experiments/evidence_coverage/configs/default.py --workdir=runs/evidence_coverage
"""

from jaxpapers.core import app

if __name__ == "__main__":
  # imported after distributed start-up
  app.run("experiments.evidence_coverage.train")
