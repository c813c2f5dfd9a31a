"""Prompt-form pilot for Gemma-3-270M (pretrained): `smollm2_pilot.py`'s forms
and rule.

  python -m experiments.locos.main --config=experiments/locos/configs/gemma3_pilot.py \
    --workdir=runs/locos_gemma3_pilot
"""

from experiments.locos.configs import gemma3, smollm2_pilot


def get_config():
  return smollm2_pilot.pilot(gemma3.get_config())
