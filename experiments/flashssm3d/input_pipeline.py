"""Input pipeline of the FlashSSM-3D experiment: scenes as NumPy arrays, and the
batch sharding.

Procedural renders (disjoint seeds for the pool and the test scenes) or scene
folders on disk (:func:`jaxpapers.flashssm3d.load_multiview_scenes`), the
models' input normalisation, and the sharding of the batches
(:func:`jaxpapers.flashssm3d.sample_batches` draws them).
"""

from __future__ import annotations

import pathlib

import jax

from jaxpapers import core
from jaxpapers import flashssm3d as fs


def render_set(seed, n, cfg, chunk=16, num_views=None) -> dict:
  """``n`` procedural scenes of the data config ``cfg`` (its ``num_views``
  unless ``num_views`` is given, ``image_size``, ``split``, ``fog``):
  :func:`jaxpapers.flashssm3d.render_scene_arrays`."""
  views, kw = (
    num_views or cfg.num_views,
    dict(image_size=cfg.image_size, split=cfg.split),
  )
  return fs.render_scene_arrays(seed, n, views, fog=cfg.fog, chunk=chunk, **kw)


def load_data(config):
  """``(pool, test, pool_names)``: the training pool and the test scenes as
  dicts of arrays.

  ``data.source='procedural'`` renders them (disjoint seeds); ``'disk'`` reads
  the scene folders ``<data.data_dir>/train`` and ``<data.data_dir>/test``
  (format: :func:`jaxpapers.flashssm3d.load_multiview_scenes`), whose names then
  match cached teacher predictions. The student's subset is the first
  ``student_fraction`` of the pool.
  """
  dc = config.data
  core.validate_choice(
    dc.source, name="data.source", allowed=("procedural", "disk")
  )
  if dc.source == "disk":
    root = pathlib.Path(dc.data_dir)
    kw = dict(num_views=dc.num_views, image_size=dc.image_size)
    pool, names = fs.load_multiview_scenes(root / "train", **kw)
    test, _ = fs.load_multiview_scenes(root / "test", **kw)
    return fs.scene_arrays(pool), fs.scene_arrays(test), names
  pool = render_set(
    10_000 + 1000 * config.seed, dc.pool_scenes, dc, chunk=dc.render_chunk
  )
  test = render_set(
    900_000 + 1000 * config.seed, dc.test_scenes, dc, chunk=dc.render_chunk
  )
  return pool, test, None


def pixel_norm(config, images) -> dict:
  """The models' input normalisation from ``config.data.pixel_norm`` (keyword
  arguments).

  ``'pool'``: the per-channel mean and standard deviation of ``images`` (the
  training pool), :func:`jaxpapers.flashssm3d.pixel_statistics`; ``'none'``: raw
  pixels in [0, 1].

  Returns:
    ``{}`` or ``{"pixel_mean": (r, g, b), "pixel_std": (r, g, b)}`` for the
    model configs.
  """
  kind = config.data.pixel_norm
  core.validate_choice(kind, name="data.pixel_norm", allowed=("none", "pool"))
  if kind == "none":
    return {}
  mean, std = fs.pixel_statistics(images)
  return {"pixel_mean": mean, "pixel_std": std}


def batch_sharding(config):
  """``NamedSharding`` splitting the batch axis over all devices, or None
  (``shard_batch`` off).

  The parameters and optimizer state stay replicated; XLA partitions every
  batched op (the models have no cross-example interaction), so this is data
  parallelism over a ``jax.make_mesh`` mesh with the gradient all-reduce
  inserted by the compiler.
  """
  if not config.shard_batch:
    return None
  n = jax.device_count()
  for name, bs in (
    ("teacher.batch_size", config.teacher.batch_size),
    ("student.batch_size", config.student.batch_size),
    ("data.eval_batch", config.data.eval_batch),
  ):
    if bs % n:
      raise ValueError(
        f"{name}={bs} must be divisible by the {n} devices to shard the batch"
      )
  # Auto axes: XLA propagates the batch sharding (explicit ones need an
  # annotation per reshape)
  return core.data_sharding(
    core.make_mesh(axis_type=jax.sharding.AxisType.Auto)
  )
