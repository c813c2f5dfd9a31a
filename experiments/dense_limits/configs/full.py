"""Paper-scale setting for a GPU/TPU host (not run in CI).

  python -m experiments.dense_limits.main --config=experiments/dense_limits/configs/full.py \
      --workdir=runs/dense_limits_full

Widths up to 4096, three learning rates, 3000 steps, the weight bound swept over
B in {1, 2, 4, 8, 16, 64} (the dense class and its width-unbounded control); the
runs of each cell are vmapped and sharded over all devices by the sweep engine,
and every finished cell is stored, so a rerun resumes cell by cell.
"""

from experiments.dense_limits.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      widths=(16, 64, 256, 1024, 4096),
      lrs=(1e-3, 3e-3, 1e-2),
      steps=3000,
      batch=256,
      bump_d=8,
      bump_grid=2,
      n_train=8192,
      n_test=2048,
      compress_ks=(1, 2, 4, 8, 16, 32, 64),
      fk_size=1024,
      fk_k=64,
      bounds=(1.0, 2.0, 4.0, 8.0, 16.0, 64.0),
    )
  )
  c.claims = default.claims(c.bounds)
  return c
