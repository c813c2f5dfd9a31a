"""The smoke experiment end to end (with resume) and the notebook."""

import json

import pytest

import jaxpapers.margins as M
from experiments.margins import train
from experiments.margins.configs import smoke
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert "Margin m_0 against d" in rec["table_markdown"]
  assert {"margin_vs_d.png", "collapse.png", "losses.png", "critical_n.png"} <= set(rec["plots"])
  rows = metrics["margin_vs_d"]
  assert len(rows) == len(cfg.ns) * len(cfg.ks) * len(cfg.ds)
  for r in rows:
    m_inf = M.k_sparse_optimal_margin(r["n"], r["k"])
    assert r["m_inf"] == pytest.approx(m_inf)
    # Nothing may beat the exact unrestricted optimum.
    assert r["margin"]["m0_best"] <= m_inf + 1e-5
    assert r["cs_svm"]["certificate"] <= m_inf + 1e-5 and r["jl"]["certificate"] <= m_inf + 1e-5
    for loss in cfg.losses:
      c = r[loss]
      assert c["m0_mean"] <= c["mg_mean"] + 1e-6 <= c["mq_mean"] + 2e-6
  assert any(p.name.startswith("fit%2F") for p in (tmp_path / "cells").iterdir())
  # d = 2, k = 2: only pairs adjacent on the circle can be a top-2, so n = 4 is impossible.
  assert metrics["critical_n"][0]["critical_n"] <= 3
  # Resume: a rerun on the same workdir reads every cell back instead of fitting again.
  monkeypatch.setattr(
    train.M, "fit_free_embeddings", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
  )
  monkeypatch.setattr(train.M, "critical_n", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["threshold"] == metrics["threshold"]


def test_sweep_path_equals_single_program_fit(tmp_path):
  """The experiment's grid (core.Sweep: sharded, chunked, checkpointed) == the one-program fit."""
  import jax
  import numpy as np

  A = M.k_sparse_relevance(6, 2)
  keys = jax.random.split(jax.random.key(0), 2)
  ref = M.fit_free_embeddings(keys, A, [2, 4], loss="sigmoid", steps=30, lr=0.05)
  kw = dict(
    loss="sigmoid", steps=30, lr=0.05, sweep=True, chunk_size=10, checkpoint_dir=tmp_path / "ck"
  )
  got = M.fit_free_embeddings(keys, A, [2, 4], **kw)
  for a, b in zip(ref, got, strict=True):
    assert a.shape == b.shape
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_notebook_runs():
  notebook_util.run_notebook("colab/margins.ipynb", timeout=300)
