"""Batches across hosts: each process reads only the rows its own devices hold.

On one host, :func:`jaxpapers.core.shard_batch` places a whole batch on the
mesh. On several hosts no process should read (or even hold) the global batch:
process ``p`` reads the rows its devices hold and the global array is assembled
from the processes' pieces with ``jax.make_array_from_process_local_data``::

  mesh = core.make_mesh()                       # all devices of all processes
  rows = core.process_batch_indices(global_batch_size, mesh)  # this process's rows
  batch = core.host_local_batch_to_global(dataset[rows], mesh)
  # or in one call: core.load_global_batch(lambda rows: dataset[rows], global_batch_size, mesh)

The global batch is ``B = global_batch_size`` rows, sharded over the mesh's
first (data) axis in blocks of ``B / n`` rows (``n`` devices on that axis);
device ``d`` holds rows ``[d B / n, (d + 1) B / n)``. A process's rows are the
union of its devices' blocks, listed in increasing order, which is the order
``make_array_from_process_local_data`` expects its local data in. With one
process this is the whole batch and the code path is the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding

from jaxpapers.core import mesh as mesh_lib


def _data_sharding(mesh: Mesh | NamedSharding) -> NamedSharding:
  if isinstance(mesh, NamedSharding):
    return mesh
  if isinstance(mesh, Mesh):
    return mesh_lib.data_sharding(mesh)
  raise TypeError(
    "mesh must be a jax.sharding.Mesh or NamedSharding, "
    f"got {type(mesh).__name__}"
  )


def _data_axis_size(sharding: NamedSharding) -> int:
  spec = sharding.spec[0] if len(sharding.spec) else None
  if spec is None:
    return 1
  axes = spec if isinstance(spec, tuple) else (spec,)
  return int(np.prod([sharding.mesh.shape[a] for a in axes]))


def process_batch_indices(
  global_batch_size: int, mesh: Mesh | NamedSharding
) -> np.ndarray:
  """The rows of a global batch that this process's devices hold.

  Args:
    global_batch_size: ``B``, the batch size over all processes.
    mesh: the mesh (its first axis shards the batch, as
      :func:`jaxpapers.core.data_sharding`) or the batch's ``NamedSharding``.

  Returns:
    int64 array of shape ``[B_local]``: the global row indices in increasing
    order (``B_local = B * local devices / devices`` on a data-parallel mesh).
    Read exactly these rows and pass them to :func:`host_local_batch_to_global`.

  Raises:
    ValueError: if ``global_batch_size`` is not a positive int divisible by the
      number of devices on the data axis.
    TypeError: if ``mesh`` is neither a ``Mesh`` nor a ``NamedSharding``.
  """
  sharding = _data_sharding(mesh)
  n = _data_axis_size(sharding)
  if (
    not isinstance(global_batch_size, (int, np.integer))
    or isinstance(global_batch_size, bool)
    or global_batch_size < 1
    or global_batch_size % n
  ):
    raise ValueError(
      f"global_batch_size must be a positive int divisible by the {n} devices "
      f"of the data axis, got {global_batch_size!r}"
    )
  rows = set()
  for index in sharding.addressable_devices_indices_map(
    (int(global_batch_size),)
  ).values():
    if index is None:  # a NamedSharding gives every device its slice
      raise RuntimeError(f"{sharding} gives a device no slice of the batch")
    rows.update(range(*index[0].indices(int(global_batch_size))))
  return np.asarray(sorted(rows), dtype=np.int64)


def process_batch_slice(
  global_batch_size: int, mesh: Mesh | NamedSharding
) -> slice:
  """:func:`process_batch_indices` as a ``slice``, for readers that take a
  range.

  Args:
    global_batch_size: ``B``, the batch size over all processes.
    mesh: the mesh (its first axis shards the batch) or the batch's
      ``NamedSharding``.

  Returns:
    ``slice(start, stop)`` of the global rows this process holds.

  Raises:
    ValueError: as :func:`process_batch_indices`, or if this process's rows are
      not one contiguous range (a mesh whose device order interleaves
      processes); use the indices then.
  """
  rows = process_batch_indices(global_batch_size, mesh)
  start, stop = int(rows[0]), int(rows[-1]) + 1
  if stop - start != len(rows):
    raise ValueError(
      "this process's rows of the batch are not contiguous on this mesh; "
      "read them with process_batch_indices"
    )
  return slice(start, stop)


def host_local_batch_to_global(
  local_batch: Any,
  mesh: Mesh | NamedSharding,
  global_batch_size: int | None = None,
) -> Any:
  """Assembles each process's rows into one global batch sharded over the mesh.

  Args:
    local_batch: a pytree of arrays whose leading axis holds this process's
      rows, in the order of :func:`process_batch_indices` (``[B_local, ...]``).
      No process passes (or needs) the global batch.
    mesh: the mesh or the batch's ``NamedSharding``.
    global_batch_size: ``B``; default: ``B_local`` times the number of
      processes' shares (``devices on the data axis / local devices on it``).

  Returns:
    The same pytree of global ``jax.Array``s of shape ``[B, ...]``, sharded
    over the data axis; each process's devices hold its own rows.

  Raises:
    ValueError: if a leaf is a scalar or its leading size is not this
      process's number of rows.
  """
  sharding = _data_sharding(mesh)
  leaves = jax.tree.leaves(local_batch)
  if not leaves:
    return local_batch
  if global_batch_size is None:
    n = _data_axis_size(sharding)
    # data-axis blocks on this process
    local_blocks = len(process_batch_indices(n, sharding))
    first = np.shape(leaves[0])
    if not first:
      raise ValueError(
        "local_batch leaves must have a leading (batch) axis, got a scalar"
      )
    global_batch_size = int(first[0]) * n // local_blocks
  expected = len(process_batch_indices(global_batch_size, sharding))

  def put(path, x):
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
      raise ValueError(
        f"local_batch leaf {jax.tree_util.keystr(path)} is already a global "
        "array"
      )
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[0] != expected:
      raise ValueError(
        f"local_batch leaf {jax.tree_util.keystr(path)} has shape {x.shape}; "
        f"its leading axis must hold this process's {expected} rows of the "
        f"global batch of {global_batch_size}"
      )
    return jax.make_array_from_process_local_data(
      sharding, x, (global_batch_size,) + x.shape[1:]
    )

  return jax.tree_util.tree_map_with_path(put, local_batch)


def load_global_batch(
  read_rows: Callable[[np.ndarray], Any],
  global_batch_size: int,
  mesh: Mesh | NamedSharding,
) -> Any:
  """Reads this process's rows with ``read_rows`` and assembles the global
  batch.

  Args:
    read_rows: ``rows -> local batch``: given the global row indices of
      :func:`process_batch_indices` (int64 ``[B_local]``), returns a pytree of
      arrays with those rows on the leading axis (``dataset[rows]`` for numpy
      arrays and memory maps). It is only ever asked for this process's rows.
    global_batch_size: ``B``.
    mesh: the mesh or the batch's ``NamedSharding``.

  Returns:
    The global batch, as :func:`host_local_batch_to_global`.
  """
  rows = process_batch_indices(global_batch_size, mesh)
  return host_local_batch_to_global(read_rows(rows), mesh, global_batch_size)
