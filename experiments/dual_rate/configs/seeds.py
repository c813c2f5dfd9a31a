"""Every network trained from three seeds: the claims decided over training
seeds.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/seeds.py \
      --workdir=runs/dual_rate_seeds

The default setting trained from seeds 0, 1 and 2 (a row's std is the spread
over training seeds), with the couplings and EDM-Heun for seed 0 only;
`default.py`'s claims.
"""

from experiments.dual_rate.configs import default


def get_config():
  c = default.get_config()
  c.train_seeds = (0, 1, 2)
  c.num_eval_samples = 300
  c.no_feature_steps = (16, 32)
  c.fresh_only_intervals = (4, 8)
  c.mmd_steps = (2,)
  c.mmd_dual_steps = (4,)
  c.mmd_train_steps = 100
  c.time_methods = ("baseline", "dual-rate", "no-features")
  c.control_couplings = ("rollout", "ddim")
  c.heun_steps = (8,)
  # couplings and Heun for training seed 0 only (time)
  c.extra_control_seeds = (0,)
  return c
