"""evidence_coverage against float64 NumPy transcriptions, brute force and
closed forms."""

import jax
import numpy as np
import pytest

import jaxpapers.evidence_coverage as E
from jaxpapers import core

KS = (1, 2, 3, 5, 8, 12)
K = 12


@pytest.fixture(scope="module")
def setup():
  cfg = E.ShiftConfig(
    d=4, n_clusters=5, r=1.5, tau_w=0.3, noise=0.2, s_x=1.0, s_w=1.0
  )
  data = E.make_shifted_linear_icl(jax.random.key(0), cfg, 64, 8)
  idx, sims = E.dense_topk(data.q_x, data.pool_x, K)
  return cfg, data, idx, sims


def np64(data):
  return {
    k: np.asarray(getattr(data, k), np.float64)
    for k in data.__dataclass_fields__
  }


# -------------------------------------------------------------------- generator


def test_generator_noise_free_labels_and_exact_task_shift():
  cfg = E.ShiftConfig(d=4, n_clusters=5, tau_w=0.0, noise=0.0, s_x=0.0, s_w=2.0)
  # the fixture's shapes
  data = E.make_shifted_linear_icl(jax.random.key(1), cfg, 64, 8)
  n = np64(data)
  np.testing.assert_allclose(
    n["pool_y"], np.einsum("nd,nd->n", n["pool_w"], n["pool_x"]), 1e-5
  )
  np.testing.assert_allclose(
    n["q_y"], np.einsum("nd,nd->n", n["q_w"], n["q_x"]), 1e-5
  )
  # Without task noise every pool item carries its cluster centre; the query's
  # task is that centre plus delta_w = s_w u / sqrt(d), one shared vector of
  # norm s_w / sqrt(d).
  pt, qt = np.asarray(data.pool_task), np.asarray(data.q_task)
  centres = {j: n["pool_w"][pt == j][0] for j in np.unique(pt)}
  shifts = np.stack(
    [n["q_w"][i] - centres[j] for i, j in enumerate(qt) if j in centres]
  )
  np.testing.assert_allclose(
    shifts, np.broadcast_to(shifts[0], shifts.shape), atol=1e-6
  )
  assert np.linalg.norm(shifts[0]) == pytest.approx(2.0 / np.sqrt(4), rel=1e-5)
  np.testing.assert_allclose(
    n["w0"], np.mean([c for c in centres.values()], 0), atol=1e-6
  )


def test_generator_covariate_shift_moves_query_means_and_classification_labels():
  base = dict(d=4, n_clusters=5, r=1.0, tau_w=0.0, noise=0.0)
  key = jax.random.key(2)
  a = E.make_shifted_linear_icl(key, E.ShiftConfig(**base, s_x=3.0), 64, 8)
  b = E.make_shifted_linear_icl(key, E.ShiftConfig(**base, s_x=0.0), 64, 8)
  shift = np.asarray(a.q_x, np.float64).mean(0) - np.asarray(
    b.q_x, np.float64
  ).mean(0)
  # same draws: exact shift
  assert np.linalg.norm(shift) == pytest.approx(3.0, abs=1e-4)
  c = E.make_shifted_linear_icl(
    key, E.ShiftConfig(**base, task="classification"), 64, 8
  )
  f = np.einsum("nd,nd->n", np.asarray(c.q_w), np.asarray(c.q_x))
  np.testing.assert_array_equal(np.asarray(c.q_y), np.where(f >= 0, 1.0, -1.0))


# -------------------------------------------------------------------- retrieval


def test_dense_topk_matches_stable_bruteforce_with_ties():
  rng = np.random.default_rng(0)
  pool = rng.normal(size=(30, 5)).astype(np.float32)
  pool[[3, 17, 25]] = pool[10]  # exact ties: the lower index must come first
  pool[7] = 2.5 * pool[10]  # same direction, same cosine
  q = np.concatenate([pool[10:11], rng.normal(size=(3, 5))]).astype(np.float32)
  idx, sims = E.dense_topk(q, pool, 9)
  qn = q / np.linalg.norm(q, axis=1, keepdims=True)
  pn = pool / np.linalg.norm(pool, axis=1, keepdims=True)
  s = qn.astype(np.float64) @ pn.T.astype(np.float64)
  s = np.round(s, 5)  # float32 noise must not reorder exact ties
  want = np.argsort(-s, axis=1, kind="stable")[:, :9]
  np.testing.assert_array_equal(np.asarray(idx), want)
  assert list(np.asarray(idx)[0, :5]) == [3, 7, 10, 17, 25]
  np.testing.assert_allclose(
    np.asarray(sims), np.take_along_axis(s, want, 1), atol=1e-5
  )


def test_recall_and_purity_match_loops(setup):
  _, data, idx, _ = setup
  pt, qt, I = (
    np.asarray(data.pool_task),
    np.asarray(data.q_task),
    np.asarray(idx),
  )
  rec, pur = [], []
  for k in KS:
    r, p = [], []
    for q in range(I.shape[0]):
      hits = sum(pt[i] == qt[q] for i in I[q, :k])
      n_rel = (pt == qt[q]).sum()
      r.append(hits / n_rel if n_rel else 0.0)
      p.append(hits / k)
    rec.append(np.mean(r))
    pur.append(np.mean(p))
  np.testing.assert_allclose(
    np.asarray(E.recall_curve(idx, data, KS)), rec, rtol=1e-6
  )
  np.testing.assert_allclose(
    np.asarray(E.purity_curve(idx, data, KS)), pur, rtol=1e-6
  )


# --------------------------------------------------------------------- coverage


def _coverage_ref(data, idx, ks, l_train=None, kappa=1.0):
  n = np64(data)
  I = np.asarray(idx)
  qx, px = n["q_x"], n["pool_x"]
  m_t = qx.T @ qx / len(qx)
  spread = np.mean(
    [np.sum((a - b) ** 2) for a in n["pool_w"] for b in n["pool_w"]]
  )
  C, A = np.zeros((len(qx), len(ks))), np.zeros((len(qx), len(ks)))
  for q in range(len(qx)):
    xh = qx[q] / np.linalg.norm(qx[q])
    norm = xh @ m_t @ xh
    for j, k in enumerate(ks):
      c = a = 0.0
      for i in I[q, :k]:
        ai = (xh @ px[i]) ** 2 / norm
        if n["pool_task"][i] == n["q_task"][q]:
          c += ai
        else:
          a += ai * np.sum((n["pool_w"][i] - n["q_w"][q]) ** 2) / spread
      C[q, j] = c / k
      A[q, j] = a / k + (
        kappa * max(0, k - l_train) / l_train if l_train else 0.0
      )
  return C, A


def test_effective_coverage_matches_float64_transcription(setup):
  _, data, idx, _ = setup
  C, A = _coverage_ref(data, idx, KS, l_train=4, kappa=0.5)
  c, a, dl = E.effective_coverage(
    idx, data, KS, l_train=4, kappa=0.5, per_query=True
  )
  np.testing.assert_allclose(np.asarray(c), C, rtol=2e-4, atol=1e-6)
  np.testing.assert_allclose(np.asarray(a), A, rtol=2e-4, atol=1e-6)
  np.testing.assert_allclose(np.asarray(dl), C - A, rtol=2e-4, atol=1e-5)
  cm, am, _ = E.effective_coverage(idx, data, KS)
  C0, A0 = _coverage_ref(data, idx, KS)
  np.testing.assert_allclose(np.asarray(cm), C0.mean(0), rtol=2e-4)
  np.testing.assert_allclose(np.asarray(am), A0.mean(0), rtol=2e-4, atol=1e-6)


def test_budget_boundary_cumulative_vs_average():
  ks = (1, 2, 4, 8)
  delta = [1.0, 0.9, 0.6, 0.1]  # k Delta = 1, 1.8, 2.4, 0.8
  assert E.budget_boundary(ks, delta) == 4
  assert E.budget_boundary(ks, delta, rule="average") == 1
  # ties: smallest k
  assert E.budget_boundary(ks, [0.5, 0.25, 0.125, 0.0625]) == 1


# ---------------------------------------------------------------------- readers


def test_readers_match_closed_forms():
  rng = np.random.default_rng(3)
  x, y = rng.normal(size=(7, 3)), rng.normal(size=7)
  mask = np.array([1, 1, 0, 1, 1, 0, 1], bool)
  xq, w0 = rng.normal(size=3), rng.normal(size=3)
  f32 = lambda a: np.asarray(a, np.float32)
  xm, ym = x[mask], y[mask]
  gd = (w0 + 0.3 / 5 * ((ym - xm @ w0) @ xm)) @ xq
  got = E.gd_reader(f32(x), f32(y), mask, f32(xq), w0=f32(w0), eta=0.3)
  assert float(got) == pytest.approx(gd, rel=1e-5)
  w = w0 + np.linalg.solve(xm.T @ xm + 0.7 * np.eye(3), xm.T @ (ym - xm @ w0))
  got = E.ridge_reader(f32(x), f32(y), mask, f32(xq), w0=f32(w0), lam=0.7)
  assert float(got) == pytest.approx(w @ xq, rel=1e-4)
  # Line search: eta = g.g / g^T S g with g, S averaged over the 5 visible
  # items.
  g = ((ym - xm @ w0) @ xm) / 5
  eta = (g @ g) / (g @ (xm.T @ xm / 5) @ g)
  got = E.linesearch_gd_reader(f32(x), f32(y), mask, f32(xq), w0=f32(w0))
  assert float(got) == pytest.approx((w0 + eta * g) @ xq, rel=1e-4)
  none = np.zeros(7, bool)
  for r in (
    E.GDReader(0.3),
    E.LineSearchGDReader(),
    E.RidgeReader(0.7),
    E.PriorReader(),
  ):
    assert float(r(f32(x), f32(y), none, f32(xq), f32(w0))) == pytest.approx(
      w0 @ xq, rel=1e-5
    )


def test_ridge_recovers_noise_free_task():
  rng = np.random.default_rng(4)
  w = rng.normal(size=3)
  x = rng.normal(size=(20, 3)).astype(np.float32)
  xq = rng.normal(size=3).astype(np.float32)
  got = E.ridge_reader(
    x, x @ w, np.ones(20, bool), xq, w0=np.zeros(3, np.float32), lam=1e-6
  )
  assert float(got) == pytest.approx(float(xq @ w), rel=1e-3)


def test_linesearch_step_is_exact_on_isotropic_context_and_scale_free():
  # x_i = sqrt(d) e_i (i < d), shown twice: S = I, so one exact step lands on w;
  # the fixed step eta = 0.5 lands halfway. Doubling the context (the same items
  # twice) leaves eta_k unchanged (the 1/k normalisation cancels in g^T g / g^T
  # S g).
  d = 4
  rng = np.random.default_rng(5)
  w, w0, xq = (rng.normal(size=d).astype(np.float32) for _ in range(3))
  x = np.sqrt(d) * np.eye(d, dtype=np.float32)
  y = x @ w
  m = np.ones(d, bool)
  got = E.linesearch_gd_reader(x, y, m, xq, w0=w0)
  assert float(got) == pytest.approx(float(xq @ w), rel=1e-5)
  half = E.gd_reader(x, y, m, xq, w0=w0, eta=0.5)
  assert float(half) == pytest.approx(
    float(xq @ (w0 + 0.5 * (w - w0))), rel=1e-5
  )
  x2, y2 = np.concatenate([x, x]), np.concatenate([y, y])
  got2 = E.linesearch_gd_reader(x2, y2, np.ones(2 * d, bool), xq, w0=w0)
  assert float(got2) == pytest.approx(float(got), rel=1e-5)
  # A context that already fits the prior (zero gradient) keeps the prior
  # prediction.
  zero = E.linesearch_gd_reader(x, x @ w0, m, xq, w0=w0)
  assert float(zero) == pytest.approx(float(xq @ w0), rel=1e-5)


# ------------------------------------------------------------------------ sweep


@pytest.fixture(scope="module")
def sweeps(setup):
  _, data, idx, _ = setup
  eta = 0.05
  out = {"gd": E.k_sweep(E.GDReader(eta), data, idx, KS), "eta": eta}
  out["ridge"] = E.k_sweep(E.RidgeReader(0.5), data, idx, KS)
  return out


def test_k_sweep_equals_per_k_per_query_loop(setup, sweeps):
  _, data, idx, _ = setup
  n = np64(data)
  I = np.asarray(idx)
  for j, k in enumerate(KS):
    for q in range(I.shape[0]):
      x, y = n["pool_x"][I[q, :k]], n["pool_y"][I[q, :k]]
      gd = (n["w0"] + sweeps["eta"] / k * ((y - x @ n["w0"]) @ x)) @ n["q_x"][q]
      w = n["w0"] + np.linalg.solve(
        x.T @ x + 0.5 * np.eye(4), x.T @ (y - x @ n["w0"])
      )
      assert float(sweeps["gd"][j, q]) == pytest.approx(gd, rel=1e-4, abs=1e-5)
      assert float(sweeps["ridge"][j, q]) == pytest.approx(
        w @ n["q_x"][q], rel=1e-3, abs=1e-4
      )


def test_k_sweep_sharded_equals_single_device_and_no_recompile(setup, sweeps):
  _, data, idx, _ = setup
  mesh = core.make_mesh(8, "q")
  got = E.k_sweep(E.GDReader(sweeps["eta"]), data, idx, KS, mesh=mesh)
  np.testing.assert_allclose(
    np.asarray(got), np.asarray(sweeps["gd"]), rtol=1e-5, atol=1e-6
  )
  from jaxpapers.evidence_coverage import _sweep

  n0 = _sweep._sweep._cache_size()
  E.k_sweep(E.GDReader(sweeps["eta"]), data, idx + 0, KS)
  assert _sweep._sweep._cache_size() == n0


def test_valid_mask_and_predict_at_budget(setup, sweeps):
  _, data, idx, _ = setup
  # valid=False on every slot past 3 makes all k >= 3 equal to k = 3
  valid = np.arange(K)[None, :].repeat(8, 0) < 3
  got = np.asarray(E.k_sweep(E.RidgeReader(0.5), data, idx, KS, valid=valid))
  for j in range(2, len(KS)):
    np.testing.assert_allclose(
      got[j], np.asarray(sweeps["ridge"])[2], rtol=1e-5
    )
  pick = np.array([0, 1, 2, 3, 4, 5, 0, 3])
  k_q = np.asarray(KS)[pick].astype(np.int32)
  at = E.predict_at_budget(E.RidgeReader(0.5), data, idx, k_q)
  want = np.asarray(sweeps["ridge"])[pick, np.arange(8)]
  np.testing.assert_allclose(np.asarray(at), want, rtol=1e-5)


def test_k_sweep_in_query_blocks_equals_all_at_once(setup, sweeps):
  _, data, idx, _ = setup  # Q = 8 queries
  gd = E.GDReader(sweeps["eta"])
  for c in (1, 2, 4, 8):
    got = E.k_sweep(gd, data, idx, KS, query_chunk=c)
    np.testing.assert_allclose(
      np.asarray(got), np.asarray(sweeps["gd"]), rtol=1e-6, atol=1e-7
    )
  # The extras follow their queries into the blocks (a per-query label shift and
  # slot mask).
  y = np.asarray(data.pool_y)[np.asarray(idx)] + np.arange(8)[:, None]
  valid = np.arange(K)[None, :] < np.array([3, 12, 5, 12, 1, 8, 12, 2])[:, None]
  want = E.k_sweep(E.RidgeReader(0.5), data, idx, KS, y_override=y, valid=valid)
  got = E.k_sweep(
    E.RidgeReader(0.5), data, idx, KS, y_override=y, valid=valid, query_chunk=2
  )
  np.testing.assert_allclose(
    np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7
  )
  with pytest.raises(
    ValueError, match=("query_chunk must divide the number of queries Q = 8")
  ):
    E.k_sweep(gd, data, idx, KS, query_chunk=3)
  with pytest.raises(ValueError, match="query_chunk"):
    E.k_sweep(gd, data, idx, KS, query_chunk=0)
  with pytest.raises(TypeError, match="query_chunk"):
    E.k_sweep(gd, data, idx, KS, query_chunk=2.0)


def test_answer_metrics():
  pred = np.array([[0.0, 1.0, -2.0], [0.4, 0.7, -1.0]], np.float32)
  y = np.array([0.5, 1.0, -1.0], np.float32)
  c, se = E.answer_metrics(pred, y, tol=0.4)
  np.testing.assert_array_equal(
    np.asarray(c), [[False, True, False], [True, True, True]]
  )
  np.testing.assert_allclose(np.asarray(se), (pred - y) ** 2)
  c, _ = E.answer_metrics(
    pred, np.array([1.0, 1.0, -1.0], np.float32), task=("classification")
  )
  np.testing.assert_array_equal(
    np.asarray(c), [[True, True, True], [True, True, True]]
  )


# --------------------------------------------------------------------- controls


def test_oracle_context_is_relevant_sorted_and_valid_counts(setup):
  _, data, _, _ = setup
  oidx, valid = E.oracle_context(data.q_x, data.pool_x, data, K)
  pt, qt = np.asarray(data.pool_task), np.asarray(data.q_task)
  O, Vm = np.asarray(oidx), np.asarray(valid)
  qn = np.asarray(data.q_x, np.float64)
  pn = np.asarray(data.pool_x, np.float64)
  for q in range(len(qt)):
    rel = np.flatnonzero(pt == qt[q])
    assert Vm[q].sum() == min(len(rel), K)
    kept = O[q][Vm[q]]
    assert set(kept) <= set(rel)
    cos = pn[kept] @ qn[q] / np.linalg.norm(pn[kept], axis=1)
    assert np.all(np.diff(cos) <= 1e-6)
    allcos = pn[rel] @ qn[q] / np.linalg.norm(pn[rel], axis=1)
    assert cos[0] == pytest.approx(allcos.max(), rel=1e-5)


def test_shuffled_contexts(setup):
  _, data, idx, _ = setup
  i2, y2 = E.shuffled_context(jax.random.key(5), idx, data, mode="labels")
  np.testing.assert_array_equal(np.asarray(i2), np.asarray(idx))
  y = np.asarray(data.pool_y)[np.asarray(idx)]
  np.testing.assert_allclose(np.sort(np.asarray(y2), 1), np.sort(y, 1))
  assert not np.allclose(np.asarray(y2), y)
  i3, y3 = E.shuffled_context(jax.random.key(5), idx, data, mode="other_query")
  I, I3 = np.asarray(idx), np.asarray(i3)
  assert all(not np.array_equal(I3[q], I[q]) for q in range(8))
  assert sorted(map(tuple, I3)) == sorted(map(tuple, I))
  np.testing.assert_allclose(np.asarray(y3), np.asarray(data.pool_y)[I3])


def test_random_context_distinct_in_range(setup):
  _, data, _, _ = setup
  r = np.asarray(E.random_context(jax.random.key(6), data, 10))
  assert r.shape == (8, 10) and r.min() >= 0 and r.max() < 64
  assert all(len(set(row)) == 10 for row in r)


@pytest.mark.parametrize(
  "ret,orc,want",
  [
    ([0.5, 0.8, 0.7, 0.6], [0.5, 0.8, 0.85, 0.85], "interference-limited"),
    ([0.5, 0.6, 0.7, 0.8], [0.5, 0.7, 0.8, 0.9], "coverage-limited"),
    ([0.5, 0.7, 0.7, 0.7], [0.6, 0.8, 0.8, 0.8], "saturation-limited"),
    ([0.5, 0.8, 0.7, 0.6], [0.5, 0.8, 0.7, 0.6], "unclassified"),
  ],
)
def test_classify_regime(ret, orc, want):
  assert E.classify_regime(ret, orc, (1, 2, 4, 8), tol=0.01) == want


def test_classify_regime_ceiling():
  a = [0.5, 0.7, 0.7, 0.7]
  assert (
    E.classify_regime(a, a, (1, 2, 4, 8), ceiling=0.9) == "saturation-limited"
  )
  assert E.classify_regime(a, a, (1, 2, 4, 8), ceiling=0.705) == "unclassified"


def test_threshold_controller_and_calibration_bruteforce():
  rng = np.random.default_rng(7)
  sims = -np.sort(-rng.uniform(size=(20, 8)), axis=1).astype(np.float32)
  ks = (1, 2, 4, 8)
  for tau in (0.0, 0.3, 0.6, 2.0):
    got = np.asarray(E.threshold_controller(sims, tau, ks))
    want = [
      max([j for j, k in enumerate(ks) if sims[q, k - 1] >= tau], default=0)
      for q in range(20)
    ]
    np.testing.assert_array_equal(got, want)
  correct = rng.uniform(size=(4, 20)) < 0.5
  grid = np.linspace(0, 1, 11)
  accs = []
  for t in grid:
    j = np.asarray(E.threshold_controller(sims, float(t), ks))
    accs.append(correct[j, np.arange(20)].mean())
  assert E.calibrate_threshold(sims, correct, ks, grid) == pytest.approx(
    grid[int(np.argmax(accs))]
  )
