"""Rule-based caption units, minimally edited foils and half-truth pairs for the
scene grammar.

Project reconstruction of the authors' LLM pipeline (``neg_pipeline/``) for
templated captions:

* caption grammar: ``a {colour} {shape}`` (an entity) or ``a {colour} {shape}
  {rel} a {colour} {shape}`` with rel in {left of, right of, above, below}; the
  relation caption is written in either of its two equivalent forms ("A left of
  B" == "B right of A");
* **entity units**: one per mentioned object; the **entity foil** changes the
  colour or the shape (one word) to a value such that the edited object is
  absent from the image;
* **relation unit**: the stated triple; the **relation foil** either swaps
  subject and object or flips the predicate (never both: that is a true
  paraphrase);
* **half-truth pairs** (the reference's ``ComponentSample`` /
  ``RelationSample``): entity: c = one true entity, c' = c + " and " + a foil
  entity; relation: c = the subject entity (the reference's ``partial_truth``),
  c' = the relation caption with a wrong predicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.cs_clip._scenes import (
  COLOURS,
  INVERSE,
  RELATIONS,
  SHAPES,
  Scene,
  SceneBatch,
)

VOCAB = (
  "<pad>",
  "a",
  "and",
  "left",
  "right",
  "of",
  "above",
  "below",
  *COLOURS,
  *SHAPES,
)
_WORD = {w: i for i, w in enumerate(VOCAB)}
MAX_LEN = 8  # "a red circle left of a blue square"
U_MAX = 3  # two entity units + one relation unit


def entity_text(colour: int, shape: int) -> str:
  return f"a {COLOURS[colour]} {SHAPES[shape]}"


def relation_text(subj: tuple, rel: int, obj: tuple) -> str:
  return f"{entity_text(*subj)} {RELATIONS[rel]} {entity_text(*obj)}"


def _entities(scene: Scene) -> list[tuple]:
  if not isinstance(scene, Scene):
    raise TypeError(
      "scene must be a Scene (colours, shapes, relation), "
      f"got {type(scene).__name__}"
    )
  return list(zip(scene.colours, scene.shapes))


def _check_rel(rel) -> int:
  return V.check_int(
    rel,
    "rel (an index into RELATIONS)",
    min_value=0,
    max_value=len(RELATIONS) - 1,
  )


def _rel_of(scene: Scene, i: int) -> int:
  """Relation of mentioned object i to the other one."""
  return scene.relation if i == 0 else INVERSE[scene.relation]


def relation_holds(scene: Scene, subj: tuple, rel: int, obj: tuple) -> bool:
  """Whether "subj rel obj" is true of the scene's two mentioned objects.

  Args:
    scene: a :class:`Scene`.
    subj: ``(colour, shape)`` of the subject.
    rel: index into :data:`RELATIONS`.
    obj: ``(colour, shape)`` of the object.

  Returns:
    True iff subj and obj are the two distinct mentioned objects and rel relates
    them.
  """
  rel = _check_rel(rel)
  ents = _entities(scene)[:2]
  if subj not in ents or obj not in ents or subj == obj:
    return False
  return _rel_of(scene, ents.index(subj)) == rel


def entity_foil(scene: Scene, i: int, rng: np.random.Generator) -> tuple:
  """Object ``i`` with its colour or its shape changed to an (colour, shape)
  absent from the image.

  Args:
    scene: a :class:`Scene`.
    i: the mentioned object, 0 or 1.
    rng: numpy generator (which attribute, which value).

  Returns:
    The foil entity ``(colour, shape)``.
  """
  present = set(_entities(scene))
  i = V.check_int(i, "i (a mentioned object: 0 or 1)", min_value=0, max_value=1)
  c, s = scene.colours[i], scene.shapes[i]
  options = [
    [
      (c2, s)
      for c2 in range(len(COLOURS))
      if c2 != c and (c2, s) not in present
    ],
    [
      (c, s2) for s2 in range(len(SHAPES)) if s2 != s and (c, s2) not in present
    ],
  ]
  options = [o for o in options if o]
  choice = options[rng.integers(len(options))]
  return choice[rng.integers(len(choice))]


def relation_foil(
  subj: tuple, rel: int, obj: tuple, rng: np.random.Generator
) -> str:
  """Swap the arguments or flip the predicate (one edit; both together would be
  a paraphrase).

  Args:
    subj: ``(colour, shape)`` of the subject.
    rel: index into :data:`RELATIONS`.
    obj: ``(colour, shape)`` of the object.
    rng: numpy generator (which edit, with probability 1/2 each).

  Returns:
    The foil caption.
  """
  rel = _check_rel(rel)
  if rng.random() < 0.5:
    return relation_text(obj, rel, subj)
  return relation_text(subj, INVERSE[rel], obj)


def units_and_foils(
  scene: Scene,
  rng: np.random.Generator,
  *,
  form: str = "relation",
  subject: int = 0,
) -> tuple[list[str], list[str]]:
  """Units of a caption about ``scene`` and one minimally edited foil per unit.

  Args:
    scene: a :class:`Scene`.
    rng: numpy generator (foil choices).
    form: ``'relation'`` (caption "subject rel object") or ``'entity'`` (caption
      "subject").
    subject: which mentioned object (0 or 1) is the caption's subject.

  Returns:
    ``(units, foils)``: for ``'relation'`` the two entity units and the relation
    unit (3 each); for ``'entity'`` one entity unit. ``foils[k]`` differs from
    ``units[k]`` by one edit.
  """
  if form not in ("relation", "entity"):
    raise ValueError(f"form must be 'relation' or 'entity', got {form!r}")
  V.check_int(subject, "subject", min_value=0, max_value=1)
  ents = _entities(scene)
  subj = ents[subject]
  units = [entity_text(*subj)]
  foils = [entity_text(*entity_foil(scene, subject, rng))]
  if form == "entity":
    return units, foils
  other = 1 - subject
  obj = ents[other]
  rel = _rel_of(scene, subject)
  units += [entity_text(*obj), relation_text(subj, rel, obj)]
  foils += [
    entity_text(*entity_foil(scene, other, rng)),
    relation_foil(subj, rel, obj, rng),
  ]
  return units, foils


def half_truth_pairs(
  scene: Scene, rng: np.random.Generator
) -> list[tuple[str, str, int]]:
  """One entity and one relation half-truth triple ``(c, c', kind)`` for
  ``scene``.

  Entity (kind 0): c = "a {true entity}", c' = c + " and " + a foil of the other
  object. Relation (kind 1): c = "a {true entity}", c' = c + " {wrong predicate}
  " + the other object.

  Args:
    scene: a :class:`Scene`.
    rng: numpy generator (which object, which foil).

  Returns:
    ``[(c, c', 0), (c, c', 1)]``, the entity and the relation triple.
  """
  ents = _entities(scene)
  a = int(rng.integers(2))
  b = 1 - a
  short = entity_text(*ents[a])
  long_e = f"{short} and {entity_text(*entity_foil(scene, b, rng))}"
  a2 = int(rng.integers(2))
  wrong = INVERSE[_rel_of(scene, a2)]
  short_r = entity_text(*ents[a2])
  long_r = relation_text(ents[a2], wrong, ents[1 - a2])
  return [(short, long_e, 0), (short_r, long_r, 1)]


def tokenize(texts: Sequence[str], max_len: int = MAX_LEN) -> np.ndarray:
  """Word ids ``[N, max_len]`` int32 (0 = padding) of captions in the scene
  grammar.

  Args:
    texts: N captions (an empty string gives an all-padding row).
    max_len: L, the number of columns.

  Returns:
    ``[N, max_len]`` int32 word ids, right-padded with 0.

  Raises:
    ValueError: a word outside :data:`VOCAB` or a caption longer than
      ``max_len``.
  """
  if isinstance(texts, str):
    raise TypeError("texts must be a sequence of strings, not a single string")
  out = np.zeros((len(texts), max_len), np.int32)
  for i, t in enumerate(texts):
    words = t.split()
    if len(words) > max_len:
      raise ValueError(
        f"texts[{i}] has {len(words)} words, more than max_len={max_len}: {t!r}"
      )
    for j, w in enumerate(words):
      if w not in _WORD:
        raise ValueError(
          f"texts[{i}] holds the word {w!r}, not in the vocabulary {VOCAB}"
        )
      out[i, j] = _WORD[w]
  return out


class TrainingCaptions(NamedTuple):
  """Training text for N scenes (strings kept so the generated foils can be
  saved).

  Attributes:
    caption, caption_foil: ``[N]`` full caption t0 and its foil t0~.
    units, foils: ``[N][<= U_MAX]`` unit captions and their foils.
  """

  caption: list
  caption_foil: list
  units: list
  foils: list

  def arrays(self, max_len: int = MAX_LEN) -> dict[str, np.ndarray]:
    """Token arrays: caption/caption_foil ``[N, L]``, units/foils
    ``[N, U_MAX, L]``, mask.

    Args:
      max_len: L, the token columns.

    Returns:
      A dict with ``caption``, ``caption_foil`` (int32 ``[N, L]``), ``units``,
      ``foils`` (int32 ``[N, U_MAX, L]``, missing units all padding) and
      ``unit_mask`` (bool ``[N, U_MAX]``).
    """
    n = len(self.caption)
    flat_u = [u for us in self.units for u in (us + [""] * (U_MAX - len(us)))]
    flat_f = [f for fs in self.foils for f in (fs + [""] * (U_MAX - len(fs)))]
    mask = np.array(
      [[k < len(us) for k in range(U_MAX)] for us in self.units], bool
    )
    return {
      "caption": tokenize(self.caption, max_len),
      "caption_foil": tokenize(self.caption_foil, max_len),
      "units": tokenize(flat_u, max_len).reshape(n, U_MAX, max_len),
      "foils": tokenize(flat_f, max_len).reshape(n, U_MAX, max_len),
      "unit_mask": mask,
    }


def training_captions(
  batch: SceneBatch,
  seed: int,
  *,
  p_partial: float = 0.5,
  p_paraphrase: float = 0.5,
) -> TrainingCaptions:
  """Alt-text-style captions: an entity caption with probability ``p_partial``,
  else a relation caption whose subject is object 1 (the paraphrase form) with
  probability ``p_paraphrase``; units, foils and the full-caption foil (the
  relation foil, or the entity foil for entity captions) follow from the
  caption.

  Args:
    batch: the N scenes.
    seed: non-negative seed of the caption and foil choices.
    p_partial: probability in [0, 1] of an entity caption.
    p_paraphrase: probability in [0, 1] that a relation caption's subject is
      object 1.

  Returns:
    The :class:`TrainingCaptions` of the N scenes.
  """
  p_partial = V.check_float(
    p_partial, "p_partial", min_value=0.0, max_value=1.0
  )
  p_paraphrase = V.check_float(
    p_paraphrase, "p_paraphrase", min_value=0.0, max_value=1.0
  )
  rng = np.random.default_rng(V.check_int(seed, "seed", min_value=0))
  cap, cap_f, units, foils = [], [], [], []
  for i in range(len(batch)):
    scene = batch.scene(i)
    form = "entity" if rng.random() < p_partial else "relation"
    subject = (
      int(rng.random() < p_paraphrase)
      if form == "relation"
      else int(rng.integers(2))
    )
    us, fs = units_and_foils(scene, rng, form=form, subject=subject)
    cap.append(us[-1])
    cap_f.append(fs[-1])
    units.append(us)
    foils.append(fs)
  return TrainingCaptions(cap, cap_f, units, foils)


class HalfTruthSet(NamedTuple):
  """Evaluation text for N scenes: ``short``/``long``/``kind`` ``[2N]`` (entity
  then relation triple of each scene, image index ``image``) and the canonical
  relation caption ``[N]``."""

  short: list
  long: list
  kind: np.ndarray
  image: np.ndarray
  caption: list


def half_truth_set(batch: SceneBatch, seed: int) -> HalfTruthSet:
  """Half-truth triples (one entity and one relation per scene) and retrieval
  captions.

  Args:
    batch: the N scenes.
    seed: non-negative seed of the triples' choices.

  Returns:
    A :class:`HalfTruthSet` with 2N triples and N canonical relation captions.
  """
  rng = np.random.default_rng(V.check_int(seed, "seed", min_value=0))
  short, long, kind, image, caption = [], [], [], [], []
  for i in range(len(batch)):
    scene = batch.scene(i)
    for s, lg, k in half_truth_pairs(scene, rng):
      short.append(s)
      long.append(lg)
      kind.append(k)
      image.append(i)
    ents = _entities(scene)
    caption.append(relation_text(ents[0], scene.relation, ents[1]))
  return HalfTruthSet(
    short, long, np.array(kind, np.int32), np.array(image, np.int32), caption
  )
