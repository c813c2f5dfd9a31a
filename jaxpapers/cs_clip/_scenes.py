"""Procedural scenes of coloured shapes: the synthetic proxy for image–caption
data.

Project reconstruction (the paper trains on COCO with LLM-extracted units). Each
image is a ``size x size`` RGB canvas split into a 3 x 3 grid of cells; two
*mentioned* objects share a row (relation "left of" / "right of") or, when
``vertical``, a column ("above" / "below"), and optional *distractor* objects
fill other cells and are never mentioned in captions. Every object is a (colour,
shape) pair drawn from 4 colours x 4 shapes; the objects of one image are
distinct pairs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxpapers.core import validation as V

COLOURS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square", "triangle", "cross")
RELATIONS = ("left of", "right of", "above", "below")
INVERSE = (1, 0, 3, 2)  # "A left of B" == "B right of A"
_RGB = np.array(
  [[230, 40, 40], [40, 200, 60], [50, 80, 240], [235, 215, 40]], np.uint8
)


def _shape_masks(p: int) -> np.ndarray:
  """``[4, p, p]`` bool masks: circle, square, triangle, cross."""
  y, x = np.mgrid[0:p, 0:p] + 0.5
  c = p / 2
  circle = (y - c) ** 2 + (x - c) ** 2 <= (p / 2) ** 2
  square = np.pad(np.ones((p - 2, p - 2), bool), 1)
  triangle = np.abs(x - c) <= (y / p) * (p / 2)
  w = max(1, p // 4)
  cross = (np.abs(y - c) < w) | (np.abs(x - c) < w)
  return np.stack([circle, square, triangle, cross])


class Scene(NamedTuple):
  """One scene: objects 0 and 1 are mentioned, ``relation`` is that of object 0
  to object 1.

  Attributes:
    colours: colour index of each object (distractors after the first two).
    shapes: shape index of each object.
    relation: index into :data:`RELATIONS` of "object 0 <relation> object 1".
  """

  colours: tuple
  shapes: tuple
  relation: int


class SceneBatch(NamedTuple):
  """``N`` rendered scenes.

  Attributes:
    images: ``[N, S, S, 3]`` uint8.
    colours: ``[N, K]`` int32 colour indices (K = 2 + distractors).
    shapes: ``[N, K]`` int32 shape indices.
    cells: ``[N, K]`` int32 grid cell (row * 3 + column).
    relation: ``[N]`` int32, relation of object 0 to object 1.
  """

  images: np.ndarray
  colours: np.ndarray
  shapes: np.ndarray
  cells: np.ndarray
  relation: np.ndarray

  def scene(self, i: int) -> Scene:
    """Scene ``i`` as a :class:`Scene` of Python ints.

    Args:
      i: index in ``[0, N)``.

    Returns:
      The :class:`Scene` (colours and shapes of all K objects, the relation).
    """
    return Scene(
      tuple(int(c) for c in self.colours[i]),
      tuple(int(s) for s in self.shapes[i]),
      int(self.relation[i]),
    )

  def __len__(self) -> int:
    return int(self.images.shape[0])


def partner(entity: np.ndarray) -> np.ndarray:
  """The fixed co-occurrence partner of an entity id ``colour * 4 + shape``.

  Args:
    entity: int array of any shape, entity ids in ``[0, 16)``.

  Returns:
    Int array of the same shape: the partner ``((c + 1) % 4) * 4 + (s + 2) %
    4``.
  """
  c, s = entity // 4, entity % 4
  return ((c + 1) % 4) * 4 + (s + 2) % 4


def render_scenes(
  seed: int,
  n: int,
  *,
  size: int = 24,
  n_objects: int = 2,
  prior: float = 0.0,
  distractors: int = 0,
  vertical: bool = False,
) -> SceneBatch:
  """Renders ``n`` scenes (numpy, vectorised over scenes).

  Args:
    seed: numpy generator seed.
    n: number of scenes (> 0).
    size: canvas side, a multiple of 3 and >= 12 (cells of ``size / 3`` pixels).
    n_objects: mentioned objects per scene (the caption grammar has two; only 2
      is allowed).
    prior: probability that a scene follows the co-occurrence prior: object 1 is
      the fixed :func:`partner` of object 0 and object 0 is on the left.
    distractors: unmentioned extra objects (0..4), distinct from the mentioned
      ones.
    vertical: also draw above/below layouts (half of the scenes).

  Returns:
    A :class:`SceneBatch`.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n = V.check_int(n, "n", min_value=1)
  size = V.check_int(size, "size", min_value=12)
  if size % 3:
    raise ValueError(
      f"size must be a multiple of 3 (3 x 3 grid of cells), got {size}"
    )
  V.check_int(n_objects, "n_objects", min_value=2, max_value=2)
  prior = V.check_float(prior, "prior", min_value=0.0, max_value=1.0)
  distractors = V.check_int(
    distractors, "distractors", min_value=0, max_value=4
  )
  rng = np.random.default_rng(seed)
  K = 2 + distractors
  ent0 = rng.integers(0, 16, n)
  ent1 = (ent0 + rng.integers(1, 16, n)) % 16  # any other pair
  on_prior = rng.random(n) < prior
  ent1 = np.where(on_prior, partner(ent0), ent1)
  vert = (rng.random(n) < 0.5) & bool(vertical) & ~on_prior
  line = rng.integers(0, 3, n)
  a = rng.integers(0, 3, n)
  b = (a + rng.integers(1, 3, n)) % 3
  a, b = (
    np.where(on_prior, np.minimum(a, b), a),
    np.where(on_prior, np.maximum(a, b), b),
  )
  cell0 = np.where(vert, a * 3 + line, line * 3 + a)
  cell1 = np.where(vert, b * 3 + line, line * 3 + b)
  relation = np.where(vert, np.where(a < b, 2, 3), np.where(a < b, 0, 1))
  ents = [ent0, ent1]
  cells = [cell0, cell1]
  for _ in range(distractors):
    # a random entity not yet in the scene and a random free cell
    used_e = np.stack(ents, 1)
    scores = rng.random((n, 16))
    scores[np.arange(n)[:, None], used_e] = -1
    ents.append(scores.argmax(1))
    used_c = np.stack(cells, 1)
    scores = rng.random((n, 9))
    scores[np.arange(n)[:, None], used_c] = -1
    cells.append(scores.argmax(1))
  ents_a = np.stack(ents, 1)
  cells_a = np.stack(cells, 1).astype(np.int32)
  colours, shapes = (
    (ents_a // 4).astype(np.int32),
    (ents_a % 4).astype(np.int32),
  )
  cell = size // 3
  p = cell - 1
  masks = _shape_masks(p)
  images = np.zeros((n, size, size, 3), np.uint8)
  idx = np.arange(n)[:, None, None]
  ar = np.arange(p)
  for k in range(K):
    jy, jx = rng.integers(0, 2, n), rng.integers(0, 2, n)
    y0 = (cells_a[:, k] // 3) * cell + jy
    x0 = (cells_a[:, k] % 3) * cell + jx
    rows = (y0[:, None] + ar)[:, :, None]
    cols = (x0[:, None] + ar)[:, None, :]
    patch = images[idx, rows, cols]  # [n, p, p, 3]
    m = masks[shapes[:, k]][..., None]
    images[idx, rows, cols] = np.where(
      m, _RGB[colours[:, k]][:, None, None, :], patch
    )
  return SceneBatch(images, colours, shapes, cells_a, relation.astype(np.int32))
