"""Tiny models shared by the dual_rate tests."""

import jax
from flax import nnx

from jaxpapers import dual_rate as dr

TINY = dict(image_size=8, channels=1, patch_size=4, num_heads=2, mlp_ratio=2)


def tiny_dual(seed=0, num_classes=0, parametrization="v"):
  return dr.DualRateModel(
    **TINY,
    encoder_width=16,
    encoder_depth=1,
    feature_dim=8,
    denoiser_width=8,
    denoiser_blocks=1,
    context_channels=4,
    denoiser_emb_dim=8,
    num_classes=num_classes,
    parametrization=parametrization,
    rngs=nnx.Rngs(seed),
  )


def tiny_single(seed=0, num_classes=0):
  return dr.SingleNetwork(
    **TINY, width=16, depth=1, num_classes=num_classes, rngs=nnx.Rngs(seed)
  )


def randomize(model, seed=0, scale=0.1):
  """Perturb every parameter (zero-initialised output layers otherwise make
  outputs trivial)."""
  graphdef, state = nnx.split(model)
  leaves, tree = jax.tree.flatten(state)
  keys = jax.random.split(jax.random.key(seed), len(leaves))
  leaves = [
    l + scale * jax.random.normal(k, l.shape) for l, k in zip(leaves, keys)
  ]
  return nnx.merge(graphdef, jax.tree.unflatten(tree, leaves))
