"""The larger synthetic setting for an accelerator host (not run in CI).

  python -m experiments.sscl.main --config=experiments/sscl/configs/full.py \
      --workdir=runs/sscl_full

The default's code path, claims, colour classes and "instance" VFM proxy at 64 x
64 pixels, 40k training images, a 6-block ViT of width 256, 20k CLIP steps and
2k fine-tuning steps per arm, 5 seeds; resumable from its stored cells and chunk
checkpoints.
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
