"""One tiny CLIP shared by the test modules: built once, so its compiled ops are
reused."""

import functools

from flax import nnx

import jaxpapers.sscl as S

SIZE, PATCH, WIDTH, EMBED = 8, 4, 8, 4


@functools.cache
def tiny_clip() -> S.TinyCLIP:
  """A one-block TinyCLIP on 8 x 8 images with 4 x 4 patches (4 patch tokens),
  seed 0."""
  return S.TinyCLIP(
    len(S.VOCAB),
    size=SIZE,
    patch=PATCH,
    width=WIDTH,
    depth=1,
    text_depth=1,
    embed_dim=EMBED,
    heads=2,
    rngs=nnx.Rngs(0),
  )
