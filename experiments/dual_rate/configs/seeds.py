"""Every network trained from three seeds: the claims decided over training seeds.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/seeds.py \
      --workdir=runs/dual_rate_seeds

The default setting (1000 training steps per network) with the sampler settings of the
committed default run (300 samples x 3 sampling seeds per row, two no-feature step counts, one
MMD student per family with 100 MMD steps), trained from seeds 0, 1 and 2, plus the couplings
side by side (d: rollout and the leaking DDIM pair, one more training each) and EDM-Heun (f)
for training seed 0 only (``extra_control_seeds``; the time of a shared 2-core host).
Each training seed is one resumable cell of ``core.CellStore`` (``<workdir>/cells``); a row's
FD-proxy is the mean over training seeds and its std the spread over training seeds. The claims
and their rules are those of ``configs/default.py``, unchanged.
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
  c.extra_control_seeds = (0,)  # couplings and Heun for training seed 0 only (time)
  return c
