"""Seconds-long smoke setting (tests, notebook, ``reproduce --quick``).

python -m experiments.sola.main --config=experiments/sola/configs/smoke.py
--workdir=runs/sola_smoke

A random-init 1-layer teacher with a byte-level BPE of its own stands in for
SmolLM2.
"""

from experiments.sola import train
from experiments.sola.configs import default


def get_config():
  c = default.get_config()
  c.update(
    dict(
      teacher="random",
      window_chars=80,
      max_len=24,
      n_train=12,
      n_calib=6,
      n_eval=6,
      n_code=4,
      code_modules=("textwrap",),
      student_vocab=160,
      teacher_batch=12,
      kc=8,
      k=2,
      r=2,
      kd_blocks=4,
      iters=5,
      steps=4,
      num_evals=1,
      batch_size=4,
      seeds=2,
    )
  )
  c.student.update(dict(d_model=16, n_layers=1, n_heads=2, ffn_dim=32))
  # every arm of every config (the default run's methods, the ablations, the
  # same-tokenizer reference and the ALM-style loss), so each training path runs
  # in the test suite
  c.methods = train.METHODS
  # claims inherited from default.py; a smoke run judges none
  c.issue_verdicts = False
  return c
