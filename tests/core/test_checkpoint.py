"""Checkpointer: save/restore against abstract targets, async saves, sharding kept."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpapers import core


def test_roundtrip_with_namedtuple_states_and_dtypes(tmp_path):
  params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3, jnp.bfloat16)}
  tree = {"step": jnp.int32(3), "params": params, "opt": optax.adam(1e-3).init(params)}
  with core.Checkpointer(tmp_path / "ck") as ck:
    assert ck.latest_step() is None
    assert ck.save(3, tree)
  with core.Checkpointer(tmp_path / "ck") as ck:
    assert ck.latest_step() == 3
    zeros = jax.tree.map(jnp.zeros_like, tree)
    restored = ck.restore(None, zeros)
  assert type(restored["opt"][0]).__name__ == "ScaleByAdamState"
  assert restored["params"]["b"].dtype == jnp.bfloat16
  for a, b in zip(jax.tree.leaves(tree), jax.tree.leaves(restored), strict=True):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_restore_keeps_target_sharding(tmp_path):
  mesh = core.make_mesh()
  x = jax.device_put(jnp.arange(16.0).reshape(8, 2), core.data_sharding(mesh))
  with core.Checkpointer(tmp_path) as ck:
    ck.save(1, {"x": x})
  with core.Checkpointer(tmp_path) as ck:
    out = ck.restore(1, {"x": x})
  assert out["x"].sharding.is_equivalent_to(x.sharding, 2)
  np.testing.assert_array_equal(np.asarray(out["x"]), np.asarray(x))


def test_max_to_keep_and_errors(tmp_path):
  with core.Checkpointer(tmp_path, max_to_keep=2) as ck:
    for s in (1, 2, 3):
      ck.save(s, {"a": jnp.float32(s)})
    ck.wait()
    assert ck.all_steps() == [2, 3]
  with pytest.raises(ValueError, match="max_to_keep"):
    core.Checkpointer(tmp_path / "x", max_to_keep=0)
  with pytest.raises(FileNotFoundError, match="no checkpoint"):
    with core.Checkpointer(tmp_path / "empty") as ck:
      ck.restore(None, {"a": jnp.float32(0)})
