"""The decisive LOCOS configs at size: >= 200 items behind every claim, guards
declared."""

import pytest

from experiments.locos.configs import default, size, size_gemma3, size_needle
from jaxpapers.core import claims as claims_lib


@pytest.mark.parametrize(
  "module", [size, size_gemma3], ids=["smollm2", "gemma3"]
)
def test_every_claim_needs_200_items_and_the_paper_protocol_runs_on_the_grid(
  module,
):
  c = module.get_config()
  r = c.real
  assert r.paper_num_eval >= 200 and tuple(r.paper_ks) == tuple(r.claim_ks) == (
    1,
    5,
    20,
    50,
  )
  assert tuple(r.ks) == (1, 5, 20, 50) and r.time_budget_s == 0
  assert c.get("issue_verdicts", True)
  for claim in claims_lib.parse_claims(c.claims):
    counts = [
      q for q in claim.requires if q["value"] == 200.0 and q["op"] == ">="
    ]
    assert counts, f"{claim.id}: no >= 200 items precondition"
    assert claim.noise is not None, f"{claim.id}: no paired interval"
  lower_k = [
    x for x in claims_lib.parse_claims(c.claims) if x.id.startswith("lower_k")
  ]
  assert all(x.controls for x in lower_k)


def test_the_size_claims_keep_the_default_rules():
  d = {x["id"]: x for x in default.real_claims()}
  for x in size.size_claims():
    if x["id"] in d:
      for key in ("metric", "direction", "held"):
        assert x[key] == d[x["id"]][key], (x["id"], key)


def test_a_failed_precondition_makes_the_paper_claim_inconclusive():
  claim = next(x for x in size.size_claims() if x["id"].endswith("_paper"))
  derived = {
    "collapse_step_advantage": 1.0,
    "collapse_step_advantage_halfwidth": 0.0,
    "collapse_k": {},
    "random_collapse_step_advantage": -2.0,
  }
  metrics = {
    "smollm2/num_paper_probes": 200,
    "smollm2/curves": {
      "paper": {"baseline": {"mean": 0.1}, "collapse_index": {"random": 3}}
    },
    "derived": {"smollm2": {"paper": derived}},
  }
  v = claims_lib.judge(claim, metrics)
  assert v.verdict == "inconclusive" and "precondition" in v.reason
  metrics["smollm2/curves"]["paper"]["baseline"]["mean"] = 0.3
  assert claims_lib.judge(claim, metrics).verdict == "held"
  # random heads collapse as early: vacuous
  derived["random_collapse_step_advantage"] = 1.0
  assert claims_lib.judge(claim, metrics).verdict == "inconclusive"


def test_needle_config_sizes_100_answered_probes_at_4k():
  c = size_needle.get_config()
  n = c.needle
  assert (
    tuple(n.context_tokens) == (4096,)
    and n.ablate_answered
    and n.num_random == 5
  )
  # the short probes' answered rate with examples (62 %) leaves >= 100 answered
  # probes
  assert n.num_eval * 0.62 >= 100
  (claim,) = claims_lib.parse_claims(c.claims)
  assert (
    claim.metric == "needle/T=4096.paired.k=12.contrastive_minus_locos.mean"
  )
  # the paper's share of SmolLM2's heads
  assert round(270 * 50 / 1152) == n.ks[0] == 12
