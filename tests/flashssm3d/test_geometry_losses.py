"""Geometry and loss tests against float64 references and closed forms."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jaxpapers import flashssm3d as fs

# Jitted entry points: one compilation per call site instead of one per eager
# op.
_proc = jax.jit(
  fs.procrustes_loss,
  static_argnames=("robust", "stop_alignment_grad", "with_scale"),
)
_umeyama = jax.jit(fs.weighted_umeyama, static_argnames=("with_scale",))
_reproj = jax.jit(
  fs.reprojection_loss,
  static_argnames=("image_hw", "delta", "clamp", "margin", "eps"),
)


def _rand_rot(rng, n=None):
  return Rotation.random(n, random_state=rng).as_matrix()


def _cams(rng, S, hw=(24, 32)):
  R = _rand_rot(rng, S)
  t = rng.normal(size=(S, 3))
  ext = np.concatenate([R, t[..., None]], -1)
  fov_h = rng.uniform(0.8, 1.2, S)
  fov_w = rng.uniform(0.9, 1.3, S)
  K = np.zeros((S, 3, 3))
  K[:, 0, 0] = (hw[1] / 2) / np.tan(fov_w / 2)
  K[:, 1, 1] = (hw[0] / 2) / np.tan(fov_h / 2)
  K[:, 0, 2], K[:, 1, 2], K[:, 2, 2] = hw[1] / 2, hw[0] / 2, 1.0
  return ext, K


class GeometryVariantsTest(chex.TestCase):
  """The camera, confidence and gradient losses, with and without
  ``jax.jit``."""

  @chex.variants(with_jit=True, without_jit=True)
  def test_camera_loss_hand_computed(self):
    _camera_loss(self.variant)

  @chex.variants(with_jit=True, without_jit=True)
  def test_conf_regression_and_gradient_loss(self):
    _conf_and_gradient(self.variant)


def test_quaternion_matches_scipy_and_round_trips():
  _quaternion(jax.jit)  # jit only: eagerly its many small ops cost seconds


def _quaternion(variant):
  rng = np.random.default_rng(0)
  # random rotations, then near-180-degree ones (they exercise the non-w pivots)
  R2 = Rotation.from_rotvec(
    np.array([[np.pi - 1e-3, 0, 0], [0, np.pi, 0], [0, 0, -np.pi]])
  ).as_matrix()
  R = np.concatenate([_rand_rot(rng, 50), R2])
  with jax.enable_x64(True):
    q, R_back = variant(
      lambda r: (fs.mat_to_quat(r), fs.quat_to_mat(fs.mat_to_quat(r)))
    )(jnp.asarray(R))
  q_ref = Rotation.from_matrix(R[:50]).as_quat()  # scipy is scalar-last too
  q_ref = np.where(q_ref[:, 3:] < 0, -q_ref, q_ref)
  chex.assert_trees_all_close(np.asarray(q)[:50], q_ref, atol=1e-12)
  chex.assert_trees_all_close(np.asarray(R_back)[:50], R[:50], atol=1e-12)
  chex.assert_trees_all_close(np.asarray(R_back)[50:], R2, atol=1e-10)


def test_pose_encoding_round_trip():
  _pose_encoding(jax.jit)  # jit only, as the quaternion test


def _pose_encoding(variant):
  rng = np.random.default_rng(1)
  hw = (24, 32)
  ext, K = _cams(rng, 7, hw)

  def chain(e, k):
    enc = fs.cameras_to_pose_encoding(e, k, hw)
    e2, K2 = fs.pose_encoding_to_cameras(enc, hw)
    return enc, e2, K2, fs.cameras_to_pose_encoding(e2, K2, hw)

  with jax.enable_x64(True):
    enc, e2, K2, enc2 = variant(chain)(jnp.asarray(ext), jnp.asarray(K))
  chex.assert_shape(enc, (7, 9))
  chex.assert_trees_all_close((e2, K2, enc2), (ext, K, enc), atol=1e-10)
  # fov definition: fov_h = 2 atan(H/2 / f_y)
  np.testing.assert_allclose(
    np.asarray(enc[:, 7]), 2 * np.arctan(12 / K[:, 1, 1]), rtol=1e-6
  )
  with pytest.raises(ValueError, match="pose_enc"):
    fs.pose_encoding_to_cameras(jnp.zeros((3, 8)), hw)


def test_project_unproject_inverse():
  rng = np.random.default_rng(2)
  hw = (6, 8)
  ext, K = _cams(rng, 3, hw)
  K = np.array(K)
  # a skewed K: unprojection inverts all of K
  K[:, 0, 1] = rng.uniform(-2.0, 2.0, size=3)
  depth = rng.uniform(1.0, 3.0, size=(3, 6, 8))

  def roundtrip(d, e, k):
    pts = fs.unproject_depth(d, e, k)
    return (pts,) + tuple(fs.project_points(pts.reshape(3, -1, 3), e, k))

  with jax.enable_x64(True):
    pts, uv, z = jax.jit(roundtrip)(
      jnp.asarray(depth), jnp.asarray(ext), jnp.asarray(K)
    )
  v, u = np.meshgrid(np.arange(6) + 0.5, np.arange(8) + 0.5, indexing="ij")
  np.testing.assert_allclose(np.asarray(z).reshape(3, 6, 8), depth, atol=1e-12)
  np.testing.assert_allclose(
    np.asarray(uv).reshape(3, 6, 8, 2)[..., 0],
    np.broadcast_to(u, (3, 6, 8)),
    atol=1e-10,
  )
  np.testing.assert_allclose(
    np.asarray(uv).reshape(3, 6, 8, 2)[..., 1],
    np.broadcast_to(v, (3, 6, 8)),
    atol=1e-10,
  )
  # numpy reference for one pixel: X = R^T (d K^-1 [u v 1] - t)
  k, i, j = 1, 2, 5
  ray = np.linalg.inv(K[k]) @ np.array([j + 0.5, i + 0.5, 1.0])
  X = ext[k, :, :3].T @ (depth[k, i, j] * ray - ext[k, :, 3])
  np.testing.assert_allclose(np.asarray(pts)[k, i, j], X, atol=1e-12)


def test_normalize_scene():
  rng = np.random.default_rng(3)
  hw = (4, 5)
  ext, K = _cams(rng, 3, hw)
  depth = rng.uniform(1.0, 3.0, size=(1, 3) + hw)
  valid = np.ones((1, 3) + hw, bool)
  valid[0, 1, 0, 0] = False

  def chain(dep, e, k, v):
    pts = fs.unproject_depth(dep, e, k)
    p, e_n, _, d = fs.normalize_scene(pts, e, v, dep)
    # normalised cameras still see normalised points at normalised depth
    return p, e_n, fs.unproject_depth(d, e_n, k)

  with jax.enable_x64(True):
    p, e, p2 = jax.jit(chain)(
      jnp.asarray(depth),
      jnp.asarray(ext[None]),
      jnp.asarray(K[None]),
      jnp.asarray(valid),
    )
  np.testing.assert_allclose(np.asarray(e[0, 0]), np.eye(3, 4), atol=1e-12)
  dist = np.linalg.norm(np.asarray(p), axis=-1)[valid]
  np.testing.assert_allclose(dist.mean(), 1.0, atol=1e-12)
  np.testing.assert_allclose(np.asarray(p2), np.asarray(p), atol=1e-10)


def _sim3(rng, X):
  R = _rand_rot(rng)
  s = rng.uniform(0.3, 3.0)
  t = rng.normal(size=3) * 2
  return s, R, t, s * X @ R.T + t


def test_umeyama_recovers_similarity_float64():
  rng = np.random.default_rng(4)
  X = rng.normal(size=(64, 3))
  s, R, t, Y = _sim3(rng, X)
  w = rng.uniform(0.1, 2.0, 64)
  with jax.enable_x64(True):
    s2, R2, t2 = _umeyama(jnp.asarray(X), jnp.asarray(Y), jnp.asarray(w))
  np.testing.assert_allclose(float(s2), s, rtol=1e-12)
  np.testing.assert_allclose(np.asarray(R2), R, atol=1e-12)
  np.testing.assert_allclose(np.asarray(t2), t, atol=1e-11)
  # float32 to ~1e-5
  s3, R3, t3 = _umeyama(
    jnp.asarray(X, jnp.float32), jnp.asarray(Y, jnp.float32)
  )
  np.testing.assert_allclose(np.asarray(R3), R, atol=1e-4)
  # weighted fit with noise equals the float64 numpy reference
  Yn = Y + 0.1 * rng.normal(size=Y.shape)
  with jax.enable_x64(True):
    out = _umeyama(jnp.asarray(X), jnp.asarray(Yn), jnp.asarray(w))
  ref = fs.umeyama_np(X, Yn, w)
  for a, b in zip(out, ref):
    np.testing.assert_allclose(np.asarray(a), b, atol=1e-12)


def test_umeyama_reflection_fix():
  rng = np.random.default_rng(5)
  X = rng.normal(size=(30, 3))
  # a mirror: best proper rotation must have det +1
  Y = X * np.array([1.0, 1.0, -1.0])
  with jax.enable_x64(True):
    _, R, _ = _umeyama(jnp.asarray(X), jnp.asarray(Y))
  assert np.isclose(np.linalg.det(np.asarray(R)), 1.0, atol=1e-10)


def test_procrustes_loss_similarity_invariant():
  rng = np.random.default_rng(6)
  Y = rng.normal(size=(2, 100, 3))
  X = Y + 0.2 * rng.normal(size=Y.shape)
  w = rng.uniform(0.5, 2.0, size=(2, 100))
  with jax.enable_x64(True):
    l0 = float(_proc(jnp.asarray(X), jnp.asarray(Y), jnp.asarray(w)))
    Xt = np.stack([_sim3(rng, x)[3] for x in X])
    l1 = float(_proc(jnp.asarray(Xt), jnp.asarray(Y), jnp.asarray(w)))
    lz = float(
      _proc(
        jnp.asarray(np.stack([_sim3(rng, y)[3] for y in Y])), jnp.asarray(Y)
      )
    )
  assert l0 > 1e-3
  np.testing.assert_allclose(l1, l0, rtol=1e-10)
  assert lz < 1e-5
  for robust in ("squared", "cauchy"):
    ab = _proc(
      jnp.asarray(np.stack([X, Xt]), jnp.float32),
      jnp.asarray(np.stack([Y, Y]), jnp.float32),
      robust=robust,
    )
    a = float(
      _proc(
        jnp.asarray(X, jnp.float32), jnp.asarray(Y, jnp.float32), robust=robust
      )
    )
    # mean of two equal losses
    np.testing.assert_allclose(float(ab), a, rtol=1e-4)
  with pytest.raises(ValueError, match="robust"):
    _proc(jnp.asarray(X), jnp.asarray(Y), robust="l3")


def test_procrustes_gradients_finite_on_degenerate_sets():
  Y = jnp.asarray(np.random.default_rng(7).normal(size=(16, 3)), jnp.float32)
  degenerate = {
    "identical": jnp.ones((16, 3)),
    "collinear": jnp.linspace(0, 1, 16)[:, None] * jnp.array([1.0, 2.0, 3.0]),
    "planar": jnp.concatenate(
      [
        jnp.asarray(np.random.default_rng(8).normal(size=(16, 2))),
        jnp.zeros((16, 1)),
      ],
      -1,
    ).astype(jnp.float32),
    "equal": Y,
  }
  # one compilation for every case
  grad = jax.jit(jax.grad(lambda x, w: _proc(x, Y, w)))
  for name, X in degenerate.items():
    g = grad(X, jnp.ones(16))
    assert np.all(np.isfinite(np.asarray(g))), name
  # zero weights everywhere
  g = grad(Y + 1.0, jnp.zeros(16))
  assert np.all(np.isfinite(np.asarray(g)))


def test_procrustes_stop_gradient_exact_for_squared():
  """Envelope theorem: for the squared objective the stop-gradient equals the
  full gradient."""
  rng = np.random.default_rng(9)
  Yn, Xn = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
  with jax.enable_x64(True):
    Y, X = jnp.asarray(Yn), jnp.asarray(Xn)
    g1, g2 = jax.jit(
      lambda x: (
        jax.grad(lambda x: _proc(x, Y, robust="squared"))(x),
        jax.grad(
          lambda x: _proc(x, Y, robust="squared", stop_alignment_grad=False)
        )(x),
      )
    )(X)
  np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), atol=1e-9)


def _cams_b(rng, B, S, hw):
  exts, Ks = zip(*[_cams(rng, S, hw) for _ in range(B)])
  return jnp.asarray(np.stack(exts)), jnp.asarray(np.stack(Ks))


def test_reprojection_loss_zero_for_equal_positive_otherwise():
  rng = np.random.default_rng(10)
  hw = (24, 32)
  # cameras looking at the origin from radius 4 so points near the origin are
  # visible
  B, S = 2, 3
  ext = np.zeros((B, S, 3, 4))
  for b in range(B):
    for s in range(S):
      R = _rand_rot(rng)
      ext[b, s, :, :3] = R
      ext[b, s, :, 3] = [0, 0, 4.0]
  K = np.broadcast_to(
    _cams(np.random.default_rng(0), 1, hw)[1][0], (B, S, 3, 3)
  )
  P = jnp.asarray(rng.normal(size=(B, 50, 3)) * 0.5)
  cams = (jnp.asarray(ext), jnp.asarray(K))
  with jax.enable_x64(True):
    cams = (jnp.asarray(ext), jnp.asarray(K))
    P = jnp.asarray(np.asarray(P))
    assert float(_reproj(P, cams, cams, image_hw=hw)) == 0.0
    ext2 = ext.copy()
    ext2[..., 3] += [0.1, 0.0, 0.0]
    l = float(_reproj(P, (jnp.asarray(ext2), cams[1]), cams, image_hw=hw))
    assert l > 0
    # Huber value by hand for a uniform shift: the pixel error is f_x * 0.1 / z
    # per point
    uv_t, z = fs.project_points(P[:, None], *cams)
    e = np.asarray(K[0, 0, 0, 0] * 0.1 / z).ravel() / 32
    d = 0.02
    ref = np.where(e < d, 0.5 * e * e / d, e - 0.5 * d).mean()
    np.testing.assert_allclose(l, ref, rtol=1e-9)
    g = jax.jit(
      jax.grad(lambda e_: _reproj(P, (e_, cams[1]), cams, image_hw=hw))
    )(jnp.asarray(ext2))
    assert (
      np.all(np.isfinite(np.asarray(g))) and np.abs(np.asarray(g)).sum() > 0
    )
    # masks: points behind every camera give zero loss and finite gradients
    Pb = jnp.asarray(np.tile([[0, 0, -10.0]], (B, 5, 1)) @ np.eye(3))
    behind = (
      jnp.asarray(
        np.tile(np.concatenate([np.eye(3), np.zeros((3, 1))], -1), (B, S, 1, 1))
      ),
      cams[1],
    )
    assert float(_reproj(Pb, behind, behind, image_hw=hw)) == 0.0


def test_reprojection_gauge_invariance():
  """Student cameras in another Sim(3) frame, mapped back with the gauge, give
  zero loss."""
  rng = np.random.default_rng(11)
  hw = (24, 32)
  B, S = 1, 4
  ext = np.zeros((B, S, 3, 4))
  for s in range(S):
    ext[0, s, :, :3] = _rand_rot(rng)
    ext[0, s, :, 3] = [0, 0, 4.0]
  K = np.broadcast_to(
    _cams(np.random.default_rng(0), 1, hw)[1][0], (B, S, 3, 3)
  )
  with jax.enable_x64(True):
    P = jnp.asarray(rng.normal(size=(B, 40, 3)) * 0.5)
    s, R, t = 2.0, _rand_rot(rng), rng.normal(size=3)
    # student frame X_s with Y = s R X_s + t; student cameras map X_s -> cam: R_c' X_s + t_c'
    # equivalently cam = R_c (Y) + t_c  => R_c' = s R_c R, t_c' = R_c t + t_c, divide by s (scale)
    Rc, tc = ext[0, :, :, :3], ext[0, :, :, 3]
    Rs = Rc @ R
    ts = (np.einsum("sij,j->si", Rc, t) + tc) / s
    ext_s = jnp.asarray(np.concatenate([Rs, ts[..., None]], -1)[None])
    gauge = (jnp.array([s]), jnp.asarray(R[None]), jnp.asarray(t[None]))
    l = float(
      _reproj(
        P,
        (ext_s, jnp.asarray(K)),
        (jnp.asarray(ext), jnp.asarray(K)),
        image_hw=hw,
        gauge=gauge,
      )
    )
  assert l < 1e-12


def _camera_loss(variant):
  tgt = jnp.array([[[0.0, 0, 0, 0, 0, 0, 1, 1.0, 1.0]]])
  # -q is the same rotation
  pred = jnp.array([[[1.0, -1, 0, 0, 0, 0, -1, 1.5, 1.0]]])
  cam = variant(fs.camera_loss)
  l, aux = cam(pred, tgt)
  chex.assert_trees_all_close(
    (l, aux["cam_t"], aux["cam_q"]), (2.0 + 0.5 * 0.5, 2.0, 0.0)
  )
  # two stages: weights 0.6 and 1, divided by n=2
  stages = jnp.stack([pred, tgt])
  l2, _ = cam(stages, tgt)
  chex.assert_trees_all_close(l2, 0.6 * 2.25 / 2)


def _conf_and_gradient(variant):
  rng = np.random.default_rng(12)
  pred = rng.normal(size=(1, 2, 4, 4, 3))
  tgt = rng.normal(size=pred.shape)
  conf = 1 + rng.uniform(size=(1, 2, 4, 4))
  valid = rng.uniform(size=(1, 2, 4, 4)) > 0.3
  one = np.ones((1, 2, 4, 4))

  def losses(p, t, c, v):  # one compilation for the three evaluations
    return (
      fs.conf_regression_loss(p, t, c, v),
      fs.gradient_loss(t + 3.0, t, one),  # a constant offset has no gradient
      fs.gradient_loss(p, t, one, scales=1, clamp=1e9),
    )

  with jax.enable_x64(True):
    l, g_off, g = map(
      float, variant(losses)(*map(jnp.asarray, (pred, tgt, conf, valid)))
    )
  ref = (
    (np.linalg.norm(pred - tgt, axis=-1) * conf - 0.2 * np.log(conf))[valid]
  ).mean()
  d = (pred - tgt)[0]
  gx = np.abs(d[:, :, 1:] - d[:, :, :-1]).sum(-1)
  gy = np.abs(d[:, 1:] - d[:, :-1]).sum(-1)
  g_ref = (gx.sum() + gy.sum()) / (gx.size + gy.size)
  chex.assert_trees_all_close(
    (l, g_off, g), (ref, 0.0, g_ref), rtol=1e-9, atol=1e-12
  )
