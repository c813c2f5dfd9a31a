"""Larger setting for an accelerator host (not run in CI; not measured here).

  python -m experiments.bayes_memory.main --config=experiments/bayes_memory/configs/full.py \
      --workdir=runs/bayes_memory_full

5 seeds x 200 dialogues x 3 questions over 12-turn histories with
SmolLM2-135M-Instruct (about 36k scored rows); every dialogue's scores are a
cell of the on-disk store, so an interrupted run resumes where it stopped. The
paper's own benchmarks are not public.
"""

from experiments.bayes_memory.configs import default


def get_config():
  c = default.get_config()
  c.seeds = (3, 4, 5, 6, 7)  # fresh data seeds, as in default.py
  c.n_dialogues = 200
  c.n_turns = 12
  c.n_queries = 3
  c.buckets = (64, 96, 128, 192, 256, 320)
  c.batch_tokens = 8192
  c.steps = 1000
  c.greedy_k = 3
  c.group_dialogues = 16
  c.claims = default.make_claims(len(c.seeds) * c.n_dialogues * c.n_queries)
  return c
