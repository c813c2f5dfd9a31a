"""The real-model track's statistics on synthetic per-probe scores (no model
weights).

The collapse rule is judged on the claim's grid and baselines only
(configs/default.py), the full-grid statistics sit beside it, random seeds cycle
over batches, and the derived metrics are keyed by track (SmolLM2 and Gemma-3
alike).
"""

import jax
import numpy as np
import pytest

from experiments.locos import evaluate
from experiments.locos.configs import default, gemma3
from jaxpapers import locos
from tests import resources

KS = [1, 2, 5, 10, 20, 50]


def _res(curves, n=10):
  """res[(name, k)] = per-probe scores: every probe scores curve[k] (baseline
  1.0)."""
  res = {("baseline", 0): np.ones(n)}
  for d, vals in curves.items():
    for k, v in zip(KS, vals):
      res[(d, k)] = np.full(n, v)
  return res


def test_claim_uses_its_grid_and_baseline_only():
  # LOCOS halves at k = 2, contrastive at k = 5, Wu never: on the claim grid {1,
  # 5, 20, 50} both collapse at its second entry (a tie); the full grid sees
  # LOCOS one step earlier
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
  assert cv["collapse_k"] == {
    "locos": 5,
    "contrastive": 5,
    "wu": None,
    "random": None,
  }
  assert cv["collapse_k_full_grid"]["locos"] == 2
  assert cv["advantage_full_grid"]["contrastive"]["advantage"] == 1.0
  # Wu never collapses: one past the full grid (index 6) minus LOCOS's index 1
  assert cv["advantage_full_grid"]["wu"]["advantage"] == 5.0
  # with Wu as a claim baseline the strongest baseline is still contrastive
  cv2 = locos.collapse_curves(
    res,
    ("locos", "contrastive", "wu"),
    KS,
    np.arange(10),
    200,
    0,
    claim_baselines=("wu",),
  )
  assert cv2["collapse_step_advantage"] == 5.0


def test_seed_blocks_cycle_over_batches_across_buckets():
  class P:
    def __init__(self, n):
      self.prompt_ids = [0] * n

  probes = [P(30)] * 20 + [P(70)] * 21  # two buckets: 3 + 3 batches of 8
  seeds = locos.seed_blocks([len(p.prompt_ids) for p in probes], (64, 80), 8, 5)
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
    "gemma3/parametric": {
      "baseline": 0.8,
      "ks": KS,
      "locos": [0.8, 0.8, 0.4, 0, 0, 0],
    },
  }
  d = evaluate.derived_metrics(m)["gemma3"]
  assert d["filtered"]["collapse_step_advantage"] == 1.0
  np.testing.assert_allclose(d["filtered"]["random_drop_at_max_k"], 0.4)
  # LOCOS's collapse k = 5 on the claim grid
  assert d["parametric_retained"] == 0.5
  assert d["paper"] is None
  ids = {c["id"] for c in gemma3.get_config().claims}
  assert ids == {c["id"].replace("smollm2", "gemma3") for c in default.CLAIMS}
  for a, b in zip(gemma3.get_config().claims, default.CLAIMS):  # the same rules
    assert (a["held"], a.get("partly"), a["direction"]) == (
      b["held"],
      b.get("partly"),
      b["direction"],
    )


def test_ablation_conditions_are_top_k_and_seeded_random_heads():
  scores = np.arange(12.0).reshape(3, 4)  # head (2, 3) scores highest
  conds = locos.ablation_conditions(
    {"locos": scores}, ("locos",), [1, 3], 3, 4, 2, jax.random.key(7)
  )
  assert [(n, k, len(m)) for n, k, m in conds] == [
    ("baseline", 0, 1),
    ("locos", 1, 1),
    ("locos", 3, 1),
    ("random", 1, 2),
    ("random", 3, 2),
  ]
  assert not conds[0][2][0].any()
  np.testing.assert_array_equal(
    np.argwhere(conds[2][2][0]), [[2, 1], [2, 2], [2, 3]]
  )
  for _, k, masks in conds[3:]:
    assert all(m.sum() == k and m.shape == (3, 4) for m in masks)
    # seed s of k uses the key of `ablation_curve`: fold_in(key, 1000 k + s)
    want = locos.random_heads(
      jax.random.fold_in(jax.random.key(7), 1000 * k + 1), 3, 4, k
    )
    np.testing.assert_array_equal(masks[1], want)
  assert not np.array_equal(conds[4][2][0], conds[4][2][1])  # the seeds differ


def test_seed_blocks_by_hand():
  # lengths 5, 30, 6, 31, 7 with buckets (16, 32): bucket 16 = probes 0, 2, 4
  # (blocks of 2: [0, 2] -> 0, [4] -> 1), bucket 32 = probes 1, 3 ([1, 3] ->
  # block 2 -> seed 2 mod 3)
  got = locos.seed_blocks([5, 30, 6, 31, 7], (16, 32), 2, 3)
  np.testing.assert_array_equal(got, [0, 2, 0, 2, 1])
  assert locos.seed_blocks([], (16,), 2, 3).size == 0


@pytest.mark.slow
def test_real_track_runs_end_to_end(tmp_path, monkeypatch):
  """The SmolLM2 track on a few probes: detection, the filtered protocol (two
  probes counted as answered, so that its ablation cells run), the parametric
  control and the paper's protocol (minutes on a CPU)."""
  resources.require(resources.smollm2_missing())
  from experiments.locos import train

  def answered(answers, texts, n=0):  # every probe but the second
    ok = np.asarray([i for i in range(len(answers)) if i != 1], int)
    return ok[ok < n] if n else ok

  monkeypatch.setattr(evaluate, "ablated_probes", answered)
  c = default.get_config()
  c.issue_verdicts = False
  c.real.update(
    dict(
      num_detect=2,
      num_eval=6,
      paper_num_eval=2,
      ks=(1, 2),
      paper_ks=(2,),
      claim_ks=(1, 2),
      num_random=2,
      num_calibration=2,
      num_resamples=50,
      max_steps=3,
      detect_max_steps=3,
      paper_max_steps=3,
      gen_batch_size=4,
      batch_size=2,
      group_rows=8,
      time_budget_s=0,
      ablation_num_eval=4,
      buckets=(64, 80, 112),
    )
  )
  m = train.train_and_evaluate(c, str(tmp_path))
  filtered, paper = (
    m["smollm2/curves"]["filtered"],
    m["smollm2/curves"]["paper"],
  )
  # probes 0, 2, 3 of 4
  assert filtered["num_probes"] == 3 and paper["num_probes"] == 2
  assert filtered["ks"] == [1, 2] and m["smollm2/cells_not_run"] == []
  assert len(m["smollm2/parametric"]["per_probe"]["locos"]) == 2
  assert set(m["derived"]["smollm2"]) >= {
    "filtered",
    "paper",
    "parametric_retained",
  }
  assert (tmp_path / "results.json").exists() and (
    tmp_path / "smollm2_ablation.png"
  ).exists()
