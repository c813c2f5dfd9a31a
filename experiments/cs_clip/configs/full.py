"""Larger synthetic setting for a GPU/TPU host (not run in CI).

  python -m experiments.cs_clip.main --config=experiments/cs_clip/configs/full.py --workdir=runs/cs_clip_full

48,000 training scenes with one unmentioned distractor object and above/below
layouts, 4,000 test scenes, 10 seeds, 4,000 + 2,000 steps at batch 256,
checkpointed every 500 steps and stored per cell, so a rerun resumes. The runs
(3 encoders x 10 seeds, then every encoder with every arm: 3 x 10 x 3) are
sharded over all devices by ``core.Sweep``. The paper-scale run (ViT-B/32 on
COCO with LLM-generated units) is out of scope: no weights or COCO data are
available offline.
"""

from experiments.cs_clip.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      n_train=48000,
      n_test=4000,
      distractors=1,
      vertical=True,
      batch=256,
      pretrain_steps=4000,
      finetune_steps=2000,
      chunk_steps=500,
      seeds=10,
      finetune_encoders=("weak_order", "bow", "positional"),
      control_arms=("clip_ft", "negclip_ft", "cs_ft"),
    )
  )
  return c
