"""Input pipeline of the FlashSSM-3D experiment: scenes as NumPy arrays, targets and batches.

Procedural renders (disjoint seeds for the pool and the test scenes) or scene folders on disk
(:func:`jaxpapers.flashssm3d.load_multiview_scenes`), the models' input normalisation, ground
truth as distillation targets, and seeded batches (optionally sharded over the batch axis).
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import core
from jaxpapers import flashssm3d as fs

# one compiled program instead of dozens of eager ops per rendered chunk
_pose_encoding = jax.jit(fs.cameras_to_pose_encoding, static_argnums=2)


def _np_batch(b: fs.SceneBatch) -> dict:
  pose_enc = np.asarray(_pose_encoding(b.extrinsics, b.intrinsics, tuple(b.images.shape[2:4])))
  if not np.isfinite(pose_enc).all():  # under jit a non-rotation gives NaN instead of raising
    raise ValueError("rendered cameras gave a non-finite pose encoding (not rotations?)")
  keys = ("images", "depth", "points", "valid", "extrinsics", "intrinsics")
  return {**{k: np.asarray(getattr(b, k)) for k in keys}, "pose_enc": pose_enc}


def render_set(seed, n, cfg, chunk=16, num_views=None) -> dict:
  """Render ``n`` scenes in equal chunks (one compilation; the last chunk is rendered whole).

  ``cfg``: the data config (``num_views`` unless ``num_views`` is given, ``image_size``,
  ``split`` and ``fog``, the fog density of :func:`jaxpapers.flashssm3d.render_scenes`).
  """
  views, kw = num_views or cfg.num_views, dict(image_size=cfg.image_size, split=cfg.split)
  parts = [
    _np_batch(fs.render_scenes(seed + start, chunk, views, fog=cfg.fog, **kw))
    for start in range(0, n, chunk)
  ]
  return {k: np.concatenate([p[k] for p in parts])[:n] for k in parts[0]}


def load_data(config):
  """``(pool, test, pool_names)``: the training pool and the test scenes as dicts of arrays.

  ``data.source='procedural'`` renders them (disjoint seeds); ``'disk'`` reads the scene folders
  ``<data.data_dir>/train`` and ``<data.data_dir>/test`` (format:
  :func:`jaxpapers.flashssm3d.load_multiview_scenes`), whose names then match cached teacher
  predictions. The student's subset is the first ``student_fraction`` of the pool.
  """
  dc = config.data
  core.validate_choice(dc.source, name="data.source", allowed=("procedural", "disk"))
  if dc.source == "disk":
    root = pathlib.Path(dc.data_dir)
    kw = dict(num_views=dc.num_views, image_size=dc.image_size)
    pool, names = fs.load_multiview_scenes(root / "train", **kw)
    test, _ = fs.load_multiview_scenes(root / "test", **kw)
    return _np_batch(pool), _np_batch(test), names
  pool = render_set(10_000 + 1000 * config.seed, dc.pool_scenes, dc, chunk=dc.render_chunk)
  test = render_set(900_000 + 1000 * config.seed, dc.test_scenes, dc, chunk=dc.render_chunk)
  return pool, test, None


def pixel_norm(config, images) -> dict:
  """The models' input normalisation from ``config.data.pixel_norm`` (keyword arguments).

  ``'pool'``: the per-channel mean and standard deviation of ``images`` (the training pool),
  :func:`jaxpapers.flashssm3d.pixel_statistics`; ``'none'``: raw pixels in [0, 1].

  Returns:
    ``{}`` or ``{"pixel_mean": (r, g, b), "pixel_std": (r, g, b)}`` for the model configs.
  """
  kind = config.data.pixel_norm
  core.validate_choice(kind, name="data.pixel_norm", allowed=("none", "pool"))
  if kind == "none":
    return {}
  mean, std = fs.pixel_statistics(images)
  return {"pixel_mean": mean, "pixel_std": std}


def gt_targets(d: dict) -> fs.DistillTargets:
  ones = np.ones(d["valid"].shape, np.float32)
  return fs.DistillTargets(
    pose_enc=d["pose_enc"],
    depth=d["depth"][..., None],
    depth_conf=ones,
    points=d["points"],
    point_conf=ones,
    valid=d["valid"],
  )


def batch_sharding(config):
  """``NamedSharding`` splitting the batch axis over all devices, or None (``shard_batch`` off).

  The parameters and optimizer state stay replicated; XLA partitions every batched op (the
  models have no cross-example interaction), so this is data parallelism over a
  ``jax.make_mesh`` mesh with the gradient all-reduce inserted by the compiler.
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
      raise ValueError(f"{name}={bs} must be divisible by the {n} devices to shard the batch")
  # Auto axes: XLA propagates the batch sharding (explicit ones need an annotation per reshape)
  return core.data_sharding(core.make_mesh(axis_type=jax.sharding.AxisType.Auto))


def _put(a, sharding):
  return jnp.asarray(a) if sharding is None else jax.device_put(np.asarray(a), sharding)


def batch_fn(data_targets, n_avail, batch_size, seed, sharding=None):
  images, targets = data_targets

  def fn(step):
    idx = np.random.default_rng((seed, step)).choice(
      n_avail, batch_size, replace=n_avail < batch_size
    )
    return _put(images[idx], sharding), jax.tree.map(lambda a: _put(a[idx], sharding), targets)

  return fn
