"""Training: one compile for many runs (no recompilation across epochs, splits or sweep points)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np

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
  # model_fn is called once when the init program is traced and once when the epoch chunk is
  # traced (for the module structure); a third call would mean a recompilation.
  mf = chex.assert_max_traces(
    lambda rngs: panda.make_model(
      "hgnn", None, in_features=4, num_classes=2, hidden=4, dropout=0.0, rngs=rngs
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
