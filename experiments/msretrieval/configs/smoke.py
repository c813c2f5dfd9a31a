"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.msretrieval.main
--config=experiments/msretrieval/configs/smoke.py
--workdir=runs/msretrieval_smoke
"""

from experiments.msretrieval.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      n_molecules=120,
      n_bits=128,
      n_bins=100,
      max_test_queries=24,
      train_cands=8,
      eval_cands=24,
      seeds=2,
      steps=20,
      batch=8,
      warmup=5,
      hidden=(32,),
      embed_dim=32,
      toy_bits=(6,),
      toy_cands=(3,),
      toy_flip=(0.1, 0.4),
      toy_problems=16,
      placebo_shuffles=3,
      chunk=0,  # one fused program (init + all steps): one compile
    )
  )
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
