"""Library summaries of a digits run: the trivial baselines and the seed
mean."""

import math

import numpy as np
import pytest

import jaxpapers.denseam as D


def _batch(y):
  y = np.asarray(y, np.int32)
  return D.Batch(np.zeros((len(y), 74), np.float32), np.zeros(74, bool), y)


def test_digits_baselines_closed_form():
  # Train labels 0, 0, 0, 1: prior (3/4, 1/4); cross-entropy -(3 ln 3/4 + ln
  # 1/4) / 4.
  b = D.digits_baselines(_batch([0, 0, 0, 1]), _batch([0, 1, 2]))
  assert b["uniform_loss"] == pytest.approx(math.log(10))
  want = -(3 * math.log(0.75) + math.log(0.25)) / 4
  assert b["class_prior_loss"] == pytest.approx(want, rel=1e-12)
  # majority class 0: one of three
  assert b["majority_accuracy"] == pytest.approx(1 / 3)
  assert b["logreg_train_loss"] is None and b["logreg_test_accuracy"] is None


def test_digits_baselines_logreg_beats_the_prior_on_digits():
  train, test = D.load_digits_task("classify", seed=0)
  b = D.digits_baselines(train, test, logreg=True)
  assert (
    b["logreg_train_loss"] < b["class_prior_loss"] < b["uniform_loss"] + 1e-9
  )
  assert b["logreg_test_accuracy"] > 0.9 > b["majority_accuracy"]


def test_seed_mean_makes_a_diverged_seed_inf():
  loss = np.array([[1.0, 3.0], [np.nan, 1.0]])  # [L, S]
  np.testing.assert_array_equal(D.seed_mean(loss), [2.0, np.inf])
