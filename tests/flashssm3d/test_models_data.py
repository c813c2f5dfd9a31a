"""Models (shapes, linear-in-views structure, no recompilation) and the scene
generator / TFDS source."""

import dataclasses
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import flashssm3d as fs
from tests.jit_util import count_traces


def _fwd(model):
  graphdef, state = nnx.split(model)

  def forward(s, x):
    return nnx.merge(graphdef, s)(x)

  return jax.jit(forward), state


@pytest.fixture(scope="module")
def scenes():
  return fs.render_scenes(jax.random.key(0), 2, 3, image_size=16)


def test_render_scenes_consistent_and_deterministic(scenes):
  b = scenes
  assert b.images.shape == (2, 3, 16, 16, 3) and b.depth.shape == (2, 3, 16, 16)
  assert float(b.images.min()) >= 0 and float(b.images.max()) <= 1
  # exact geometry: unprojected depth equals the rendered points; normalised
  # gauge
  p = fs.unproject_depth(b.depth, b.extrinsics, b.intrinsics)
  np.testing.assert_allclose(np.asarray(p), np.asarray(b.points), atol=1e-4)
  np.testing.assert_allclose(
    np.asarray(b.extrinsics[:, 0]),
    np.broadcast_to(np.eye(3, 4), (2, 3, 4)),
    atol=1e-5,
  )
  d = np.linalg.norm(np.asarray(b.points), axis=-1)[np.asarray(b.valid)]
  np.testing.assert_allclose(d.mean(), 1.0, rtol=1e-3)
  b2 = fs.render_scenes(jax.random.key(0), 2, 3, image_size=16)
  np.testing.assert_array_equal(np.asarray(b2.images), np.asarray(b.images))
  b3 = fs.render_scenes(jax.random.key(1), 2, 3, image_size=16)
  assert not np.allclose(np.asarray(b3.images), np.asarray(b.images))
  with pytest.raises(ValueError, match="split"):
    fs.render_scenes(0, 1, 2, split="spiral")


def test_fog_density_is_the_closed_form_blend_and_leaves_the_scenes_unchanged():
  """``fog=k`` renders ``rgb·exp(−k·z) + fog_colour·(1 − exp(−k·z))`` of the
  fog-free image.

  Same key: the same scenes and cameras whatever the density, and ``fog=None``
  is the split's own density (0.35 for orbit_cues), so configs without the field
  render what they rendered.
  """
  # the shapes of the `scenes` fixture: one compile
  kw = dict(image_size=16, split="orbit_cues")
  clear = fs.render_scenes(5, 2, 3, fog=0.0, **kw)
  thin = fs.render_scenes(5, 2, 3, fog=0.1, **kw)
  own = fs.render_scenes(5, 2, 3, **kw)
  dense = fs.render_scenes(5, 2, 3, fog=0.35, **kw)
  for a, b in ((clear, thin), (clear, own)):
    np.testing.assert_array_equal(np.asarray(a.depth), np.asarray(b.depth))
    np.testing.assert_array_equal(
      np.asarray(a.extrinsics), np.asarray(b.extrinsics)
    )
  np.testing.assert_array_equal(
    np.asarray(own.images), np.asarray(dense.images)
  )
  # the fog sees the rendered (unnormalised) depth: normalisation divided it by
  # `scale`
  z = (
    np.asarray(clear.depth, np.float64)
    * np.asarray(clear.scale, np.float64)[:, None, None, None]
  )
  f = np.exp(-0.1 * z)[..., None]
  fog_rgb = np.array([0.75, 0.8, 0.95])
  want = np.asarray(clear.images, np.float64) * f + fog_rgb * (1 - f)
  np.testing.assert_allclose(np.asarray(thin.images), want, atol=1e-5)
  assert not np.allclose(np.asarray(thin.images), np.asarray(own.images))
  for bad in (-0.1, float("nan"), "0.1", True):
    with pytest.raises(ValueError, match="fog"):
      fs.render_scenes(5, 2, 3, fog=bad, **kw)


def test_tfds_builder_offline_without_tensorflow(tmp_path):
  src = fs.build_scene_dataset(
    tmp_path, num_train=4, num_test=4, num_views=2, image_size=8
  )
  assert len(src["train"]) == 4 and len(src["test"]) == 4
  ex = src["train"][1]
  assert ex["images"].shape == (2, 8, 8, 3) and ex["images"].dtype == np.uint8
  assert ex["extrinsics"].shape == (2, 3, 4)
  # disjoint seeds
  assert not np.array_equal(src["train"][0]["images"], src["test"][0]["images"])
  assert "tensorflow" not in sys.modules
  batch = fs.batch_from_records([src["train"][i] for i in range(2)])
  assert batch.images.shape == (2, 2, 8, 8, 3)


_SMALL = dict(
  width=16, depth=2, state=4, image_size=16, camera_stages=2, chunk_size=8
)


@pytest.fixture(scope="module")
def student_forward():
  """One small student and its jitted forward, shared by the tests below (one
  compilation)."""
  st = fs.FlashSSM3D(fs.FlashSSM3DConfig(**_SMALL), rngs=nnx.Rngs(0))
  return _fwd(st) + (st,)


def test_student_and_teacher_forward_shapes_no_recompile(
  scenes, student_forward
):
  x = scenes.images
  te = fs.AATeacher(
    fs.TeacherConfig(
      width=16, depth=1, heads=2, image_size=16, camera_stages=2
    ),
    rngs=nnx.Rngs(0),
  )
  for f, s in (student_forward[:2], _fwd(te)):
    p = f(s, x)
    chex.assert_shape(
      [p.pose_enc, p.pose_stages, p.depth, p.points],
      [(2, 3, 9), (2, 2, 3, 9), (2, 3, 16, 16, 1), (2, 3, 16, 16, 3)],
    )
    assert (
      float(p.depth.min()) > 0
      and float(p.depth_conf.min()) >= 1
      and float(p.point_conf.min()) >= 1
    )
    x2 = x + 0.1
    with count_traces() as traces:
      f(s, x2)
    assert traces["forward"] == 0  # same shapes: no second trace
  with pytest.raises(ValueError, match="images"):
    student_forward[2](jnp.zeros((1, 2, 8, 8, 3)))
  with pytest.raises(ValueError, match="method"):
    fs.FlashSSM3DConfig(method="fft")


def test_pixel_statistics_match_numpy():
  x = np.random.default_rng(0).uniform(0.5, 0.9, (3, 2, 4, 4, 3)) * np.array(
    [1.0, 0.5, 0.2]
  )
  mean, std = fs.pixel_statistics(x)
  flat = x.reshape(-1, 3)
  np.testing.assert_allclose(mean, flat.mean(0), rtol=1e-12)
  np.testing.assert_allclose(
    std, np.sqrt(((flat - flat.mean(0)) ** 2).mean(0)), rtol=1e-12
  )
  # a constant channel is left unscaled instead of divided by zero
  assert fs.pixel_statistics(np.full((2, 2, 3), 0.7))[1] == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("kind", ["student", "teacher"])
def test_models_standardise_their_input_pixels(scenes, kind):
  """The model with (mean, std) on raw images is the identity-norm model on (x -
  mean) / std.

  Raw renders of fogged scenes vary by ~0.1 around ~0.65: without this
  normalisation the patch tokens differ by a few percent of their norm and the
  trained camera token ignores the images.
  """
  mean, std = (0.6, 0.65, 0.75), (0.1, 0.11, 0.13)
  if kind == "student":
    cfg = fs.FlashSSM3DConfig(
      width=16, depth=1, state=4, image_size=16, camera_stages=1
    )
    make = fs.FlashSSM3D
  else:
    cfg = fs.TeacherConfig(
      width=16, depth=1, heads=2, image_size=16, camera_stages=1
    )
    make = fs.AATeacher
  plain = make(cfg, rngs=nnx.Rngs(0))
  normed = make(
    dataclasses.replace(cfg, pixel_mean=mean, pixel_std=std), rngs=nnx.Rngs(0)
  )
  x = np.asarray(scenes.images)
  want = plain(jnp.asarray((x - np.array(mean)) / np.array(std), jnp.float32))
  got = normed(jnp.asarray(x))
  for g, w in zip(got, want):
    np.testing.assert_allclose(
      np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-5
    )
  assert not np.allclose(
    np.asarray(plain(jnp.asarray(x)).depth), np.asarray(got.depth)
  )


def test_student_frames_communicate(scenes, student_forward):
  """Every frame's camera token depends on every other frame (bidirectional
  global scan)."""
  graphdef, state = nnx.split(student_forward[2])
  x = scenes.images[:1]

  def cam_tokens(x):
    m = nnx.merge(graphdef, state)
    return m.backbone(m._tokens(x))[0, :, 0].sum(-1)  # [S]

  # forward mode, one perturbed input frame at a time (one compilation, S
  # evaluations)
  jvp = jax.jit(lambda t: jax.jvp(cam_tokens, (x,), (t,))[1])
  S = x.shape[1]
  for s_in in range(S):
    t = jnp.zeros_like(x).at[:, s_in].set(1.0)
    # every camera token sees frame s_in
    assert np.all(np.abs(np.asarray(jvp(t))) > 0), s_in


def test_distillation_loss_vanishes_on_its_own_targets(scenes):
  """GT targets against themselves: every term vanishes except the confidence
  penalty.

  (That the student's train step differentiates every term, Procrustes and
  reprojection active and finite, is checked on the smoke run:
  test_experiment.py.)
  """
  b = scenes
  ones = jnp.ones(b.valid.shape)
  tgt = fs.DistillTargets(
    b.pose_enc, b.depth[..., None], ones, b.points, ones, b.valid
  )
  w = fs.LossWeights(procrustes=1.0, reprojection=0.5, num_points=64)
  pred = fs.Predictions(
    b.pose_enc, b.depth[..., None], ones, b.points, ones, b.pose_enc[None]
  )
  l0, aux0 = jax.jit(lambda p, t: fs.distillation_loss(p, t, w))(pred, tgt)
  assert np.isfinite(float(l0))
  assert (
    float(aux0["cam"]) < 1e-6
    and float(aux0["procrustes"]) < 1e-3
    and float(aux0["reprojection"]) < 1e-9
  )


def test_sharded_forward_equals_single_device(student_forward, num_devices):
  """The batch sharded over an 8-device mesh gives the single-device outputs."""
  f, s, _ = student_forward
  x = jax.random.uniform(jax.random.key(5), (2 * num_devices, 3, 16, 16, 3))
  # single-device reference in batches of 2 scenes of 3 views (the shapes
  # compiled above)
  parts = [f(s, x[i : i + 2]) for i in range(0, len(x), 2)]
  ref = type(parts[0])(
    *[
      jnp.concatenate(
        [getattr(p, k) for p in parts], axis=1 if k == "pose_stages" else 0
      )
      for k in parts[0]._fields
    ]
  )
  mesh = jax.make_mesh(
    (num_devices,), ("data",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  xs = jax.device_put(
    x, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  )
  out = f(s, xs)
  # really computed sharded
  assert len(out.depth.sharding.device_set) == num_devices
  for a, b in zip(out, ref):
    np.testing.assert_allclose(
      np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-4
    )


def test_accelerator_settings_match_the_default_forward(
  student_forward, scenes
):
  """chunked scan + remat + bf16 backbone: same parameters, the float32 outputs
  within bf16 error."""
  f, s, _ = student_forward
  cfg = fs.FlashSSM3DConfig(
    **_SMALL, method="chunked", remat=True, dtype=("bfloat16")
  )
  g, s2 = _fwd(fs.FlashSSM3D(cfg, rngs=nnx.Rngs(0)))
  x = scenes.images
  ref, out = f(s, x), g(s2, x)
  assert out.depth.dtype == jnp.float32 and out.pose_enc.dtype == jnp.float32
  # bf16 backbone: agreement in aggregate (single pixels go through exp / expm1
  # activations)
  np.testing.assert_allclose(
    np.asarray(out.pose_enc), np.asarray(ref.pose_enc), atol=5e-2
  )
  rel = np.abs(np.log(np.asarray(out.depth) / np.asarray(ref.depth)))
  assert np.median(rel) < 0.03 and np.mean(rel) < 0.05, (
    np.median(rel),
    np.mean(rel),
  )
  err = np.abs(np.asarray(out.points) - np.asarray(ref.points))
  assert (
    np.median(err) < 0.05 * np.median(np.abs(np.asarray(ref.points))) + 1e-3
  )
  with pytest.raises(ValueError, match="dtype"):
    fs.FlashSSM3DConfig(dtype="float16")


def test_sharded_train_step_equals_single_device(num_devices):
  """Two train steps of the experiment with the batch sharded over 8 devices =
  unsharded steps.

  The library's step (``fs.train_step`` with every loss term: regression,
  Procrustes, reprojection), optimizer (``fs.train_optimizer``), batches
  (``fs.sample_batches``) and the library's ahead-of-time compilation
  (``fs.compile_step``), once with ``batch_sharding`` of a ``shard_batch=True``
  config and once without: same losses, same updated parameters and optimizer
  state. The compiled sharded step is called again on its own output state (as
  ``core.train_loop`` does).
  """
  from experiments.flashssm3d import train
  from experiments.flashssm3d.configs import smoke
  from jaxpapers import core

  cfg = smoke.get_config()
  bs = num_devices
  cfg.student.update(dict(batch_size=bs, learning_rate=1e-2))
  cfg.teacher.batch_size = cfg.data.eval_batch = bs
  cfg.shard_batch = True
  sh = train.batch_sharding(cfg)
  d = fs.scene_arrays(
    fs.render_scenes(jax.random.key(3), bs + 2, 2, image_size=8)
  )
  data = (d["images"], fs.ground_truth_targets(d))
  scfg = fs.FlashSSM3DConfig(
    width=8, depth=1, state=2, image_size=8, registers=1, camera_stages=1
  )
  tx = fs.train_optimizer(
    cfg.student.learning_rate, warmup=cfg.student.warmup, steps=4
  )
  step = train._step(cfg, procrustes=True, reprojection=True)
  p0 = core.TrainState.create(fs.FlashSSM3D(scfg, rngs=nnx.Rngs(0)), tx).params
  out = []
  for sharding in (None, sh):
    state = core.TrainState.create(fs.FlashSSM3D(scfg, rngs=nnx.Rngs(0)), tx)
    batches = fs.sample_batches(*data, batch_size=bs, seed=0, sharding=sharding)
    compiled, _ = fs.compile_step(step, state, batches(0), count=False)
    auxes = []
    for i in range(2):
      images, targets = batches(i)
      state, aux = compiled(state, (images, targets))
      auxes.append(jax.device_get(aux))
    out.append((jax.device_get((state.params, state.opt_state)), auxes, images))
  (s1, a1, _), (s8, a8, x8) = out
  # the sharded run really was sharded
  assert len(x8.sharding.device_set) == num_devices
  assert a1[1]["procrustes"] > 0 and a1[1]["reprojection"] > 0
  for u, v in zip(a1, a8):
    for k in u:
      np.testing.assert_allclose(v[k], u[k], rtol=2e-4, atol=1e-6, err_msg=k)
  moved = max(
    float(np.abs(a - np.asarray(b)).max())
    for a, b in zip(jax.tree.leaves(s1[0]), jax.tree.leaves(p0))
  )
  # the steps changed the parameters: the comparison below is not vacuous
  assert moved > 1e-3
  for a, b in zip(jax.tree.leaves(s8), jax.tree.leaves(s1)):
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_scene_arrays_render_in_chunks_and_give_ground_truth_targets():
  """render_scene_arrays = the chunks rendered one by one (seed + chunk start),
  cut to the count; the pose encoding is the cameras'; ground-truth targets
  carry unit confidences."""
  d = fs.render_scene_arrays(7, 5, 2, image_size=8, chunk=3)
  first, second = (fs.render_scenes(7 + i, 3, 2, image_size=8) for i in (0, 3))
  for k in ("images", "depth", "points", "valid", "extrinsics", "intrinsics"):
    want = np.concatenate(
      [np.asarray(getattr(first, k)), np.asarray(getattr(second, k))[:2]]
    )
    np.testing.assert_array_equal(d[k], want, err_msg=k)
  pose = fs.cameras_to_pose_encoding(
    second.extrinsics, second.intrinsics, (8, 8)
  )
  np.testing.assert_allclose(
    d["pose_enc"][3:], np.asarray(pose)[:2], rtol=1e-6, atol=1e-6
  )
  t = fs.ground_truth_targets(d)
  assert t.depth.shape == (5, 2, 8, 8, 1) and np.array_equal(
    t.depth[..., 0], d["depth"]
  )
  assert t.depth_conf.shape == t.point_conf.shape == d["valid"].shape
  assert (
    (t.depth_conf == 1).all()
    and (t.point_conf == 1).all()
    and t.valid is d["valid"]
  )
  with pytest.raises(ValueError, match="chunk"):
    fs.render_scene_arrays(0, 2, 2, image_size=8, chunk=0)
  bad = first._replace(
    extrinsics=np.full_like(np.asarray(first.extrinsics), np.nan)
  )
  with pytest.raises(ValueError, match="non-finite pose encoding"):
    fs.scene_arrays(bad)
