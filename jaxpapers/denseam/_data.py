"""The scikit-learn digits as DenseAM tasks (bundled with scikit-learn: no download)."""

from __future__ import annotations

from typing import cast

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.denseam._model import TASKS, Batch

NUM_CLASSES = 10


def load_digits_task(
  task: str = "classify", *, seed: int = 0, test_fraction: float = 0.2, corruption: float = 0.3
) -> tuple[Batch, Batch]:
  """The 1,797 8x8 digits as a classification or denoising task, split train/test.

  Pixels (0..16) are scaled to ``[-1, 1]``.

  * ``'classify'``: ``x0 = [pixels; 0 * 10 label units]`` (N = 74), the 64 pixel units
    clamped, ``y`` the digit.
  * ``'denoise'``: patterns binarised to ``+-1`` (pixel > 0 in the scaled image), a fraction
    ``corruption`` of each pattern's units flipped (fixed by ``seed``), nothing clamped,
    ``y`` the clean pattern (N = 64).

  Args:
    task: ``'classify'`` or ``'denoise'``.
    seed: seed of the split (and of the corruption).
    test_fraction: fraction of the examples held out, in (0, 1).
    corruption: fraction of flipped units for ``'denoise'``, in [0, 1].

  Returns:
    ``(train, test)`` :class:`Batch` es of numpy arrays (float32 states, bool clamp, int32
    labels or float32 patterns).
  """
  from sklearn.datasets import load_digits  # local: keep scikit-learn off the import path
  from sklearn.utils import Bunch

  if task not in TASKS:
    raise ValueError(f"task must be one of {list(TASKS)}, got {task!r}")
  seed = V.check_int(seed, "seed", min_value=0)
  test_fraction = V.check_float(
    test_fraction,
    "test_fraction",
    min_value=0.0,
    max_value=1.0,
    min_inclusive=False,
    max_inclusive=False,
  )
  corruption = V.check_float(corruption, "corruption", min_value=0.0, max_value=1.0)
  d = cast(Bunch, load_digits())  # a Bunch unless return_X_y or as_frame is set
  pixels = (d.data / 8.0 - 1.0).astype(np.float32)  # [1797, 64] in [-1, 1]
  labels = d.target.astype(np.int32)
  rng = np.random.default_rng(seed)
  perm = rng.permutation(len(labels))
  n_test = max(1, int(round(test_fraction * len(labels))))
  parts = (perm[n_test:], perm[:n_test])
  out = []
  for idx in parts:
    px, y = pixels[idx], labels[idx]
    if task == "classify":
      x0 = np.concatenate([px, np.zeros((len(idx), NUM_CLASSES), np.float32)], axis=1)
      clamp = np.arange(x0.shape[1]) < px.shape[1]
      out.append(Batch(x0=x0, clamp=clamp, y=y))
    else:
      clean = np.where(px > 0, 1.0, -1.0).astype(np.float32)
      flip = rng.random(clean.shape) < corruption
      out.append(Batch(x0=np.where(flip, -clean, clean), clamp=np.zeros(64, bool), y=clean))
  return out[0], out[1]
