"""The metrics, with and without ``jax.jit``, against float64 NumPy / SciPy
references.

Cutoffs ``k``, ``num_classes`` and the KID kernel settings are static (closed
over); scores, labels and features are traced.
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

from jaxpapers import metrics
from tests.metrics.test_metrics import (
  _fd_reference,
  _random_ranking,
  _ref_lists,
)


def _ref_at_k(ranked, k):
  """(P@k, R@k, HR@k, nDCG@k) of one query's relevance list in ranked order,
  float64."""
  rel = ranked > 0
  top = rel[:k]
  n_rel = rel.sum()
  disc = 1.0 / np.log2(np.arange(2, k + 2))
  ideal = np.sort(ranked)[::-1][:k]
  idcg = (ideal * disc[: len(ideal)]).sum()
  ndcg = (ranked[:k] * disc).sum() / idcg if idcg > 0 else 0.0
  return (
    top.sum() / k,
    top.sum() / n_rel if n_rel else 0.0,
    float(top.any()),
    ndcg,
  )


def _ref_ap_rr(ranked):
  rel = ranked > 0
  if not rel.any():
    return 0.0, 0.0
  prec = np.cumsum(rel) / np.arange(1, len(rel) + 1)
  return prec[rel].mean(), 1.0 / (np.argmax(rel) + 1)


class MetricsVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_at_k_ranking_metrics(self):
    scores, rel = _random_ranking(0, q=5, n=9, graded=True)
    k = 3
    fns = [
      metrics.precision_at_k,
      metrics.recall_at_k,
      metrics.hit_rate_at_k,
      metrics.ndcg_at_k,
    ]
    fn = self.variant(lambda s, r: tuple(f(s, r, k) for f in fns))
    got = fn(scores.astype(np.float32), rel.astype(np.float32))
    chex.assert_shape(got, (5,))
    chex.assert_type(got, jnp.float32)
    want = np.array([_ref_at_k(r, k) for r in _ref_lists(scores, rel)]).T
    chex.assert_trees_all_close(got, tuple(want), rtol=1e-5, atol=1e-7)

  @chex.variants(with_jit=True, without_jit=True)
  def test_average_precision_mrr_and_map(self):
    scores, rel = _random_ranking(1, q=5, n=9)
    fn = self.variant(
      lambda s, r: (
        metrics.average_precision(s, r),
        metrics.mrr(s, r),
        metrics.mean_average_precision(s, r),
      )
    )
    ap, rr, mean_ap = fn(scores.astype(np.float32), rel.astype(np.float32))
    chex.assert_shape((ap, rr), (5,))
    chex.assert_shape(mean_ap, ())
    want = np.array([_ref_ap_rr(r) for r in _ref_lists(scores, rel)])
    chex.assert_trees_all_close(
      (ap, rr, mean_ap), (want[:, 0], want[:, 1], want[:, 0].mean()), rtol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_accuracy_and_balanced_accuracy(self):
    rng = np.random.default_rng(2)
    C = 4
    # class 2 absent
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 3, 3, 3], np.int32)
    logits = rng.normal(size=(len(labels), C)).astype(np.float32)
    fn = self.variant(
      lambda p, y: (metrics.accuracy(p, y), metrics.balanced_accuracy(p, y, C))
    )
    acc, bal = fn(logits, labels)
    chex.assert_shape((acc, bal), ())
    chex.assert_type((acc, bal), jnp.float32)
    pred = logits.argmax(-1)
    recalls = [
      np.mean(pred[labels == c] == c) for c in range(C) if (labels == c).any()
    ]
    chex.assert_trees_all_close(
      (acc, bal), (np.mean(pred == labels), np.mean(recalls)), rtol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_frechet_distance_and_its_closed_form(self):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 3))
    b = rng.normal(size=(30, 3)) @ rng.normal(size=(3, 3)) + 0.5
    got = self.variant(metrics.frechet_distance)(
      a.astype(np.float32), b.astype(np.float32)
    )
    chex.assert_shape(got, ())
    chex.assert_trees_all_close(got, _fd_reference(a, b), rtol=1e-3)
    # Diagonal Gaussians: |d mu|^2 + sum (sqrt(a_i) - sqrt(b_i))^2.
    mu1, mu2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
    s1, s2 = np.diag([1.0, 4.0, 0.5]), np.diag([9.0, 1.0, 2.0])
    want = ((mu1 - mu2) ** 2).sum() + (
      (np.sqrt(np.diag(s1)) - np.sqrt(np.diag(s2))) ** 2
    ).sum()
    moments = self.variant(metrics.frechet_distance_from_moments)
    got = moments(*(x.astype(np.float32) for x in (mu1, s1, mu2, s2)))
    chex.assert_trees_all_close(got, want, rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_kernel_inception_distance_unbiased_mmd(self):
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(12, 5)), rng.normal(size=(10, 5)) + 0.3
    degree, coef0 = 2, 0.5
    fn = self.variant(
      functools.partial(
        metrics.kernel_inception_distance, degree=degree, coef0=coef0
      )
    )
    got = fn(a.astype(np.float32), b.astype(np.float32))
    kern = lambda x, y: (x @ y.T / 5 + coef0) ** degree
    m, n = len(a), len(b)
    want = (
      (kern(a, a).sum() - np.trace(kern(a, a))) / (m * (m - 1))
      + (kern(b, b).sum() - np.trace(kern(b, b))) / (n * (n - 1))
      - 2 * kern(a, b).mean()
    )
    chex.assert_shape(got, ())
    chex.assert_trees_all_close(got, want, rtol=1e-4, atol=1e-6)
