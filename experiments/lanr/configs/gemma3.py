"""The second reader: the default protocol and claims with Gemma-3-270M as the
frozen reader.

  python -m experiments.lanr.main --config=experiments/lanr/configs/gemma3.py \\
      --workdir=runs/lanr_gemma3

The same world, 201 test questions, heads, seeds, baselines and guards as
`default.py`; only the reader changes (the `gemma3` extra; weights under the
Gemma Terms of Use): Gemma-3-270M in its own chat turns after the same two
worked examples, hidden width 640.
"""

from experiments.lanr.configs import default


def get_config():
  c = default.get_config()
  c.lm = "gemma3"
  return c
