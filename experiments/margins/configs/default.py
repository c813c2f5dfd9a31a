"""CPU-scale reproduction (a few minutes on 2 CPU cores).

  python -m experiments.margins.main --config=experiments/margins/configs/default.py --workdir=runs/margins

n in {16, 64} documents, k in {1, 2, 3, 4}, d in {4, ..., 64}; all k-subsets when there
are at most 2000 of them, otherwise 512 distinct random k-subsets (n = 64, k >= 2).
The loss comparison (sigmoid, sigmoid with b = 0, InfoNCE, direct margin) runs at n = 16
with 3 seeds; critical n for k = 2, d in {2, ..., 8}.
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.ns = (16, 64)
  c.ks = (1, 2, 3, 4)
  c.ds = (4, 8, 16, 32, 64)
  c.max_rows = 2000
  c.sample_rows = 512
  c.loss_n = 16
  c.losses = ("sigmoid", "sigmoid_b0", "infonce", "margin")
  c.seeds = 3
  c.steps = 1500
  c.lr = 0.02
  c.svm_steps = 500
  c.critical_k = 2
  c.critical_ds = (2, 3, 4, 5, 6, 8)
  c.critical_n_max = 48
  c.critical_restarts = 3
  c.critical_steps = 1000
  c.critical_loss = "infonce"
  c.threshold_C = 2.0
  c.seed = 0
  c.chunk = 0  # optimisation steps per compiled chunk and checkpoint (0 = all steps)
  return c
