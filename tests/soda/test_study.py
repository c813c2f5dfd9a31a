"""The horizon-study readers of jaxpapers.soda against hand-computed values and
brute force."""

import itertools
import math

import numpy as np
import pytest

from jaxpapers import soda


def _row(t, fam, lr, m, s, wd=None):
  r = {"horizon": t, "family": fam, "lr": lr, "metric": m, "metric_std": s}
  return r if wd is None else {**r, "wd": wd}


ROWS = [
  _row(100, "adamw", 0.1, 1.0, 0.3, 0.0),  # best at T=100: wd 0
  _row(100, "adamw", 0.1, 1.5, 0.4, 1.0),
  _row(100, "adamw", 0.2, 1.2, 0.1, 1.0),  # best lr for wd 1 at T=100
  _row(1000, "adamw", 0.1, 0.9, 0.6, 0.0),  # wd 0 at T=1000 (its best lr)
  _row(1000, "adamw", 0.2, 2.0, 0.1, 0.0),
  _row(1000, "adamw", 0.2, 0.5, 0.8, 1.0),  # best at T=1000: wd 1
  _row(100, "soda_adamw", 0.1, 1.1, 0.0),
  _row(1000, "soda_adamw", 0.1, 0.6, 0.0),
]


def test_wd_transfer_and_gaps_by_hand():
  tr = soda.wd_transfer(ROWS, (100, 1000), "adamw")
  assert tr["best_wd_by_horizon"] == {"100": 0.0, "1000": 1.0}
  assert tr["best_lr_by_horizon"] == {"100": 0.1, "1000": 0.2}
  # At T=1000 with T=100's wd 0: 0.9 vs the best 0.5, over sqrt(0.8^2 + 0.6^2) =
  # 1.
  np.testing.assert_allclose(tr["penalty_at_longest_in_std"], 0.4)
  # At T=100 with T=1000's wd 1: 1.2 vs 1.0, over sqrt(0.3^2 + 0.1^2).
  np.testing.assert_allclose(
    tr["penalty_at_shortest_in_std"], 0.2 / np.sqrt(0.1)
  )
  gaps = soda.horizon_gaps(ROWS, (100, 1000), "adamw", "soda_adamw")
  # best base - SODA, > 0 favours SODA: -0.1/0.3 at T=100, -0.1/0.8 at T=1000.
  np.testing.assert_allclose(
    [g["gap_in_seed_std"] for g in gaps], [-1 / 3, -0.125]
  )
  # 1.1 > 1.0 but 0.6 < 0.9
  assert [g["soda_beats_wd0"] for g in gaps] == [False, True]
  assert [(g["best_lr"], g["best_wd"], g["base_wd0"]) for g in gaps] == [
    (0.1, 0.0, 1.0),
    (0.2, 1.0, 0.9),
  ]
  # no row at one end
  assert soda.wd_transfer(ROWS, (100, 5000), "adamw") is None
  assert soda.horizon_gaps(ROWS, (5000,), "adamw", "soda_adamw") == []


def test_best_run_matches_brute_force():
  """argmin over every matching row, on a random grid with NaN (diverged)
  runs."""
  rng = np.random.default_rng(0)
  rows = [
    _row(t, "adamw", lr, float(m), 0.1, wd)
    for (t, lr, wd), m in zip(
      itertools.product((10, 20), (0.1, 0.3, 1.0), (0.0, 0.1)),
      rng.normal(size=12),
    )
  ]
  rows[3]["metric"] = rows[7]["metric"] = math.nan
  for t, wd in itertools.product((10, 20), (None, 0.0, 0.1)):
    fixed = {} if wd is None else {"wd": wd}
    cand = [
      r for r in rows if r["horizon"] == t and (wd is None or r["wd"] == wd)
    ]
    vals = np.array([r["metric"] for r in cand])
    want = cand[int(np.nanargmin(vals))]
    assert soda.best_run(rows, t, "adamw", **fixed) is want
  assert soda.best_run(rows, 10, "soda_adamw") is None


def test_grid_edges_by_hand():
  rows = [
    _row(100, "adamw", lr, 0.5 + lr + wd, 0.01, wd)
    for lr in (0.1, 1.0)
    for wd in (0, 1)
  ]
  rows += [
    _row(100, "soda_adamw", lr, m, 0.01)
    for lr, m in ((0.1, 0.6), (0.3, 0.2), (1.0, 0.4))
  ]
  e = soda.grid_edges(rows, (100,), "adamw", "soda_adamw")["100"]
  # AdamW's best (lr 0.1, wd 0): the lowest lr is an edge, wd 0 is not; SODA's
  # 0.3 is inside.
  assert (e["base_lr_edge"], e["base_wd_edge"], e["soda_lr_edge"]) == (
    "low",
    "",
    "",
  )
  assert (e["base_at_edge"], e["at_edge"]) == (1, 1)


@pytest.mark.parametrize(
  "call, error, match",
  [
    (
      lambda: soda.best_run({"horizon": 1}, 1, "adamw"),
      TypeError,
      "rows must be a sequence",
    ),
    (
      lambda: soda.best_run([3], 1, "adamw"),
      TypeError,
      r"rows\[0\] must be a mapping",
    ),
    (
      lambda: soda.best_run([{"horizon": 1}], 1, "adamw"),
      ValueError,
      "lacks \\['family'",
    ),
    (
      lambda: soda.horizon_gaps(ROWS, (), "adamw", "soda_adamw"),
      ValueError,
      "horizons must",
    ),
    (lambda: soda.wd_transfer(ROWS, 100, "adamw"), ValueError, "horizons must"),
    (
      lambda: soda.grid_edges(ROWS, (1.5,), "adamw", "soda_adamw"),
      ValueError,
      "horizons must",
    ),
  ],
)
def test_bad_rows_and_horizons_are_refused(call, error, match):
  with pytest.raises(error, match=match):
    call()


def test_wd_transfer_names_a_missing_run():
  """A horizon between the ends without a run of the base is an error, not a
  TypeError."""
  with pytest.raises(ValueError, match="rows hold no adamw run at horizon 500"):
    soda.wd_transfer(ROWS, (100, 500, 1000), "adamw")
  rows = [r for r in ROWS if not (r["horizon"] == 1000 and r.get("wd") == 0.0)]
  with pytest.raises(
    ValueError, match=(r"no adamw run at horizon 1000 with \{'wd': 0.0\}")
  ):
    soda.wd_transfer(rows, (100, 1000), "adamw")
