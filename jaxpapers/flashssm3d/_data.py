"""Seeded procedural multi-view scenes, rendered analytically in JAX
**[reconstruction]**.

A room (6 planes) with 1–4 spheres and 0–2 boxes. Each camera ray is intersected
with every primitive in closed form, which gives exact z-depth, world points,
validity, and cameras. Textures are functions of the *world* coordinates (a 3-D
checker times a per-object colour, with Lambert shading), so a surface point
looks the same from every view and correspondences exist.

Cameras orbit the scene centre and look at it (OpenCV axes, camera-from-world
extrinsics; see ``_geometry.py``). Splits:

* ``orbit_easy``: azimuth spread 60°, elevation 10–25°, radius 2.6–3.0, FoV
  55–65°, no roll;
* ``orbit``: azimuth spread up to 180°, elevation 0–40°, radius 2.4–3.2, FoV
  50–75°, jitter;
* ``free``: random azimuths, elevation −10–45°, look-at jitter, roll ±15°;
* ``orbit_cues``: the split that is learnable at CPU scale. The orbit turns
  either way by 20–60° (so the mean pose is a poor guess), elevation 5–30°,
  radius 2.4–3.2 and FoV 55–65° per scene; each wall's colour is fixed by its
  world orientation (up to a small jitter), so the visible walls tell the
  camera's heading, and distance fog (``rgb·f + fog·(1 − f)``,
  ``f = exp(−0.35·depth)``) makes depth visible per pixel. At that density the
  far walls, 5–7 units away, keep 10–20% of their colour, so the heading cue is
  faint at 16 px; ``fog=`` of :func:`render_scenes` sets another density (e.g.
  0.1: walls readable across the room, depth still shaded by distance). In
  ``orbit_easy`` every scene has the same relative poses up to a few degrees of
  elevation, so an input-independent mean pose is nearly exact there, and depth
  has only monocular shading and texture-scale cues.

Outputs are normalised like VGGT's targets by default (first camera = identity,
mean valid point distance = 1). Rendering is deterministic for a fixed key; use
disjoint keys for disjoint splits.
"""

from __future__ import annotations

from typing import NamedTuple, TypeGuard, cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.flashssm3d import _geometry as geo

__all__ = ["SceneBatch", "render_scenes", "SPLITS"]

SPLITS = ("orbit_easy", "orbit", "free", "orbit_cues")
# Wall colours of ``orbit_cues`` by wall (-x, +x, -y, +y, -z, +z): distinct hues
_CUE_WALLS = np.array(
  [
    [0.9, 0.25, 0.2],
    [0.2, 0.75, 0.3],
    [0.35, 0.3, 0.3],
    [0.9, 0.9, 0.85],
    [0.25, 0.35, 0.9],
    [0.9, 0.8, 0.2],
  ],
  np.float32,
)
_FOG = np.array([0.75, 0.8, 0.95], np.float32)
# orbit_cues' fog per unit of depth unless render_scenes(fog=...)
_CUE_FOG_DENSITY = 0.35
_MAX_SPHERES = 4
_MAX_BOXES = 2
_FAR = 1e6


class SceneBatch(NamedTuple):
  """A batch of rendered scenes.

  Attributes:
    images: ``[B, S, H, W, 3]`` float32 RGB in [0, 1].
    depth: ``[B, S, H, W]`` z-depth.
    points: ``[B, S, H, W, 3]`` world points (first-camera frame if normalised).
    valid: ``[B, S, H, W]`` bool.
    extrinsics: ``[B, S, 3, 4]`` camera-from-world.
    intrinsics: ``[B, S, 3, 3]``.
    scale: ``[B]`` mean point distance divided out by normalisation (1 if not
      normalised).

  ``render_scenes`` gives JAX arrays; the file and TFDS loaders give NumPy
  arrays.
  """

  images: jax.Array | np.ndarray
  depth: jax.Array | np.ndarray
  points: jax.Array | np.ndarray
  valid: jax.Array | np.ndarray
  extrinsics: jax.Array | np.ndarray
  intrinsics: jax.Array | np.ndarray
  scale: jax.Array | np.ndarray

  @property
  def pose_enc(self) -> jax.Array:
    """``[B, S, 9]`` VGGT pose encoding of the cameras."""
    ext, K = jnp.asarray(self.extrinsics), jnp.asarray(self.intrinsics)
    return geo.cameras_to_pose_encoding(ext, K, self.images.shape[2:4])


def _look_at(eye, target, roll):
  """OpenCV camera-from-world [3,4] looking from eye at target (world y is
  up)."""
  up = np.array([0.0, 1.0, 0.0])
  z = target - eye
  z = z / np.linalg.norm(z)
  x = np.cross(-up, z)
  x = x / np.linalg.norm(x)
  y = np.cross(z, x)
  c, s = np.cos(roll), np.sin(roll)
  x, y = c * x + s * y, -s * x + c * y
  R = np.stack([x, y, z], 0)  # rows = camera axes in world coordinates
  return np.concatenate([R, (-R @ eye)[:, None]], -1)


def _sample_scene(rng: np.random.Generator, split: str = "orbit_easy") -> dict:
  half = rng.uniform(3.4, 4.4, 2)
  n_sph = rng.integers(1, _MAX_SPHERES + 1)
  sph_r = rng.uniform(0.25, 0.6, _MAX_SPHERES)
  sph_xz = rng.uniform(-1.2, 1.2, (_MAX_SPHERES, 2))
  sph_y = -1.0 + sph_r + rng.uniform(0.0, 0.8, _MAX_SPHERES)
  n_box = rng.integers(0, _MAX_BOXES + 1)
  box_h = rng.uniform(0.2, 0.5, (_MAX_BOXES, 3))
  box_xz = rng.uniform(-1.2, 1.2, (_MAX_BOXES, 2))
  box_c = np.stack([box_xz[:, 0], -1.0 + box_h[:, 1], box_xz[:, 1]], -1)
  out = dict(
    room_lo=np.array([-half[0], -1.0, -half[1]]),
    room_hi=np.array([half[0], 2.6, half[1]]),
    wall_col=rng.uniform(0.25, 0.95, (6, 3)),
    sph_c=np.stack([sph_xz[:, 0], sph_y, sph_xz[:, 1]], -1),
    sph_r=sph_r,
    sph_on=np.arange(_MAX_SPHERES) < n_sph,
    box_lo=box_c - box_h,
    box_hi=box_c + box_h,
    box_on=np.arange(_MAX_BOXES) < n_box,
    obj_col=rng.uniform(0.15, 1.0, (_MAX_SPHERES + _MAX_BOXES, 3)),
    freq=rng.uniform(1.5, 4.0, 6 + _MAX_SPHERES + _MAX_BOXES),
    fog=np.float32(0.0),
  )
  if split == "orbit_cues":
    out["wall_col"] = np.clip(
      _CUE_WALLS + rng.uniform(-0.05, 0.05, (6, 3)), 0.0, 1.0
    )
    out["fog"] = np.float32(_CUE_FOG_DENSITY)
  return {
    k: (v.astype(np.float32) if v.dtype != bool else v) for k, v in out.items()
  }


def _sample_cameras(rng: np.random.Generator, num_views: int, split: str):
  S = num_views
  frac = (np.arange(S) / max(S - 1, 1)) - 0.5
  az0 = rng.uniform(0, 2 * np.pi)
  if split == "orbit_easy":
    az = az0 + np.deg2rad(60.0) * frac
    el = np.deg2rad(rng.uniform(10.0, 25.0)) * np.ones(S)
    rad = rng.uniform(2.6, 3.0) * np.ones(S)
    fov = np.deg2rad(rng.uniform(55.0, 65.0)) * np.ones(S)
    jit_t = np.zeros((S, 3))
    roll = np.zeros(S)
  elif split == "orbit_cues":
    spread = np.deg2rad(rng.uniform(20.0, 60.0)) * rng.choice([-1.0, 1.0])
    az = az0 + spread * frac
    el = np.deg2rad(rng.uniform(5.0, 30.0)) * np.ones(S)
    rad = rng.uniform(2.4, 3.2) * np.ones(S)
    fov = np.deg2rad(rng.uniform(55.0, 65.0)) * np.ones(S)
    jit_t = np.zeros((S, 3))
    roll = np.zeros(S)
  elif split == "orbit":
    spread = np.deg2rad(rng.uniform(60.0, 180.0))
    az = az0 + spread * frac + np.deg2rad(5.0) * rng.normal(size=S)
    el = np.deg2rad(rng.uniform(0.0, 40.0, S))
    rad = rng.uniform(2.4, 3.2, S)
    fov = np.deg2rad(rng.uniform(50.0, 75.0, S))
    jit_t = 0.2 * rng.normal(size=(S, 3))
    roll = np.zeros(S)
  elif split == "free":
    az = rng.uniform(0, 2 * np.pi, S)
    el = np.deg2rad(rng.uniform(-10.0, 45.0, S))
    rad = rng.uniform(2.4, 3.2, S)
    fov = np.deg2rad(rng.uniform(50.0, 75.0, S))
    jit_t = 0.4 * rng.normal(size=(S, 3))
    roll = np.deg2rad(15.0) * rng.uniform(-1.0, 1.0, S)
  else:
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
  target = np.array([0.0, -0.3, 0.0]) + jit_t
  eye = np.stack(
    [
      rad * np.cos(el) * np.cos(az),
      -0.3 + rad * np.sin(el),
      rad * np.cos(el) * np.sin(az),
    ],
    -1,
  )
  ext = np.stack([_look_at(eye[i], target[i], roll[i]) for i in range(S)])
  return ext.astype(np.float32), fov.astype(np.float32)


def _checker(p, f):
  c = jnp.sum(jnp.floor(p * f), -1)
  return jnp.mod(c, 2.0)


def _render_view(scene, ext, K, H, W):
  uv = geo.pixel_grid((H, W)).reshape(-1, 2)  # [P, 2]
  d_cam = jnp.stack(
    [
      (uv[:, 0] - K[0, 2]) / K[0, 0],
      (uv[:, 1] - K[1, 2]) / K[1, 1],
      jnp.ones(uv.shape[0]),
    ],
    -1,
  )
  R, t = ext[:, :3], ext[:, 3]
  # world direction R^T d_cam; its camera z-component is 1, so t_hit = z-depth
  d = d_cam @ R
  o = -R.T @ t
  d_safe = jnp.where(jnp.abs(d) < 1e-9, 1e-9, d)

  # Room interior: exit distance of the axis-aligned box.
  ta = (scene["room_lo"] - o) / d_safe
  tb = (scene["room_hi"] - o) / d_safe
  tex = jnp.maximum(ta, tb)  # [P, 3]
  ax = jnp.argmin(tex, -1)
  t_room = jnp.min(tex, -1)
  # 1 = hits the 'hi' plane
  side = (d_safe[jnp.arange(d.shape[0]), ax] > 0).astype(jnp.int32)
  room_id = 2 * ax + side  # 0..5
  n_room = (
    -jax.nn.one_hot(ax, 3)
    * jnp.sign(d_safe[jnp.arange(d.shape[0]), ax])[:, None]
  )

  # Spheres.
  oc = o[None, None, :] - scene["sph_c"][None]  # [1, K, 3]
  a = jnp.sum(d * d, -1)[:, None]
  b = 2 * jnp.sum(oc * d[:, None], -1)
  c = jnp.sum(oc * oc, -1) - scene["sph_r"][None] ** 2
  disc = b * b - 4 * a * c
  t_s = (-b - jnp.sqrt(jnp.maximum(disc, 0.0))) / (2 * a)
  hit_s = (disc > 0) & (t_s > 1e-4) & scene["sph_on"][None]
  t_s = jnp.where(hit_s, t_s, _FAR)  # [P, K]

  # Boxes (slab test).
  t1 = (scene["box_lo"][None] - o) / d_safe[:, None]
  t2 = (scene["box_hi"][None] - o) / d_safe[:, None]  # [P, Kb, 3]
  tmin_ax = jnp.minimum(t1, t2)
  tmin = jnp.max(tmin_ax, -1)
  tmax = jnp.min(jnp.maximum(t1, t2), -1)
  hit_b = (tmax >= tmin) & (tmin > 1e-4) & scene["box_on"][None]
  t_b = jnp.where(hit_b, tmin, _FAR)

  t_all = jnp.concatenate([t_room[:, None], t_s, t_b], -1)  # [P, 1 + K + Kb]
  which = jnp.argmin(t_all, -1)
  depth = jnp.min(t_all, -1)
  p = o + depth[:, None] * d

  # Normals.
  ks = jnp.clip(which - 1, 0, _MAX_SPHERES - 1)
  n_sph = (p - scene["sph_c"][ks]) / scene["sph_r"][ks][:, None]
  kb = jnp.clip(which - 1 - _MAX_SPHERES, 0, _MAX_BOXES - 1)
  bax = jnp.argmax(tmin_ax[jnp.arange(d.shape[0]), kb], -1)
  n_box = (
    -jax.nn.one_hot(bax, 3)
    * jnp.sign(d_safe[jnp.arange(d.shape[0]), bax])[:, None]
  )
  is_room = which == 0
  is_sph = (which >= 1) & (which <= _MAX_SPHERES)
  n = jnp.where(
    is_room[:, None], n_room, jnp.where(is_sph[:, None], n_sph, n_box)
  )

  # Albedo and 3-D texture.
  col = jnp.where(
    is_room[:, None],
    scene["wall_col"][room_id],
    scene["obj_col"][jnp.clip(which - 1, 0, _MAX_SPHERES + _MAX_BOXES - 1)],
  )
  fid = jnp.where(is_room, room_id, 6 + which - 1)
  pattern = _checker(p + 0.05, scene["freq"][fid][:, None])
  light = jnp.array([0.3, 0.85, -0.45])
  light = light / jnp.linalg.norm(light)
  shade = 0.55 + 0.45 * jnp.abs(n @ light)
  rgb = jnp.clip(
    col * (0.55 + 0.45 * pattern[:, None]) * shade[:, None], 0.0, 1.0
  )
  # distance fog (orbit_cues only; fog = 0 elsewhere)
  f = jnp.exp(-scene["fog"] * depth)[:, None]
  rgb = rgb * f + jnp.asarray(_FOG) * (1.0 - f)
  valid = jnp.isfinite(depth) & (depth > 0) & (depth < _FAR / 2)
  return (
    rgb.reshape(H, W, 3),
    depth.reshape(H, W),
    p.reshape(H, W, 3),
    valid.reshape(H, W),
  )


def _render_batch(scene, ext, fov, H, W, normalize):
  """Render stacked scenes: scene leaves ``[B, ...]``, ext ``[B, S, 3, 4]``, fov
  ``[B, S]``."""
  fov_h = 2 * jnp.arctan(jnp.tan(fov / 2) * H / max(H, W))
  fov_w = 2 * jnp.arctan(jnp.tan(fov / 2) * W / max(H, W))
  K = geo.intrinsics_from_fov(fov_h, fov_w, (H, W))
  per_view = lambda sc, e, k: _render_view(sc, e, k, H, W)
  rgb, depth, pts, valid = jax.vmap(jax.vmap(per_view, (None, 0, 0)))(
    scene, ext, K
  )
  if normalize:
    pts, ext, scale, depth = geo.normalize_scene(pts, ext, valid, depth)
  else:
    scale = jnp.ones(ext.shape[:1], pts.dtype)
  return SceneBatch(rgb, depth, pts, valid, ext, K, scale)


_render_jit = jax.jit(_render_batch, static_argnums=(3, 4, 5))


def _is_int(v: object) -> TypeGuard[int | np.integer]:
  return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _seed_of(key) -> np.random.Generator:
  if isinstance(key, (int, np.integer)):
    return np.random.default_rng(int(key))
  if not (
    hasattr(key, "dtype") and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError(
      "key must be a typed PRNG key (jax.random.key) or an int seed, "
      f"got {type(key)}"
    )
  return np.random.default_rng(
    np.asarray(jax.random.key_data(key)).ravel().tolist()
  )


def render_scenes(
  key: jax.Array | int,
  num_scenes: int,
  num_views: int,
  *,
  image_size: int | tuple[int, int] = 32,
  split: str = "orbit_easy",
  normalize: bool = True,
  fog: float | None = None,
) -> SceneBatch:
  """Render ``num_scenes`` procedural scenes with ``num_views`` views each.

  Scene and camera parameters are drawn on the host with NumPy (seeded from
  ``key``), the ray casting runs in one jitted JAX function.

  Args:
    key: a typed PRNG key (``jax.random.key``) or an int seed; the batch is a
      deterministic function of ``(key, split, sizes)``.
    num_scenes: ``B``.
    num_views: ``S``.
    image_size: ``int`` (square) or ``(H, W)``; 16–64 px is the intended range.
    split: one of ``'orbit_easy'``, ``'orbit'``, ``'free'``, ``'orbit_cues'``
      (see the module docstring).
    normalize: apply VGGT's normalisation (first camera = identity, mean point
      distance = 1).
    fog: density ``>= 0`` of the distance fog per unit of depth
      (``f = exp(−fog·depth)``); ``None``: the split's own (0.35 for
      ``'orbit_cues'``, no fog for the others). The scene and camera draws do
      not depend on it, so the same key gives the same scenes and cameras.

  Returns:
    :class:`SceneBatch` (float32).
  """
  if split not in SPLITS:
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
  for name, v in (("num_scenes", num_scenes), ("num_views", num_views)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  # np.isscalar's TypeIs does not exclude int from the other branch: there it is
  # the pair.
  H, W = (
    (image_size, image_size)
    if np.isscalar(image_size)
    else tuple(cast(tuple[int, int], image_size))
  )
  if not (_is_int(H) and _is_int(W)):
    raise ValueError(
      f"image_size must be an int or a pair (H, W) of ints, got {image_size!r}"
    )
  if H < 4 or W < 4:
    raise ValueError(f"image_size must be at least 4 px, got {(H, W)}")
  if fog is not None and (
    isinstance(fog, bool)
    or not isinstance(fog, (int, float, np.integer, np.floating))
    or not np.isfinite(fog)
    or fog < 0
  ):
    raise ValueError(f"fog must be None or a finite density >= 0, got {fog!r}")
  rng = _seed_of(key)
  scenes, exts, fovs = [], [], []
  for _ in range(int(num_scenes)):
    scenes.append(_sample_scene(rng, split))
    if fog is not None:
      scenes[-1]["fog"] = np.float32(fog)
    e, f = _sample_cameras(rng, int(num_views), split)
    exts.append(e)
    fovs.append(f)
  scene = {k: np.stack([sc[k] for sc in scenes]) for k in scenes[0]}
  return _render_jit(
    scene, np.stack(exts), np.stack(fovs), int(H), int(W), bool(normalize)
  )


# one compiled program instead of dozens of eager ops per batch of scenes
_pose_encoding = jax.jit(geo.cameras_to_pose_encoding, static_argnums=2)

SCENE_ARRAY_KEYS = (
  "images",
  "depth",
  "points",
  "valid",
  "extrinsics",
  "intrinsics",
  "pose_enc",
)


def scene_arrays(batch: SceneBatch) -> dict[str, np.ndarray]:
  """A :class:`SceneBatch` as NumPy arrays, with VGGT's pose encoding of its
  cameras.

  Args:
    batch: scenes ``[B, S, ...]`` (:func:`render_scenes`,
      ``load_multiview_scenes``).

  Returns:
    ``{"images" [B,S,H,W,3], "depth" [B,S,H,W], "points" [B,S,H,W,3], "valid"
    [B,S,H,W], "extrinsics" [B,S,3,4], "intrinsics" [B,S,3,3], "pose_enc"
    [B,S,9]}``.

  Raises:
    ValueError: a camera whose pose encoding is not finite (e.g. not a rotation;
      under jit :func:`cameras_to_pose_encoding` gives NaN instead of raising).
  """
  hw = tuple(batch.images.shape[2:4])
  pose_enc = np.asarray(_pose_encoding(batch.extrinsics, batch.intrinsics, hw))
  if not np.isfinite(pose_enc).all():
    raise ValueError(
      "the cameras give a non-finite pose encoding (not rotations?)"
    )
  return {
    **{k: np.asarray(getattr(batch, k)) for k in SCENE_ARRAY_KEYS[:-1]},
    "pose_enc": pose_enc,
  }


def render_scene_arrays(
  seed: int,
  num_scenes: int,
  num_views: int,
  *,
  image_size: int = 32,
  split: str = "orbit_easy",
  fog: float | None = None,
  chunk: int = 16,
) -> dict[str, np.ndarray]:
  """:func:`render_scenes` in equal chunks, as :func:`scene_arrays` (one
  compilation).

  Chunk ``i`` is rendered from the int seed ``seed + i * chunk``; the last chunk
  is rendered whole and cut, so every chunk has one shape.

  Args:
    seed: the int seed of the first chunk.
    num_scenes: ``B``, an int >= 1.
    num_views: ``S``, an int >= 1.
    image_size: H = W of each view.
    split: the camera split (``SPLITS``).
    fog: the fog density (:func:`render_scenes`; ``None``: the split's own).
    chunk: scenes per rendered chunk (an int >= 1).

  Returns:
    The :func:`scene_arrays` of the ``num_scenes`` scenes.
  """
  if (
    isinstance(chunk, bool)
    or not isinstance(chunk, (int, np.integer))
    or chunk < 1
  ):
    raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")
  parts = [
    scene_arrays(
      render_scenes(
        seed + start,
        chunk,
        num_views,
        image_size=image_size,
        split=split,
        fog=fog,
      )
    )
    for start in range(0, num_scenes, chunk)
  ]
  return {
    k: np.concatenate([p[k] for p in parts])[:num_scenes]
    for k in SCENE_ARRAY_KEYS
  }
