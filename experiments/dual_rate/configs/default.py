"""CPU-scale reproduction on sklearn digits (8x8, class-conditional).

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/default.py \
      --workdir=runs/dual_rate

Trains the single-network baseline (the heavy ViT) and the dual-rate pair (the same ViT as the
context encoder + a light conv denoiser) for the same number of steps, a feature classifier for
the FD-proxy, then MMD students of the baseline and of the dual-rate model. About 30 minutes
on one idle CPU core (3000 training steps per model, 300 MMD steps per student, 500 samples x 3
seeds per row).
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.dataset = "digits"
  c.seed = 0
  # Networks (the encoder and the baseline share the ViT shape).
  c.patch_size = 2
  c.encoder_width = 128
  c.encoder_depth = 2
  c.num_heads = 4
  c.mlp_ratio = 4
  c.feature_dim = 128
  c.denoiser_width = 16
  c.denoiser_blocks = 2
  c.context_channels = 16
  c.denoiser_emb_dim = 32
  c.parametrization = "v"
  c.weighting = "v"
  # Training.
  c.train_steps = 3000
  c.batch_size = 64
  c.learning_rate = 1e-3
  c.warmup_steps = 100
  c.ema_decay = 0.995
  c.checkpoint_every = 500
  # Stale-context training: tau = t + k/N, N drawn per example from train_grid_steps.
  c.max_staleness = 8
  c.train_grid_steps = (8, 16)
  c.p_fresh = 0.4
  c.coupling = "ancestral"  # "ddim" shares eps between z_tau and z_t: see the README
  c.rollout_frac = 0.2
  # Evaluation.
  c.classifier_steps = 200
  c.num_eval_samples = 500
  c.eval_seeds = (0, 1, 2)
  c.sampler = "ddim"
  c.baseline_steps = (4, 8, 16)
  c.dual_steps = (8, 16)
  c.dual_intervals = (1, 2, 4, 8)
  c.time_repeats = 1
  # Moment matching distillation.
  c.mmd_steps = (1, 2, 4, 8)
  c.mmd_dual_steps = (2, 4, 8)
  c.mmd_dual_interval = 2
  c.mmd_train_steps = 300
  c.mmd_learning_rate = 2e-4
  c.grid_samples = 40
  return c
