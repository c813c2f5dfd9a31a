"""Readers, retrieval, coverage and the controller, jitted and eager, against
float64 NumPy.

Budgets, step sizes and flags are static and closed over; the :class:`ICLData`
pytree, indices and features are traced under jit.
"""

import functools

import chex
import jax
import numpy as np
from absl.testing import absltest

import jaxpapers.evidence_coverage as E
from tests.evidence_coverage.test_library import _coverage_ref

KS = (1, 2, 4, 6)
K_MAX = 6


@functools.cache
def _setup():
  cfg = E.ShiftConfig(
    d=3, n_clusters=4, r=1.5, tau_w=0.3, noise=0.2, s_x=1.0, s_w=1.0
  )
  data = E.make_shifted_linear_icl(jax.random.key(5), cfg, 24, 5)
  idx, sims = E.dense_topk(data.q_x, data.pool_x, K_MAX)
  return data, idx, sims


def _context():
  rng = np.random.default_rng(51)
  x, y = rng.normal(size=(7, 3)), rng.normal(size=7)
  mask = np.array([1, 1, 0, 1, 1, 0, 1], bool)
  xq, w0 = rng.normal(size=3), rng.normal(size=3)
  return x, y, mask, xq, w0


def f32(*xs):
  return [np.asarray(a, np.float32) for a in xs]


class ReadersTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_readers_are_their_closed_forms_on_the_visible_items(self):
    x, y, mask, xq, w0 = _context()
    xm, ym = x[mask], y[mask]
    args = (*f32(x, y), mask, *f32(xq))
    got = self.variant(functools.partial(E.gd_reader, eta=0.3))(
      *args, w0=w0.astype(np.float32)
    )
    chex.assert_shape(got, ())
    want = (w0 + 0.3 / 5 * ((ym - xm @ w0) @ xm)) @ xq
    chex.assert_trees_all_close(got, np.float32(want), rtol=1e-5)

    got = self.variant(functools.partial(E.ridge_reader, lam=0.7))(
      *args, w0=w0.astype(np.float32)
    )
    w = w0 + np.linalg.solve(xm.T @ xm + 0.7 * np.eye(3), xm.T @ (ym - xm @ w0))
    chex.assert_trees_all_close(got, np.float32(w @ xq), rtol=1e-4)

    got = self.variant(E.linesearch_gd_reader)(*args, w0=w0.astype(np.float32))
    g = ((ym - xm @ w0) @ xm) / 5
    eta = (g @ g) / (g @ (xm.T @ xm / 5) @ g)
    chex.assert_trees_all_close(got, np.float32((w0 + eta * g) @ xq), rtol=1e-4)

    got = self.variant(E.prior_reader)(*args, w0=w0.astype(np.float32))
    chex.assert_trees_all_close(got, np.float32(w0 @ xq), rtol=1e-5)


class RetrievalTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_dense_topk_is_the_stable_cosine_ranking(self):
    rng = np.random.default_rng(52)
    pool = rng.normal(size=(12, 4)).astype(np.float32)
    pool[9] = pool[2]  # an exact tie: the lower index first
    q = np.concatenate([pool[2:3], rng.normal(size=(2, 4))]).astype(np.float32)
    idx, sims = self.variant(functools.partial(E.dense_topk, k_max=5))(q, pool)
    chex.assert_shape([idx, sims], [(3, 5), (3, 5)])
    chex.assert_type([idx, sims], [np.int32, np.float32])
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    pn = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    s = np.round(qn.astype(np.float64) @ pn.T.astype(np.float64), 5)
    want = np.argsort(-s, axis=1, kind="stable")[:, :5]
    chex.assert_trees_all_equal(idx, want.astype(np.int32))
    chex.assert_trees_all_close(
      sims, np.take_along_axis(s, want, 1).astype(np.float32), atol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_recall_and_purity_curves_against_loops(self):
    data, idx, _ = _setup()
    pt, qt, I = (
      np.asarray(data.pool_task),
      np.asarray(data.q_task),
      np.asarray(idx),
    )
    rec, pur = [], []
    for k in KS:
      hits = [sum(pt[i] == qt[q] for i in I[q, :k]) for q in range(I.shape[0])]
      n_rel = [(pt == qt[q]).sum() for q in range(I.shape[0])]
      rec.append(np.mean([h / n if n else 0.0 for h, n in zip(hits, n_rel)]))
      pur.append(np.mean([h / k for h in hits]))
    got_r = self.variant(functools.partial(E.recall_curve, ks=KS))(idx, data)
    got_p = self.variant(functools.partial(E.purity_curve, ks=KS))(idx, data)
    chex.assert_shape([got_r, got_p], [(len(KS),), (len(KS),)])
    chex.assert_trees_all_close(
      (got_r, got_p), (np.float32(rec), np.float32(pur)), rtol=1e-6, atol=1e-7
    )


class CoverageTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_effective_coverage_per_query_and_mean(self):
    data, idx, _ = _setup()
    fn = functools.partial(
      E.effective_coverage, ks=KS, l_train=3, kappa=0.5, per_query=True
    )
    c, a, dl = self.variant(fn)(idx, data)
    C, A = _coverage_ref(data, idx, KS, l_train=3, kappa=0.5)
    chex.assert_shape([c, a, dl], [(idx.shape[0], len(KS))] * 3)
    chex.assert_trees_all_close(
      (c, a, dl),
      tuple(v.astype(np.float32) for v in (C, A, C - A)),
      rtol=2e-4,
      atol=1e-5,
    )
    cm, am, _ = self.variant(functools.partial(E.effective_coverage, ks=KS))(
      idx, data
    )
    C0, A0 = _coverage_ref(data, idx, KS)
    chex.assert_trees_all_close(
      (cm, am),
      (C0.mean(0).astype(np.float32), A0.mean(0).astype(np.float32)),
      rtol=2e-4,
      atol=1e-6,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_threshold_controller_picks_the_largest_budget_clearing_tau(self):
    rng = np.random.default_rng(53)
    sims = -np.sort(-rng.uniform(size=(9, 6)), axis=1).astype(np.float32)
    for tau in (0.0, 0.4, 2.0):
      got = self.variant(
        functools.partial(E.threshold_controller, tau=tau, ks=KS)
      )(sims)
      want = [
        max([j for j, k in enumerate(KS) if sims[q, k - 1] >= tau], default=0)
        for q in range(9)
      ]
      chex.assert_type(got, np.int32)
      chex.assert_trees_all_equal(got, np.array(want, np.int32))


if __name__ == "__main__":
  absltest.main()
