r"""Noise that fits the measurement: intervals, paired tests and seed counts for
results.

These functions run on an experiment's *results* (one number per seed, split or
item), off the hot path, so they are NumPy/SciPy in float64 rather than JAX.
Pick the one that fits how the numbers were produced:

=========================  ===============================================================
:func:`t_interval`          one arm, one value per seed or split: Student-t interval of the
                            mean.
:func:`paired_difference`   two arms run on the same seeds / splits / items: t-interval of
                            the per-pair differences ``a_i - b_i`` (the shared seed noise
                            cancels).
:func:`log_ratio_interval`  a multiplicative claim ("2x faster", "30% lower error"): t-interval
                            of ``ln(a_i / b_i)`` and the geometric-mean ratio interval.
:func:`paired_bootstrap`    per-item scores (questions, queries, molecules) or a statistic
                            other than the mean: percentile bootstrap over items, the same
                            resampled items for both arms, with a fixed seed.
:func:`sign_flip_test`      a p-value for paired differences without a normality assumption
                            (exact over all :math:`2^n` sign patterns for :math:`n \le 16`).
:func:`seed_summary`        a metric's seed mean, standard deviation and 95% half-width (the
                            tabulated :func:`jaxpapers.core.ci95_halfwidth`) as a results entry.
:func:`seeds_needed`        planning: how many seeds (pairs) a claimed effect needs for its
                            interval to exclude 0 with a given power (noncentral t), and
                            :func:`half_width_at`, the half-width that a given n would give.
=========================  ===============================================================

Every interval is two-sided at level ``confidence`` (default 0.95); a difference
whose interval contains 0 is a tie. Inputs are 1-D, finite and converted to
float64; a malformed input raises a ``TypeError`` / ``ValueError`` that names
the argument. Degenerate but legal input has a documented value: a single value
(n = 1) has no spread, so its half-width and bounds are NaN, never 0.

:func:`jaxpapers.core.ci95_halfwidth` (which committed results were judged with)
keeps its tabulated approximation (t quantiles up to n = 10, then 1.96);
:func:`t_interval` uses the exact t quantile for every n.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats as sps

from jaxpapers.core.report import ci95_halfwidth

__all__ = [
  "TInterval",
  "LogRatioInterval",
  "BootstrapInterval",
  "SignFlipResult",
  "SeedsNeeded",
  "t_interval",
  "paired_difference",
  "log_ratio_interval",
  "paired_bootstrap",
  "cluster_bootstrap",
  "sign_flip_test",
  "seeds_needed",
  "half_width_at",
  "seed_summary",
]

# Exact sign-flip enumeration up to this many pairs (2^16 = 65,536 patterns).
_EXACT_SIGN_FLIP_MAX_N = 16
# Resampling draws and gathers at most this many index entries at a time (32 MiB
# of int64).
_BLOCK_ENTRIES = 1 << 22
_ALTERNATIVES = ("two-sided", "greater", "less")


# ----------------------------------------------------------------- result types


@dataclasses.dataclass(frozen=True)
class TInterval:
  r"""A two-sided Student-t confidence interval of a mean.

  Attributes:
    mean: the sample mean :math:`\bar x`.
    half_width: :math:`t_{1-\alpha/2,\,n-1}\, s / \sqrt n`; NaN when n < 2.
    lo: ``mean - half_width`` (NaN when n < 2).
    hi: ``mean + half_width`` (NaN when n < 2).
    n: the number of values (seeds, splits or pairs).
    sd: the sample standard deviation :math:`s` (``ddof=1``); NaN when n < 2.
    confidence: the level :math:`1 - \alpha`.
  """

  mean: float
  half_width: float
  lo: float
  hi: float
  n: int
  sd: float
  confidence: float

  def excludes(self, value: float = 0.0) -> bool:
    """True when ``value`` lies strictly outside ``[lo, hi]`` (False when the
    bounds are NaN).

    Args:
      value: the value to test (0: "is the difference significant").

    Returns:
      whether the interval excludes ``value``.
    """
    return bool(self.lo > value or self.hi < value)

  def format(self, fmt: str = ".3g") -> str:
    """The interval as ``'mean ± half_width'``.

    Args:
      fmt: the format spec of both numbers (e.g. ``'+.2f'``; the half-width
        drops the sign).

    Returns:
      the formatted string.
    """
    return f"{self.mean:{fmt}} ± {self.half_width:{fmt.replace('+', '')}}"


@dataclasses.dataclass(frozen=True)
class LogRatioInterval:
  r"""A t-interval of per-pair log-ratios and the ratio interval it implies.

  Attributes:
    log: the :class:`TInterval` of :math:`\ln(a_i / b_i)` (natural log).
    ratio: the geometric-mean ratio :math:`\exp(\overline{\ln(a/b)}) =
      \mathrm{gmean}(a) / \mathrm{gmean}(b)`.
    ratio_lo: :math:`\exp(\text{log.lo})` (NaN when n < 2).
    ratio_hi: :math:`\exp(\text{log.hi})` (NaN when n < 2).
    n: the number of pairs.
    confidence: the level.
  """

  log: TInterval
  ratio: float
  ratio_lo: float
  ratio_hi: float
  n: int
  confidence: float

  def excludes(self, ratio: float = 1.0) -> bool:
    """True when ``ratio`` lies strictly outside ``[ratio_lo, ratio_hi]``.

    Args:
      ratio: the ratio to test (1: "do the two differ").

    Returns:
      whether the interval excludes ``ratio`` (False when the bounds are NaN).
    """
    return bool(self.ratio_lo > ratio or self.ratio_hi < ratio)


@dataclasses.dataclass(frozen=True)
class BootstrapInterval:
  r"""A paired percentile-bootstrap interval of ``statistic(a) - statistic(b)``.

  Attributes:
    estimate: ``statistic(a) - statistic(b)`` on the items as given.
    lo: the :math:`\alpha/2` quantile of the resampled differences (NaN when n <
      2).
    hi: the :math:`1 - \alpha/2` quantile (NaN when n < 2).
    n: the number of items.
    n_resamples: the number of bootstrap resamples.
    confidence: the level :math:`1 - \alpha`.
    resamples: ``[n_resamples]`` the resampled differences (empty when n < 2);
      not compared by ``==``.
  """

  estimate: float
  lo: float
  hi: float
  n: int
  n_resamples: int
  confidence: float
  resamples: np.ndarray = dataclasses.field(repr=False, compare=False)

  def excludes(self, value: float = 0.0) -> bool:
    """True when ``value`` lies strictly outside ``[lo, hi]`` (False when the
    bounds are NaN).

    Args:
      value: the value to test (0: "is the difference significant").

    Returns:
      whether the interval excludes ``value``.
    """
    return bool(self.lo > value or self.hi < value)

  @property
  def half_width(self) -> float | None:
    """The larger distance from the estimate to a bound: one ``±`` number for
    the interval.

    A percentile interval need not be symmetric about the estimate; the larger
    side keeps the ``±`` conservative.

    Returns:
      ``max(estimate - lo, hi - estimate)``, or None when a bound is not finite
      (n < 2).
    """
    if not (np.isfinite(self.lo) and np.isfinite(self.hi)):
      return None
    return float(max(self.estimate - self.lo, self.hi - self.estimate))


@dataclasses.dataclass(frozen=True)
class SignFlipResult:
  """A paired sign-flip randomisation test.

  Attributes:
    p_value: the p-value of the observed mean difference under sign flips.
    mean: the observed mean difference.
    n: the number of pairs.
    exact: True when all :math:`2^n` sign patterns were enumerated.
    n_patterns: the number of sign patterns used (``2**n`` when exact, else
      ``n_resamples``).
    alternative: ``'two-sided'``, ``'greater'`` or ``'less'``.
  """

  p_value: float
  mean: float
  n: int
  exact: bool
  n_patterns: int
  alternative: str


@dataclasses.dataclass(frozen=True)
class SeedsNeeded:
  """How many seeds (pairs) a claim needs; the answer of :func:`seeds_needed`.

  Attributes:
    n: the smallest number of seeds (pairs when paired, per arm when not) whose
      t-interval lies above 0 with probability >= the target power (noncentral
      t, exact).
    power: that probability at ``n``.
    n_normal: the normal-approximation answer ``ceil(((z_{1-α/2} + z_power) σ /
      δ)²)`` (times 2 when unpaired); it ignores the t quantile and the
      uncertainty of s, so it falls short of ``n`` with few seeds.
    half_width: the interval half-width at ``n`` when the sample sd equals
      ``sd`` (:func:`half_width_at`).
  """

  n: int
  power: float
  n_normal: int
  half_width: float


# ------------------------------------------------------------------- validation


def _check_confidence(confidence: Any, name: str = "confidence") -> float:
  if (
    isinstance(confidence, bool)
    or not isinstance(confidence, numbers.Real)
    or not 0.0 < float(confidence) < 1.0
  ):
    raise ValueError(
      f"{name} must be a number in (0, 1), e.g. 0.95; got {confidence!r}"
    )
  return float(confidence)


def _check_1d(
  x: Any, name: str, *, positive: bool = False, min_n: int = 1
) -> np.ndarray:
  """``x`` as a float64 ``[n]`` array, or an error naming ``name``."""
  try:
    a = np.asarray(x)
  except Exception as e:  # ragged nested lists and the like
    raise TypeError(
      f"{name} must be a 1-D array of real numbers, got {type(x).__name__}"
    ) from e
  if a.dtype == bool or not (
    np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)
  ):
    raise TypeError(
      f"{name} must be a 1-D array of real numbers, got dtype {a.dtype}"
    )
  if a.ndim != 1:
    raise ValueError(
      f"{name} must be 1-D ([n], one value per seed or item), "
      f"got shape {a.shape}"
    )
  if a.shape[0] < min_n:
    raise ValueError(
      f"{name} must hold at least {min_n} value(s), got {a.shape[0]}"
    )
  a = a.astype(np.float64)
  bad = ~np.isfinite(a)
  if bad.any():
    i = int(np.argmax(bad))
    raise ValueError(
      f"{name} must be finite, got {name}[{i}] = {a[i]} ({int(bad.sum())} bad)"
    )
  if positive and (a <= 0).any():
    i = int(np.argmax(a <= 0))
    raise ValueError(
      f"{name} must be > 0 for a log-ratio, got {name}[{i}] = {a[i]}"
    )
  return a


def _check_pair(
  a: Any, b: Any, *, positive: bool = False
) -> tuple[np.ndarray, np.ndarray]:
  a = _check_1d(a, "a", positive=positive)
  b = _check_1d(b, "b", positive=positive)
  if a.shape != b.shape:
    raise ValueError(
      "a and b must be paired (the same seeds or items, in the same order): "
      f"got {a.shape[0]} and {b.shape[0]} values"
    )
  return a, b


def _check_positive_int(v: Any, name: str, minimum: int = 1) -> int:
  if (
    isinstance(v, bool)
    or not isinstance(v, numbers.Integral)
    or int(v) < minimum
  ):
    raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
  return int(v)


def _rng(seed: Any) -> np.random.Generator:
  if isinstance(seed, np.random.Generator):
    return seed
  if (
    isinstance(seed, bool)
    or not isinstance(seed, numbers.Integral)
    or int(seed) < 0
  ):
    raise ValueError(
      f"seed must be an int >= 0 or a numpy Generator, got {seed!r}"
    )
  return np.random.default_rng(int(seed))


def _check_alternative(alternative: Any) -> str:
  if alternative not in _ALTERNATIVES:
    raise ValueError(
      f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}"
    )
  return alternative


# -------------------------------------------------------------------- intervals


def _t_interval(x: np.ndarray, confidence: float) -> TInterval:
  n = x.shape[0]
  mean = float(x.mean())
  if n < 2:
    nan = float("nan")
    return TInterval(mean, nan, nan, nan, n, nan, confidence)
  sd = float(x.std(ddof=1))
  half = float(sps.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))
  return TInterval(mean, half, mean - half, mean + half, n, sd, confidence)


def t_interval(x: Any, confidence: float = 0.95) -> TInterval:
  r"""Two-sided Student-t confidence interval of the mean of ``x``.

  .. math::

    \bar x \pm t_{1-\alpha/2,\,n-1}\,\frac{s}{\sqrt n},\qquad
    s^2 = \frac{1}{n-1}\sum_i (x_i - \bar x)^2,\qquad 1-\alpha = \text{confidence}.

  The t quantile is exact for every n (unlike
  :func:`jaxpapers.core.ci95_halfwidth`, which uses 1.96 beyond n = 10). The
  interval assumes the values are independent draws (seeds or splits) of a
  roughly normal quantity; for two arms run on the same seeds use
  :func:`paired_difference`.

  Args:
    x: ``[n]`` finite real values, one per seed or split (n >= 1).
    confidence: the level :math:`1 - \alpha` in (0, 1).

  Returns:
    A :class:`TInterval`. With n = 1 the mean is the value itself and
    ``half_width``, ``lo``, ``hi`` and ``sd`` are NaN (one value has no spread;
    never a zero-width interval). Equal values give a zero half-width.

  Raises:
    TypeError: if ``x`` is not numeric.
    ValueError: if ``x`` is not 1-D, is empty or holds a non-finite value, or
      ``confidence`` is not in (0, 1).
  """
  confidence = _check_confidence(confidence)
  return _t_interval(_check_1d(x, "x"), confidence)


def paired_difference(a: Any, b: Any, confidence: float = 0.95) -> TInterval:
  r"""t-interval of the mean per-pair difference :math:`d_i = a_i - b_i` (a paired t-interval).

  .. math::

    \bar d \pm t_{1-\alpha/2,\,n-1}\,\frac{s_d}{\sqrt n},\qquad
    s_d^2 = \frac{1}{n-1}\sum_i (d_i - \bar d)^2.

  Use it when both arms ran on the same seeds, splits or items (pair i of ``a``
  and ``b`` shares seed i): the noise the pair shares cancels in :math:`d_i`, so
  this interval is usually much narrower than one built from the two arms'
  separate spreads. Its test is the paired t-test (``scipy.stats.ttest_rel``).

  Args:
    a: ``[n]`` the method's values, one per seed / split / item.
    b: ``[n]`` the baseline's values on the same seeds / splits / items, in the
      same order.
    confidence: the level :math:`1 - \alpha` in (0, 1).

  Returns:
    The :class:`TInterval` of the differences (``mean`` is :math:`\bar d`, ``n``
    the number of pairs); NaN half-width and bounds when n = 1.

  Raises:
    TypeError: if ``a`` or ``b`` is not numeric.
    ValueError: if ``a`` or ``b`` is not 1-D, is empty or holds a non-finite
      value, if their lengths differ, or ``confidence`` is not in (0, 1).
  """
  confidence = _check_confidence(confidence)
  a, b = _check_pair(a, b)
  return _t_interval(a - b, confidence)


def log_ratio_interval(
  a: Any, b: Any, confidence: float = 0.95
) -> LogRatioInterval:
  r"""t-interval of the per-pair log-ratios :math:`\ln(a_i / b_i)` and its ratio
  interval.

  For multiplicative claims ("a is 2x faster than b", "30% lower error"), where
  the effect scales with the size of the numbers. With :math:`r_i = \ln a_i -
  \ln b_i` (natural log):

  .. math::

    \bar r \pm t_{1-\alpha/2,\,n-1}\,\frac{s_r}{\sqrt n}, \qquad
    \text{ratio} = e^{\bar r} = \frac{\mathrm{gmean}(a)}{\mathrm{gmean}(b)}, \qquad
    [e^{\bar r - h},\ e^{\bar r + h}].

  The ratio interval is the interval of the geometric-mean ratio; it excludes 1
  exactly when the log interval excludes 0.

  Args:
    a: ``[n]`` positive values of the method, one per seed / split / item.
    b: ``[n]`` positive values of the baseline on the same seeds / splits /
      items.
    confidence: the level :math:`1 - \alpha` in (0, 1).

  Returns:
    A :class:`LogRatioInterval`: ``log`` (the :class:`TInterval` on the
    natural-log scale), ``ratio``, ``ratio_lo``, ``ratio_hi``; the bounds are
    NaN when n = 1.

  Raises:
    TypeError: if ``a`` or ``b`` is not numeric.
    ValueError: if ``a`` or ``b`` is not 1-D, is empty, holds a non-finite or
      non-positive value, if their lengths differ, or ``confidence`` is not in
      (0, 1).
  """
  confidence = _check_confidence(confidence)
  a, b = _check_pair(a, b, positive=True)
  log = _t_interval(np.log(a) - np.log(b), confidence)
  return LogRatioInterval(
    log=log,
    ratio=float(np.exp(log.mean)),
    ratio_lo=float(np.exp(log.lo)),
    ratio_hi=float(np.exp(log.hi)),
    n=log.n,
    confidence=confidence,
  )


# -------------------------------------------------------------------- bootstrap


def paired_bootstrap(
  a: Any,
  b: Any,
  statistic: Callable[..., Any] = np.mean,
  n_resamples: int = 10_000,
  confidence: float = 0.95,
  seed: int | np.random.Generator = 0,
) -> BootstrapInterval:
  r"""Paired percentile bootstrap over items of ``statistic(a) - statistic(b)``.

  Resample r draws n item indices with replacement, :math:`I_r =
  (i_{r1},\dots,i_{rn})`, the *same* indices for both arms (item i of ``a`` and
  ``b`` is one pair, e.g. one question answered by both methods), and computes

  .. math::

    \theta^*_r = \mathrm{stat}(a_{I_r}) - \mathrm{stat}(b_{I_r}),\qquad
    [\,q_{\alpha/2}(\theta^*),\ q_{1-\alpha/2}(\theta^*)\,]

  with linearly interpolated quantiles (``np.quantile``'s default). The indices
  are those of one draw ``np.random.default_rng(seed).integers(0, n,
  size=(n_resamples, n))`` (row r is resample r), the same draw as
  ``scipy.stats.bootstrap(..., paired=True, method='percentile',
  rng=np.random.default_rng(seed))``; they are drawn and gathered in blocks of
  rows to bound memory, which leaves the random stream unchanged. Nothing loops
  over resamples in Python.

  Args:
    a: ``[n]`` per-item values of the method.
    b: ``[n]`` per-item values of the baseline on the same items, in the same
      order.
    statistic: an axis-aware reduction, called as ``statistic(x, axis=-1)`` on
      ``[k, n]`` resampled values and returning ``[k]`` (``np.mean``,
      ``np.median``, or e.g. ``lambda x, axis: np.mean(x > 0.5, axis=axis)``).
      With ``np.mean`` (the default) the difference of means is computed as the
      mean of the per-item differences.
    n_resamples: the number of bootstrap resamples (>= 1).
    confidence: the level :math:`1 - \alpha` in (0, 1).
    seed: an int seed of ``np.random.default_rng`` (the default 0 makes the
      interval reproducible), or a ``np.random.Generator`` (advanced in place).

  Returns:
    A :class:`BootstrapInterval` (``estimate``, ``lo``, ``hi``, ``n``,
    ``n_resamples``, ``confidence``, ``resamples`` of shape ``[n_resamples]``).
    With n = 1 no resampling is done: ``lo`` and ``hi`` are NaN and
    ``resamples`` is empty.

  Raises:
    TypeError: if ``a`` or ``b`` is not numeric, or ``statistic`` is not
      callable.
    ValueError: if ``a`` or ``b`` is not 1-D, empty or non-finite, if their
      lengths differ, if ``statistic`` does not reduce the last axis to finite
      values, or ``n_resamples``, ``confidence`` or ``seed`` is out of range.
  """
  confidence = _check_confidence(confidence)
  n_resamples = _check_positive_int(n_resamples, "n_resamples")
  if not callable(statistic):
    raise TypeError(
      f"statistic must be a callable statistic(x, axis=-1), got {statistic!r}"
    )
  rng = _rng(seed)
  a, b = _check_pair(a, b)
  n = a.shape[0]
  is_mean = statistic is np.mean
  d = a - b

  def stat_diff(ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    if is_mean:
      return np.mean(ia - ib, axis=-1)
    return np.asarray(statistic(ia, axis=-1), np.float64) - np.asarray(
      statistic(ib, axis=-1), np.float64
    )

  try:
    estimate = np.asarray(stat_diff(a, b), np.float64)
  except TypeError as e:
    raise TypeError(
      "statistic must accept an axis keyword, statistic(x, "
      f"axis=-1) (like np.mean); calling it failed with: {e}"
    ) from e
  if estimate.shape != ():
    raise ValueError(
      "statistic must reduce the last axis: statistic(x, "
      f"axis=-1) of an [n] array must be a scalar, got shape {estimate.shape}"
    )
  if n < 2:
    nan = float("nan")
    return BootstrapInterval(
      float(estimate),
      nan,
      nan,
      n,
      n_resamples,
      confidence,
      np.empty(0, np.float64),
    )

  rows = max(1, _BLOCK_ENTRIES // n)
  out = np.empty(n_resamples, np.float64)
  # blocks of resamples, each vectorised
  for start in range(0, n_resamples, rows):
    k = min(rows, n_resamples - start)
    idx = rng.integers(0, n, size=(k, n))  # [k, n]
    theta = d[idx].mean(axis=-1) if is_mean else stat_diff(a[idx], b[idx])
    theta = np.asarray(theta, np.float64)
    if theta.shape != (k,):
      raise ValueError(
        "statistic must reduce the last axis: statistic(x, axis=-1) of a [k, "
        f"n] array must have shape [k] = ({k},), got {theta.shape}"
      )
    out[start : start + k] = theta
  bad = ~np.isfinite(out)
  if bad.any():
    raise ValueError(
      f"statistic gave a non-finite difference on {int(bad.sum())} of "
      f"{n_resamples} resamples"
    )
  alpha = 1.0 - confidence
  lo, hi = np.quantile(out, [alpha / 2, 1 - alpha / 2])
  return BootstrapInterval(
    float(estimate), float(lo), float(hi), n, n_resamples, confidence, out
  )


def cluster_bootstrap(
  diffs: Any,
  n_resamples: int = 10_000,
  confidence: float = 0.95,
  seed: int | np.random.Generator = 0,
) -> BootstrapInterval:
  r"""Two-level percentile bootstrap of a mean of cluster means of paired
  differences.

  ``diffs[c, i]`` is the paired difference (method minus baseline) of item ``i``
  in cluster ``c``: e.g. one split of one (dataset, backbone) pair, where the
  pairs differ in their true effects and the splits of a pair are noisy
  measurements of it. The estimate is the mean over clusters of the cluster
  means, :math:`\hat\theta = \frac1C \sum_c \bar d_c`. Resample r draws C
  clusters with replacement, :math:`J_r = (j_{r1}, \dots, j_{rC})`, and within
  each drawn cluster n items with replacement, :math:`I_{rk} = (i_{rk1}, \dots,
  i_{rkn})`:

  .. math::

    \theta^*_r = \frac1C \sum_{k=1}^C \frac1n \sum_{l=1}^n d_{j_{rk}, i_{rkl}},\qquad
    [\,q_{\alpha/2}(\theta^*),\ q_{1-\alpha/2}(\theta^*)\,]

  so the interval carries both the spread of the effects between clusters and
  the noise of the items within them (resampling the flattened items instead
  would treat C x n items as independent and give an interval that is too narrow
  when the clusters differ). Per block of k resamples the generator draws
  ``integers(0, C, size=(k, C))`` and then ``integers(0, n, size=(k, C, n))``;
  quantiles are ``np.quantile``'s default (linear).

  Args:
    diffs: ``[C, n]`` finite paired differences, C >= 1 clusters of n >= 1 items
      each.
    n_resamples: the number of bootstrap resamples (>= 1).
    confidence: the level :math:`1 - \alpha` in (0, 1).
    seed: an int seed of ``np.random.default_rng`` or a ``np.random.Generator``.

  Returns:
    A :class:`BootstrapInterval` with ``estimate`` the mean of cluster means,
    ``n`` = C, and ``resamples`` of shape ``[n_resamples]``. With one cluster
    and one item no resampling is done: ``lo`` and ``hi`` are NaN.

  Raises:
    TypeError: if ``diffs`` is not numeric.
    ValueError: if ``diffs`` is not 2-D, is empty or non-finite, or
      ``n_resamples``, ``confidence`` or ``seed`` is out of range.
  """
  confidence = _check_confidence(confidence)
  n_resamples = _check_positive_int(n_resamples, "n_resamples")
  rng = _rng(seed)
  try:
    d = np.asarray(diffs, np.float64)
  except (TypeError, ValueError) as e:
    raise TypeError(
      f"diffs must be a numeric [clusters, items] array, got {diffs!r}"
    ) from e
  if d.ndim != 2 or d.shape[0] < 1 or d.shape[1] < 1:
    raise ValueError(
      "diffs must be a 2-D [clusters, items] array with at least one of "
      f"each, got shape {d.shape}"
    )
  if not np.all(np.isfinite(d)):
    raise ValueError(
      f"diffs must be finite, got {int((~np.isfinite(d)).sum())} non-finite"
    )
  c, n = d.shape
  estimate = float(d.mean(axis=1).mean())
  if c * n < 2:
    nan = float("nan")
    return BootstrapInterval(
      estimate, nan, nan, c, n_resamples, confidence, np.empty(0)
    )
  rows = max(1, _BLOCK_ENTRIES // (c * n))
  out = np.empty(n_resamples, np.float64)
  for start in range(0, n_resamples, rows):
    k = min(rows, n_resamples - start)
    ci = rng.integers(0, c, size=(k, c))  # [k, C] drawn clusters
    si = rng.integers(0, n, size=(k, c, n))  # [k, C, n] drawn items within each
    out[start : start + k] = d[ci[..., None], si].mean(axis=(-1, -2))
  alpha = 1.0 - confidence
  lo, hi = np.quantile(out, [alpha / 2, 1 - alpha / 2])
  return BootstrapInterval(
    estimate, float(lo), float(hi), c, n_resamples, confidence, out
  )


# --------------------------------------------------------------- sign-flip test


def sign_flip_test(
  diffs: Any,
  n_resamples: int = 10_000,
  seed: int | np.random.Generator = 0,
  alternative: str = "two-sided",
) -> SignFlipResult:
  r"""Paired randomisation (sign-flip) test of a zero mean difference.

  Under the null hypothesis that each pair's two arms are exchangeable, every
  difference is equally likely to have either sign. With :math:`S(\varepsilon) =
  \sum_i \varepsilon_i d_i` over sign patterns :math:`\varepsilon \in \{-1,
  +1\}^n` and the observed :math:`S_0 = \sum_i d_i`, the p-value is the fraction
  of patterns at least as extreme:

  .. math::

    p = \frac{1}{2^n} \sum_{\varepsilon} \mathbf 1\big[\,|S(\varepsilon)| \ge |S_0|\,\big]
    \quad\text{(two-sided; } S \ge S_0 \text{ for 'greater', } S \le S_0 \text{ for 'less')}.

  For :math:`n \le 16` all :math:`2^n` patterns are enumerated (exact; the
  smallest possible two-sided p is :math:`2 / 2^n`, e.g. 0.25 with 3 seeds).
  Beyond, ``n_resamples`` random patterns :math:`\varepsilon_r` are drawn and
  :math:`p = (1 + \#\{r: \text{extreme}\}) / (1 + R)`, which counts the observed
  pattern and is never 0. Ties are counted as extreme up to a rounding tolerance
  of :math:`4 n\,\epsilon_{64} \sum_i |d_i|`.

  Args:
    diffs: ``[n]`` finite per-pair differences ``a_i - b_i`` (n >= 1).
    n_resamples: random sign patterns when n > 16 (>= 1); unused when exact.
    seed: an int seed of ``np.random.default_rng`` or a ``np.random.Generator``
      (n > 16).
    alternative: ``'two-sided'``, ``'greater'`` (mean > 0) or ``'less'`` (mean <
      0).

  Returns:
    A :class:`SignFlipResult` (``p_value``, ``mean``, ``n``, ``exact``,
    ``n_patterns``, ``alternative``). All-zero differences give p = 1.

  Raises:
    TypeError: if ``diffs`` is not numeric.
    ValueError: if ``diffs`` is not 1-D, empty or non-finite, or
      ``n_resamples``, ``seed`` or ``alternative`` is invalid.
  """
  n_resamples = _check_positive_int(n_resamples, "n_resamples")
  alternative = _check_alternative(alternative)
  rng = _rng(seed)
  d = _check_1d(diffs, "diffs")
  n = d.shape[0]
  s0 = float(d.sum())
  tol = 4 * n * np.finfo(np.float64).eps * float(np.abs(d).sum())

  def extreme(s: np.ndarray) -> np.ndarray:
    if alternative == "two-sided":
      return np.abs(s) >= abs(s0) - tol
    if alternative == "greater":
      return s >= s0 - tol
    return s <= s0 + tol

  if n <= _EXACT_SIGN_FLIP_MAX_N:
    patterns = 1 << n
    bits = (np.arange(patterns)[:, None] >> np.arange(n)) & 1  # [2^n, n]
    s = (1.0 - 2.0 * bits) @ d
    p = float(np.mean(extreme(s)))
    return SignFlipResult(p, s0 / n, n, True, patterns, alternative)

  rows = max(1, _BLOCK_ENTRIES // n)
  count = 0
  for start in range(0, n_resamples, rows):
    k = min(rows, n_resamples - start)
    signs = 1.0 - 2.0 * rng.integers(0, 2, size=(k, n))  # [k, n]
    count += int(extreme(signs @ d).sum())
  p = (1 + count) / (1 + n_resamples)
  return SignFlipResult(float(p), s0 / n, n, False, n_resamples, alternative)


# --------------------------------------------------------------------- planning


def _se_df(n: int, sd: float, paired: bool) -> tuple[float, int]:
  """Standard error of the mean difference and the t degrees of freedom."""
  if paired:
    return sd / math.sqrt(n), n - 1
  return sd * math.sqrt(2.0 / n), 2 * n - 2


def _power(
  n: int, effect: float, sd: float, confidence: float, paired: bool
) -> float:
  se, df = _se_df(n, sd, paired)
  t_crit = sps.t.ppf(0.5 + confidence / 2, df)
  return float(sps.nct.sf(t_crit, df, abs(effect) / se))


def _check_sd(sd: Any) -> float:
  if (
    isinstance(sd, bool)
    or not isinstance(sd, numbers.Real)
    or not 0 < float(sd) < math.inf
  ):
    raise ValueError(f"sd must be a finite number > 0, got {sd!r}")
  return float(sd)


def half_width_at(
  n: int, sd: float, confidence: float = 0.95, paired: bool = True
) -> float:
  r"""The t-interval half-width that n seeds give when the sample sd equals
  ``sd``.

  .. math::

    h = t_{1-\alpha/2,\,n-1}\,\frac{\sigma}{\sqrt n}\ \text{(paired)},\qquad
    h = t_{1-\alpha/2,\,2n-2}\,\sigma\sqrt{2/n}\ \text{(two independent arms of n seeds)}.

  Args:
    n: seeds (pairs when paired, per arm when not), >= 2.
    sd: :math:`\sigma`, the standard deviation of the per-pair
      differences (paired) or of one arm's values (unpaired, the same in both
      arms), > 0.
    confidence: the level :math:`1 - \alpha` in (0, 1).
    paired: whether the interval is :func:`paired_difference`'s (True) or a
      pooled two-sample interval of two independent arms (False).

  Returns:
    The half-width :math:`h` (a float in the units of ``sd``).

  Raises:
    ValueError: if ``n`` < 2, ``sd`` is not a finite positive number or
      ``confidence`` is not in (0, 1).
  """
  n = _check_positive_int(n, "n", minimum=2)
  sd = _check_sd(sd)
  confidence = _check_confidence(confidence)
  se, df = _se_df(n, sd, bool(paired))
  return float(sps.t.ppf(0.5 + confidence / 2, df) * se)


def seeds_needed(
  effect: float,
  sd: float,
  confidence: float = 0.95,
  power: float = 0.8,
  paired: bool = True,
) -> SeedsNeeded:
  r"""How many seeds a claimed effect needs so that its t-interval excludes 0
  with ``power``.

  With true mean difference :math:`\delta` (``effect``), standard deviation
  :math:`\sigma` (``sd``) and n seeds, the studentised mean :math:`T = \bar d /
  (s/\sqrt n)` follows a noncentral t with :math:`\nu = n - 1` degrees of
  freedom and noncentrality :math:`\lambda = |\delta| \sqrt n / \sigma`
  (paired), or :math:`\nu = 2n - 2`, :math:`\lambda = |\delta| /
  (\sigma\sqrt{2/n})` (two independent arms of n seeds each). The interval lies
  on the effect's side of 0 when :math:`T > t_{1-\alpha/2,\,\nu}`, so

  .. math::

    \text{power}(n) = 1 - F_{\mathrm{nct}}(t_{1-\alpha/2,\,\nu};\ \nu, \lambda),

  and the answer is the smallest :math:`n \ge 2` with power(n) >= ``power``, found by exact
  search (power grows with n). An interval excluding 0 on the *wrong* side does not support the
  claim and is not counted; that tail is negligible wherever the answer matters. The normal
  approximation :math:`n_z = \lceil ((z_{1-\alpha/2} + z_{\text{power}})\,\sigma/\delta)^2
  \rceil` (twice that per arm when unpaired) is returned beside it: it ignores the t quantile
  and the noise of :math:`s`, so it undercounts with few seeds (e.g. :math:`\delta = \sigma`:
  :math:`n_z = 8`, exact n = 10).

  Args:
    effect: :math:`\delta`, the mean difference the claim expects (either sign,
      nonzero).
    sd: :math:`\sigma` > 0: the sd of the per-pair differences (paired, e.g.
      from a pilot's :func:`paired_difference` ``.sd``) or of one arm's values
      (unpaired).
    confidence: the interval's level :math:`1 - \alpha` in (0, 1).
    power: the target probability in (0, 1) that the interval excludes 0.
    paired: True for :func:`paired_difference` over n pairs; False for two
      independent arms of n seeds each (pooled two-sample t).

  Returns:
    A :class:`SeedsNeeded`: ``n``, the achieved ``power`` at n, the normal
    approximation ``n_normal`` and ``half_width`` (:func:`half_width_at` at n).

  Raises:
    ValueError: if ``effect`` is zero or not finite, ``sd`` is not a finite
      positive number, ``confidence`` or ``power`` is not in (0, 1), or more
      than 10^9 seeds would be needed.
  """
  if (
    isinstance(effect, bool)
    or not isinstance(effect, numbers.Real)
    or not (math.isfinite(effect) and effect != 0)
  ):
    raise ValueError(f"effect must be a finite nonzero number, got {effect!r}")
  sd = _check_sd(sd)
  confidence = _check_confidence(confidence)
  target = _check_confidence(power, "power")
  paired = bool(paired)
  effect = abs(float(effect))

  z = sps.norm.ppf(0.5 + confidence / 2) + sps.norm.ppf(target)
  # z <= 0 (a target power below 1 - confidence/2): any n meets it in the normal
  # limit.
  n_normal = (
    max(1, math.ceil((z * sd / effect) ** 2 * (1 if paired else 2)))
    if z > 0
    else 1
  )

  def pw(n: int) -> float:
    return _power(n, effect, sd, confidence, paired)

  lo = 1  # power(lo) < target or lo is below the smallest n (2)
  hi = max(2, n_normal)
  while pw(hi) < target:
    lo, hi = hi, 2 * hi
    if hi > 10**9:
      raise ValueError(
        f"an effect of {effect:g} with sd {sd:g} needs more than 10^9 seeds "
        f"at power {target:g}"
      )
  # invariant: power(hi) >= target; lo = 1 or power(lo) < target
  while hi - lo > 1:
    mid = (lo + hi) // 2
    if pw(mid) >= target:
      hi = mid
    else:
      lo = mid
  return SeedsNeeded(
    n=hi,
    power=pw(hi),
    n_normal=n_normal,
    half_width=half_width_at(hi, sd, confidence, paired),
  )


# ----------------------------------------------------------------- seed summary


def seed_summary(
  values: Any,
  *,
  ci_key: str | None = "ci95",
  values_key: str | None = None,
  finite_only: bool = False,
) -> dict[str, Any]:
  r"""A metric over seeds as a results entry: mean, standard deviation, 95%
  half-width.

  .. math::

    \bar x = \frac1n \sum_i x_i,\qquad s = \sqrt{\tfrac{1}{n-1} \sum_i (x_i - \bar x)^2},\qquad
    h = t_{0.975,\,n-1}\, s / \sqrt n

  over axis 0 (the seeds), elementwise over the other axes. The half-width ``h``
  is :func:`jaxpapers.core.ci95_halfwidth` (tabulated t quantiles up to n = 10,
  then 1.96), which committed results were judged with.

  Args:
    values: ``[n, ...]`` real values, one (array) per seed on axis 0.
    ci_key: the key of ``h``; None leaves it out.
    values_key: the key under which ``values`` themselves are kept (as float64,
      non-finite ones included); None leaves them out.
    finite_only: summarise only the finite values (``values`` must then be 1-D).

  Returns:
    ``{"mean": x̄, "std": s, ci_key: h, values_key: values}`` in that order:
    floats for ``[n]`` values, nested lists of shape ``[...]`` for ``[n, ...]``.
    With one value ``std`` is 0 and ``h`` NaN (no spread can be estimated); with
    none, all three are NaN.

  Raises:
    ValueError: ``values`` is a scalar, or not 1-D with ``finite_only``.
    TypeError: ``values`` is not numeric.

  Example::

    seed_summary([0.61, 0.64, 0.58], values_key="per_seed")
    # {'mean': 0.61, 'std': 0.03, 'ci95': 0.0745..., 'per_seed': [0.61, 0.64, 0.58]}
  """
  raw = np.asarray(values)
  if raw.dtype == object or not np.issubdtype(raw.dtype, np.number):
    raise TypeError(f"values must be real numbers, got dtype {raw.dtype}")
  x = full = raw.astype(np.float64)
  if x.ndim == 0:
    raise ValueError(
      "values must be [n, ...] (one value per seed on axis 0), got a scalar"
    )
  if finite_only:
    if x.ndim != 1:
      raise ValueError(f"finite_only needs 1-D values, got shape {x.shape}")
    x = x[np.isfinite(x)]
  n, rest = x.shape[0], x.shape[1:]
  if n == 0:
    mean = std = ci = np.full(rest, np.nan)
  else:
    mean = x.mean(0)
    std = x.std(0, ddof=1) if n > 1 else np.zeros(rest)
    ci = (
      ci95_halfwidth(x)
      if x.ndim == 1
      else np.apply_along_axis(ci95_halfwidth, 0, x)
    )
  out: dict[str, Any] = {
    "mean": np.asarray(mean).tolist(),
    "std": np.asarray(std).tolist(),
  }
  if ci_key is not None:
    out[ci_key] = np.asarray(ci, np.float64).tolist()
  if values_key is not None:
    out[values_key] = full.tolist()
  return out
