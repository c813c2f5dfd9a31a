"""The real-model track's statistics on synthetic per-probe scores (no model weights).

The collapse rule is judged on the claim's grid and baselines only (configs/default.py), the
full-grid statistics sit beside it, random seeds cycle over batches, and the derived metrics
are keyed by track (SmolLM2 and Gemma-3 alike).
"""

import numpy as np

from experiments.locos import ablation, evaluate
from experiments.locos.configs import default, gemma3
from jaxpapers import locos

KS = [1, 2, 5, 10, 20, 50]


def _res(curves, n=10):
  """res[(name, k)] = per-probe scores: every probe scores curve[k] (baseline 1.0)."""
  res = {("baseline", 0): np.ones(n)}
  for d, vals in curves.items():
    for k, v in zip(KS, vals):
      res[(d, k)] = np.full(n, v)
  return res


def test_claim_uses_its_grid_and_baseline_only():
  # LOCOS halves at k = 2, contrastive at k = 5, Wu never: on the claim grid {1, 5, 20, 50}
  # both collapse at its second entry (a tie); the full grid sees LOCOS one step earlier
  res = _res(
    {
      "locos": [1.0, 0.4, 0.0, 0.0, 0.0, 0.0],
      "contrastive": [1.0, 0.9, 0.2, 0.0, 0.0, 0.0],
      "wu": [1.0] * 6,
      "random": [1.0] * 6,
    }
  )
  cv = locos.collapse_curves(
    res,
    ("locos", "contrastive", "wu"),
    KS,
    np.arange(10),
    200,
    0,
    claim_ks=(1, 5, 20, 50),
    claim_baselines=("contrastive",),
  )
  assert cv["collapse_step_advantage"] == 0.0
  assert cv["collapse_k"] == {"locos": 5, "contrastive": 5, "wu": None, "random": None}
  assert cv["collapse_k_full_grid"]["locos"] == 2
  assert cv["advantage_full_grid"]["contrastive"]["advantage"] == 1.0
  # Wu never collapses: one past the full grid (index 6) minus LOCOS's index 1
  assert cv["advantage_full_grid"]["wu"]["advantage"] == 5.0
  # with Wu as a claim baseline the strongest baseline is still contrastive
  cv2 = locos.collapse_curves(
    res, ("locos", "contrastive", "wu"), KS, np.arange(10), 200, 0, claim_baselines=("wu",)
  )
  assert cv2["collapse_step_advantage"] == 5.0


def test_seed_blocks_cycle_over_batches_across_buckets():
  class P:
    def __init__(self, n):
      self.prompt_ids = [0] * n

  probes = [P(30)] * 20 + [P(70)] * 21  # two buckets: 3 + 3 batches of 8
  seeds = ablation.seed_blocks(probes, dict(pad_to=(64, 80), batch_size=8), 5)
  assert sorted(set(seeds.tolist())) == [0, 1, 2, 3, 4]
  assert len(set(seeds[:8].tolist())) == 1  # one seed per batch


def test_derived_metrics_per_track_and_claims_per_model():
  cv = {
    "ks": KS,
    "claim_grid": [1, 5, 20, 50],
    "baseline": {"mean": 0.9},
    "random": {"mean": [0.9, 0.9, 0.8, 0.7, 0.6, 0.5]},
    "collapse_step_advantage": 1.0,
    "collapse_step_advantage_halfwidth": 0.5,
    "collapse_k": {"locos": 5},
    "collapse_index": {"locos": 1},
  }
  m = {
    "gemma3/curves": {"filtered": cv, "paper": None},
    "gemma3/parametric": {"baseline": 0.8, "ks": KS, "locos": [0.8, 0.8, 0.4, 0, 0, 0]},
  }
  d = evaluate.derived_metrics(m)["gemma3"]
  assert d["filtered"]["collapse_step_advantage"] == 1.0
  np.testing.assert_allclose(d["filtered"]["random_drop_at_max_k"], 0.4)
  assert d["parametric_retained"] == 0.5  # LOCOS's collapse k = 5 on the claim grid
  assert d["paper"] is None
  ids = {c["id"] for c in gemma3.get_config().claims}
  assert ids == {c["id"].replace("smollm2", "gemma3") for c in default.CLAIMS}
  for a, b in zip(gemma3.get_config().claims, default.CLAIMS):  # the same rules
    assert (a["held"], a.get("partly"), a["direction"]) == (
      b["held"],
      b.get("partly"),
      b["direction"],
    )
