"""Bad-input battery for jaxpapers.metrics (eager and under jax.jit), plus
degenerate inputs."""

import jax
import numpy as np
import pytest

from jaxpapers import metrics
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

f32 = np.float32
LABELS = np.array([0, 1, 1, 0], np.int32)
LOGITS = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 0.0]], f32)
SCORES = np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.3]], f32)
REL = np.array([[1, 0, 0], [0, 1, 1]], f32)
FEATS = np.random.default_rng(0).normal(size=(6, 3)).astype(f32)
NAN_FEATS = FEATS.copy()
NAN_FEATS[2, 1] = np.nan
NAN_SCORES = SCORES.copy()
NAN_SCORES[0, 1] = np.nan
M = metrics

CASES = [
  Case(
    "metrics.accuracy",
    M.accuracy,
    (np.array([0.9, 0.2, 0.8], f32), np.array([1, 0, 1])),
    error=TypeError,
    match="integer class labels",
    id="accuracy-binary-probs",
  ),
  Case(
    "metrics.accuracy",
    M.accuracy,
    (LOGITS, np.eye(2, dtype=np.int32)[LABELS]),
    error=TypeError,
    match="one-hot",
    id="accuracy-onehot-labels",
  ),
  Case(
    "metrics.accuracy",
    M.accuracy,
    (LOGITS, np.eye(2, dtype=f32)[LABELS]),
    error=TypeError,
    match="labels must have a integer or bool dtype",
    id="accuracy-float-labels",
  ),
  Case(
    "metrics.accuracy",
    M.accuracy,
    (LOGITS, np.array([0, 1, 2, 0], np.int32)),
    match=r"labels must be class indices in \[0, 2\)",
    jit="nan",
    id="accuracy-label-range",
  ),
  Case(
    "metrics.accuracy",
    M.accuracy,
    (np.zeros((0, 2), f32), np.zeros((0,), np.int32)),
    match="labels must not be empty",
    id="accuracy-empty",
  ),
  Case(
    "metrics.accuracy",
    M.accuracy,
    (np.zeros((3, 2, 2), f32), np.zeros(4, np.int32)),
    match="predictions must be labels of shape",
    id="accuracy-shape",
  ),
  Case(
    "metrics.balanced_accuracy",
    M.balanced_accuracy,
    (LOGITS, np.array([0, 1, 5, 0])),
    kwargs=dict(num_classes=2),
    match=r"labels must be class indices in \[0, 2\)",
    jit="nan",
    id="balanced-label-too-big",
  ),
  Case(
    "metrics.balanced_accuracy",
    M.balanced_accuracy,
    (np.array([0, 1, 1, 0]), np.array([0, 1, -1, 0])),
    kwargs=dict(num_classes=2),
    match=r"labels must be class indices",
    jit="nan",
    id="balanced-label-negative",
  ),
  Case(
    "metrics.balanced_accuracy",
    M.balanced_accuracy,
    (np.array([0, 3, 1, 0]), LABELS),
    kwargs=dict(num_classes=2),
    match=r"predictions must be class indices",
    jit="nan",
    id="balanced-pred-range",
  ),
  Case(
    "metrics.balanced_accuracy",
    M.balanced_accuracy,
    (LOGITS, LABELS),
    kwargs=dict(num_classes=3),
    match="num_classes is 3",
    id="balanced-logit-width",
  ),
  Case(
    "metrics.balanced_accuracy",
    M.balanced_accuracy,
    (LOGITS, LABELS),
    kwargs=dict(num_classes=0),
    match="num_classes must be >= 1",
    id="balanced-zero-classes",
  ),
  Case(
    "metrics.ndcg_at_k",
    M.ndcg_at_k,
    (SCORES, np.array([[1, -1, -1], [-1, 1, 1]], f32)),
    kwargs=dict(k=2),
    match="relevance must be finite and >= 0",
    jit="nan",
    id="ndcg-signed-relevance",
  ),
  Case(
    "metrics.ndcg_at_k",
    M.ndcg_at_k,
    (NAN_SCORES, REL),
    kwargs=dict(k=2),
    match="scores must not contain NaN",
    jit="nan",
    id="ndcg-nan-scores",
  ),
  Case(
    "metrics.ndcg_at_k",
    M.ndcg_at_k,
    (SCORES, REL),
    kwargs=dict(k=0),
    match="k must be a positive int",
    id="ndcg-k0",
  ),
  Case(
    "metrics.ndcg_at_k",
    M.ndcg_at_k,
    (SCORES, REL),
    kwargs=dict(k=4),
    match=(
      r"k=4 exceeds the number of candidates N=3 .*pass k=N to score the "
      r"whole list"
    ),
    id="ndcg-k-above-n",
  ),
  Case(
    "metrics.precision_at_k",
    M.precision_at_k,
    (SCORES, REL),
    kwargs=dict(k=4),
    match=(
      r"k=4 exceeds the number of candidates N=3 .*pass k=N to score the "
      r"whole list"
    ),
    id="precision-k-above-n",
  ),
  Case(
    "metrics.recall_at_k",
    M.recall_at_k,
    (SCORES, REL),
    kwargs=dict(k=4),
    match=(
      r"k=4 exceeds the number of candidates N=3 .*pass k=N to score the "
      r"whole list"
    ),
    id="recall-k-above-n",
  ),
  Case(
    "metrics.hit_rate_at_k",
    M.hit_rate_at_k,
    (SCORES, REL),
    kwargs=dict(k=4),
    match=(
      r"k=4 exceeds the number of candidates N=3 .*pass k=N to score the "
      r"whole list"
    ),
    id="hit-k-above-n",
  ),
  Case(
    "metrics.hit_rate_at_k",
    M.hit_rate_at_k,
    (SCORES, REL[:, :2]),
    kwargs=dict(k=1),
    match="must both have shape",
    id="hit-shape",
  ),
  Case(
    "metrics.recall_at_k",
    M.recall_at_k,
    (SCORES, REL),
    kwargs=dict(k=2.5),
    match="k must be a positive int",
    id="recall-float-k",
  ),
  Case(
    "metrics.precision_at_k",
    M.precision_at_k,
    (SCORES, REL * np.nan),
    kwargs=dict(k=1),
    match="relevance must be finite",
    jit="nan",
    id="precision-nan-relevance",
  ),
  Case(
    "metrics.mrr",
    M.mrr,
    (np.zeros((2, 0), f32), np.zeros((2, 0), f32)),
    match="at least one candidate",
    id="mrr-no-candidates",
  ),
  Case(
    "metrics.mrr",
    M.mrr,
    (SCORES.astype(str), REL),
    error=TypeError,
    match="scores must have a real",
    jit=None,
    jit_reason="a string array cannot be traced",
    id="mrr-string-scores",
  ),
  Case(
    "metrics.average_precision",
    M.average_precision,
    (SCORES, -REL),
    match="relevance must be finite and >= 0",
    jit="nan",
    id="ap-negative",
  ),
  Case(
    "metrics.mean_average_precision",
    M.mean_average_precision,
    (NAN_SCORES, REL),
    match="scores must not contain NaN",
    jit="nan",
    id="map-nan",
  ),
  Case(
    "metrics.frechet_distance",
    M.frechet_distance,
    (NAN_FEATS, FEATS),
    match="feats_a and feats_b must be finite",
    jit="nan",
    id="fid-nan",
  ),
  Case(
    "metrics.frechet_distance",
    M.frechet_distance,
    (FEATS, FEATS[:, :2]),
    match="same D",
    id="fid-dims",
  ),
  Case(
    "metrics.frechet_distance_from_moments",
    M.frechet_distance_from_moments,
    (
      np.zeros(2, f32),
      np.eye(2, dtype=f32),
      np.zeros(2, f32),
      np.eye(3, dtype=f32),
    ),
    match=r"must have shape \(2, 2\)",
    id="fd-moments-shape",
  ),
  Case(
    "metrics.frechet_distance_from_moments",
    M.frechet_distance_from_moments,
    (
      np.zeros(2, f32),
      np.diag([np.inf, 1.0]).astype(f32),
      np.zeros(2, f32),
      np.eye(2, dtype=f32),
    ),
    match="must be finite",
    jit="nan",
    id="fd-moments-inf",
  ),
  Case(
    "metrics.kernel_inception_distance",
    M.kernel_inception_distance,
    (FEATS, FEATS),
    kwargs=dict(degree=0),
    match="degree must be >= 1",
    id="kid-degree",
  ),
  Case(
    "metrics.kernel_inception_distance",
    M.kernel_inception_distance,
    (NAN_FEATS, FEATS),
    match="must be finite",
    jit="nan",
    id="kid-nan",
  ),
]

EXEMPT = {}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(metrics, CASES, EXEMPT)


def test_numpy_int_k_is_accepted():
  """``k`` may be a numpy integer (e.g. from a config array); it equals the
  Python int."""
  ref = np.asarray(M.recall_at_k(SCORES, REL, 3))
  np.testing.assert_allclose(M.recall_at_k(SCORES, REL, np.int64(3)), ref)
  np.testing.assert_allclose(
    M.ndcg_at_k(SCORES, REL, np.int32(2)), M.ndcg_at_k(SCORES, REL, 2)
  )


def test_degenerate_values():
  """Documented values: a query with no relevant candidate scores 0 everywhere;
  k = N is the whole list (k > N is an error, see the battery)."""
  rel = np.array([[0, 0, 0], [0, 1, 0]], f32)
  for fn in (M.ndcg_at_k, M.hit_rate_at_k, M.recall_at_k, M.precision_at_k):
    assert float(fn(SCORES, rel, 2)[0]) == 0.0
  assert float(M.mrr(SCORES, rel)[0]) == 0.0
  assert float(M.average_precision(SCORES, rel)[0]) == 0.0
  # k = N: the whole list (recall 1 and precision 1/3 for the query that has
  # relevance).
  assert float(M.recall_at_k(SCORES, rel, 3)[1]) == 1.0
  assert float(M.precision_at_k(SCORES, rel, 3)[1]) == pytest.approx(1 / 3)
  # relevant candidate ranked first
  assert float(M.ndcg_at_k(SCORES, rel, 3)[1]) == 1.0
  # -inf scores are legal (masked candidates rank last).
  s = np.array([[-np.inf, 0.0, 1.0]], f32)
  assert float(M.mrr(s, np.array([[1, 0, 0]], f32))[0]) == pytest.approx(1 / 3)
  # One class present: balanced accuracy is that class's recall.
  assert float(
    M.balanced_accuracy(np.array([1, 1, 0]), np.array([1, 1, 1]), 2)
  ) == pytest.approx(2 / 3)


def test_bool_labels_are_zero_one():
  """Bool labels and bool predictions are read as classes 0/1."""
  y = np.array([True, False, True, True])
  pred = np.array([True, False, False, True])
  assert float(M.accuracy(pred, y)) == 0.75
  assert float(M.balanced_accuracy(pred, y, 2)) == pytest.approx(
    (1.0 + 2 / 3) / 2
  )


def test_binary_probabilities_the_right_way():
  """The documented fixes for the two rejected forms give the true accuracy
  1.0."""
  p = np.array([0.9, 0.2, 0.8], f32)
  assert (
    float(M.accuracy((p > 0.5).astype(np.int32), np.array([1, 0, 1]))) == 1.0
  )
  onehot = np.eye(2, dtype=np.int32)[LABELS]
  assert float(M.accuracy(LOGITS, onehot.argmax(-1))) == 1.0


def test_under_jit_valid_input_unchanged():
  """The poison path leaves valid input untouched under jit."""
  got = jax.jit(M.ndcg_at_k, static_argnums=2)(SCORES, REL, 2)
  np.testing.assert_allclose(got, M.ndcg_at_k(SCORES, REL, 2), rtol=1e-6)
