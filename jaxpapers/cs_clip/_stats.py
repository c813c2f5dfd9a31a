"""Per-item outcomes and their intervals: the statistics of the half-truth
benchmark.

Every test item (a half-truth triple, a retrieval query, a foil pair) has a 0/1
outcome per seed; :func:`pack_bits` / :func:`unpack_bits` keep them compact in a
results file, and :func:`item_seed_interval` puts a 95% interval on a mean (or a
paired difference) that covers both the item noise and the seed noise.
"""

from __future__ import annotations

import numpy as np

from jaxpapers.core import stats as core_stats


def pack_bits(x) -> str:
  """``[n]`` 0/1 outcomes as a hex string (8 items a byte, most significant bit
  first).

  Args:
    x: ``[n]`` array of 0/1 outcomes.

  Returns:
    The hex string of ``ceil(n / 8)`` bytes (the last one padded with zeros).
  """
  x = np.asarray(x)
  if x.ndim != 1 or not np.isin(x, (0, 1)).all():
    raise ValueError(
      f"x must be a 1-D array of 0/1 outcomes, got shape {x.shape}"
    )
  return np.packbits(x.astype(np.uint8)).tobytes().hex()


def unpack_bits(s: str, n: int) -> np.ndarray:
  """Inverse of :func:`pack_bits`.

  Args:
    s: the hex string.
    n: the number of items it holds.

  Returns:
    ``[n]`` float64 outcomes in {0, 1}.
  """
  bits = np.unpackbits(np.frombuffer(bytes.fromhex(s), np.uint8))
  if bits.shape[0] < n or bits.shape[0] - n >= 8:
    raise ValueError(
      f"a packed string of {len(s)} hex digits cannot hold {n} items"
    )
  return bits[:n].astype(np.float64)


def item_seed_interval(
  a, b=None, *, n_boot: int = 10000, seed: int = 0
) -> dict:
  """Mean of ``a - b`` over seeds and items, and a 95% half-width covering both
  noises.

  ``a`` and ``b`` are ``[S, n]`` outcomes of two models on the same S seeds and
  n test items (``b`` None: zero, i.e. the interval of ``a`` itself). The
  half-width is the larger of

  * the item half-width: a paired percentile bootstrap over the n items of the
    seed-averaged outcomes (``core.stats.paired_bootstrap``), made symmetric by
    its larger side, and
  * the seed half-width: a paired t-interval over the S per-seed means
    (``core.stats.paired_difference``),

  so the interval is as wide as the larger of the two sources of noise. With a
  single seed the seed half-width, and so the half-width, is NaN: a claim judged
  on it is inconclusive.

  Args:
    a: ``[S, n]`` outcomes of the first model.
    b: ``[S, n]`` outcomes of the second model on the same seeds and items, or
      None.
    n_boot: bootstrap resamples.
    seed: the bootstrap's seed.

  Returns:
    ``{'mean', 'half_width', 'item_half_width', 'seed_half_width', 'n_items',
    'n_seeds'}``.
  """
  a = np.asarray(a, np.float64)
  b = np.zeros_like(a) if b is None else np.asarray(b, np.float64)
  if a.ndim != 2 or a.shape != b.shape:
    raise ValueError(
      "a and b must be [seeds, items] of one shape, "
      f"got {a.shape} and {b.shape}"
    )
  mean = float(np.mean(a - b))
  boot = core_stats.paired_bootstrap(
    a.mean(0), b.mean(0), n_resamples=n_boot, seed=seed
  )
  item_h = float(max(boot.estimate - boot.lo, boot.hi - boot.estimate))
  seed_h = float(core_stats.paired_difference(a.mean(1), b.mean(1)).half_width)
  return {
    "mean": mean,
    # NaN (undecided) with a single seed
    "half_width": float(np.max([item_h, seed_h])),
    "item_half_width": item_h,
    "seed_half_width": seed_h,
    "n_items": int(a.shape[1]),
    "n_seeds": int(a.shape[0]),
  }
