"""Real multi-view scenes from disk, and cached teacher predictions (no
downloads, no VGGT here).

**Scene folders.** ``data_dir`` holds one folder per scene (read in sorted name
order)::

    <data_dir>/<scene>/images/<frame>.png | .jpg   S RGB frames, in sorted file-name order
    <data_dir>/<scene>/cameras.npz                 extrinsics [S, 3, 4] (or [S, 4, 4]): camera-
                                                   from-world [R | t], OpenCV axes (x right, y
                                                   down, z forward); intrinsics [S, 3, 3] in
                                                   pixels of the stored images, pixel centres at
                                                   (j + 0.5, i + 0.5)
    <data_dir>/<scene>/depth.npy      (optional)   [S, H, W] z-depth in the extrinsics' units;
                                                   0, negative or non-finite = no measurement

This is the layout of the usual CO3D / ScanNet / DTU exports after one
conversion step (frames as images, one camera file, depth maps stacked); a
world-from-camera (camera-to-world) pose must be inverted first. Frames are
centre-cropped to a square and resized to ``image_size``; the intrinsics follow
the crop and the resize exactly. Depth is resampled by nearest neighbour and
unprojected to points; scenes are then normalised like VGGT's targets (first
camera = identity, mean valid point distance = 1), so they can be used wherever
:func:`render_scenes` output is.

**Cached teacher predictions.** A user who runs VGGT (or any teacher) elsewhere
saves its outputs for the training scenes as one ``.npz``
(:func:`save_teacher_predictions` writes it)::

    pose_enc     [N, S, 9]         absT_quaR_FoV, first camera = identity (VGGT's 'pose_enc')
    depth        [N, S, H, W(, 1)] z-depth                                 ('depth')
    depth_conf   [N, S, H, W]      confidence >= 1                         ('depth_conf')
    points       [N, S, H, W, 3]   first-camera frame                      ('world_points')
    point_conf   [N, S, H, W]      confidence >= 1                         ('world_points_conf')
    valid        [N, S, H, W]      optional bool mask (default: all True)
    scene_names  [N]               optional names matching the scene folders

at the resolution the student is trained at. VGGT's own key names (in brackets)
are accepted too. :func:`load_teacher_predictions` returns
:class:`DistillTargets` for ``distillation_loss``.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core.data import resolve_inside
from jaxpapers.flashssm3d import _geometry as geo
from jaxpapers.flashssm3d._data import SceneBatch
from jaxpapers.flashssm3d._losses import DistillTargets

__all__ = [
  "load_multiview_scenes",
  "save_teacher_predictions",
  "load_teacher_predictions",
]

_IMAGE_EXT = (".png", ".jpg", ".jpeg")
_PRED_KEYS = {
  "pose_enc": ("pose_enc",),
  "depth": ("depth",),
  "depth_conf": ("depth_conf",),
  "points": ("points", "world_points"),
  "point_conf": ("point_conf", "world_points_conf"),
}


def _read_image(path: pathlib.Path) -> np.ndarray:
  from PIL import Image

  with Image.open(path) as im:
    return np.asarray(im.convert("RGB"))


def _resize(img: np.ndarray, size: int, nearest: bool) -> np.ndarray:
  from PIL import Image

  if nearest:  # sample the source pixel under each target pixel centre
    h = img.shape[0]
    idx = np.minimum(((np.arange(size) + 0.5) * h / size).astype(int), h - 1)
    return img[idx][:, idx]
  im = Image.fromarray(img)
  return np.asarray(im.resize((size, size), Image.Resampling.BILINEAR))


def _load_scene(folder: pathlib.Path, num_views: int, size: int):
  img_dir = folder / "images"
  if not img_dir.is_dir():
    raise ValueError(
      f"scene folder {folder} needs an images/ folder of RGB frames"
    )
  frames = sorted(
    p for p in img_dir.iterdir() if p.suffix.lower() in _IMAGE_EXT
  )
  if len(frames) < num_views:
    raise ValueError(
      f"scene {folder.name} has {len(frames)} frames, num_views={num_views}"
    )
  cam_path = folder / "cameras.npz"
  if not cam_path.is_file():
    raise ValueError(
      f"scene folder {folder} needs cameras.npz (extrinsics, intrinsics)"
    )
  with np.load(cam_path) as cams:
    missing = [k for k in ("extrinsics", "intrinsics") if k not in cams]
    if missing:
      raise ValueError(
        f"{cam_path} lacks {missing}; it needs 'extrinsics' and 'intrinsics'"
      )
    ext = np.asarray(cams["extrinsics"], np.float64)[:num_views]
    K = np.asarray(cams["intrinsics"], np.float64)[:num_views].copy()
  if ext.shape[1:] == (4, 4):
    ext = ext[:, :3]
  if ext.shape != (num_views, 3, 4) or K.shape != (num_views, 3, 3):
    raise ValueError(
      f"{cam_path}: extrinsics must be [S, 3, 4] or [S, 4, "
      f"4] and intrinsics [S, 3, 3] with S >= {num_views}; "
      f"got {ext.shape} and {K.shape}"
    )
  if not (np.all(np.isfinite(ext)) and np.all(np.isfinite(K))):
    raise ValueError(f"{cam_path}: cameras must be finite")
  depth_path = folder / "depth.npy"
  depth = (
    np.load(depth_path)[:num_views].astype(np.float64)
    if depth_path.is_file()
    else None
  )
  images, depths = [], []
  for s in range(num_views):
    img = _read_image(frames[s])
    H, W = img.shape[:2]
    side = min(H, W)
    y0, x0 = (H - side) // 2, (W - side) // 2
    images.append(
      _resize(img[y0 : y0 + side, x0 : x0 + side], size, nearest=False)
    )
    r = size / side
    K[s, 0, 2] -= x0
    K[s, 1, 2] -= y0
    K[s, :2] *= r
    if depth is not None:
      if depth.shape[1:] != (H, W):
        raise ValueError(
          f"{depth_path}: depth must be [S, H, W] = [S, {H}, {W}], "
          f"got {depth.shape}"
        )
      depths.append(
        _resize(depth[s, y0 : y0 + side, x0 : x0 + side], size, nearest=True)
      )
  images = np.stack(images).astype(np.float32) / 255.0
  if depth is None:
    d = np.zeros((num_views, size, size))
  else:
    d = np.stack(depths)
    d = np.where(np.isfinite(d) & (d > 0), d, 0.0)
  return images, d, ext, K


def load_multiview_scenes(
  data_dir: str | os.PathLike,
  *,
  num_views: int,
  image_size: int,
  normalize: bool = True,
  scenes: Sequence[str] | None = None,
) -> tuple[SceneBatch, list[str]]:
  """Read scene folders (format in the module docstring) into one
  :class:`SceneBatch`.

  Args:
    data_dir: folder with one sub-folder per scene.
    num_views: ``S``; the first ``S`` frames (sorted by file name) of each
      scene.
    image_size: side of the square frames after centre crop and resize.
    normalize: VGGT's normalisation (first camera = identity, mean valid point
      distance = 1); a scene without depth keeps scale 1.
    scenes: optional list of scene folder names (default: all, sorted); each
      must lie inside ``data_dir`` (``..``, absolute names and symlinks leading
      outside raise ``ValueError``).

  Returns:
    ``(batch, names)``: a float32 NumPy :class:`SceneBatch`
    (``images [N, S, h, h, 3]`` in [0, 1], ``depth``, ``points``, ``valid``
    (False where depth is missing), ``extrinsics``, ``intrinsics``, ``scale``)
    and the list of ``N`` scene names.
  """
  root = pathlib.Path(os.fspath(data_dir))
  if not root.is_dir():
    raise ValueError(
      f"data_dir must be an existing folder of scene folders, got {data_dir!r}"
    )
  for name, v in (("num_views", num_views), ("image_size", image_size)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  names = (
    sorted(p.name for p in root.iterdir() if p.is_dir())
    if scenes is None
    else list(scenes)
  )
  if not names:
    raise ValueError(f"data_dir {data_dir!r} has no scene folders")
  # refuse escapes first
  folders = [resolve_inside(root, n, name="scene") for n in names]
  parts = [_load_scene(f, int(num_views), int(image_size)) for f in folders]
  images, depth, ext, K = (np.stack(x) for x in zip(*parts))
  valid = depth > 0
  pts, n_pts, n_ext, n_scale, n_depth = (
    np.asarray(a, np.float64)
    for a in _unproject_normalize(depth, ext, K, valid)
  )
  if normalize:
    pts, ext, scale, depth = n_pts, n_ext, n_scale, n_depth
  else:
    scale = np.ones(len(names))
  pts = np.where(valid[..., None], pts, 0.0)
  f32 = lambda a: np.asarray(a, np.float32)
  batch = SceneBatch(
    f32(images), f32(depth), f32(pts), valid, f32(ext), f32(K), f32(scale)
  )
  return batch, names


@jax.jit
def _unproject_normalize(depth, ext, K, valid):
  """World points of the depth maps, and the VGGT-normalised scene (one compiled
  program)."""
  pts = geo.unproject_depth(depth, ext, K)
  return (pts,) + tuple(geo.normalize_scene(pts, ext, valid, depth))


def save_teacher_predictions(
  path: str | os.PathLike,
  *,
  pose_enc: ArrayLike,
  depth: ArrayLike,
  depth_conf: ArrayLike,
  points: ArrayLike,
  point_conf: ArrayLike,
  valid: ArrayLike | None = None,
  scene_names: Sequence[str] | None = None,
) -> None:
  """Write cached teacher predictions in the documented ``.npz`` format (module
  docstring).

  Every array is checked (shapes agree, finite, confidences >= 1) before
  anything is written.

  Args:
    path: output file (``.npz``).
    pose_enc: ``[N, S, 9]`` float pose encodings.
    depth: ``[N, S, H, W]`` or ``[N, S, H, W, 1]`` float depth maps.
    depth_conf: ``[N, S, H, W]`` float depth confidences (>= 1).
    points: ``[N, S, H, W, 3]`` float world points.
    point_conf: ``[N, S, H, W]`` float point confidences (>= 1).
    valid: optional ``[N, S, H, W]`` bool mask of pixels to supervise.
    scene_names: optional ``N`` scene names (stored as strings).
  """
  arrays = dict(
    pose_enc=pose_enc,
    depth=depth,
    depth_conf=depth_conf,
    points=points,
    point_conf=point_conf,
  )
  arrays = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
  if valid is not None:
    arrays["valid"] = np.asarray(valid, bool)
  if scene_names is not None:
    arrays["scene_names"] = np.asarray([str(n) for n in scene_names])
  _check_predictions(arrays, str(path))
  np.savez(path, **arrays)  # pyright: ignore[reportArgumentType]  # fixed names, never allow_pickle


def _check_predictions(a: dict, where: str) -> None:
  pose = a["pose_enc"]
  if pose.ndim != 3 or pose.shape[-1] != 9:
    raise ValueError(f"{where}: pose_enc must be [N, S, 9], got {pose.shape}")
  N, S = pose.shape[:2]
  d = a["depth"]
  if d.ndim == 5 and d.shape[-1] == 1:
    d = d[..., 0]
  if d.ndim != 4 or d.shape[:2] != (N, S):
    raise ValueError(
      f"{where}: depth must be [N={N}, S={S}, H, W(, 1)], "
      f"got {a['depth'].shape}"
    )
  hw = d.shape[2:]
  for k, shape in (
    ("depth_conf", (N, S) + hw),
    ("point_conf", (N, S) + hw),
    ("points", (N, S) + hw + (3,)),
  ):
    if a[k].shape != shape:
      raise ValueError(
        f"{where}: {k} must be {list(shape)}, got {list(a[k].shape)}"
      )
  if "valid" in a and a["valid"].shape != (N, S) + hw:
    raise ValueError(
      f"{where}: valid must be {[N, S, *hw]}, got {list(a['valid'].shape)}"
    )
  if "scene_names" in a and len(a["scene_names"]) != N:
    raise ValueError(
      f"{where}: scene_names must have N={N} entries, "
      f"got {len(a['scene_names'])}"
    )
  for k in ("pose_enc", "depth", "depth_conf", "points", "point_conf"):
    if not np.all(np.isfinite(a[k])):
      raise ValueError(f"{where}: {k} must be finite")
  if np.any(a["depth_conf"] < 1) or np.any(a["point_conf"] < 1):
    raise ValueError(
      f"{where}: depth_conf and point_conf must be >= 1 (VGGT's 1 + exp(.))"
    )


def load_teacher_predictions(
  path: str | os.PathLike,
  *,
  scene_names: Sequence[str] | None = None,
  image_hw: Sequence[int] | None = None,
) -> DistillTargets:
  """Read cached teacher predictions (``.npz``, format in the module docstring).

  Strict: a missing output is an error, never a silently skipped loss term.

  Args:
    path: the ``.npz`` file.
    scene_names: optional names; the predictions are returned in this order
      (each must be in the file's ``scene_names``).
    image_hw: optional expected ``(H, W)`` (the student's resolution).

  Returns:
    :class:`DistillTargets` of float32 NumPy arrays (``depth [N, S, H, W, 1]``;
    ``valid`` all True unless stored).
  """
  if not os.path.isfile(os.fspath(path)):
    raise ValueError(
      f"path must be an existing .npz of teacher predictions, got {path!r}"
    )
  with np.load(path, allow_pickle=False) as f:
    a = {}
    for k, aliases in _PRED_KEYS.items():
      found = [n for n in aliases if n in f]
      if not found:
        raise ValueError(
          f"{path}: missing teacher output {k!r} (accepted keys: {aliases})"
        )
      a[k] = np.asarray(f[found[0]], np.float32)
    for k in ("valid", "scene_names"):
      if k in f:
        a[k] = np.asarray(f[k])
  _check_predictions(a, str(path))
  if a["depth"].ndim == 4:
    a["depth"] = a["depth"][..., None]
  if image_hw is not None and tuple(a["depth"].shape[2:4]) != tuple(image_hw):
    raise ValueError(
      f"{path}: predictions are {tuple(a['depth'].shape[2:4])}, "
      f"image_hw={tuple(image_hw)}"
    )
  valid = a.get("valid", np.ones(a["depth"].shape[:-1], bool)).astype(bool)
  order = slice(None)
  if scene_names is not None:
    if "scene_names" not in a:
      raise ValueError(
        f"{path} has no scene_names to match scene_names against"
      )
    index = {str(n): i for i, n in enumerate(a["scene_names"])}
    missing = [n for n in scene_names if str(n) not in index]
    if missing:
      raise ValueError(f"{path}: no predictions for scenes {missing[:5]}")
    order = np.asarray([index[str(n)] for n in scene_names])
  return DistillTargets(
    pose_enc=a["pose_enc"][order],
    depth=a["depth"][order],
    depth_conf=a["depth_conf"][order],
    points=a["points"][order],
    point_conf=a["point_conf"][order],
    valid=valid[order],
  )
