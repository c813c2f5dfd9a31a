"""The claim guards: preconditions, controls judged by the same rule, chance and
oracle.

Each test builds the metrics by hand, so the expected verdict follows from the
module docstring's rule without running the code under test twice.
"""

import json

import pytest

from jaxpapers import core
from jaxpapers.core import claims as cl

# A claim that the rule alone holds on METRICS: 0.30 ± 0.05 >= 0.1.
BASE = dict(
  id="gain",
  statement="the method beats the baseline",
  metric="m.gain",
  noise=("m.ci"),
  held=0.1,
)
METRICS = {
  "m": {"gain": 0.30, "ci": 0.05, "acc": 0.80},
  "gold_em": 0.0,
  "closed_em": 0.0,
  "ctl": {"placebo": 0.02, "shuffled": 0.25, "oracle_free": 0.12, "ci": 0.05},
}


def _judge(**extra):
  return cl.judge(dict(BASE, **extra), METRICS)


def test_the_rule_alone_holds():
  v = _judge()
  assert (v.verdict, v.guard, v.rule_verdict) == (cl.HELD, "rule", cl.HELD)


# --------------------------------------------------------------------- requires


def test_a_failed_precondition_turns_held_into_inconclusive_and_names_it():
  v = _judge(
    requires=[
      dict(
        metric="gold_em",
        op=">=",
        value=0.5,
        why=("the reader answers with gold docs"),
      )
    ]
  )
  assert v.verdict == cl.INCONCLUSIVE
  assert v.guard == "requires"
  assert v.rule_verdict == cl.HELD
  assert v.reason.startswith(
    "precondition failed: the reader answers with gold docs (gold_em = 0"
  )
  assert v.requires[0]["measured"] == 0.0 and v.requires[0]["ok"] is False
  assert v.measured == pytest.approx(0.30)  # the number is still reported


def test_a_failed_precondition_also_stops_not_reproduced():
  metrics = dict(METRICS, m={"gain": -0.5, "ci": 0.05})
  v = cl.judge(
    dict(
      BASE,
      requires=[
        dict(metric="gold_em", op=">=", value=0.5, why=("reader works"))
      ],
    ),
    metrics,
  )
  assert v.rule_verdict == cl.NOT_REPRODUCED
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "requires")


def test_a_missing_precondition_metric_is_a_failure():
  v = _judge(
    requires=[dict(metric="nowhere.x", op=">", value=0, why=("x is measured"))]
  )
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "requires")
  assert "nowhere.x" in v.reason and v.requires[0]["ok"] is False


@pytest.mark.parametrize(
  "op,value,ok",
  [
    (">=", 0.8, True),
    (">", 0.8, False),
    ("<=", 0.8, True),
    ("<", 0.8, False),
    (">=", 0.81, False),
  ],
)
def test_precondition_operators_are_exact_at_the_boundary(op, value, ok):
  v = _judge(requires=[dict(metric="m.acc", op=op, value=value, why="w")])
  assert v.requires[0]["ok"] is ok
  assert v.verdict == (cl.HELD if ok else cl.INCONCLUSIVE)


def test_passing_preconditions_keep_the_verdict():
  v = _judge(
    requires=[
      dict(metric="m.acc", op=">=", value=0.5, why="accurate"),
      dict(metric="closed_em", op="<=", value=0.1, why="closed book fails"),
    ]
  )
  assert (v.verdict, v.guard) == (cl.HELD, "rule")
  assert [r["ok"] for r in v.requires] == [True, True]


# --------------------------------------------------------------------- controls


def test_a_control_that_clears_the_same_rule_makes_the_claim_vacuous():
  v = _judge(controls={"placebo": "ctl.placebo", "shuffled": "ctl.shuffled"})
  assert v.verdict == cl.INCONCLUSIVE and v.guard == "controls"
  assert v.reason.startswith("vacuous: control shuffled also clears the rule")
  assert v.controls["shuffled"]["verdict"] == cl.HELD
  assert v.controls["shuffled"]["measured"] == pytest.approx(0.25)
  assert v.controls["placebo"]["verdict"] == cl.NOT_REPRODUCED


def test_a_control_that_fails_the_rule_keeps_held():
  v = _judge(controls={"placebo": "ctl.placebo"})
  assert (v.verdict, v.guard) == (cl.HELD, "rule")
  assert v.controls["placebo"]["verdict"] == cl.NOT_REPRODUCED


def test_a_bare_control_is_judged_on_its_point_value_and_may_carry_its_own_noise():
  # 0.12 >= 0.1 on its point value: vacuous.
  assert _judge(controls={"c": "ctl.oracle_free"}).verdict == cl.INCONCLUSIVE
  # 0.12 ± 0.05 straddles 0.1: the control is inconclusive, so it does not clear
  # the rule.
  v = _judge(controls={"c": {"metric": "ctl.oracle_free", "noise": "ctl.ci"}})
  assert (
    v.controls["c"]["verdict"] == cl.INCONCLUSIVE
    and v.controls["c"]["noise"] == 0.05
  )
  assert v.verdict == cl.HELD


def test_a_control_uses_the_claims_compare_to_and_direction():
  claim = dict(
    id="lower_err",
    statement="s",
    metric="err.method",
    compare_to="err.base",
    comparison="ratio",
    direction="lower",
    held=0.8,
  )
  metrics = {"err": {"method": 0.5, "base": 1.0, "trivial": 0.7, "bad": 0.9}}
  assert (
    cl.judge(dict(claim, controls={"t": "err.trivial"}), metrics).verdict
    == cl.INCONCLUSIVE
  )
  v = cl.judge(dict(claim, controls={"t": "err.bad"}), metrics)
  assert v.verdict == cl.HELD
  assert v.controls["t"]["measured"] == pytest.approx(0.9)  # 0.9 / 1.0, not 0.9


def test_a_partly_claim_is_vacuous_when_a_control_is_partly_too():
  claim = dict(BASE, held=0.5, partly=0.1)  # the claim: 0.30 ± 0.05 -> partly
  assert cl.judge(claim, METRICS).verdict == cl.PARTLY
  # 0.12 -> partly
  v = cl.judge(dict(claim, controls={"c": "ctl.oracle_free"}), METRICS)
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "controls")
  # 0.02 -> not reproduced
  v = cl.judge(dict(claim, controls={"c": "ctl.placebo"}), METRICS)
  assert v.verdict == cl.PARTLY


def test_a_held_control_does_not_rescue_or_change_a_not_reproduced_claim():
  metrics = dict(METRICS, m={"gain": 0.0, "ci": 0.01})
  v = cl.judge(dict(BASE, controls={"s": "ctl.shuffled"}), metrics)
  assert (v.verdict, v.guard) == (cl.NOT_REPRODUCED, "rule")
  assert v.controls["s"]["verdict"] == cl.HELD


def test_a_control_that_cannot_be_read_blocks_held():
  v = _judge(controls={"gone": "ctl.nothing"})
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "controls")
  assert "gone" in v.reason and v.controls["gone"]["verdict"] is None


# ----------------------------------------------------------------------- chance


def test_chance_needs_the_whole_interval_above_it():
  assert _judge(chance=0.2).verdict == cl.HELD  # [0.25, 0.35] > 0.2
  v = _judge(chance=0.25)  # lo == chance: not strictly above
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "chance")
  assert v.reason.startswith("at chance")
  assert v.chance["ok"] is False and v.chance["lo"] == pytest.approx(0.25)


def test_chance_on_another_metric_with_its_own_noise():
  # The claim reads a gain; chance applies to the method's own accuracy, 0.80 ±
  # 0.05.
  ok = _judge(chance=dict(value=0.7, metric="m.acc", noise="m.ci"))
  assert ok.verdict == cl.HELD and ok.chance["ok"] is True
  v = _judge(chance=dict(value=0.76, metric="m.acc", noise="m.ci"))
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "chance")


def test_chance_follows_the_direction():
  claim = dict(id="e", statement="s", metric="err", direction="lower", held=0.5)
  assert cl.judge(dict(claim, chance=0.45), {"err": 0.4}).verdict == cl.HELD
  assert (
    cl.judge(dict(claim, chance=0.4), {"err": 0.4}).verdict == cl.INCONCLUSIVE
  )


def test_chance_does_not_change_a_not_reproduced_verdict():
  metrics = dict(METRICS, m={"gain": 0.0, "ci": 0.01, "acc": 0.5})
  assert cl.judge(dict(BASE, chance=0.5), metrics).verdict == cl.NOT_REPRODUCED


def test_guard_order_requires_then_controls_then_chance():
  v = _judge(
    requires=[dict(metric="gold_em", op=">=", value=0.5, why="reader works")],
    controls={"s": "ctl.shuffled"},
    chance=0.3,
  )
  assert v.guard == "requires"
  v = _judge(controls={"s": "ctl.shuffled"}, chance=0.3)
  assert v.guard == "controls"


# ----------------------------------------------------------------------- oracle


def test_oracle_is_recorded_and_does_not_change_the_verdict():
  v = _judge(oracle=True)
  assert v.verdict == cl.HELD and v.oracle is True
  assert v.to_dict()["oracle"] is True
  assert (
    "upper bound" in cl.Claim.from_dict(dict(BASE, oracle=True)).describe_rule()
  )
  with pytest.raises(TypeError, match="oracle"):
    cl.Claim.from_dict(dict(BASE, oracle="yes"))


# ------------------------------------------------------------------- the schema


@pytest.mark.parametrize(
  "extra,match",
  [
    (
      dict(requires=[dict(metric="a", op="=>", value=1, why="w")]),
      "op must be one of",
    ),
    (dict(requires=[dict(metric="a", op=">=", value=1)]), "missing key"),
    (
      dict(requires=[dict(metric="a", op=">=", value=1, why="w", tol=1)]),
      "unknown key",
    ),
    (
      dict(requires=[dict(metric="a", op=">=", value="1", why="w")]),
      "real number",
    ),
    (dict(requires=[dict(metric="a", op=">=", value=1, why=" ")]), "why"),
    (dict(requires="m.acc >= 1"), "requires must be a list"),
    (dict(controls={"c": {"path": "a"}}), "unknown key"),
    (dict(controls={"c": {"metric": "a", "noise": -1.0}}), ">= 0"),
    (dict(controls=["a"]), "must be a mapping"),
    (dict(chance=dict(level=0.5)), "unknown key"),
    (dict(chance=dict(metric="a")), "needs a 'value'"),
    (dict(chance=True), "must be a mapping"),
  ],
)
def test_malformed_guards_are_rejected_naming_the_field(extra, match):
  with pytest.raises((TypeError, ValueError), match=match):
    cl.Claim.from_dict(dict(BASE, **extra))


def test_an_untested_claim_cannot_carry_guards():
  with pytest.raises(ValueError, match="not tested"):
    cl.Claim.from_dict(dict(id="u", statement="s", controls={"c": "a"}))


def test_round_trip_through_results_json(tmp_path):
  claim = dict(
    BASE,
    requires=[dict(metric="m.acc", op=">=", value=0.5, why="accurate")],
    controls={
      "shuffled": "ctl.shuffled",
      "placebo": {"metric": "ctl.placebo", "noise": 0.01},
    },
    chance=dict(value=0.1, metric="m.acc"),
    oracle=True,
  )
  core.write_results(tmp_path, metrics=METRICS, config={"claims": (claim,)})
  rec = json.loads((tmp_path / "results.json").read_text())["claims"][0]
  again = cl.Claim.from_dict(rec["claim"])
  assert again == cl.Claim.from_dict(claim)
  assert rec["verdict"] == cl.INCONCLUSIVE and rec["guard"] == "controls"
  assert rec["controls"]["shuffled"]["verdict"] == cl.HELD
  assert rec["requires"][0]["ok"] is True and rec["oracle"] is True
  assert cl.judge(again, METRICS).to_dict() == {
    k: rec[k] for k in cl.judge(again, METRICS).to_dict()
  }


def test_the_lanr_case_from_the_committed_results_is_no_longer_held():
  # Every method, the gold-documents reader included, scores EM 0: 0 - 0 >=
  # -0.02 held before.
  claim = dict(
    id="control_keeps_accuracy",
    statement="stopping early costs at most 2 points EM",
    metric="d.em_diff",
    held=-0.02,
    requires=[
      dict(
        metric="gold_em",
        op=">=",
        value=0.5,
        why=("the reader answers from gold"),
      )
    ],
  )
  v = cl.judge(claim, {"d": {"em_diff": 0.0}, "gold_em": 0.0})
  assert v.rule_verdict == cl.HELD and v.verdict == cl.INCONCLUSIVE


def test_the_table_shows_guards_controls_upper_bounds_and_registration():
  claims = (
    dict(BASE, controls={"shuffled": "ctl.shuffled"}, fmt=".2f"),
    dict(
      id="ub",
      statement="with the oracle",
      metric="m.acc",
      held=0.5,
      oracle=True,
      fmt=(".2f"),
    ),
  )
  recs = core.judge_all(claims, METRICS)
  reg = {
    "status": "rejudged",
    "registered_at": "abc1234 (2026-12-04)",
    "run_at": ("def5678 (x)"),
  }
  t = core.claims_table(recs, reasons=False, registration=reg).splitlines()
  assert t[0] == (
    "| claim | paper's number | measured | upper bound (oracle) | verdict | "
    "controls | rules | registered at | run at |"
  )
  assert t[2] == (
    "| the method beats the baseline (`gain`) | - | 0.30 ± 0.05 | – | "
    "**inconclusive** (vacuous) | shuffled: 0.25 (held) | rejudged | abc1234 "
    "(2026-12-04) | def5678 (x) |"
  )
  # The oracle claim's value sits in the upper-bound column only, never as
  # measured.
  assert t[3] == (
    "| with the oracle (`ub`) | - | – | 0.80 | **held** | - | rejudged | "
    "abc1234 (2026-12-04) | def5678 (x) |"
  )


def test_a_precondition_may_compare_two_metrics():
  metrics = dict(
    METRICS,
    teacher={"rra": 0.363, "ate": 0.098},
    trivial={"rra": 0.378, "ate": 0.038},
  )
  ok = dict(
    metric="m.acc",
    minus="gold_em",
    op=">",
    value=0.5,
    why=("acc above gold EM"),
  )
  assert _judge(requires=[ok]).verdict == cl.HELD  # 0.80 - 0.0 > 0.5
  v = cl.judge(
    dict(
      BASE,
      requires=[
        dict(
          metric="teacher.rra",
          minus="trivial.rra",
          op=">",
          value=0,
          why=("teacher rotates"),
        ),
        dict(
          metric="trivial.ate",
          minus="teacher.ate",
          op=">",
          value=0,
          why=("teacher tracks"),
        ),
      ],
    ),
    metrics,
  )
  assert (v.verdict, v.guard) == (cl.INCONCLUSIVE, "requires")
  assert v.reason.startswith(
    "precondition failed: teacher rotates (teacher.rra - trivial.rra = -0.015"
  )
  assert v.requires[0]["measured"] == pytest.approx(-0.015)
  assert (
    v.requires[1]["measured"] == pytest.approx(-0.06)
    and not v.requires[1]["ok"]
  )
  missing = dict(metric="m.acc", minus="nowhere", op=">", value=0, why="w")
  assert _judge(requires=[missing]).guard == "requires"
