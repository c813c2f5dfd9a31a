"""core.stats against scipy/numpy float64 closed forms, brute-force enumeration
and simulation.

Each test names the likely mistake it catches: ddof=0, a normal quantile for t,
a one-sided quantile, b - a for a - b, log10 for ln, independent indices for the
two arms of a paired bootstrap, a Monte Carlo p-value that can be 0, a power
that ignores the t distribution.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from jaxpapers import core
from jaxpapers.core import stats

# ------------------------------------------------------------------- t_interval


@pytest.mark.parametrize("n", [2, 3, 5, 12, 40])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(n, confidence):
  """scipy's t.interval / ttest_1samp: catches ddof=0, z for t and a one-sided
  quantile."""
  x = np.random.default_rng(n).normal(3.0, 2.0, size=n)
  got = core.t_interval(x, confidence)
  lo, hi = sps.t.interval(confidence, n - 1, loc=x.mean(), scale=sps.sem(x))
  ci = sps.ttest_1samp(x, 0.0).confidence_interval(confidence)
  np.testing.assert_allclose([got.lo, got.hi], [lo, hi], rtol=1e-12)
  np.testing.assert_allclose([got.lo, got.hi], [ci.low, ci.high], rtol=1e-12)
  assert got.mean == pytest.approx(x.mean(), rel=1e-14)
  assert got.sd == pytest.approx(np.std(x, ddof=1), rel=1e-14)
  assert got.half_width == pytest.approx((hi - lo) / 2, rel=1e-12)
  assert (got.n, got.confidence) == (n, confidence)


def test_t_interval_hand_value():
  # x = [1, 2, 4]: mean 7/3, s^2 = ((4/3)^2 + (1/3)^2 + (5/3)^2) / 2 = 7/3,
  # t_{0.975, 2} = 4.3027
  got = core.t_interval([1, 2, 4])
  assert got.sd == pytest.approx(math.sqrt(7 / 3), rel=1e-14)
  assert got.half_width == pytest.approx(
    4.302652729749464 * math.sqrt(7 / 3) / math.sqrt(3)
  )
  assert got.format(".2f") == "2.33 ± 3.79"
  assert not got.excludes(0.0) and got.excludes(-2.0) and got.excludes(7.0)


def test_t_interval_degenerate_values():
  one = core.t_interval([2.5])  # one value: a mean but no spread
  assert one.mean == 2.5 and one.n == 1
  assert all(math.isnan(v) for v in (one.half_width, one.lo, one.hi, one.sd))
  assert not one.excludes(0.0)
  flat = core.t_interval(np.full(4, 3.0))  # equal values: a zero-width interval
  assert (flat.half_width, flat.lo, flat.hi) == (0.0, 3.0, 3.0)


def test_t_interval_against_ci95_halfwidth():
  """The tabulated ci95_halfwidth agrees for n <= 10 and is the normal 1.96
  beyond."""
  rng = np.random.default_rng(0)
  for n in range(2, 11):
    x = rng.normal(size=n)
    assert core.t_interval(x).half_width == pytest.approx(
      core.ci95_halfwidth(x), rel=1e-3
    )
  x = rng.normal(size=11)
  ratio = core.t_interval(x).half_width / core.ci95_halfwidth(x)
  assert ratio == pytest.approx(sps.t.ppf(0.975, 10) / 1.96, rel=1e-12)


# ------------------------------------------------------------ paired_difference


def test_paired_difference_matches_ttest_rel():
  rng = np.random.default_rng(1)
  seed_noise = rng.normal(0, 5.0, size=8)  # shared by both arms of a seed
  a = 10.0 + seed_noise + rng.normal(0, 0.3, size=8)
  b = 9.0 + seed_noise + rng.normal(0, 0.3, size=8)
  got = core.paired_difference(a, b)
  res = sps.ttest_rel(a, b)
  ci = res.confidence_interval(0.95)
  np.testing.assert_allclose([got.lo, got.hi], [ci.low, ci.high], rtol=1e-12)
  # a - b, not b - a
  assert got.mean == pytest.approx(np.mean(a - b), rel=1e-14) and got.mean > 0
  assert got.excludes(0.0) == (res.pvalue < 0.05)
  # Unpaired, the seed noise swamps the unit effect: the paired interval is what
  # resolves it.
  welch = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
  assert got.excludes(0.0) and welch.low < 0 < welch.high
  assert got.half_width < (welch.high - welch.low) / 2 / 5


def test_paired_difference_sign_and_hand_value():
  got = core.paired_difference([3.0, 5.0], [1.0, 4.0])  # d = [2, 1]
  assert got.mean == 1.5 and got.sd == pytest.approx(math.sqrt(0.5))
  assert got.half_width == pytest.approx(
    12.706204736174698 * math.sqrt(0.5) / math.sqrt(2)
  )


# ----------------------------------------------------------- log_ratio_interval


def test_log_ratio_interval_hand_value():
  # ln(2/1) = ln 2, ln(8/2) = 2 ln 2: mean 1.5 ln 2, ratio 2^1.5; sd = ln 2 /
  # sqrt 2.
  got = core.log_ratio_interval([2.0, 8.0], [1.0, 2.0])
  # ln, not log10
  assert got.log.mean == pytest.approx(1.5 * math.log(2), rel=1e-14)
  assert got.log.sd == pytest.approx(math.log(2) / math.sqrt(2), rel=1e-14)
  assert got.ratio == pytest.approx(2**1.5, rel=1e-14)


def test_log_ratio_interval_matches_scipy():
  rng = np.random.default_rng(2)
  b = rng.lognormal(0.0, 1.0, size=9)
  a = b * 1.5 * rng.lognormal(0.0, 0.1, size=9)  # a multiplicative 1.5x claim
  got = core.log_ratio_interval(a, b, 0.9)
  ci = sps.ttest_1samp(np.log(a) - np.log(b), 0.0).confidence_interval(0.9)
  np.testing.assert_allclose(
    [got.log.lo, got.log.hi], [ci.low, ci.high], rtol=1e-12
  )
  assert got.ratio == pytest.approx(sps.gmean(a) / sps.gmean(b), rel=1e-12)
  np.testing.assert_allclose(
    [got.ratio_lo, got.ratio_hi], np.exp([ci.low, ci.high]), rtol=1e-12
  )
  assert (
    got.ratio_lo < 1.5 < got.ratio_hi
    and got.excludes(1.0)
    and got.log.excludes(0.0)
  )
  assert (got.n, got.confidence) == (9, 0.9)


# ------------------------------------------------------------- paired_bootstrap


def _hand_rolled_bootstrap(a, b, statistic, n_resamples, seed):
  idx = np.random.default_rng(seed).integers(
    0, len(a), size=(n_resamples, len(a))
  )
  return np.array([statistic(a[i]) - statistic(b[i]) for i in idx])


@pytest.mark.parametrize("statistic", [np.mean, np.median])
# 7 entries: one resample per block
@pytest.mark.parametrize("block_entries", [None, 7])
def test_paired_bootstrap_reproduces_a_loop(
  statistic, block_entries, monkeypatch
):
  """The same resampled items for both arms, row r of one integers() draw, in
  blocks or not."""
  if block_entries is not None:
    monkeypatch.setattr(stats, "_BLOCK_ENTRIES", block_entries)
  rng = np.random.default_rng(4)
  a, b = rng.normal(size=7), rng.normal(size=7)
  got = core.paired_bootstrap(
    a, b, statistic=statistic, n_resamples=50, confidence=0.8, seed=3
  )
  want = _hand_rolled_bootstrap(a, b, statistic, 50, seed=3)
  np.testing.assert_allclose(got.resamples, want, rtol=1e-12, atol=1e-15)
  np.testing.assert_allclose(
    [got.lo, got.hi], np.quantile(want, [0.1, 0.9]), rtol=1e-12
  )
  assert got.estimate == pytest.approx(statistic(a) - statistic(b), rel=1e-12)
  assert (got.n, got.n_resamples, got.confidence) == (7, 50, 0.8)
  again = core.paired_bootstrap(
    a, b, statistic=statistic, n_resamples=50, confidence=0.8, seed=3
  )
  # the seed fixes everything
  np.testing.assert_array_equal(again.resamples, got.resamples)


def test_paired_bootstrap_is_paired():
  """Items that differ a lot but move together: only a paired resampling
  resolves the gap."""
  rng = np.random.default_rng(5)
  # per-item difficulty, shared by both arms
  item = rng.normal(0.0, 10.0, size=200)
  a = item + 0.3 + rng.normal(0, 0.1, size=200)
  b = item + rng.normal(0, 0.1, size=200)
  got = core.paired_bootstrap(a, b, n_resamples=4000)
  t = core.paired_difference(a, b)
  # independent indices per arm would give a ~100x wider interval
  assert got.excludes(0.0)
  assert (got.hi - got.lo) == pytest.approx(t.hi - t.lo, rel=0.15)
  assert got.estimate == pytest.approx(t.mean, rel=1e-12)


def test_paired_bootstrap_distribution_matches_scipy():
  """scipy.stats.bootstrap(paired=True, percentile) with another seed: the same
  interval."""
  rng = np.random.default_rng(6)
  a = rng.exponential(1.0, size=60)
  b = 0.6 * a + rng.exponential(0.5, size=60)

  def median_diff(x, y, axis=-1):
    return np.median(x, axis=axis) - np.median(y, axis=axis)

  ref = sps.bootstrap(
    (a, b),
    median_diff,
    paired=True,
    vectorized=True,
    method="percentile",
    n_resamples=4000,
    confidence_level=0.9,
    **_scipy_rng(11),
  )
  got = core.paired_bootstrap(
    a, b, np.median, n_resamples=4000, confidence=0.9, seed=0
  )
  width = ref.confidence_interval.high - ref.confidence_interval.low
  assert got.lo == pytest.approx(ref.confidence_interval.low, abs=0.1 * width)
  assert got.hi == pytest.approx(ref.confidence_interval.high, abs=0.1 * width)
  assert np.std(got.resamples, ddof=1) == pytest.approx(
    ref.standard_error, rel=0.1
  )


def test_paired_bootstrap_same_seed_is_scipys_draw():
  """With the same Generator seed, scipy's paired percentile bootstrap draws the
  same items."""
  rng = np.random.default_rng(12)
  a = rng.normal(size=30)
  b = 0.5 * a + rng.normal(size=30)

  def mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)

  ref = sps.bootstrap(
    (a, b),
    mean_diff,
    paired=True,
    vectorized=True,
    method="percentile",
    n_resamples=3000,
    **_scipy_rng(5),
  )
  got = core.paired_bootstrap(a, b, n_resamples=3000, seed=5)
  np.testing.assert_allclose(
    got.resamples, ref.bootstrap_distribution, rtol=1e-12, atol=1e-14
  )
  np.testing.assert_allclose(
    [got.lo, got.hi],
    [ref.confidence_interval.low, ref.confidence_interval.high],
    rtol=1e-12,
  )


def _scipy_rng(seed):
  """scipy >= 1.15 takes ``rng``; older versions ``random_state``."""
  import inspect

  key = (
    "rng"
    if "rng" in inspect.signature(sps.bootstrap).parameters
    else "random_state"
  )
  return {key: np.random.default_rng(seed)}


def test_paired_bootstrap_degenerate_and_errors():
  one = core.paired_bootstrap([2.0], [1.0])
  assert one.estimate == 1.0 and math.isnan(one.lo) and math.isnan(one.hi)
  assert one.resamples.shape == (0,)
  with pytest.raises(TypeError, match=r"statistic must accept an axis keyword"):
    core.paired_bootstrap(
      [1.0, 2.0], [0.0, 1.0], statistic=lambda x: float(np.mean(x))
    )
  with pytest.raises(
    ValueError, match=(r"must have shape \[k\] = \(10,\), got \(\)")
  ):
    core.paired_bootstrap(
      [1.0, 2.0],
      [0.0, 1.0],
      statistic=lambda x, axis: np.mean(x),
      n_resamples=10,
    )
  with (
    pytest.raises(ValueError, match="non-finite difference"),
    np.errstate(invalid=("ignore")),
  ):
    core.paired_bootstrap(
      [1.0, 2.0],
      [0.0, 1.0],
      statistic=lambda x, axis: np.log(x - 1.5).sum(axis),
    )


# --------------------------------------------------------------- sign_flip_test


def _brute_force_sign_flip(d, alternative):
  s0 = d.sum()
  s = np.array(
    [np.dot(e, d) for e in itertools.product((1.0, -1.0), repeat=len(d))]
  )
  if alternative == "two-sided":
    return np.mean(np.abs(s) >= abs(s0) - 1e-9)
  if alternative == "greater":
    return np.mean(s >= s0 - 1e-9)
  return np.mean(s <= s0 + 1e-9)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_exact_enumeration(alternative):
  rng = np.random.default_rng(7)
  for n in range(1, 9):
    # ties
    for d in (
      rng.normal(0.4, 1.0, size=n),
      rng.integers(-3, 4, size=n).astype(float),
    ):
      got = core.sign_flip_test(d, alternative=alternative)
      assert got.p_value == _brute_force_sign_flip(d, alternative), (n, d)
      assert (
        got.exact
        and got.n_patterns == 2**n
        and got.mean == pytest.approx(d.mean())
      )


def test_sign_flip_matches_scipy_permutation_test():
  rng = np.random.default_rng(8)
  a = rng.normal(0.5, 1.0, size=10)
  b = rng.normal(0.0, 1.0, size=10)
  ref = sps.permutation_test(
    (a, b),
    lambda x, y, axis: np.mean(x - y, axis=axis),
    permutation_type="samples",
    vectorized=True,
    n_resamples=np.inf,
  )
  assert core.sign_flip_test(a - b).p_value == pytest.approx(
    ref.pvalue, rel=1e-12
  )


def test_sign_flip_hand_values():
  # Three positive differences (PANDA's three splits): only ± all-same patterns
  # are as extreme.
  assert core.sign_flip_test([1.0, 2.0, 3.0]).p_value == 0.25
  assert (
    core.sign_flip_test([1.0, 2.0, 3.0], alternative="greater").p_value == 0.125
  )
  assert core.sign_flip_test([1.0, 2.0, 3.0], alternative="less").p_value == 1.0
  assert core.sign_flip_test(np.zeros(5)).p_value == 1.0


def test_sign_flip_monte_carlo_beyond_16():
  rng = np.random.default_rng(9)
  d = rng.normal(0.35, 1.0, size=17)
  bits = (np.arange(2**17)[:, None] >> np.arange(17)) & 1
  exact = np.mean(np.abs((1 - 2 * bits) @ d) >= abs(d.sum()) - 1e-9)
  got = core.sign_flip_test(d, n_resamples=20_000, seed=1)
  assert not got.exact and got.n_patterns == 20_000
  assert got.p_value == pytest.approx(
    exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000)
  )
  assert (
    got.p_value == core.sign_flip_test(d, n_resamples=20_000, seed=1).p_value
  )
  # A Monte Carlo p-value counts the observed pattern: never 0, at least 1 /
  # (R + 1).
  strong = core.sign_flip_test(np.arange(1.0, 21.0), n_resamples=999)
  assert strong.p_value == 1 / 1000


# ----------------------------------------------------------------- seeds_needed


def _power(n, effect, sd, confidence, paired):
  """Power of the t-interval's lower bound exceeding 0, written out from the nct
  law."""
  df = n - 1 if paired else 2 * n - 2
  se = sd / math.sqrt(n) if paired else sd * math.sqrt(2 / n)
  return sps.nct.sf(
    sps.t.ppf(1 - (1 - confidence) / 2, df), df, abs(effect) / se
  )


@pytest.mark.parametrize(
  ("effect", "sd", "confidence", "power", "paired"),
  [
    (0.5, 1.0, 0.95, 0.8, True),
    (-0.5, 1.0, 0.95, 0.8, True),
    (2.0, 3.0, 0.9, 0.9, True),
    (1.0, 0.5, 0.99, 0.8, False),
    (0.3, 1.0, 0.95, 0.95, False),
    (0.05, 1.0, 0.95, 0.8, True),
  ],
)
def test_seeds_needed_is_the_smallest_n_with_power(
  effect, sd, confidence, power, paired
):
  got = core.seeds_needed(effect, sd, confidence, power, paired)
  assert _power(got.n, effect, sd, confidence, paired) >= power
  assert got.n == 2 or _power(got.n - 1, effect, sd, confidence, paired) < power
  assert got.power == pytest.approx(
    _power(got.n, effect, sd, confidence, paired), rel=1e-12
  )
  assert got.half_width == pytest.approx(
    core.half_width_at(got.n, sd, confidence, paired)
  )
  # power > 1/2 needs the interval to fit inside the effect
  assert got.half_width < abs(effect)


def test_seeds_needed_published_values_and_normal_approximation():
  """Cohen's d at alpha = 0.05 two-sided, power 0.8 (G*Power): 34 pairs, 64 and
  26 per arm."""
  assert core.seeds_needed(0.5, 1.0).n == 34
  assert core.seeds_needed(0.5, 1.0, paired=False).n == 64
  assert core.seeds_needed(0.8, 1.0, paired=False).n == 26
  # few seeds: the normal approximation undercounts
  one = core.seeds_needed(1.0, 1.0)
  assert (one.n, one.n_normal) == (
    10,
    math.ceil((1.959963984540054 + 0.8416212335729143) ** 2),
  )


def test_seeds_needed_power_by_simulation():
  """At the returned n, simulated paired experiments exclude 0 at the stated
  rate."""
  need = core.seeds_needed(1.0, 1.0)
  rng = np.random.default_rng(10)
  d = rng.normal(1.0, 1.0, size=(40_000, need.n))
  lo = d.mean(1) - sps.t.ppf(0.975, need.n - 1) * d.std(1, ddof=1) / math.sqrt(
    need.n
  )
  assert np.mean(lo > 0) == pytest.approx(need.power, abs=0.01)


def test_half_width_at_matches_scipy():
  lo, hi = sps.t.interval(0.95, 7, loc=0.0, scale=2.0 / math.sqrt(8))
  assert core.half_width_at(8, 2.0) == pytest.approx(hi, rel=1e-12)
  lo, hi = sps.t.interval(0.9, 14, loc=0.0, scale=2.0 * math.sqrt(2 / 8))
  assert core.half_width_at(8, 2.0, 0.9, paired=False) == pytest.approx(
    hi, rel=1e-12
  )


# ----------------------------------------------------------------------- errors


@pytest.mark.parametrize(
  ("call", "error", "match"),
  [
    (lambda: core.t_interval([]), ValueError, r"x must hold at least 1 value"),
    (
      lambda: core.t_interval([[1.0, 2.0]]),
      ValueError,
      r"x must be 1-D .* got shape \(1, 2\)",
    ),
    (
      lambda: core.t_interval([1.0, np.nan]),
      ValueError,
      r"x must be finite, got x\[1\] = nan",
    ),
    (
      lambda: core.t_interval(["a", "b"]),
      TypeError,
      r"x must be a 1-D array of real numbers",
    ),
    (
      lambda: core.t_interval([1.0, 2.0], 95),
      ValueError,
      r"confidence must be a number in",
    ),
    (
      lambda: core.paired_difference([1, 2], [1, 2, 3]),
      ValueError,
      r"got 2 and 3 values",
    ),
    (
      lambda: core.paired_difference([1, 2], [1, np.inf]),
      ValueError,
      r"b must be finite",
    ),
    (
      lambda: core.log_ratio_interval([1, 0], [1, 1]),
      ValueError,
      r"a must be > 0 .* a\[1\] = 0",
    ),
    (
      lambda: core.log_ratio_interval([1, 1], [-1, 1]),
      ValueError,
      r"b must be > 0",
    ),
    (
      lambda: core.paired_bootstrap([1, 2], [1, 2], n_resamples=0),
      ValueError,
      r"n_resamples",
    ),
    (
      lambda: core.paired_bootstrap([1, 2], [1, 2], seed=-1),
      ValueError,
      r"seed must be an int",
    ),
    (
      lambda: core.paired_bootstrap([1, 2], [1, 2], statistic=3),
      TypeError,
      r"statistic must be",
    ),
    (
      lambda: core.sign_flip_test([1.0], alternative="up"),
      ValueError,
      r"alternative must be",
    ),
    (
      lambda: core.seeds_needed(0.0, 1.0),
      ValueError,
      r"effect must be a finite nonzero",
    ),
    (
      lambda: core.seeds_needed(1.0, 0.0),
      ValueError,
      r"sd must be a finite number > 0",
    ),
    (
      lambda: core.seeds_needed(1.0, 1.0, power=1.0),
      ValueError,
      r"power must be a number in",
    ),
    (
      lambda: core.seeds_needed(1e-6, 1.0),
      ValueError,
      r"more than 10\^9 seeds",
    ),
    (lambda: core.half_width_at(1, 1.0), ValueError, r"n must be an int >= 2"),
  ],
)
def test_clear_errors(call, error, match):
  with pytest.raises(error, match=match):
    call()


# ------------------------------------------------------------ cluster_bootstrap


def _cluster_bootstrap_reference(d, n_resamples, seed):
  """The same resamples, one at a time in Python loops (float64)."""
  rng = np.random.default_rng(seed)
  c, n = d.shape
  ci = rng.integers(0, c, size=(n_resamples, c))
  si = rng.integers(0, n, size=(n_resamples, c, n))
  out = np.empty(n_resamples)
  for r in range(n_resamples):
    out[r] = np.mean(
      [np.mean([d[ci[r, k], si[r, k, l]] for l in range(n)]) for k in range(c)]
    )
  return out


def test_cluster_bootstrap_matches_a_loop_reference():
  d = np.random.default_rng(3).normal(size=(5, 4))
  got = stats.cluster_bootstrap(d, n_resamples=300, seed=7)
  ref = _cluster_bootstrap_reference(d, 300, 7)
  np.testing.assert_allclose(got.resamples, ref, rtol=0, atol=1e-12)
  lo, hi = np.quantile(ref, [0.025, 0.975])
  assert got.lo == pytest.approx(lo, abs=1e-12) and got.hi == pytest.approx(
    hi, abs=1e-12
  )
  assert got.estimate == pytest.approx(d.mean(), abs=1e-12) and got.n == 5


def test_cluster_bootstrap_variance_matches_exact_enumeration():
  # 2 clusters x 2 items: the resampled mean takes each of 2^2 x 2^4 = 64
  # outcomes equally often.
  d = np.array([[0.0, 1.0], [4.0, 10.0]])
  vals = [
    np.mean(
      [
        np.mean([d[j, i] for i in items[2 * k : 2 * k + 2]])
        for k, j in enumerate(js)
      ]
    )
    for js in itertools.product(range(2), repeat=2)
    for items in itertools.product(range(2), repeat=4)
  ]
  got = stats.cluster_bootstrap(d, n_resamples=200_000, seed=0)
  assert got.resamples.mean() == pytest.approx(np.mean(vals), abs=0.02)
  assert got.resamples.var() == pytest.approx(np.var(vals), rel=0.02)
  # resampling the 4 items as if independent misses the between-cluster part:
  # far narrower
  flat = stats.paired_bootstrap(
    d.ravel(), np.zeros(4), n_resamples=200_000, seed=0
  )
  assert flat.resamples.var() < 0.8 * got.resamples.var()


def test_cluster_bootstrap_edge_cases_and_errors():
  one = stats.cluster_bootstrap([[2.5]])
  assert one.estimate == 2.5 and np.isnan(one.lo) and np.isnan(one.hi)
  const = stats.cluster_bootstrap(np.full((3, 4), 1.5), n_resamples=50)
  assert const.lo == const.hi == 1.5
  with pytest.raises(ValueError, match=r"2-D \[clusters, items\]"):
    stats.cluster_bootstrap([1.0, 2.0])
  with pytest.raises(ValueError, match="finite"):
    stats.cluster_bootstrap([[1.0, np.nan]])
  with pytest.raises(ValueError, match="confidence"):
    stats.cluster_bootstrap([[1.0, 2.0]], confidence=1.5)


# ----------------------------------------------------------------- seed_summary


def test_seed_summary_against_hand_values():
  """[1, 2, 4]: mean 7/3, s = sqrt(7/3) (ddof=1: catches ddof=0), h = 4.303 s /
  sqrt(3) (the tabulated t quantile of n = 3: catches 1.96 or the n-th
  quantile)."""
  got = core.seed_summary([1, 2, 4], values_key="per_seed")
  s = math.sqrt(7 / 3)
  assert list(got) == ["mean", "std", "ci95", "per_seed"]
  np.testing.assert_allclose(got["mean"], 7 / 3, rtol=1e-15)
  np.testing.assert_allclose(got["std"], s, rtol=1e-15)
  np.testing.assert_allclose(got["ci95"], 4.303 * s / math.sqrt(3), rtol=1e-15)
  assert got["per_seed"] == [1.0, 2.0, 4.0] and isinstance(
    got["per_seed"][0], float
  )
  assert got["ci95"] == core.ci95_halfwidth([1, 2, 4])


def test_seed_summary_over_axis_zero_is_per_column():
  """[seeds, 2]: each column summarised on its own (catches a summary over the
  wrong axis)."""
  x = np.array([[1.0, 10.0], [2.0, 30.0], [4.0, 20.0], [8.0, 0.0]])
  got = core.seed_summary(x, ci_key="ci", values_key="values")
  np.testing.assert_allclose(got["mean"], [3.75, 15.0], rtol=1e-15)
  np.testing.assert_allclose(got["std"], np.std(x, axis=0, ddof=1), rtol=1e-15)
  np.testing.assert_allclose(
    got["ci"], [core.ci95_halfwidth(c) for c in x.T], rtol=1e-15
  )
  assert got["values"] == x.tolist()


def test_seed_summary_keys_and_degenerate_counts():
  assert list(core.seed_summary([1.0, 2.0], ci_key=None)) == ["mean", "std"]
  one = core.seed_summary([3.0])
  assert one["mean"] == 3.0 and one["std"] == 0.0 and math.isnan(one["ci95"])
  none = core.seed_summary(np.zeros((0, 2)))
  assert all(math.isnan(v) for k in ("mean", "std", "ci95") for v in none[k])


def test_seed_summary_finite_only_keeps_every_value_in_the_record():
  got = core.seed_summary(
    [1.0, np.nan, 3.0, np.inf], finite_only=True, values_key=("v")
  )
  assert got["mean"] == 2.0 and got["std"] == math.sqrt(2.0)
  assert (
    got["v"][0] == 1.0 and math.isnan(got["v"][1]) and got["v"][3] == math.inf
  )
  nothing = core.seed_summary([np.nan], finite_only=True)
  assert all(math.isnan(nothing[k]) for k in ("mean", "std", "ci95"))
  # Without finite_only a NaN is not dropped: the mean is NaN (no silent
  # filtering).
  assert math.isnan(core.seed_summary([1.0, np.nan])["mean"])


@pytest.mark.parametrize(
  "bad, kwargs, err",
  [
    (3.0, {}, ValueError),
    ([[1.0, np.nan]], {"finite_only": True}, ValueError),
    (["a", "b"], {}, TypeError),
    ([True, False], {}, TypeError),
  ],
)
def test_seed_summary_rejects_bad_values(bad, kwargs, err):
  with pytest.raises(err, match="values|finite_only"):
    core.seed_summary(bad, **kwargs)
