"""Scene folders on disk and cached teacher predictions, on small files written
here."""

import numpy as np
import pytest
from PIL import Image

from jaxpapers import flashssm3d as fs


def _look_at(eye, target):
  z = target - eye
  z /= np.linalg.norm(z)
  x = np.cross(np.array([0.0, -1.0, 0.0]), z)
  x /= np.linalg.norm(x)
  y = np.cross(z, x)
  R = np.stack([x, y, z])
  return np.concatenate([R, (-R @ eye)[:, None]], 1)


def _write_scene(folder, S=3, H=12, W=16, with_depth=True, seed=0):
  """A fronto-parallel wall at z = 5 in world, seen by S cameras; exact depth
  per pixel."""
  rng = np.random.default_rng(seed)
  (folder / "images").mkdir(parents=True)
  ext, K, depth = [], [], []
  for s in range(S):
    e = _look_at(
      np.array([0.3 * s, 0.1 * s, 0.0]), np.array([0.3 * s, 0.1 * s, 5.0])
    )
    k = np.array(
      [[20.0 + s, 0, W / 2 + 0.5], [0, 21.0, H / 2 - 0.5], [0, 0, 1]]
    )
    ext.append(e)
    K.append(k)
    depth.append(np.full((H, W), 5.0))  # camera looks straight at the wall
    img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    Image.fromarray(img).save(folder / "images" / f"{s:03d}.png")
  ext4 = np.concatenate(
    [np.stack(ext), np.tile([[[0, 0, 0, 1.0]]], (S, 1, 1))], 1
  )
  np.savez(folder / "cameras.npz", extrinsics=ext4, intrinsics=np.stack(K))
  if with_depth:
    d = np.stack(depth)
    # missing; after the crop (x0 = 2) and 2x subsampling: pixel (0, 0)
    d[0, 1, 3] = np.nan
    np.save(folder / "depth.npy", d)
  return np.stack(ext), np.stack(K)


def test_multiview_scenes_crop_resize_and_normalise(tmp_path):
  ext, K = _write_scene(tmp_path / "b_scene")
  _write_scene(tmp_path / "a_scene", with_depth=False, seed=1)
  batch, names = fs.load_multiview_scenes(tmp_path, num_views=2, image_size=6)
  assert names == ["a_scene", "b_scene"]
  assert (
    batch.images.shape == (2, 2, 6, 6, 3) and batch.images.dtype == np.float32
  )
  assert 0 <= batch.images.min() and batch.images.max() <= 1
  # intrinsics: centre crop 16 -> 12 (x0 = 2), then resize 12 -> 6 (r = 1/2), by
  # hand
  np.testing.assert_allclose(
    batch.intrinsics[1, 1], [[10.5, 0, 3.25], [0, 10.5, 2.75], [0, 0, 1]]
  )
  # images: the centre crop, bilinearly resized (independent PIL reference)
  ref = np.asarray(
    Image.open(tmp_path / "b_scene" / "images" / "001.png")
    .crop((2, 0, 14, 12))
    .resize((6, 6), Image.Resampling.BILINEAR)
  )
  np.testing.assert_allclose(batch.images[1, 1], ref / 255.0, atol=1e-6)
  # the scene without depth: nothing valid, scale 1, first camera = identity
  assert not batch.valid[0].any() and batch.scale[0] == 1.0
  np.testing.assert_allclose(
    batch.extrinsics[:, 0], np.broadcast_to(np.eye(3, 4), (2, 3, 4)), atol=1e-6
  )
  # the scene with depth: the NaN pixel is invalid, the rest valid; depth /
  # scale consistent
  v = batch.valid[1]
  assert not v[0, 0, 0] and v.sum() == 2 * 36 - 1
  d = np.linalg.norm(batch.points[1][v], axis=-1)
  np.testing.assert_allclose(d.mean(), 1.0, rtol=1e-5)
  np.testing.assert_allclose(batch.depth[1][v], 5.0 / batch.scale[1], rtol=1e-5)
  # relative pose of camera 1: E1 E0^-1, translation rescaled by the scene scale
  R1, t1 = ext[1, :, :3], ext[1, :, 3]
  t_rel = t1 - R1 @ ext[0, :, :3].T @ ext[0, :, 3]
  np.testing.assert_allclose(
    batch.extrinsics[1, 1, :, 3], t_rel / batch.scale[1], atol=1e-5
  )
  with pytest.raises(ValueError, match="frames"):
    fs.load_multiview_scenes(tmp_path, num_views=4, image_size=6)


def _preds(N=2, S=2, H=4, W=4, seed=0):
  rng = np.random.default_rng(seed)
  return dict(
    pose_enc=rng.normal(size=(N, S, 9)),
    depth=rng.uniform(1, 2, (N, S, H, W, 1)),
    depth_conf=1 + rng.uniform(size=(N, S, H, W)),
    points=rng.normal(size=(N, S, H, W, 3)),
    point_conf=1 + rng.uniform(size=(N, S, H, W)),
  )


def test_teacher_predictions_round_trip_reorder_and_vggt_names(tmp_path):
  p = _preds()
  path = tmp_path / "teacher.npz"
  fs.save_teacher_predictions(path, **p, scene_names=["x", "y"])
  t = fs.load_teacher_predictions(path, scene_names=["y", "x"], image_hw=(4, 4))
  assert isinstance(t, fs.DistillTargets) and t.valid.all()
  np.testing.assert_allclose(t.pose_enc, p["pose_enc"][::-1], rtol=1e-6)
  np.testing.assert_allclose(t.points, p["points"][::-1], rtol=1e-6)
  assert t.depth.shape == (2, 2, 4, 4, 1)
  # VGGT's own key names, depth without the trailing axis
  vggt = dict(p, world_points=p["points"], world_points_conf=p["point_conf"])
  del vggt["points"], vggt["point_conf"]
  vggt["depth"] = vggt["depth"][..., 0]
  np.savez(tmp_path / "vggt.npz", **vggt)
  t2 = fs.load_teacher_predictions(tmp_path / "vggt.npz")
  np.testing.assert_allclose(t2.point_conf, p["point_conf"], rtol=1e-6)
  # strict: a missing output is an error
  del vggt["world_points_conf"]
  np.savez(tmp_path / "bad.npz", **vggt)
  with pytest.raises(ValueError, match="point_conf"):
    fs.load_teacher_predictions(tmp_path / "bad.npz")
  with pytest.raises(ValueError, match="image_hw"):
    fs.load_teacher_predictions(path, image_hw=(8, 8))


def test_scene_names_stay_inside_data_dir(tmp_path):
  """'..' and absolute scene names, and scene folders linked from outside, are
  refused."""
  root, outside = tmp_path / "root", tmp_path / "outside"
  _write_scene(root / "a_scene")
  _write_scene(outside / "far")
  kw = dict(num_views=2, image_size=6)
  # a valid scene where it is
  assert fs.load_multiview_scenes(outside, **kw)[1] == ["far"]
  for scenes in (["../outside/far"], [str(outside / "far")]):
    with pytest.raises(
      ValueError, match=(r"scene .* must be a relative path inside")
    ):
      fs.load_multiview_scenes(root, scenes=scenes, **kw)
  (root / "linked").symlink_to(outside / "far")
  for scenes in (None, ["linked"]):
    with pytest.raises(ValueError, match=r"scene 'linked' leads outside"):
      fs.load_multiview_scenes(root, scenes=scenes, **kw)
