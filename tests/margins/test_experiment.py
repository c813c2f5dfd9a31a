"""The smoke experiment end to end (with resume) and the notebook."""

import json

import pytest

import jaxpapers.margins as M
from experiments.margins import train
from experiments.margins.configs import default, smoke
from tests import notebook_util


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert "Margin m_0 against d" in rec["table_markdown"]
  assert {
    "margin_vs_d.png",
    "collapse.png",
    "losses.png",
    "critical_n.png",
  } <= set(rec["plots"])
  rows = metrics["margin_vs_d"]
  assert len(rows) == len(cfg.ns) * len(cfg.ks) * len(cfg.ds)
  for r in rows:
    m_inf = M.k_sparse_optimal_margin(r["n"], r["k"])
    assert r["m_inf"] == pytest.approx(m_inf)
    # Nothing may beat the exact unrestricted optimum.
    assert r["margin"]["m0_best"] <= m_inf + 1e-5
    assert (
      r["cs_svm"]["certificate"] <= m_inf + 1e-5
      and r["jl"]["certificate"] <= m_inf + 1e-5
    )
    for loss in cfg.losses:
      c = r[loss]
      assert c["m0_mean"] <= c["mg_mean"] + 1e-6 <= c["mq_mean"] + 2e-6
  assert any(p.name.startswith("fit~") for p in (tmp_path / "cells").iterdir())
  # d = 2, k = 2: only pairs adjacent on the circle can be a top-2, so n = 4 is
  # impossible.
  assert metrics["critical_n"][0]["critical_n"] <= 3
  # Resume: a rerun on the same workdir reads every cell back instead of fitting
  # again.
  monkeypatch.setattr(
    train.M,
    "fit_free_embeddings",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError),
  )
  monkeypatch.setattr(
    train.M, "critical_n", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
  )
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["threshold"] == metrics["threshold"]


def test_threshold_bisection_finds_each_seeds_integer_crossing(
  tmp_path, monkeypatch
):
  """The integer-grid threshold: bisection inside the powers-of-two bracket, per
  seed.

  A fake fit whose margin reaches half the optimum exactly from d = d_true[seed]
  on: the bisection must return d_true per seed (an off-by-one returns d_true +-
  1), C must divide by k ln(n/k) (not log2, not k log n), a seed reaching half
  at the first grid point is bisected down from d = 0, and the pooled C and its
  interval follow their definitions.
  """
  import jax
  import numpy as np

  from jaxpapers import core

  d_true = {16: [11, 9, 3], 64: [24, 17, 16]}  # n -> per seed
  cfg = default.get_config()
  cfg.update(
    dict(
      ns=(16, 64), ks=(2,), ds=(4, 8, 16, 32), seeds=3, steps=5, max_rows=200
    )
  )

  # U[a, s] = s + 1 on the first dims[a] columns
  def fake_fit(keys, A, dims, **kw):
    S, cap = len(keys), max(dims)
    U = np.zeros((len(dims), S, A.shape[0], cap))
    for a, d in enumerate(dims):
      for s in range(S):
        U[a, s, :, :d] = s + 1
    return M.FitResult(
      U=U, V=np.ones((len(dims), S, A.shape[1], cap)), log_t=0, b=0, history=0
    )

  def fake_margins(U, V, A):
    s, d = int(U[0, 0]) - 1, U.shape[1]
    # the slice is the seed's own run at its own midpoint
    assert (U[:, :d] == s + 1).all()
    return {"m0": 1.0 if d >= d_true[A.shape[1]][s] else 0.0}

  from jaxpapers.margins import _fit

  # what the bisection calls
  monkeypatch.setattr(_fit, "fit_free_embeddings", fake_fit)
  monkeypatch.setattr(_fit._margins, "margins_float64", fake_margins)
  rows = []
  for n in (16, 64):
    for d in cfg.ds:
      per_seed = [{"m0": 1.0 if d >= t else 0.0} for t in d_true[n]]
      rows.append(
        {"n": n, "k": 2, "d": d, "m_inf": 1.0, "margin": {"per_seed": per_seed}}
      )
  out = train._refined_constants(
    rows, cfg, core.CellStore(tmp_path), jax.random.key(0)
  )
  C = {n: np.array(d_true[n]) / (2 * np.log(n / 2)) for n in (16, 64)}
  for q in out["per_nk"]:
    assert q["d_half_per_seed"] == d_true[q["n"]], q
    np.testing.assert_allclose(q["C_per_seed"], C[q["n"]])
    assert q["C_ci95"] == pytest.approx(core.ci95_halfwidth(C[q["n"]]))
  means = [C[n].mean() for n in (16, 64)]
  assert out["C_min"] == pytest.approx(min(means)) and out[
    "C_max"
  ] == pytest.approx(max(means))
  pooled = (C[16] + C[64]) / 2
  assert out["C_pooled_mean"] == pytest.approx(pooled.mean())
  assert out["C_pooled_ci95"] == pytest.approx(core.ci95_halfwidth(pooled))
  derived = train.derived_metrics(
    {"loss_wins": {}, "threshold": [], "threshold_refined": out}
  )
  assert derived["threshold_C_fine_spread"] == pytest.approx(
    max(means) / min(means)
  )


def test_sweep_path_equals_the_default_fit(tmp_path):
  """The experiment's grid (core.Sweep: sharded, chunked, checkpointed) == the
  default fit."""
  import jax
  import numpy as np

  A = M.k_sparse_relevance(6, 2)
  keys = jax.random.split(jax.random.key(0), 2)
  ref = M.fit_free_embeddings(
    keys, A, [2, 4], loss="sigmoid", steps=30, lr=0.05
  )
  kw = dict(
    loss="sigmoid",
    steps=30,
    lr=0.05,
    sweep=True,
    chunk_size=10,
    checkpoint_dir=tmp_path / "ck",
  )
  got = M.fit_free_embeddings(keys, A, [2, 4], **kw)
  for a, b in zip(ref, got, strict=True):
    assert a.shape == b.shape
    np.testing.assert_allclose(
      np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6
    )


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/margins.ipynb", timeout=300)
