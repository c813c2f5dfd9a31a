"""Smoke setting (seconds, compile-dominated): tests, notebook,
``reproduce --quick``.

  python -m experiments.panda.main --config=experiments/panda/configs/smoke.py \
      --workdir=/tmp/panda_smoke

One small synthetic hypergraph, GeDi-HNN vanilla vs PANDA, 2 splits, 15 epochs.
"""

from experiments.panda.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      data_dir="none",
      synthetic_fallback=("synthetic-small",),
      backbones=("gedi",),
      num_splits=2,
      epochs=15,
      lrs=(1e-2,),
      hidden=8,
      heads=2,
      arms=("vanilla", "panda"),
      fast_compile=True,  # compile-dominated at this size
    )
  )
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
