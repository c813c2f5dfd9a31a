"""TFDS builder for the procedural FlashSSM-3D scenes, usable offline without
TensorFlow.

The builder writes ``array_record`` files and is read with ``tfds.data_source``
(random access, NumPy records, no TensorFlow import). Train and test use
disjoint seeds.

Example::

    from jaxpapers.flashssm3d import build_scene_dataset
    sources = build_scene_dataset("/tmp/fs_data", num_train=64, num_test=16, num_views=4)
    ex = sources["train"][0]  # dict of numpy arrays: images [S,H,W,3] uint8, depth, points, ...
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any, cast

import jax
import numpy as np
import tensorflow_datasets as tfds

from jaxpapers.flashssm3d import _data

__all__ = [
  "FlashSsm3dScenes",
  "SceneBuilderConfig",
  "build_scene_dataset",
  "batch_from_records",
]

_TRAIN_SEED = 1_000_003
_TEST_SEED = 2_000_003


@dataclasses.dataclass
class SceneBuilderConfig(tfds.core.BuilderConfig):
  num_views: int = 4
  image_size: int = 32
  split_kind: str = "orbit_easy"
  num_train: int = 64
  num_test: int = 16


class FlashSsm3dScenes(tfds.core.GeneratorBasedBuilder):
  """Procedural multi-view scenes (RGB, depth, points, valid mask, cameras) — a
  synthetic proxy."""

  VERSION = tfds.core.Version("1.0.0")
  # No checksums file and no source-code lookup: the data is generated, never
  # downloaded. (This also avoids TFDS's optional ``importlib_resources`` import
  # on that path.)
  code_path = None
  BUILDER_CONFIGS = [SceneBuilderConfig(name="default")]

  @property
  def _config(self) -> SceneBuilderConfig:
    # Always set: BUILDER_CONFIGS gives a default and build_scene_dataset passes
    # its own.
    return cast(SceneBuilderConfig, self.builder_config)

  def _info(self):
    c = self._config
    S, H = c.num_views, c.image_size
    T = tfds.features.Tensor
    return self.dataset_info_from_configs(
      features=tfds.features.FeaturesDict(
        {
          "images": T(shape=(S, H, H, 3), dtype=np.uint8),
          "depth": T(shape=(S, H, H), dtype=np.float32),
          "points": T(shape=(S, H, H, 3), dtype=np.float32),
          "valid": T(shape=(S, H, H), dtype=np.bool_),
          "extrinsics": T(shape=(S, 3, 4), dtype=np.float32),
          "intrinsics": T(shape=(S, 3, 3), dtype=np.float32),
        }
      ),
      description=(
        "Seeded procedural rooms with primitives, normalised like VGGT targets."
      ),
    )

  def _split_generators(self, dl_manager):
    c = self._config
    return {
      "train": self._generate_examples(_TRAIN_SEED, c.num_train),
      "test": self._generate_examples(_TEST_SEED, c.num_test),
    }

  def _generate_examples(self, seed, n):
    c = self._config
    chunk = 16
    for start in range(0, n, chunk):
      m = min(chunk, n - start)
      b = _data.render_scenes(
        seed + start,
        m,
        c.num_views,
        image_size=c.image_size,
        split=c.split_kind,
      )
      b = jax.tree.map(np.asarray, b)
      for i in range(m):
        yield (
          start + i,
          {
            "images": np.round(b.images[i] * 255).astype(np.uint8),
            "depth": b.depth[i],
            "points": b.points[i],
            "valid": b.valid[i],
            "extrinsics": b.extrinsics[i],
            "intrinsics": b.intrinsics[i],
          },
        )


def build_scene_dataset(
  data_dir: str | os.PathLike,
  *,
  num_train: int = 64,
  num_test: int = 16,
  num_views: int = 4,
  image_size: int = 32,
  split: str = "orbit_easy",
) -> dict[str, Any]:
  """Generate (once) and open the dataset; returns ``{'train': source, 'test':
  source}``.

  Each source supports ``len()`` and random access returning dicts of NumPy
  arrays.
  """
  if split not in _data.SPLITS:
    raise ValueError(f"split must be one of {_data.SPLITS}, got {split!r}")
  for k, v in (
    ("num_train", num_train),
    ("num_test", num_test),
    ("num_views", num_views),
    ("image_size", image_size),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{k} must be an int >= 1, got {v!r}")
  name = f"{split}_v{num_views}_s{image_size}_n{num_train}_{num_test}"
  cfg = SceneBuilderConfig(
    name=name,
    num_views=num_views,
    image_size=image_size,
    split_kind=split,
    num_train=num_train,
    num_test=num_test,
  )
  builder = FlashSsm3dScenes(
    config=cfg, data_dir=str(data_dir), file_format=("array_record")
  )
  builder.download_and_prepare()
  return {
    k: builder.as_data_source(split=k)  # pyright: ignore[reportCallIssue]  # logging decorator hides the signature
    for k in ("train", "test")
  }


def batch_from_records(
  records: Iterable[Mapping[str, np.ndarray]],
) -> _data.SceneBatch:
  """Stack records from a data source into a :class:`SceneBatch` (images back to
  [0, 1])."""
  records = list(records)
  if not records:
    raise ValueError("records must be a non-empty sequence of dataset records")
  keys = ("images", "depth", "points", "valid", "extrinsics", "intrinsics")
  for r in records:
    missing = [k for k in keys if k not in r]
    if missing:
      raise ValueError(
        f"each record needs the keys {keys}; a record lacks {missing}"
      )
  st = lambda k: np.stack([r[k] for r in records])
  return _data.SceneBatch(
    images=st("images").astype(np.float32) / 255.0,
    depth=st("depth"),
    points=st("points"),
    valid=st("valid"),
    extrinsics=st("extrinsics"),
    intrinsics=st("intrinsics"),
    scale=np.ones(len(records), np.float32),
  )
