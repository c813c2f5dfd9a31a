"""The toy decoder's loss and config, and the parametric-recall control
probes."""

import functools

import chex
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm, locos


class ToyLossVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_toy_lm_loss_against_a_float64_reference(self):
    rng = np.random.default_rng(0)
    B, T, V = 3, 6, 7
    logits = rng.normal(size=(B, T, V))
    tokens = rng.integers(0, V, (B, T))
    # one target the argmax gets right
    tokens[0, 3] = int(np.argmax(logits[0, 2]))
    mask = np.zeros((B, T))
    # mask[:, -1] unused
    mask[0, 2], mask[1, 4], mask[2, 0], mask[2, 5] = 1.0, 1.0, 0.5, 1.0
    model = lambda tok: (jnp.asarray(logits, jnp.float32), None, None)
    loss_fn = self.variant(functools.partial(locos.toy_lm_loss, model))
    loss, acc = loss_fn(jnp.asarray(tokens), jnp.asarray(mask, jnp.float32))
    # reference: position t predicts tokens[t + 1]; weights mask[:, :-1]
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    w = mask[:, :-1]
    nll = -np.take_along_axis(logp[:, :-1], tokens[:, 1:, None], -1)[..., 0]
    hit = np.argmax(logits[:, :-1], -1) == tokens[:, 1:]
    want = ((nll * w).sum() / w.sum(), (hit * w).sum() / w.sum())
    chex.assert_trees_all_close((loss, acc), want, rtol=1e-5)
    # the hand-placed hit counts, the others do not
    self.assertTrue(0 < float(acc) < 1)


def test_toy_model_config_matches_the_task():
  task = locos.ToyTask(
    num_names=4, num_landmarks=4, num_fillers=4, prompt_len=16, max_needles=2
  )
  cfg = locos.toy_model_config(
    task, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48
  )
  assert isinstance(cfg, lm.LMConfig)
  assert cfg.vocab_size == len(task.vocab) and cfg.eos_ids == (
    task.tokenizer().eos_id,
  )
  assert (cfg.head_dim, cfg.n_kv_heads, cfg.rope_base) == (8, 2, 1000.0)


class _CharTokenizer:
  """Characters as ids; a chat template of its own (to tell it from ChatML)."""

  def encode(self, text):
    return [ord(ch) for ch in text]

  def apply_chat_template(self, msgs):
    return (
      "".join(f"[{m['role']}] {m['content']}\n" for m in msgs) + "[assistant] "
    )


def test_parametric_probes_ask_for_the_city_with_no_context():
  tok = _CharTokenizer()
  pairs = [("Eiffel Tower", "Paris"), ("Colosseum", "Rome")]
  plain = locos.parametric_probes(tok, pairs)
  q = "In which city is the Colosseum? Answer with the city name only."
  assert "".join(map(chr, plain[1].prompt_ids)) == (
    f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\nThe Colosseum "
    "is in the city of"
  )
  assert [(p.answer, p.kind, p.needle_span) for p in plain] == [
    ("Paris", "parametric", (0, 0)),
    ("Rome", "parametric", (0, 0)),
  ]
  templ = locos.parametric_probes(tok, pairs, system_prompt=True)
  assert "".join(map(chr, templ[1].prompt_ids)) == (
    f"[user] {q}\n[assistant] The Colosseum is in the city of"
  )
  assert len(locos.parametric_probes(tok)) == len(locos.LANDMARKS)
