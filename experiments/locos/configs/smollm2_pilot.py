"""Prompt-form pilot for SmolLM2-135M-Instruct: which prompt makes the model answer most often.

  python -m experiments.locos.main --config=experiments/locos/configs/smollm2_pilot.py \
    --workdir=runs/locos_smollm2_pilot

In its ChatML turns with the answer stem SmolLM2 answers 28 % of the non-literal evaluation
probes (56 of 200), so about 720 items would be needed for 200 ablated probes. This pilot
is the Gemma-3 pilot's (`configs/gemma3_pilot.py`) on SmolLM2: the same 40 non-literal
probes over the *detection* half of the entities (no evaluation item), rendered in the same
four forms -- ChatML turns without the default system message (the default run's form) or
plain completion text ("{context}\\n\\nQuestion: ...\\nAnswer: {stem}"), with 0 or 2 solved
examples of the same task over entities disjoint from every probe's (`locos.SHOT_NAMES`,
`locos.SHOT_LANDMARKS`) -- counting the probes the unablated model answers (ROUGE-1 recall
>= 0.5). Rule, fixed before the pilot: the form with the highest answered rate is used for
the SmolLM2 run on >= 200 answered probes (`configs/smollm2_200.py`, whose item count is
fixed from this rate before that run); a tie goes to the shorter mean prompt. No ablation is
run and nothing else enters the choice.
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
