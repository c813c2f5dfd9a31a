"""Paper-scale setting for a GPU/TPU host (not run in CI).

  python -m experiments.margins.main --config=experiments/margins/configs/full.py --workdir=runs/margins_full

Expected hardware: one accelerator with >= 16 GB (the largest cell fits 20,000
sampled rows x n = 1024 documents x d = 256 full batch). n up to 1024 documents
with 20,000 sampled k-subsets per cell, k up to 8, d up to 256, 5 seeds, 5000
steps; critical n for k = 2 up to d = 32 (n_max 512). Expect a few accelerator
hours. Not measured here. The (dimension x seed) fits of a cell are sharded over
all devices (``core.Sweep``) and checkpointed every 1000 steps, so a preempted
cell resumes from its last checkpoint.
"""

from experiments.margins.configs import default


def get_config():
  c = default.get_config()
  c.ns = (16, 64, 256, 1024)
  c.ks = (1, 2, 3, 4, 8)
  c.ds = (4, 8, 16, 32, 64, 128, 256)
  c.max_rows = 20000
  c.sample_rows = 20000
  c.loss_n = 64
  c.seeds = 5
  c.steps = 5000
  c.svm_steps = 2000
  c.critical_ds = (2, 4, 6, 8, 12, 16, 24, 32)
  c.critical_n_max = 512
  c.critical_restarts = 4
  c.critical_steps = 5000
  c.chunk = 1000  # an orbax checkpoint every 1000 steps inside each fitted cell
  # the same rules; preconditions on this (n, k, d) grid
  c.claims = default.claims_for(c)
  return c
