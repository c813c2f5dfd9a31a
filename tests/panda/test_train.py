"""Training: one compile for many runs (no recompilation across epochs, splits
or sweep points)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda


def test_trainer_compiles_once_and_learns():
  d = hg.as_undirected(
    hg.make_synthetic(
      0,
      num_classes=2,
      nodes_per_class=15,
      n_intra=6,
      n_inter=1,
      features="gaussian",
      feature_dim=4,
      num_splits=2,
    )
  )
  chex.clear_trace_counter()
  # model_fn is called once when the init program is traced and once when the
  # epoch chunk is traced (for the module structure); a third call would mean a
  # recompilation.
  mf = chex.assert_max_traces(
    lambda rngs: panda.make_model(
      "hgnn",
      None,
      in_features=4,
      num_classes=2,
      hidden=4,
      dropout=0.0,
      rngs=rngs,
    ),
    n=2,
  )
  run = panda.make_trainer(mf, 25, chunk_size=5)
  args = lambda lr, s: (
    d,
    jax.random.split(jax.random.key(s), 2),
    jnp.array([lr, lr]),
    jnp.array([0.0, 5e-4]),
    jnp.array([0, 1]),
  )
  h1 = run(*args(1e-2, 0))
  h2 = run(*args(3e-2, 1))
  assert h1["val_acc"].shape == (2, 25)
  loss = np.asarray(h2["loss"])
  assert np.all(loss[:, -1] < loss[:, 0])
  va, te, ep = panda.best_val_test(jax.tree.map(np.asarray, h2))
  assert np.all(va >= np.asarray(h2["val_acc"])[:, -1]) and te.shape == (2,)


def test_traced_dropout_and_lambdas_act_as_the_built_values():
  """A model built with nominal values, given traced ones, computes as one built
  with them."""
  d = hg.as_undirected(
    hg.make_synthetic(
      0, num_classes=3, nodes_per_class=10, n_intra=6, n_inter=3, num_splits=2
    )
  )

  def build(dropout, lam0, lam1):
    return panda.make_model(
      "phenomnn",
      panda.PandaConfig(heads=2),  # feature, classifier and attention dropout
      in_features=d.x.shape[1],
      num_classes=d.num_classes,
      hidden=4,
      num_steps=1,
      dropout=dropout,
      lam0=lam0,
      lam1=lam1,
      rngs=nnx.Rngs(params=0),
    )

  gd_b, params, rest_b = nnx.split(build(0.3, 10.0, 0.1), nnx.Param, ...)
  gd_n, _, rest_n = nnx.split(build(0.5, 1.0, 1.0), nnx.Param, ...)
  key = jax.random.key(1)

  @jax.jit
  def forward(hp):
    built = nnx.merge(gd_b, params, rest_b)(
      d, deterministic=False, rngs=nnx.Rngs(dropout=key)
    )
    m = panda.with_hparams(nnx.merge(gd_n, params, rest_n), hp)
    return built, m(d, deterministic=False, rngs=nnx.Rngs(dropout=key))

  built, traced = forward(dict(dropout=0.3, lam0=10.0, lam1=0.1))
  np.testing.assert_allclose(traced, built, rtol=1e-5, atol=1e-6)
  # the nominal values: not the same
  _, other = forward(dict(dropout=0.5, lam0=1.0, lam1=1.0))
  assert np.abs(np.asarray(other) - np.asarray(built)).max() > 1e-3
  with pytest.raises(ValueError, match="lam0"):
    m = panda.make_model(
      "hgnn", None, in_features=3, num_classes=2, rngs=nnx.Rngs(params=0)
    )
    panda.with_hparams(m, {"lam0": 1.0})
  with pytest.raises(ValueError, match="unknown traced hyperparameters"):
    panda.make_trainer(lambda rngs: m, 2)(
      d, None, None, None, None, heads=jnp.ones(2)
    )
