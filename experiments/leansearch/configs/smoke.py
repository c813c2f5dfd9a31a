"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``): the
three fixture files.

python -m experiments.leansearch.main
--config=experiments/leansearch/configs/smoke.py --workdir=runs/leansearch_smoke
"""

from experiments.leansearch.configs import default


def get_config():
  c = default.get_config()
  c.corpus = "fixture"
  c.min_doc_words = 3
  c.min_premises = 1
  c.n_buckets = 1024
  c.feat_len = 32
  c.dim = 16
  c.hidden = 16
  c.steps = 30
  c.batch = 16
  c.big_loop = 1
  c.search_top_k = 5
  c.output_top_k = 10
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
