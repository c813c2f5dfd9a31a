"""Smoke setting (seconds of compute, dominated by compilation): tests, notebook, reproduce --quick.

  python -m experiments.panda.main --config=experiments/panda/configs/smoke.py \
      --workdir=/tmp/panda_smoke

One small synthetic hypergraph (no data files), GeDi-HNN vanilla vs PANDA, 2 splits, 15 epochs
(compilation dominates on CPU; the notebook shows HGNN).
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
