"""Device mesh helpers for data parallelism with ``jax.jit`` +
``NamedSharding``.

The same code path runs on one CPU, on 8 fake CPU devices (tests), on a GPU or
TPU host, and on several hosts after ``jax.distributed.initialize()``: the mesh
spans ``jax.devices()`` (all processes' devices), the batch's leading axis is
sharded over the ``data`` axis, and parameters are replicated.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DATA_AXIS = "data"


def make_mesh(
  num_devices: int | None = None,
  axis_name: str = DATA_AXIS,
  *,
  axis_type: AxisType = AxisType.Explicit,
) -> Mesh:
  """A 1-D mesh over the first ``num_devices`` devices (all by default).

  Both the all-devices and the subset mesh are built by ``jax.make_mesh`` with
  the same axis type, so code written against one behaves the same on the other.

  Args:
    num_devices: devices on the axis, in ``[1, jax.device_count()]``; ``None``
      for all (every process's devices after ``jax.distributed.initialize``).
    axis_name: the mesh axis name.
    axis_type: ``jax.sharding.AxisType.Explicit`` (the default, as
      ``jax.make_mesh``'s: shardings are part of array types) or ``Auto``
      (the compiler propagates shardings).

  Returns:
    A ``jax.sharding.Mesh`` of shape ``{axis_name: num_devices}``.

  Raises:
    ValueError: if ``num_devices`` is not an int in range.
    TypeError: if ``axis_type`` is not an ``AxisType``.
  """
  available = jax.device_count()
  if num_devices is None:
    num_devices = available
  if (
    not isinstance(num_devices, int)
    or isinstance(num_devices, bool)
    or num_devices < 1
    or num_devices > available
  ):
    raise ValueError(
      f"num_devices must be an int in [1, {available}] (devices available), "
      f"got {num_devices!r}"
    )
  if not isinstance(axis_type, AxisType):
    raise TypeError(
      f"axis_type must be a jax.sharding.AxisType, got {axis_type!r}"
    )
  devices = jax.devices()[:num_devices]
  try:
    return jax.make_mesh(
      (num_devices,), (axis_name,), (axis_type,), devices=devices
    )
  except (ValueError, NotImplementedError, AssertionError):
    # A device subset that does not tile the physical topology (e.g. 3 of 8
    # TPU chips): same mesh kind, devices in their listed order.
    return Mesh(np.asarray(devices), (axis_name,), axis_types=(axis_type,))


def data_sharding(mesh: Mesh) -> NamedSharding:
  """Shards the leading axis over the mesh's first axis.

  Args:
    mesh: the device mesh.

  Returns:
    a ``NamedSharding`` with ``PartitionSpec(mesh.axis_names[0])``.
  """
  return NamedSharding(mesh, P(mesh.axis_names[0]))


def replicated_sharding(mesh: Mesh) -> NamedSharding:
  """Replicates over the whole mesh.

  Args:
    mesh: the device mesh.

  Returns:
    a ``NamedSharding`` with an empty ``PartitionSpec``.
  """
  return NamedSharding(mesh, P())


def shard_batch(batch: Any, mesh: Mesh) -> Any:
  """Places every leaf of ``batch`` with its leading axis sharded over the mesh.

  Args:
    batch: a pytree of arrays, each ``[B, ...]`` with ``B`` divisible by the
      data axis' size.
    mesh: the device mesh; its first axis is the data axis.

  Returns:
    ``batch`` with every leaf a ``jax.Array`` sharded by :func:`data_sharding`.

  Raises:
    ValueError: if a leaf is a scalar or its leading size is not divisible by
      the number of devices on the data axis.
  """
  n = mesh.shape[mesh.axis_names[0]]
  sharding = data_sharding(mesh)

  def put(path, x):
    x = np.asarray(x) if not isinstance(x, jax.Array) else x
    if x.ndim == 0 or x.shape[0] % n:
      raise ValueError(
        f"batch leaf {jax.tree_util.keystr(path)} has shape {x.shape}; "
        f"its leading (batch) axis must be divisible by the {n} devices of "
        "the data axis"
      )
    return jax.device_put(x, sharding)

  return jax.tree_util.tree_map_with_path(put, batch)


def replicate(tree: Any, mesh: Mesh) -> Any:
  """Replicates every leaf of ``tree`` over the mesh.

  Args:
    tree: a pytree of arrays.
    mesh: the device mesh.

  Returns:
    ``tree`` with every leaf a ``jax.Array`` replicated on every device of
    ``mesh``.
  """
  return jax.device_put(tree, replicated_sharding(mesh))
