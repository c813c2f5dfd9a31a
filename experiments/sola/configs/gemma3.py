"""Gemma-3-270M as the second teacher (not run on the shared CPUs: heavy; for a
larger host).

  python -m experiments.sola.main --config=experiments/sola/configs/gemma3.py \
    --workdir=runs/sola_gemma3

The default setting with the teacher swapped for Gemma-3-270M (the ``gemma3``
extra; loaded by ``jaxpapers.lm.load_gemma3``; SentencePiece with byte fallback,
262,144 ids, "▁" for spaces and no dummy prefix, so its character offsets are
exact): the same text, 1k-token Metaspace BPE student, batch, seeds and 24
distilled MCC blocks per window, at the ALM run's 100 steps, with CE only, ULD,
MinED-style, ALM-style and SOLA. The same-tokenizer reference is left out (a
262k-id student softmax). The teacher cache resumes from
``<workdir>/teacher_cache``.

The claims (the ALM run's, fixed before any run) are re-judged on this teacher.
"""

from experiments.sola.configs import alm


def get_config():
  c = alm.get_config()
  c.teacher = "gemma3"
  return c
