"""The quality regime: the claims of configs/seeds.py where "matched quality" is
near the data.

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/quality.py \
      --workdir=runs/dual_rate_quality

Fixed before the run, with `default.py`'s claims and rules: 6000 training steps
per network (no early stop), the best baseline within 1.2x of the floor as a
declared check (`quality_regime_bar`), N = 1000 samples for the floor and every
row (797 train / 1000 held-out digits), EDM-Heun in the matched-quality target,
training seeds 0-2 with one cell per (seed, phase), the main claim's cell first.
"""

from experiments.dual_rate.configs import default


def regime(c):
  """The quality regime's training, sampler grid and matched-quality target
  (heldout.py too)."""
  c.update(
    dict(
      train_steps=6000,
      checkpoint_every=1000,
      num_test=1000,
      quality_regime_bar=1.2,
      baseline_steps=(4, 8, 16, 32),
      dual_steps=(8, 16),
      dual_intervals=(1, 2, 4, 8),
      heun_steps=(8, 16),
      heun_intervals=(1, 2, 4, 8),
      # EDM-Heun for every seed: it is part of the target
      extra_control_seeds=(),
      matched_quality_baseline_methods=("baseline", "baseline/heun"),
      matched_quality_dual_methods=("dual-rate", "dual-rate/heun"),
      time_methods=("baseline", "dual-rate", "baseline/heun", "dual-rate/heun"),
    )
  )
  return c


def get_config():
  c = regime(default.get_config())
  c.train_seeds = (0, 1, 2)
  c.num_eval_samples = 1000
  # controls and distillation (after the main claim's cell of each seed)
  c.fresh_only_intervals = (4, 8)
  c.mmd_steps = (2,)
  c.mmd_train_steps = 300
  return c
