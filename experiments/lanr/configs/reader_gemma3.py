"""The second reader's preconditions on the default world's test questions (judges no claim).

  python -m experiments.lanr.main --config=experiments/lanr/configs/reader_gemma3.py \\
      --workdir=runs/lanr_reader_gemma3

Gemma-3-270M (the `gemma3` extra) reads the 201 test questions of `default.py` closed-book and
with their gold documents, in its own chat turns after the same two worked examples: its
gold-document and closed-book exact match, the two numbers the accuracy claims require of a
reader. The full protocol with this reader is `full.py` (not run on this host).
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.lm = "gemma3"
  c.reader_only = True
  c.claims = ()
  c.issue_verdicts = False
  return c
