"""Paper-scale setting: ImageNet 64x64, class-conditional, on GPU/TPU (never run in CI).

  python -m experiments.dual_rate.main --config=experiments/dual_rate/configs/full.py \
      --config.data_dir=/path/to/tensorflow_datasets --workdir=runs/dual_rate_imagenet64

Needs `imagenet_resized/64x64` prepared as a TFDS array_record dataset under `data_dir`
(nothing is downloaded); 8+ accelerators for several days. `heldout.py`'s protocol at scale:
10k samples against a held-out 10k-image reference, three training seeds, the couplings. The
FD-proxy uses a CNN trained on a 50k-image subset, not Inception.
"""

from experiments.dual_rate.configs import default, heldout


def get_config():
  c = default.get_config()
  c.dataset = "imagenet64"
  c.data_dir = ""  # '' -> $JAXPAPERS_DATA_DIR or ../shared/data (core.resolve_data_dir)
  c.classifier_subset = 50_000
  c.patch_size = 4  # 16x16 tokens
  c.encoder_width = 1024
  c.encoder_depth = 24
  c.num_heads = 16
  c.feature_dim = 1024
  c.denoiser_width = 128
  c.denoiser_blocks = 4
  c.context_channels = 64
  c.denoiser_emb_dim = 256
  c.train_steps = 400_000
  c.batch_size = 512
  c.learning_rate = 1e-4
  c.warmup_steps = 10_000
  c.ema_decay = 0.9999
  c.checkpoint_every = 5_000  # inside every training phase; a rerun resumes
  c.data_parallel = True  # batch sharded over all devices, parameters replicated
  c.prefetch = 4  # host batches read ahead on a background thread
  c.train_grid_steps = (16, 32, 64, 128)
  c.classifier_steps = 20_000
  c.num_eval_samples = 10_000
  c.eval_seeds = (0, 1, 2)
  c.baseline_steps = (16, 32, 64, 128, 256)
  c.dual_steps = (32, 64, 128, 256)
  c.dual_intervals = (1, 2, 4, 8)
  c.time_repeats = 5
  c.mmd_steps = (1, 2, 4, 8)
  c.mmd_dual_steps = (2, 4, 8)
  c.mmd_train_steps = 50_000
  c.mmd_learning_rate = 1e-5
  c.grid_samples = 64
  c.no_feature_steps = (64, 128, 256, 512)
  c.time_methods = ()  # every row
  # The protocol of configs/heldout.py at scale: every row and the floor against a held-out
  # reference (two disjoint 10k-image splits of the validation set), three training seeds, the
  # couplings (d) trained as long as the pair and sampled at its N and K, EDM-Heun in the target.
  c.fd_reference = "heldout"
  c.train_seeds = (0, 1, 2)
  c.phase_cells = True
  c.quality_regime_bar = 1.2
  c.control_couplings = ("rollout", "ddim")
  c.heun_steps = (32, 64)
  c.heun_intervals = (1, 2, 4, 8)
  c.matched_quality_baseline_methods = ("baseline", "baseline/heun")
  c.matched_quality_dual_methods = ("dual-rate", "dual-rate/heun")
  c.claims = heldout.CLAIMS + tuple(
    x for x in default.CLAIMS if x["id"] not in {y["id"] for y in heldout.CLAIMS}
  )
  return c
