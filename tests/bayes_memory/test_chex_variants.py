"""The jittable losses, selection and metrics, jitted and eager, against float64
NumPy."""

import functools

import chex
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

from jaxpapers import bayes_memory as bm

Q, N, D = 5, 4, 3


def _data(seed=0):
  rng = np.random.default_rng(seed)
  u = rng.normal(size=(Q, N)).astype(np.float32)
  lbf = rng.normal(size=(Q, N)).astype(np.float32)
  valid = rng.random((Q, N)) < 0.7
  valid[:, 0] = True
  return u, lbf, valid


def _np_log_softmax(x):
  x = x - x.max()
  return x - np.log(np.exp(x).sum())


class LossesTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_distillation_loss_is_the_listwise_kl_over_valid_turns(self):
    u, lbf, valid = _data()
    beta = 0.5
    fn = self.variant(
      functools.partial(bm.utility_distillation_loss, beta=beta)
    )
    got = fn(u, lbf, valid)
    kl = []
    for q in range(Q):
      m = valid[q]
      lt = _np_log_softmax(lbf[q, m].astype(np.float64) / beta)
      ls = _np_log_softmax(u[q, m].astype(np.float64))
      kl.append(np.sum(np.exp(lt) * (lt - ls)))
    chex.assert_shape(got, ())
    chex.assert_type(got, jnp.float32)
    chex.assert_trees_all_close(
      got, np.float32(np.mean(kl)), rtol=1e-5, atol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_regression_loss_is_the_huber_mean_over_valid_turns(self):
    u, lbf, valid = _data(1)
    delta = 0.7
    fn = self.variant(
      functools.partial(bm.utility_regression_loss, delta=delta)
    )
    d = u.astype(np.float64) - lbf
    h = np.where(
      np.abs(d) <= delta, 0.5 * d**2, delta * (np.abs(d) - 0.5 * delta)
    )
    got = fn(u, lbf, valid)
    chex.assert_shape(got, ())
    chex.assert_trees_all_close(got, np.float32(h[valid].mean()), rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_gate_loss_is_bce_on_the_thresholded_access_label(self):
    _, lbf, valid = _data(2)
    g = np.random.default_rng(3).normal(size=Q).astype(np.float32)
    tau = 0.4
    fn = self.variant(functools.partial(bm.gate_loss, tau=tau))
    y = np.any(valid & (lbf > tau), axis=1).astype(np.float64)
    p = 1.0 / (1.0 + np.exp(-g.astype(np.float64)))
    ref = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    chex.assert_trees_all_close(fn(g, lbf, valid), np.float32(ref), rtol=1e-5)


class SelectionAndMetricsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_access_and_select_matches_a_sort_over_turns_clearing_tau(self):
    _, lbf, valid = _data(4)
    tau, k = 0.0, 2
    fn = self.variant(functools.partial(bm.access_and_select, tau=tau, k=k))
    access, idx, idx_valid = fn(lbf, valid)
    chex.assert_shape([access, idx, idx_valid], [(Q,), (Q, k), (Q, k)])
    chex.assert_type([access, idx, idx_valid], [bool, jnp.int32, bool])
    for q in range(Q):
      keep = [i for i in range(N) if valid[q, i] and lbf[q, i] > tau]
      ranked = sorted(keep, key=lambda i: -lbf[q, i])[:k]
      self.assertEqual(bool(access[q]), bool(keep))
      self.assertEqual(
        list(np.asarray(idx[q])[np.asarray(idx_valid[q])]), ranked
      )

  @chex.variants(with_jit=True, without_jit=True)
  def test_cosine_scores_and_pair_features(self):
    rng = np.random.default_rng(5)
    f_turn = rng.normal(size=(Q, N, D)).astype(np.float32)
    f_query = rng.normal(size=(Q, D)).astype(np.float32)
    position = rng.random((Q, N)).astype(np.float32)
    _, _, valid = _data(5)
    cos = self.variant(bm.cosine_scores)(f_turn, f_query, valid)
    t, x = f_turn.astype(np.float64), f_query.astype(np.float64)
    ref = np.einsum("qnd,qd->qn", t, x)
    ref /= np.linalg.norm(t, axis=-1) * np.linalg.norm(x, axis=-1)[:, None]
    chex.assert_trees_all_close(
      cos, np.where(valid, ref, -np.inf).astype(np.float32), rtol=1e-5
    )
    feats = self.variant(bm.pair_features)(f_turn, f_query, position)
    chex.assert_shape(feats, (Q, N, 3 * D + 1))
    xb = np.broadcast_to(f_query[:, None, :], f_turn.shape)
    ref_f = np.concatenate(
      [f_turn, xb, f_turn * xb, position[..., None]], axis=-1
    )
    chex.assert_trees_all_close(feats, ref_f, rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_recall_stale_rate_and_auroc_against_brute_force(self):
    u, _, valid = _data(6)
    rng = np.random.default_rng(7)
    gold = np.array([0, 1, -1, 0, 2], np.int32)
    gold = np.where(
      (gold >= 0) & ~valid[np.arange(Q), np.maximum(gold, 0)], 0, gold
    )
    stale = rng.random((Q, N)) < 0.4
    k = 2
    top = [
      sorted((i for i in range(N) if valid[q, i]), key=lambda i: -u[q, i])[:k]
      for q in range(Q)
    ]
    has_gold = gold >= 0
    recall = np.mean([gold[q] in top[q] for q in range(Q) if has_gold[q]])
    has_stale = np.any(stale & valid, axis=1)
    stale_rate = np.mean(
      [any(stale[q, i] for i in top[q]) for q in range(Q) if has_stale[q]]
    )
    got_r = self.variant(functools.partial(bm.evidence_recall_at_k, k=k))(
      u, gold, valid
    )
    got_s = self.variant(functools.partial(bm.stale_retrieval_rate, k=k))(
      u, stale, valid
    )
    chex.assert_trees_all_close(
      (got_r, got_s), (np.float32(recall), np.float32(stale_rate))
    )

    g = np.array([0.3, -1.0, 0.3, 2.0, 0.1, -0.5], np.float32)
    y = np.array([True, False, False, True, True, False])
    pairs = [(i, j) for i in range(6) for j in range(6) if y[i] and not y[j]]
    auc = np.mean(
      [1.0 if g[i] > g[j] else 0.5 if g[i] == g[j] else 0.0 for i, j in pairs]
    )
    chex.assert_trees_all_close(
      self.variant(bm.gate_auroc)(g, y), np.float32(auc)
    )


if __name__ == "__main__":
  absltest.main()
