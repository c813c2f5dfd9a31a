"""The scikit-learn digits as DenseAM tasks (bundled with scikit-learn: no
download)."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.denseam._model import TASKS, Batch

NUM_CLASSES = 10


def load_digits_task(
  task: str = "classify",
  *,
  seed: int = 0,
  test_fraction: float = 0.2,
  corruption: float = 0.3,
) -> tuple[Batch, Batch]:
  """The 1,797 8x8 digits as a classification or denoising task, split
  train/test.

  Pixels (0..16) are scaled to ``[-1, 1]``.

  * ``'classify'``: ``x0 = [pixels; 0 * 10 label units]`` (N = 74), the 64 pixel
    units clamped, ``y`` the digit.
  * ``'denoise'``: patterns binarised to ``+-1`` (pixel > 0 in the scaled
    image), a fraction ``corruption`` of each pattern's units flipped (fixed by
    ``seed``), nothing clamped, ``y`` the clean pattern (N = 64).

  Args:
    task: ``'classify'`` or ``'denoise'``.
    seed: seed of the split (and of the corruption).
    test_fraction: fraction of the examples held out, in (0, 1).
    corruption: fraction of flipped units for ``'denoise'``, in [0, 1].

  Returns:
    ``(train, test)`` :class:`Batch` es of numpy arrays (float32 states, bool
    clamp, int32 labels or float32 patterns).
  """
  # local: keep scikit-learn off the import path
  from sklearn.datasets import load_digits
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
  corruption = V.check_float(
    corruption, "corruption", min_value=0.0, max_value=1.0
  )
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
      x0 = np.concatenate(
        [px, np.zeros((len(idx), NUM_CLASSES), np.float32)], axis=1
      )
      clamp = np.arange(x0.shape[1]) < px.shape[1]
      out.append(Batch(x0=x0, clamp=clamp, y=y))
    else:
      clean = np.where(px > 0, 1.0, -1.0).astype(np.float32)
      flip = rng.random(clean.shape) < corruption
      out.append(
        Batch(
          x0=np.where(flip, -clean, clean), clamp=np.zeros(64, bool), y=clean
        )
      )
  return out[0], out[1]


def digits_baselines(
  train: Batch, test: Batch, *, logreg: bool = False
) -> dict:
  """Trivial and simple baselines of the digits classification task.

  Args:
    train: the ``'classify'`` training :class:`Batch` (``x0`` ``[B, 74]``, ``y``
      ``[B]`` int).
    test: the ``'classify'`` test :class:`Batch`.
    logreg: also fit a scikit-learn logistic regression on the 64 pixels.

  Returns:
    ``uniform_loss`` (``ln 10``), ``class_prior_loss`` (train cross-entropy of
    predicting the train class frequencies), ``majority_accuracy`` (test
    accuracy of the most frequent train class), ``logreg_train_loss`` and
    ``logreg_test_accuracy`` (None unless ``logreg``).
  """
  y_tr, y_te = np.asarray(train.y), np.asarray(test.y)
  for name, y in (("train.y", y_tr), ("test.y", y_te)):
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
      raise ValueError(
        f"{name} must be [B] integer class labels, got {y.dtype} {y.shape}"
      )
  counts = np.bincount(y_tr, minlength=10)
  prior = counts / counts.sum()
  out = {
    "uniform_loss": math.log(10),
    "class_prior_loss": float(-np.mean(np.log(prior[y_tr]))),
    "majority_accuracy": float(np.mean(y_te == np.argmax(counts))),
    "logreg_train_loss": None,
    "logreg_test_accuracy": None,
  }
  if logreg:
    from sklearn.linear_model import LogisticRegression

    px_tr, px_te = np.asarray(train.x0)[:, :64], np.asarray(test.x0)[:, :64]
    lr = LogisticRegression(max_iter=2000).fit(px_tr, y_tr)
    proba = np.clip(lr.predict_proba(px_tr), 1e-12, 1)
    out["logreg_train_loss"] = float(
      -np.mean(np.log(proba[np.arange(len(y_tr)), y_tr]))
    )
    out["logreg_test_accuracy"] = float(lr.score(px_te, y_te))
  return out
