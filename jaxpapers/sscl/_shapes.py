"""The "shapes world": procedural images with per-pixel masks and templated
captions.

Project reconstruction (a synthetic proxy for COCO-style dense data). Each
``S x S`` image (``S`` a multiple of 8) has 2-4 objects, one per quadrant at a
random offset, side 8/32-14/32 of the image. An object is a (colour, shape,
fill): 6 colours x 4 shapes (circle, square, triangle, cross) x {solid, striped
(diagonal stripes at half intensity)}. Backgrounds are grey-ish textures: noise,
a linear gradient or stripes. Captions list every object in quadrant order: ``"a
striped red circle and a blue square"``.

Segmentation classes: 0 = background, ``1 + shape`` for object pixels.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxpapers.core import validation as V

COLOURS = ("red", "green", "blue", "yellow", "purple", "white")
SHAPES = ("circle", "square", "triangle", "cross")
VOCAB = ("<pad>", "a", "and", "striped", *COLOURS, *SHAPES)
MAX_LEN = 20
MAX_OBJECTS = 4
_RGB = np.array(
  [
    [0.9, 0.15, 0.15],
    [0.15, 0.8, 0.2],
    [0.2, 0.3, 0.95],
    [0.92, 0.85, 0.15],
    [0.6, 0.2, 0.75],
    [0.97, 0.97, 0.97],
  ],
  np.float32,
)


class ShapesData(NamedTuple):
  """``n`` rendered images (K = :data:`MAX_OBJECTS` object slots).

  Attributes:
    images: ``[n, S, S, 3]`` uint8.
    backgrounds: ``[n, S, S, 3]`` uint8, the same images without objects.
    class_map: ``[n, S, S]`` int32, 0 = background, ``1 + shape`` on object pixels.
    instance_map: ``[n, S, S]`` int32, 0 = background, ``1 + k`` for slot k.
    boxes: ``[n, K, 4]`` float32 tight pixel boxes ``(x0, y0, x1, y1)`` (0 for
      empty slots).
    shapes, colours: ``[n, K]`` int32 (-1 for empty slots).
    striped: ``[n, K]`` bool.
    valid: ``[n, K]`` bool, the slot holds an object.
    captions: ``[n, MAX_LEN]`` int32 token ids (0 = padding).
  """

  images: np.ndarray
  backgrounds: np.ndarray
  class_map: np.ndarray
  instance_map: np.ndarray
  boxes: np.ndarray
  shapes: np.ndarray
  colours: np.ndarray
  striped: np.ndarray
  valid: np.ndarray
  captions: np.ndarray


def tokenize(texts: list[str] | tuple[str, ...]) -> np.ndarray:
  """Words of :data:`VOCAB` -> ``[len(texts), MAX_LEN]`` int32 ids (0-padded).

  Args:
    texts: a non-empty list (or tuple) of texts, words separated by spaces, each
      at most :data:`MAX_LEN` words of :data:`VOCAB`.

  Returns:
    ``[len(texts), MAX_LEN]`` int32 token ids, 0 after each text's last word.

  Raises:
    ValueError: an unknown word or a text longer than :data:`MAX_LEN` words.
  """
  if (
    isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts
  ):
    raise TypeError(
      f"texts must be a non-empty list of strings, got {type(texts).__name__}"
    )
  ids = {w: i for i, w in enumerate(VOCAB)}
  out = np.zeros((len(texts), MAX_LEN), np.int32)
  for r, t in enumerate(texts):
    words = t.split()
    if len(words) > MAX_LEN:
      raise ValueError(
        f"texts[{r}] has {len(words)} words, more than MAX_LEN={MAX_LEN}"
      )
    for c, w in enumerate(words):
      if w not in ids:
        raise ValueError(
          f"texts[{r}] has the word {w!r}, not in the vocabulary {VOCAB[1:]}"
        )
      out[r, c] = ids[w]
  return out


CLASS_SETS = ("shape", "colour")


def class_prompts(kind: str = "shape") -> np.ndarray:
  """Token ids of the class prompts, in the order of SHAPES or COLOURS.

  Args:
    kind: ``'shape'`` (``"a circle"``, ...) or ``'colour'`` (``"a red"``, ...).

  Returns:
    ``[C, MAX_LEN]`` int32 token ids (:func:`tokenize`), ``C = 4`` shapes or
    ``6`` colours.
  """
  if kind not in CLASS_SETS:
    raise ValueError(f"kind must be one of {CLASS_SETS}, got {kind!r}")
  return tokenize([f"a {w}" for w in (SHAPES if kind == "shape" else COLOURS)])


def label_maps(data: ShapesData, kind: str) -> tuple[np.ndarray, np.ndarray]:
  """Per-pixel and per-object labels of one class set, objects only.

  Args:
    data: rendered images.
    kind: ``'shape'`` or ``'colour'``.

  Returns:
    ``(pixel [n, S, S] int32, object [n, K] int32)``: the object's shape or
    colour index on object pixels and ``-1`` on background pixels; ``-1`` for
    empty object slots.
  """
  if kind not in CLASS_SETS:
    raise ValueError(f"kind must be one of {CLASS_SETS}, got {kind!r}")
  obj = (data.shapes if kind == "shape" else data.colours).astype(np.int32)
  slot = np.maximum(data.instance_map - 1, 0)
  pix = np.take_along_axis(obj, slot.reshape(len(obj), -1), 1).reshape(
    slot.shape
  )
  return np.where(data.instance_map > 0, pix, -1).astype(np.int32), obj


def _shape_mask(kind, u, v):
  """Boolean masks of shape ``kind [n]`` at local coordinates ``u, v [n, S, S]``
  in [0, 1]."""
  inside = (u >= 0) & (u < 1) & (v >= 0) & (v < 1)
  k = kind[:, None, None]
  circle = (u - 0.5) ** 2 + (v - 0.5) ** 2 <= 0.25
  square = (u >= 0.08) & (u < 0.92) & (v >= 0.08) & (v < 0.92)
  triangle = np.abs(u - 0.5) <= 0.5 * v
  cross = (np.abs(u - 0.5) < 0.17) | (np.abs(v - 0.5) < 0.17)
  m = np.where(
    k == 0, circle, np.where(k == 1, square, np.where(k == 2, triangle, cross))
  )
  return m & inside


def render_shapes_world(seed: int, n: int, *, size: int = 32) -> ShapesData:
  """Renders ``n`` shapes-world images (numpy, vectorised over images).

  Args:
    seed: numpy generator seed (>= 0).
    n: number of images (>= 1).
    size: image side, a multiple of 8 (>= 16).

  Returns:
    A :class:`ShapesData`.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n = V.check_int(n, "n", min_value=1)
  size = V.check_int(size, "size", min_value=16)
  if size % 8:
    raise ValueError(f"size must be a multiple of 8, got {size}")
  rng = np.random.default_rng(seed)
  S, K, Q = size, MAX_OBJECTS, size // 2
  yy, xx = np.mgrid[0:S, 0:S].astype(np.float32) + 0.5
  # ---- backgrounds: grey-ish base colour, one of three textures
  base = 0.3 + 0.25 * rng.random((n, 1, 1, 1), np.float32)
  tint = 0.06 * rng.standard_normal((n, 1, 1, 3)).astype(np.float32)
  kind = rng.integers(0, 3, n)[:, None, None, None]
  noise = 0.08 * rng.standard_normal((n, S, S, 1)).astype(np.float32)
  ang = rng.random((n, 1, 1, 1)).astype(np.float32) * 2 * np.pi
  ramp = (np.cos(ang) * xx[..., None] + np.sin(ang) * yy[..., None]) / S - 0.5
  period = rng.integers(3, 7, (n, 1, 1, 1))
  stripes = 0.08 * np.where(
    ((xx[..., None] + yy[..., None]) // period) % 2 == 0, 1.0, -1.0
  )
  tex = np.where(kind == 0, noise, np.where(kind == 1, 0.3 * ramp, stripes))
  bg = np.clip(base + tint + tex, 0.0, 1.0).astype(np.float32)
  img = bg.copy()
  # ---- objects: 2-4, one per quadrant
  n_obj = rng.integers(2, K + 1, n)
  order = np.argsort(rng.random((n, 4)), 1)  # random quadrants
  valid = np.arange(K)[None] < n_obj[:, None]
  shapes = np.where(valid, rng.integers(0, 4, (n, K)), -1).astype(np.int32)
  colours = np.where(valid, rng.integers(0, len(COLOURS), (n, K)), -1).astype(
    np.int32
  )
  striped = valid & (rng.random((n, K)) < 0.5)
  side = rng.integers(S // 4, (14 * S) // 32 + 1, (n, K)).astype(np.float32)
  off_y = rng.random((n, K)) * (Q - side)
  off_x = rng.random((n, K)) * (Q - side)
  qy, qx = order // 2, order % 2
  y0 = qy * Q + off_y
  x0 = qx * Q + off_x
  class_map = np.zeros((n, S, S), np.int32)
  inst = np.zeros((n, S, S), np.int32)
  boxes = np.zeros((n, K, 4), np.float32)
  for k in range(K):
    u = (xx[None] - x0[:, k, None, None]) / side[:, k, None, None]
    v = (yy[None] - y0[:, k, None, None]) / side[:, k, None, None]
    m = _shape_mask(np.maximum(shapes[:, k], 0), u, v) & valid[:, k, None, None]
    rgb = _RGB[np.maximum(colours[:, k], 0)][:, None, None, :]
    stripe = (((xx + yy) // 2) % 2 == 0)[None, ..., None] & striped[
      :, k, None, None, None
    ]
    rgb = np.where(stripe, 0.5 * rgb, rgb)
    img = np.where(m[..., None], rgb, img)
    class_map = np.where(m, shapes[:, k, None, None] + 1, class_map)
    inst = np.where(m, k + 1, inst)
    ys = np.where(m.any(2), np.arange(S)[None], -1)
    xs = np.where(m.any(1), np.arange(S)[None], -1)
    has = m.any((1, 2))
    boxes[:, k] = np.where(
      has[:, None],
      np.stack(
        [
          np.where(xs >= 0, xs, S).min(1),
          np.where(ys >= 0, ys, S).min(1),
          xs.max(1) + 1,
          ys.max(1) + 1,
        ],
        1,
      ),
      0.0,
    )
  words = []
  for i in range(n):
    parts = []
    for k in range(int(n_obj[i])):
      fill = "striped " if striped[i, k] else ""
      parts.append(f"a {fill}{COLOURS[colours[i, k]]} {SHAPES[shapes[i, k]]}")
    words.append(" and ".join(parts))
  to_u8 = lambda a: np.round(a * 255).astype(np.uint8)
  return ShapesData(
    images=to_u8(img),
    backgrounds=to_u8(bg),
    class_map=class_map,
    instance_map=inst,
    boxes=boxes,
    shapes=shapes,
    colours=colours,
    striped=striped,
    valid=valid,
    captions=tokenize(words),
  )
