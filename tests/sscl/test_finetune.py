"""The fine-tuning arms (`jaxpapers.sscl._finetune`) and the benchmark's data
and protocol."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jaxpapers.sscl as S

PATCH, SIZE = 4, 16  # the smallest image benchmark_data renders


def test_masked_adam_moves_only_the_trainable_leaves():
  # a parameter tree shaped like TinyCLIP's with two image blocks: the last
  # block, ln_post and proj move by Adam's first step (-lr * sign g); every
  # other leaf (the first block, the text tower, the logit scale) stays exactly
  # where it was, although it has a gradient
  leaf = lambda: {
    "kernel": np.ones(3, np.float32),
    "bias": np.zeros(3, np.float32),
  }
  params = {
    "image": {
      "blocks": {0: leaf(), 1: leaf()},
      "ln_post": leaf(),
      "proj": leaf(),
      "pos": leaf(),
    },
    "text": {"blocks": {0: leaf(), 1: leaf()}, "proj": leaf()},
    "log_scale": np.float32(2.0),
  }
  mask = S.trainable_mask(params, depth=2)
  trained = (("image", "blocks", 1), ("image", "ln_post"), ("image", "proj"))
  want_mask = jax.tree_util.tree_map_with_path(
    lambda path, _: any(
      tuple(k.key for k in path[: len(t)]) == t for t in trained
    ),
    params,
  )
  assert mask == want_mask
  opt = S.masked_adam(1e-2, mask)
  grads = jax.tree.map(lambda p: np.full_like(p, 0.5), params)

  @jax.jit
  def step(params, grads):
    upd, _ = opt.update(grads, opt.init(params), params)
    return optax.apply_updates(params, upd)

  new = step(params, grads)
  for a, b, m in zip(
    jax.tree.leaves(params), jax.tree.leaves(new), jax.tree.leaves(mask)
  ):
    np.testing.assert_allclose(
      np.asarray(b), a - 1e-2 if m else a, rtol=1e-5, atol=1e-6
    )


def test_arm_weights_cover_every_loss_term():
  assert S.ARMS == ("keep_only", "clipself", "cisc_only", "sgsr_only", "sscl")
  for arm, w in S.ARM_WEIGHTS.items():
    assert len(w) == len(S.LOSS_TERMS), arm
  # only the CLIPSelf control keeps the anchor in its own image
  diverse = dict(
    zip(
      S.ARMS, (w[S.LOSS_TERMS.index("diverse")] for w in S.ARM_WEIGHTS.values())
    )
  )
  assert [a for a, d in diverse.items() if d == 0.0] == ["clipself"]


def _data(n=3):
  return S.benchmark_data(
    0,
    n_train=n,
    n_test=2,
    size=SIZE,
    patch=PATCH,
    classes="colour",
    probe_images=2,
  )


@pytest.fixture(scope="module")
def data():
  return _data()


def test_benchmark_data_shapes_and_labels(data):
  K, Sz = S.MAX_OBJECTS, SIZE
  assert (
    data["train_images"].shape == (3, Sz, Sz, 3)
    and data["train_images"].dtype == np.uint8
  )
  assert data["test_views"].shape == (2, K, Sz, Sz, 3)
  assert data["test_view_boxes"].shape == (2, K, 4)
  assert data["prompts"].shape[0] == S.num_classes("colour") == 6
  assert S.num_classes("shape") == 4
  # the probes' patch labels: one per patch of each probe image
  assert data["probe_train_colour"].shape == (2, (Sz // PATCH) ** 2)
  # padded object slots get a valid dummy box and label 0
  assert (data["test_labels"] >= 0).all()
  # deterministic
  np.testing.assert_array_equal(_data()["test_views"], data["test_views"])


def test_finetune_batch_without_diversity_is_the_anchor_in_its_own_image(data):
  key = jax.random.key(1)
  kw = dict(batch=2, n_views=3, view_scales=(1.5, 3.0))
  batch = jax.jit(
    lambda d, diverse: S.finetune_batch(key, d, diverse=diverse, **kw)
  )
  same, views = batch(data, 0.0), batch(data, 1.0)
  # one key: the same anchors
  np.testing.assert_array_equal(same["idx"], views["idx"])
  own = np.broadcast_to(np.asarray(same["fimgs"])[:, None], same["views"].shape)
  np.testing.assert_allclose(np.asarray(same["views"]), own)
  boxes = np.broadcast_to(
    np.asarray(same["boxes"])[:, None], same["vboxes"].shape
  )
  np.testing.assert_allclose(np.asarray(same["vboxes"]), boxes)
  assert views["views"].shape == (2, 3, SIZE, SIZE, 3)
  assert not np.allclose(np.asarray(views["views"]), own)
  # every anchor is a valid object of its image
  valid = data["train_valid"][np.asarray(same["idx"])]
  assert valid.any(1).all()


def _model():
  return S.TinyCLIP(
    len(S.VOCAB),
    size=SIZE,
    patch=PATCH,
    width=8,
    depth=1,
    text_depth=1,
    embed_dim=4,
    heads=2,
    rngs=nnx.Rngs(0),
  )


# traces the whole SSCL objective: minutes on a loaded 2-core host
@pytest.mark.slow
def test_arm_loss_is_the_weighted_sum_of_the_terms(data):
  m, d = _model(), data
  cfg = S.SSCLConfig()
  b = S.finetune_batch(
    jax.random.key(0),
    d,
    batch=2,
    n_views=2,
    view_scales=(1.5, 3.0),
    diverse=1.0,
  )
  t = S.teacher_targets(m, d, b, vfm="instance", patch=PATCH, config=cfg)
  names = ("sgsr", "teacher", "infonce", "keep")
  terms_of = {
    "sgsr": "sgsr",
    "teacher": "cisc_teacher",
    "infonce": ("cisc_infonce"),
    "keep": ("keep"),
  }
  w = {"sgsr": 0.3, "teacher": 0.7, "infonce": 0.2, "keep": 1.5, "diverse": 1.0}
  loss, terms = S.arm_loss(m, w, b, t, config=cfg)
  want = sum(w[n] * terms[terms_of[n]] for n in names)
  np.testing.assert_allclose(float(loss), float(want), rtol=1e-5)
  # the student is the teacher here: no drift from it
  assert float(terms["dense_drift"]) == pytest.approx(0.0, abs=1e-5)
  assert 0.0 <= float(terms["dense_spread"]) <= 2.0
  keep_only = dict.fromkeys(names, 0.0) | {"keep": 1.0, "diverse": 1.0}
  np.testing.assert_allclose(
    float(S.arm_loss(m, keep_only, b, t, config=cfg)[0]), float(terms["keep"])
  )


def test_vfm_features_dispatch(data):
  imgs = jnp.asarray(data["test_images"])
  inst = jnp.asarray(data["test_instance"])
  np.testing.assert_array_equal(
    S.vfm_features("instance", PATCH, imgs, inst),
    S.instance_vfm(inst, PATCH, S.MAX_OBJECTS),
  )
  np.testing.assert_array_equal(
    S.vfm_features("handcrafted", PATCH, imgs, inst),
    S.handcrafted_vfm(imgs, PATCH),
  )


@pytest.mark.slow  # traces the training-free readouts and the probes
def test_make_evaluate_reads_a_model_with_the_protocol(data):
  m, d = _model(), data
  graphdef, params = nnx.split(m)
  ev = S.make_evaluate(
    graphdef,
    size=SIZE,
    patch=PATCH,
    classes="colour",
    vfm="instance",
    config=S.SSCLConfig(),
  )
  out = ev(params, d, True)
  assert {
    "miou",
    "region_acc",
    "drift",
    "miou_refine",
    "probe_acc_shape",
  } <= set(out)
  T = m.text(d["prompts"])
  seg = S.segment(
    m.image.dense(d["test_images"], "maskclip"),
    T,
    (SIZE, SIZE),
    logit_scale=40.0,
  )
  want = S.segmentation_miou(seg, d["test_target"], 6)[0]
  np.testing.assert_allclose(float(out["miou"]), float(want), rtol=1e-6)
  assert set(ev(params, d, False)) == {
    "miou",
    "region_acc",
    "region_acc_ctx",
    "drift",
  }
