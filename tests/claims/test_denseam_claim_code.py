"""Claim code of experiments/denseam (``jaxpapers.denseam._summary``): eta*
spread, transfer regret and best-loss ratios."""

import importlib

import numpy as np
import pytest

MODULES = {"lib": "jaxpapers.denseam._summary"}

# t_{0.975, n-1} for n = 2, 3 (core.ci95_halfwidth's table)
T2, T3 = 12.706, 4.303
T2X, T3X = 12.706205, 4.302653  # the same quantiles from scipy (core.stats)


@pytest.fixture(name="lib")
def _lib():
  return importlib.import_module(MODULES["lib"])


def _grid():
  # Widths K = 8, 32; learning rates 0.01, 0.1, 1 (equally spaced in log); two
  # seeds. final_loss is [lr][seed].
  return {
    # Seed means (2, 1, 2): symmetric about 0.1 in log eta, so eta*(8) = 0.1
    # exactly.
    "K8": {
      "final_loss": [[1.5, 2.5], [1.0, 1.0], [2.5, 1.5]],
      "test_metric": [[0.1] * 2] * 3,
    },
    # Seed means (3, 2, 1.5): the minimum at the grid's edge, so eta*(32) = 1.0.
    "K32": {
      "final_loss": [[3.0, 3.0], [2.0, 2.0], [1.0, 2.0]],
      "test_metric": [[0.5, 0.7]] * 3,
    },
  }


def _summarize(lib, grid):
  stack = lambda name: [grid[f"K{k}"][name] for k in (8, 32)]  # [W, L, S]
  return lib.transfer_summary(
    stack("final_loss"), stack("test_metric"), (0.01, 0.1, 1.0)
  )


def test_setting_summary(lib):
  s = _summarize(lib, _grid())
  np.testing.assert_allclose(s["eta_star"], [0.1, 1.0], rtol=1e-12)
  assert s["eta_spread"] == pytest.approx(1.0 / 0.1)  # max / min over widths
  # eta tuned at K = 8 is 0.1 (grid index 1); at K = 32 it costs 2 / 1.5 - 1.
  assert s["transfer_regret"] == pytest.approx(2.0 / 1.5 - 1.0)
  # Per seed: seed 0 tuned at index 1 (1.0), pays 2 / 1 - 1 = 1; seed 1 (1.0), 2
  # / 2 - 1 = 0.
  assert s["transfer_regret_per_seed"] == pytest.approx([1.0, 0.0])
  assert s["transfer_regret_ci95"] == pytest.approx(
    T2 * np.std([1.0, 0.0], ddof=1) / np.sqrt(2)
  )
  assert s["best_loss"] == pytest.approx([1.0, 1.5])
  assert s["best_loss_per_seed"] == [[1.0, 1.0], [1.0, 2.0]]  # [width][seed]
  assert s["best_lr_grid"] == [0.1, 1.0]
  assert s["test_accuracy_at_best"] == pytest.approx([0.1, 0.6])
  assert s["diverged_fraction"] == 0.0


def test_a_diverged_seed_never_wins(lib):
  g = _grid()
  g["K8"]["final_loss"][0] = [float("nan"), 0.1]  # lr 0.01: one seed diverged
  s = _summarize(lib, g)
  assert s["best_lr_grid"][0] == 0.1  # the seed mean at 0.01 is inf, not 0.1
  assert s["diverged_fraction"] == pytest.approx(1 / 12)


def test_summary_edges_learning_and_drift(lib):
  s = _summarize(lib, _grid())
  # Per-seed grid argmins: K8 seeds (1, 1), K32 seeds (2, 1): only seed 0 at K32
  # sits on the upper edge -> 1 of 4 (width, seed) optima unbracketed.
  assert s["edge_fraction"] == pytest.approx(0.25)
  # best seed means 1.0 and 1.5 < ln 10
  assert s["learns_at_every_width"] is True
  g = _grid()
  # best mean 2.4 > ln 10
  g["K32"]["final_loss"] = [[3.0, 3.0], [2.5, 2.5], [2.4, 2.4]]
  assert _summarize(lib, g)["learns_at_every_width"] is False
  # The drift is read from the per-seed optima, largest width over smallest.
  eta = np.asarray(s["eta_star_per_seed"])
  want = lib.log_drift(eta[-1], eta[0])
  assert s["log_drift"] == want


def test_log_drift(lib):
  # ln ratios ln(4/1) and ln(1/1): mean ln 2, sd ln4/sqrt2, half-width T2 * sd /
  # sqrt 2.
  d = lib.log_drift([4.0, 2.0], [1.0, 2.0])
  assert d["mean"] == pytest.approx(np.log(2.0))
  hw = T2X * np.std([np.log(4.0), 0.0], ddof=1) / np.sqrt(2)
  assert d["hw"] == pytest.approx(hw)
  assert d["ratio"] == pytest.approx(2.0)
  assert d["ratio_lo"] == pytest.approx(np.exp(np.log(2.0) - hw))
  assert d["ratio_hi"] == pytest.approx(np.exp(np.log(2.0) + hw))
  assert d["n"] == 2
  # Shrinking optima give a negative drift (large-width optimum first).
  assert lib.log_drift([1.0, 1.0], [8.0, 8.0])["mean"] == pytest.approx(
    -np.log(8.0)
  )
  # A seed without an optimum leaves the drift unmeasured, never a number.
  assert lib.log_drift([np.nan, 1.0], [1.0, 1.0])["mean"] is None


def _summary(mean, hw, learns, best_per_seed):
  return {
    "log_drift": {"mean": mean, "hw": hw},
    "learns_at_every_width": learns,
    "best_loss_per_seed": best_per_seed,
  }


def test_derived_metrics(lib):
  summary = {
    "lse:derived": _summary(-0.5, 0.25, True, [[1.0] * 3, [1.0] * 3]),
    # Standard learns at no width -> no learning rate to transfer: |drift| is +inf.
    "poly3:standard": _summary(0.1, 0.2, False, [[9.0] * 3, [2.0, 3.0, 4.0]]),
    "poly3:derived": _summary(0.3, 0.1, True, [[1.0] * 3, [1.0, 1.0, 2.0]]),
  }
  d = lib.transfer_metrics(summary)
  assert d["lse_derived"] == {
    "log_drift": -0.5,
    "log_drift_hw": 0.25,
    "abs_log_drift": 0.5,
    "log_shrink": 0.5,
  }
  assert d["poly3_standard"]["abs_log_drift"] == float("inf")
  assert d["poly3_standard"]["log_shrink"] == -0.1
  assert d["poly3_derived"]["abs_log_drift"] == pytest.approx(0.3)
  # Per-seed log ratios at the largest width: ln 2, ln 3, ln 2.
  r = np.log([2.0, 3.0, 2.0])
  assert d["poly3_sp_over_derived_log_best_loss"] == pytest.approx(r.mean())
  hw = T3X * np.std(r, ddof=1) / np.sqrt(3)
  assert d["poly3_sp_over_derived_log_best_loss_hw"] == pytest.approx(hw)
  # Standard with no finite loss at the largest width for one seed: +inf, noise
  # 0.
  summary["poly3:standard"]["best_loss_per_seed"][1][0] = float("nan")
  d = lib.transfer_metrics(summary)
  assert d["poly3_sp_over_derived_log_best_loss"] == float("inf")
  assert d["poly3_sp_over_derived_log_best_loss_hw"] == 0.0
  # A drift that could not be measured, in a setting that learns: None
  # (inconclusive).
  summary["lse:derived"]["log_drift"] = {"mean": None, "hw": None}
  assert lib.transfer_metrics(summary)["lse_derived"]["abs_log_drift"] is None
