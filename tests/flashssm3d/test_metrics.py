"""Metric tests against hand-computed values."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jaxpapers import flashssm3d as fs


def test_pose_auc_hand_computed():
  z = np.zeros(2)
  assert fs.pose_auc(z, z) == pytest.approx(1.0)
  # bins: 0.5 -> bin 0, 10.5 -> bin 10: cumsum 0.5 for bins 0..9, 1.0 for 10..29
  assert fs.pose_auc(np.array([0.5, 10.5]), z) == pytest.approx(
    (10 * 0.5 + 20 * 1.0) / 30
  )
  # the max of rotation and translation error counts
  assert fs.pose_auc(np.array([5.5]), np.array([20.2])) == pytest.approx(
    10 / 30
  )
  # 30 deg lands in the closed last bin (np.histogram), 31 deg is outside
  assert fs.pose_auc(np.array([30.0]), np.array([0.0])) == pytest.approx(1 / 30)
  assert fs.pose_auc(np.array([31.0]), np.array([0.0])) == 0.0
  assert fs.pose_auc(
    np.array([2.0]), np.array([0.0]), max_threshold=5
  ) == pytest.approx(3 / 5)
  r = fs.rra_rta(np.array([1.0, 10.0, 40.0]), np.array([20.0, 2.0, 4.0]))
  assert r["RRA@5"] == pytest.approx(1 / 3) and r["RTA@5"] == pytest.approx(
    2 / 3
  )
  assert r["RRA@15"] == pytest.approx(2 / 3) and r["RTA@30"] == pytest.approx(
    1.0
  )


def _cams(rng, S):
  R = Rotation.random(S, random_state=rng).as_matrix()
  t = rng.normal(size=(S, 3))
  return np.concatenate([R, t[..., None]], -1)


def test_relative_pose_errors_known_perturbation_and_gauge():
  rng = np.random.default_rng(0)
  gt = _cams(rng, 4)
  # a global Sim(3) change of world frame leaves relative errors at zero
  s, Rw, tw = (
    2.5,
    Rotation.random(random_state=rng).as_matrix(),
    rng.normal(size=3),
  )
  # world X' = s Rw X + tw  =>  cam = R X + t = R Rw^T (X' - tw)/s + t  => scale the camera by s
  pred = np.concatenate(
    [
      gt[:, :, :3] @ Rw.T,
      (s * gt[:, :, 3] - np.einsum("sij,j->si", gt[:, :, :3] @ Rw.T, tw))[
        ..., None
      ],
    ],
    -1,
  )
  rot, tr = fs.relative_pose_errors(pred, gt)
  assert rot.shape == (6,)
  np.testing.assert_allclose(rot, 0, atol=1e-5)
  np.testing.assert_allclose(tr, 0, atol=1e-5)
  assert fs.ate(pred, gt) < 1e-10
  # rotate camera 3 about its own optical axis by 10 degrees (keeping its
  # centre)
  p2 = gt.copy()
  Rz = Rotation.from_euler("z", 10, degrees=True).as_matrix()
  c = -gt[3, :, :3].T @ gt[3, :, 3]
  p2[3, :, :3] = Rz @ gt[3, :, :3]
  p2[3, :, 3] = -p2[3, :, :3] @ c
  rot, tr = fs.relative_pose_errors(p2, gt)
  # pairs (0,3), (1,3), (2,3) are indices 2, 4, 5
  np.testing.assert_allclose(rot[[2, 4, 5]], 10.0, atol=1e-6)
  np.testing.assert_allclose(rot[[0, 1, 3]], 0.0, atol=1e-5)
  assert fs.ate(p2, gt) < 1e-10  # centres unchanged


def test_accuracy_completeness_hand_computed():
  P = np.array([[0.0, 0, 0], [3.0, 0, 0]])
  G = np.array([[0.0, 0, 0], [1.0, 0, 0]])
  out = fs.accuracy_completeness(P, G, align=False)
  assert out["accuracy"] == pytest.approx(1.0)
  assert out["completeness"] == pytest.approx(0.5)
  assert out["overall"] == pytest.approx(0.75)
  rng = np.random.default_rng(1)
  G = rng.normal(size=(200, 3))
  R = Rotation.random(random_state=rng).as_matrix()
  out = fs.accuracy_completeness(3 * G @ R.T + 1.0, G)  # aligned away
  assert out["overall"] < 1e-9
  valid = np.ones(200, bool)
  valid[:100] = False
  P = G.copy()
  P[:100] += 100.0  # invalid points do not count
  assert fs.accuracy_completeness(P, G, valid, align=False)["overall"] == 0.0


def test_depth_metrics_hand_computed():
  gt = np.array([[[1.0, 2.0]]])
  out = fs.depth_metrics(np.array([[[1.5, 2.0]]]), gt, align="none")
  assert out["abs_rel"] == pytest.approx(0.25)
  assert out["delta_1.25"] == pytest.approx(0.5)
  # median scale alignment removes a global scale
  out = fs.depth_metrics(2 * gt, gt)
  assert out["abs_rel"] == pytest.approx(0.0) and out["delta_1.25"] == 1.0
  with pytest.raises(ValueError, match="align"):
    fs.depth_metrics(gt, gt, align="mean")
