"""SmolLM2-135M-Instruct on >= 200 answered evaluation probes, in the pilot's prompt form.

  python -m experiments.locos.main --config=experiments/locos/configs/smollm2_200.py \
    --workdir=runs/locos_smollm2_200

The default run (`default.py`, committed in `results/`) renders the probes as ChatML turns
without examples; SmolLM2 answers 56 of its 200 items (28 %), so it ablates 56 probes. This
config changes only the prompt form and the item count; the entities, split, item generator,
detectors, grid, protocols and claim rules (`default.real_claims`) are the default run's.

Prompt form, fixed by the pilot before this run (`configs/smollm2_pilot.py`, committed in
`results/smollm2_200/pilot/`; the rule: the highest unablated answered rate on 40
detection-half probes, ties to the shorter prompt, no ablation looked at): **ChatML turns with
2 solved examples** (a user turn with a haystack, needle and non-literal question over
`locos.SHOT_NAMES` / `SHOT_LANDMARKS`, which share no name, landmark or city with any probe,
and an assistant turn "The character who has been to Boston is Jonas."), then the probe's
user turn and the assistant turn opened with the stem. Pilot answered rates: chat 0 examples
9/40, completion 0 examples 13/40, chat 2 examples 29/40 (72.5 %), completion 2 examples
16/40. The detection trials and the mean-query calibration prompts use the same form, so the
heads are detected again (24 detection probes, as before); the parametric (landmark -> city)
probes keep the default run's ChatML turns and stem.

Item count. Fixed before the run from the pilot's rate: 290 evaluation items (210 / 0.725).
The unablated model answered 179 of them (61.7 %, below the pilot's 72.5 %), too few for the
>= 200 ablated probes this run is for. Before any ablated generation was scored, the count was
raised, from that answered rate alone, to **341 items** (ceil(210 x 290 / 179)), about 210
answered; the generator draws items in order, so the first 290 are the first launch's, and
its cells (`stem/n=290/...`: its unablated generations and its ablation rows on the answered
probes) are read back row by row (`real.reuse_from = ((290, 0),)`: same probe, same head set;
random-heads rows whose seed block moved are generated again). The unablated model and every
ablation run on all answered probes (`real.ablation_num_eval = 0`). The first 200 items are
the default run's items rendered in the new form (no cell of that run is reused: every prompt
changed). Cells run in the default priority order under the time budget; those not started are
listed in `results.json`.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  r = c.real
  r.prompt_format = "chat"  # chosen by the pilot (configs/smollm2_pilot.py)
  r.shots = 2
  # first launch: 290 items (210 / 0.725, the pilot's rate), 179 answered; raised before any
  # ablation was scored to 210 / (179 / 290) items, whose first 290 are that launch's
  r.num_eval = 341
  r.reuse_from = ((290, 0),)
  r.ablation_num_eval = 0
  r.buckets = (40, 64, 80, 112, 160, 192, 224, 256, 320)  # up to 2 solved examples
  r.time_budget_s = 2700
  return c
