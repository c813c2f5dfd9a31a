"""Claim code of experiments/logstop: best arm against best baseline, paired
over seeds, and the window means that give the per-frame baselines LogSTOP's
window."""

import importlib

import numpy as np
import pytest

MODULES = {
  "train": "experiments.logstop.train",
  "windows": ("jaxpapers.logstop._windows"),
}

T3 = 4.303  # t_{0.975, 2}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


@pytest.fixture(name="windows")
def _windows():
  return importlib.import_module(MODULES["windows"])


# Balanced accuracy per seed of four arms.
ARMS = {
  "LogSTOP w=1": (0.8, 0.7, 0.9),  # mean 0.8: best LogSTOP
  "LogSTOP w=5": (0.9, 0.6, 0.75),  # 0.75
  "Boolean LTLf (p>=0.5) w=1": (0.6, 0.65, 0.7),  # 0.65
  "mean score (adaptive) w=5": (0.7, 0.8, 0.6),  # 0.7: best baseline
}


def _per_seed():
  return [{a: v[s] for a, v in ARMS.items()} for s in range(3)]


def test_mean_ci(train):
  mean, ci = train._mean_ci(_per_seed())
  assert mean["LogSTOP w=5"] == pytest.approx(0.75)
  assert ci["LogSTOP w=5"] == pytest.approx(
    T3 * np.std(ARMS["LogSTOP w=5"], ddof=1) / np.sqrt(3)
  )


def test_compare_arms(train):
  c = train.compare_arms(_per_seed(), (1, 5))
  assert (c["logstop_arm"], c["baseline_arm"]) == (
    "LogSTOP w=1",
    "mean score (adaptive) w=5",
  )
  # Paired per seed: (0.1, -0.1, 0.3): mean 0.1, sample std 0.2.
  assert c["diff_per_seed"] == pytest.approx([0.1, -0.1, 0.3])
  assert c["diff"] == pytest.approx(0.1)
  assert c["diff_ci95"] == pytest.approx(T3 * 0.2 / np.sqrt(3))
  w1, w5 = c["same_window"]["1"], c["same_window"]["5"]
  assert w1["baseline_arm"] == "Boolean LTLf (p>=0.5) w=1"
  assert w1["diff"] == pytest.approx((0.2 + 0.05 + 0.2) / 3)
  assert w5["logstop_arm"] == "LogSTOP w=5"
  assert w5["diff"] == pytest.approx((0.2 - 0.2 + 0.15) / 3)


def test_block_and_sliding_means(windows):
  v = {"a": np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])}
  # Blocks [0, 2), [2, 4), [4, 5): the last one truncated at the end of the
  # trace.
  np.testing.assert_allclose(windows.block_means(v, 2)["a"], [[1.5, 3.5, 5.0]])
  np.testing.assert_allclose(windows.block_means(v, 3)["a"], [[2.0, 4.5]])
  # Windows [t, min(t + 2, 5)).
  np.testing.assert_allclose(
    windows.sliding_means(v["a"], 2), [[1.5, 2.5, 3.5, 4.5, 5.0]]
  )
