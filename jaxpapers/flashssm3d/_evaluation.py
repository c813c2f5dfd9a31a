"""Scoring multi-view predictions, and the input-independent predictors they
must beat.

:func:`evaluate_predictions` applies VGGT's evaluation protocol
(arXiv:2503.11651, §4) to a set of scenes: camera AUC@30, RRA/RTA, median
rotation/translation errors and ATE; depth AbsRel and δ<1.25 after median-scale
alignment; point-map Overall (the mean of accuracy and completeness after a
Umeyama Sim(3) alignment), from the point head and from depth unprojected
through the predicted cameras. :func:`trivial_predictors` are the baselines that
see no test input; a method that does not beat them by a margin has not learnt
anything the metric can see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from jaxpapers.flashssm3d._flops import count_flops
from jaxpapers.flashssm3d._geometry import (
  pose_encoding_to_cameras,
  unproject_depth,
)
from jaxpapers.flashssm3d._metrics import (
  accuracy_completeness,
  ate,
  depth_metrics,
  pose_auc,
  relative_pose_errors,
  rra_rta,
)

__all__ = [
  "BatchedForward",
  "evaluate_predictions",
  "mean_pose_encoding",
  "trivial_predictors",
]

# one compiled program each instead of dozens of eager ops per call
_to_cameras = jax.jit(pose_encoding_to_cameras, static_argnums=1)
_unproject = jax.jit(unproject_depth)


def _check_hw(image_hw: Sequence[int]) -> None:
  if len(tuple(image_hw)) != 2 or not all(
    isinstance(v, (int, np.integer)) for v in image_hw
  ):
    raise ValueError(f"image_hw must be (H, W), two ints, got {image_hw!r}")


def _cameras(
  pose_enc: np.ndarray, image_hw: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
  ext, K = _to_cameras(np.asarray(pose_enc, np.float32), tuple(image_hw))
  return np.asarray(ext), np.asarray(K)


def _overall(points: np.ndarray, ref: np.ndarray, valid: np.ndarray) -> float:
  return float(
    np.mean(
      [
        accuracy_completeness(points[b], ref[b], valid[b], max_points=4096)[
          "overall"
        ]
        for b in range(len(ref))
      ]
    )
  )


def evaluate_predictions(
  pred: Mapping[str, np.ndarray],
  ref: Mapping[str, np.ndarray],
  image_hw: Sequence[int],
) -> dict[str, float]:
  """Every metric of ``pred`` against a reference, averaged over the N scenes.

  Args:
    pred: any of ``pose_enc [N, S, 9]``, ``depth [N, S, H, W, 1]``,
      ``points [N, S, H, W, 3]``; a metric whose inputs are missing is left out
      (a predictor of poses only gets camera metrics only).
    ref: ground truth (``extrinsics [N, S, 3, 4]``, ``depth [N, S, H, W]``,
      ``points``, ``valid [N, S, H, W]``), or a teacher's outputs (``pose_enc``,
      ``depth [N, S, H, W, 1]``, ``points``; every pixel counts as valid). A
      mapping with ``extrinsics`` is ground truth.
    image_hw: ``(H, W)`` of the images the pose encodings describe.

  Returns:
    ``{"AUC@30", "RRA@15", "RTA@15", "RRA@30", "RTA@30", "rot_err_median_deg",
    "trans_err_median_deg", "ATE"}`` with ``pose_enc``; ``{"depth_AbsRel",
    "depth_delta1.25"}`` with ``depth``; ``"points_overall"`` with ``points``;
    ``"points_overall_depthcam"`` (depth unprojected through the predicted
    cameras) with both depth and ``pose_enc``. Floats.
  """
  _check_hw(image_hw)
  if "extrinsics" in ref:
    ext_r, depth_r, pts_r, valid = (
      ref["extrinsics"],
      ref["depth"],
      ref["points"],
      ref["valid"],
    )
  else:
    ext_r = _cameras(ref["pose_enc"], image_hw)[0]
    depth_r, pts_r = ref["depth"][..., 0], ref["points"]
    valid = np.ones(depth_r.shape, bool)
  n = len(ext_r)
  out, ext_p, K_p = {}, None, None
  if "pose_enc" in pred:
    ext_p, K_p = _cameras(pred["pose_enc"], image_hw)
    errs = [relative_pose_errors(ext_p[b], ext_r[b]) for b in range(n)]
    rot = np.concatenate([e[0] for e in errs])
    tr = np.concatenate([e[1] for e in errs])
    out["AUC@30"] = pose_auc(rot, tr, 30)
    out.update({k: v for k, v in rra_rta(rot, tr).items() if "@5" not in k})
    out["rot_err_median_deg"] = float(np.median(rot))
    out["trans_err_median_deg"] = float(np.median(tr))
    out["ATE"] = float(np.mean([ate(ext_p[b], ext_r[b]) for b in range(n)]))
  if "depth" in pred:
    dms = [
      depth_metrics(pred["depth"][b], depth_r[b], valid[b]) for b in range(n)
    ]
    out["depth_AbsRel"] = float(np.mean([d["abs_rel"] for d in dms]))
    out["depth_delta1.25"] = float(np.mean([d["delta_1.25"] for d in dms]))
  if "points" in pred:
    out["points_overall"] = _overall(pred["points"], pts_r, valid)
  if "depth" in pred and ext_p is not None and K_p is not None:
    pts_dc = np.asarray(
      _unproject(np.asarray(pred["depth"][..., 0]), ext_p, K_p)
    )
    out["points_overall_depthcam"] = _overall(pts_dc, pts_r, valid)
  return out


def evaluate_models(
  predictions: Mapping[str, Any],
  scenes: Mapping[str, np.ndarray],
  image_hw: Sequence[int],
  teacher: Mapping[str, np.ndarray] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
  """Every model's :func:`evaluate_predictions` against ground truth and against
  the teacher.

  Args:
    predictions: model name -> its predictions on the ``N`` test scenes (what
      :func:`evaluate_predictions` takes as ``pred``), or a pair ``(scored
      against ground truth, scored against the teacher)`` (e.g.
      input-independent predictors fitted on each).
    scenes: the test scenes' ground truth (``extrinsics [N, S, 3, 4]``,
      ``depth``, ``points``, ``valid``).
    image_hw: ``(H, W)`` of the images.
    teacher: the teacher's outputs on the test scenes (``pose_enc``,
      ``depth [N, S, H, W, 1]``, ``points``), or None for no ``vs_teacher``
      rows.

  Returns:
    ``{model: {"vs_gt": metrics[, "vs_teacher": metrics]}}`` in the order of
    ``predictions``.

  Raises:
    ValueError: ``image_hw`` is not ``(H, W)``.
  """
  _check_hw(image_hw)
  out = {}
  for name, p in predictions.items():
    p_gt, p_teacher = p if isinstance(p, tuple) else (p, p)
    out[name] = {"vs_gt": evaluate_predictions(p_gt, scenes, image_hw)}
    if teacher is not None:
      out[name]["vs_teacher"] = evaluate_predictions(
        p_teacher, teacher, image_hw
      )
  return out


def mean_pose_encoding(pose_enc: np.ndarray) -> np.ndarray:
  """The mean pose encoding per view index, quaternion re-normalised.

  Args:
    pose_enc: ``[N, S, 9]`` pose encodings ``[t(3), q_xyzw(4), fov_h, fov_w]``.

  Returns:
    ``[S, 9]`` float32: the mean translation and field of view over the N
    scenes, and the normalised mean quaternion (the chordal mean, for
    quaternions of one hemisphere).
  """
  if (
    np.ndim(pose_enc) != 3 or np.shape(pose_enc)[-1] != 9 or len(pose_enc) == 0
  ):
    raise ValueError(
      "pose_enc must have shape [N, S, 9] with N >= 1, "
      f"got {np.shape(pose_enc)}"
    )
  m = np.asarray(pose_enc, np.float64).mean(0)
  q = m[:, 3:7] / np.maximum(
    np.linalg.norm(m[:, 3:7], axis=-1, keepdims=True), 1e-12
  )
  return np.concatenate([m[:, :3], q, m[:, 7:]], -1).astype(np.float32)


def trivial_predictors(
  fit: Mapping[str, np.ndarray], num_test: int, image_hw: Sequence[int]
) -> dict[str, dict[str, np.ndarray]]:
  """Input-independent predictors fitted on ``fit`` (the targets a model is
  trained on).

  None of them looks at the test images:

  * ``trivial_mean_pose``: the mean pose encoding per view index (cameras only);
  * ``trivial_constant_depth``: one constant depth per view index (the mean
    valid depth of that view index), and the points it unprojects to through the
    mean-pose cameras (depth and point-head metrics; depth metrics are
    median-scale aligned, so any constant scores the same);
  * ``trivial_mean_output``: the dataset-mean output: mean pose, per-pixel mean
    depth and points.

  Args:
    fit: ``pose_enc [N, S, 9]``, ``depth [N, S, H, W]``,
      ``points [N, S, H, W, 3]`` and ``valid [N, S, H, W]`` (ground truth, or a
      teacher's outputs with every pixel valid).
    num_test: the number of test scenes to predict for.
    image_hw: ``(H, W)``.

  Returns:
    ``{name: pred}`` with ``[num_test, ...]`` float32 arrays, for
    :func:`evaluate_predictions`.
  """
  missing = [
    k for k in ("pose_enc", "depth", "points", "valid") if k not in fit
  ]
  if missing:
    raise ValueError(
      f"fit must hold pose_enc, depth, points and valid; it lacks {missing}"
    )
  if not isinstance(num_test, (int, np.integer)) or num_test < 1:
    raise ValueError(f"num_test must be an int >= 1, got {num_test!r}")
  _check_hw(image_hw)
  pose = mean_pose_encoding(fit["pose_enc"])  # [S, 9]
  valid = np.asarray(fit["valid"], np.float64)
  depth = np.asarray(fit["depth"], np.float64)
  points = np.asarray(fit["points"], np.float64)
  cnt = valid.sum(0)  # [S, H, W]
  overall = (depth * valid).sum() / max(valid.sum(), 1.0)
  mean_depth = np.where(
    cnt > 0, (depth * valid).sum(0) / np.maximum(cnt, 1.0), overall
  )
  mean_points = (points * valid[..., None]).sum(0) / np.maximum(cnt, 1.0)[
    ..., None
  ]
  # [S]
  per_view = (depth * valid).sum((0, 2, 3)) / np.maximum(
    valid.sum((0, 2, 3)), 1.0
  )
  const = np.broadcast_to(per_view[:, None, None], mean_depth.shape).astype(
    np.float32
  )
  ext, K = _cameras(pose, image_hw)
  const_points = np.asarray(_unproject(const, ext, K))

  def tile(a):
    return np.broadcast_to(np.asarray(a, np.float32), (num_test,) + np.shape(a))

  return {
    "trivial_mean_pose": {"pose_enc": tile(pose)},
    "trivial_constant_depth": {
      "depth": tile(const[..., None]),
      "points": tile(const_points),
    },
    "trivial_mean_output": {
      "pose_enc": tile(pose),
      "depth": tile(mean_depth[..., None]),
      "points": tile(mean_points),
    },
  }


class BatchedForward:
  """A model's forward pass over NumPy scenes, jitted once for a fixed batch
  size.

  The model is split once (``nnx.split``); every batch of ``batch_size`` scenes
  runs the same compiled program, the last one padded by repeating its final
  scene (the padding is dropped from the outputs), so ``N`` scenes cost one
  compilation whatever ``N`` is.

  Args:
    model: a :class:`FlashSSM3D` or :class:`AATeacher` (anything returning a
      ``NamedTuple`` of arrays with a leading batch axis; ``pose_stages`` has
      the stage axis first).
    batch_size: scenes per compiled call.
    sharding: a ``NamedSharding`` for the batch (data parallelism), or None.

  Example::

    fwd = BatchedForward(model, batch_size=8)
    pred = fwd(images)  # images [N, S, H, W, 3] -> {"pose_enc": [N, S, 9], "depth": ...}
  """

  def __init__(
    self, model: nnx.Module, batch_size: int = 8, sharding: Any = None
  ):
    if not isinstance(batch_size, int) or batch_size < 1:
      raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    graphdef, self.state = nnx.split(model)
    self.sharding = sharding
    self.fn = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    self.batch_size = batch_size

  def _put(self, x: np.ndarray) -> jax.Array:
    if self.sharding is None:
      return jax.numpy.asarray(x)
    return jax.device_put(np.asarray(x), self.sharding)

  def flops(self, images: np.ndarray) -> float:
    """FLOPs of one compiled call (``batch_size`` scenes shaped like
    ``images[:1]``)."""
    x = self._put(np.repeat(images[:1], self.batch_size, 0))
    return float(count_flops(self.fn, self.state, x))  # pyright: ignore[reportArgumentType]

  def __call__(self, images: np.ndarray) -> dict[str, np.ndarray]:
    """The model's outputs on ``images [N, S, H, W, 3]``, as NumPy arrays with
    leading ``N`` (``pose_stages``: ``[stages, N, S, 9]``)."""
    n, bs = len(images), self.batch_size
    outs = []
    for i in range(0, n, bs):
      x = images[i : i + bs]
      m = len(x)
      if m < bs:
        x = np.concatenate([x, np.repeat(x[-1:], bs - m, 0)])
      out = self.fn(self.state, self._put(x))._asdict()
      outs.append(
        {
          k: np.asarray(v)[:, :m] if k == "pose_stages" else np.asarray(v)[:m]
          for k, v in out.items()
        }
      )
    return {
      k: np.concatenate(
        [o[k] for o in outs], axis=1 if k == "pose_stages" else 0
      )
      for k in outs[0]
    }
