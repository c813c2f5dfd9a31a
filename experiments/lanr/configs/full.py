"""Paper-scale setting for a GPU/TPU host (documented, not run in CI).

  python -m experiments.lanr.main --config=experiments/lanr/configs/full.py --workdir=runs/lanr_full

The same frozen-LM protocol on the largest synthetic world the generator allows (375 people),
with more questions and seeds. Joint fine-tuning of the LM (the paper's setting: L_gen + L_ret
+ L_ctl with LoRA on a 1-8B decoder over Wikipedia-scale corpora) is not implemented here.
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.kb.n_people = 375
  c.kb.n_cities = 60
  c.kb.n_countries = 15
  c.kb.n_companies = 40
  c.n_train_per_hop = 240
  c.n_test_per_hop = 100
  c.rep_dim = 256
  c.steps = 2000
  c.lm_batch = 64
  c.seeds = 5
  return c
