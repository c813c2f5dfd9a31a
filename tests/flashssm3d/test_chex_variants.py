"""Selective scan, camera geometry and the Umeyama fit, jitted and eager,
against float64 NumPy.

The scan's method, direction and chunk size are static and closed over.
"""

import functools

import chex
import numpy as np
from absl.testing import absltest, parameterized

from jaxpapers import flashssm3d as fs
from tests.flashssm3d.test_ssm import _inputs, _naive

RNG = np.random.default_rng(61)


def _rodrigues(axis, angle):
  """float64 rotation by ``angle`` about the unit ``axis`` (Rodrigues'
  formula)."""
  k = np.array(
    [[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]]
  )
  return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _rotations(n):
  axes = RNG.normal(size=(n, 3))
  axes /= np.linalg.norm(axes, axis=1, keepdims=True)
  angles = RNG.uniform(-np.pi, np.pi, size=n)
  return (
    axes,
    angles,
    np.stack([_rodrigues(a, t) for a, t in zip(axes, angles)]),
  )


def _to44(e):
  out = np.tile(np.eye(4), e.shape[:-2] + (1, 1))
  out[..., :3, :] = e
  return out


class SelectiveScanTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(
    ("scan", "scan", False),
    ("scan_reverse", "scan", True),
    ("chunked_reverse", "chunked", True),
  )
  def test_selective_scan_is_the_naive_recurrence(self, method, reverse):
    args = _inputs(np.random.default_rng(62), (), 11, 4, 3)
    fn = functools.partial(
      fs.selective_scan, reverse=reverse, method=method, chunk_size=4
    )
    y = self.variant(fn)(*(np.asarray(a, np.float32) for a in args))
    chex.assert_shape(y, (11, 4))
    chex.assert_type(y, np.float32)
    want = _naive(*args, reverse=reverse).astype(np.float32)
    chex.assert_trees_all_close(y, want, rtol=1e-4, atol=1e-5)


class GeometryTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_quat_to_mat_is_the_axis_angle_rotation(self):
    axes, angles, R = _rotations(4)
    # Scalar-last, deliberately unnormalised: the function normalises.
    q = np.concatenate(
      [np.sin(angles / 2)[:, None] * axes, np.cos(angles / 2)[:, None]], 1
    )
    q *= RNG.uniform(0.5, 2.0, size=(4, 1))
    got = self.variant(fs.quat_to_mat)(q.astype(np.float32))
    chex.assert_shape(got, (4, 3, 3))
    chex.assert_trees_all_close(got, R.astype(np.float32), atol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_invert_and_compose_extrinsics_are_matrix_products(self):
    _, _, R = _rotations(4)
    e = np.concatenate([R, RNG.normal(size=(4, 3, 1))], -1)
    a, b = e[:2], e[2:]
    inv = self.variant(fs.invert_extrinsics)(e.astype(np.float32))
    chex.assert_shape(inv, (4, 3, 4))
    chex.assert_trees_all_close(
      inv, np.linalg.inv(_to44(e))[..., :3, :].astype(np.float32), atol=1e-5
    )
    ab = self.variant(fs.compose_extrinsics)(
      a.astype(np.float32), b.astype(np.float32)
    )
    chex.assert_trees_all_close(
      ab, (_to44(a) @ _to44(b))[..., :3, :].astype(np.float32), atol=1e-5
    )
    centres = self.variant(fs.camera_centers)(e.astype(np.float32))
    want = -np.einsum("sji,sj->si", R, e[..., 3])
    chex.assert_trees_all_close(centres, want.astype(np.float32), atol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_project_then_unproject_against_the_pinhole_model(self):
    _, _, R = _rotations(2)
    t = np.array([[0.1, -0.2, 4.0], [0.0, 0.3, 5.0]])
    e = np.concatenate([R, t[..., None]], -1)
    K = np.array(
      [
        [[20.0, 0.5, 3.5], [0, 22.0, 2.5], [0, 0, 1]],
        [[18.0, 0, 4.0], [0, 19.0, 3.0], [0, 0, 1]],
      ]
    )
    pts = RNG.normal(size=(2, 5, 3)) * 0.5
    uv, z = self.variant(fs.project_points)(
      *(a.astype(np.float32) for a in (pts, e, K))
    )
    cam = np.einsum("sij,smj->smi", R, pts) + t[:, None]
    pix = np.einsum("sij,smj->smi", K, cam)
    chex.assert_shape([uv, z], [(2, 5, 2), (2, 5)])
    chex.assert_trees_all_close(
      (uv, z),
      (
        (pix[..., :2] / pix[..., 2:]).astype(np.float32),
        cam[..., 2].astype(np.float32),
      ),
      rtol=1e-4,
      atol=1e-4,
    )
    depth = RNG.uniform(2.0, 3.0, size=(2, 3, 4))
    K[:, 0, 1] = 0.0  # unproject_depth reads fx, fy, cx, cy only (no skew)
    world = self.variant(fs.unproject_depth)(
      *(a.astype(np.float32) for a in (depth, e, K))
    )
    v, u = np.meshgrid(np.arange(3) + 0.5, np.arange(4) + 0.5, indexing="ij")
    rays = np.stack([u, v, np.ones_like(u)], -1)  # [H, W, 3]
    cam = depth[..., None] * np.einsum("sij,hwj->shwi", np.linalg.inv(K), rays)
    want = np.einsum("sji,shwj->shwi", R, cam - t[:, None, None])
    chex.assert_shape(world, (2, 3, 4, 3))
    chex.assert_trees_all_close(
      world, want.astype(np.float32), rtol=1e-4, atol=1e-4
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_weighted_umeyama_recovers_a_similarity(self):
    _, _, R = _rotations(2)
    s, t = np.array([0.7, 2.0]), RNG.normal(size=(2, 3))
    X = RNG.normal(size=(2, 6, 3))
    Y = s[:, None, None] * np.einsum("bij,bmj->bmi", R, X) + t[:, None]
    w = RNG.uniform(0.2, 1.0, size=(2, 6))
    Y[:, 0] += 5.0  # an outlier, weighted out
    w[:, 0] = 0.0
    got = self.variant(fs.weighted_umeyama)(
      *(a.astype(np.float32) for a in (X, Y, w))
    )
    chex.assert_shape(list(got), [(2,), (2, 3, 3), (2, 3)])
    want = tuple(a.astype(np.float32) for a in (s, R, t))
    chex.assert_trees_all_close(tuple(got), want, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
  absltest.main()
