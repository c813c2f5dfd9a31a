"""Larger setting for a GPU/TPU host (not run in CI).

  python -m experiments.evidence_coverage.main \
      --config=experiments/evidence_coverage/configs/full.py --workdir=runs/evidence_coverage_full

d = 32, mean cluster sizes 49 to 781 at pool sizes 25k to 400k, 8192 test
queries sharded over all devices (the query blocks must divide the device
count), budgets up to 4096, the shift grid {0, 0.5, 1, 2}^2 and 5 seeds. Every
cell is stored, so a rerun resumes cell by cell. The paper's own full setting
(1-8B readers on real QA / verification / NLI sets) is not reproduced here.
"""

from experiments.evidence_coverage.configs import default


def get_config():
  c = default.get_config()
  c.d = 32
  c.settings = (
    (25_000, 512),
    (100_000, 2048),
    (100_000, 512),
    (400_000, 512),
    (100_000, 128),
  )
  c.n_dev = 2048
  c.n_test = 8192
  c.query_chunk = 1024
  c.ks = tuple(2**i for i in range(13))
  c.s_x = (0.0, 0.5, 1.0, 2.0)
  c.s_w = (0.0, 0.5, 1.0, 2.0)
  c.seeds = 5
  return c
