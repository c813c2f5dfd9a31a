"""Offline quality metric: Frechet distance and KID on features of a classifier
trained here.

The numbers are an FD-proxy, not FID: they use the 64-d penultimate features of
a small CNN (:class:`FeatureClassifier`) trained on the same data, and are
comparable only at a fixed sample count N, classifier and dataset. Always report
the real-versus-real floor (held-out real images against training images at the
same N) next to them.

References: Heusel et al., FID, arXiv:1706.08500; Binkowski et al., KID,
arXiv:1801.01401; Kynkaanniemi et al., improved precision/recall,
arXiv:1904.06991.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from numpy.typing import ArrayLike


class FeatureClassifier(nnx.Module):
  """Small CNN: conv(32) -> conv(64, stride 2) -> dense(feature_dim) -> dense(num_classes).

  ``features(x)`` returns the penultimate ``feature_dim`` activations used for
  FD/KID.

  Args:
    image_size: side H = W of the square input images.
    channels: image channels C.
    num_classes: number of output logits.
    feature_dim: width of the penultimate (feature) layer.
    rngs: random streams for the initialisation.
  """

  def __init__(
    self,
    *,
    image_size: int = 8,
    channels: int = 1,
    num_classes: int = 10,
    feature_dim: int = 64,
    rngs: nnx.Rngs,
  ):
    self.c1 = nnx.Conv(channels, 32, kernel_size=(3, 3), rngs=rngs)
    self.c2 = nnx.Conv(32, 64, kernel_size=(3, 3), strides=(2, 2), rngs=rngs)
    side = -(-image_size // 2)
    self.fc = nnx.Linear(side * side * 64, feature_dim, rngs=rngs)
    self.head = nnx.Linear(feature_dim, num_classes, rngs=rngs)

  def features(self, x: jax.Array) -> jax.Array:
    """Penultimate activations, the features of FD/KID.

    Args:
      x: [B, H, W, C] float images.

    Returns:
      [B, feature_dim] float array (after ReLU, so non-negative).
    """
    if x.ndim != 4:
      raise ValueError(f"x must be [B, H, W, C], got {x.shape}")
    y = jax.nn.relu(self.c2(jax.nn.relu(self.c1(x))))
    return jax.nn.relu(self.fc(y.reshape(y.shape[0], -1)))

  def __call__(self, x):
    return self.head(self.features(x))


def train_classifier(
  images: np.ndarray,
  labels: np.ndarray,
  *,
  num_classes: int,
  steps: int = 400,
  batch_size: int = 128,
  learning_rate: float = 2e-3,
  seed: int = 0,
  noise_std: float = 0.1,
) -> FeatureClassifier:
  """Train a FeatureClassifier with Adam on images (small Gaussian-noise
  augmentation).

  ``steps`` and ``batch_size`` must be ints >= 1, ``learning_rate`` a finite
  number > 0 and ``noise_std`` a finite number >= 0 (``ValueError`` otherwise).

  Args:
    images: [N, H, W, C] float training images.
    labels: [N] int class ids in [0, num_classes).
    num_classes: number of classes (an int >= 1).
    steps: number of Adam steps.
    batch_size: examples per step, drawn with replacement.
    learning_rate: Adam's learning rate.
    seed: seed of the initialisation, the batches and the augmentation noise.
    noise_std: standard deviation of the Gaussian noise added to each batch.

  Returns:
    the trained classifier.
  """
  images = np.asarray(images, np.float32)
  labels = np.asarray(labels)
  if images.ndim != 4 or labels.shape != (images.shape[0],):
    raise ValueError(
      "images must be [N, H, W, C] and labels [N], "
      f"got {images.shape} and {labels.shape}"
    )
  if not np.issubdtype(labels.dtype, np.integer):
    raise TypeError(
      f"labels must be integer class ids, got dtype {labels.dtype}"
    )
  if (
    isinstance(num_classes, bool)
    or not isinstance(num_classes, (int, np.integer))
    or num_classes < 1
  ):
    raise ValueError(f"num_classes must be an int >= 1, got {num_classes!r}")
  if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
    raise ValueError(
      f"labels must lie in [0, num_classes={num_classes}), got range "
      f"[{labels.min()}, {labels.max()}]"
    )
  if (
    isinstance(learning_rate, bool)
    or not isinstance(learning_rate, (int, float, np.integer, np.floating))
    or not (math.isfinite(learning_rate) and learning_rate > 0)
  ):
    raise ValueError(
      f"learning_rate must be a finite number > 0, got {learning_rate!r}"
    )
  for name, v in (("steps", steps), ("batch_size", batch_size)):
    # steps=0 would return the untrained network as the feature classifier
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  if isinstance(noise_std, bool) or not (
    isinstance(noise_std, (int, float, np.integer, np.floating))
    and math.isfinite(noise_std)
    and noise_std >= 0
  ):
    raise ValueError(
      f"noise_std must be a finite number >= 0, got {noise_std!r}"
    )
  labels = labels.astype(np.int32)
  model = FeatureClassifier(
    image_size=images.shape[1],
    channels=images.shape[3],
    num_classes=num_classes,
    rngs=nnx.Rngs(seed),
  )
  graphdef, params = nnx.split(model)
  tx = optax.adam(learning_rate)
  opt = tx.init(params)

  @jax.jit
  def step(params, opt, x, y, key):
    x = x + noise_std * jax.random.normal(key, x.shape)

    def lf(p):
      logits = nnx.merge(graphdef, p)(x)
      return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    loss, g = jax.value_and_grad(lf)(params)
    upd, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, upd), opt, loss

  rng = np.random.default_rng(seed)
  key = jax.random.key(seed)
  for it in range(steps):
    idx = rng.integers(0, images.shape[0], batch_size)
    params, opt, _ = step(
      params, opt, images[idx], labels[idx], jax.random.fold_in(key, it)
    )
  return nnx.merge(graphdef, params)


# One compiled program per (classifier structure, batch shape), shared by every
# call: a jit of a fresh lambda per call would retrace and recompile each time
# (every sampled setting and seed).
@functools.partial(jax.jit, static_argnums=0)
def _features_jit(graphdef, state, x):
  return nnx.merge(graphdef, state).features(x)


@functools.partial(jax.jit, static_argnums=0)
def _logits_jit(graphdef, state, x):
  return nnx.merge(graphdef, state)(x)


def extract_features(
  classifier: FeatureClassifier, images: ArrayLike, *, batch_size: int = 256
) -> np.ndarray:
  """Penultimate features of a classifier, computed in fixed-size batches.

  Args:
    classifier: the trained feature classifier.
    images: [N, H, W, C] float images.
    batch_size: images per compiled call (the last batch is zero-padded).

  Returns:
    [N, feature_dim] float64 NumPy array.
  """
  if not isinstance(classifier, FeatureClassifier):
    raise TypeError(
      f"classifier must be a FeatureClassifier, got {type(classifier).__name__}"
    )
  if np.ndim(images) != 4:
    raise ValueError(
      f"images must be [N, H, W, C], got shape {np.shape(images)}"
    )
  graphdef, state = nnx.split(classifier)
  images = np.asarray(images, np.float32)
  n = images.shape[0]
  pad = (-n) % batch_size  # one compiled shape for every call
  images = np.concatenate(
    [images, np.zeros((pad,) + images.shape[1:], np.float32)]
  )
  out = [
    np.asarray(_features_jit(graphdef, state, images[i : i + batch_size]))
    for i in range(0, images.shape[0], batch_size)
  ]
  return np.concatenate(out)[:n].astype(np.float64)


def classifier_accuracy(
  classifier: FeatureClassifier, images: ArrayLike, labels: ArrayLike
) -> float:
  """Top-1 accuracy of ``classifier``.

  Args:
    classifier: the trained feature classifier.
    images: [N, H, W, C] float images.
    labels: [N] int class ids.

  Returns:
    the fraction of images whose argmax logit is the label, in [0, 1].
  """
  if not isinstance(classifier, FeatureClassifier):
    raise TypeError(
      f"classifier must be a FeatureClassifier, got {type(classifier).__name__}"
    )
  if np.ndim(images) != 4 or np.shape(labels) != (np.shape(images)[0],):
    raise ValueError(
      "images must be [N, H, W, C] and labels [N], "
      f"got {np.shape(images)} and {np.shape(labels)}"
    )
  if not np.issubdtype(np.asarray(labels).dtype, np.integer):
    raise TypeError(
      f"labels must be integer class ids, got dtype {np.asarray(labels).dtype}"
    )
  graphdef, state = nnx.split(classifier)
  logits = _logits_jit(graphdef, state, jnp.asarray(images, jnp.float32))
  return float(
    np.mean(np.asarray(jnp.argmax(logits, -1)) == np.asarray(labels))
  )


def _check_feats(a, b):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
    raise ValueError(
      f"features must be [N, D] and [M, D], got {a.shape} and {b.shape}"
    )
  if a.shape[0] < 2 or b.shape[0] < 2:
    raise ValueError("need at least two feature vectors on each side")
  if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
    raise ValueError("features must be finite (found NaN or inf)")
  return a, b


def _sqrtm_psd(s):
  w, v = np.linalg.eigh((s + s.T) / 2)
  return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def frechet_distance(f_real: ArrayLike, f_gen: ArrayLike) -> float:
  """||mu_1 - mu_2||^2 + tr(S_1 + S_2 - 2 (S_1^{1/2} S_2 S_1^{1/2})^{1/2}), in float64.

  Uses the symmetric form via eigh and clips negative eigenvalues to 0
  (PSD-clipped). Comparable only at a fixed N, classifier and dataset.

  Args:
    f_real: [N, D] finite features of real images, N >= 2.
    f_gen: [M, D] finite features of generated images, M >= 2.

  Returns:
    the Frechet distance (>= 0 up to rounding).
  """
  a, b = _check_feats(f_real, f_gen)
  mu1, mu2 = a.mean(0), b.mean(0)
  s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
  r1 = _sqrtm_psd(s1)
  m = r1 @ s2 @ r1
  w = np.clip(np.linalg.eigvalsh((m + m.T) / 2), 0, None)
  return float(
    np.sum((mu1 - mu2) ** 2)
    + np.trace(s1)
    + np.trace(s2)
    - 2 * np.sum(np.sqrt(w))
  )


def kernel_inception_distance(
  f_real: ArrayLike,
  f_gen: ArrayLike,
  *,
  degree: int = 3,
  subsets: int = 10,
  subset_size: int = 500,
  seed: int = 0,
) -> float:
  """Unbiased MMD^2 with the polynomial kernel k(x, y) = (x.y / d + 1)^degree,
  averaged over random subsets of size min(subset_size, N, M).

  Args:
    f_real: [N, D] finite features of real images, N >= 2.
    f_gen: [M, D] finite features of generated images, M >= 2.
    degree: the kernel's degree.
    subsets: number of random subsets averaged.
    subset_size: largest subset size.
    seed: seed of the subset draws.

  Returns:
    the mean unbiased MMD^2 estimate (may be slightly negative).
  """
  a, b = _check_feats(f_real, f_gen)
  for name, v in (
    ("degree", degree),
    ("subsets", subsets),
    ("subset_size", subset_size),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  d = a.shape[1]
  m = max(min(subset_size, a.shape[0], b.shape[0]), 2)
  rng = np.random.default_rng(seed)
  vals = []
  for _ in range(subsets):
    x = a[rng.choice(a.shape[0], m, replace=False)]
    y = b[rng.choice(b.shape[0], m, replace=False)]
    kxx, kyy, kxy = (
      (p @ q.T / d + 1) ** degree for p, q in ((x, x), (y, y), (x, y))
    )
    vals.append(
      (kxx.sum() - np.trace(kxx)) / (m * (m - 1))
      + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
      - 2 * kxy.mean()
    )
  return float(np.mean(vals))


def precision_recall_knn(
  f_real: ArrayLike, f_gen: ArrayLike, *, k: int = 3
) -> tuple[float, float]:
  """k-NN precision (fraction of generated inside the real manifold) and recall
  (vice versa).

  Args:
    f_real: [N, D] finite features of real images, N >= 2.
    f_gen: [M, D] finite features of generated images, M >= 2.
    k: neighbour whose distance sets each point's radius, an int in
      [1, min(N, M) - 1].

  Returns:
    ``(precision, recall)``, two fractions in [0, 1].
  """
  a, b = _check_feats(f_real, f_gen)
  k_max = min(a.shape[0], b.shape[0]) - 1
  if (
    isinstance(k, bool)
    or not isinstance(k, (int, np.integer))
    or not 1 <= k <= k_max
  ):
    raise ValueError(f"k must be an int in [1, {k_max}], got {k!r}")

  def radii(x):
    d = np.sqrt(np.maximum(((x[:, None] - x[None]) ** 2).sum(-1), 0))
    return np.sort(d, axis=1)[:, k]

  def inside(x, ref, r):
    d = np.sqrt(np.maximum(((x[:, None] - ref[None]) ** 2).sum(-1), 0))
    return float(np.mean(np.any(d <= r[None], axis=1)))

  return inside(b, a, radii(a)), inside(a, b, radii(b))


def fd_metric(f_real: ArrayLike, f_gen: ArrayLike) -> float:
  """Frechet distance via ``jaxpapers.metrics.frechet_distance`` evaluated in
  float64.

  Args:
    f_real: [N, D] finite features of real images, N >= 2.
    f_gen: [M, D] finite features of generated images, M >= 2.

  Returns:
    the Frechet distance.
  """
  from jaxpapers import metrics

  a, b = _check_feats(f_real, f_gen)
  with jax.enable_x64(True):
    return float(
      metrics.frechet_distance(
        jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64)
      )
    )


def kid_metric(f_real: ArrayLike, f_gen: ArrayLike) -> float:
  """KID (all samples, cubic polynomial kernel) via ``jaxpapers.metrics``
  evaluated in float64.

  Args:
    f_real: [N, D] finite features of real images, N >= 2.
    f_gen: [M, D] finite features of generated images, M >= 2.

  Returns:
    the unbiased MMD^2 estimate.
  """
  from jaxpapers import metrics

  a, b = _check_feats(f_real, f_gen)
  with jax.enable_x64(True):
    return float(
      metrics.kernel_inception_distance(
        jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64)
      )
    )
