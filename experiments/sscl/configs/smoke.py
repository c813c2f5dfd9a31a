"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.sscl.main --config=experiments/sscl/configs/smoke.py
--workdir=runs/sscl_smoke
"""

from experiments.sscl.configs import default


def get_config():
  c = default.get_config()
  c.n_train = 64
  c.n_test = 8
  c.width = 16
  c.embed_dim = 16
  c.depth = 1
  c.text_depth = 1
  c.heads = 2
  c.pretrain_steps = 4
  c.pretrain_chunk = 4
  c.pretrain_batch = 8
  c.finetune_steps = 2
  c.finetune_chunk = 2
  c.finetune_batch = 4
  c.n_views = 2
  c.seeds = 2
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
