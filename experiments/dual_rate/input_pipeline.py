"""The dual-rate experiment's data: digits / shapes in memory, ImageNet 64x64 from TFDS."""

from __future__ import annotations

import concurrent.futures

import numpy as np

from jaxpapers import core
from jaxpapers import dual_rate as dr


class Prefetch:
  """``fn(step)`` read ahead by ``depth`` steps on a background thread (0: no read-ahead).

  Host-side input reading (e.g. records of a TFDS data source) overlaps the device step; the
  batch of a step depends on ``step`` only, so the result is the same with or without it."""

  def __init__(self, fn, depth: int = 0):
    self.fn, self.depth, self.futures = fn, int(depth), {}
    self.pool = concurrent.futures.ThreadPoolExecutor(1) if self.depth > 0 else None

  def __call__(self, step):
    if self.pool is None:
      return self.fn(step)
    for s in range(step, step + self.depth + 1):
      if s not in self.futures:
        self.futures[s] = self.pool.submit(self.fn, s)
    for s in [s for s in self.futures if s < step]:
      self.futures.pop(s).cancel()
    return self.futures.pop(step).result()

  def close(self):
    if self.pool is not None:
      self.pool.shutdown(wait=False, cancel_futures=True)


class SourceImages:
  """Random access to a TFDS data source (e.g. imagenet_resized/64x64) as [-1, 1] float images."""

  def __init__(self, source, key):
    self.source, self.key = source, key
    self.shape = (len(source),) + tuple(np.asarray(source[0]["image"]).shape)

  def __getitem__(self, idx):
    idx = np.atleast_1d(np.asarray(idx))
    if hasattr(self.source, "__getitems__"):  # one batched read (ArrayRecord data sources)
      recs = self.source.__getitems__([int(i) for i in idx])
    else:
      recs = [self.source[int(i)] for i in idx]
    x = np.stack([np.asarray(r[self.key]) for r in recs])
    return (x.astype(np.float32) / 127.5 - 1.0) if self.key == "image" else x.astype(np.int32)


def load_data(cfg):
  """``(data, num_classes)``: digits / shapes in memory; 'imagenet64' from a prepared TFDS
  data_dir (full config only).

  ``data`` holds ``train_images`` / ``train_labels`` (the networks' data), ``test_images`` /
  ``test_labels`` (the held-out split) and, for ImageNet, ``subset_images`` /
  ``subset_labels`` (the feature classifier's subset of the train split).
  """
  if cfg.dataset in dr.DATASETS:
    # num_test: the held-out split, which sets the largest N of the real-vs-real floor.
    kw = {"num_test": cfg.num_test} if cfg.get("num_test", 0) else {}
    return dr.load_numpy(cfg.dataset, **kw), dr.num_classes(cfg.dataset)
  core.validate_choice(cfg.dataset, name="dataset", allowed=dr.DATASETS + ("imagenet64",))
  import tensorflow_datasets as tfds

  src = tfds.data_source(
    "imagenet_resized/64x64", data_dir=str(core.resolve_data_dir(cfg.get("data_dir")))
  )
  tr, va = src["train"], src["validation"]
  rng = np.random.default_rng(cfg.seed)
  sub = np.sort(
    rng.choice(len(tr), min(cfg.get("classifier_subset", 50_000), len(tr)), replace=False)
  )
  # The held-out images: N for the floor, 2 N with a held-out reference (evaluate.fd_splits).
  per = 2 if cfg.get("fd_reference", "train") == "heldout" else 1
  test_idx = np.arange(min(per * cfg.num_eval_samples, len(va)))
  data = {
    "train_images": SourceImages(tr, "image"),
    "train_labels": SourceImages(tr, "label"),
    "subset_images": SourceImages(tr, "image")[sub],
    "subset_labels": SourceImages(tr, "label")[sub],
    "test_images": SourceImages(va, "image")[test_idx],
    "test_labels": SourceImages(va, "label")[test_idx],
  }
  return data, 1000
