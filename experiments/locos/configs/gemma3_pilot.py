"""Prompt-form pilot for Gemma-3-270M: which prompt makes the pretrained model answer.

  python -m experiments.locos.main --config=experiments/locos/configs/gemma3_pilot.py \
    --workdir=runs/locos_gemma3_pilot

Gemma-3-270M is pretrained, not instruction-tuned: with its chat turns and the answer stem it
answers 7 % of the non-literal probes, too few for the ablation grid. This pilot renders the
same 40 non-literal probes over the *detection* half of the entities (no evaluation item) in
each of four forms -- Gemma's chat turns or plain completion text ("{context}\\n\\nQuestion:
...\\nAnswer: {stem}"), with 0 or 2 solved examples of the same task over entities disjoint
from every probe's (`locos.SHOT_NAMES`, `locos.SHOT_LANDMARKS`) -- and counts the probes the
unablated model answers (ROUGE-1 recall >= 0.5). Rule, fixed before the pilot: the form with
the highest answered rate is used for the Gemma-3 run (`configs/gemma3.py`); a tie goes to
the shorter mean prompt. No ablation is run and nothing else enters the choice.
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
