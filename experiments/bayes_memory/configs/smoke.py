"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``): a tiny
random decoder.

python -m experiments.bayes_memory.main --config=experiments/bayes_memory/configs/smoke.py \
    --workdir=runs/bayes_memory_smoke
"""

from experiments.bayes_memory.configs import default


def get_config():
  c = default.get_config()
  c.model = "tiny"
  c.seeds = (0, 1)
  c.n_dialogues = 2
  c.buckets = (128,)  # one LM compilation
  c.batch_tokens = 1024
  c.feature_len = 24
  c.steps = 20
  c.hidden = 16
  c.n_boot = 100
  c.greedy_k = 2  # exercises greedy set selection (off in default.py)
  c.group_dialogues = 4
  c.scoring = "rows"  # the row path (default.py runs the shared-prefix path)
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
