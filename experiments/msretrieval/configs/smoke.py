"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.msretrieval.main --config=experiments/msretrieval/configs/smoke.py --workdir=runs/msretrieval_smoke
"""

from experiments.msretrieval.configs import default


def get_config():
  c = default.get_config()
  c.n_molecules = 120
  c.n_bits = 128
  c.n_bins = 100
  c.max_test_queries = 24
  c.train_cands = 8
  c.eval_cands = 24
  c.seeds = 2
  c.steps = 20
  c.chunk = 0  # one fused program (init + all steps): one compile
  c.batch = 8
  c.warmup = 5
  c.hidden = (32,)
  c.embed_dim = 32
  c.toy_bits = (6,)
  c.toy_cands = (3,)
  c.toy_flip = (0.1, 0.4)
  c.toy_problems = 16
  c.placebo_shuffles = 3
  c.issue_verdicts = False  # claims inherited from default.py; a smoke run judges none
  return c
