"""Classification metrics.

Bad input (policy in :mod:`jaxpapers.core.validation`): shapes and dtypes are
checked at trace time; label values are checked on concrete data
(``ValueError``) and, under ``jax.jit``, a bad label makes the result NaN.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V


def _predicted_labels(predictions, labels, num_classes: int | None = None):
  """Checks the pair and returns ``(predicted labels, labels, C or None, ok
  flag)``."""
  labels = V.check_array(labels, "labels", dtype="intbool", nonempty=True)
  if labels.dtype == jnp.bool_:
    labels = labels.astype(jnp.int32)
  predictions = V.check_array(predictions, "predictions", dtype="real")
  if predictions.ndim == labels.ndim + 1:
    if not jnp.issubdtype(predictions.dtype, jnp.floating):
      raise TypeError(
        f"predictions of shape labels.shape + (num_classes,) must be float "
        f"logits or scores, got {predictions.dtype}"
      )
    if predictions.shape[:-1] != labels.shape:
      raise ValueError(
        "predictions must be labels of shape labels.shape or logits of shape "
        f"labels.shape + (num_classes,); got predictions {predictions.shape}, "
        f"labels {labels.shape}"
      )
    c = predictions.shape[-1]
    if num_classes is not None and c != num_classes:
      raise ValueError(
        f"predictions has {c} classes on its last axis, "
        f"but num_classes is {num_classes}"
      )
    if c < 2:
      raise ValueError(
        "logits need at least 2 classes on the last axis, "
        f"got shape {predictions.shape}; for a binary classifier with one "
        "score per example, pass (score > threshold).astype(int) as "
        "predictions"
      )
    ok = V.check_values(
      ~jnp.any(jnp.isnan(predictions)), "predictions must not contain NaN"
    )
    return jnp.argmax(predictions, axis=-1), labels, c, ok
  if predictions.shape != labels.shape:
    raise ValueError(
      "predictions must be labels of shape labels.shape or logits of shape "
      f"labels.shape + (num_classes,); got predictions {predictions.shape}, "
      f"labels {labels.shape}"
    )
  if predictions.dtype == jnp.bool_:
    predictions = predictions.astype(jnp.int32)
  if not jnp.issubdtype(predictions.dtype, jnp.integer):
    raise TypeError(
      "predictions with the shape of labels must be integer class labels, "
      f"got {predictions.dtype}. Binary probabilities: "
      "pass (p > 0.5).astype(int); one-hot labels with logits: "
      "pass labels.argmax(-1) as labels"
    )
  return predictions, labels, num_classes, True


def _check_label_range(name, x, c):
  if c is None:
    return V.check_values(jnp.all(x >= 0), f"{name} must be class indices >= 0")
  return V.check_values(
    jnp.all((x >= 0) & (x < c)), f"{name} must be class indices in [0, {c})"
  )


def accuracy(predictions: jax.Array, labels: jax.Array) -> jax.Array:
  """Fraction of correct predictions.

  Args:
    predictions: integer (or bool) labels ``[...]`` (the shape of ``labels``) or
      float logits/scores ``[..., C]`` with ``C >= 2`` (argmax taken; ties go to
      the lowest class).
    labels: integer (or bool, read as 0/1) labels ``[...]``, non-empty, in ``[0,
      C)`` (``>= 0`` when predictions are labels).

  Returns:
    A float32 scalar in [0, 1].

  Raises:
    TypeError: float predictions of the shape of ``labels`` (binary
      probabilities: threshold them) or non-integer labels (one-hot labels: take
      their argmax).
    ValueError: mismatched shapes, empty labels; eagerly, labels out of range or
      NaN logits.

  Under jit: labels out of range or NaN logits give NaN.
  """
  pred, labels, c, ok = _predicted_labels(predictions, labels)
  ok = ok & _check_label_range("labels", labels, c)
  return V.poison(jnp.mean((pred == labels).astype(jnp.float32)), ok)


def balanced_accuracy(
  predictions: jax.Array, labels: jax.Array, num_classes: int
) -> jax.Array:
  """Mean per-class recall over the classes present in ``labels``.

  ``BA = (1/|C'|) Σ_{c ∈ C'} |{i: y_i = c, ŷ_i = c}| / |{i: y_i = c}|`` where
  ``C'`` are the classes with at least one example (as scikit-learn defines it).

  Args:
    predictions: integer labels ``[N]`` in ``[0, num_classes)`` or float logits
      ``[N, num_classes]``.
    labels: integer labels ``[N]`` in ``[0, num_classes)``, non-empty.
    num_classes: number of classes C (static; a Python or numpy int >= 1).

  Returns:
    A float32 scalar in [0, 1]. Degenerate input: a single class present gives
    that class's recall.

  Raises:
    ValueError: eagerly, a label or predicted label outside ``[0, num_classes)``
      (it would otherwise be dropped from every class and inflate the score).

  Under jit: out-of-range labels or predictions give NaN.
  """
  num_classes = V.check_int(num_classes, "num_classes", min_value=1)
  pred, labels, _, ok = _predicted_labels(predictions, labels, num_classes)
  ok = ok & _check_label_range("labels", labels, num_classes)
  ok = ok & _check_label_range("predictions", pred, num_classes)
  pred = pred.reshape(-1)
  labels = labels.reshape(-1)
  onehot = jax.nn.one_hot(labels, num_classes, dtype=jnp.float32)  # [N, C]
  support = onehot.sum(0)
  correct = (onehot * (pred == labels)[:, None]).sum(0)
  present = support > 0
  recall = jnp.where(present, correct / jnp.maximum(support, 1.0), 0.0)
  return V.poison(recall.sum() / jnp.maximum(present.sum(), 1), ok)
