"""Claim code of experiments/denseam: eta* spread, transfer regret and best-loss ratios."""

import importlib
import types

import numpy as np
import pytest

MODULES = {"train": "experiments.denseam.train"}

T2, T3 = 12.706, 4.303  # t_{0.975, n-1} for n = 2, 3


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _grid():
  # Widths K = 8, 32; learning rates 0.01, 0.1, 1 (equally spaced in log); two seeds.
  # final_loss is [lr][seed].
  return {
    # Seed means (2, 1, 2): symmetric about 0.1 in log eta, so eta*(8) = 0.1 exactly.
    "K8": {"final_loss": [[1.5, 2.5], [1.0, 1.0], [2.5, 1.5]], "test_metric": [[0.1] * 2] * 3},
    # Seed means (3, 2, 1.5): the minimum at the grid's edge, so eta*(32) = 1.0.
    "K32": {"final_loss": [[3.0, 3.0], [2.0, 2.0], [1.0, 2.0]], "test_metric": [[0.5, 0.7]] * 3},
  }


def _cfg():
  return types.SimpleNamespace(lrs=(0.01, 0.1, 1.0), widths=(8, 32))


def test_setting_summary(train):
  s = train._setting_summary(_cfg(), _grid())
  np.testing.assert_allclose(s["eta_star"], [0.1, 1.0], rtol=1e-12)
  assert s["eta_spread"] == pytest.approx(1.0 / 0.1)  # max / min over widths
  # eta tuned at K = 8 is 0.1 (grid index 1); at K = 32 it costs 2 / 1.5 - 1.
  assert s["transfer_regret"] == pytest.approx(2.0 / 1.5 - 1.0)
  # Per seed: seed 0 tuned at index 1 (1.0), pays 2 / 1 - 1 = 1; seed 1 (1.0), 2 / 2 - 1 = 0.
  assert s["transfer_regret_per_seed"] == pytest.approx([1.0, 0.0])
  assert s["transfer_regret_ci95"] == pytest.approx(T2 * np.std([1.0, 0.0], ddof=1) / np.sqrt(2))
  assert s["best_loss"] == pytest.approx([1.0, 1.5])
  assert s["best_loss_per_seed"] == [[1.0, 1.0], [1.0, 2.0]]  # [width][seed]
  assert s["best_lr_grid"] == [0.1, 1.0]
  assert s["test_accuracy_at_best"] == pytest.approx([0.1, 0.6])
  assert s["diverged_fraction"] == 0.0


def test_a_diverged_seed_never_wins(train):
  g = _grid()
  g["K8"]["final_loss"][0] = [float("nan"), 0.1]  # lr 0.01: one seed diverged
  s = train._setting_summary(_cfg(), g)
  assert s["best_lr_grid"][0] == 0.1  # the seed mean at 0.01 is inf, not 0.1
  assert s["diverged_fraction"] == pytest.approx(1 / 12)


def test_derived_metrics(train):
  summary = {
    "lse:standard": {"eta_spread": 10.0, "transfer_regret": 0.25, "transfer_regret_ci95": 0.5},
    # best loss per seed [width][seed]; the ratio is taken at the largest width (last row).
    "poly3:standard": {"best_loss_per_seed": [[9.0, 9.0, 9.0], [2.0, 3.0, 4.0]]},
    "poly3:hypothesis": {"best_loss_per_seed": [[1.0, 1.0, 1.0], [1.0, 1.0, 2.0]]},
  }
  for k in ("eta_spread", "transfer_regret", "transfer_regret_ci95"):
    summary["poly3:standard"][k] = summary["poly3:hypothesis"][k] = 1.0
  d = train.derived_metrics({"summary": summary}, None)
  assert d["lse_standard"] == {
    "eta_spread": 10.0,
    "transfer_regret": 0.25,
    "transfer_regret_ci95": 0.5,
  }
  # Per-seed ratios standard / hypothesis (2, 3, 2): mean 7/3 (median 2).
  assert d["poly_sp_over_hyp_best_loss"] == pytest.approx(7 / 3)
  sd = np.std([2.0, 3.0, 2.0], ddof=1)
  assert d["poly_sp_over_hyp_best_loss_ci95"] == pytest.approx(T3 * sd / np.sqrt(3))
