"""The stage's cheaper evaluation orders give the method's values and gradients
in float64.

A stage may form the tables of its prior aggregation by projecting the
aggregation or by aggregating the senders' projections, may scale rows by the
prior's node and hyperedge factors instead of pairs, and PhenomNN's two
operators share one projection of the node table per step. Each order is forced
here and compared with the float64 NumPy transcription of the reference
(values) and with the other order (gradients): a wrong factor, a prior applied
         twice or a table
of the wrong features moves the values by far more than the tolerance.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda
from jaxpapers.panda import _stage
from tests.panda.test_reference import _randomise, _stage_reference

f64 = np.float64
# undirected, uneven hyperedge sizes (every node and hyperedge degree differs
# somewhere)
INC = hg.from_hyperedges(
  [[0, 1, 2], [1, 3], [2, 3, 4, 5], [0, 5, 6], [4, 7, 8], [6, 7], [8]], 9
)


def _stage_run(stage, inc, xr, factors):
  """Values and gradients (weights and sender features) of a real stage with
  prior aggregation."""
  gd, st = nnx.split(stage)
  # float32 draws, held in float64
  st = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), st)
  prior = panda.stage_priors(inc, dtype=jnp.float64)[0]

  def f(st, xr):
    (yr, _), aux = nnx.merge(gd, st)(
      (xr, None),
      None,
      inc.node,
      inc.edge,
      prior,
      None,
      inc.num_edges,
      conj_phase=True,
      recv_sorted=True,
      prior_factors=factors,
    )
    return yr, aux

  def run(st, xr):
    yr, aux = f(st, xr)
    loss = lambda st, xr: jnp.sum(jnp.sin(f(st, xr)[0]))
    return yr, aux, jax.grad(loss, argnums=(0, 1))(st, xr)

  yr, aux, grads = jax.jit(run, compiler_options=panda.FAST_COMPILE)(st, xr)
  return np.asarray(yr), aux, jax.tree.map(np.asarray, grads)


@pytest.mark.parametrize("by_rows, factored", [(True, True), (False, False)])
def test_prior_tables_in_either_order_match_the_reference(
  monkeypatch, by_rows, factored
):
  monkeypatch.setattr(_stage, "_prior_tables_by_rows", lambda *a: by_rows)
  inc = INC
  h, c = 2, 3
  with jax.enable_x64(True):
    stage = panda.PandaStage(c, panda.PandaConfig(heads=h), rngs=nnx.Rngs(3))
    _randomise(stage, 4)
    xr = np.random.default_rng(5).normal(size=(inc.num_nodes, h, c))
    factors_of = lambda inc: panda.stage_prior_factors(inc, dtype=jnp.float64)
    factors = factors_of(inc) if factored else None
    y, aux, grads = _stage_run(stage, inc, jnp.asarray(xr), factors)
    # the other order, unfactored: the gradients of one linear map agree to
    # rounding
    monkeypatch.setattr(_stage, "_prior_tables_by_rows", lambda *a: not by_rows)
    y2, _, grads2 = _stage_run(
      stage, inc, jnp.asarray(xr), None if factored else factors_of(inc)
    )
    prior = np.asarray(panda.stage_priors(inc, dtype=jnp.float64)[0], f64)
  want, alpha, g = _stage_reference(
    stage,
    xr,
    None,
    np.asarray(inc.node),
    np.asarray(inc.edge),
    prior,
    None,
    inc.num_edges,
    False,
  )
  assert y.dtype == f64
  np.testing.assert_allclose(y, want.real, rtol=0, atol=1e-12)
  np.testing.assert_allclose(np.asarray(aux.gate), g, rtol=0, atol=1e-12)
  np.testing.assert_allclose(np.asarray(aux.alpha), alpha, rtol=0, atol=1e-12)
  np.testing.assert_allclose(y2, y, rtol=0, atol=1e-12)
  for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads2)):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
  assert max(np.abs(a).max() for a in jax.tree.leaves(grads)) > 1e-2


def test_the_cost_rule_weighs_per_pair_entries_against_products():
  w = _stage._PAIR_ENTRY_COST
  # email-EU's HGNN stage 1 (35109 pairs, 986 senders, 1773 receivers, C = 32;
  # W_a and U_r, 48 columns, 16 new to the senders): fewer flops by rows, but 16
  # more entries per pair
  assert 35109 * 48 + 2 * 986 * 32 * 16 < 35109 * 32 + 2 * 1773 * 32 * 48
  assert not _stage._prior_tables_by_rows(35109, 986, 1773, 32, 48, 16)
  # the same columns on Pubmed's 58184 pairs, 19717 senders and 23557 receivers:
  # by rows
  assert (
    w * 58184 * 48 + 2 * 19717 * 32 * 16 < w * 58184 * 32 + 2 * 23557 * 32 * 48
  )
  assert _stage._prior_tables_by_rows(58184, 19717, 23557, 32, 48, 16)
  # attention alone (K = C, its columns already on the senders): by rows
  # whatever the sizes
  assert _stage._prior_tables_by_rows(10**6, 1000, 10, 32, 32, 0)


@pytest.mark.parametrize(
  "kind, gamma_edge",
  [
    ("sym", "code"),
    ("phenom_beta", "code"),
    ("phenom_gamma", "code"),
    ("phenom_gamma", "inverse"),
  ],
)
def test_prior_factors_multiply_to_the_priors(kind, gamma_edge):
  inc = INC
  with jax.enable_x64(True):
    c, _ = panda.stage_priors(
      inc, kind, gamma_edge=gamma_edge, dtype=jnp.float64
    )
    fn, fe = panda.stage_prior_factors(
      inc, kind, gamma_edge=gamma_edge, dtype=jnp.float64
    )
  node, edge = np.asarray(inc.node), np.asarray(inc.edge)
  dn, de = np.asarray(inc.deg_node, f64), np.asarray(inc.deg_edge, f64)
  want = {
    "sym": dn[node] ** -0.5 * de[edge] ** -0.5,
    "phenom_beta": (np.bincount(node, de[edge], inc.num_nodes) + 1)[node]
    ** -0.5,
    "phenom_gamma": (dn[node] + 1) ** -0.5
    * de[edge] ** (0.5 if gamma_edge == "code" else -0.5),
  }[kind]
  np.testing.assert_allclose(np.asarray(c), want, rtol=1e-14)
  got = np.asarray(fn)[node] * (1.0 if fe is None else np.asarray(fe)[edge])
  np.testing.assert_array_equal(got, np.asarray(c))


def test_tables_memo_projects_a_table_once_and_returns_the_same_values():
  rng = np.random.default_rng(0)
  x = (jnp.asarray(rng.normal(size=(5, 1, 3))), None)
  z = (jnp.asarray(rng.normal(size=(4, 1, 3))), None)
  w = {
    k: jnp.asarray(rng.normal(size=(3, k_))) for k, k_ in (("a", 3), ("b", 2))
  }
  calls = []

  def proj(f, wt):
    calls.append(f[0].shape[0])
    return f[0] @ wt

  req = {"hs": (x, "a"), "us": (x, "b"), "hr": (z, "a")}
  plain = _stage._tables(req, w.__getitem__, proj)
  memo: dict = {}
  first = _stage._tables(req, w.__getitem__, proj, memo)
  second = _stage._tables(
    {"hs": (x, "a"), "us": (x, "b")}, w.__getitem__, proj, memo
  )
  assert calls == [5, 4, 5, 4]  # plain: two products; memo: two, then none
  for k in plain:
    np.testing.assert_array_equal(first[k], plain[k])
  np.testing.assert_array_equal(second["hs"], x[0] @ w["a"])
  np.testing.assert_array_equal(second["us"], x[0] @ w["b"])
  # other features with the same weights are projected, not read from the memo
  x2 = (x[0] + 1.0, None)
  third = _stage._tables(
    {"hs": (x2, "a"), "us": (x2, "b")}, w.__getitem__, proj, memo
  )
  assert calls[-1] == 5
  np.testing.assert_allclose(third["hs"], x2[0] @ w["a"])


def test_prior_table_layout_sets_the_cost_and_records_each_choice():
  from jaxpapers.panda import _stage

  default = _stage._PAIR_ENTRY_COST
  shape = dict(pairs=1000, send=10, recv=10, c=8, k=4, k_new=2)
  with (
    panda.prior_table_layout(1) as cheap,
    panda.prior_table_layout() as outer_default,
  ):
    assert _stage._PAIR_ENTRY_COST == 1
    by_rows = _stage._prior_tables_by_rows(**shape)
  assert cheap == outer_default == [by_rows]
  assert _stage._PAIR_ENTRY_COST == default
  with panda.prior_table_layout(10**6) as dear:
    _stage._prior_tables_by_rows(**shape)
  w = 10**6  # the closed form of the rule at that cost
  p, s_, r, c, k, kn = shape.values()
  assert dear == [w * p * k + 2 * s_ * c * kn < w * p * c + 2 * r * c * k]
