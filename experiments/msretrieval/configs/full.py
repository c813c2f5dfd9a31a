"""A larger setting for a GPU/TPU host (not run in CI).

  python -m experiments.msretrieval.main --config=experiments/msretrieval/configs/full.py \
      --workdir=runs/msretrieval_full

The reference's encoder sizes (MLP 2 x 1024, embedding 1024, 4096-bit
fingerprints, bins of 0.1 Da up to 1005 m/z), 256-candidate pools and 20,000
steps of batch 64, still on the bundled molecules with simulated spectra
(MassSpecGym itself: read it with ``jaxpapers.msretrieval.read_massspecgym``
from a data_dir; not wired into this binary). Objective x seed runs are sharded
over all devices by ``core.Sweep`` and checkpointed every 2,000 steps. Expected:
under an hour on one modern accelerator. Not measured here.
"""

from experiments.msretrieval.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      n_molecules=0,  # every bundled molecule (~15.9k)
      n_bits=4096,
      n_bins=10050,
      max_mz=1005.0,
      max_test_queries=3000,
      train_cands=128,
      eval_cands=256,
      steps=20000,
      chunk=2000,
      batch=64,
      lr=1e-4,
      warmup=500,
      hidden=(1024, 1024),
      embed_dim=1024,
      toy_problems=2000,
    )
  )
  return c
