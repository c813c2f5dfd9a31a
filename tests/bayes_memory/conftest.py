"""Shared tiny random model (module-compiled programs are reused across test files)."""

import jax
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
  params = lm.init_params(jax.random.key(0), TINY, std=0.3)
  return TINY, params, bm.WordTokenizer(VOCAB)
