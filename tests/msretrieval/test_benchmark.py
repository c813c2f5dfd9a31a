"""The offline benchmark and the toy regret problems against float64 brute
force."""

import itertools

import numpy as np
import pytest

import jaxpapers.msretrieval as M


def _jaccard(a, b):
  inter, union = np.minimum(a, b).sum(), np.maximum(a, b).sum()
  return inter / union if union else 0.0


def test_nearest_neighbour_fingerprints_is_the_mean_of_the_k_most_cosine_similar():
  rng = np.random.default_rng(0)
  q, x, fps = (
    rng.random((5, 7)),
    rng.random((9, 7)),
    (rng.random((9, 6)) < 0.5).astype(np.uint8),
  )
  got = M.nearest_neighbour_fingerprints(q, x, fps, 3)
  for i in range(5):
    cos = [
      q[i] @ x[j] / np.linalg.norm(q[i]) / np.linalg.norm(x[j])
      for j in range(9)
    ]
    top = sorted(range(9), key=lambda j: -cos[j])[:3]
    np.testing.assert_allclose(got[i], fps[top].mean(0), rtol=1e-6)


def test_toy_regret_matches_brute_force_enumeration():
  rows = M.toy_regret_problems(
    (4,), (3,), (0.3,), problems=12, density=0.5, seed=1
  )
  assert len(rows) == 1 and len(rows[0]["raw"]["regret_jaccard"]) == 12
  rng = np.random.default_rng(1)  # the same draws, in the same order
  base = rng.random((12, 1, 4)) < 0.5
  cands = (base ^ (rng.random((12, 3, 4)) < 0.3)).astype(np.float64)
  pi = rng.dirichlet(np.ones(3), size=12).astype(np.float32).astype(np.float64)
  pi /= pi.sum(1, keepdims=True)
  checked = 0
  for p in range(12):
    ys = [np.array(y, np.float64) for y in itertools.product((0, 1), repeat=4)]
    value = [
      sum(pi[p, c] * _jaccard(y, cands[p, c]) for c in range(3)) for y in ys
    ]
    order = np.argsort(value)[::-1]
    if value[order[0]] - value[order[1]] < 1e-5:
      continue  # a tied Bayes fingerprint: the enumeration may pick either
    sims = np.array([_jaccard(ys[order[0]], cands[p, c]) for c in range(3)])
    top = np.abs(sims - sims.max()) < 1e-6
    want = pi[p].max() - pi[p][top].mean()
    assert rows[0]["raw"]["regret_jaccard"][p] == pytest.approx(want, abs=1e-5)
    checked += 1
  assert checked >= 6
  s = M.toy_regret_summary(rows)
  assert (
    s["raw"]["problems"]
    == 12
    == s["dedup"]["problems"] + s["dedup"]["left_out"]
  )
  assert (
    s["dedup"]["mean_regret_oracle"] == 0.0
    and s["dedup"]["duplicates_left"] == 0
  )


def test_pool_summary_counts_duplicates_and_ties():
  fps = np.array([[1, 0], [1, 0], [0, 1], [1, 1]], np.uint8)
  pool = np.array([[0, 1, 2], [3, 2, 0]])
  data = {"fps": fps, "train": np.array([2, 3]), "test": np.array([0, 3])}
  data |= {
    "mass_pool": pool,
    "mass_raw_pool": pool,
    "mass_smin": np.zeros(2),
    "mass_smax": np.array([1.0, 0.5]),
  }
  s = M.pool_summary(data, modes=("mass",))
  # query 0 repeats once
  assert s["duplicate_fp_rate"]["mass"] == pytest.approx(0.5)
  assert s["pool_ties"]["mass"]["query_tied"] == pytest.approx(0.5)
  assert (
    s["sigma_max_mean"]["mass"] == pytest.approx(0.75)
    and s["bit_density"] == 0.625
  )


def test_simulated_benchmark_splits_by_molecule_and_dedups_pools():
  d = M.simulated_benchmark(
    n_molecules=60,
    n_bits=128,
    radius=2,
    n_bins=50,
    max_mz=500.0,
    test_fraction=0.25,
    max_test_queries=10,
    train_pool="mass",
    train_cands=6,
    eval_cands=8,
    seed=0,
  )
  train, test = set(d["train"].tolist()), set(d["test"].tolist())
  assert not train & test and len(train) == 45 and len(test) == 10
  for mode in M.POOL_MODES:
    pool, labels = d[f"{mode}_pool"], d[f"{mode}_labels"]
    assert pool.shape == labels.shape == (10, 8)
    # one positive: the query itself
    np.testing.assert_array_equal(pool[labels], d["test"])
    # deduplicated
    assert M.pool_ties(d["fps"], pool, d["test"])["any_tied"] == 0.0
    assert d[f"{mode}_raw_pool"].shape == (10, 8)
  np.testing.assert_array_equal(d["train_pool"][d["train_labels"]], d["train"])
