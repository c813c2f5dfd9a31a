"""Paper-scale PANDA benchmark for a GPU/TPU host (not run in CI).

  python -m experiments.panda.main --config=experiments/panda/configs/full.py \
      --workdir=runs/panda_full

All sets including Pubmed and two ablations, 500 epochs, 10 splits, hidden 64,
raw features, a 3 x 3 lr x weight-decay grid equal for both arms, a checkpoint
every 100 epochs.
"""

from experiments.panda.configs import default


def get_config():
  c = default.get_config()
  more = (
    "chameleon chameleon-directed email-EU cora citeseer pubmed inter10 "
    "inter30 inter50"
  )
  c.update(
    dict(
      datasets=c.datasets + tuple(more.split()),
      arms=(
        "vanilla",
        "panda",
        "vanilla_matched",
        "without_aux",
        "without_prior_aux",
      ),
      num_splits=10,
      phenom_steps=8,
      epochs=500,
      lrs=(1e-3, 5e-3, 1e-2),
      weight_decays=(0.0, 5e-4, 5e-3),
      hidden=64,
      max_features=0,
      fast_compile=False,
      chunk=100,  # an orbax checkpoint every 100 epochs inside each cell
    )
  )
  return c
