"""The FD-proxy of a class-conditional image sampler, measured against a
real-vs-real floor.

:class:`FDProxy` bundles what scoring samples needs: the
:class:`FeatureClassifier` trained on real images, the features of the FD
reference and of the training images, the balanced labels to sample with, and
the floor (the same distances between two sets of real images, so a score is
read against what real data scores).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import ci95_halfwidth
from jaxpapers.core.config import validate_choice
from jaxpapers.dual_rate._eval import (
  FeatureClassifier,
  classifier_accuracy,
  extract_features,
  fd_metric,
  kid_metric,
  train_classifier,
)
from jaxpapers.dual_rate._networks import DualRateModel, SingleNetwork
from jaxpapers.dual_rate._sampling import sample, sampling_cost, wall_time
from jaxpapers.dual_rate._schedule import NoiseSchedule

FD_REFERENCES = ("train", "heldout")


def fd_splits(
  num_train: int, num_heldout: int, num_samples: int, reference: str
) -> dict:
  """The FD reference and the real images the floor compares with it
  (``FDProxy.build``'s splits).

  With ``'train'`` the whole train split is the reference and the floor compares
  the first N held-out images (samples close to training images can score below
  that floor); with ``'heldout'`` the first N held-out images are the reference
  and the floor compares the next N, so a row and the floor are measured alike.

  Args:
    num_train: images in the train split (or the classifier's subset of it).
    num_heldout: images in the held-out split.
    num_samples: N, the samples scored per sampling seed.
    reference: ``'train'`` or ``'heldout'``.

  Returns:
    ``{"reference": (split, start, stop), "compared": (split, start, stop)}``.

  Raises:
    ValueError: an unknown ``reference``, or a held-out split too small (N, or 2
      N with a held-out reference).
  """
  validate_choice(reference, name="fd_reference", allowed=FD_REFERENCES)
  need = 2 * num_samples if reference == "heldout" else num_samples
  if num_samples < 1 or num_heldout < need:
    raise ValueError(
      f"fd_reference={reference!r} needs {need} held-out images for "
      f"num_eval_samples={num_samples}, but the held-out split has "
      f"{num_heldout}; raise num_test or lower num_eval_samples"
    )
  if reference == "heldout":
    return {
      "reference": ("heldout", 0, num_samples),
      "compared": ("heldout", num_samples, 2 * num_samples),
    }
  return {
    "reference": ("train", 0, num_train),
    "compared": ("heldout", 0, num_samples),
  }


@dataclasses.dataclass(frozen=True)
class FDProxy:
  """Scores samples by FD-proxy, KID and class accuracy against real images.

  Build it once per dataset (:meth:`build`) so that every sampler is scored
  against the same classifier, reference and floor.

  Attributes:
    classifier: the :class:`FeatureClassifier` trained on the real images.
    train_features: [n_train, F] features of the classifier's training images.
    reference_features: [n_ref, F] features of the FD reference.
    floor: the real-vs-real floor: ``fd``, ``kid`` (reference against the
      compared real images), ``classifier_test_accuracy``, ``reference``,
      ``splits``, ``n_reference``, ``n_compared`` and, with a held-out
      reference, ``fd_train_reference`` (the compared images against the
      training features).
    labels: [N] int32 balanced class labels to sample with
      (``i % num_classes``).
    shape: (N, H, W, C), the shape of one sampling seed's batch of samples.
  """

  classifier: FeatureClassifier
  train_features: np.ndarray
  reference_features: np.ndarray
  floor: dict[str, Any]
  labels: jax.Array
  shape: tuple[int, int, int, int]

  @classmethod
  def build(
    cls,
    data: dict[str, np.ndarray],
    *,
    num_classes: int,
    classifier_steps: int,
    splits: dict[str, Sequence[Any]],
    seed: int = 0,
  ) -> FDProxy:
    """Trains the classifier and measures the floor.

    Args:
      data: ``train_images`` [n, H, W, C], ``train_labels`` [n], ``test_images``
        [m, H, W, C] (the held-out split), ``test_labels`` [m], and optionally
        ``subset_images`` / ``subset_labels`` (a subset of the train split that
        replaces it here).
      num_classes: the number of classes.
      classifier_steps: training steps of the classifier.
      splits: ``{"reference": (split, start, stop), "compared": (split, start,
        stop)}``: the images of the FD reference and the real images the floor
        compares with it, ``split`` being ``'train'`` (the subset, when given)
        or ``'heldout'``. The reference's split names the reference; the
        compared range's length is N, the samples per sampling seed. E.g.
        ``{"reference": ("heldout", 0, N), "compared": ("heldout", N, 2 N)}``
        (:func:`fd_splits` builds them).
      seed: the classifier's seed.

    Returns:
      The :class:`FDProxy`.

    Raises:
      ValueError: a split other than ``'train'`` or ``'heldout'``, or an empty
        range.
    """
    xtr, xte, yte = (
      data["train_images"],
      data["test_images"],
      data["test_labels"],
    )
    xsub = data.get("subset_images", xtr)
    ysub = data.get("subset_labels", data["train_labels"])
    real = {"train": xsub, "heldout": xte}
    for name, (split, start, stop) in splits.items():
      if split not in real or not 0 <= start < stop:
        raise ValueError(
          f"splits[{name!r}] must be ('train' or 'heldout', start, "
          f"stop > start), got {(split, start, stop)!r}"
        )
    pick = lambda split: real[split[0]][split[1] : split[2]]
    clf = train_classifier(
      xsub, ysub, num_classes=num_classes, steps=classifier_steps, seed=seed
    )
    train_features = extract_features(clf, xsub)
    reference_features = extract_features(clf, pick(splits["reference"]))
    compared = extract_features(clf, pick(splits["compared"]))
    reference = splits["reference"][0]
    floor = {
      "fd": fd_metric(reference_features, compared),
      "kid": kid_metric(reference_features, compared),
      "classifier_test_accuracy": classifier_accuracy(clf, xte, yte),
      "reference": reference,
      "splits": {k: list(v) for k, v in splits.items()},
      "n_reference": int(reference_features.shape[0]),
      "n_compared": int(compared.shape[0]),
    }
    if reference == "heldout":
      floor["fd_train_reference"] = fd_metric(train_features, compared)
    n = int(compared.shape[0])
    labels = jnp.asarray(np.arange(n) % num_classes, jnp.int32)
    shape = (n, xtr.shape[1], xtr.shape[2], xtr.shape[3])
    return cls(clf, train_features, reference_features, floor, labels, shape)

  @property
  def reference(self) -> str:
    """The FD reference, ``'train'`` or ``'heldout'``."""
    return self.floor["reference"]

  def score(self, images: Any) -> dict[str, float]:
    """FD-proxy, KID and class accuracy of one batch of samples.

    Args:
      images: [N, H, W, C] samples in [-1, 1], generated with the labels
        :attr:`labels`.

    Returns:
      ``{"fd", "kid", "class_acc"}`` against the reference (and ``"fd_train"``,
      the FD against the training features, when the reference is held out).
    """
    f = extract_features(self.classifier, images)
    out = {
      "fd": fd_metric(self.reference_features, f),
      "kid": kid_metric(self.reference_features, f),
      "class_acc": classifier_accuracy(self.classifier, images, self.labels),
    }
    if self.reference != "train":
      out["fd_train"] = fd_metric(self.train_features, f)
    return out


def measure_sampler(
  model: DualRateModel | SingleNetwork,
  proxy: FDProxy,
  *,
  num_steps: int,
  refresh: Any,
  sampler: str,
  schedule: NoiseSchedule,
  use_features: bool,
  flops: Mapping[str, float],
  eval_seeds: Sequence[int],
  grid_samples: int,
  time_repeats: int = 0,
) -> tuple[dict[str, Any], np.ndarray]:
  """One sampler setting measured once per sampling seed against ``proxy``.

  Sampling seed ``s`` samples with the key ``jax.random.key(10_000 + s)`` and
  the proxy's balanced labels; the samples are clipped to [-1, 1] and scored
  (:meth:`FDProxy.score`). The call counts the sampler reports are checked
  against :func:`sampling_cost`.

  Args:
    model: the network(s) to sample (:func:`sample`).
    proxy: the FD-proxy; its ``shape`` is one sampling seed's batch.
    num_steps: N, the sampler steps.
    refresh: [N] bool refresh set.
    sampler: 'ddim', 'ancestral' or 'heun'.
    schedule: the noise schedule the model was trained with.
    use_features: False samples a dual-rate model's denoiser with
      constant (zero) features.
    flops: per-call FLOPs (:func:`component_flops`) of the model.
    eval_seeds: the sampling seeds (at least one).
    grid_samples: how many of the first seed's samples to return.
    time_repeats: timed sampling runs (median wall time, :func:`wall_time`); 0:
      not timed.

  Returns:
    ``(measured, grid)``: ``measured`` holds the call counts (``encoder_calls``,
    ``denoiser_calls``, ...), ``mflops_per_sample``, ``fd_mean`` / ``fd_std`` /
    ``fd_ci95`` (over sampling seeds; the CI None for one seed) and
    ``fd_seeds``, ``kid_mean`` / ``kid_std``, ``class_acc``, ``wall_s`` (None
    when not timed) and, with a held-out reference, ``fd_train_mean`` /
    ``fd_train_std``; ``grid`` [grid_samples, H, W, C] the first seed's first
    samples.

  Raises:
    ValueError: no sampling seed.
  """
  if not eval_seeds:
    raise ValueError("eval_seeds must name at least one sampling seed")
  kw: dict[str, Any] = dict(
    num_steps=num_steps,
    refresh=refresh,
    sampler=sampler,
    schedule=schedule,
    cond=proxy.labels,
    use_features=use_features,
  )
  scores, grid, info = [], None, {}
  for s in eval_seeds:
    x, info = sample(
      model, jax.random.key(10_000 + s), proxy.shape, return_info=True, **kw
    )
    x = np.clip(np.asarray(x), -1.0, 1.0)
    scores.append(proxy.score(x))
    grid = x[:grid_samples] if grid is None else grid
  fds, kids = [s["fd"] for s in scores], [s["kid"] for s in scores]
  counts = {k: int(v) for k, v in info.items()}
  cost = sampling_cost(dict(flops), refresh, sampler=sampler)
  assert counts == {k: cost[k] for k in counts}, (counts, cost)
  wall = None
  if time_repeats:
    wall = wall_time(
      lambda: sample(model, jax.random.key(1), proxy.shape, **kw),
      repeats=time_repeats,
    )
  out = {
    **counts,
    "mflops_per_sample": cost["flops"] / 1e6,
    "fd_mean": float(np.mean(fds)),
    "fd_std": float(np.std(fds)),
    "fd_ci95": ci95_halfwidth(fds) if len(fds) > 1 else None,
    "fd_seeds": [float(v) for v in fds],
    "kid_mean": float(np.mean(kids)),
    "kid_std": float(np.std(kids)),
    "class_acc": float(np.mean([s["class_acc"] for s in scores])),
    "wall_s": wall,
  }
  # beside the held-out FD: the FD against the train split
  if "fd_train" in scores[0]:
    fds_train = [s["fd_train"] for s in scores]
    out["fd_train_mean"] = float(np.mean(fds_train))
    out["fd_train_std"] = float(np.std(fds_train))
  assert grid is not None
  return out, grid
