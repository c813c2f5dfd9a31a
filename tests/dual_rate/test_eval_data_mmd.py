"""FD/KID against float64 numpy, data sources and TFDS builders, MMD losses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from flax import nnx

from jaxpapers import dual_rate as dr
from tests.dual_rate._util import TINY, randomize, tiny_dual, tiny_single


def _fd_reference(a, b):
  mu1, mu2 = a.mean(0), b.mean(0)
  s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
  covmean = scipy.linalg.sqrtm(s1 @ s2).real
  return float(np.sum((mu1 - mu2) ** 2) + np.trace(s1 + s2 - 2 * covmean))


def test_frechet_distance_matches_float64_scipy():
  rng = np.random.default_rng(0)
  a = rng.normal(size=(400, 12)) @ rng.normal(size=(12, 12))
  b = rng.normal(size=(300, 12)) @ rng.normal(size=(12, 12)) + 0.5
  ref = _fd_reference(a, b)
  np.testing.assert_allclose(dr.frechet_distance(a, b), ref, rtol=1e-8)
  np.testing.assert_allclose(dr.fd_metric(a, b), ref, rtol=1e-8)
  assert abs(dr.fd_metric(a, a)) < 1e-6
  with pytest.raises(ValueError, match="features"):
    dr.fd_metric(a, b[:, :5])


def test_kid_matches_brute_force():
  rng = np.random.default_rng(1)
  x, y = rng.normal(size=(40, 6)), rng.normal(size=(30, 6)) + 0.3
  k = lambda p, q: (p @ q / 6 + 1) ** 3
  kxx = np.mean([k(x[i], x[j]) for i in range(40) for j in range(40) if i != j])
  kyy = np.mean([k(y[i], y[j]) for i in range(30) for j in range(30) if i != j])
  kxy = np.mean([k(x[i], y[j]) for i in range(40) for j in range(30)])
  ref = kxx + kyy - 2 * kxy
  np.testing.assert_allclose(dr.kid_metric(x, y), ref, rtol=1e-8)
  np.testing.assert_allclose(
    dr.kernel_inception_distance(x[:30], y, subsets=1, subset_size=30),
    dr.kid_metric(x[:30], y),
    rtol=1e-8,
  )


def test_precision_recall_knn():
  rng = np.random.default_rng(2)
  a = rng.normal(size=(200, 3))
  p, r = dr.precision_recall_knn(a, a + 1e-9, k=3)
  assert p == 1.0 and r == 1.0
  p, r = dr.precision_recall_knn(a, a + 100.0, k=3)
  assert p == 0.0 and r == 0.0


def test_classifier_features_separate_classes():
  d = dr.digits()
  clf = dr.train_classifier(
    d["train_images"], d["train_labels"], num_classes=10, steps=60, seed=0
  )
  assert dr.classifier_accuracy(clf, d["test_images"], d["test_labels"]) > 0.6
  f = dr.extract_features(clf, d["test_images"][:50])
  assert f.shape == (50, 64) and f.dtype == np.float64


def test_features_and_accuracy_reuse_one_program_and_match_a_float64_forward():
  """extract_features / classifier_accuracy compile once per (classifier, shape)
  and give the classifier's own forward pass: a float64 numpy transcription of
  the CNN and its argmax."""
  from jaxpapers.dual_rate import _eval

  d = dr.digits()
  clf = dr.train_classifier(
    d["train_images"], d["train_labels"], num_classes=10, steps=5, seed=1
  )
  x = np.asarray(d["test_images"][:40], np.float64)
  y = np.asarray(d["test_labels"][:40])

  def conv(v, k, b, stride):  # SAME padding, NHWC, float64
    kh, kw = k.shape[:2]
    h, w = v.shape[1:3]
    oh, ow = -(-h // stride), -(-w // stride)
    ph = max((oh - 1) * stride + kh - h, 0)
    pw = max((ow - 1) * stride + kw - w, 0)
    v = np.pad(
      v, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0))
    )
    out = np.zeros((v.shape[0], oh, ow, k.shape[3]))
    for i in range(kh):
      for j in range(kw):
        patch = v[:, i : i + stride * oh : stride, j : j + stride * ow : stride]
        out += patch @ k[i, j]
    return out + b

  def p(m):
    return np.asarray(m.kernel[...], np.float64), np.asarray(
      m.bias[...], np.float64
    )

  h = np.maximum(conv(x, *p(clf.c1), 1), 0)
  h = np.maximum(conv(h, *p(clf.c2), 2), 0)
  k, b = p(clf.fc)
  ref = np.maximum(h.reshape(len(h), -1) @ k + b, 0)
  kh, bh = p(clf.head)
  ref_acc = np.mean(np.argmax(ref @ kh + bh, -1) == y)
  n0 = _eval._features_jit._cache_size() + _eval._logits_jit._cache_size()
  for _ in range(3):
    f = dr.extract_features(clf, x)
    acc = dr.classifier_accuracy(clf, x, y)
    np.testing.assert_allclose(f, ref, rtol=1e-4, atol=1e-4)
    assert acc == pytest.approx(ref_acc)
  assert (
    _eval._features_jit._cache_size() + _eval._logits_jit._cache_size() - n0
    <= 2
  )


def test_numpy_sources():
  d = dr.digits()
  assert d["train_images"].shape == (1297, 8, 8, 1) and d[
    "test_images"
  ].shape == (500, 8, 8, 1)
  assert d["train_images"].min() >= -1 and d["train_images"].max() <= 1
  s = dr.shapes(num_train=40, num_test=8)
  s2 = dr.shapes(num_train=40, num_test=8)
  np.testing.assert_array_equal(s["train_images"], s2["train_images"])
  assert s["train_images"].shape == (40, 16, 16, 1) and set(
    np.unique(s["train_labels"])
  ) <= {
    0,
    1,
    2,
    3,
  }
  imgs = dr.render_shapes(np.array([0, 1, 2, 3]), image_size=16)
  assert (
    imgs.min() >= -1
    and imgs.max() <= 1
    and all((im > 0).sum() > 5 for im in imgs)
  )
  with pytest.raises(ValueError, match="name"):
    dr.load_numpy("cifar")


def test_tfds_builder_without_tensorflow(tmp_path):
  out = dr.load_tfds("digits", tmp_path)
  ref = dr.digits()
  np.testing.assert_array_equal(out["test_images"], ref["test_images"])
  np.testing.assert_array_equal(out["train_labels"], ref["train_labels"])
  assert dr.tfds_builder("shapes", tmp_path).info.features["image"].shape == (
    16,
    16,
    1,
  )


def test_last_refresh_index():
  np.testing.assert_array_equal(
    dr.last_refresh_index([True, False, True, False, False]), [0, 0, 2, 2, 2]
  )
  with pytest.raises(ValueError):
    dr.last_refresh_index([False, True])


# Slow (about a minute of XLA compilation per case on 2 cores, whatever the
# model size): the MMD training phase of the smoke experiment runs the same
# losses by default.
@pytest.mark.slow
@pytest.mark.parametrize("dual", [False, True])
def test_mmd_gradients_are_separated(dual):
  """Student gradients come only from the student loss and vanish when aux ==
  teacher; aux gradients come only from the aux loss."""
  make = tiny_dual if dual else tiny_single
  teacher = randomize(make(seed=0), seed=0)
  student, aux = (
    randomize(make(seed=1), seed=1),
    randomize(make(seed=0), seed=0),
  )
  aux2 = randomize(make(seed=0), seed=5)
  x = jax.random.normal(jax.random.key(0), (4, 8, 8, 1))
  refresh = dr.refresh_schedule(4, interval=2) if dual else None
  (gs, gsd), (ga, gad), gad2 = (
    nnx.split(student),
    nnx.split(aux),
    nnx.split(aux2)[1],
  )
  tg, ts = nnx.split(teacher)

  @jax.jit
  def grads(ps, pa):
    def f(ps, pa, which):
      sl, al, _ = dr.mmd_losses(
        nnx.merge(gs, ps),
        nnx.merge(ga, pa),
        nnx.merge(tg, ts),
        x,
        None,
        jax.random.key(3),
        num_student_steps=4,
        refresh=refresh,
      )
      return sl if which == 0 else al

    return jax.grad(f, argnums=(0, 1))(ps, pa, 0), jax.grad(f, argnums=(0, 1))(
      ps, pa, 1
    )

  (s_s, s_a), (a_s, a_a) = grads(gsd, gad)
  norm = lambda t: float(sum(jnp.sum(l**2) for l in jax.tree.leaves(t)))
  assert norm(s_a) == 0.0 and norm(a_s) == 0.0 and norm(a_a) > 0.0
  assert (
    norm(s_s) < 1e-9
    # aux is a copy of the teacher: no moment gap, no student update (up to
    # fusion round-off)
  )
  (s_s, _), _ = grads(gsd, gad2)
  assert norm(s_s) > 1e-6


def test_mmd_student_loss_sign_moves_student_toward_teacher():
  """L(eta) = sg[x_aux - x_teacher]^T x~. With aux = teacher + c in x-space (an
  x-parametrised copy whose output bias is shifted by c), L = c * sum(x~) per
  example, so the gradient of the student loss w.r.t. the student's output bias
  is +c * (patches per image) in every entry: gradient descent lowers x~ when
  the student's mean (the aux) lies above the teacher. A sign flip gives -c *
  patches (the separation of the two losses' gradients is checked by the slow
  test above)."""
  c = 0.3
  mk = lambda seed: dr.SingleNetwork(
    **TINY, width=16, depth=1, parametrization="x", rngs=nnx.Rngs(seed)
  )
  teacher = randomize(mk(0), seed=0)
  aux = randomize(mk(0), seed=0)
  aux.head.bias[...] = aux.head.bias[...] + c
  student = randomize(mk(1), seed=1)
  x = jax.random.normal(jax.random.key(0), (4, 8, 8, 1))
  (gs, ps), (ga, pa), (tg, ts) = (
    nnx.split(student),
    nnx.split(aux),
    nnx.split(teacher),
  )

  @jax.jit
  def grads(ps, pa, ts):
    def f(ps):
      return dr.mmd_losses(
        nnx.merge(gs, ps),
        nnx.merge(ga, pa),
        nnx.merge(tg, ts),
        x,
        None,
        jax.random.key(3),
        num_student_steps=2,
      )[0]

    return jax.grad(f)(ps)

  g_student = grads(ps, pa, ts)
  patches = (8 // TINY["patch_size"]) ** 2
  np.testing.assert_allclose(
    np.asarray(jax.tree.leaves(g_student["head"]["bias"])[0]),
    c * patches,
    rtol=1e-4,
  )


def test_fd_proxy_floor_and_scores_follow_the_splits():
  """FDProxy: the floor and a sample's scores are the FD / KID of the named
  image ranges' features (recomputed here from the classifier), the labels are
  balanced, and a held-out reference also gives the FD against the training
  features."""
  rng = np.random.default_rng(0)
  img = lambda n: rng.uniform(-1, 1, (n, 8, 8, 1)).astype(np.float32)
  data = dict(
    train_images=img(24),
    train_labels=np.arange(24) % 3,
    test_images=img(12),
    test_labels=np.arange(12) % 3,
  )
  splits = {"reference": ("heldout", 0, 6), "compared": ("heldout", 6, 12)}
  proxy = dr.FDProxy.build(
    data, num_classes=3, classifier_steps=2, splits=splits
  )
  feats = lambda x: dr.extract_features(proxy.classifier, x)
  ref, cmp = feats(data["test_images"][:6]), feats(data["test_images"][6:])
  f = proxy.floor
  np.testing.assert_allclose(f["fd"], dr.fd_metric(ref, cmp), rtol=1e-12)
  np.testing.assert_allclose(f["kid"], dr.kid_metric(ref, cmp), rtol=1e-12)
  np.testing.assert_allclose(
    f["fd_train_reference"], dr.fd_metric(feats(data["train_images"]), cmp)
  )
  assert (f["reference"], f["n_reference"], f["n_compared"]) == (
    "heldout",
    6,
    6,
  )
  assert f["splits"] == {
    "reference": ["heldout", 0, 6],
    "compared": ["heldout", 6, 12],
  }
  assert proxy.shape == (6, 8, 8, 1) and list(np.asarray(proxy.labels)) == [
    0,
    1,
    2,
    0,
    1,
    2,
  ]
  x = img(6)
  s = proxy.score(x)
  np.testing.assert_allclose(s["fd"], dr.fd_metric(ref, feats(x)), rtol=1e-12)
  np.testing.assert_allclose(
    s["fd_train"], dr.fd_metric(feats(data["train_images"]), feats(x))
  )
  assert s["class_acc"] == dr.classifier_accuracy(
    proxy.classifier, x, proxy.labels
  )
  # The train reference: the whole train split, no train-reference FD beside it.
  train = dr.FDProxy.build(
    data,
    num_classes=3,
    classifier_steps=2,
    splits={"reference": ("train", 0, 24), "compared": ("heldout", 0, 4)},
  )
  assert (
    train.reference == "train"
    and train.shape[0] == 4
    and "fd_train" not in train.score(x[:4])
  )
  with pytest.raises(ValueError, match="splits"):
    dr.FDProxy.build(
      data,
      num_classes=3,
      classifier_steps=2,
      splits={"reference": ("test", 0, 4)},
    )


def test_measure_sampler_scores_every_sampling_seed():
  """measure_sampler: per sampling seed s the samples of key 10_000 + s, clipped
  and scored by the proxy; the seed mean / std of FD and KID, the checked call
  counts and FLOPs, the first seed's first samples as the grid."""
  rng = np.random.default_rng(1)
  img = lambda n: rng.uniform(-1, 1, (n, 8, 8, 1)).astype(np.float32)
  data = dict(
    train_images=img(12),
    train_labels=np.arange(12) % 2,
    test_images=img(8),
    test_labels=np.arange(8) % 2,
  )
  splits = {"reference": ("heldout", 0, 4), "compared": ("heldout", 4, 8)}
  proxy = dr.FDProxy.build(
    data, num_classes=2, classifier_steps=2, splits=splits
  )
  model, refresh = (
    randomize(tiny_dual(num_classes=2)),
    dr.refresh_schedule(4, interval=2),
  )
  flops = {"encoder": 100.0, "denoiser": 10.0}
  kw = dict(
    num_steps=4, refresh=refresh, sampler="ddim", schedule=dr.NoiseSchedule()
  )
  out, grid = dr.measure_sampler(
    model,
    proxy,
    **kw,
    use_features=True,
    flops=flops,
    eval_seeds=(0, 3),
    grid_samples=2,
  )
  xs = [
    np.clip(
      np.asarray(
        dr.sample(
          model,
          jax.random.key(10_000 + s),
          proxy.shape,
          cond=proxy.labels,
          **kw,
        )
      ),
      -1,
      1,
    )
    for s in (0, 3)
  ]
  scores = [proxy.score(x) for x in xs]
  fds = np.array([s["fd"] for s in scores], np.float64)
  np.testing.assert_allclose(out["fd_seeds"], fds, rtol=1e-6)
  np.testing.assert_allclose(out["fd_mean"], fds.mean(), rtol=1e-6)
  np.testing.assert_allclose(out["fd_std"], fds.std(), rtol=1e-5, atol=1e-9)
  np.testing.assert_allclose(
    out["kid_mean"], np.mean([s["kid"] for s in scores]), rtol=1e-6
  )
  np.testing.assert_allclose(
    out["fd_train_mean"], np.mean([s["fd_train"] for s in scores]), rtol=1e-6
  )
  assert (out["encoder_calls"], out["denoiser_calls"]) == (2, 4)
  assert out["mflops_per_sample"] == pytest.approx((2 * 100.0 + 4 * 10.0) / 1e6)
  assert out["wall_s"] is None and grid.shape == (2, 8, 8, 1)
  np.testing.assert_allclose(grid, xs[0][:2], rtol=1e-6)
