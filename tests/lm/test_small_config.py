"""`lm.small_config`: the architecture of the experiments' random stand-in
LMs."""

import dataclasses

import jax
import numpy as np
import pytest

from jaxpapers import lm


@pytest.mark.parametrize(
  "vocab, d, layers", [(320, 32, 1), (57, 32, 2), (11, 8, 3)]
)
def test_equals_the_hand_written_config(vocab, d, layers):
  """Field for field the config the random teacher and reader used to spell
  out."""
  hand = lm.LMConfig(
    vocab_size=vocab,
    d_model=d,
    n_layers=layers,
    n_heads=2,
    n_kv_heads=2,
    head_dim=d // 2,
    ffn_dim=2 * d,
    rope_base=10000.0,
  )
  cfg = lm.small_config(vocab, d_model=d, n_layers=layers)
  assert dataclasses.asdict(cfg) == dataclasses.asdict(hand)
  a = lm.init_params(jax.random.key(123), cfg, std=0.5)
  b = lm.init_params(jax.random.key(123), hand, std=0.5)
  assert a.keys() == b.keys()
  for k in a:
    np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))


def test_shapes_and_parameter_count():
  """Closed form: L(4 d² + 6 d² + 2d) + V d + d with H = KV, dh = d / H and F = 2d."""
  v, d, layers = 40, 24, 2
  cfg = lm.small_config(v, d_model=d, n_layers=layers, n_heads=3)
  assert (cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim) == (
    3,
    3,
    8,
    48,
  )
  assert cfg.rope_base == 10000.0 and cfg.tie_embeddings
  expected = layers * (4 * d * d + 3 * d * 2 * d + 2 * d) + v * d + d
  assert cfg.num_params() == expected
  params = lm.init_params(jax.random.key(0), cfg)
  assert sum(int(np.prod(p.shape)) for p in jax.tree.leaves(params)) == expected
  logits = lm.forward(params, np.arange(6, dtype=np.int32)[None], config=cfg)[0]
  assert logits.shape == (1, 6, v)


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (
      dict(vocab_size=0, d_model=8, n_layers=1),
      "vocab_size must be a positive int, got 0",
    ),
    (
      dict(vocab_size=8, d_model=8.0, n_layers=1),
      "d_model must be a positive int, got 8.0",
    ),
    (
      dict(vocab_size=8, d_model=8, n_layers=True),
      "n_layers must be a positive int, got True",
    ),
    (
      dict(vocab_size=8, d_model=8, n_layers=1, n_heads=-1),
      "n_heads must be a positive int",
    ),
    (
      dict(vocab_size=8, d_model=12, n_layers=1, n_heads=4),
      r"multiple of 2 \* n_heads = 8",
    ),
    (dict(vocab_size=8, d_model=33, n_layers=1), "got d_model=33"),
  ],
)
def test_rejects_bad_arguments(kwargs, match):
  with pytest.raises(ValueError, match=match):
    lm.small_config(**kwargs)
