"""The benchmark's data, arm weights, per-batch loss terms and held-out
metrics."""

import jax
import numpy as np
import pytest
from flax import nnx

import jaxpapers.cs_clip as C
from tests.cs_clip.test_losses import ref_clip

KW = dict(
  n_train=12,
  n_test=6,
  size=24,
  prior=0.8,
  test_prior=0.0,
  distractors=0,
  vertical=False,
  p_partial=0.1,
  p_paraphrase=0.5,
)


@pytest.fixture(scope="module")
def bench():
  data, examples = C.benchmark_data(3, **KW)
  model = C.DualEncoder(
    len(C.VOCAB), 8, size=24, rngs=nnx.Rngs(jax.random.key(0))
  )
  return data, examples, model


def _cos(a, b):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  return np.sum(a * b, -1) / (
    np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
  )


def test_benchmark_data_is_deterministic_and_consistent(bench):
  data, examples, _ = bench
  again, _ = C.benchmark_data(3, **KW)
  for k, v in data.items():
    np.testing.assert_array_equal(v, again[k])
  assert (
    data["train_images"].shape[0] == 12 and data["test_images"].shape[0] == 6
  )
  assert data["ht_short"].shape[0] == 12 and set(
    np.unique(data["ht_kind"])
  ) == {0, 1}
  assert data["test_caption"].shape == data["test_foil"].shape == (6, C.MAX_LEN)
  # a foil differs
  assert (data["test_caption"] != data["test_foil"]).any(axis=1).all()
  ids, caps = data["test_caption_id"], data["test_caption"]
  for i in range(6):  # one id per distinct caption
    for j in range(6):
      assert (ids[i] == ids[j]) == bool((caps[i] == caps[j]).all())
  assert len(examples["train"]) == 8 and set(examples["train"][0]) == {
    "caption",
    "caption_foil",
    "units",
    "foils",
  }
  assert data["train_units"].shape[1:] == (C.U_MAX, C.MAX_LEN)


def test_arm_weights():
  lam = dict(lambda_comp=0.5, lambda_align=0.25, lambda_rank=0.1)
  assert C.arm_weights("clip_ft", **lam) == dict(
    clip=1.0, neg=0.0, comp=0.0, align=0.0, rank=0.0
  )
  assert C.arm_weights("negclip_ft", **lam)["neg"] == 1.0
  cs = C.arm_weights("cs_ft", **lam)
  assert cs == dict(clip=0.0, neg=1.0, comp=0.5, align=0.25, rank=0.1)


def test_finetune_terms_slice_one_text_pass_into_the_right_towers(bench):
  """The terms equal the losses on separately encoded captions, units and foils
  (a swapped unit/foil slice or a caption/foil swap changes them); L_CLIP
  against a float64 loop."""
  data, _, model = bench
  idx = np.arange(4)
  batch = {f: data[f"train_{f}"][idx] for f in C.BATCH_FIELDS}
  terms = C.finetune_terms(model, 1.0, batch)
  img = model.image(batch["images"])
  enc = lambda t: model.text(t, order_strength=1.0)
  full, ffoil = enc(batch["caption"]), enc(batch["caption_foil"])
  units = enc(batch["units"].reshape(-1, C.MAX_LEN)).reshape(4, C.U_MAX, -1)
  foils = enc(batch["foils"].reshape(-1, C.MAX_LEN)).reshape(4, C.U_MAX, -1)
  s = model.logit_scale()
  cfg = C.CSLossConfig(
    lambda_full=1.0,
    negatives_full=True,
    lambda_comp=1.0,
    lambda_align=1.0,
    lambda_rank=1.0,
  )
  _, want = C.cs_clip_loss(
    img, full, ffoil, units, foils, batch["unit_mask"], s, cfg
  )
  np.testing.assert_allclose(
    float(terms["neg"]), float(want["full"]), rtol=1e-5
  )
  for k in ("comp", "align", "rank"):
    np.testing.assert_allclose(
      float(terms[k]), float(want[k]), rtol=1e-5, atol=1e-7
    )
  unit = lambda x: (
    np.asarray(x, np.float64)
    / np.linalg.norm(np.asarray(x, np.float64), axis=-1, keepdims=True)
  )
  np.testing.assert_allclose(
    float(terms["clip"]), ref_clip(unit(img), unit(full), float(s)), rtol=1e-4
  )
  with pytest.raises(ValueError, match="batch lacks"):
    C.finetune_terms(model, 1.0, {"caption": batch["caption"]})


def test_heldout_metrics_against_numpy_cosines(bench):
  data, _, model = bench
  m = C.heldout_metrics(model, 1.0, data)
  img = np.asarray(model.image(data["test_images"]))
  enc = lambda t: np.asarray(model.text(t, order_strength=1.0))
  ht_img = img[data["ht_image"]]
  win = _cos(ht_img, enc(data["ht_long"])) > _cos(ht_img, enc(data["ht_short"]))
  rel = data["ht_kind"] == 1
  np.testing.assert_allclose(
    float(m["ht_relation"]), 1 - win[rel].mean(), atol=1e-6
  )
  np.testing.assert_allclose(
    float(m["ht_entity"]), 1 - win[~rel].mean(), atol=1e-6
  )
  np.testing.assert_array_equal(
    np.asarray(m["items"]["ht_relation"]), np.where(rel, 1.0 - win, 0)
  )
  cap, foil = enc(data["test_caption"]), enc(data["test_foil"])
  foil_win = _cos(img, cap) > _cos(img, foil)
  np.testing.assert_allclose(
    float(m["relation_foil_acc"]), foil_win.mean(), atol=1e-6
  )
  np.testing.assert_allclose(
    float(m["r1"]), 0.5 * float(m["r1_i2t"] + m["r1_t2i"]), atol=1e-7
  )
  assert m["items"]["r1_i2t"].shape == (6,)
