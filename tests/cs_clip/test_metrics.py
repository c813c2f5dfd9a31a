"""Half-truth and pairwise accuracy on constructed similarity tables."""

import numpy as np
import pytest

import jaxpapers.cs_clip as C


def _at(angles):
  """Unit vectors in 2-D at the given angles: s(img=e0, v) = cos(angle)."""
  a = np.asarray(angles, np.float64)
  return np.stack([np.cos(a), np.sin(a)], -1).astype(np.float32)


def test_half_truth_accuracy_on_a_constructed_table():
  # s(I, c) and s(I, c') per triple; a win for the half-truth when s(I, c') >
  # s(I, c)
  s_short = np.array([0.9, 0.5, 0.2, 0.8, 0.3, 0.6])
  # wins at 1, 3, 4; a tie at 5
  s_long = np.array([0.1, 0.7, 0.1, 0.9, 0.8, 0.6])
  kind = np.array([0, 0, 1, 1, 1, 0])
  img = _at(np.zeros(6))
  out = C.half_truth_accuracy(
    img, _at(np.arccos(s_short)), _at(np.arccos(s_long)), kind
  )
  win = s_long > s_short
  np.testing.assert_allclose(out["all"], 1 - win.mean(), atol=1e-6)
  # 2/3
  np.testing.assert_allclose(
    out["entity"], 1 - win[kind == 0].mean(), atol=1e-6
  )
  # 1/3
  np.testing.assert_allclose(
    out["relation"], 1 - win[kind == 1].mean(), atol=1e-6
  )
  assert float(out["entity"]) == pytest.approx(2 / 3, abs=1e-6)
  assert int(out["n_entity"]) == 3 and int(out["n_relation"]) == 3


def test_ties_count_as_not_preferring_the_half_truth_and_are_reported():
  img = _at([0.0, 0.0])
  same = _at([0.3, 1.0])
  out = C.half_truth_accuracy(img, same, same, np.array([0, 1]))
  assert float(out["all"]) == 1.0 and float(out["ties"]) == 1.0


def test_unnormalised_embeddings_use_cosine():
  img = _at([0.0]) * 5
  # long has the larger dot, smaller cosine
  short, long = _at([0.2]) * 0.1, _at([0.4]) * 10
  assert (
    float(C.half_truth_accuracy(img, short, long, np.array([1]))["relation"])
    == 1.0
  )


def test_missing_kind_is_nan():
  out = C.half_truth_accuracy(_at([0.0]), _at([0.1]), _at([0.2]), np.array([0]))
  assert np.isnan(float(out["relation"])) and float(out["entity"]) == 1.0


def test_pairwise_caption_accuracy_is_strict():
  img = _at([0, 0, 0])
  pos = _at([0.1, 0.5, 0.3])
  neg = _at([0.2, 0.4, 0.3])
  assert float(C.pairwise_caption_accuracy(img, pos, neg)) == pytest.approx(
    1 / 3
  )
