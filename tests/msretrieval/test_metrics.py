"""HR@k on constructed rankings with ties; per-bit F1; fingerprint metrics;
Pareto fronts."""

import jax
import numpy as np
import pytest

import jaxpapers.msretrieval as M

# Query 0: positive tied with two negatives at the top. Query 1: positive 3rd,
# clear. Query 2: best positive (2nd of two positives) strictly first, a padded
# slot scores higher.
SCORES = np.array(
  [
    [0.7, 0.7, 0.7, 0.1, 0.0],
    [0.9, 0.8, 0.5, 0.4, 0.3],
    [0.1, 0.6, 0.2, 0.3, 0.99],
  ],
  np.float32,
)
LABELS = np.array(
  [
    [False, True, False, False, False],
    [False, False, True, False, False],
    [True, True, False, False, False],
  ]
)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], bool)


def _hr(k, ties, key=None):
  return np.asarray(
    M.hit_rate_at_k(SCORES, LABELS, MASK, k, ties=ties, key=key)
  )


def test_hr_pessimistic_and_optimistic_bounds():
  np.testing.assert_array_equal(_hr(1, "pessimistic"), [0, 0, 1])
  np.testing.assert_array_equal(_hr(1, "optimistic"), [1, 0, 1])
  np.testing.assert_array_equal(_hr(2, "pessimistic"), [0, 0, 1])
  np.testing.assert_array_equal(_hr(3, "pessimistic"), [1, 1, 1])
  np.testing.assert_array_equal(_hr(2, "optimistic"), [1, 0, 1])


def test_hr_noise_orders_ties_at_random():
  f = jax.jit(lambda k: M.hit_rate_at_k(SCORES, LABELS, MASK, 1, key=k))
  draws = np.stack([np.asarray(f(jax.random.key(i))) for i in range(400)])
  # no tie: deterministic
  assert draws[:, 1].max() == 0 and draws[:, 2].min() == 1
  assert abs(draws[:, 0].mean() - 1 / 3) < 0.07  # three-way tie at the top
  f2 = jax.jit(lambda k: M.hit_rate_at_k(SCORES, LABELS, MASK, 2, key=k))
  d2 = np.stack([np.asarray(f2(jax.random.key(i)))[0] for i in range(400)])
  assert abs(d2.mean() - 2 / 3) < 0.07


def test_hr_noise_needs_key_and_no_positive_scores_zero():
  with pytest.raises(ValueError, match="key is required"):
    M.hit_rate_at_k(SCORES, LABELS, MASK, 1)
  out = M.hit_rate_at_k(
    SCORES, np.zeros_like(LABELS), MASK, 5, ties=("optimistic")
  )
  np.testing.assert_array_equal(np.asarray(out), 0)


def test_hr_padding_never_counts_as_positive():
  lab = np.zeros_like(LABELS)
  lab[2, 4] = True  # a "positive" in a padded slot
  out = M.hit_rate_at_k(SCORES, lab, MASK, 5, ties="optimistic")
  assert float(out[2]) == 0.0


def test_bit_f1_against_numpy():
  rng = np.random.default_rng(0)
  p = (rng.random((30, 9)) < 0.4).astype(np.uint8)
  y = (rng.random((30, 9)) < 0.4).astype(np.uint8)
  p[:, 0] = y[:, 0] = 0  # never on: 0 (zero_division=0)
  want = []
  for j in range(9):
    tp = np.sum((p[:, j] == 1) & (y[:, j] == 1))
    fp = np.sum((p[:, j] == 1) & (y[:, j] == 0))
    fn = np.sum((p[:, j] == 0) & (y[:, j] == 1))
    want.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
  np.testing.assert_allclose(np.asarray(M.bit_f1(p, y)), want, rtol=1e-6)


def test_fingerprint_metrics_thresholds():
  probs = np.array(
    [[0.9, 0.9, 0.9, 0.1], [0.9, 0.1, 0.1, 0.1], [0.2, 0.2, 0.2, 0.2]],
    np.float32,
  )
  fp = np.array([[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1]], np.uint8)
  out = {k: np.asarray(v) for k, v in M.fingerprint_metrics(probs, fp).items()}
  np.testing.assert_allclose(out["tanimoto"], [1.0, 1 / 3, 0.0], rtol=1e-6)
  np.testing.assert_array_equal(out["close_match"], [1, 0, 0])
  np.testing.assert_array_equal(out["meaningful_match"], [1, 0, 0])
  want = np.minimum(probs, fp).sum(1) / np.maximum(probs, fp).sum(1)
  np.testing.assert_allclose(out["cont_iou"], want, rtol=1e-5)
  # micro F1: TP = 3 + 1, predicted on = 3 + 1, true on = 3 + 3 + 1
  assert float(out["micro_f1"]) == pytest.approx(2 * 4 / (4 + 7))


def test_pareto_front_against_brute_force():
  rng = np.random.default_rng(2)
  pts = rng.random((40, 2))
  pts[5] = pts[6]  # duplicates of a point stay together
  mask = M.pareto_front(pts)
  for i, p in enumerate(pts):
    dominated = any(np.all(q >= p) and np.any(q > p) for q in pts)
    assert mask[i] == (not dominated)
  assert mask[5] == mask[6]
