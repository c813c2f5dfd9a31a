"""How a chat LM reads LAnR's contexts: its template, two worked examples,
[PRED] and [DOC]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxpapers import lm
from jaxpapers.lanr._data import WordTokenizer
from jaxpapers.lanr._loop import lm_hidden_fn, lm_prefix_fn, prefill_prefix

# Two worked examples shown before every question (chat turns of the reader's
# own template): a 2-hop and a 3-hop chain, so the reader sees the answer is the
# last fact's object, named alone. Their names cannot come out of the generator
# (no first name, last name or syllable of ``jaxpapers.lanr``'s lists), so they
# share no entity with any question.
SHOTS = (
  (
    "In which country was Iris Tamblyn born?",
    (
      "Iris Tamblyn was born in Thimble.",
      "The city of Thimble lies in Quorthia.",
    ),
    "Quorthia",
  ),
  (
    "In which country is the head office of the company Oskar Pell works at?",
    (
      "Oskar Pell works at Hexwood Corp.",
      "The head office of Hexwood Corp is in Marrow.",
      "Marrow is a city in Estmere.",
    ),
    "Estmere",
  ),
)


def user_content(question: str, docs: Sequence[str] = ()) -> str:
  """The user turn: ``Question: q\nFacts:`` followed by the documents, each
  after a space."""
  return f"Question: {question}\nFacts:" + "".join(" " + d for d in docs)


def chat_pieces(tok: Any) -> tuple[str, str]:
  """(text before the live user turn's content, text after it) under the model's
  template.

  The text before holds the system turn (where the template has a default one)
  and the worked examples; the text after closes the user turn and opens the
  assistant's ([PRED]).
  """
  shots = []
  for q, docs, a in SHOTS:
    shots += [
      {"role": "user", "content": user_content(q, docs)},
      {"role": "assistant", "content": a},
    ]
  mark = "\x00CONTENT\x00"
  text = tok.apply_chat_template(shots + [{"role": "user", "content": mark}])
  before, after = text.split(mark)
  return before, after


class ReaderTexts:
  r"""How questions, documents, cues and answers become token ids for one LM.

  Real LMs (``smollm2``, ``gemma3``) read every context inside their own chat
  template after the two worked examples of ``SHOTS``: the fixed text up to
  ``Question:`` is a prefix whose KV cache is computed once
  (``prefill_prefix``); a context is `` {question}\nFacts:`` ⊕ the documents
  (each `` {doc}``), [PRED] is the text that closes the user turn and opens the
  assistant's, and the answer follows it. Documents are read alone,
  ``doc ⊕ \nKeywords:``.

  Args:
    c: the experiment config: ``lm`` (``'smollm2'``, ``'gemma3'`` or
      ``'random'``: a random-init decoder over a word vocabulary of the world's
      texts, ``random_lm.d_model`` / ``n_layers``) and ``rep_layer``.
    kb: the knowledge base (its documents build the random LM's vocabulary).
    questions: the questions (likewise).
  """

  def __init__(self, c: Any, kb: Any, questions: Sequence[Any]) -> None:
    self.lm_name = c.lm
    if c.lm in ("smollm2", "gemma3"):
      if c.lm == "smollm2":
        cfg, params, tok = lm.load_smollm2()
        self.desc = (
          "SmolLM2-135M-Instruct (frozen, Q4_1 GGUF), chat template, "
          "2 worked examples"
        )
      else:
        cfg, params, tok = lm.load_gemma3()
        self.desc = (
          "Gemma-3-270M (frozen, Q4_K_M GGUF), chat turns, 2 worked examples"
        )
      enc = lambda s: tok.encode(s, add_bos=False)
      before, after = chat_pieces(tok)
      self.prefix_text = before + "Question:"
      # BOS as the model wants
      prefix = np.asarray(tok.encode(self.prefix_text), np.int32)
      self.q = lambda s: enc(f" {s}\nFacts:")
      self.d = lambda s: enc(" " + s)
      self.a = lambda s: enc(s)
      self.pred = np.asarray(enc(after), np.int32)
      self.doc_marker = np.asarray(enc("\nKeywords:"), np.int32)
      self.doc_fn = lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = params
      self.fn = lm_prefix_fn(cfg, layer=c.rep_layer)
      self.params = prefill_prefix(cfg, params, jax.numpy.asarray(prefix))
      self.prefix_len = int(prefix.shape[0])
    elif c.lm == "random":
      texts = (
        list(kb.docs)
        + [q.question for q in questions]
        + [q.answer for q in questions]
      )
      tok = WordTokenizer(texts)
      r = c.random_lm
      cfg = lm.small_config(
        tok.vocab_size, d_model=r.d_model, n_layers=r.n_layers
      )
      params = lm.init_params(jax.random.key(123), cfg, std=0.5)
      self.desc = (
        f"random-init {r.n_layers}-layer d={r.d_model} decoder, word vocabulary"
      )
      self.prefix_text = ""
      self.q = self.d = self.a = tok.encode
      self.pred = np.asarray([tok.token_to_id("[PRED]")], np.int32)
      self.doc_marker = np.asarray([tok.token_to_id("[DOC]")], np.int32)
      self.doc_fn = self.fn = lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = self.params = params
      self.prefix_len = 0
    else:
      raise ValueError(
        f"lm must be 'smollm2', 'gemma3' or 'random', got {c.lm!r}"
      )
    self.cfg = cfg
