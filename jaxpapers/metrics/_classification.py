"""Classification metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _predicted_labels(predictions: jax.Array, labels: jax.Array) -> jax.Array:
  predictions = jnp.asarray(predictions)
  labels = jnp.asarray(labels)
  if predictions.ndim == labels.ndim + 1:
    return jnp.argmax(predictions, axis=-1)
  if predictions.shape != labels.shape:
    raise ValueError(
        "predictions must be labels of shape labels.shape or logits of shape "
        f"labels.shape + (num_classes,); got predictions {predictions.shape}, labels {labels.shape}"
    )
  return predictions


def accuracy(predictions: jax.Array, labels: jax.Array) -> jax.Array:
  """Fraction of correct predictions.

  Args:
    predictions: integer labels ``[...]`` or logits/scores ``[..., C]`` (argmax taken).
    labels: integer labels ``[...]``.

  Returns:
    A scalar in [0, 1].
  """
  pred = _predicted_labels(predictions, labels)
  return jnp.mean((pred == jnp.asarray(labels)).astype(jnp.float32))


def balanced_accuracy(predictions: jax.Array, labels: jax.Array, num_classes: int) -> jax.Array:
  """Mean per-class recall over the classes present in ``labels``.

  ``BA = (1/|C'|) Σ_{c ∈ C'} |{i: y_i = c, ŷ_i = c}| / |{i: y_i = c}|`` where
  ``C'`` are the classes with at least one example (as scikit-learn defines it).

  Args:
    predictions: integer labels ``[N]`` or logits ``[N, C]``.
    labels: integer labels ``[N]`` in ``[0, num_classes)``.
    num_classes: number of classes (static).
  """
  if not isinstance(num_classes, int) or num_classes < 1:
    raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
  labels = jnp.asarray(labels)
  pred = _predicted_labels(predictions, labels).reshape(-1)
  labels = labels.reshape(-1)
  onehot = jax.nn.one_hot(labels, num_classes, dtype=jnp.float32)  # [N, C]
  support = onehot.sum(0)
  correct = (onehot * (pred == labels)[:, None]).sum(0)
  present = support > 0
  recall = jnp.where(present, correct / jnp.maximum(support, 1.0), 0.0)
  return recall.sum() / jnp.maximum(present.sum(), 1)
