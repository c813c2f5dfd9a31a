"""The ALM-style chunk loss against a float64 numpy transcription and its closed
forms."""

import jax
import numpy as np
import pytest

import jaxpapers.sola as S


def bkl64(lt, ls):
  """KL(Bernoulli(e^lt) || Bernoulli(e^ls)) in float64, straight from the definition."""
  a, b = np.exp(lt), np.exp(ls)
  return a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b))


def random_blocks(rng, n_tok, n_used):
  """Non-decreasing block ids 0..n_used-1 over n_tok tokens, each block
  non-empty."""
  cuts = np.sort(rng.choice(np.arange(1, n_tok), n_used - 1, replace=False))
  blk = np.zeros(n_tok, np.int64)
  for c in cuts:
    blk[c:] += 1
  return blk.astype(np.int32)


def reference(t_lp, t_blk, s_lp, s_blk, n_blocks, mask=None):
  """Loops in float64: chunk sums, Bernoulli KL, mean over blocks; and d loss /
  d s_lp."""
  lead = t_lp.shape[:-1]
  per, used, grad = [], [], np.zeros(s_lp.shape)
  for idx in np.ndindex(*lead):
    for k in range(n_blocks):
      ti = [p for p in range(t_blk.shape[-1]) if t_blk[idx][p] == k]
      si = [p for p in range(s_blk.shape[-1]) if s_blk[idx][p] == k]
      on = bool(ti and si) if mask is None else bool(mask[idx][k])
      if not on:
        continue
      lt = sum(float(t_lp[idx][p]) for p in ti)
      ls = sum(float(s_lp[idx][p]) for p in si)
      # the documented clip: chunk log-likelihoods at most -1e-6 (no gradient
      # above it)
      clipped = ls > -1e-6
      lt, ls = min(lt, -1e-6), min(ls, -1e-6)
      per.append(bkl64(lt, ls))
      a, b = np.exp(lt), np.exp(ls)
      g = 0.0 if clipped else -a + (1 - a) * b / (1 - b)  # d KL / d ls
      used.append((idx, si, g))
  n = max(len(per), 1)
  for idx, si, g in used:
    for p in si:
      grad[idx + (p,)] += g / n
  return sum(per) / n, grad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_float64_transcription_value_and_gradient(seed):
  rng = np.random.default_rng(seed)
  B, T_t, T_s, K = 3, 9, 7, 6
  t_blk = np.full((B, T_t), -1, np.int32)
  s_blk = np.full((B, T_s), -1, np.int32)
  for b in range(B):
    # both sides partitioned into the same number of blocks; -1 padding at the
    # end
    n_used = int(rng.integers(1, 6))
    t_blk[b, : T_t - 2] = random_blocks(rng, T_t - 2, n_used)
    s_blk[b, : T_s - 1] = random_blocks(rng, T_s - 1, n_used)
  # token probabilities of 0.05 .. 0.95: chunk probabilities away from 0 and 1
  t_lp = np.log(rng.uniform(0.05, 0.95, (B, T_t)))
  s_lp = np.log(rng.uniform(0.05, 0.95, (B, T_s)))
  want, want_g = reference(t_lp, t_blk, s_lp, s_blk, K)
  f = lambda x: S.alm_chunk_loss(
    t_lp.astype(np.float32), t_blk, x, s_blk, n_blocks=K
  )[0]
  got, g = jax.value_and_grad(f)(s_lp.astype(np.float32))
  np.testing.assert_allclose(float(got), want, rtol=2e-4, atol=1e-6)
  np.testing.assert_allclose(np.asarray(g), want_g, rtol=2e-3, atol=1e-6)
  # an explicit mask of blocks
  mask = rng.random((B, K)) < 0.5
  mask[0, 0] = True
  want_m, _ = reference(t_lp, t_blk, s_lp, s_blk, K, mask=mask)
  got_m = S.alm_chunk_loss(t_lp, t_blk, s_lp, s_blk, n_blocks=K, mask=mask)[0]
  np.testing.assert_allclose(float(got_m), want_m, rtol=2e-4, atol=1e-6)


def test_identical_tokenizers_reduce_to_per_token_likelihood_matching():
  import pydoc_data.topics

  docs = list(pydoc_data.topics.topics.values())[:10]
  tok = S.train_bpe(docs, vocab_size=200, style="metaspace")
  texts = [
    "The quick brown fox jumps over the lazy dog.",
    "def f(x):\n    return x + 1",
  ]
  al = S.align_texts(texts, tok, tok, max_len=40)
  rng = np.random.default_rng(0)
  n, t = al.t_tokens.shape
  t_lp = np.log(rng.uniform(0.05, 0.95, (n, t)))
  s_lp = np.log(rng.uniform(0.05, 0.95, (n, t)))
  # every token is its own block, in order
  for b in range(n):
    nt = al.t_len[b] - 1
    np.testing.assert_array_equal(al.t_block[b, :nt], np.arange(nt))
    np.testing.assert_array_equal(al.s_block[b], al.t_block[b])
  loss, aux = S.alm_chunk_loss(t_lp, al.t_block, s_lp, al.s_block, n_blocks=t)
  valid = np.arange(t)[None, :] < (al.t_len[:, None] - 1)
  # the binarised KL of each realised token's probability
  per_token = bkl64(t_lp, s_lp)
  np.testing.assert_allclose(float(loss), per_token[valid].mean(), rtol=1e-4)
  np.testing.assert_allclose(
    np.asarray(aux["l_s"])[valid], s_lp[valid], rtol=1e-5
  )


def test_zero_iff_chunk_likelihoods_agree_and_real_blocks_partition_the_text():
  import pydoc_data.topics

  docs = list(pydoc_data.topics.topics.values())[:10]
  t_tok = S.train_bpe(docs, vocab_size=300, style="bytelevel")
  s_tok = S.train_bpe(docs, vocab_size=160, style="metaspace")
  texts = ["Café au lait, naïve x = 1", "for i in range(3):\n    print(i)"]
  al = S.align_texts(texts, t_tok, s_tok, max_len=40)
  rng = np.random.default_rng(1)
  t_lp = np.log(rng.uniform(0.3, 0.99, al.t_tokens.shape)).astype(np.float32)
  t_lp = np.where(al.t_block >= 0, t_lp, 0.0)
  K = al.blk_valid.shape[1]
  l_t = np.asarray(S.chunk_logliks(t_lp, al.t_block, K))
  # the blocks partition every kept token: the block sums add up to the window's
  # total
  np.testing.assert_allclose(l_t.sum(1), t_lp.sum(1), rtol=1e-5)
  assert ((l_t != 0) == al.blk_valid).all()
  # a student whose block likelihoods equal the teacher's (spread over its own
  # tokens) has zero loss, however differently it segments the block
  s_lp = np.zeros(al.s_tokens.shape, np.float32)
  for b in range(len(texts)):
    for k in np.flatnonzero(al.blk_valid[b]):
      pos = np.flatnonzero(al.s_block[b] == k)
      s_lp[b, pos] = l_t[b, k] / len(pos)
  loss, aux = S.alm_chunk_loss(t_lp, al.t_block, s_lp, al.s_block, n_blocks=K)
  assert abs(float(loss)) < 1e-5
  # and any disagreement is strictly positive (Gibbs)
  loss2, _ = S.alm_chunk_loss(
    t_lp, al.t_block, s_lp * 1.3, al.s_block, n_blocks=K
  )
  assert float(loss2) > 1e-3


def test_probability_one_chunks_stay_finite():
  t_lp = np.array([[0.0, -1e-9, -0.5]], np.float32)
  s_lp = np.array([[0.0, -2.0, -1e-12]], np.float32)
  blk = np.array([[0, 1, 2]], np.int32)
  f = lambda x: S.alm_chunk_loss(t_lp, blk, x, blk, n_blocks=3)[0]
  v, g = jax.value_and_grad(f)(s_lp)
  assert np.isfinite(float(v)) and np.isfinite(np.asarray(g)).all()
