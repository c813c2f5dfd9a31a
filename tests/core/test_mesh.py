"""make_mesh: the all-devices and the subset mesh are the same kind of mesh."""

import jax
import numpy as np
import pytest
from jax.sharding import AxisType

from jaxpapers import core


def test_all_devices_and_subset_have_the_same_axis_types(num_devices):
  full = core.make_mesh()
  part = core.make_mesh(2)
  assert full.axis_types == part.axis_types == (AxisType.Explicit,)
  # the same kind of object jax.make_mesh gives, over the requested devices
  ref = jax.make_mesh((2,), ("data",), devices=jax.devices()[:2])
  assert part.axis_types == ref.axis_types and part.axis_names == ref.axis_names
  assert dict(full.shape) == {"data": num_devices} and dict(part.shape) == {
    "data": 2
  }
  assert list(part.devices.flat) == jax.devices()[:2]


def test_axis_type_is_selectable_and_validated():
  assert core.make_mesh(4, axis_type=AxisType.Auto).axis_types == (
    AxisType.Auto,
  )
  assert core.make_mesh(axis_type=AxisType.Auto).axis_types == (AxisType.Auto,)
  with pytest.raises(TypeError, match="axis_type"):
    core.make_mesh(2, axis_type="explicit")
  for bad in (0, True, 2.0, 99):
    with pytest.raises(ValueError, match="num_devices"):
      core.make_mesh(bad)


@pytest.mark.parametrize("n", [2, None])
def test_sharded_sum_is_the_same_on_both_meshes(n):
  mesh = core.make_mesh(n)
  x = np.arange(16, dtype=np.float32).reshape(8, 2)
  xs = core.shard_batch({"x": x}, mesh)["x"]
  total = jax.jit(lambda a: (a * a).sum(0))(xs)
  np.testing.assert_allclose(
    np.asarray(total), (x.astype(np.float64) ** 2).sum(0)
  )
  assert xs.sharding.mesh.axis_types == (AxisType.Explicit,)
