"""The offline retrieval benchmark: bundled molecules, simulated spectra,
deduplicated pools.

:func:`simulated_benchmark` builds the whole study's data (fingerprints, masses,
simulated spectra, a split by molecule, training and test candidate pools);
:func:`pool_ties`, :func:`shuffled_labels` and
:func:`nearest_neighbour_fingerprints` are the checks, the shuffled-label
control and the nearest-neighbour baseline read on it. Host-side numpy.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxpapers.msretrieval._data import (
  build_candidates,
  load_bundled_molecules,
  monoisotopic_masses,
  morgan_fingerprints,
  simulate_spectra,
)

POOL_MODES = ("mass", "hard", "random")


def simulated_benchmark(
  *,
  n_molecules: int,
  n_bits: int,
  radius: int,
  n_bins: int,
  max_mz: float,
  test_fraction: float,
  max_test_queries: int,
  train_pool: str,
  train_cands: int,
  eval_cands: int,
  seed: int,
) -> dict[str, np.ndarray]:
  """Molecules -> fingerprints, masses, simulated spectra, a split by molecule
  and pools.

  The first ``n_molecules`` bundled molecules (0: all), Morgan fingerprints,
  simulated spectra (a labelled proxy for MS/MS), a random split by molecule,
  and per query a pool of candidates from the whole library (as MassSpecGym's
  come from PubChem), deduplicated by fingerprint so that no two candidates tie;
  the test pools before deduplication are kept beside them.

  Args:
    n_molecules: molecules to load (0: every bundled one).
    n_bits: fingerprint bits ``F``.
    radius: Morgan radius.
    n_bins: spectrum bins ``D``.
    max_mz: the last bin's upper m/z.
    test_fraction: share of molecules held out, in ``(0, 1)``.
    max_test_queries: test queries kept (the first of the sorted held-out
      molecules).
    train_pool: the training pools' mode (``'mass'``, ``'hard'`` or
      ``'random'``).
    train_cands: candidates per training pool.
    eval_cands: candidates per test pool.
    seed: the split's and the spectra's seed (pools use ``seed + 1``,
      ``seed + 2 + i``).

  Returns:
    ``{"fps" [N, F] uint8, "masses" [N], "spectra" [N, D], "train" [N_tr] int32,
    "test" [Q] int32, "prep_s", "train_pool" [N_tr, C_tr], "train_labels", and
    per mode m of POOL_MODES: "m_pool" [Q, C], "m_labels" [Q, C] bool, "m_smin"
    / "m_smax" [Q] (σ band), "m_raw_pool" [Q, C] (before deduplication)}``.

  Raises:
    ValueError: ``test_fraction`` outside ``(0, 1)``, ``max_test_queries`` below
      1 or an unknown ``train_pool`` (the data functions name their own bad
      arguments).
  """
  if not isinstance(test_fraction, numbers.Real) or not 0 < test_fraction < 1:
    raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
  if not isinstance(max_test_queries, numbers.Integral) or max_test_queries < 1:
    raise ValueError(
      f"max_test_queries must be an int >= 1, got {max_test_queries!r}"
    )
  if train_pool not in POOL_MODES:
    raise ValueError(
      f"train_pool must be one of {POOL_MODES}, got {train_pool!r}"
    )
  t0 = time.time()
  smiles = load_bundled_molecules(n_molecules or None)
  fps = morgan_fingerprints(smiles, n_bits=n_bits, radius=radius)
  masses = monoisotopic_masses(smiles)
  spectra = simulate_spectra(smiles, seed=seed, n_bins=n_bins, max_mz=max_mz)
  n = len(smiles)
  rng = np.random.default_rng(seed)
  perm = rng.permutation(n)
  n_test = int(round(test_fraction * n))
  test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
  test_q = test[:max_test_queries]
  out = {
    "fps": fps,
    "masses": masses,
    "spectra": spectra,
    "train": train.astype(np.int32),
    "test": test_q.astype(np.int32),
    "prep_s": np.float64(time.time() - t0),
  }
  # unique_fingerprints: no fingerprint twice in a pool, so no ties
  tr = build_candidates(
    fps,
    masses,
    train,
    mode=train_pool,
    size=train_cands,
    seed=seed + 1,
    unique_fingerprints=True,
  )
  out["train_pool"], out["train_labels"] = tr.index, tr.labels
  for i, mode in enumerate(POOL_MODES):
    pools = lambda unique: build_candidates(
      fps,
      masses,
      test_q,
      mode=mode,
      size=eval_cands,
      seed=seed + 2 + i,
      unique_fingerprints=unique,
    )
    cs = pools(True)
    out[f"{mode}_pool"], out[f"{mode}_labels"] = cs.index, cs.labels
    out[f"{mode}_smin"], out[f"{mode}_smax"] = cs.sigma_min, cs.sigma_max
    # the pools before deduplication
    out[f"{mode}_raw_pool"] = pools(False).index
  return out


def pool_ties(
  fps: np.ndarray, pool: np.ndarray, query: np.ndarray
) -> dict[str, float]:
  """How often a pool cannot be ranked by fingerprints alone (host-side numpy).

  Args:
    fps: ``[N, F]`` library fingerprints.
    pool: ``[Q, C]`` library indices of each query's candidates (the query's
      molecule included).
    query: ``[Q]`` library index of each query's molecule.

  Returns:
    ``query_tied``: share of pools holding another candidate with the query's
    fingerprint (the true molecule cannot be ranked first except by
    tie-breaking); ``any_tied``: share of pools holding any two candidates with
    one fingerprint; ``extra_copies``: mean number of candidates per pool that
    repeat a fingerprint already in it.

  Raises:
    ValueError: the shapes do not fit (``fps`` 2-D, ``pool`` ``[Q, C]``,
      ``query`` ``[Q]``).
  """
  fps, pool, query = np.asarray(fps), np.asarray(pool), np.asarray(query)
  if fps.ndim != 2 or pool.ndim != 2 or query.shape != pool.shape[:1]:
    raise ValueError(
      f"fps must be [N, F], pool [Q, C] and query [Q], got {fps.shape}, "
      f"{pool.shape}, {query.shape}"
    )
  fp = fps[pool]  # [Q, C, F]
  same_q = (fp == fps[query][:, None]).all(-1) & (pool != query[:, None])
  copies = np.array(
    [len(p) - len(np.unique(f, axis=0)) for p, f in zip(pool, fp)]
  )
  return {
    "query_tied": float(same_q.any(1).mean()),
    "any_tied": float((copies > 0).mean()),
    "extra_copies": float(copies.mean()),
  }


def shuffled_labels(
  labels: np.ndarray, num_shuffles: int, seed: Any
) -> np.ndarray:
  """``[S, Q, C]``: each pool's labels permuted within the pool,
  ``S = num_shuffles`` times.

  The placebo positive lands on a uniformly random slot of the same pool (the
  true one with probability 1/C), so every model's HR@1 against it is chance in
  expectation: the labels of the shuffled-label control.

  Args:
    labels: ``[Q, C]`` labels of the pools.
    num_shuffles: ``S >= 1``.
    seed: a numpy seed (an int or a sequence of ints, e.g.
      ``[seed, 300 + pool_index]``).

  Returns:
    ``[S, Q, C]`` shuffled labels, fixed by ``seed``.

  Raises:
    ValueError: ``labels`` is not 2-D or ``num_shuffles`` is not an int >= 1.
  """
  labels = np.asarray(labels)
  if labels.ndim != 2:
    raise ValueError(f"labels must be [Q, C], got shape {labels.shape}")
  if not isinstance(num_shuffles, numbers.Integral) or num_shuffles < 1:
    raise ValueError(f"num_shuffles must be an int >= 1, got {num_shuffles!r}")
  rng = np.random.default_rng(seed)
  stack = np.broadcast_to(labels, (num_shuffles, *labels.shape))
  return rng.permuted(stack, axis=-1)


def nearest_neighbour_fingerprints(
  query_spectra: np.ndarray,
  train_spectra: np.ndarray,
  train_fps: np.ndarray,
  k: int,
) -> np.ndarray:
  """The nearest-neighbour lookup baseline: mean fingerprint of the ``k``
  nearest spectra.

  Args:
    query_spectra: ``[Q, D]`` spectra to predict for.
    train_spectra: ``[N, D]`` training spectra.
    train_fps: ``[N, F]`` their fingerprints.
    k: neighbours by cosine similarity, ``1 <= k <= N``.

  Returns:
    ``[Q, F]`` float32 bit probabilities.

  Raises:
    ValueError: mismatched shapes or ``k`` out of range.
  """
  a, b, fps = (np.asarray(x) for x in (query_spectra, train_spectra, train_fps))
  if (
    a.ndim != 2
    or b.ndim != 2
    or a.shape[1] != b.shape[1]
    or fps.shape[:1] != b.shape[:1]
  ):
    raise ValueError(
      "query_spectra must be [Q, D], train_spectra [N, D] and train_fps [N, "
      f"F], got {a.shape}, {b.shape}, {fps.shape}"
    )
  if not isinstance(k, numbers.Integral) or not 1 <= k <= b.shape[0]:
    raise ValueError(f"k must be an int in [1, {b.shape[0]}], got {k!r}")
  a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-8)
  b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-8)
  nn = np.argsort(-(a @ b.T), axis=1)[:, :k]
  return fps[nn].mean(1).astype(np.float32)


def pool_summary(
  data: dict[str, np.ndarray], modes: Sequence[str] = POOL_MODES
) -> dict:
  """Sizes, bit density, σ bands, duplicate rates and ties of a benchmark's test
  pools.

  Args:
    data: :func:`simulated_benchmark`'s arrays.
    modes: the pools to summarise.

  Returns:
    ``{"molecules", "train", "test_queries", "bit_density", "sigma_max_mean",
    "sigma_min_mean", "duplicate_fp_rate", "pool_ties", "spectra",
    "raw_pool_ties"}`` (per-pool values by mode; ``raw_pool_ties``: the
    :func:`pool_ties` of the pools before deduplication).

  Raises:
    KeyError: a mode's arrays are missing from ``data``.
  """
  missing = [
    k for m in modes for k in (f"{m}_pool", f"{m}_raw_pool") if k not in data
  ]
  if missing:
    raise KeyError(f"data lacks {missing}: pass simulated_benchmark's arrays")
  fps, test = data["fps"], data["test"]
  return {
    "molecules": int(fps.shape[0]),
    "train": int(data["train"].shape[0]),
    "test_queries": int(test.shape[0]),
    "bit_density": float(fps.mean()),
    "sigma_max_mean": {m: float(data[f"{m}_smax"].mean()) for m in modes},
    "sigma_min_mean": {m: float(data[f"{m}_smin"].mean()) for m in modes},
    "duplicate_fp_rate": {
      m: float(
        (fps[data[f"{m}_pool"]] == fps[test][:, None]).all(-1).sum(-1).mean()
        - 1.0
      )
      for m in modes
    },
    "pool_ties": {m: pool_ties(fps, data[f"{m}_pool"], test) for m in modes},
    "spectra": "simulated (proxy for MS/MS)",
    "raw_pool_ties": {
      m: pool_ties(fps, data[f"{m}_raw_pool"], test) for m in modes
    },
  }
