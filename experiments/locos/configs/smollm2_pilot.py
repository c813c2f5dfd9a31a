"""Prompt-form pilot for SmolLM2-135M-Instruct: which prompt makes the model answer most often.

  python -m experiments.locos.main --config=experiments/locos/configs/smollm2_pilot.py \
    --workdir=runs/locos_smollm2_pilot

40 non-literal probes over the detection half of the entities in four forms (chat turns or
completion text, 0 or 2 solved examples); the rule, fixed before the pilot: the highest
unablated answered rate (ROUGE-1 recall >= 0.5) wins, a tie goes to the shorter prompt.
"""

import ml_collections

from experiments.locos.configs import default
from jaxpapers.core import reporting as R

# The answered count and mean prompt length of every prompt form (configs/gemma3_pilot.py too).
REPORT = R.Report(
  tables=(
    R.Table(
      over="metrics.pilot/forms",
      when="metrics.pilot/forms",
      columns=R.columns(
        "form={key}; answered={answered}/{metrics.pilot/num_probes}; "
        "mean prompt tokens=mean_prompt_tokens"
      ),
    ),
  ),
)


def get_config():
  c = default.get_config()
  r = c.real
  r.prompt_format, r.shots = "chat", 0  # the default run's form; the pilot's forms are below
  r.buckets = (40, 64, 80, 112, 160, 192, 224, 256, 320)  # up to 2 solved examples
  c.pilot = ml_collections.ConfigDict()
  c.pilot.num_probes = 40
  c.pilot.forms = (("chat", 0), ("completion", 0), ("chat", 2), ("completion", 2))
  c.issue_verdicts = False  # a pilot chooses the prompt form; it decides no claim
  c.report = REPORT
  return c
