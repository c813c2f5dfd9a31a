"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.cs_clip.main --config=experiments/cs_clip/configs/smoke.py
--workdir=runs/cs_clip_smoke
"""

from experiments.cs_clip.configs import default


def get_config():
  c = default.get_config()
  # 12 x 12 images (4-pixel grid cells): at 24 x 24 the tests' setting (8 fake
  # devices, XLA at -O0) spent about 20 s executing the two tiny convolutions,
  # against about 0 s at 12 x 12; one chunk per grid: one fused compilation
  c.update(
    dict(
      n_train=128,
      size=12,
      n_test=32,
      dim=16,
      batch=16,
      pretrain_steps=4,
      finetune_steps=4,
      seeds=2,
      chunk_steps=4,
      n_boot=200,
    )
  )
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
