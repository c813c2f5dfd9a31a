"""Teacher cache (exact top-k, resumable), token log-probabilities, bits per
byte, student."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.sola as S

W = np.random.default_rng(0).normal(size=(13, 13)).astype(np.float32)


def logits_fn(tokens):
  return jnp.asarray(W)[tokens] * 3.0


def test_cache_is_exact_and_resumable(tmp_path):
  rng = np.random.default_rng(1)
  toks = rng.integers(0, 13, (5, 6)).astype(np.int32)
  lens = np.array([6, 4, 6, 2, 5], np.int32)
  cache = S.cache_teacher(
    logits_fn, toks, lens, top_k=4, batch_size=2, directory=tmp_path
  )
  full = np.asarray(jax.nn.log_softmax(logits_fn(toks)))
  for n, t in [(0, 0), (3, 1), (4, 5)]:
    order = np.argsort(-full[n, t])[:4]
    np.testing.assert_array_equal(cache.ids[n, t], order)
    # float16
    np.testing.assert_allclose(cache.logp[n, t], full[n, t, order], atol=2e-3)
  assert cache.tok_logp[0, 0] == pytest.approx(full[0, 0, toks[0, 1]], abs=1e-5)
  assert cache.tok_logp[1, 3] == 0.0  # past the end of a length-4 row
  assert cache.bytes_per_token <= 4 * 4 + 2 * 4 + 4
  # a rerun reads the shards back (the teacher is never called)
  again = S.cache_teacher(
    lambda t: (_ for _ in ()).throw(AssertionError("recomputed")),
    toks,
    lens,
    top_k=4,
    batch_size=2,
    directory=tmp_path,
  )
  np.testing.assert_array_equal(again.ids, cache.ids)
  with pytest.raises(ValueError, match="other inputs"):
    S.cache_teacher(
      logits_fn,
      toks[:, ::-1].copy(),
      lens,
      top_k=4,
      batch_size=2,
      directory=tmp_path,
    )


def test_a_damaged_shard_is_recomputed_with_a_warning(tmp_path, caplog):
  rng = np.random.default_rng(3)
  toks = rng.integers(0, 13, (4, 6)).astype(np.int32)
  lens = np.full(4, 6, np.int32)
  cache = S.cache_teacher(
    logits_fn, toks, lens, top_k=3, batch_size=2, directory=tmp_path
  )
  shard = tmp_path / "shard_00001.npz"
  raw = bytearray(shard.read_bytes())
  # one flipped bit inside the stored arrays or their zip frame
  raw[len(raw) // 2] ^= 0x10
  shard.write_bytes(bytes(raw))
  calls = []

  def counting(t):
    calls.append(t.shape)
    return logits_fn(t)

  with caplog.at_level("WARNING"):
    again = S.cache_teacher(
      counting, toks, lens, top_k=3, batch_size=2, directory=tmp_path
    )
  assert calls == [(2, 6)]  # only the damaged shard is computed again
  assert "shard_00001.npz" in caplog.text
  np.testing.assert_array_equal(again.ids, cache.ids)
  np.testing.assert_array_equal(again.logp, cache.logp)


def test_token_logp_and_bits_per_byte():
  rng = np.random.default_rng(2)
  logits = rng.normal(size=(2, 4, 5)).astype(np.float32)
  toks = rng.integers(0, 5, (2, 4)).astype(np.int32)
  lens = np.array([4, 2], np.int32)
  tl = np.asarray(S.token_logp(logits, toks, lens))
  lsm = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  assert tl[0, 2] == pytest.approx(lsm[0, 2, toks[0, 3]], rel=1e-5)
  assert tl[1, 1] == 0.0 and tl[0, 3] == 0.0
  nb = np.array([7, 3])
  want = -tl.sum() / (10 * math.log(2))
  assert float(S.bits_per_byte(jnp.asarray(tl.sum(1)), nb)) == pytest.approx(
    want, rel=1e-6
  )


def test_student_is_causal():
  cfg = S.StudentConfig(
    vocab_size=11, d_model=8, n_layers=2, n_heads=2, ffn_dim=16, max_len=6
  )
  p = S.init_student(jax.random.key(0), cfg)
  t = np.array([[1, 2, 3, 4, 5]], np.int32)
  t2 = t.copy()
  t2[0, 3] = 9
  a = np.asarray(S.student_logits(p, t, cfg))
  b = np.asarray(S.student_logits(p, t2, cfg))
  assert a.shape == (1, 5, 11)
  np.testing.assert_allclose(a[0, :3], b[0, :3], atol=1e-6)
  assert np.abs(a[0, 3:] - b[0, 3:]).max() > 1e-6
