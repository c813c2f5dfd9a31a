"""Metrics against float64 numpy/scipy/scikit-learn references and hand-computed
cases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from sklearn import metrics as skm

from jaxpapers import metrics


def _random_ranking(seed, q=7, n=20, graded=False):
  rng = np.random.default_rng(seed)
  scores = rng.normal(size=(q, n))  # continuous: no ties
  if graded:
    rel = rng.integers(0, 4, size=(q, n)).astype(float)
  else:
    rel = (rng.random((q, n)) < 0.25).astype(float)
  rel[0] = 0.0  # a query with nothing relevant
  return scores, rel


def _ref_lists(scores, rel):
  """Per-query relevance in ranked order, float64 numpy, ties by index."""
  return [
    rel[i][np.argsort(-scores[i], kind="stable")] for i in range(len(scores))
  ]


def test_hand_computed_ranking_case():
  scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5]])
  rel = np.array([[0, 1, 0, 1, 1]])
  # relevant at ranks 2, 4, 5
  np.testing.assert_allclose(
    metrics.average_precision(scores, rel),
    [(1 / 2 + 2 / 4 + 3 / 5) / 3],
    rtol=1e-6,
  )
  np.testing.assert_allclose(metrics.mrr(scores, rel), [0.5])
  np.testing.assert_allclose(metrics.precision_at_k(scores, rel, 2), [0.5])
  np.testing.assert_allclose(
    metrics.recall_at_k(scores, rel, 2), [1 / 3], rtol=1e-6
  )
  np.testing.assert_allclose(metrics.hit_rate_at_k(scores, rel, 1), [0.0])
  np.testing.assert_allclose(metrics.hit_rate_at_k(scores, rel, 2), [1.0])
  dcg = 1 / np.log2(3) + 1 / np.log2(5) + 1 / np.log2(6)
  idcg = 1 + 1 / np.log2(3) + 1 / np.log2(4)
  np.testing.assert_allclose(
    metrics.ndcg_at_k(scores, rel, 5), [dcg / idcg], rtol=1e-6
  )


def test_ties_are_broken_by_index():
  scores = np.zeros((1, 4))
  rel = np.array([[0, 0, 1, 0]])
  np.testing.assert_allclose(metrics.mrr(scores, rel), [1 / 3])


@pytest.mark.parametrize("seed", [0, 1])
# 20 = N, the whole list (k > N raises)
@pytest.mark.parametrize("k", [1, 3, 10, 20])
def test_at_k_metrics_against_numpy(seed, k):
  scores, rel = _random_ranking(seed)
  ranked = _ref_lists(scores, rel)
  hr = [float(r[:k].sum() > 0) for r in ranked]
  rec = [r[:k].sum() / r.sum() if r.sum() else 0.0 for r in ranked]
  prec = [r[:k].sum() / k for r in ranked]
  np.testing.assert_allclose(
    metrics.hit_rate_at_k(scores, rel, k), hr, atol=1e-6
  )
  np.testing.assert_allclose(
    metrics.recall_at_k(scores, rel, k), rec, atol=1e-6
  )
  np.testing.assert_allclose(
    metrics.precision_at_k(scores, rel, k), prec, atol=1e-6
  )


@pytest.mark.parametrize("k", [1, 5, 20])
def test_ndcg_against_sklearn(k):
  scores, rel = _random_ranking(3, graded=True)
  ours = np.asarray(metrics.ndcg_at_k(scores, rel, k))
  ref = [
    skm.ndcg_score(rel[i : i + 1], scores[i : i + 1], k=k)
    if rel[i].sum()
    else 0.0
    for i in range(len(rel))
  ]
  np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_average_precision_and_mrr_against_references():
  scores, rel = _random_ranking(4)
  ap = np.asarray(metrics.average_precision(scores, rel))
  for i in range(len(rel)):
    ref = (
      skm.average_precision_score(rel[i], scores[i]) if rel[i].sum() else 0.0
    )
    np.testing.assert_allclose(ap[i], ref, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(
    metrics.mean_average_precision(scores, rel), ap.mean(), rtol=1e-6
  )
  ranked = _ref_lists(scores, rel)
  ref_mrr = [1 / (np.flatnonzero(r)[0] + 1) if r.sum() else 0.0 for r in ranked]
  np.testing.assert_allclose(metrics.mrr(scores, rel), ref_mrr, rtol=1e-6)


def test_ranking_metrics_jit_and_vmap():
  scores, rel = _random_ranking(5)
  f = jax.jit(metrics.ndcg_at_k, static_argnums=2)
  np.testing.assert_allclose(
    f(scores, rel, 5), metrics.ndcg_at_k(scores, rel, 5), rtol=1e-6
  )
  batched = jax.vmap(lambda s, r: metrics.average_precision(s, r))(
    scores[None], rel[None]
  )
  np.testing.assert_allclose(
    batched[0], metrics.average_precision(scores, rel), rtol=1e-6
  )


def test_ranking_input_errors():
  with pytest.raises(
    ValueError, match=(r"shape \[num_queries, num_candidates\]")
  ):
    metrics.mrr(np.zeros((2, 3)), np.zeros((2, 4)))
  with pytest.raises(ValueError, match="k must be a positive int"):
    metrics.recall_at_k(np.zeros((2, 3)), np.zeros((2, 3)), 0)


def test_classification_metrics():
  rng = np.random.default_rng(0)
  labels = rng.integers(0, 4, 200)
  logits = rng.normal(size=(200, 4))
  pred = logits.argmax(-1)
  np.testing.assert_allclose(
    metrics.accuracy(logits, labels), (pred == labels).mean(), rtol=1e-6
  )
  np.testing.assert_allclose(
    metrics.accuracy(pred, labels), (pred == labels).mean(), rtol=1e-6
  )
  # Class 3 absent from the labels: sklearn averages over present classes only.
  labels2 = np.where(labels == 3, 0, labels)
  np.testing.assert_allclose(
    metrics.balanced_accuracy(logits, labels2, 4),
    skm.balanced_accuracy_score(labels2, pred),
    rtol=1e-6,
  )
  with pytest.raises(ValueError, match="predictions must be labels"):
    metrics.accuracy(np.zeros((3, 2, 2)), np.zeros(4, int))


def _fd_reference(a, b):
  mu1, mu2 = a.mean(0), b.mean(0)
  s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
  covmean = scipy.linalg.sqrtm(s1 @ s2).real
  return ((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean)


def test_frechet_distance_against_scipy_float64():
  rng = np.random.default_rng(0)
  a = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6))
  b = rng.normal(size=(250, 6)) @ rng.normal(size=(6, 6)) + 0.5
  with jax.enable_x64(True):
    ours = float(metrics.frechet_distance(jnp.asarray(a), jnp.asarray(b)))
  np.testing.assert_allclose(ours, _fd_reference(a, b), rtol=1e-9)
  ours32 = float(
    metrics.frechet_distance(a.astype(np.float32), b.astype(np.float32))
  )
  np.testing.assert_allclose(ours32, _fd_reference(a, b), rtol=1e-3)


def test_frechet_distance_closed_form_and_singular_covariance():
  # Two Gaussians with diagonal covariances: d² = |Δμ|² + Σ (sqrt(a_i) − sqrt(b_i))².
  mu1, mu2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
  # singular (rank 2)
  s1, s2 = np.diag([1.0, 4.0, 0.0]), np.diag([9.0, 1.0, 0.0])
  expected = 1 + 4 + (1 - 3) ** 2 + (2 - 1) ** 2
  np.testing.assert_allclose(
    metrics.frechet_distance_from_moments(mu1, s1, mu2, s2), expected, rtol=1e-5
  )
  with pytest.raises(ValueError, match="same D"):
    metrics.frechet_distance(np.zeros((4, 2)), np.zeros((4, 3)))


def test_kid_against_numpy_reference():
  rng = np.random.default_rng(1)
  a, b = rng.normal(size=(60, 5)), rng.normal(size=(50, 5)) + 0.3
  k = lambda x, y: (x @ y.T / 5 + 1) ** 3
  m, n = len(a), len(b)
  ref = (
    (k(a, a).sum() - np.trace(k(a, a))) / (m * (m - 1))
    + (k(b, b).sum() - np.trace(k(b, b))) / (n * (n - 1))
    - 2 * k(a, b).mean()
  )
  with jax.enable_x64(True):
    np.testing.assert_allclose(
      float(metrics.kernel_inception_distance(a, b)), ref, rtol=1e-9
    )
  sub = metrics.kernel_inception_distance(
    a, b, num_subsets=10, subset_size=20, key=jax.random.key(0)
  )
  assert np.isfinite(float(sub))
  with pytest.raises(ValueError, match="key is required"):
    metrics.kernel_inception_distance(a, b, num_subsets=2)
