"""Smoke setting (seconds, compile-dominated): tests, notebook, ``reproduce --quick``.

  python -m experiments.panda.main --config=experiments/panda/configs/smoke.py \
      --workdir=/tmp/panda_smoke

One small synthetic hypergraph, GeDi-HNN vanilla vs PANDA, 2 splits, 15 epochs.
"""

from experiments.panda.configs import default


def get_config():
  c = default.get_config()
  c.data_dir = "none"
  c.synthetic_fallback = ("synthetic-small",)
  c.backbones = ("gedi",)
  c.num_splits = 2
  c.epochs = 15
  c.lrs = (1e-2,)
  c.hidden = 8
  c.heads = 2
  c.arms = ("vanilla", "panda")
  c.fast_compile = True  # compile-dominated at this size
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
