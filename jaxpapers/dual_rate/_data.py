"""Offline image data: sklearn's bundled digits and a procedurally generated
shapes set.

Both come as plain numpy sources (:func:`digits`, :func:`shapes`) and as TFDS
builders (:class:`DigitsImages`, :class:`ShapesImages`) written in the
array_record format, which TFDS builds and reads through ``tfds.data_source``
without TensorFlow. Nothing is downloaded. Images are float32 [N, H, W, 1] in
[-1, 1]; labels int32 [N].
"""

from __future__ import annotations

import functools
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
  import tensorflow_datasets as tfds

DATASETS = ("digits", "shapes")
SHAPE_CLASSES = ("disc", "square", "triangle", "cross")


def digits(*, num_test: int = 500, seed: int = 0) -> dict[str, np.ndarray]:
  """sklearn ``load_digits`` (1797 images of 8x8, values 0..16) scaled to
  [-1, 1], split in a fixed random train/test split.

  Args:
    num_test: size of the test split, an int in [1, 1797).
    seed: seed of the split's permutation.

  Returns:
    ``{'train_images': [1797 - num_test, 8, 8, 1] float32, 'train_labels':
    [1797 - num_test] int32, 'test_images': [num_test, 8, 8, 1] float32,
    'test_labels': [num_test] int32}``.
  """
  if (
    isinstance(num_test, bool)
    or not isinstance(num_test, (int, np.integer))
    or not 1 <= num_test < 1797
  ):
    raise ValueError(f"num_test must be an int in [1, 1797), got {num_test!r}")
  from sklearn.datasets import load_digits
  from sklearn.utils import Bunch

  d = cast(Bunch, load_digits())  # a Bunch unless return_X_y or as_frame is set
  x = (d.images.astype(np.float32) / 8.0 - 1.0)[..., None]
  y = d.target.astype(np.int32)
  perm = np.random.default_rng(seed).permutation(x.shape[0])
  te, tr = perm[:num_test], perm[num_test:]
  return {
    "train_images": x[tr],
    "train_labels": y[tr],
    "test_images": x[te],
    "test_labels": y[te],
  }


def render_shapes(
  labels: np.ndarray, *, image_size: int = 16, seed: int = 0
) -> np.ndarray:
  """Render one anti-aliased shape per label (0 disc, 1 square, 2 triangle, 3
  cross) with random centre, size, rotation and intensity on a dark background.

  Args:
    labels: [N] int shape classes in [0, 4).
    image_size: side S of the square images, an int >= 4.
    seed: seed of the random placement and intensity.

  Returns:
    [N, S, S, 1] float32 images in [-1, 1].
  """
  labels = np.asarray(labels)
  if labels.ndim != 1 or not (
    np.issubdtype(labels.dtype, np.integer) or labels.size == 0
  ):
    raise ValueError(
      f"labels must be a 1-D integer array, got {labels.dtype}{labels.shape}"
    )
  if labels.size and (labels.min() < 0 or labels.max() >= len(SHAPE_CLASSES)):
    raise ValueError(
      f"labels must lie in [0, {len(SHAPE_CLASSES)}) ({SHAPE_CLASSES}), "
      f"got range [{labels.min()}, {labels.max()}]"
    )
  if (
    isinstance(image_size, bool)
    or not isinstance(image_size, (int, np.integer))
    or image_size < 4
  ):
    raise ValueError(f"image_size must be an int >= 4, got {image_size!r}")
  rng = np.random.default_rng(seed)
  n, s = labels.shape[0], image_size
  yy, xx = np.meshgrid(np.arange(s) + 0.5, np.arange(s) + 0.5, indexing="ij")
  out = np.empty((n, s, s), np.float32)
  for i in range(n):
    r = rng.uniform(0.22, 0.36) * s
    cx, cy = rng.uniform(r, s - r, size=2)
    th = rng.uniform(0, 2 * np.pi)
    u = (xx - cx) * np.cos(th) + (yy - cy) * np.sin(th)
    v = -(xx - cx) * np.sin(th) + (yy - cy) * np.cos(th)
    c = int(labels[i])
    if c == 0:
      sd = np.sqrt(u**2 + v**2) - r
    elif c == 1:
      sd = np.maximum(np.abs(u), np.abs(v)) - 0.8 * r
    elif c == 2:
      ang = np.arctan2(v, u)
      k = np.cos(np.pi / 3) / np.cos((ang % (2 * np.pi / 3)) - np.pi / 3)
      sd = np.sqrt(u**2 + v**2) - r * k
    else:
      w = 0.3 * r
      sd = np.minimum(
        np.maximum(np.abs(u) - r, np.abs(v) - w),
        np.maximum(np.abs(u) - w, np.abs(v) - r),
      )
    img = np.clip(0.5 - sd, 0.0, 1.0) * rng.uniform(0.6, 1.0)
    out[i] = 2.0 * img - 1.0
  return out[..., None]


def shapes(
  *,
  num_train: int = 2000,
  num_test: int = 400,
  image_size: int = 16,
  seed: int = 0,
) -> dict[str, np.ndarray]:
  """Procedurally generated shapes (4 classes), deterministic in ``seed``.

  Args:
    num_train: size of the training split, an int >= 1.
    num_test: size of the test split, an int >= 1.
    image_size: side S of the square images, an int >= 4.
    seed: seed of the labels and the rendering.

  Returns:
    the keys of :func:`digits`: [num_train, S, S, 1] / [num_test, S, S, 1]
    float32 images and [num_train] / [num_test] int32 labels.
  """
  for name, v in (("num_train", num_train), ("num_test", num_test)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  rng = np.random.default_rng(seed)
  ytr = rng.integers(0, len(SHAPE_CLASSES), num_train).astype(np.int32)
  yte = rng.integers(0, len(SHAPE_CLASSES), num_test).astype(np.int32)
  return {
    "train_images": render_shapes(ytr, image_size=image_size, seed=seed + 1),
    "train_labels": ytr,
    "test_images": render_shapes(yte, image_size=image_size, seed=seed + 2),
    "test_labels": yte,
  }


def load_numpy(name: str, **kwargs: Any) -> dict[str, np.ndarray]:
  """Numpy source by name: 'digits' or 'shapes'.

  Args:
    name: 'digits' or 'shapes'.
    **kwargs: keyword arguments of :func:`digits` or :func:`shapes`.

  Returns:
    the dataset's dict of train/test images and labels.
  """
  if name not in DATASETS:
    raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
  return digits(**kwargs) if name == "digits" else shapes(**kwargs)


def num_classes(name: str) -> int:
  """Number of classes of a dataset.

  Args:
    name: 'digits' or 'shapes'.

  Returns:
    10 for 'digits', 4 for 'shapes'.
  """
  if name not in DATASETS:
    raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
  return 10 if name == "digits" else len(SHAPE_CLASSES)


# ------------------------------------------------------------------------------
# TFDS builders (array_record; no TensorFlow needed to build or read).
# ------------------------------------------------------------------------------
@functools.cache
def _builders():
  import tensorflow_datasets as tfds

  class _Base(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    # Without the optional `importlib_resources` package TFDS fails to resolve
    # the source file of a builder that lives in an installed package; these
    # builders need no code-side resources.
    code_path = None
    _SOURCE = "digits"
    _SIZE = 8
    _CLASSES = 10

    def _info(self):
      return tfds.core.DatasetInfo(
        builder=self,
        features=tfds.features.FeaturesDict(
          {
            "image": tfds.features.Tensor(
              shape=(self._SIZE, self._SIZE, 1), dtype=np.float32
            ),
            "label": tfds.features.ClassLabel(num_classes=self._CLASSES),
            "index": tfds.features.Scalar(dtype=np.int64),
          }
        ),
        supervised_keys=("image", "label"),
      )

    def _split_generators(self, dl_manager):
      del dl_manager  # nothing to download
      data = load_numpy(self._SOURCE)
      return {
        "train": self._generate_examples(
          data["train_images"], data["train_labels"]
        ),
        "test": self._generate_examples(
          data["test_images"], data["test_labels"]
        ),
      }

    def _generate_examples(self, images, labels):
      for i in range(images.shape[0]):
        yield i, {"image": images[i], "label": int(labels[i]), "index": i}

  class DigitsImages(_Base):
    """sklearn digits, 8x8 in [-1, 1], 10 classes (train 1297 / test 500)."""

    name = "jaxpapers_digits"

  class ShapesImages(_Base):
    """Procedural shapes, 16x16 in [-1, 1], 4 classes (train 2000 / test
    400)."""

    name = "jaxpapers_shapes"
    _SOURCE, _SIZE, _CLASSES = "shapes", 16, len(SHAPE_CLASSES)

  return {"digits": DigitsImages, "shapes": ShapesImages}


def tfds_builder(
  name: str, data_dir: str | os.PathLike[str]
) -> tfds.core.GeneratorBasedBuilder:
  """The TFDS builder for 'digits' or 'shapes' writing array_record files under
  ``data_dir``.

  Args:
    name: 'digits' or 'shapes'.
    data_dir: the TFDS data directory.

  Returns:
    an unprepared builder (call ``download_and_prepare``; nothing is
    downloaded).
  """
  if name not in DATASETS:
    raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
  return _builders()[name](data_dir=str(data_dir), file_format="array_record")


def load_tfds(
  name: str, data_dir: str | os.PathLike[str]
) -> dict[str, np.ndarray]:
  """Prepare (once) and read the TFDS dataset through ``as_data_source``.

  Args:
    name: 'digits' or 'shapes'.
    data_dir: the TFDS data directory; the dataset is built there on first use.

  Returns:
    the same dict (and order, restored from the stored ``index`` feature) as the
    NumPy sources.
  """
  if name not in DATASETS:
    raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
  b = tfds_builder(name, pathlib.Path(data_dir))
  b.download_and_prepare()
  # every split: split=None
  src = cast(Mapping[str, Sequence[Any]], b.as_data_source())
  out = {}
  for split in ("train", "test"):
    ex = sorted(
      (src[split][i] for i in range(len(src[split]))),
      key=lambda e: int(e["index"]),
    )
    out[f"{split}_images"] = np.stack([e["image"] for e in ex]).astype(
      np.float32
    )
    out[f"{split}_labels"] = np.asarray([e["label"] for e in ex], np.int32)
  return out


class SourceImages:
  """Random access to a TFDS data source's images ([-1, 1] float32) or labels
  (int32).

  ``x[idx]`` reads the records ``idx`` (an int or an index array) in one batched
  read where the source supports it; ``x.shape`` is ``(len(source), *image
  shape)``.

  Args:
    source: a ``tfds.data_source`` split (records with ``image`` and ``label``).
    key: ``'image'`` or ``'label'``.
  """

  def __init__(self, source: Sequence[Mapping[str, Any]], key: str):
    if key not in ("image", "label"):
      raise ValueError(f"key must be 'image' or 'label', got {key!r}")
    self.source, self.key = source, key
    self.shape = (len(source),) + tuple(np.asarray(source[0]["image"]).shape)

  def __getitem__(self, idx: Any) -> np.ndarray:
    idx = np.atleast_1d(np.asarray(idx))
    # one batched read (ArrayRecord data sources)
    if hasattr(self.source, "__getitems__"):
      recs = self.source.__getitems__([int(i) for i in idx])  # type: ignore[attr-defined]
    else:
      recs = [self.source[int(i)] for i in idx]
    x = np.stack([np.asarray(r[self.key]) for r in recs])
    return (
      (x.astype(np.float32) / 127.5 - 1.0)
      if self.key == "image"
      else x.astype(np.int32)
    )


def load_imagenet64(
  data_dir: str | os.PathLike[str],
  *,
  num_test: int,
  seed: int = 0,
  classifier_subset: int = 50_000,
) -> dict[str, Any]:
  """ImageNet 64x64 (``imagenet_resized/64x64``) from a prepared TFDS
  ``data_dir``.

  Nothing is downloaded: the dataset must be prepared there in the array_record
  format.

  Args:
    data_dir: the TFDS data directory.
    num_test: validation images held out (the first ones, at most the split's
      size).
    seed: the seed of the classifier subset.
    classifier_subset: train images of the feature classifier's subset (drawn
      without replacement, sorted).

  Returns:
    ``train_images`` / ``train_labels`` (lazy :class:`SourceImages` over the
    train split), ``subset_images`` / ``subset_labels`` ([S, 64, 64, 3] float32,
    [S] int32) and ``test_images`` / ``test_labels`` ([num_test, 64, 64, 3],
    [num_test]).
  """
  if num_test < 0 or classifier_subset < 1:
    raise ValueError(
      "num_test must be >= 0 and classifier_subset >= 1, "
      f"got {num_test} and {classifier_subset}"
    )
  import tensorflow_datasets as tfds

  src = cast(
    Mapping[str, Sequence[Any]],
    tfds.data_source("imagenet_resized/64x64", data_dir=str(data_dir)),
  )
  tr, va = src["train"], src["validation"]
  rng = np.random.default_rng(seed)
  sub = np.sort(
    rng.choice(len(tr), min(classifier_subset, len(tr)), replace=False)
  )
  test_idx = np.arange(min(num_test, len(va)))
  return {
    "train_images": SourceImages(tr, "image"),
    "train_labels": SourceImages(tr, "label"),
    "subset_images": SourceImages(tr, "image")[sub],
    "subset_labels": SourceImages(tr, "label")[sub],
    "test_images": SourceImages(va, "image")[test_idx],
    "test_labels": SourceImages(va, "label")[test_idx],
  }
