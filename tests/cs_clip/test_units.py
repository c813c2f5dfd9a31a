"""Scenes, units, foils and half-truth pairs against the scene's ground
truth."""

import itertools

import numpy as np
import pytest

import jaxpapers.cs_clip as C


@pytest.fixture(scope="module")
def batch():
  return C.render_scenes(3, 200, distractors=2, vertical=True)


def _entity(text):
  w = text.split()
  assert w[0] == "a" and len(w) == 3, text
  return C.COLOURS.index(w[1]), C.SHAPES.index(w[2])


def _relation(text):
  w = text.split()
  subj = _entity(" ".join(w[:3]))
  rel_words = " ".join(w[3:-3])
  return subj, C.RELATIONS.index(rel_words), _entity(" ".join(w[-3:]))


def test_rendered_relation_matches_cells_and_pixels(batch):
  row, col = batch.cells // 3, batch.cells % 3
  for i in range(len(batch)):
    r = batch.relation[i]
    if r in (0, 1):
      assert row[i, 0] == row[i, 1] and (col[i, 0] < col[i, 1]) == (r == 0)
    else:
      assert col[i, 0] == col[i, 1] and (row[i, 0] < row[i, 1]) == (r == 2)
    # one object per cell
    assert len(set(batch.cells[i])) == batch.cells.shape[1]
    ents = list(zip(batch.colours[i], batch.shapes[i]))
    assert len(set(ents)) == len(ents)
  # the colour of object 0 is drawn inside its cell
  cell = 8
  for i in range(20):
    c0 = batch.cells[i, 0]
    patch = batch.images[
      i, (c0 // 3) * cell : (c0 // 3 + 1) * cell, (c0 % 3) * cell :
    ][:, :cell]
    rgb = np.array(
      [[230, 40, 40], [40, 200, 60], [50, 80, 240], [235, 215, 40]]
    )
    assert (patch.reshape(-1, 3) == rgb[batch.colours[i, 0]]).all(
      -1
    ).sum() >= 10


def test_prior_scenes_follow_the_partner_and_the_order():
  b = C.render_scenes(0, 300, prior=1.0)
  e0 = b.colours[:, 0] * 4 + b.shapes[:, 0]
  e1 = b.colours[:, 1] * 4 + b.shapes[:, 1]
  assert (e1 == C.partner(e0)).all() and (b.relation == 0).all()
  u = C.render_scenes(0, 2000, prior=0.0)
  assert 0.4 < (u.relation == 0).mean() < 0.6


def test_each_foil_is_one_edit_and_false(batch):
  rng = np.random.default_rng(0)
  for i in range(len(batch)):
    scene = batch.scene(i)
    present = set(zip(scene.colours, scene.shapes))
    for form, subject in itertools.product(("entity", "relation"), (0, 1)):
      units, foils = C.units_and_foils(scene, rng, form=form, subject=subject)
      assert len(units) == len(foils) == (1 if form == "entity" else 3)
      for u, f in zip(units, foils):
        assert u != f
        # entity: one word changed, and the edited object is absent
        if len(u.split()) == 3:
          assert sum(a != b for a, b in zip(u.split(), f.split())) == 1
          assert _entity(f) not in present and _entity(u) in present
        else:
          s, r, o = _relation(u)
          fs, fr, fo = _relation(f)
          assert C.relation_holds(scene, s, r, o)
          assert not C.relation_holds(scene, fs, fr, fo)
          # one edit: swapped arguments or flipped predicate, never both (a
          # paraphrase)
          assert (fs, fr, fo) in ((o, r, s), (s, C.INVERSE[r], o))
          # the paraphrase is true
          assert C.relation_holds(scene, o, C.INVERSE[r], s)


def test_half_truth_pairs_add_one_wrong_detail(batch):
  rng = np.random.default_rng(1)
  for i in range(len(batch)):
    scene = batch.scene(i)
    present = set(zip(scene.colours, scene.shapes))
    (s_e, l_e, k_e), (s_r, l_r, k_r) = C.half_truth_pairs(scene, rng)
    assert (k_e, k_r) == (0, 1)
    assert _entity(s_e) in present and l_e.startswith(s_e + " and ")
    assert _entity(l_e[len(s_e) + 5 :]) not in present
    assert _entity(s_r) in present and l_r.startswith(s_r + " ")
    assert not C.relation_holds(scene, *_relation(l_r))


def test_training_arrays_and_tokenizer():
  b = C.render_scenes(1, 50)
  tc = C.training_captions(b, 0, p_partial=0.5)
  a = tc.arrays()
  n_units = np.array([len(u) for u in tc.units])
  np.testing.assert_array_equal(a["unit_mask"].sum(1), n_units)
  assert set(n_units) == {1, 3}
  assert (a["units"][~a["unit_mask"]] == 0).all()
  assert (a["units"][a["unit_mask"]][:, 0] == C.VOCAB.index("a")).all()
  tok = C.tokenize(["a red circle left of a blue square"])
  assert [
    C.VOCAB[t] for t in tok[0]
  ] == "a red circle left of a blue square".split()
  with pytest.raises(ValueError, match="not in the vocabulary"):
    C.tokenize(["a purple circle"])
