"""The larger synthetic setting for an accelerator host (not run in CI).

  python -m experiments.sscl.main --config=experiments/sscl/configs/full.py \
      --workdir=runs/sscl_full

Same code path and claims as the default, scaled where the default run showed the tiny CLIP
learned no dense semantics (raw foreground mIoU below uniform random labels): 64 x 64 images,
40,000 training and 1,024 test images, a ViT of width 256 with 6 blocks (patch 8 -> 8 x 8
patches, 8 heads, embedding 128) and a 2-block text transformer, 20,000 CLIP steps at batch
256, then 2,000 fine-tuning steps per arm at batch 64 with 4 context views; 5 seeds. Each
pre-training and fine-tuning run is checkpointed in chunks and every finished cell is stored,
so an interrupted run resumes by rerunning on the same workdir.

This is still the procedural shapes world with the default's colour classes and grouping-only
"instance" VFM proxy: the paper's CLIP/DINO
weights and datasets are not available offline, and none is wired in here.
"""

from experiments.sscl.configs import default


def get_config():
  c = default.get_config()
  c.n_train = 40_000
  c.n_test = 1_024
  c.size = 64
  c.patch = 8
  c.width = 256
  c.depth = 6
  c.text_depth = 2
  c.heads = 8
  c.embed_dim = 128
  c.pretrain_steps = 20_000
  c.pretrain_chunk = 1_000
  c.pretrain_batch = 256
  c.lr = 1e-3
  c.finetune_steps = 2_000
  c.finetune_chunk = 500
  c.finetune_batch = 64
  c.n_views = 4
  c.seeds = 5
  return c
