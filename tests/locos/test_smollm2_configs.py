"""The SmolLM2 pilot and >= 200-probe configs agree with the committed pilot's
choice."""

import json
import math
import pathlib

from experiments.locos.configs import default, smollm2_200, smollm2_pilot

RESULTS = (
  pathlib.Path(__file__).resolve().parents[2] / "experiments/locos/results"
)


def test_pilot_config_runs_the_gemma3_pilots_forms_on_smollm2():
  c = smollm2_pilot.get_config()
  assert c.tracks == ("smollm2",)
  assert c.pilot.num_probes == 40
  assert tuple(map(tuple, c.pilot.forms)) == (
    ("chat", 0),
    ("completion", 0),
    ("chat", 2),
    ("completion", 2),
  )
  assert not c.real.system_prompt  # the default run's ChatML turns


def test_200_config_uses_the_pilots_choice_and_item_count():
  pilot = json.loads((RESULTS / "smollm2_200/pilot/results.json").read_text())[
    "metrics"
  ]
  forms = pilot["pilot/forms"]
  # the pilot's rule: highest answered rate, ties to the shorter mean prompt
  best = max(
    forms,
    key=lambda k: (forms[k]["answered_rate"], -forms[k]["mean_prompt_tokens"]),
  )
  assert best == pilot["pilot/chosen"]
  c = smollm2_200.get_config()
  assert (c.real.prompt_format, c.real.shots) == (
    forms[best]["prompt_format"],
    forms[best]["shots"],
  )
  # the first launch's items: 210 / the pilot's rate; then 210 / the answered
  # rate it found
  first = 290  # the first launch's items
  assert first == math.ceil(210 / forms[best]["answered_rate"])
  assert c.real.num_eval == math.ceil(210 * first / 179)
  assert c.real.ablation_num_eval == 0
  # everything the claims depend on is the default run's
  d = default.get_config()
  assert [x["id"] for x in c.claims] == [x["id"] for x in d.claims]
  for key in (
    "ks",
    "claim_ks",
    "claim_baselines",
    "num_random",
    "num_detect",
    "max_steps",
  ):
    assert c.real[key] == d.real[key], key
