"""LOCOS at size on Gemma-3-270M: the twin of `size.py` (SmolLM2), the same
claims and guards.

  python -m experiments.locos.main --config=experiments/locos/configs/size_gemma3.py \
    --workdir=runs/locos_size_gemma3

`gemma3.py`'s probes and prompt form with `size.py`'s grid, protocols and
guards. With 72 query heads the paper's share of heads (50 of 1,152) is k <= 3:
that claim reads k = 1.
"""

from experiments.locos.configs import gemma3, size


def get_config():
  return size.at_size(gemma3.get_config(), "gemma3", "Gemma-3-270M")
