"""The CS-CLIP loss terms and metrics, jitted and eager, against the float64
reference loops."""

import functools

import chex
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized

import jaxpapers.cs_clip as C
from tests.cs_clip import test_losses as R

B, U, D, SCALE = R.B, R.U, R.D, R.SCALE


def _data():
  rng = np.random.default_rng(11)
  d = {
    name: R._unit(rng.normal(size=shape))
    for name, shape in [
      ("img", (B, D)),
      ("full", (B, D)),
      ("ffoil", (B, D)),
      ("units", (B, U, D)),
      ("foils", (B, U, D)),
      ("para", (B, D)),
    ]
  }
  mask = rng.random((B, U)) < 0.6
  mask[:, 2] = False
  mask[0, 0] = mask[1, 0] = True
  d["mask"] = mask
  return d


def f32(d, *names):
  return [np.asarray(d[n], np.float32) for n in names]


class LossesTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_clip_and_negclip(self):
    d = _data()
    got = self.variant(C.clip_loss)(*f32(d, "img", "full"), SCALE)
    chex.assert_shape(got, ())
    chex.assert_type(got, jnp.float32)
    chex.assert_trees_all_close(
      got, np.float32(R.ref_clip(d["img"], d["full"], SCALE)), rtol=1e-5
    )
    got = self.variant(C.negclip_loss)(*f32(d, "img", "full", "ffoil"), SCALE)
    want = R.ref_clip(d["img"], d["full"], SCALE, neg=d["ffoil"])
    chex.assert_trees_all_close(got, np.float32(want), rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters((k, k) for k in C.COMP_TYPES)
  def test_component_loss(self, kind):
    d = _data()
    fn = self.variant(functools.partial(C.component_loss, kind=kind))
    got = fn(*f32(d, "img", "units", "foils"), d["mask"], SCALE)
    chex.assert_trees_all_close(
      got, np.float32(R.ref_component(d, kind)), rtol=1e-5
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_alignment_rank_and_text_margin(self):
    d = _data()
    for kind in C.ALIGN_TYPES:
      fn = self.variant(
        functools.partial(C.alignment_loss, kind=kind, margin=0.3)
      )
      got = fn(*f32(d, "img", "units", "foils"), d["mask"])
      chex.assert_trees_all_close(
        got, np.float32(R.ref_align(d, kind, 0.3)), rtol=1e-5
      )
    for reduction in C.RANK_REDUCTIONS:
      fn = self.variant(
        functools.partial(C.rank_loss, margin=0.2, reduction=reduction)
      )
      got = fn(*f32(d, "img", "full", "units"), d["mask"])
      chex.assert_trees_all_close(
        got, np.float32(R.ref_rank(d, 0.2, reduction)), rtol=1e-5
      )
    fn = self.variant(functools.partial(C.text_margin_loss, margin=0.4))
    got = fn(*f32(d, "full", "units", "foils"), d["mask"])
    chex.assert_trees_all_close(got, np.float32(R.ref_text(d, 0.4)), rtol=1e-5)

  @chex.variants(with_jit=True, without_jit=True)
  def test_paraphrase_loss_uses_only_valid_rows_and_columns(self):
    d = _data()
    valid = np.array([1, 1, 0, 1, 0, 1], bool)
    got = self.variant(C.paraphrase_loss)(*f32(d, "full", "para"), valid, SCALE)
    want = R.ref_para(d["full"], d["para"], valid, SCALE)
    chex.assert_trees_all_close(got, np.float32(want), rtol=1e-5)


class MetricsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_half_truth_and_pairwise_accuracy_against_numpy_cosines(self):
    rng = np.random.default_rng(12)
    n = 9
    img, short, long = (
      rng.normal(size=(n, D)).astype(np.float32) for _ in range(3)
    )
    # Unnormalised on purpose: the metrics use cosine similarity.
    img *= rng.uniform(0.5, 3.0, size=(n, 1)).astype(np.float32)
    kind = np.array([0, 1, 0, 1, 1, 0, 1, 1, 0], np.int32)

    def cos(a, b):
      a, b = a.astype(np.float64), b.astype(np.float64)
      return np.sum(a * b, -1) / (
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
      )

    correct = cos(img, long) <= cos(img, short)
    got = self.variant(C.half_truth_accuracy)(img, short, long, kind)
    want = {
      "all": np.float32(correct.mean()),
      "entity": np.float32(correct[kind == 0].mean()),
      "relation": np.float32(correct[kind == 1].mean()),
      "ties": np.float32(0.0),
      "n_entity": np.int32(4),
      "n_relation": np.int32(5),
    }
    chex.assert_trees_all_close({k: got[k] for k in want}, want)
    acc = self.variant(C.pairwise_caption_accuracy)(img, short, long)
    chex.assert_shape(acc, ())
    chex.assert_trees_all_close(
      acc, np.float32((cos(img, short) > cos(img, long)).mean())
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_per_item_outcomes_against_numpy(self):
    rng = np.random.default_rng(13)
    n = 7
    img, pos, neg = (
      rng.normal(size=(n, D)).astype(np.float32) for _ in range(3)
    )
    # cosine, not the dot
    img *= rng.uniform(0.5, 3.0, size=(n, 1)).astype(np.float32)

    def cos(a, b):
      a, b = a.astype(np.float64), b.astype(np.float64)
      return np.sum(a * b, -1) / (
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
      )

    # short = pos, long = neg
    ht = self.variant(C.half_truth_outcomes)(img, pos, neg)
    chex.assert_shape(ht, (n,))
    chex.assert_trees_all_close(
      ht, (cos(img, neg) <= cos(img, pos)).astype(np.float32)
    )
    pw = self.variant(C.pairwise_caption_outcomes)(img, pos, neg)
    chex.assert_trees_all_close(
      pw, (cos(img, pos) > cos(img, neg)).astype(np.float32)
    )
    kind = np.array([0, 1, 1, 0, 1, 0, 1], np.int32)
    acc = C.half_truth_accuracy(img, pos, neg, kind)
    chex.assert_trees_all_close(
      np.mean(ht[kind == 1]), acc["relation"], rtol=1e-6
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_retrieval_hits_against_brute_force(self):
    rng = np.random.default_rng(14)
    n = 6
    img, txt = (rng.normal(size=(n, D)).astype(np.float32) for _ in range(2))
    # texts 1 and 3 are one caption
    ids = np.array([0, 1, 2, 1, 3, 4], np.int32)
    txt[3] = txt[1]
    i2t, t2i = self.variant(C.retrieval_hits)(img, txt, ids)
    # dot products, not cosines
    sim = img.astype(np.float64) @ txt.astype(np.float64).T
    want_i2t = [float(ids[int(np.argmax(sim[i]))] == ids[i]) for i in range(n)]
    want_t2i = [
      float(ids[int(np.argmax(sim[:, j]))] == ids[j]) for j in range(n)
    ]
    chex.assert_trees_all_close(
      (i2t, t2i), (np.float32(want_i2t), np.float32(want_t2i))
    )
    # a hit on the other copy of one caption counts: text 3 retrieves like text
    # 1
    assert float(t2i[3]) == float(t2i[1])


if __name__ == "__main__":
  absltest.main()
