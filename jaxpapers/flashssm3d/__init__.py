"""FlashSSM-3D: attention-free multi-view 3D reconstruction distilled from a
VGGT-style teacher.

Public API of ``jaxpapers.flashssm3d``. Geometry conventions (OpenCV axes,
camera-from-world extrinsics, scalar-last quaternions, VGGT's 9-number pose
encoding, first-camera gauge with mean point distance 1) are stated once in
:mod:`jaxpapers.flashssm3d._geometry`.

The student architecture, the exact Procrustes and reprojection loss formulas
and the training recipe are **reconstructions** from the paper's abstract (no
public code); VGGT's conventions, losses and metrics follow arXiv:2503.11651 and
``facebookresearch/vggt``.
"""

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from jaxpapers.flashssm3d._data import (
  SPLITS,
  SceneBatch,
  render_scene_arrays,
  render_scenes,
  scene_arrays,
)
from jaxpapers.flashssm3d._evaluation import (
  BatchedForward,
  evaluate_models,
  evaluate_predictions,
  mean_pose_encoding,
  trivial_predictors,
)
from jaxpapers.flashssm3d._flops import count_flops, xla_flops
from jaxpapers.flashssm3d._geometry import (
  camera_centers,
  cameras_to_pose_encoding,
  compose_extrinsics,
  intrinsics_from_fov,
  invert_extrinsics,
  mat_to_quat,
  normalize_scene,
  pose_encoding_to_cameras,
  project_points,
  quat_to_mat,
  unproject_depth,
)
from jaxpapers.flashssm3d._io import (
  load_multiview_scenes,
  load_teacher_predictions,
  save_teacher_predictions,
)
from jaxpapers.flashssm3d._losses import (
  DistillTargets,
  LossWeights,
  apply_sim3_to_cameras,
  camera_loss,
  conf_regression_loss,
  distillation_loss,
  gradient_loss,
  ground_truth_targets,
  procrustes_loss,
  reprojection_loss,
  weighted_umeyama,
)
from jaxpapers.flashssm3d._metrics import (
  accuracy_completeness,
  ate,
  depth_metrics,
  pose_auc,
  relative_pose_errors,
  rra_rta,
  umeyama_np,
)
from jaxpapers.flashssm3d._scaling import (
  compiled_memory_bytes,
  scaling_models,
  scaling_study,
  view_scaling,
)
from jaxpapers.flashssm3d._scaling_fit import scaling_summary, views_within
from jaxpapers.flashssm3d._ssm import (
  SCAN_METHODS,
  SCAN_ORDERS,
  BiSSM,
  scan_order,
  selective_scan,
)
from jaxpapers.flashssm3d._training import (
  compile_step,
  sample_batches,
  steps_within_budget,
  train_optimizer,
  train_step,
)


def build_scene_dataset(
  data_dir: str | os.PathLike, **kwargs: Any
) -> dict[str, Any]:
  """Generate and open the TFDS scene dataset (array_record; no TensorFlow
  needed).

  See :func:`jaxpapers.flashssm3d._tfds.build_scene_dataset`; imported lazily so
  that importing the package does not import TFDS. The dataset is rendered once
  per configuration and reused.

  Args:
    data_dir: the TFDS data folder the dataset is written to and read from.
    **kwargs: ``num_train`` (64), ``num_test`` (16), ``num_views`` (4),
      ``image_size`` (32), all ints >= 1, and ``split`` (``'orbit_easy'``; one
      of ``SPLITS``).

  Returns:
    ``{'train': source, 'test': source}``; each source supports ``len()`` and
    random access returning a dict of NumPy arrays (``images [S, H, W, 3]``
    uint8, ``depth``, ``points``, ``valid``, ``extrinsics``, ``intrinsics``; see
    :func:`batch_from_records`).
  """
  split = kwargs.get("split", "orbit_easy")
  if split not in SPLITS:
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
  from jaxpapers.flashssm3d import _tfds

  return _tfds.build_scene_dataset(data_dir, **kwargs)


def batch_from_records(
  records: Iterable[Mapping[str, np.ndarray]],
) -> SceneBatch:
  """Stack TFDS records into a :class:`SceneBatch` (see
  ``_tfds.batch_from_records``).

  Args:
    records: a non-empty sequence of dataset records, dicts with the keys
      ``images`` (uint8 ``[S, H, W, 3]``), ``depth``, ``points``, ``valid``,
      ``extrinsics``, ``intrinsics`` (``ValueError`` otherwise).

  Returns:
    A :class:`SceneBatch` with a leading axis over the records, ``images``
    rescaled to float32 in [0, 1] and ``scale`` all ones.
  """
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
  from jaxpapers.flashssm3d import _tfds

  return _tfds.batch_from_records(records)


from jaxpapers.flashssm3d._models import (
  AATeacher,
  FlashSSM3D,
  FlashSSM3DConfig,
  Predictions,
  TeacherConfig,
  count_params,
  pixel_statistics,
)

__all__ = [
  "BatchedForward",
  "evaluate_models",
  "evaluate_predictions",
  "mean_pose_encoding",
  "trivial_predictors",
  "count_flops",
  "xla_flops",
  "load_multiview_scenes",
  "load_teacher_predictions",
  "save_teacher_predictions",
  "camera_centers",
  "cameras_to_pose_encoding",
  "compose_extrinsics",
  "intrinsics_from_fov",
  "invert_extrinsics",
  "mat_to_quat",
  "normalize_scene",
  "pose_encoding_to_cameras",
  "project_points",
  "quat_to_mat",
  "unproject_depth",
  "DistillTargets",
  "LossWeights",
  "apply_sim3_to_cameras",
  "camera_loss",
  "conf_regression_loss",
  "distillation_loss",
  "ground_truth_targets",
  "gradient_loss",
  "procrustes_loss",
  "reprojection_loss",
  "weighted_umeyama",
  "accuracy_completeness",
  "ate",
  "depth_metrics",
  "pose_auc",
  "relative_pose_errors",
  "rra_rta",
  "umeyama_np",
  "compiled_memory_bytes",
  "view_scaling",
  "scaling_models",
  "scaling_study",
  "scaling_summary",
  "views_within",
  "SCAN_METHODS",
  "SCAN_ORDERS",
  "BiSSM",
  "scan_order",
  "selective_scan",
  "compile_step",
  "sample_batches",
  "steps_within_budget",
  "train_optimizer",
  "train_step",
  "SPLITS",
  "SceneBatch",
  "render_scenes",
  "render_scene_arrays",
  "scene_arrays",
  "build_scene_dataset",
  "batch_from_records",
  "AATeacher",
  "FlashSSM3D",
  "FlashSSM3DConfig",
  "Predictions",
  "TeacherConfig",
  "count_params",
  "pixel_statistics",
]
