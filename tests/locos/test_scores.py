"""LOCOS formulas, GQA handling and query-mean ablation (planted heads:
test_pin_locos.py)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpapers import lm, locos
from jaxpapers.locos import _toy

TINY = lm.LMConfig(
  vocab_size=37,
  d_model=32,
  n_layers=2,
  n_heads=4,
  n_kv_heads=2,
  head_dim=8,
  ffn_dim=48,
  rope_base=100.0,
)
TOKENS = np.array([3, 17, 5, 22, 8, 1, 29, 11, 7, 30])


def _params(config=TINY, seed=0):
  return lm.init_params(jax.random.key(seed), config, std=0.3)


# --------------------------------------------------------------------- formulas


def test_phi_sums_to_the_heads_direct_logit_attribution():
  params = _params()
  cap = lm.Capture(attn="all", values=True, head_outputs=True)
  _, _, c = lm.forward(params, TOKENS[None], config=TINY, capture=cap)
  kv_map = np.arange(TINY.n_heads) // TINY.group_size
  u = np.asarray(params["embed"][13])
  t = len(TOKENS) - 1
  for l in range(TINY.n_layers):
    phi = locos.phi_per_position(
      c["attn"][0, l, :, t], c["values"][0, l], params["wo"][l], u, kv_map
    )
    # DLA of head h: u · (z_t W_O^{(h)}), from the captured head output z
    # (float64)
    z = np.asarray(c["head_outputs"][0, l, t], np.float64)  # [H, dh]
    wo = np.asarray(params["wo"][l], np.float64)  # [H, dh, d]
    dla = np.einsum("hk,hkd,d->h", z, wo, u.astype(np.float64))
    np.testing.assert_allclose(
      np.asarray(phi).sum(-1), dla, rtol=1e-4, atol=1e-6
    )


def test_gqa_path_equals_repeated_kv_path():
  rng = np.random.default_rng(0)
  H, KV, K, dh, d = 6, 2, 7, 4, 5
  attn = rng.dirichlet(np.ones(K), size=H)
  values = rng.normal(size=(KV, K, dh))
  wo = rng.normal(size=(H, dh, d))
  u = rng.normal(size=d)
  kv_map = np.arange(H) // (H // KV)
  gqa = locos.phi_per_position(attn, values, wo, u, kv_map)
  rep = locos.phi_per_position(
    attn, np.repeat(values, H // KV, axis=0), wo, u, np.arange(H)
  )
  np.testing.assert_allclose(gqa, rep, rtol=1e-6)
  # float64 brute force
  ref = np.array(
    [
      [attn[h, j] * values[h // 3, j] @ (wo[h] @ u) for j in range(K)]
      for h in range(H)
    ]
  )
  np.testing.assert_allclose(gqa, ref, rtol=1e-5, atol=1e-6)
  # the whole detector on a GQA model equals the detector on its repeated-KV
  # twin
  params = _params()
  full = dataclasses.replace(TINY, n_kv_heads=TINY.n_heads)
  G = TINY.group_size
  rep_params = dict(
    params,
    wk=jnp.repeat(params["wk"], G, axis=2),
    wv=jnp.repeat(params["wv"], G, axis=2),
  )
  tok = _toy.ToyTokenizer([f"t{i}" for i in range(TINY.vocab_size)])
  g = lm.greedy_generate(params, TOKENS, config=TINY, max_new_tokens=3)
  answer = tok.decode(g.tokens[0, :2].tolist())
  trial = locos.Trial(TOKENS, (2, 5), answer)
  a = locos.locos_trial(params, TINY, trial, tok, max_steps=3, stop_ids=())
  b = locos.locos_trial(rep_params, full, trial, tok, max_steps=3, stop_ids=())
  assert a.answer_steps == b.answer_steps == [0, 1]
  for name in a.detectors:
    np.testing.assert_allclose(
      a.detectors[name], b.detectors[name], rtol=1e-4, atol=1e-6
    )


def test_off_needle_rescaling_balances_uniform_attention_for_every_haystack_length():
  for K in (5, 20, 200):
    for n in (1, 3):
      needle = np.zeros(K, bool)
      needle[2 : 2 + n] = True
      w = np.full(K, 1.0 / K)
      lp, lm_ = locos.contrast(w, needle, np.ones(K, bool))
      np.testing.assert_allclose(lp, lm_)  # S = 0 under uniform attention
      lp, lm_ = locos.contrast(
        np.where(needle, 1.0 / n, 0.0), needle, np.ones(K, bool)
      )
      assert lp == pytest.approx(1.0) and lm_ == 0.0


class _CharTok:
  """Tokenizer stub for answer-step matching: token i decodes to pieces[i]."""

  def __init__(self, pieces, answer_ids):
    self.pieces, self.answer_ids = pieces, answer_ids

  def encode(self, text, add_bos=False):
    return self.answer_ids

  def decode(self, ids):
    return "".join(self.pieces[i] for i in ids)


def test_answer_steps_exact_then_character_overlap():
  pieces = ["The", " answer", " is", " Yu", "ki", ".", "yuki"]
  tok = _CharTok(pieces, [3, 4])
  assert locos.answer_steps([0, 1, 2, 3, 4, 5], "Yuki", tok) == [3, 4]
  # no exact id match: fall back to a case-insensitive character match
  tok = _CharTok(pieces, [99])
  assert locos.answer_steps([0, 2, 3, 4, 5], "yuki", tok) == [2, 3]
  assert locos.answer_steps([0, 6, 5], "YUKI", tok) == [1]
  assert locos.answer_steps([0, 1, 2], "Yuki", tok) == []


def test_rouge_metrics():
  assert locos.rouge1_recall("Yuki Tanaka", "It was yuki.") == 0.5
  assert locos.rouge_l("a b c d", "a c d") == pytest.approx(2 * 1 * 0.75 / 1.75)
  assert locos.rouge_l("x", "") == 0.0


def test_top_random_heads_and_bootstrap():
  s = np.array([[0.1, 0.9, 0.3], [0.8, -1.0, 0.2]])
  assert locos.top_heads(s, 2).tolist() == [
    [False, True, False],
    [True, False, False],
  ]
  assert locos.rank_heads(s)[:3] == [(0, 1), (1, 0), (0, 2)]
  r = locos.random_heads(jax.random.key(0), 2, 3, 4)
  assert r.sum() == 4 and r.shape == (2, 3)
  assert locos.jaccard_top_k(s, s, 3) == 1.0
  lo, hi = locos.bootstrap_ci(
    np.r_[np.zeros(50), np.ones(50)], num_resamples=500
  )
  assert 0.35 < lo < 0.5 < hi < 0.65
  with pytest.raises(ValueError, match="k must"):
    locos.top_heads(s, 7)


# --------------------------------------------------------------------- ablation


def test_query_mean_ablation_changes_only_that_heads_attention():
  params = _params()
  mean = lm.mean_queries(
    params, [TOKENS.tolist(), TOKENS[3:].tolist()], config=TINY
  )
  mask = np.zeros((TINY.n_layers, TINY.n_heads), bool)
  mask[1, 2] = True
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean, mode="mean_q")
  cap = lm.Capture(attn="all", queries=True)
  _, _, base = lm.forward(params, TOKENS[None], config=TINY, capture=cap)
  _, _, ab = lm.forward(
    params, TOKENS[None], config=TINY, capture=cap, ablation=abl
  )
  a0, a1 = np.asarray(base["attn"][0]), np.asarray(ab["attn"][0])
  np.testing.assert_array_equal(a0[0], a1[0])  # earlier layer untouched
  # other heads
  np.testing.assert_allclose(a0[1, [0, 1, 3]], a1[1, [0, 1, 3]], rtol=1e-6)
  assert np.abs(a0[1, 2] - a1[1, 2]).max() > 1e-3  # the ablated head changed
  # and its attention is that of the constant mean query
  # capture is pre-ablation
  np.testing.assert_allclose(ab["queries"][0], base["queries"][0])
