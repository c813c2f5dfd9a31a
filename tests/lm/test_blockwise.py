"""Blockwise (online-softmax) attention against the dense path and a float64
reference, row-selective attention capture, prefill memory, and prompt-length
bucketing."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import lm
from jaxpapers.lm._attention import resolve_impl
from tests.jit_util import count_traces
from tests.lm.test_model import GEMMA_LIKE, TINY, _params

# Left-padded batch whose rows are longer than one block (13 tokens, block 4:
# four query blocks, the last one partial), shorter than one, and a single
# token.
_RNG = np.random.default_rng(7)
LENGTHS = (13, 7, 1)


def _batch(config):
  seqs = [_RNG.integers(0, config.vocab_size, size=n).tolist() for n in LENGTHS]
  ids, mask = lm.left_pad(seqs)
  return np.asarray(ids), np.asarray(mask)


BATCHES = {c.arch: _batch(c) for c in (TINY, GEMMA_LIKE)}


def _np_attention(q, k, v, q_pos, key_pos, key_valid, scale, window, is_global):
  """float64 reference: z [B, T, H, dh] and which rows have an allowed key
  [B, T]."""
  q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
  B, T, H, dh = q.shape
  G = H // k.shape[2]
  z = np.zeros((B, T, H, dh))
  has = np.zeros((B, T), bool)
  for b in range(B):
    for t in range(T):
      ok = key_valid[b] & (key_pos[b] <= q_pos[b, t])
      if window is not None and not is_global:
        ok &= q_pos[b, t] - key_pos[b] < window
      has[b, t] = ok.any()
      if not ok.any():
        continue
      for h in range(H):
        s = scale * (k[b, ok, h // G] @ q[b, t, h])
        a = np.exp(s - s.max())
        z[b, t, h] = (a / a.sum()) @ v[b, ok, h // G]
  return z, has


@pytest.mark.parametrize("window,is_global", [(None, True), (5, False)])
def test_blockwise_attention_matches_float64_reference(window, is_global):
  """Cache-like keys (more slots than queries, unwritten and padded slots), GQA,
  a block size that divides neither T nor S, under jit."""
  rng = np.random.default_rng(0)
  B, T, S, H, KV, dh = 2, 11, 17, 4, 2, 8
  q = rng.normal(size=(B, T, H, dh)).astype(np.float32)
  k = rng.normal(size=(B, S, KV, dh)).astype(np.float32)
  v = rng.normal(size=(B, S, KV, dh)).astype(np.float32)
  # row 1: 3 padded slots
  key_pos = np.tile(np.arange(S), (B, 1)) - np.array([[0], [3]])
  key_valid = (key_pos >= 0) & (np.arange(S) < 14)  # slots 14.. not written yet
  key_pos = np.maximum(key_pos, 0)
  q_pos = key_pos[:, 3:14]  # the queries are slots 3..13
  f = jax.jit(
    lambda *a: lm.blockwise_attention(
      *a, scale=0.4, window=window, is_global=is_global, block_size=3
    )
  )
  z = np.asarray(f(q, k, v, q_pos, key_pos, key_valid))
  ref, has = _np_attention(
    q, k, v, q_pos, key_pos, key_valid, 0.4, window, is_global
  )
  assert has.sum() >= B * T - 3
  np.testing.assert_allclose(z[has], ref[has], rtol=1e-5, atol=1e-5)
  assert np.all(np.isfinite(z))
  if window is not None:  # the window changes the answer: it is not ignored
    glob, _ = _np_attention(q, k, v, q_pos, key_pos, key_valid, 0.4, None, True)
    assert np.abs(glob[has] - ref[has]).max() > 1e-2


@pytest.mark.parametrize(
  "window,block_size",
  [(None, 8), (None, 16), (5, 8), (20, 8)],
  ids=["causal-8", "causal-16", "window5-8", "window20-8"],
)
def test_blockwise_prefill_equals_float64_softmax_attention(window, block_size):
  """Self-attention prefill computed in float64 (`jax.enable_x64`): causal or
  sliding window (W = 5 < block: every tile masked; W = 20: full tiles inside
  the window), one left-padded row, T = 37 (not a multiple of the block), GQA,
  and one key whose scores jump far above the running maximum, so the lazy step
  must fall back to the exact one (without the fallback the sums overflow to
  inf). Equal to the plain softmax to 1e-12 at every row."""
  rng = np.random.default_rng(1)
  B, T, H, KV, dh = 2, 37, 4, 2, 8
  q = rng.normal(size=(B, T, H, dh))
  k = rng.normal(size=(B, T, KV, dh))
  v = rng.normal(size=(B, T, KV, dh))
  k[:, 26] *= 60.0  # scores of up to ~±200 at key 26, in the fourth key block
  mask = np.ones((B, T), bool)
  mask[1, :5] = False
  pos = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
  f = jax.jit(
    lambda *a: lm.blockwise_attention(
      *a,
      scale=0.5,
      window=window,
      is_global=window is None,
      block_size=block_size,
    )
  )
  with jax.enable_x64(True):
    z = np.asarray(f(q, k, v, pos, pos, mask))
  assert z.dtype == np.float64
  ref, has = _np_attention(q, k, v, pos, pos, mask, 0.5, window, window is None)
  # padding queries sit at position 0 and see the first real token
  assert has.all()
  # rows after the spike
  spike = 0.5 * np.einsum("bthd,bd->bth", q[:, 27:], k[:, 26, 0])
  # far above any earlier score: the exact step is needed
  assert spike.max() > 60
  np.testing.assert_allclose(z, ref, rtol=1e-12, atol=1e-12)


def test_auto_block_size():
  got = [
    lm.auto_block_size(t)
    for t in (1, 100, 128, 255, 256, 640, 1024, 1280, 8192)
  ]
  assert got == [32, 32, 32, 32, 64, 128, 256, 256, 256]
  # sliding-window layers: at most W/4 (a power of 2, at least MIN_BLOCK_SIZE)
  got = [
    lm.auto_block_size(t, w)
    for t, w in ((8192, 512), (8192, 1000), (256, 512), (512, 3))
  ]
  assert got == [128, 128, 64, 32]


def test_auto_tiles_of_local_and_global_layers_differ_and_equal_dense():
  """A Gemma-like model whose window (160) gives its local layers 32-tiles while
  its global layer takes 128-tiles at T = 512 (the layer kind is a scanned flag,
  so both tilings are compiled and chosen per layer): the auto prefill equals
  the dense one at every position."""
  config = dataclasses.replace(GEMMA_LIKE, sliding_window=160)
  assert (lm.auto_block_size(512), lm.auto_block_size(512, 160)) == (128, 32)
  params = _params(config)
  ids = np.random.default_rng(3).integers(0, config.vocab_size, size=(1, 512))
  auto, _, _ = lm.forward(params, ids, config=config)
  dense, _, _ = lm.forward(params, ids, config=config, attention="dense")
  np.testing.assert_allclose(
    np.asarray(auto), np.asarray(dense), rtol=1e-5, atol=1e-5
  )
  # the window matters at this length: a global-only model differs
  glob, _, _ = lm.forward(
    params, ids, config=dataclasses.replace(config, sliding_window=None)
  )
  assert np.abs(np.asarray(glob) - np.asarray(dense)).max() > 1e-3


@pytest.mark.parametrize(
  "config", [TINY, GEMMA_LIKE], ids=["smollm2-like", "gemma-like"]
)
def test_blockwise_forward_equals_dense(config):
  """Logits, head outputs and captured attention rows of the blockwise forward
  (block 4; the Gemma-like model has a sliding window of 3, so whole tiles are
  skipped) equal the dense forward to 1e-5 at every real token of a left-padded
  batch."""
  params = _params(config)
  ids, mask = BATCHES[config.arch]
  rows = np.array([[12, 0, 5], [12, 9, 6], [12, 12, 12]])
  dense, _, cd = lm.forward(
    params,
    ids,
    config=config,
    mask=mask,
    capture=lm.Capture(attn="all", head_outputs=True),
  )
  blk, _, cb = lm.forward(
    params,
    ids,
    config=config,
    mask=mask,
    attention="blockwise",
    block_size=4,
    capture=lm.Capture(attn="rows", head_outputs=True),
    attn_rows=rows,
  )
  m = np.asarray(mask)
  np.testing.assert_allclose(
    np.asarray(blk)[m], np.asarray(dense)[m], rtol=1e-5, atol=1e-5
  )
  hd = np.moveaxis(np.asarray(cd["head_outputs"]), 1, 2)[m]  # [N, L, H, dh]
  hb = np.moveaxis(np.asarray(cb["head_outputs"]), 1, 2)[m]
  np.testing.assert_allclose(hb, hd, rtol=1e-5, atol=1e-5)
  L, H, T = config.n_layers, config.n_heads, ids.shape[1]
  assert cb["attn"].shape == (3, L, H, 3, T)
  want = np.take_along_axis(
    np.asarray(cd["attn"]), rows[:, None, None, :, None], axis=3
  )
  np.testing.assert_allclose(cb["attn"], want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(cb["attn"]).sum(-1), 1.0, rtol=1e-5)
  np.testing.assert_array_equal(cb["key_valid"], mask)


def test_blockwise_bucketed_prefill_into_cache_equals_dense_and_compiles_once():
  """generate: a blockwise prefill (block 4) of prompts left-padded to their
  bucket (13 -> 16) gives the unpadded dense run's tokens, per-step attention
  rows and values (the cache slots shifted by the 3 padding columns); a second
  prompt length in the same bucket (11) reuses the compiled program."""
  params = _params(GEMMA_LIKE, std=0.5)
  ids, mask = BATCHES["gemma3"]
  kw = dict(
    config=GEMMA_LIKE, max_new_tokens=3, capture_attn=True, capture_values=True
  )
  gd = lm.greedy_generate(
    params, ids, prompt_mask=mask, attention="dense", **kw
  )
  blk = dict(attention="blockwise", block_size=4, pad_to="bucket", **kw)
  gb = lm.greedy_generate(params, ids, prompt_mask=mask, **blk)
  np.testing.assert_array_equal(gb.tokens, gd.tokens)
  pad = lm.bucket_length(ids.shape[1]) - ids.shape[1]
  assert pad == 3 and gb.key_pos.shape[1] == gd.key_pos.shape[1] + pad
  assert not np.asarray(gb.key_valid[:, :pad]).any()
  np.testing.assert_array_equal(gb.key_pos[:, pad:], gd.key_pos)
  np.testing.assert_allclose(gb.attn[..., pad:], gd.attn, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(gb.attn[..., :pad]), 0.0)
  valid = np.asarray(gd.key_valid)
  np.testing.assert_allclose(
    np.moveaxis(np.asarray(gb.values), 3, 1)[:, pad:][valid],
    np.moveaxis(np.asarray(gd.values), 3, 1)[valid],
    rtol=1e-5,
    atol=1e-5,
  )
  with count_traces() as traces:
    g11 = lm.greedy_generate(params, ids[:, 2:], prompt_mask=mask[:, 2:], **blk)
  assert traces["_generate_jit"] == 0
  assert g11.key_pos.shape == gb.key_pos.shape


@pytest.mark.parametrize(
  "config", [TINY, GEMMA_LIKE], ids=["smollm2-like", "gemma-like"]
)
def test_forward_pad_to_bucket_equals_unpadded_and_compiles_once(config):
  """forward(pad_to='bucket'): a 130-token call (one row also left-padded by its
  mask) runs padded to its bucket (160) on the blockwise path ('auto' from 128
  tokens); logits, queries, head outputs, captured attention rows, values and
  key positions equal the unpadded dense call's at every real position; a
  150-token call in the same bucket reuses the program."""
  params = _params(config)
  rng = np.random.default_rng(3)
  ids = rng.integers(0, config.vocab_size, size=(2, 150)).astype(np.int32)
  mask = np.ones((2, 150), bool)
  # row 1 of the 130-token call starts with 4 padding columns
  mask[1, 20:24] = False
  cap = lm.Capture(attn="rows", queries=True, head_outputs=True, values=True)
  rows = np.array([[129, 3], [64, 10]])
  kw = dict(config=config, capture=cap, attn_rows=rows)
  want, _, cw = lm.forward(
    params, ids[:, 20:], mask=mask[:, 20:], attention=("dense"), **kw
  )
  got, _, cg = lm.forward(
    params, ids[:, 20:], mask=mask[:, 20:], pad_to=("bucket"), **kw
  )
  assert lm.bucket_length(130) == 160 and lm.bucket_length(150) == 160
  m = mask[:, 20:]
  assert got.shape == want.shape == (2, 130, config.vocab_size)
  np.testing.assert_allclose(
    np.asarray(got)[m], np.asarray(want)[m], rtol=1e-5, atol=1e-5
  )
  for name in ("queries", "head_outputs"):  # [B, L, T, H, dh]
    assert cg[name].shape == cw[name].shape
    np.testing.assert_allclose(
      np.moveaxis(np.asarray(cg[name]), 1, 2)[m],
      np.moveaxis(np.asarray(cw[name]), 1, 2)[m],
      rtol=1e-5,
      atol=1e-5,
    )
  assert (
    cg["attn"].shape
    == cw["attn"].shape
    == (2, config.n_layers, config.n_heads, 2, 130)
  )
  np.testing.assert_allclose(cg["attn"], cw["attn"], rtol=1e-5, atol=1e-6)
  valid = np.asarray(cw["key_valid"])
  np.testing.assert_array_equal(cg["key_valid"], valid)
  np.testing.assert_array_equal(
    np.asarray(cg["key_pos"])[valid], np.asarray(cw["key_pos"])[valid]
  )
  np.testing.assert_allclose(
    np.moveaxis(np.asarray(cg["values"]), 3, 1)[valid],
    np.moveaxis(np.asarray(cw["values"]), 3, 1)[valid],
    rtol=1e-5,
    atol=1e-5,
  )
  with count_traces() as traces:
    longer, _, c150 = lm.forward(params, ids, mask=mask, pad_to="bucket", **kw)
  assert traces["_forward_jit"] == 0
  assert (
    longer.shape == (2, 150, config.vocab_size)
    and c150["attn"].shape[-1] == 150
  )


def test_bucketed_prefill_of_a_second_length_compiles_nothing():
  """forward(logits_at='last', pad_to='bucket') at 133 tokens, then at 150
  (bucket 160): the second call runs no new XLA compilation at all (the value
  checks run on the host and the padding is added there); the logits equal the
  unpadded call's."""
  params = _params(TINY)
  rng = np.random.default_rng(4)
  ids = rng.integers(0, TINY.vocab_size, size=(1, 150)).astype(np.int32)
  kw = dict(config=TINY, logits_at="last", pad_to="bucket")
  jax.block_until_ready(lm.forward(params, ids[:, 17:], **kw))
  compiles = []

  def listener(event, seconds, **_):
    if event == "/jax/core/compile/backend_compile_duration":
      compiles.append(seconds)

  jax.monitoring.register_event_duration_secs_listener(listener)
  try:
    got = jax.block_until_ready(lm.forward(params, ids, **kw)[0])
  finally:
    jax.monitoring.unregister_event_duration_listener(listener)
  assert compiles == []
  want = lm.forward(
    params, ids, config=TINY, logits_at="last", attention=("dense")
  )[0]
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_auto_choice_and_the_capture_rule():
  n = lm.BLOCKWISE_MIN_QUERIES
  assert resolve_impl("auto", n, False) == "blockwise"
  assert resolve_impl("auto", n - 1, False) == "dense"
  assert resolve_impl("auto", 1, False) == "dense"  # decode steps
  # every row captured: dense
  assert resolve_impl("auto", 10 * n, True) == "dense"
  with pytest.raises(ValueError, match="cannot capture every attention row"):
    resolve_impl("blockwise", 8, True)


def _temp_bytes(config, T, attention):
  params = jax.eval_shape(lambda: lm.init_params(jax.random.key(0), config))
  tokens = jax.ShapeDtypeStruct((1, T), jnp.int32)
  fn = jax.jit(
    lambda p, t: lm.forward(
      p, t, config=config, logits_at="last", attention=attention
    )[0]
  )
  return fn.lower(params, tokens).compile().memory_analysis().temp_size_in_bytes


def test_blockwise_prefill_memory_has_no_quadratic_score_tensor():
  """XLA's memory analysis of the compiled prefill: the dense program holds
  [H, T, T] score tensors (>= 4·H·T² bytes), the blockwise one a small fraction
  of that (its growth with T is measured by benchmarks/lm_context.py)."""
  cfg = dataclasses.replace(TINY, n_layers=1)
  T = 2048
  dense = _temp_bytes(cfg, T, "dense")
  blockwise = _temp_bytes(cfg, T, "blockwise")
  assert dense >= 4 * cfg.n_heads * T * T
  assert blockwise < dense / 8


def test_bucket_lengths():
  assert [
    lm.bucket_length(n) for n in (1, 5, 16, 17, 20, 21, 1000, 1025, 4096)
  ] == [
    16,
    16,
    16,
    20,
    20,
    24,
    1024,
    1280,
    4096,
  ]
  for n in range(1, 3000, 7):
    b = lm.bucket_length(n)
    assert n <= b <= max(16, 1.25 * n)
  assert {lm.bucket_length(n) for n in range(1025, 2049)} == {
    1280,
    1536,
    1792,
    2048,
  }
