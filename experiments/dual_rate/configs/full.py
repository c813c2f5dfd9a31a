"""Paper-scale setting: ImageNet 64x64, class-conditional, on GPU/TPU (never run
in CI).

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/full.py \
      --config.data_dir=/path/to/tensorflow_datasets --workdir=runs/dual_rate_imagenet64

Needs `imagenet_resized/64x64` prepared as a TFDS array_record dataset under
`data_dir` (nothing is downloaded); 8+ accelerators for several days.
`heldout.py`'s protocol at scale: 10k samples against a held-out 10k-image
reference, three training seeds, the couplings. The FD-proxy uses a CNN trained
on a 50k-image subset, not Inception.
"""

from experiments.dual_rate.configs import default, heldout


def get_config():
  c = default.get_config()
  c.dataset = "imagenet64"
  c.update(
    dict(
      patch_size=4,  # 16x16 tokens
      encoder_width=1024,
      encoder_depth=24,
      num_heads=16,
      feature_dim=1024,
      denoiser_width=128,
      denoiser_blocks=4,
      context_channels=64,
      denoiser_emb_dim=256,
      train_steps=400_000,
      batch_size=512,
      learning_rate=1e-4,
      warmup_steps=10_000,
      ema_decay=0.9999,
      checkpoint_every=5_000,  # inside every training phase; a rerun resumes
    )
  )
  c.data_parallel = True
  c.prefetch = 4
  c.update(
    dict(
      train_grid_steps=(16, 32, 64, 128),
      classifier_steps=20_000,
      num_eval_samples=10_000,
      eval_seeds=(0, 1, 2),
      baseline_steps=(16, 32, 64, 128, 256),
      dual_steps=(32, 64, 128, 256),
      dual_intervals=(1, 2, 4, 8),
      time_repeats=5,
      mmd_steps=(1, 2, 4, 8),
      mmd_dual_steps=(2, 4, 8),
      mmd_train_steps=50_000,
      mmd_learning_rate=1e-5,
      grid_samples=64,
      no_feature_steps=(64, 128, 256, 512),
      time_methods=(),  # every row
    )
  )
  # heldout.py's protocol at scale: a held-out reference (two disjoint 10k-image
  # validation splits), three training seeds, the couplings (d), EDM-Heun in the
  # target
  c.update(
    dict(
      fd_reference="heldout",
      train_seeds=(0, 1, 2),
      quality_regime_bar=1.2,
      control_couplings=("rollout", "ddim"),
      heun_steps=(32, 64),
      heun_intervals=(1, 2, 4, 8),
      matched_quality_baseline_methods=("baseline", "baseline/heun"),
      matched_quality_dual_methods=("dual-rate", "dual-rate/heun"),
    )
  )
  c.claims = heldout.CLAIMS + tuple(
    x
    for x in default.CLAIMS
    if x["id"] not in {y["id"] for y in heldout.CLAIMS}
  )
  return c
