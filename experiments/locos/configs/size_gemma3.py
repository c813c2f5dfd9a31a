"""LOCOS at size on Gemma-3-270M: the twin of `size.py` (SmolLM2), the same claims and guards.

  python -m experiments.locos.main --config=experiments/locos/configs/size_gemma3.py \
    --workdir=runs/locos_size_gemma3

The probes, prompt form (plain completion text with 2 solved examples, chosen by the committed
pilot), detection (32 probes) and item count (260 evaluation items; 213 answered in the same
form in `configs/gemma3.py`'s run) are `gemma3.py`'s. As in `size.py`, fixed before this run:
the paper's protocol on the first 200 items at k in {1, 5, 20, 50}; only LOCOS, contrastive
attention and random heads on that grid; no cell read back from an earlier run and none
skipped; the guards of `size.size_claims`. Gemma-3-270M has 72 query heads, so the paper's
share of heads (50 of 1,152) is k <= 3: the share-matched random-heads claim reads k = 1.
"""

from experiments.locos.configs import gemma3, size


def get_config():
  c = gemma3.get_config()
  r = c.real
  r.reuse_from = ()
  r.ks = (1, 5, 20, 50)
  r.detectors = ("locos", "contrastive")
  r.paper_num_eval = 200
  r.paper_ks = (1, 5, 20, 50)
  r.time_budget_s = 0
  c.claims = size.size_claims("gemma3", "Gemma-3-270M")
  return c
