"""The host-side summaries of one sweep against hand-computed values and NumPy
loops."""

import jax
import numpy as np
import pytest

import jaxpapers.evidence_coverage as E

KS = (1, 2, 4, 8)


def test_k_peak_takes_the_smallest_budget_of_the_best_accuracy():
  # tie between k = 2 and k = 8: the smaller
  assert E.k_peak([0.3, 0.6, 0.5, 0.6], KS) == 2
  assert E.k_peak([0.9, 0.6, 0.5, 0.4], KS) == 1
  assert E.k_peak([0.1, 0.2, 0.3, 0.4], KS) == 8


@pytest.mark.parametrize(
  "n_pool, n_clusters, want",
  [
    (400, 8, 64),
    (400, 32, 16),
    (400, 400, 1),
    (24, 4, 8),
    (88, 4, 16),
    (10, 1, 8),
  ],
)
def test_cluster_k_is_the_grid_budget_nearest_in_log2(n_pool, n_clusters, want):
  ks = (1, 2, 4, 8, 16, 32, 64)
  dist = {k: abs(np.log2(k) - np.log2(n_pool / n_clusters)) for k in ks}
  brute = min(ks, key=lambda k: (dist[k], k))
  assert E.cluster_k(n_pool, n_clusters, ks) == brute == want


def test_decoupled_needs_both_the_decline_and_the_recall_rise():
  rec = [0.1, 0.3, 0.5, 0.9]
  tol = dict(decline_tol=0.02, recall_rise=0.1)
  # peak at k = 2, recall +0.6 after
  assert E.decoupled([0.3, 0.6, 0.5, 0.4], rec, **tol)
  # a drop of 0.01 < decline_tol
  assert not E.decoupled([0.3, 0.6, 0.6, 0.59], rec, **tol)
  # recall +0.05
  assert not E.decoupled([0.3, 0.6, 0.5, 0.4], [0.1, 0.85, 0.9, 0.9], **tol)
  # still rising: no decline
  assert not E.decoupled([0.3, 0.4, 0.5, 0.6], rec, **tol)
  # the recall rise is measured from the first peak of accuracy
  assert E.decoupled([0.6, 0.6, 0.5, 0.4], [0.1, 0.15, 0.2, 0.22], **tol)
  assert not E.decoupled([0.6, 0.6, 0.5, 0.4], [0.1, 0.15, 0.2, 0.19], **tol)


def test_controller_summary_matches_a_bruteforce_threshold_search():
  rng = np.random.default_rng(0)
  sims_dev = -np.sort(-rng.uniform(size=(30, 8)), axis=1).astype(np.float32)
  sims = -np.sort(-rng.uniform(size=(20, 8)), axis=1).astype(np.float32)
  correct_dev = rng.integers(0, 2, (4, 30)).astype(np.float32)
  correct = rng.integers(0, 2, (4, 20)).astype(np.float32)
  got = E.controller_summary(
    sims_dev, correct_dev, sims, correct, KS, n_grid=11
  )
  at_dev = np.asarray(sims_dev, np.float64)[:, np.asarray(KS) - 1]
  grid = np.quantile(at_dev, np.linspace(0, 1, 11))
  accs = []
  for t in grid:
    j = [max(sum(s >= t for s in row) - 1, 0) for row in at_dev]
    accs.append(np.mean([correct_dev[jj, q] for q, jj in enumerate(j)]))
  tau = grid[int(np.argmax(accs))]
  assert got["tau"] == pytest.approx(tau)
  at = sims[:, np.asarray(KS) - 1]
  j = [max(sum(s >= np.float32(tau) for s in row) - 1, 0) for row in at]
  assert got["acc"] == pytest.approx(
    np.mean([correct[jj, q] for q, jj in enumerate(j)])
  )
  want_k = np.exp(np.mean([np.log(KS[jj]) for jj in j]))
  assert got["k_geomean"] == pytest.approx(want_k)


def test_coverage_summary_is_the_library_curves_and_boundaries():
  data = E.make_shifted_linear_icl(
    jax.random.key(0), E.ShiftConfig(d=4, n_clusters=5), 64, 8
  )
  idx, _ = E.dense_topk(data.q_x, data.pool_x, 8)
  got = E.coverage_summary(idx, data, KS)
  rel = (
    np.asarray(data.pool_task)[np.asarray(idx)]
    == np.asarray(data.q_task)[:, None]
  )
  np.testing.assert_allclose(
    got["purity"], [rel[:, :k].mean() for k in KS], rtol=1e-5
  )
  d = np.asarray(got["delta"], np.float64)
  np.testing.assert_allclose(
    d, np.subtract(got["c_eff"], got["ambiguity"]), atol=1e-6
  )
  assert got["k_star"] == KS[int(np.argmax(d * np.asarray(KS)))]
  assert got["k_star_average"] == KS[int(np.argmax(d))]


def test_control_contexts_are_the_keyed_controls():
  data = E.make_shifted_linear_icl(
    jax.random.key(0), E.ShiftConfig(d=4, n_clusters=5), 64, 8
  )
  idx, _ = E.dense_topk(data.q_x, data.pool_x, 8)
  key = jax.random.key(3)
  got = E.control_contexts(key, data, idx, 8)
  assert list(got) == [
    "retrieved",
    "oracle",
    "shuffled_labels",
    "other_query",
    "random",
  ]
  np.testing.assert_array_equal(got["retrieved"]["idx"], idx)
  lab = E.shuffled_context(jax.random.fold_in(key, 0), idx, data, mode="labels")
  np.testing.assert_array_equal(got["shuffled_labels"]["y_override"], lab[1])
  oth = E.shuffled_context(
    jax.random.fold_in(key, 1), idx, data, mode=("other_query")
  )
  np.testing.assert_array_equal(got["other_query"]["idx"], oth[0])
  rnd = E.random_context(jax.random.fold_in(key, 2), data, 8)
  np.testing.assert_array_equal(got["random"]["idx"], rnd)
  assert not np.array_equal(
    got["random"]["idx"], E.random_context(key, data, 8)
  )
  pt, qt = np.asarray(data.pool_task), np.asarray(data.q_task)
  o, v = np.asarray(got["oracle"]["idx"]), np.asarray(got["oracle"]["valid"])
  # every shown oracle item is relevant
  assert np.all((pt[o] == qt[:, None])[v])


def test_diagnose_budget_against_float64_baselines_and_the_library_pieces():
  cfg = E.ShiftConfig(d=4, n_clusters=4, s_x=1.0, s_w=1.0)
  data = E.make_shifted_linear_icl(jax.random.key(2), cfg, 80, 12)
  ks, tol, n_dev = (1, 2, 4, 8), 0.3, 4
  readers = {"ridge": E.RidgeReader(0.5), "ignores_context": E.PriorReader()}
  key = jax.random.key(5)
  got = E.diagnose_budget(
    key, data, readers, ks, n_dev=n_dev, tol=tol, regime_tol=0.01
  )
  # the baselines in float64 NumPy, on the 8 test queries only
  qx, qy = (
    np.asarray(data.q_x, np.float64)[n_dev:],
    np.asarray(data.q_y, np.float64)[n_dev:],
  )
  prior = qx @ np.asarray(data.w0, np.float64)
  assert got["prior"]["acc"] == pytest.approx(np.mean(np.abs(prior - qy) < tol))
  assert got["prior"]["mse"] == pytest.approx(
    np.mean((prior - qy) ** 2), rel=1e-5
  )
  const = np.mean(np.asarray(data.pool_y, np.float64))
  assert got["constant_mean"]["mse"] == pytest.approx(
    np.mean((const - qy) ** 2), rel=1e-5
  )
  # a reader that ignores its context answers the prior in every context and at
  # every budget
  for ctx in (
    "retrieved",
    "oracle",
    "shuffled_labels",
    "other_query",
    "random",
  ):
    assert got["ignores_context"][ctx]["acc"] == pytest.approx(
      [got["prior"]["acc"]] * len(ks)
    )
  # flat curve: the smallest budget
  assert got["ignores_context"]["k_peak"] == 1
  # ridge: the retrieved curve is k_sweep's on the test queries (float64 check
  # of correctness)
  q = slice(n_dev, None)
  test = data.replace(
    q_x=data.q_x[q], q_y=data.q_y[q], q_task=data.q_task[q], q_w=data.q_w[q]
  )
  idx, _ = E.dense_topk(test.q_x, test.pool_x, 8)
  pred = np.asarray(E.k_sweep(readers["ridge"], test, idx, ks), np.float64)
  want = (np.abs(pred - qy) < tol).mean(1)
  np.testing.assert_allclose(got["ridge"]["retrieved"]["acc"], want)
  assert got["ridge"]["k_peak"] == ks[int(np.argmax(want))]
  assert got["ridge"]["controller"]["best_fixed_k_acc"] == pytest.approx(
    want.max()
  )
  assert {k: got[k] for k in ("recall", "k_star")} == {
    k: E.coverage_summary(idx, test, ks)[k] for k in ("recall", "k_star")
  }
  # query blocks change nothing
  again = E.diagnose_budget(
    key, data, readers, ks, n_dev=n_dev, tol=tol, regime_tol=0.01, query_chunk=2
  )
  assert again == got
