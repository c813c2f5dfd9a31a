"""Paper-scale PANDA benchmark for a GPU/TPU host (not run in CI).

  python -m experiments.panda.main --config=experiments/panda/configs/full.py \
      --workdir=runs/panda_full

Expected hardware: one modern GPU (hours). The splits of a cell are vmapped and sharded over
all devices (``core.Sweep``) and checkpointed every 100 epochs. All sets including Pubmed and the
ablations, 500 epochs, 10 splits, hidden 64, raw features, a 3 x 3 grid over lr and weight decay (the
reference uses 100 Optuna trials; a grid of the same size for both arms keeps the budget equal). Expected: PANDA >= vanilla on average, largest gains on heterophilous sets.
"""

from experiments.panda.configs import default


def get_config():
  c = default.get_config()
  c.datasets = default.get_config().datasets + (
    "chameleon",
    "chameleon-directed",
    "email-EU",
    "cora",
    "citeseer",
    "pubmed",
    "inter10",
    "inter30",
    "inter50",
  )
  c.arms = ("vanilla", "panda", "vanilla_matched", "without_aux", "without_prior_aux")
  c.num_splits = 10
  c.phenom_steps = 8
  c.epochs = 500
  c.lrs = (1e-3, 5e-3, 1e-2)
  c.weight_decays = (0.0, 5e-4, 5e-3)
  c.hidden = 64
  c.max_features = 0
  c.fast_compile = False
  c.chunk = 100  # an orbax checkpoint every 100 epochs inside each cell
  return c
