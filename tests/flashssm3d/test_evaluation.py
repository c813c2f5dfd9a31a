"""Scoring and baselines of ``jaxpapers.flashssm3d._evaluation`` against
hand-computed values."""

import jax
import numpy as np
import pytest
from flax import nnx

from jaxpapers import flashssm3d as fs


def test_trivial_predictors_fitted_on_their_targets():
  """Against the data they were fitted on, the dataset-mean depth is exact for a
  static scene."""
  rng = np.random.default_rng(0)
  n, S, H = 3, 2, 4
  depth = np.broadcast_to(rng.uniform(1, 2, (1, S, H, H)), (n, S, H, H)).astype(
    np.float32
  )
  fit = {
    "pose_enc": np.tile(
      np.array([0, 0, 0, 0, 0, 0, 1, 1, 1], np.float32), (n, S, 1)
    ),
    "depth": depth,
    "points": rng.normal(size=(n, S, H, H, 3)).astype(np.float32),
    "valid": np.ones((n, S, H, H), bool),
  }
  # mean translation x of view 1: 2.0
  fit["pose_enc"][:, 1, 0] = np.array([1.0, 2.0, 3.0])
  tp = fs.trivial_predictors(fit, 5, (H, H))
  assert set(tp) == {
    "trivial_mean_pose",
    "trivial_constant_depth",
    "trivial_mean_output",
  }
  np.testing.assert_allclose(
    tp["trivial_mean_output"]["depth"][0, ..., 0], depth[0], rtol=1e-6
  )
  np.testing.assert_allclose(
    tp["trivial_mean_pose"]["pose_enc"][4, 1, 0], 2.0, rtol=1e-6
  )
  c = tp["trivial_constant_depth"]["depth"]
  assert c.shape == (5, S, H, H, 1)
  # one value per view
  np.testing.assert_allclose(c[0, 1], depth[0, 1].mean(), rtol=1e-5)
  assert np.ptp(c[0, 1]) == 0


def test_mean_pose_of_opposite_turns_is_the_identity_rotation():
  """Per view index: mean translation and FoV, the renormalised mean of w >= 0
  quaternions."""
  th = np.deg2rad(40.0)
  q = np.array(
    [
      [0.0, np.sin(th / 2), 0.0, np.cos(th / 2)],
      [0.0, -np.sin(th / 2), 0.0, np.cos(th / 2)],
    ]
  )
  pe = np.zeros((2, 2, 9), np.float32)
  pe[:, 0, 6] = 1.0
  pe[:, 1, 3:7] = q
  pe[:, 1, :3] = [[0.4, 0.0, 0.1], [-0.4, 0.0, 0.3]]
  pe[..., 7:] = [[[1.0, 1.2], [1.0, 1.2]], [[1.2, 1.4], [1.2, 1.4]]]
  m = fs.mean_pose_encoding(pe)
  np.testing.assert_allclose(m[1, 3:7], [0.0, 0.0, 0.0, 1.0], atol=1e-7)
  np.testing.assert_allclose(m[1, :3], [0.0, 0.0, 0.2], atol=1e-7)
  np.testing.assert_allclose(m[:, 7:], [[1.1, 1.3], [1.1, 1.3]], rtol=1e-6)


def test_perfect_predictions_score_perfectly_against_ground_truth():
  """Ground truth scored against itself: AUC 1, AbsRel 0, delta 1, Overall 0
  (closed forms)."""
  b = fs.render_scenes(jax.random.key(0), 2, 3, image_size=8)
  gt = {
    k: np.asarray(getattr(b, k))
    for k in ("extrinsics", "depth", "points", "valid")
  }
  pose = np.asarray(
    fs.cameras_to_pose_encoding(b.extrinsics, b.intrinsics, (8, 8))
  )
  pred = {
    "pose_enc": pose,
    "depth": gt["depth"][..., None],
    "points": gt["points"],
  }
  m = fs.evaluate_predictions(pred, gt, (8, 8))
  np.testing.assert_allclose(
    [m["AUC@30"], m["RRA@15"], m["depth_delta1.25"]], 1.0
  )
  np.testing.assert_allclose(
    [m["depth_AbsRel"], m["ATE"], m["points_overall"]], 0.0, atol=1e-4
  )
  assert m["points_overall_depthcam"] < 1e-3
  only_pose = fs.evaluate_predictions({"pose_enc": pose}, gt, (8, 8))
  assert "depth_AbsRel" not in only_pose and "points_overall" not in only_pose


def test_evaluate_models_scores_each_model_against_its_references():
  """A pair is scored element by element: the teacher's own outputs score
  perfectly against the teacher (closed forms), a perfect predictor against GT;
  the other rows are the metrics of that prediction against that reference."""
  b = fs.render_scenes(jax.random.key(0), 2, 3, image_size=8)
  gt = {
    k: np.asarray(getattr(b, k))
    for k in ("extrinsics", "depth", "points", "valid")
  }
  pose = np.asarray(
    fs.cameras_to_pose_encoding(b.extrinsics, b.intrinsics, (8, 8))
  )
  perfect = {
    "pose_enc": pose,
    "depth": gt["depth"][..., None],
    "points": gt["points"],
  }
  # not a scale of the truth
  teacher = {**perfect, "depth": perfect["depth"] ** 2}
  out = fs.evaluate_models(
    {"a": perfect, "t": (teacher, teacher)}, gt, (8, 8), teacher
  )
  assert list(out) == ["a", "t"] and all(
    set(v) == {"vs_gt", "vs_teacher"} for v in out.values()
  )
  for row in (out["a"]["vs_gt"], out["t"]["vs_teacher"]):
    assert (
      row["depth_AbsRel"] == pytest.approx(0.0, abs=1e-6)
      and row["AUC@30"] == 1.0
    )
  assert out["a"]["vs_teacher"] == fs.evaluate_predictions(
    perfect, teacher, (8, 8)
  )
  assert out["t"]["vs_gt"] == fs.evaluate_predictions(teacher, gt, (8, 8))
  assert (
    out["t"]["vs_gt"]["depth_AbsRel"] > 0.05
    and out["a"]["vs_teacher"]["depth_AbsRel"] > 0.05
  )
  assert set(fs.evaluate_models({"a": perfect}, gt, (8, 8))["a"]) == {"vs_gt"}


@pytest.mark.slow  # two compilations and an eager forward: ~30 s on 2 cores
def test_batched_forward_pads_the_last_batch_and_equals_one_call():
  cfg = fs.FlashSSM3DConfig(
    width=8, depth=1, state=2, image_size=8, registers=1, camera_stages=1
  )
  model = fs.FlashSSM3D(cfg, rngs=nnx.Rngs(0))
  images = np.asarray(
    fs.render_scenes(jax.random.key(1), 5, 2, image_size=8).images
  )
  # batches of 2, 2 and 1 (+1 padding)
  out = fs.BatchedForward(model, batch_size=2)(images)
  ref = model(images)
  assert out["pose_enc"].shape == (5, 2, 9) and out["pose_stages"].shape[1] == 5
  np.testing.assert_allclose(
    out["depth"], np.asarray(ref.depth), rtol=1e-4, atol=1e-5
  )
  np.testing.assert_allclose(
    out["pose_enc"], np.asarray(ref.pose_enc), rtol=1e-4, atol=1e-5
  )
