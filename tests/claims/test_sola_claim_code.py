"""Claim code of experiments/sola: bits-per-byte differences and their noise
half-widths."""

import importlib
import math
import types

import numpy as np
import pytest

MODULES = {"train": "experiments.sola.train"}


@pytest.fixture(name="train")
def _train():
  return importlib.import_module(MODULES["train"])


def _bpb(mean, std):
  return {"bpb_eval": {"mean": mean, "std": std}}


def _methods():
  return {
    "sola": _bpb(1.00, 0.03),
    "uld": _bpb(1.10, 0.04),
    "mined": _bpb(1.05, 0.02),  # the best (lowest) cross-tokenizer baseline
    "alm": _bpb(1.20, 0.05),
    "ce": _bpb(1.02, 0.01),
    "sola_none": _bpb(1.01, 0.03),
  }


def _noise(sa, sb, n=3):
  return 2.0 * math.sqrt((sa**2 + sb**2) / n)


def test_derived_metrics(train):
  d = train.derived_metrics(_methods(), 3)
  assert d["best_ctkd_baseline"] == "mined"
  assert d["sola_minus_best_ctkd_bpb"] == pytest.approx(1.00 - 1.05)
  assert d["sola_vs_best_ctkd_noise"] == pytest.approx(_noise(0.03, 0.02))
  assert d["sola_minus_ce_bpb"] == pytest.approx(1.00 - 1.02)
  assert d["sola_vs_ce_noise"] == pytest.approx(_noise(0.03, 0.01))
  assert d["sola_minus_alm_bpb"] == pytest.approx(1.00 - 1.20)
  assert d["sola_vs_alm_noise"] == pytest.approx(_noise(0.03, 0.05))
  assert d["sola_minus_none_bpb"] == pytest.approx(1.00 - 1.01)
  assert d["sola_vs_none_noise"] == pytest.approx(_noise(0.03, 0.03))
  assert d["alm_minus_ce_bpb"] == pytest.approx(1.20 - 1.02)
  assert "sola_minus_hard_bpb" not in d
  assert train.derived_metrics({"ce": _bpb(1.0, 0.1)}, 3) == {}


def test_ms(train):
  m = train._ms(np.array([1.0, 2.0, 4.0]))
  assert m["mean"] == pytest.approx(7 / 3)
  assert m["std"] == pytest.approx(np.std([1.0, 2.0, 4.0], ddof=1))


def test_method_rows_and_group_hparams(train):
  # Methods are the outer axis: with 2 seeds, method 1 owns rows 2 and 3.
  assert train._method_rows(1, 2) == slice(2, 4)
  hp = train._group_hparams(
    types.SimpleNamespace(seeds=2, lr=0.1), ("uld", "sola_hard", "mined")
  )
  np.testing.assert_array_equal(hp["w_uld"], [1, 1, 0, 0, 0, 0])
  np.testing.assert_array_equal(hp["hard"], [0, 0, 1, 1, 0, 0])
  np.testing.assert_array_equal(hp["w_mined"], [0, 0, 0, 0, 1, 1])
