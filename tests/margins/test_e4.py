"""E4 (documents-only vs projected queries): the d_f rule and a seconds-long
end-to-end run."""

import json
import math

import numpy as np
import pytest

import jaxpapers.margins as M
from experiments.margins import e4
from experiments.margins.configs import e4 as e4_config
from experiments.margins.configs import e4_smoke


def test_d_needed_interpolates_after_the_last_dip():
  ds = [1, 2, 4, 8, 16]
  # Crosses 0.5 at d = 4, dips below at d = 8: the rule takes the crossing after
  # the dip.
  assert M.needed_dimension(
    ds, [0.1, 0.4, 0.6, 0.45, 0.7], 0.5
  ) == pytest.approx(8 * 2**0.2)
  # at most the first d
  assert M.needed_dimension(ds, [0.6, 0.7, 0.8, 0.9, 0.95], 0.5) == 1.0
  # not reached: censored
  assert M.needed_dimension(ds, [0.6, 0.7, 0.8, 0.9, 0.4], 0.5) is None
  # A constant relative growth per decade of N gives that slope.
  assert M.growth_slope(
    [10, 100, 1000], [20.0, 20 * math.e**0.1, 20 * math.e**0.2]
  ) == pytest.approx(0.1)
  assert M.growth_slope([10, 100], [20.0, None]) is None


def test_claims_are_declared_with_their_rules():
  ids = [c["id"] for c in e4_config.CLAIMS]
  assert ids == [
    "documents_only_flat_in_N",
    "projected_queries_grow_with_N",
    "resolved_grows_slower",
    "resolved_needs_fewer_dims",
  ]


# ~20 s on 2 loaded cores: the source search, two compiles, a plot
@pytest.mark.slow
def test_smoke_run(tmp_path):
  cfg = e4_smoke.get_config()
  cfg.ds = (8, 64)
  cfg.steps = 100
  cfg.source_steps = 300
  metrics = e4.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert [c["claim_id"] for c in rec["claims"]] == [
    c["id"] for c in e4_config.CLAIMS
  ]
  assert rec["plots"] == ["e4_dimension_reduction.png"]
  src = metrics["source"]
  assert src["m_inf"] == pytest.approx(M.k_sparse_optimal_margin(cfg.n, cfg.k))
  # the optimum, explicit
  assert src["m_inf"] - 2e-3 <= src["m_src"] <= src["m_inf"] + 1e-6
  for d in ("8", "64"):
    cell = metrics["cells"][d]
    for m in e4.METHODS:  # nested families: the margin can only fall as N grows
      assert np.all(np.diff(np.asarray(cell[m]), axis=1) <= 1e-7)
  big = metrics["cells"]["64"]
  assert (
    np.mean(big["resolved"])
    > np.mean(big["projected"])
    > np.mean(big["random"])
  )


def test_used_rows_only_equals_all_rows():
  """``all_rows=False`` (each seed solves only its own max(Ns) rows) gives the
  same projected and re-solved prefix margins as solving every row and reading
  each seed's prefixes."""
  import jax
  import jax.numpy as jnp

  from jaxpapers.margins._constructions import _symmetric_documents

  n, k, d = 8, 2, 16
  A = np.asarray(M.k_sparse_relevance(n, k))
  V = _symmetric_documents(n, 0.4)
  U = np.asarray(
    M.max_margin_queries(
      jnp.asarray(V, jnp.float32), jnp.asarray(A), steps=100
    ).U
  )
  src = {"A": A, "U": U / np.linalg.norm(U, axis=1, keepdims=True), "V": V}
  perms = [
    np.asarray(jax.random.permutation(jax.random.key(s), len(A)))
    for s in range(2)
  ]
  cells = {}
  for all_rows in (True, False):
    cfg = e4_config.get_config()
    cfg.update(
      dict(n=n, k=k, Ns=(5, 20), seeds=2, steps=100, all_rows=all_rows)
    )
    cells[all_rows] = e4._cell(cfg, src, perms, jax.random.key(1), d)
  for m in ("projected", "resolved"):
    np.testing.assert_allclose(
      cells[False][m], cells[True][m], rtol=1e-5, atol=1e-6
    )
  assert cells[True]["projected"] != cells[True]["resolved"]
