"""The decoder's numeric entry points, with and without an outer ``jax.jit``, on
a tiny random-init config (no weights needed).

Checked against the float64 NumPy forward of ``numpy_ref``, its RMSNorm and
rotate-half RoPE, and the float64 attention of ``test_blockwise``. The config,
epsilons, RoPE layout and block size are static (closed over).
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from tests.lm.numpy_ref import (
  _rms,
  _rope_half,
  hf_weights_from_params,
  np_forward,
)
from tests.lm.test_blockwise import _np_attention
from tests.lm.test_model import TINY, _params

TOKENS = np.array([3, 17, 5, 42, 8, 1])


class LmVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_forward_logits_match_float64_numpy(self):
    params = _params(TINY)
    fn = self.variant(lambda p, t: lm.forward(p, t, config=TINY)[0])
    logits = fn(params, TOKENS[None])
    chex.assert_shape(logits, (1, len(TOKENS), TINY.vocab_size))
    chex.assert_type(logits, jnp.float32)
    want = np_forward(hf_weights_from_params(params, TINY), TINY, TOKENS)
    chex.assert_trees_all_close(logits[0], want, rtol=2e-4, atol=2e-4)

  @chex.variants(with_jit=True, without_jit=True)
  def test_rms_norm_and_both_rope_layouts(self):
    rng = np.random.default_rng(0)
    B, T, N, dh, base = 2, 5, 3, 8, 100.0
    x = rng.normal(size=(B, T, N, dh)).astype(np.float32)
    gain = rng.normal(size=dh).astype(np.float32)
    pos = np.stack([np.arange(T), np.arange(3, 3 + T)]).astype(np.int32)

    @self.variant
    def transforms(x, gain, pos):
      return (
        lm.rms_norm(x, gain, 1e-5),
        lm.apply_rope(x, pos, base, "neox"),
        lm.apply_rope(x, pos, base, "interleaved"),
      )

    normed, neox, inter = transforms(x, gain, pos)
    x64 = x.astype(np.float64)
    want_neox = np.stack(
      [
        np.stack(
          [
            _rope_half(x64[b, :, n], pos[b].astype(np.float64), base)
            for n in range(N)
          ],
          1,
        )
        for b in range(B)
      ]
    )
    # Interleaved pairs (2i, 2i + 1): the neox rotation of the de-interleaved
    # vector.
    perm = np.concatenate([np.arange(0, dh, 2), np.arange(1, dh, 2)])
    inv = np.argsort(perm)
    want_inter = np.stack(
      [
        np.stack(
          [
            _rope_half(x64[b, :, n][:, perm], pos[b].astype(np.float64), base)[
              :, inv
            ]
            for n in range(N)
          ],
          1,
        )
        for b in range(B)
      ]
    )
    chex.assert_shape((normed, neox, inter), x.shape)
    chex.assert_type((normed, neox, inter), jnp.float32)
    chex.assert_trees_all_close(
      (normed, neox, inter),
      (_rms(x64, gain, 1e-5), want_neox, want_inter),
      rtol=1e-5,
      atol=1e-5,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_blockwise_attention_matches_float64_reference(self):
    rng = np.random.default_rng(1)
    B, T, S, H, KV, dh, window = 2, 5, 7, 4, 2, 8, 3
    q = rng.normal(size=(B, T, H, dh)).astype(np.float32)
    k = rng.normal(size=(B, S, KV, dh)).astype(np.float32)
    v = rng.normal(size=(B, S, KV, dh)).astype(np.float32)
    key_pos = np.tile(np.arange(S, dtype=np.int32), (B, 1))
    q_pos = np.tile(np.arange(2, 2 + T, dtype=np.int32), (B, 1))
    key_valid = np.ones((B, S), bool)
    key_valid[1, :2] = False  # left padding of the second row
    scale = dh**-0.5
    for is_global in (True, False):
      fn = self.variant(
        functools.partial(
          lm.blockwise_attention,
          window=window,
          is_global=is_global,
          block_size=2,
        )
      )
      got = fn(q, k, v, q_pos, key_pos, key_valid)
      want, has = _np_attention(
        q, k, v, q_pos, key_pos, key_valid, scale, window, is_global
      )
      self.assertTrue(has.all())
      chex.assert_shape(got, (B, T, H, dh))
      chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-5)
