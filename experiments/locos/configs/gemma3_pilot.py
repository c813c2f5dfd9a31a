"""Prompt-form pilot for Gemma-3-270M (pretrained): `smollm2_pilot.py`'s forms and rule.

  python -m experiments.locos.main --config=experiments/locos/configs/gemma3_pilot.py \
    --workdir=runs/locos_gemma3_pilot
"""

import ml_collections

from experiments.locos.configs import gemma3, smollm2_pilot


def get_config():
  c = gemma3.get_config()
  c.real.prompt_format, c.real.shots = "chat", 0  # as before the pilot; the forms are below
  c.pilot = ml_collections.ConfigDict()
  c.pilot.num_probes = 40
  c.pilot.forms = (("chat", 0), ("completion", 0), ("chat", 2), ("completion", 2))
  c.issue_verdicts = False  # a pilot chooses the prompt form; it decides no claim
  c.report = smollm2_pilot.REPORT
  return c
