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
  return {
    "images": np.asarray(b.images),
    "depth": np.asarray(b.depth),
    "points": np.asarray(b.points),
    "valid": np.asarray(b.valid),
    "extrinsics": np.asarray(b.extrinsics),
    "intrinsics": np.asarray(b.intrinsics),
    "pose_enc": pose_enc,
  }


def render_set(seed, n, cfg, chunk=16) -> dict:
  """Render ``n`` scenes in equal chunks (one compilation; the last chunk is rendered whole).

  ``cfg``: ``num_views``, ``image_size``, ``split`` and optionally ``fog`` (the fog density of
  :func:`jaxpapers.flashssm3d.render_scenes`; absent or None: the split's own).
  """
  fog = cfg.get("fog", None)
  parts = []
  for start in range(0, n, chunk):
    b = fs.render_scenes(
      seed + start, chunk, cfg.num_views, image_size=cfg.image_size, split=cfg.split, fog=fog
    )
    parts.append(_np_batch(b))
  return {k: np.concatenate([p[k] for p in parts])[:n] for k in parts[0]}


def load_data(config):
  """``(pool, test, pool_names)``: the training pool and the test scenes as dicts of arrays.

  ``data.source='procedural'`` renders them (disjoint seeds); ``'disk'`` reads the scene folders
  ``<data.data_dir>/train`` and ``<data.data_dir>/test`` (format:
  :func:`jaxpapers.flashssm3d.load_multiview_scenes`), whose names then match cached teacher
  predictions. The student's subset is the first ``student_fraction`` of the pool.
  """
  dc = config.data
  source = dc.get("source", "procedural")
  core.validate_choice(source, name="data.source", allowed=("procedural", "disk"))
  if source == "disk":
    root = pathlib.Path(dc.data_dir)
    kw = dict(num_views=dc.num_views, image_size=dc.image_size)
    pool, names = fs.load_multiview_scenes(root / "train", **kw)
    test, _ = fs.load_multiview_scenes(root / "test", **kw)
    return _np_batch(pool), _np_batch(test), names
  pool = render_set(10_000 + 1000 * config.seed, dc.pool_scenes, dc, chunk=dc.render_chunk)
  test = render_set(900_000 + 1000 * config.seed, dc.test_scenes, dc, chunk=dc.render_chunk)
  return pool, test, None


PIXEL_NORMS = ("none", "pool")


def pixel_norm(config, images) -> dict:
  """The models' input normalisation from ``config.data.pixel_norm`` (keyword arguments).

  ``'pool'``: the per-channel mean and standard deviation of ``images`` (the training pool),
  :func:`jaxpapers.flashssm3d.pixel_statistics`; ``'none'`` (the default when the field is
  absent): raw pixels in [0, 1], as the experiment ran before the field existed.

  Returns:
    ``{}`` or ``{"pixel_mean": (r, g, b), "pixel_std": (r, g, b)}`` for the model configs.
  """
  kind = config.data.get("pixel_norm", "none")
  core.validate_choice(kind, name="data.pixel_norm", allowed=PIXEL_NORMS)
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
  if not config.get("shard_batch", False):
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
