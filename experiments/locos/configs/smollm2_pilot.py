"""Prompt-form pilot for SmolLM2-135M-Instruct: which prompt makes the model
answer most often.

  python -m experiments.locos.main --config=experiments/locos/configs/smollm2_pilot.py \
    --workdir=runs/locos_smollm2_pilot

40 non-literal probes over the detection half of the entities in four forms
(chat turns or completion text, 0 or 2 solved examples); the rule, fixed before
the pilot: the highest unablated answered rate (ROUGE-1 recall >= 0.5) wins, a
tie goes to the shorter prompt.
"""

import ml_collections

from experiments.locos.configs import default
from jaxpapers.core import reporting as R

# The answered count and mean prompt length of every prompt form
# (configs/gemma3_pilot.py too).
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


def pilot(c):
  """``c`` as a pilot: the probes' own form chat turns without examples (as
  before the pilot), 40 probes in each of the four forms; a pilot chooses the
  prompt form, it decides no claim."""
  c.real.prompt_format, c.real.shots = "chat", 0
  c.pilot = ml_collections.ConfigDict(
    dict(
      num_probes=40,
      forms=(("chat", 0), ("completion", 0), ("chat", 2), ("completion", 2)),
    )
  )
  c.issue_verdicts = False
  c.report = REPORT
  return c


def get_config():
  c = default.get_config()
  c.real.buckets = default.SHOT_BUCKETS
  return pilot(c)
