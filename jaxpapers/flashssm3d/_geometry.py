"""Camera geometry for FlashSSM-3D (conventions follow VGGT, arXiv:2503.11651).

Conventions, stated once for the whole package:

* **Axes**: OpenCV camera axes, x right, y down, z forward.
* **Extrinsics**: ``[..., 3, 4]`` camera-from-world ``[R | t]``, so a world
  point ``X`` has camera coordinates ``x_cam = R X + t``.
* **Intrinsics**: ``[..., 3, 3]`` pinhole ``K`` with the principal point at the
  image centre ``(W/2, H/2)``. Pixel ``(i, j)`` (row, column) has its centre at
  ``(u, v) = (j + 0.5, i + 0.5)``. (VGGT's unprojection uses integer pixel
  coordinates with the same principal point; we use pixel centres so that
  projection and unprojection are exact inverses.)
* **Quaternions**: scalar-last ``[x, y, z, w]`` as in VGGT's
  ``vggt/utils/rotation.py``, canonicalised to ``w >= 0``.
* **Pose encoding** ``absT_quaR_FoV``: 9 numbers ``[t(3), q(4), fov_h, fov_w]``
  with ``fov_h = 2 atan((H/2) / f_y)`` and ``fov_w = 2 atan((W/2) / f_x)``.
* **Gauge**: after :func:`normalize_scene`, the first camera is the identity and
  the mean Euclidean distance of valid points to the origin is 1.
* **Depth**: z-depth along the camera's optical axis (not ray length).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as val

__all__ = [
  "quat_to_mat",
  "mat_to_quat",
  "pose_encoding_to_cameras",
  "cameras_to_pose_encoding",
  "intrinsics_from_fov",
  "project_points",
  "unproject_depth",
  "normalize_scene",
  "invert_extrinsics",
  "compose_extrinsics",
  "camera_centers",
]


def _check_float(x, name):
  if not hasattr(x, "dtype") or not jnp.issubdtype(x.dtype, jnp.floating):
    got = getattr(x, "dtype", type(x))
    raise TypeError(f"{name} must be a floating-point array, got {got}")


def _check_last(x, n, name):
  if not hasattr(x, "shape") or x.ndim < 1 or x.shape[-1] != n:
    raise ValueError(
      f"{name} must have shape [..., {n}], got {getattr(x, 'shape', type(x))}"
    )
  _check_float(x, name)


def _check_mat(x, rows, cols, name):
  """``x [..., r, c]`` with ``r`` in ``rows``; a float array."""
  if (
    not hasattr(x, "shape")
    or x.ndim < 2
    or x.shape[-2] not in rows
    or x.shape[-1] != cols
  ):
    form = " or ".join(f"[..., {r}, {cols}]" for r in rows)
    raise ValueError(
      f"{name} must have shape {form}, got {getattr(x, 'shape', type(x))}"
    )
  _check_float(x, name)


def _check_hw(image_hw):
  try:
    hw = tuple(image_hw)
  except TypeError:
    raise ValueError(
      f"image_hw must be a pair (H, W) of positive sizes, got {image_hw!r}"
    ) from None
  if (
    len(hw) != 2
    or not all(
      isinstance(v, (int, float)) or hasattr(v, "__index__") for v in hw
    )
    or min(hw) <= 0
  ):
    raise ValueError(
      f"image_hw must be a pair (H, W) of positive sizes, got {image_hw!r}"
    )
  return float(hw[0]), float(hw[1])


_ROT_TOL = 1e-3


def quat_to_mat(q: jax.Array) -> jax.Array:
  """Scalar-last quaternion ``[..., 4]`` (normalised here) to rotation
  ``[..., 3, 3]``.

  Args:
    q: ``[..., 4]`` float quaternions ``[x, y, z, w]`` (any non-zero norm).

  Returns:
    ``[..., 3, 3]`` rotation matrices, in the dtype of ``q``.

  Bad values: a quaternion with norm below ``1e-6`` or a non-finite entry has no
  rotation; eagerly this raises ``ValueError``, under ``jax.jit`` the whole
  result is NaN (wrap with ``jax.experimental.checkify.checkify`` to get the
  error).
  """
  _check_last(q, 4, "q")
  n2 = jnp.sum(q * q, axis=-1, keepdims=True)
  ok = val.debug_check_values(
    jnp.isfinite(n2) & (n2 > 1e-12),
    (
      "q must be finite quaternions [x, y, z, w] with norm > 1e-6 (a zero "
      "quaternion is no rotation)"
    ),
  )
  q = q / jnp.sqrt(n2 + 1e-24)
  x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
  r = jnp.stack(
    [
      1 - 2 * (y * y + z * z),
      2 * (x * y - z * w),
      2 * (x * z + y * w),
      2 * (x * y + z * w),
      1 - 2 * (x * x + z * z),
      2 * (y * z - x * w),
      2 * (x * z - y * w),
      2 * (y * z + x * w),
      1 - 2 * (x * x + y * y),
    ],
    axis=-1,
  )
  return val.poison_floats(r.reshape(q.shape[:-1] + (3, 3)), ok)


def _rotation_ok(R):
  """Per-matrix: finite, ``R Rᵀ = I`` and ``det R = +1`` within ``_ROT_TOL``."""
  eye = jnp.eye(3, dtype=R.dtype)
  orth = (
    jnp.max(jnp.abs(R @ jnp.swapaxes(R, -1, -2) - eye), axis=(-2, -1))
    <= _ROT_TOL
  )
  return orth & (jnp.linalg.det(R) > 0)


def mat_to_quat(R: jax.Array) -> jax.Array:
  """Rotation ``[..., 3, 3]`` to scalar-last quaternion ``[..., 4]`` with ``w >= 0``.

  Shepperd's method: picks the numerically largest of ``w, x, y, z`` as the
  pivot.

  Args:
    R: ``[..., 3, 3]`` float rotation matrices.

  Returns:
    ``[..., 4]`` unit quaternions ``[x, y, z, w]`` with ``w >= 0``.

  Bad values: ``R`` must be a rotation (``R Rᵀ = I`` within 1e-3,
  ``det R = +1``, finite); otherwise this raises ``ValueError`` eagerly and
  returns NaN under ``jax.jit`` (wrap with
  ``jax.experimental.checkify.checkify`` to get the error).
  """
  _check_mat(R, (3,), 3, "R")
  ok = val.debug_check_values(
    _rotation_ok(R),
    "R must be rotation matrices (orthonormal, det = +1, "
    f"tolerance {_ROT_TOL}); got a matrix that is not",
  )
  m = R
  m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
  tr = m00 + m11 + m22
  # Four candidate solutions, each stable when its pivot is large.
  cands = []
  s = jnp.sqrt(jnp.maximum(1.0 + tr, 1e-12)) * 2  # pivot w
  cands.append(
    jnp.stack(
      [
        (m[..., 2, 1] - m[..., 1, 2]) / s,
        (m[..., 0, 2] - m[..., 2, 0]) / s,
        (m[..., 1, 0] - m[..., 0, 1]) / s,
        0.25 * s,
      ],
      -1,
    )
  )
  s = jnp.sqrt(jnp.maximum(1.0 + m00 - m11 - m22, 1e-12)) * 2  # pivot x
  cands.append(
    jnp.stack(
      [
        0.25 * s,
        (m[..., 0, 1] + m[..., 1, 0]) / s,
        (m[..., 0, 2] + m[..., 2, 0]) / s,
        (m[..., 2, 1] - m[..., 1, 2]) / s,
      ],
      -1,
    )
  )
  s = jnp.sqrt(jnp.maximum(1.0 - m00 + m11 - m22, 1e-12)) * 2  # pivot y
  cands.append(
    jnp.stack(
      [
        (m[..., 0, 1] + m[..., 1, 0]) / s,
        0.25 * s,
        (m[..., 1, 2] + m[..., 2, 1]) / s,
        (m[..., 0, 2] - m[..., 2, 0]) / s,
      ],
      -1,
    )
  )
  s = jnp.sqrt(jnp.maximum(1.0 - m00 - m11 + m22, 1e-12)) * 2  # pivot z
  cands.append(
    jnp.stack(
      [
        (m[..., 0, 2] + m[..., 2, 0]) / s,
        (m[..., 1, 2] + m[..., 2, 1]) / s,
        0.25 * s,
        (m[..., 1, 0] - m[..., 0, 1]) / s,
      ],
      -1,
    )
  )
  cands = jnp.stack(cands, axis=-2)  # [..., 4, 4]
  pivot = jnp.argmax(jnp.stack([tr, m00, m11, m22], -1), axis=-1)
  q = jnp.take_along_axis(cands, pivot[..., None, None], axis=-2)[..., 0, :]
  q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
  return val.poison_floats(jnp.where(q[..., 3:4] < 0, -q, q), ok)


def intrinsics_from_fov(
  fov_h: jax.Array, fov_w: jax.Array, image_hw: Sequence[int]
) -> jax.Array:
  """Pinhole ``K [..., 3, 3]`` from fields of view (radians), principal point at
  the centre.

  ``f_y = (H/2) / tan(fov_h / 2)``, ``f_x = (W/2) / tan(fov_w / 2)``, ``c = (W/2, H/2)``.

  Args:
    fov_h: ``[...]`` float vertical fields of view in radians.
    fov_w: ``[...]`` float horizontal fields of view, the same shape as
      ``fov_h``.
    image_hw: ``(H, W)`` in pixels.

  Returns:
    ``[..., 3, 3]`` intrinsics.

  Bad values: fields of view outside the open interval ``(0, π)`` raise
  ``ValueError`` eagerly and give NaN under ``jax.jit`` (``checkify.checkify``
  surfaces the error).
  """
  H, W = _check_hw(image_hw)
  fov_h, fov_w = jnp.asarray(fov_h), jnp.asarray(fov_w)
  if fov_h.shape != fov_w.shape:
    raise ValueError(
      "fov_h and fov_w must have the same shape, "
      f"got {fov_h.shape} and {fov_w.shape}"
    )
  _check_float(fov_h, "fov_h")
  _check_float(fov_w, "fov_w")
  ok = val.debug_check_values(
    (fov_h > 0) & (fov_h < jnp.pi) & (fov_w > 0) & (fov_w < jnp.pi),
    "fov_h and fov_w must be fields of view in radians in (0, pi)",
  )
  fy = (H / 2.0) / jnp.tan(fov_h / 2.0)
  fx = (W / 2.0) / jnp.tan(fov_w / 2.0)
  z = jnp.zeros_like(fx)
  o = jnp.ones_like(fx)
  K = jnp.stack([fx, z, z + W / 2.0, z, fy, z + H / 2.0, z, z, o], -1)
  return val.poison_floats(K.reshape(fx.shape + (3, 3)), ok)


def pose_encoding_to_cameras(
  pose_enc: jax.Array, image_hw: Sequence[int]
) -> tuple[jax.Array, jax.Array]:
  """Decode VGGT's ``absT_quaR_FoV`` encoding.

  Args:
    pose_enc: ``[..., 9]`` = ``[t(3), q_xyzw(4), fov_h, fov_w]``.
    image_hw: ``(H, W)`` in pixels.

  Returns:
    ``(extrinsics [..., 3, 4] camera-from-world, intrinsics [..., 3, 3])``.

  Bad values (a quaternion of norm <= 1e-6, a field of view outside ``(0, π)``,
  NaN/inf) raise ``ValueError`` eagerly and make both outputs NaN under
  ``jax.jit`` (wrap with ``jax.experimental.checkify.checkify`` to get the
  error).
  """
  _check_last(pose_enc, 9, "pose_enc")
  _check_hw(image_hw)
  q, fov = pose_enc[..., 3:7], pose_enc[..., 7:]
  n2 = jnp.sum(q * q, axis=-1)
  ok = val.debug_check_values(
    jnp.isfinite(pose_enc).all(-1)
    & (n2 > 1e-12)
    & (fov > 0).all(-1)
    & (fov < jnp.pi).all(-1),
    (
      "pose_enc must be finite with a quaternion of norm > 1e-6 and fields of "
      "view in (0, pi)"
    ),
  )
  return val.poison_floats(decode_pose_unchecked(pose_enc, image_hw), ok)


def decode_pose_unchecked(
  pose_enc: jax.Array, image_hw: Sequence[int]
) -> tuple[jax.Array, jax.Array]:
  """:func:`pose_encoding_to_cameras` without the value checks (shapes still
  checked).

  For losses on network predictions, where an early-training pose with a
  non-positive field of view must give a finite (wrong-camera) loss rather than
  NaN.
  """
  _check_last(pose_enc, 9, "pose_enc")
  H, W = _check_hw(image_hw)
  q = pose_enc[..., 3:7]
  q = q / jnp.sqrt(jnp.sum(q * q, axis=-1, keepdims=True) + 1e-24)
  x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
  R = jnp.stack(
    [
      1 - 2 * (y * y + z * z),
      2 * (x * y - z * w),
      2 * (x * z + y * w),
      2 * (x * y + z * w),
      1 - 2 * (x * x + z * z),
      2 * (y * z - x * w),
      2 * (x * z - y * w),
      2 * (y * z + x * w),
      1 - 2 * (x * x + y * y),
    ],
    axis=-1,
  ).reshape(q.shape[:-1] + (3, 3))
  fy = (H / 2.0) / jnp.tan(pose_enc[..., 7] / 2.0)
  fx = (W / 2.0) / jnp.tan(pose_enc[..., 8] / 2.0)
  zz, o = jnp.zeros_like(fx), jnp.ones_like(fx)
  K = jnp.stack([fx, zz, zz + W / 2.0, zz, fy, zz + H / 2.0, zz, zz, o], -1)
  K = K.reshape(fx.shape + (3, 3))
  return jnp.concatenate([R, pose_enc[..., :3, None]], axis=-1), K


def cameras_to_pose_encoding(
  extrinsics: jax.Array, intrinsics: jax.Array, image_hw: Sequence[int]
) -> jax.Array:
  """Encode camera-from-world extrinsics ``[..., 3, 4]`` and ``K [..., 3, 3]``
  as ``[..., 9]``.

  Args:
    extrinsics: ``[..., 3, 4]`` (or ``[..., 4, 4]``) float camera-from-world
      ``[R | t]``.
    intrinsics: ``[..., 3, 3]`` float pinhole ``K`` with the same leading dims.
    image_hw: ``(H, W)`` in pixels (gives the fields of view).

  Returns:
    ``[..., 9]`` = ``[t(3), q_xyzw(4), fov_h, fov_w]`` (VGGT's ``absT_quaR_FoV``).

  Bad values (a non-rotation ``R``, a non-positive focal length) raise
  ``ValueError`` eagerly and give NaN under ``jax.jit`` (``checkify.checkify``
  surfaces the error).
  """
  _check_mat(extrinsics, (3, 4), 4, "extrinsics")
  _check_mat(intrinsics, (3,), 3, "intrinsics")
  if extrinsics.shape[:-2] != intrinsics.shape[:-2]:
    raise ValueError(
      f"extrinsics [..., 3, 4] and intrinsics [..., 3, 3] must share leading "
      f"dims, got {extrinsics.shape} and {intrinsics.shape}"
    )
  H, W = _check_hw(image_hw)
  ok = val.debug_check_values(
    (intrinsics[..., 0, 0] > 0) & (intrinsics[..., 1, 1] > 0),
    "intrinsics must have positive focal lengths K[0, 0] and K[1, 1]",
  )
  q = mat_to_quat(extrinsics[..., :3, :3])
  fov_h = 2.0 * jnp.arctan((H / 2.0) / intrinsics[..., 1, 1])
  fov_w = 2.0 * jnp.arctan((W / 2.0) / intrinsics[..., 0, 0])
  out = jnp.concatenate(
    [extrinsics[..., :3, 3], q, fov_h[..., None], fov_w[..., None]], -1
  )
  return val.poison_floats(out, ok)


def invert_extrinsics(extrinsics: jax.Array) -> jax.Array:
  """Closed-form inverse of ``[R|t]`` (``[..., 3, 4]`` or ``[..., 4, 4]``):
  ``[R^T | -R^T t]``.

  ``R`` is assumed to be a rotation (not checked: this is a hot-path helper).

  Args:
    extrinsics: ``[..., 3, 4]`` or ``[..., 4, 4]`` float ``[R | t]``.

  Returns:
    ``[..., 3, 4]`` the inverse map (world-from-camera for camera-from-world
    input).
  """
  _check_mat(extrinsics, (3, 4), 4, "extrinsics")
  R, t = extrinsics[..., :3, :3], extrinsics[..., :3, 3]
  Rt = jnp.swapaxes(R, -1, -2)
  return jnp.concatenate([Rt, -(Rt @ t[..., None])], -1)


def compose_extrinsics(a: jax.Array, b: jax.Array) -> jax.Array:
  """``a ∘ b`` for ``[R|t]`` maps: ``x -> R_a (R_b x + t_b) + t_a``.

  Args:
    a: ``[..., 3, 4]`` or ``[..., 4, 4]`` float ``[R_a | t_a]``, applied second.
    b: ``[..., 3, 4]`` or ``[..., 4, 4]`` float ``[R_b | t_b]``, applied first
      (leading dims broadcast with ``a``).

  Returns:
    ``[..., 3, 4]`` ``[R_a R_b | R_a t_b + t_a]``.
  """
  _check_mat(a, (3, 4), 4, "a")
  _check_mat(b, (3, 4), 4, "b")
  R = a[..., :3, :3] @ b[..., :3, :3]
  t = (a[..., :3, :3] @ b[..., :3, 3:4])[..., 0] + a[..., :3, 3]
  return jnp.concatenate([R, t[..., None]], -1)


def camera_centers(extrinsics: jax.Array) -> jax.Array:
  """World-frame camera centres ``-R^T t`` of camera-from-world extrinsics.

  Args:
    extrinsics: ``[..., 3, 4]`` or ``[..., 4, 4]`` float camera-from-world
      ``[R | t]``.

  Returns:
    ``[..., 3]`` camera centres in world coordinates.
  """
  _check_mat(extrinsics, (3, 4), 4, "extrinsics")
  return invert_extrinsics(extrinsics)[..., :3, 3]


def project_points(
  points: jax.Array,
  extrinsics: jax.Array,
  intrinsics: jax.Array,
  *,
  eps: float = 1e-6,
) -> tuple[jax.Array, jax.Array]:
  """Project world points into cameras: ``u = K_2x2 x_xy / max(x_z, eps) + c``.

  Args:
    points: ``[..., M, 3]`` world points.
    extrinsics: ``[..., 3, 4]`` camera-from-world (leading dims broadcast with
      ``points``).
    intrinsics: ``[..., 3, 3]``.
    eps: floor (> 0) of the camera depth in the division (points behind the
      camera keep their true ``z``).

  Returns:
    ``(uv [..., M, 2] pixels, z [..., M] camera depth)``.
  """
  _check_last(points, 3, "points")
  _check_mat(extrinsics, (3, 4), 4, "extrinsics")
  _check_mat(intrinsics, (3,), 3, "intrinsics")
  if not eps > 0:
    raise ValueError(f"eps must be > 0, got {eps!r}")
  R, t = extrinsics[..., None, :3, :3], extrinsics[..., None, :3, 3]
  x = jnp.einsum("...ij,...j->...i", R, points) + t
  z = x[..., 2]
  zs = jnp.maximum(z, eps)
  K = intrinsics[..., None, :, :]
  u = (
    K[..., 0, 0] * x[..., 0] / zs + K[..., 0, 1] * x[..., 1] / zs + K[..., 0, 2]
  )
  v = K[..., 1, 1] * x[..., 1] / zs + K[..., 1, 2]
  return jnp.stack([u, v], -1), z


def pixel_grid(image_hw: Sequence[int]) -> jax.Array:
  """Pixel centres ``[H, W, 2]`` as ``(u, v) = (j + 0.5, i + 0.5)``."""
  H, W = int(image_hw[0]), int(image_hw[1])
  v, u = jnp.meshgrid(jnp.arange(H) + 0.5, jnp.arange(W) + 0.5, indexing="ij")
  return jnp.stack([u, v], -1)


def unproject_depth(
  depth: jax.Array, extrinsics: jax.Array, intrinsics: jax.Array
) -> jax.Array:
  """Unproject z-depth maps to world points.

  ``X = R^T (d K^{-1} [u, v, 1]^T - t)``.

  Args:
    depth: ``[..., H, W]`` or ``[..., H, W, 1]`` z-depth.
    extrinsics: ``[..., 3, 4]`` camera-from-world.
    intrinsics: ``[..., 3, 3]``.

  Returns:
    world points ``[..., H, W, 3]``.
  """
  _check_mat(extrinsics, (3, 4), 4, "extrinsics")
  _check_mat(intrinsics, (3,), 3, "intrinsics")
  _check_float(depth, "depth")
  if (
    depth.ndim >= 3
    and depth.shape[-1] == 1
    and depth.ndim == extrinsics.ndim + 1
  ):
    depth = depth[..., 0]
  if depth.ndim != extrinsics.ndim:
    raise ValueError(
      "depth [..., H, W] must have the same leading dims as extrinsics [..., "
      f"3, 4]; got {depth.shape} and {extrinsics.shape}"
    )
  H, W = depth.shape[-2:]
  uv = pixel_grid((H, W))
  K = intrinsics[..., None, None, :, :]
  fx, fy, cx, cy = K[..., 0, 0], K[..., 1, 1], K[..., 0, 2], K[..., 1, 2]
  skew = K[..., 0, 1]
  yn = (uv[..., 1] - cy) / fy  # K^{-1} [u, v, 1]^T for an upper-triangular K
  xn = (uv[..., 0] - cx - skew * yn) / fx
  xc = xn * depth
  yc = yn * depth
  cam = jnp.stack([xc, yc, depth], -1)  # [..., H, W, 3]
  R, t = extrinsics[..., None, None, :3, :3], extrinsics[..., None, None, :3, 3]
  return jnp.einsum("...ji,...j->...i", R, cam - t)


def normalize_scene(
  points: jax.Array,
  extrinsics: jax.Array,
  valid: jax.Array,
  depth: jax.Array | None = None,
) -> tuple[jax.Array, ...]:
  """VGGT target normalisation: first camera = identity, mean valid point
  distance = 1.

  Args:
    points: ``[B, S, H, W, 3]`` world points.
    extrinsics: ``[B, S, 3, 4]`` camera-from-world.
    valid: ``[B, S, H, W]`` boolean mask.
    depth: optional ``[B, S, H, W]`` depth, rescaled by the same factor.

  Returns:
    ``(points, extrinsics, scale)`` (plus ``depth`` if given), with
    ``scale [B]`` the mean distance that was divided out. New extrinsics are
    ``E_i E_0^{-1}``. A scene with no valid point (or a mean distance <= 1e-8)
    keeps its scale: ``scale = 1``.
  """
  _check_float(points, "points")
  if points.ndim != 5 or points.shape[-1] != 3:
    raise ValueError(f"points must be [B, S, H, W, 3], got {points.shape}")
  if extrinsics.shape != points.shape[:2] + (3, 4):
    raise ValueError(f"extrinsics must be [B, S, 3, 4], got {extrinsics.shape}")
  if valid.shape != points.shape[:4]:
    raise ValueError(f"valid must be [B, S, H, W], got {valid.shape}")
  e0 = extrinsics[:, :1]
  e0_inv = invert_extrinsics(e0)
  ext = compose_extrinsics(extrinsics, e0_inv)
  R0, t0 = e0[:, 0, :3, :3], e0[:, 0, :3, 3]
  p = jnp.einsum("bij,bshwj->bshwi", R0, points) + t0[:, None, None, None]
  v = valid.astype(p.dtype)
  dist = jnp.linalg.norm(p, axis=-1)
  scale = jnp.sum(dist * v, axis=(1, 2, 3)) / jnp.maximum(
    jnp.sum(v, axis=(1, 2, 3)), 1.0
  )
  scale = jnp.where(scale > 1e-8, scale, 1.0)
  p = p / scale[:, None, None, None, None]
  ext = ext.at[..., 3].set(ext[..., 3] / scale[:, None, None])
  if depth is not None:
    return p, ext, scale, depth / scale.reshape((-1,) + (1,) * (depth.ndim - 1))
  return p, ext, scale
