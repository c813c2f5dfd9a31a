"""Tiny random-init checks of the decoder, cache, hooks and ablation (no weights
needed)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import lm
from jaxpapers.lm import _model
from tests.jit_util import count_traces
from tests.lm.numpy_ref import hf_weights_from_params, np_forward

TINY = lm.LMConfig(
  vocab_size=61,
  d_model=32,
  n_layers=2,
  n_heads=4,
  n_kv_heads=2,
  head_dim=8,
  ffn_dim=48,
  rope_base=100.0,
)
GEMMA_LIKE = lm.LMConfig(
  arch="gemma3",
  vocab_size=53,
  d_model=24,
  n_layers=3,
  n_heads=2,
  n_kv_heads=1,
  head_dim=12,
  ffn_dim=40,
  act="gelu_tanh",
  norm_eps=1e-6,
  rope_base=1e4,
  rope_base_local=50.0,
  sliding_window=3,
  layer_is_global=(False, False, True),
  qk_norm=True,
  post_norms=True,
  embed_scale=24**0.5,
  query_scale=0.3,
)


def _params(config, seed=0, std=0.3):
  p = lm.init_params(jax.random.key(seed), config, std=std)
  # non-trivial norm gains so that a wrong norm would show up
  k = jax.random.key(seed + 100)
  for name in p:
    if "norm" in name:
      k, sub = jax.random.split(k)
      p[name] = 1.0 + 0.2 * jax.random.normal(sub, p[name].shape)
  return p


TOKENS = np.array([3, 17, 5, 42, 8, 1, 29, 11, 7])


@pytest.mark.parametrize(
  "config", [GEMMA_LIKE, dataclasses.replace(TINY, rope_layout="interleaved")]
)
def test_forward_matches_float64_numpy(config):
  params = _params(config)
  logits, _, _ = lm.forward(params, TOKENS[None], config=config)
  ref = np_forward(
    hf_weights_from_params(
      params, config, unpermute=config.rope_layout == "interleaved"
    ),
    config,
    TOKENS,
  )
  np.testing.assert_allclose(np.asarray(logits[0]), ref, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("rows", [4, 6])
@pytest.mark.parametrize("config", [GEMMA_LIKE, TINY])
def test_row_chunked_output_and_ffn_match_float64_numpy(
  monkeypatch, config, rows
):
  # 2 x 9 = 18 rows: in chunks of 4 (4 of 4 and a last one of 2) or of 6 (3 of
  # 6, no rest)
  monkeypatch.setattr(_model, "ROW_CHUNK", rows)
  params = _params(config)
  tokens = np.stack([TOKENS, TOKENS[::-1]])
  # traced with ROW_CHUNK
  fn = jax.jit(lambda p, t: _model._forward(p, t, config=config)[0])
  logits = np.asarray(fn(params, tokens))
  hf = hf_weights_from_params(
    params, config, unpermute=config.rope_layout == "interleaved"
  )
  for b in range(2):
    ref = np_forward(hf, config, tokens[b])
    np.testing.assert_allclose(logits[b], ref, rtol=2e-4, atol=2e-4)


def test_row_chunk_size_is_the_fewest_most_equal_chunks():
  for rows in range(1, 3000, 7):
    size = lm.row_chunk_size(rows, 1024)
    n = -(-rows // size)
    # the fewest chunks of at most 1,024
    assert size <= 1024 and n == -(-rows // 1024)
    # as equal as possible: the last chunk is at most n - 1 short
    assert n * size - rows < n
  assert (
    lm.row_chunk_size(8192) == lm.ROW_CHUNK == 1024
    and lm.row_chunk_size(1280) == 640
  )
  with pytest.raises(ValueError, match="rows"):
    lm.row_chunk_size(0)


@pytest.mark.parametrize("n", [1, 4, 5, 9, 12])
def test_in_row_chunks_covers_every_row_once(n):
  x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
  seen = []

  def fn(a, b):
    seen.append(a.shape[0])
    return a * 2.0 + b[:, :1]

  got = _model._in_row_chunks(
    fn, jnp.asarray(x), jnp.asarray(x + 1.0), max_rows=4
  )
  np.testing.assert_array_equal(np.asarray(got), x * 2.0 + x[:, :1] + 1.0)
  # traced once for the mapped chunks, once for a shorter last chunk
  assert max(seen) <= 4


def test_interleaved_rope_on_permuted_weights_equals_rotate_half():
  params = _params(TINY)
  base, _, _ = lm.forward(params, TOKENS[None], config=TINY)
  d, H, KV, dh = TINY.d_model, TINY.n_heads, TINY.n_kv_heads, TINY.head_dim
  perm = dict(params)
  perm["wq"] = jnp.stack(
    [
      lm.permute_qk(np.asarray(w).reshape(d, -1).T, H).T.reshape(d, H, dh)
      for w in params["wq"]
    ]
  )
  perm["wk"] = jnp.stack(
    [
      lm.permute_qk(np.asarray(w).reshape(d, -1).T, KV).T.reshape(d, KV, dh)
      for w in params["wk"]
    ]
  )
  assert not np.allclose(perm["wq"], params["wq"])
  inter, _, _ = lm.forward(
    perm,
    TOKENS[None],
    config=dataclasses.replace(TINY, rope_layout=("interleaved")),
  )
  np.testing.assert_allclose(inter, base, rtol=1e-5, atol=1e-5)
  w = np.random.default_rng(0).normal(size=(KV * dh, 5))
  np.testing.assert_array_equal(lm.unpermute_qk(lm.permute_qk(w, KV), KV), w)


def test_gqa_equals_repeated_kv():
  params = _params(TINY)
  G = TINY.group_size
  full = dataclasses.replace(TINY, n_kv_heads=TINY.n_heads)
  rep = dict(
    params,
    wk=jnp.repeat(params["wk"], G, axis=2),
    wv=jnp.repeat(params["wv"], G, axis=2),
  )
  a, _, ca = lm.forward(
    params, TOKENS[None], config=TINY, capture=lm.Capture(attn=("all"))
  )
  b, _, cb = lm.forward(
    rep, TOKENS[None], config=full, capture=lm.Capture(attn=("all"))
  )
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(ca["attn"], cb["attn"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("config", [TINY, GEMMA_LIKE])
def test_kv_cached_decode_equals_full_forward(config):
  params = _params(config)
  full, _, _ = lm.forward(params, TOKENS[None], config=config)
  cache = lm.init_cache(config, 1, len(TOKENS) + 2)
  logits, cache, _ = lm.forward(
    params, TOKENS[None, :4], config=config, cache=cache
  )
  np.testing.assert_allclose(logits[0], full[0, :4], rtol=1e-4, atol=1e-4)
  for t in range(4, len(TOKENS)):
    logits, cache, _ = lm.forward(
      params,
      TOKENS[None, t : t + 1],
      config=config,
      cache=cache,
      logits_at=("last"),
    )
    np.testing.assert_allclose(logits[0], full[0, t], rtol=1e-4, atol=1e-4)
  assert int(cache.index) == len(TOKENS)


def test_left_padded_batch_matches_single_rows():
  params = _params(TINY)
  seqs = [TOKENS.tolist(), TOKENS[:5].tolist(), [9]]
  ids, mask = lm.left_pad(seqs)
  logits, _, _ = lm.forward(
    params, ids, config=TINY, mask=mask, logits_at=("last")
  )
  for i, s in enumerate(seqs):
    single, _, _ = lm.forward(
      params, np.array([s]), config=TINY, logits_at=("last")
    )
    np.testing.assert_allclose(logits[i], single[0], rtol=1e-4, atol=1e-4)


def test_captures_do_not_change_logits_and_are_consistent():
  params = _params(TINY)
  plain, _, _ = lm.forward(params, TOKENS[None], config=TINY)
  cap = lm.Capture(
    attn="all", values=True, queries=True, head_outputs=True, residual=True
  )
  logits, _, c = lm.forward(params, TOKENS[None], config=TINY, capture=cap)
  np.testing.assert_array_equal(plain, logits)
  T, L, H, KV, dh = (
    len(TOKENS),
    TINY.n_layers,
    TINY.n_heads,
    TINY.n_kv_heads,
    TINY.head_dim,
  )
  assert c["attn"].shape == (1, L, H, T, T)
  assert c["values"].shape == (1, L, KV, T, dh)
  assert c["queries"].shape == (1, L, T, H, dh)
  assert c["head_outputs"].shape == (1, L, T, H, dh)
  assert c["residual"].shape == (1, L, T, TINY.d_model)
  np.testing.assert_allclose(c["attn"].sum(-1), 1.0, rtol=1e-5)
  assert np.all(np.triu(np.asarray(c["attn"][0, 0, 0]), 1) == 0)  # causal
  # z_h = Σ_j α_hj v_{kv(h), j}
  kv = np.arange(H) // TINY.group_size
  z = np.einsum(
    "lhts,lhsd->lthd", c["attn"][0], np.asarray(c["values"][0])[:, kv]
  )
  np.testing.assert_allclose(c["head_outputs"][0], z, rtol=1e-4, atol=1e-5)
  # queries are the raw projections of the normed residual
  h0 = lm.rms_norm(c["residual"][0, 0], params["attn_norm"][0], TINY.norm_eps)
  np.testing.assert_allclose(
    c["queries"][0, 0],
    jnp.einsum("td,dhk->thk", h0, params["wq"][0]),
    rtol=1e-4,
    atol=1e-5,
  )
  last, _, cl = lm.forward(
    params, TOKENS[None], config=TINY, capture=lm.Capture(attn=("last"))
  )
  np.testing.assert_allclose(cl["attn"][0], c["attn"][0, :, :, -1], rtol=1e-6)


def test_zero_q_ablation_gives_uniform_causal_attention_only_for_masked_heads():
  params = _params(TINY)
  mask = np.zeros((TINY.n_layers, TINY.n_heads), bool)
  mask[1, 2] = True
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mode="zero_q")
  cap = lm.Capture(attn="all")
  _, _, base = lm.forward(params, TOKENS[None], config=TINY, capture=cap)
  _, _, c = lm.forward(
    params, TOKENS[None], config=TINY, capture=cap, ablation=abl
  )
  T = len(TOKENS)
  uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
  np.testing.assert_allclose(c["attn"][0, 1, 2], uniform, rtol=1e-5, atol=1e-6)
  keep = ~mask
  np.testing.assert_allclose(
    np.asarray(c["attn"][0])[keep], np.asarray(base["attn"][0])[keep], rtol=1e-6
  )
  none = lm.HeadAblation(mask=jnp.zeros_like(mask), mode="zero_q")
  a, _, _ = lm.forward(params, TOKENS[None], config=TINY, ablation=none)
  b, _, _ = lm.forward(params, TOKENS[None], config=TINY)
  np.testing.assert_array_equal(a, b)


def test_zero_out_ablation_equals_removing_the_head_from_wo():
  params = _params(TINY)
  mask = np.zeros((TINY.n_layers, TINY.n_heads), bool)
  mask[0, 1] = True
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mode="zero_out")
  a, _, _ = lm.forward(params, TOKENS[None], config=TINY, ablation=abl)
  cut = dict(params, wo=params["wo"].at[0, 1].set(0.0))
  b, _, _ = lm.forward(cut, TOKENS[None], config=TINY)
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_mean_q_ablation_of_a_whole_layer_equals_replaced_queries():
  params = _params(TINY)
  mean = lm.mean_queries(
    params, [TOKENS.tolist(), TOKENS[:4].tolist()], config=TINY, batch_size=2
  )
  _, _, c = lm.forward(
    params, TOKENS[None], config=TINY, capture=lm.Capture(queries=True)
  )
  q = np.asarray(c["queries"][0])  # [L, T, H, dh]
  ref = (q.sum(1) + q[:, :4].sum(1)) / (len(TOKENS) + 4)
  np.testing.assert_allclose(mean, ref, rtol=1e-4, atol=1e-6)
  mask = np.zeros((TINY.n_layers, TINY.n_heads), bool)
  mask[0] = True
  abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean, mode="mean_q")
  a, _, _ = lm.forward(params, TOKENS[None], config=TINY, ablation=abl)
  # With every head of layer 0 given the same query at all positions, the
  # replaced layer equals a model whose wq maps to that constant: emulate via a
  # numpy forward with fixed queries.
  w = hf_weights_from_params(params, TINY)
  from tests.lm import numpy_ref

  orig = numpy_ref._rms
  T = len(TOKENS)
  x = np.asarray(params["embed"], np.float64)[TOKENS]
  h = orig(x, w["layers"][0]["attn_norm"], TINY.norm_eps)
  k, v = h @ w["layers"][0]["k"].T, h @ w["layers"][0]["v"].T
  dh = TINY.head_dim
  out = np.zeros((T, TINY.n_heads * dh))
  pos = np.arange(T, dtype=np.float64)
  for hh in range(TINY.n_heads):
    g = hh // TINY.group_size
    qh = numpy_ref._rope_half(
      np.tile(np.asarray(mean[0, hh], np.float64), (T, 1)), pos, TINY.rope_base
    )
    kh = numpy_ref._rope_half(k[:, g * dh : (g + 1) * dh], pos, TINY.rope_base)
    s = np.where(
      np.tril(np.ones((T, T), bool)), qh @ kh.T * TINY.scale, -np.inf
    )
    al = np.exp(s - s.max(-1, keepdims=True))
    al /= al.sum(-1, keepdims=True)
    out[:, hh * dh : (hh + 1) * dh] = al @ v[:, g * dh : (g + 1) * dh]
  x = x + out @ w["layers"][0]["o"].T
  hf = orig(x, w["layers"][0]["ffn_norm"], TINY.norm_eps)
  gt = hf @ w["layers"][0]["gate"].T
  x = (
    x
    + ((gt / (1 + np.exp(-gt))) * (hf @ w["layers"][0]["up"].T))
    @ w["layers"][0]["down"].T
  )
  # the remaining layer, run from residual x
  rest = dict(w, layers=w["layers"][1:])
  cfg1 = dataclasses.replace(TINY, n_layers=1)
  ref_logits = _np_from_residual(rest, cfg1, x)
  np.testing.assert_allclose(a[0], ref_logits, rtol=2e-4, atol=2e-4)


def _np_from_residual(w, config, x):
  """np_forward starting from a given residual stream (embedding replaced)."""
  T = x.shape[0]
  fake = dict(w, embed=x)
  return np_forward(fake, config, np.arange(T))


def test_decoder_module_equals_functional_forward():
  model = lm.Decoder(TINY, rngs=nnx.Rngs(0))
  logits, _, _ = model(TOKENS[None])
  ref, _, _ = lm.forward(model.params(), TOKENS[None], config=TINY)
  np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-6)
  graphdef, state = nnx.split(model)
  assert len(jax.tree.leaves(state)) == len(lm.param_shapes(TINY))
  model2 = nnx.merge(graphdef, state)
  np.testing.assert_allclose(model2(TOKENS[None])[0], ref, rtol=1e-4, atol=1e-6)


def test_greedy_generate_matches_repeated_full_forward_and_batches():
  params = _params(TINY, std=0.5)
  prompt = TOKENS[:5].tolist()
  g = lm.greedy_generate(
    params,
    np.array(prompt),
    config=TINY,
    max_new_tokens=6,
    capture_attn=True,
    capture_values=True,
  )
  # The reference: a full forward pass per generated token, always at the final
  # length 11 (one compiled program); the right padding cannot reach the
  # position read, the decoder is causal.
  seq = list(prompt)
  for _ in range(6):
    padded = np.array([seq + [0] * (11 - len(seq))])
    logits, _, c = lm.forward(
      params, padded, config=TINY, capture=lm.Capture(attn=("all"))
    )
    seq.append(int(jnp.argmax(logits[0, len(seq) - 1])))
  assert g.tokens[0].tolist() == seq[5:]
  assert int(g.num_steps[0]) == 6
  # attention rows: step t attends over prompt + t generated tokens (the last
  # pass above saw the first 10 tokens, so its rows 4 .. 9 are the ones
  # generation computed)
  assert g.attn.shape == (1, 6, TINY.n_layers, TINY.n_heads, 5 + 6)
  for t in range(6):
    row = c["attn"][0, :, :, 4 + t, : 5 + t]
    np.testing.assert_allclose(
      g.attn[0, t, :, :, : 5 + t], row, rtol=1e-4, atol=1e-6
    )
  # stop ids: stop at the third generated token, which is not recorded
  stop = seq[7]
  # the captures of `g`, so its compiled program (stop ids are data)
  g2 = lm.greedy_generate(
    params,
    np.array(prompt),
    config=TINY,
    max_new_tokens=6,
    stop_ids=(stop,),
    capture_attn=True,
    capture_values=True,
  )
  first = seq[5:].index(stop)
  assert int(g2.num_steps[0]) == first
  assert g2.tokens[0, :first].tolist() == seq[5 : 5 + first]
  assert np.all(np.asarray(g2.tokens[0, first:]) == -1)
  # batch with left padding gives the same tokens as the single row
  ids, mask = lm.left_pad([prompt, TOKENS[:3].tolist()])
  gb = lm.greedy_generate(
    params, ids, config=TINY, max_new_tokens=6, prompt_mask=mask
  )
  assert gb.tokens[0].tolist() == g.tokens[0].tolist()
  g3 = lm.greedy_generate(params, TOKENS[:3], config=TINY, max_new_tokens=6)
  assert gb.tokens[1].tolist() == g3.tokens[0].tolist()


def test_ablation_mask_is_data_no_recompile_and_sampling():
  params = _params(TINY, std=0.5)
  mean = jnp.zeros((TINY.n_layers, TINY.n_heads, TINY.head_dim))
  outs = []
  with count_traces() as traces:
    for i in range(3):
      mask = np.zeros((TINY.n_layers, TINY.n_heads), bool)
      mask.flat[i] = True
      abl = lm.HeadAblation(mask=jnp.asarray(mask), mean=mean, mode="mean_q")
      outs.append(
        lm.greedy_generate(
          params, TOKENS[:4], config=TINY, max_new_tokens=4, ablation=abl
        )
      )
  # a new mask is data: at most the first call traces
  assert traces["_generate_jit"] <= 1
  s1 = lm.generate(
    params,
    TOKENS[:4],
    config=TINY,
    max_new_tokens=5,
    temperature=1.0,
    key=jax.random.key(1),
  )
  s2 = lm.generate(
    params,
    TOKENS[:4],
    config=TINY,
    max_new_tokens=5,
    temperature=1.0,
    key=jax.random.key(1),
  )
  assert s1.tokens.tolist() == s2.tokens.tolist()
  assert np.all(np.asarray(s1.tokens) >= 0)


def test_bad_inputs_raise_clear_errors():
  params = _params(TINY)
  with pytest.raises(ValueError, match="tokens"):
    lm.forward(params, np.zeros((3,), np.int32), config=TINY)
  with pytest.raises(ValueError, match="ablation.mask"):
    lm.forward(
      params,
      TOKENS[None],
      config=TINY,
      ablation=lm.HeadAblation(mask=jnp.zeros((3, 3), bool), mode="zero_q"),
    )
  with pytest.raises(ValueError, match="mean"):
    lm.forward(
      params,
      TOKENS[None],
      config=TINY,
      ablation=lm.HeadAblation(mask=jnp.zeros((2, 4), bool), mode="mean_q"),
    )
  with pytest.raises(ValueError, match="n_kv_heads"):
    lm.LMConfig(
      vocab_size=10,
      d_model=8,
      n_layers=1,
      n_heads=3,
      n_kv_heads=2,
      head_dim=4,
      ffn_dim=8,
    )
  with pytest.raises(ValueError, match="left-pad"):
    lm.greedy_generate(
      params,
      np.array([[1, 2, 0]]),
      config=TINY,
      max_new_tokens=2,
      prompt_mask=np.array([[True, True, False]]),
    )
  with pytest.raises(ValueError, match="params"):
    lm.validate_params({k: v for k, v in params.items() if k != "wq"}, TINY)
