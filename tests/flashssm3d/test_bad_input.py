"""Bad-input battery for ``jaxpapers.flashssm3d``: malformed calls, eagerly and
under jit."""

import math

import jax
import numpy as np
import pytest
from flax import nnx

from jaxpapers import flashssm3d as fs
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
HOST = "NumPy float64 evaluation metric (host side, not traced)"
TRACE = "host-side: traces and lowers the function it is given"
FILES = "host-side file reading and writing"
EYE34 = np.concatenate([np.eye(3, dtype=F32), np.zeros((3, 1), F32)], -1)
EXT = np.stack([EYE34, EYE34])  # [2, 3, 4]
# [2, 3, 3]
K = np.stack([np.array([[8, 0, 4], [0, 8, 4], [0, 0, 1]], F32)] * 2)
PTS = np.random.default_rng(0).normal(size=(5, 3)).astype(F32)
PRED = fs.Predictions(
  *(
    np.zeros(s, F32)
    for s in (
      (1, 2, 9),
      (1, 2, 4, 4, 1),
      (1, 2, 4, 4),
      (1, 2, 4, 4, 3),
      (1, 2, 4, 4),
      (1, 1, 2, 9),
    )
  )
)
TGT = fs.DistillTargets(
  np.zeros((1, 2, 9), F32),
  np.ones((1, 2, 4, 4, 1), F32),
  np.ones((1, 2, 4, 4), F32),
  np.zeros((1, 2, 4, 4, 3), F32),
  np.ones((1, 2, 4, 4), F32),
  np.ones((1, 2, 4, 4), bool),
)
SSM = dict(
  x=np.ones((1, 3, 2), F32),
  dt=np.full((1, 3, 2), 0.1, F32),
  A=-np.ones((2, 4), F32),
  B=np.ones((1, 3, 4), F32),
  C=np.ones((1, 3, 4), F32),
  D=np.ones((2,), F32),
)


def _ssm(**over):
  kw = {**SSM, **over}
  return tuple(kw[k] for k in ("x", "dt", "A", "B", "C", "D"))


CASES = [
  # geometry: values (NaN under jit) and shapes (trace time)
  Case(
    "quat_to_mat",
    fs.quat_to_mat,
    (np.zeros((2, 4), F32),),
    match="norm > 1e-6",
    jit="nan",
    id="quat_to_mat-zero",
  ),
  Case(
    "quat_to_mat",
    fs.quat_to_mat,
    (np.ones((2, 3), F32),),
    match=r"q must have shape",
    id="quat_to_mat-shape",
  ),
  Case(
    "quat_to_mat",
    fs.quat_to_mat,
    (np.ones((2, 4), np.int32),),
    error=TypeError,
    match="q must be a floating",
    id="quat_to_mat-int",
  ),
  Case(
    "mat_to_quat",
    fs.mat_to_quat,
    (2 * np.eye(3, dtype=F32),),
    match="R must be rotation",
    jit="nan",
    id="mat_to_quat-2I",
  ),
  Case(
    "mat_to_quat",
    fs.mat_to_quat,
    (np.diag(F32([1, 1, -1])),),
    match="R must be rotation",
    jit="checkify",
    id="mat_to_quat-reflection",
  ),
  Case(
    "mat_to_quat",
    fs.mat_to_quat,
    (np.eye(4, dtype=F32),),
    match=r"R must have shape",
    id="mat_to_quat-shape",
  ),
  Case(
    "intrinsics_from_fov",
    fs.intrinsics_from_fov,
    (F32([0.0]), F32([1.0])),
    {"image_hw": (8, 8)},
    match=r"\(0, pi\)",
    jit="nan",
  ),
  Case(
    "intrinsics_from_fov",
    fs.intrinsics_from_fov,
    (F32([1.0]), F32([1.0])),
    {"image_hw": (8, 0)},
    match="image_hw must be a pair",
    id="intrinsics_from_fov-hw",
  ),
  Case(
    "pose_encoding_to_cameras",
    fs.pose_encoding_to_cameras,
    (F32([[0, 0, 0, 0, 0, 0, 0, 1, 1]]),),
    {"image_hw": (8, 8)},
    match="norm > 1e-6",
    jit="nan",
  ),
  Case(
    "pose_encoding_to_cameras",
    fs.pose_encoding_to_cameras,
    (np.zeros((1, 7), F32),),
    {"image_hw": (8, 8)},
    match=r"pose_enc must have shape",
    id="pose_enc-shape",
  ),
  Case(
    "cameras_to_pose_encoding",
    fs.cameras_to_pose_encoding,
    (EXT, -K),
    {"image_hw": (8, 8)},
    match="positive focal",
    jit="nan",
  ),
  Case(
    "cameras_to_pose_encoding",
    fs.cameras_to_pose_encoding,
    (EXT, K[:1]),
    {"image_hw": (8, 8)},
    match="share leading dims",
    id="cameras_to_pose-lead",
  ),
  Case(
    "invert_extrinsics",
    fs.invert_extrinsics,
    (np.zeros((2, 3, 3), F32),),
    match=r"extrinsics must have shape",
  ),
  Case(
    "compose_extrinsics",
    fs.compose_extrinsics,
    (EXT, np.zeros((2, 4, 3), F32)),
    match=r"b must have shape",
  ),
  Case(
    "camera_centers",
    fs.camera_centers,
    (np.zeros((2, 9), F32),),
    match=r"extrinsics must have shape",
  ),
  Case(
    "project_points",
    fs.project_points,
    (PTS, EXT[0], K[0]),
    {"eps": 0.0},
    match=("eps must be > 0"),
  ),
  Case(
    "project_points",
    fs.project_points,
    (PTS[:, :2], EXT[0], K[0]),
    match="points must have shape",
    id="project_points-shape",
  ),
  Case(
    "unproject_depth",
    fs.unproject_depth,
    (np.ones((2, 4, 4), F32), EXT, K[:, :2]),
    match=r"intrinsics must have shape",
  ),
  Case(
    "normalize_scene",
    fs.normalize_scene,
    (np.zeros((1, 2, 4, 4, 3), F32), EXT[None], np.ones((1, 2, 4), bool)),
    match=r"valid must be \[B, S, H, W\]",
  ),
  # losses
  Case(
    "weighted_umeyama",
    fs.weighted_umeyama,
    (PTS, PTS, np.zeros(5, F32)),
    match="positive sum",
    jit="nan",
    id="umeyama-zero-w",
  ),
  Case(
    "weighted_umeyama",
    fs.weighted_umeyama,
    (PTS, PTS, -np.ones(5, F32)),
    match="non-negative",
    jit="nan",
    id="umeyama-negative-w",
  ),
  Case(
    "weighted_umeyama",
    fs.weighted_umeyama,
    (PTS[:0], PTS[:0]),
    match="at least one point",
    id="umeyama-no-points",
  ),
  Case(
    "weighted_umeyama",
    fs.weighted_umeyama,
    (PTS, np.full_like(PTS, np.nan)),
    match="must be finite",
    jit="nan",
    id="umeyama-nan",
  ),
  Case(
    "procrustes_loss",
    fs.procrustes_loss,
    (PTS, PTS),
    {"robust": "huber", "delta": 0.0},
    match="delta must be > 0",
  ),
  Case(
    "procrustes_loss",
    fs.procrustes_loss,
    (PTS, PTS, -np.ones(5, F32)),
    match="non-negative",
    jit="nan",
    id="procrustes-negative-w",
  ),
  Case(
    "procrustes_loss",
    fs.procrustes_loss,
    (PTS, PTS),
    {"robust": "l1"},
    match="robust must be one of",
    id="procrustes-robust",
  ),
  Case(
    "reprojection_loss",
    fs.reprojection_loss,
    (PTS[None], (EXT[None], K[None]), (EXT[None], K[None, :1])),
    {"image_hw": (8, 8)},
    match="intrinsics must be",
  ),
  Case(
    "reprojection_loss",
    fs.reprojection_loss,
    (PTS[None], (EXT[None], K[None]), (EXT[None], K[None])),
    {"image_hw": (8, 8), "delta": 0},
    match="delta must be > 0",
    id="reprojection-delta",
  ),
  Case(
    "apply_sim3_to_cameras",
    fs.apply_sim3_to_cameras,
    (EXT[None], F32([1.0]), np.eye(3, dtype=F32), F32([[0, 0, 0]])),
    match=r"s, R, t must be",
  ),
  Case(
    "camera_loss",
    fs.camera_loss,
    (np.zeros((1, 2, 9), F32), np.zeros((1, 2, 9), F32)),
    {"frame_valid": np.ones((2, 1), bool)},
    match="frame_valid must be",
  ),
  Case(
    "camera_loss",
    fs.camera_loss,
    (np.zeros((1, 2, 7), F32), np.zeros((1, 2, 7), F32)),
    match=r"pose_stages \[n, ..., 9\]",
    id="camera_loss-9",
  ),
  Case(
    "camera_loss",
    fs.camera_loss,
    (np.zeros((1, 2, 9), F32), np.zeros((1, 2, 9), F32)),
    {"gamma": -0.5},
    match="gamma must be > 0",
    id="camera_loss-gamma",
  ),
  Case(
    "conf_regression_loss",
    fs.conf_regression_loss,
    (
      np.zeros((1, 1, 2, 2, 1), F32),
      np.zeros((1, 1, 2, 2, 1), F32),
      np.zeros((1, 1, 2, 2), F32),
    ),
    match="conf must be > 0",
    jit="nan",
  ),
  Case(
    "gradient_loss",
    fs.gradient_loss,
    (
      np.zeros((1, 1, 2, 2, 1), F32),
      np.zeros((1, 1, 2, 2, 1), F32),
      np.ones((1, 1, 2), F32),
    ),
    match="conf must be",
  ),
  Case(
    "LossWeights",
    fs.LossWeights,
    (),
    {"camera": -1.0},
    match="LossWeights.camera",
    jit=None,
    jit_reason="a frozen config dataclass, checked at construction",
  ),
  Case(
    "distillation_loss",
    fs.distillation_loss,
    (PRED._replace(depth=np.zeros((1, 2, 4, 4), F32)), TGT, fs.LossWeights()),
    match="student.depth",
  ),
  Case(
    "distillation_loss",
    fs.distillation_loss,
    (PRED, TGT, {"camera": 1.0}),
    error=TypeError,
    match="weights must be a LossWeights",
    id="distillation_loss-weights",
  ),
  # SSM
  Case(
    "selective_scan",
    fs.selective_scan,
    _ssm(dt=-np.ones((1, 3, 2), F32)),
    match="dt must be finite step sizes >= 0",
    jit="nan",
  ),
  Case(
    "selective_scan",
    fs.selective_scan,
    _ssm(A=np.ones((2, 4), F32)),
    match="negative",
    jit="checkify",
    id="selective_scan-A",
  ),
  Case(
    "selective_scan",
    fs.selective_scan,
    _ssm(B=np.ones((1, 3, 3), F32)),
    match="B and C must be",
    id="selective_scan-shape",
  ),
  Case(
    "selective_scan",
    fs.selective_scan,
    _ssm(),
    {"method": "chunked", "chunk_size": 0},
    match="chunk_size must be an int >= 1",
    id="selective_scan-chunk",
  ),
  Case(
    "selective_scan",
    fs.selective_scan,
    _ssm(),
    {"method": "fft"},
    match="method must be",
    id="selective_scan-method",
  ),
  Case(
    "scan_order",
    fs.scan_order,
    (2, (2, 2)),
    {"kind": "diagonal"},
    match="kind must be",
    jit=None,
    jit_reason="static permutation built with NumPy",
  ),
  Case(
    "scan_order",
    fs.scan_order,
    (0, (2, 2)),
    {"kind": "row"},
    match="num_views",
    jit=None,
    jit_reason="static permutation built with NumPy",
    id="scan_order-views",
  ),
  Case(
    "BiSSM",
    lambda: fs.BiSSM(4, method="fft", rngs=nnx.Rngs(0)),
    match="method must be",
    jit=None,
    jit_reason="module constructor: static configuration",
  ),
  # models and configs
  Case(
    "FlashSSM3DConfig",
    fs.FlashSSM3DConfig,
    (),
    {"image_size": 30, "patch": 4},
    match="divisible",
    jit=None,
    jit_reason="frozen config dataclass",
  ),
  Case(
    "TeacherConfig",
    fs.TeacherConfig,
    (),
    {"depth": 0},
    match="TeacherConfig.depth",
    jit=None,
    jit_reason="frozen config dataclass",
  ),
  Case(
    "FlashSSM3DConfig",
    fs.FlashSSM3DConfig,
    (),
    {"pixel_std": (0.1, 0.0, 0.1)},
    match="FlashSSM3DConfig.pixel_std must be > 0",
    jit=None,
    jit_reason="frozen config dataclass",
    id="FlashSSM3DConfig-pixel_std",
  ),
  Case(
    "TeacherConfig",
    fs.TeacherConfig,
    (),
    {"pixel_mean": (0.5, 0.5)},
    match="TeacherConfig.pixel_mean must be 3 finite floats",
    jit=None,
    jit_reason="frozen config dataclass",
    id="TeacherConfig-pixel_mean",
  ),
  Case(
    "pixel_statistics",
    fs.pixel_statistics,
    (np.zeros((2, 4, 4, 4)),),
    match=r"images must be \[\.\.\., 3\] RGB",
    jit=None,
    jit_reason="host-side NumPy statistics of a data set",
  ),
  Case(
    "FlashSSM3D",
    lambda: fs.FlashSSM3D(fs.TeacherConfig(), rngs=nnx.Rngs(0)),
    error=TypeError,
    match="config must be a FlashSSM3DConfig",
    jit=None,
    jit_reason="module constructor: static configuration",
  ),
  Case(
    "AATeacher",
    lambda: fs.AATeacher(fs.FlashSSM3DConfig(), rngs=nnx.Rngs(0)),
    error=TypeError,
    match="config must be a TeacherConfig",
    jit=None,
    jit_reason="module constructor: static configuration",
  ),
  Case(
    "count_params",
    fs.count_params,
    ({"w": 1},),
    error=TypeError,
    match="model must be an nnx.Module",
    jit=None,
    jit_reason="host-side parameter count",
  ),
  # data
  Case(
    "render_scenes",
    fs.render_scenes,
    (0, 2.5, 2),
    match="num_scenes must be an int",
    jit=None,
    jit_reason="host-side scene sampling (seeded NumPy)",
  ),
  Case(
    "render_scenes",
    fs.render_scenes,
    (0, 1, 2),
    {"split": "indoor"},
    match="split must be",
    jit=None,
    jit_reason="host-side scene sampling (seeded NumPy)",
    id="render_scenes-split",
  ),
  Case(
    "build_scene_dataset",
    fs.build_scene_dataset,
    ("/nonexistent",),
    {"split": "indoor"},
    match="split must be one of",
    jit=None,
    jit_reason="writes files (TFDS builder)",
  ),
  Case(
    "batch_from_records",
    fs.batch_from_records,
    ([],),
    match="non-empty",
    jit=None,
    jit_reason="stacks host records",
  ),
  # metrics (NumPy, host side)
  Case(
    "depth_metrics",
    fs.depth_metrics,
    (np.ones((1, 2, 2)), np.ones((1, 2, 2))),
    {"align": "mean"},
    match="align must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "depth_metrics",
    fs.depth_metrics,
    (np.full((1, 2, 2), np.nan), np.ones((1, 2, 2))),
    match="must be finite",
    jit=None,
    jit_reason=HOST,
    id="depth_metrics-nan",
  ),
  Case(
    "depth_metrics",
    fs.depth_metrics,
    (np.ones((1, 2, 2)), np.ones((1, 2, 2)), np.ones((1, 3, 2), bool)),
    match="valid must be",
    jit=None,
    jit_reason=HOST,
    id="depth_metrics-valid",
  ),
  Case(
    "relative_pose_errors",
    fs.relative_pose_errors,
    (EXT, EXT[:1]),
    match="must match",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "relative_pose_errors",
    fs.relative_pose_errors,
    (EXT * np.nan, EXT),
    match="finite",
    jit=None,
    jit_reason=HOST,
    id="relative_pose_errors-nan",
  ),
  Case(
    "pose_auc",
    fs.pose_auc,
    ([1.0, np.nan], [1.0, 2.0]),
    match="no NaN",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "pose_auc",
    fs.pose_auc,
    ([1.0], [1.0]),
    {"max_threshold": 0},
    match="max_threshold",
    jit=None,
    jit_reason=HOST,
    id="pose_auc-threshold",
  ),
  Case(
    "rra_rta",
    fs.rra_rta,
    ([], []),
    match="non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "rra_rta",
    fs.rra_rta,
    ([1.0, 2.0], [1.0]),
    match="equal-length",
    jit=None,
    jit_reason=HOST,
    id="rra_rta-length",
  ),
  Case(
    "ate", fs.ate, (EXT, EXT[:1]), match="must match", jit=None, jit_reason=HOST
  ),
  Case(
    "umeyama_np",
    fs.umeyama_np,
    (PTS, PTS, np.zeros(5)),
    match="positive sum",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "umeyama_np",
    fs.umeyama_np,
    (PTS, PTS, -np.ones(5)),
    match="non-negative",
    jit=None,
    jit_reason=HOST,
    id="umeyama_np-negative",
  ),
  Case(
    "accuracy_completeness",
    fs.accuracy_completeness,
    (PTS, PTS, np.zeros(5, bool)),
    match="no valid point",
    jit=None,
    jit_reason=HOST,
  ),
  # FLOP counting and files: host side
  Case(
    "count_flops",
    fs.count_flops,
    ("not a function", PTS),
    error=TypeError,
    match="fn must be callable",
    jit=None,
    jit_reason=TRACE,
  ),
  Case(
    "xla_flops",
    fs.xla_flops,
    (PTS,),
    error=TypeError,
    match="lowered_or_compiled must be",
    jit=None,
    jit_reason=TRACE,
  ),
  Case(
    "load_multiview_scenes",
    fs.load_multiview_scenes,
    ("/nonexistent/scenes",),
    {"num_views": 2, "image_size": 8},
    match="data_dir must be an existing folder",
    jit=None,
    jit_reason=FILES,
  ),
  Case(
    "load_teacher_predictions",
    fs.load_teacher_predictions,
    ("/nonexistent/teacher.npz",),
    match="path must be an existing .npz",
    jit=None,
    jit_reason=FILES,
  ),
  Case(
    "save_teacher_predictions",
    fs.save_teacher_predictions,
    ("/tmp/never_written.npz",),
    {
      "pose_enc": np.zeros((1, 2, 9)),
      "depth": np.ones((1, 2, 4, 4)),
      "depth_conf": np.ones((1, 2, 4, 4)),
      "points": np.zeros((1, 2, 4, 4, 3)),
      "point_conf": np.zeros((1, 2, 4, 4)),  # confidences must be >= 1
    },
    match="depth_conf and point_conf must be >= 1",
    jit=None,
    jit_reason=FILES,
    id="save_teacher_predictions-conf",
  ),
]

_FIT = {
  "pose_enc": np.zeros((1, 2, 9), F32),
  "depth": np.ones((1, 2, 4, 4), F32),
  "points": np.zeros((1, 2, 4, 4, 3), F32),
  "valid": np.ones((1, 2, 4, 4), bool),
}
_HOST = "host-side NumPy scoring, not meant to be jitted"
_NAN_CAMERAS = fs.SceneBatch(  # extrinsics that are not rotations
  images=np.zeros((1, 2, 4, 4, 3), F32),
  depth=np.ones((1, 2, 4, 4), F32),
  points=np.zeros((1, 2, 4, 4, 3), F32),
  valid=np.ones((1, 2, 4, 4), bool),
  extrinsics=np.full((1, 2, 3, 4), np.nan, F32),
  intrinsics=np.tile(np.eye(3, dtype=F32), (1, 2, 1, 1)),
  scale=np.ones(1, F32),
)
CASES += [
  Case(
    "mean_pose_encoding",
    fs.mean_pose_encoding,
    (np.zeros((2, 9), F32),),
    match=r"pose_enc must have shape \[N, S, 9\]",
    jit=None,
    jit_reason=_HOST,
  ),
  Case(
    "trivial_predictors",
    fs.trivial_predictors,
    ({"pose_enc": _FIT["pose_enc"]}, 2, (4, 4)),
    match="fit must hold",
    jit=None,
    jit_reason=_HOST,
    id="trivial_predictors-keys",
  ),
  Case(
    "trivial_predictors",
    fs.trivial_predictors,
    (_FIT, 0, (4, 4)),
    match="num_test must be",
    jit=None,
    jit_reason=_HOST,
    id="trivial_predictors-n",
  ),
  Case(
    "evaluate_models",
    fs.evaluate_models,
    ({}, _FIT, (4, 4, 3)),
    match=r"image_hw must be \(H, W\)",
    jit=None,
    jit_reason=_HOST,
  ),
  Case(
    "evaluate_predictions",
    fs.evaluate_predictions,
    ({}, _FIT, (4,)),
    match=r"image_hw must be \(H, W\)",
    jit=None,
    jit_reason=_HOST,
  ),
  Case(
    "BatchedForward",
    lambda: fs.BatchedForward(None, batch_size=0),
    match="batch_size must be",
    jit=None,
    jit_reason="a host-side batching wrapper",
  ),
  Case(
    "render_scene_arrays",
    fs.render_scene_arrays,
    (0, 2, 2),
    {"chunk": 0},
    match="chunk must be an int >= 1",
    jit=None,
    jit_reason="host-side rendering loop",
  ),
  Case(
    "scene_arrays",
    lambda: fs.scene_arrays(_NAN_CAMERAS),
    match="non-finite pose encoding",
    jit=None,
    jit_reason="converts a batch to host NumPy arrays",
  ),
  Case(
    "ground_truth_targets",
    fs.ground_truth_targets,
    ({"depth": _FIT["depth"]},),
    match="scenes must hold pose_enc",
    jit=None,
    jit_reason="host-side NumPy targets",
  ),
]
_RECIPE = (
  "builds a step, an optimizer, a step count or a batch sampler on the host"
)
CASES += [
  Case(
    "train_step",
    fs.train_step,
    ({"camera": 1.0},),
    error=TypeError,
    match="weights must be a LossWeights",
    jit=None,
    jit_reason=_RECIPE,
  ),
  Case(
    "train_optimizer",
    fs.train_optimizer,
    (0.0,),
    {"warmup": 1, "steps": 4},
    match="learning_rate must be a finite number > 0",
    jit=None,
    jit_reason=_RECIPE,
  ),
  Case(
    "train_optimizer",
    fs.train_optimizer,
    (1e-3,),
    {"warmup": 1, "steps": 0},
    match="steps must be an int >= 1",
    jit=None,
    jit_reason=_RECIPE,
    id="train_optimizer-steps",
  ),
  Case(
    "steps_within_budget",
    fs.steps_within_budget,
    (1.0, 10.0),
    {"min_steps": 5, "max_steps": 2},
    match="max_steps must be an int >= min_steps",
    jit=None,
    jit_reason=_RECIPE,
  ),
  Case(
    "steps_within_budget",
    fs.steps_within_budget,
    (1.0, float("nan")),
    {"min_steps": 1, "max_steps": 2},
    match="budget_flops must be",
    jit=None,
    jit_reason=_RECIPE,
    id="steps_within_budget-nan",
  ),
  Case(
    "sample_batches",
    fs.sample_batches,
    (np.zeros((3, 2), F32), {"t": np.zeros((2, 1), F32)}),
    {"batch_size": 2, "seed": 0},
    match="targets must have 3 examples",
    jit=None,
    jit_reason=_RECIPE,
  ),
  Case(
    "sample_batches",
    fs.sample_batches,
    (np.zeros((3, 2), F32), {}),
    {"batch_size": 0, "seed": 0},
    match="batch_size must be an int >= 1",
    jit=None,
    jit_reason=_RECIPE,
    id="sample_batches-size",
  ),
  Case(
    "compile_step",
    fs.compile_step,
    (None, 0.0, 0.0),
    error=TypeError,
    match="step_fn must be callable",
    jit=None,
    jit_reason=_RECIPE,
  ),
  Case(
    "views_within",
    fs.views_within,
    (0.0, [1], [1.0], 1.0, 0.0),
    match="budget_s must be > 0",
    jit=None,
    jit_reason="host-side arithmetic on a measured sweep",
  ),
  Case(
    "scaling_summary",
    fs.scaling_summary,
    ([1, 2], {"m": {"time_s": [1.0], "memory_mib": [1.0]}}),
    {"fit_min_views": 1},
    match="one time and memory per view",
    jit=None,
    jit_reason="host-side fits of a measured sweep",
  ),
  Case(
    "scaling_models",
    fs.scaling_models,
    (),
    {
      "width": 8,
      "depth": 1,
      "patch": 3,
      "image_size": 8,
      "state": 4,
      "heads": 2,
    },
    match="must be divisible by patch",
    jit=None,
    jit_reason="builds models on the host",
  ),
  Case(
    "scaling_study",
    fs.scaling_study,
    ([1],),
    {
      "width": 8,
      "depth": 1,
      "patch": 3,
      "image_size": 8,
      "state": 4,
      "heads": 2,
      "fit_min_views": 1,
    },
    match="must be divisible by patch",
    jit=None,
    jit_reason="a host-side timing study",
  ),
]

EXEMPT = {
  "compiled_memory_bytes": (
    "reads a compiled program's memory analysis; "
    "documented -1 where there is none"
  ),
  "view_scaling": (
    "a host-side timing loop; its bad arguments are tested in test_scaling.py"
  ),
  "DistillTargets": (
    "a NamedTuple container; its fields are checked by distillation_loss"
  ),
  "Predictions": "a NamedTuple container of model outputs; no computation",
  "SceneBatch": "a NamedTuple container; render_scenes validates what fills it",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(fs, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_depth_metrics_with_no_valid_pixel_is_nan():
  out = fs.depth_metrics(
    np.ones((2, 3, 3)), np.ones((2, 3, 3)), np.zeros((2, 3, 3), bool)
  )
  assert math.isnan(out["abs_rel"]) and math.isnan(out["delta_1.25"])


def test_selective_scan_of_an_empty_sequence_is_empty():
  args = _ssm(
    x=np.ones((1, 0, 2), F32),
    dt=np.ones((1, 0, 2), F32),
    B=np.ones((1, 0, 4), F32),
    C=np.ones((1, 0, 4), F32),
  )
  for method in fs.SCAN_METHODS:
    y = fs.selective_scan(*args, method=method, chunk_size=4)
    assert y.shape == (1, 0, 2)


def test_procrustes_loss_set_with_all_zero_weights_contributes_zero():
  w = np.stack([np.zeros(5, F32), np.ones(5, F32)])
  X = np.stack([PTS, PTS])
  loss = jax.jit(fs.procrustes_loss)(X, 2.0 * X + 1.0, w)
  assert float(loss) == pytest.approx(0.0, abs=1e-5)


def test_non_unit_quaternions_are_normalised_not_rejected():
  R = np.asarray(fs.quat_to_mat(F32([0, 0, 0, 3])))
  np.testing.assert_allclose(R, np.eye(3), atol=1e-6)


def test_normalize_scene_without_valid_points_keeps_unit_scale():
  pts = np.ones((1, 2, 2, 2, 3), F32)
  _, _, scale = jax.jit(fs.normalize_scene)(
    pts, EXT[None], np.zeros((1, 2, 2, 2), bool)
  )
  assert float(scale[0]) == 1.0
