"""Shared tiny random model (module-compiled programs are reused across test
files)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import bayes_memory as bm
from jaxpapers import lm

VOCAB = 97
TINY = lm.LMConfig(
  vocab_size=VOCAB,
  d_model=32,
  n_layers=2,
  n_heads=4,
  n_kv_heads=2,
  head_dim=8,
  ffn_dim=48,
  rope_base=100.0,
)


@pytest.fixture(scope="session")
def tiny():
  # NumPy init (no per-shape random programs to compile); non-trivial norm
  # gains.
  rng = np.random.default_rng(0)
  params = {
    k: jnp.asarray(
      (
        1.0 + 0.2 * rng.normal(size=shp)
        if "norm" in k
        else 0.3 * rng.normal(size=shp)
      ).astype(np.float32)
    )
    for k, shp in lm.param_shapes(TINY).items()
  }
  return TINY, params, bm.WordTokenizer(VOCAB)
