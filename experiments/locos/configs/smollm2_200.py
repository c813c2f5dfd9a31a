"""SmolLM2-135M-Instruct on >= 200 answered evaluation probes, in the pilot's
prompt form.

  python -m experiments.locos.main --config=experiments/locos/configs/smollm2_200.py \
    --workdir=runs/locos_smollm2_200

`default.py` with the form the pilot chose (ChatML turns with 2 solved examples)
and 341 items (raised from the first launch's 290 from the unablated answered
rate alone, before any ablation was scored).
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  r = c.real
  r.prompt_format = "chat"  # chosen by the pilot (configs/smollm2_pilot.py)
  r.shots = 2
  r.num_eval = 341
  r.buckets = default.SHOT_BUCKETS
  r.time_budget_s = 2700
  return c
