"""Claims as data: every branch of the decision rule against hand-worked
cases."""

import math

import ml_collections
import numpy as np
import pytest

from jaxpapers import core
from jaxpapers.core import claims as cl

H, P, N, I = cl.HELD, cl.PARTLY, cl.NOT_REPRODUCED, cl.INCONCLUSIVE


def _c(**kw):
  base = dict(id="c", statement="s", metric="m")
  base.update(kw)
  return core.Claim.from_dict(base)


# higher is better, held >= 2, partly >= 1, no noise: the three regions and both
# boundaries.
@pytest.mark.parametrize(
  "x,want",
  [
    (3.0, H),
    (2.0, H),  # at the held threshold: held (inclusive)
    (1.999, P),
    (1.0, P),  # at the partly threshold: partly (inclusive)
    (0.999, N),
    (-5.0, N),
  ],
)
def test_higher_without_noise(x, want):
  v = core.judge(_c(held=2.0, partly=1.0), {"m": x})
  assert v.verdict == want
  assert v.measured == x and v.noise == 0.0


@pytest.mark.parametrize(
  "x,want", [(0.1, H), (0.2, H), (0.2001, P), (0.5, P), (0.5001, N), (3.0, N)]
)
def test_lower_without_noise(x, want):
  v = core.judge(_c(direction="lower", held=0.2, partly=0.5), {"m": x})
  assert v.verdict == want


def test_without_partly_threshold():
  c = _c(held=0.0)
  assert core.judge(c, {"m": 0.0}).verdict == H
  assert core.judge(c, {"m": -1e-9}).verdict == N


# noise: interval [x - h, x + h]; held >= 2 (clears), partly >= 1.
@pytest.mark.parametrize(
  "x,h,want",
  [
    (3.0, 0.5, H),  # [2.5, 3.5] clears 2
    (2.5, 0.5, H),  # [2.0, 3.0]: low end exactly 2 -> held
    (2.2, 0.5, P),  # [1.7, 2.7] straddles held: conservative -> partly
    (1.5, 0.5, P),  # [1.0, 2.0]: low end exactly at partly
    # [0.7, 1.7] straddles partly (the lowest bar) -> inconclusive
    (1.2, 0.5, I),
    (0.5, 0.5, I),  # [0.0, 1.0]: high end exactly at partly: not a miss
    (0.4, 0.5, N),  # [-0.1, 0.9] misses partly
  ],
)
def test_noise_interval_clears(x, h, want):
  c = _c(held=2.0, partly=1.0, noise="h")
  v = core.judge(c, {"m": x, "h": h})
  assert v.verdict == want, v.reason
  assert v.noise == h


def test_noise_straddling_held_without_partly_is_inconclusive():
  c = _c(held=0.0, noise=0.3)  # literal noise
  assert core.judge(c, {"m": 0.2}).verdict == I  # [-0.1, 0.5] straddles 0
  assert core.judge(c, {"m": 0.3}).verdict == H  # [0, 0.6]
  assert core.judge(c, {"m": -0.31}).verdict == N  # [-0.61, -0.01]


def test_reaches_the_paper_number():
  # "gain of +5.18 reproduced": held if the interval reaches 5.18 and its low
  # end clears 0.
  c = _c(held=5.18, partly=0.0, held_when="reaches", noise="ci")
  # [2.5, 5.5] reaches 5.18
  assert core.judge(c, {"m": 4.0, "ci": 1.5}).verdict == H
  # high end exactly 5.18
  assert core.judge(c, {"m": 3.68, "ci": 1.5}).verdict == H
  assert core.judge(c, {"m": 2.93, "ci": 2.0}).verdict == P  # [0.93, 4.93]
  assert core.judge(c, {"m": 1.0, "ci": 2.0}).verdict == I  # [-1, 3] contains 0
  assert core.judge(c, {"m": -3.0, "ci": 2.0}).verdict == N  # [-5, -1]


def test_reaches_lower_direction():
  c = _c(
    direction="lower", held=1.0, partly=3.0, held_when="reaches", noise=0.5
  )
  # [0.9, 1.9] reaches 1.0 from above
  assert core.judge(c, {"m": 1.4}).verdict == H
  # [1.1, 2.1]: below 3, short of 1
  assert core.judge(c, {"m": 1.6}).verdict == P
  assert core.judge(c, {"m": 3.2}).verdict == I  # [2.7, 3.7] straddles 3
  assert core.judge(c, {"m": 3.6}).verdict == N  # [3.1, 4.1]


@pytest.mark.parametrize(
  "metrics,fragment",
  [
    ({}, "missing"),
    ({"m": float("nan")}, "NaN"),
    ({"m": "nan"}, "NaN"),  # results.json stores NaN as a string
    ({"m": None}, "None"),
    ({"m": "abc"}, "not a number"),
    ({"m": [1, 2]}, "not a number"),
    ({"m": 1.0}, "noise missing"),  # declared noise metric absent
    ({"m": 1.0, "h": float("nan")}, "NaN"),
  ],
)
def test_missing_or_nan_is_inconclusive(metrics, fragment):
  v = core.judge(_c(held=0.0, noise="h"), metrics)
  assert v.verdict == I and fragment in v.reason
  # the measured value is kept when only the noise is unavailable
  assert (
    v.measured == (1.0 if metrics.get("m") == 1.0 else None) and v.noise is None
  )


def test_inf_is_a_number():
  c = _c(direction="lower", held=2.0)
  assert core.judge(c, {"m": float("inf")}).verdict == N
  assert core.judge(c, {"m": "-inf"}).verdict == H


def test_compare_to_difference_and_ratio():
  m = {"a": {"fd": 7.0}, "b": {"fd": 7.5}}
  c = _c(metric="a.fd", compare_to="b.fd", direction="lower", held=0.0)
  v = core.judge(c, m)
  assert v.verdict == H and v.measured == pytest.approx(-0.5)
  c = _c(metric="b.fd", compare_to="a.fd", comparison="ratio", held=1.1)
  v = core.judge(c, m)
  assert v.measured == pytest.approx(7.5 / 7.0) and v.verdict == N
  v = core.judge(c, {"a": {"fd": 0.0}, "b": {"fd": 1.0}})
  assert v.verdict == I and "ratio is undefined" in v.reason
  v = core.judge(c, {"b": {"fd": 1.0}})
  assert v.verdict == I and "reference missing" in v.reason


def test_lookup_keys_with_dots_lists_and_errors():
  m = {
    "student/vs_gt/depth_delta1.25": 0.9,
    "student": {"x": 1},
    "rows": [{"fd": 3.0}, {"fd": 4.0}],
    "a.b": {"c": 5},
    "a": {"b": {"c": 6}},
  }
  assert cl.lookup(m, "student/vs_gt/depth_delta1.25") == 0.9
  assert cl.lookup(m, "rows.1.fd") == 4.0
  assert cl.lookup(m, "rows.-1.fd") == 4.0
  assert cl.lookup(m, "a.b.c") == 5  # the longest key wins
  with pytest.raises(KeyError, match="no key for 'y'"):
    cl.lookup(m, "student.y")
  with pytest.raises(KeyError, match="not an index"):
    cl.lookup(m, "rows.2.fd")
  with pytest.raises(KeyError, match="not a mapping"):
    cl.lookup(m, "student.x.z")


def test_untested_claim_and_baselines():
  c = core.Claim(
    id="lvlm", statement="beats LVLMs by 16%", note=("no LVLM offline")
  )
  v = core.judge(c, {})
  assert v.verdict == I and "not tested" in v.reason and "no LVLM" in v.reason
  c = _c(held=0.5, baselines={"majority": "base.maj", "gone": "base.none"})
  v = core.judge(c, {"m": 0.7, "base": {"maj": 0.6}})
  assert v.verdict == H and v.baselines == {"majority": 0.6, "gone": None}


def test_claim_validation():
  with pytest.raises(ValueError, match="direction must be one of"):
    _c(held=1.0, direction="up")
  with pytest.raises(ValueError, match="partly .* weaker side"):
    _c(held=1.0, partly=2.0)
  with pytest.raises(ValueError, match="partly .* weaker side"):
    _c(held=1.0, partly=0.5, direction="lower")
  with pytest.raises(TypeError, match="held must be a real number"):
    _c(held=None)
  with pytest.raises(ValueError, match="held must not be NaN"):
    _c(held=math.nan)
  with pytest.raises(ValueError, match="noise must be >= 0"):
    _c(held=1.0, noise=-0.1)
  with pytest.raises(
    ValueError, match=(r"Unknown claim field\(s\) \['threshold'\]")
  ):
    core.Claim.from_dict(dict(id="c", statement="s", metric="m", threshold=1.0))
  with pytest.raises(ValueError, match="held_when must be one of"):
    _c(held=1.0, held_when="sometimes")
  with pytest.raises(ValueError, match="duplicate claim id"):
    core.parse_claims(
      [dict(id="a", statement="s"), dict(id="a", statement=("t"))]
    )


def test_claims_live_in_a_config_and_judge_all():
  cfg = ml_collections.ConfigDict()
  cfg.claims = (
    dict(id="gain", statement="s", metric="g", held=1.0, partly=0.0),
    dict(id="untested", statement="t"),
  )
  recs = core.judge_all(cfg.claims, {"g": np.float64(0.5)})
  assert [r["verdict"] for r in recs] == [P, I]
  assert recs[0]["claim"]["id"] == "gain" and "held if >= 1" in recs[0]["rule"]
  smoke = core.judge_all(cfg.claims, {"g": 0.5}, issue_verdicts=False)
  assert [r["verdict"] for r in smoke] == [None, None]
  assert smoke[0]["measured"] == 0.5 and "smoke" in smoke[0]["reason"]
  assert core.parse_claims(None) == []


def test_describe_rule():
  c = _c(held=5.18, partly=0.0, held_when="reaches", noise="ci")
  assert c.describe_rule() == (
    "m: held if >= 5.18 by the interval's best end; partly if >= 0; "
    "not reproduced if < 0; noise ± ci; straddling 0 is inconclusive"
  )
  c = _c(metric="a", compare_to="b", direction="lower", held=0.0)
  assert c.describe_rule() == "a - b: held if <= 0; not reproduced if > 0"


def test_config_to_dataclass_passes_over_claims():
  import dataclasses

  @dataclasses.dataclass
  class Cfg:
    lr: float

  cfg = {
    "lr": 0.1,
    "claims": (dict(id="a", statement="s"),),
    "issue_verdicts": False,
  }
  assert core.config_to_dataclass(cfg, Cfg) == Cfg(lr=0.1)
  with pytest.raises(
    ValueError, match=(r"Unknown config field\(s\) \['claim'\]")
  ):
    core.config_to_dataclass({"lr": 0.1, "claim": ()}, Cfg)
