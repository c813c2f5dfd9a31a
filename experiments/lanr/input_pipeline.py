"""Data of the LAnR experiment: the synthetic multi-hop world, the reader's token layout
(``Texts``) and the store of every context the frozen LM reads (``ContextStore``, saved in
``<workdir>/contexts.npz``); ``online_trace`` runs the multi-hop loop on the store.
"""

from __future__ import annotations

import math
import os
import time

import jax
import numpy as np
from absl import logging

from jaxpapers import core, lm
from jaxpapers import lanr as L

# ------------------------------------------------------------------------------------- data

# Two worked examples shown before every question (chat turns of the reader's own template): a
# 2-hop and a 3-hop chain, so the reader sees the answer is the last fact's object, named alone.
# Their names cannot come out of the generator (no first name, last name or syllable of
# ``jaxpapers.lanr``'s lists), so they share no entity with any question.
SHOTS = (
  (
    "In which country was Iris Tamblyn born?",
    ("Iris Tamblyn was born in Thimble.", "The city of Thimble lies in Quorthia."),
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


def build_world(c):
  """The knowledge base in two disconnected groups: training questions ask about group 0,
  test questions about group 1, so no entity or document is shared between them."""
  kb = L.make_kb(c.data_seed, **c.kb, n_groups=2)
  train_q = L.make_questions(kb, kb.people_of(0), n_per_hop=c.n_train_per_hop, seed=c.data_seed)
  test_q = L.make_questions(kb, kb.people_of(1), n_per_hop=c.n_test_per_hop, seed=c.data_seed + 1)
  return kb, train_q, test_q


def user_content(question: str, docs=()) -> str:
  """The user turn: ``Question: q\nFacts:`` followed by the documents, each after a space."""
  return f"Question: {question}\nFacts:" + "".join(" " + d for d in docs)


def chat_pieces(tok) -> tuple[str, str]:
  """(text before the live user turn's content, text after it) under the model's template.

  The text before holds the system turn (where the template has a default one) and the worked
  examples; the text after closes the user turn and opens the assistant's ([PRED]).
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


class Texts:
  """How questions, documents, cues and answers become token ids for one LM.

  Real LMs (``smollm2``, ``gemma3``) read every context inside their own chat template after
  the two worked examples of ``SHOTS``: the fixed text up to ``Question:`` is a prefix whose KV
  cache is computed once (``L.prefill_prefix``); a context is `` {question}\nFacts:`` ⊕ the
  documents (each `` {doc}``), [PRED] is the text that closes the user turn and opens the
  assistant's, and the answer follows it. Documents are read alone, ``doc ⊕ \nKeywords:``.
  """

  def __init__(self, c, kb, questions):
    self.lm_name = c.lm
    if c.lm in ("smollm2", "gemma3"):
      if c.lm == "smollm2":
        cfg, params, tok = lm.load_smollm2()
        self.desc = "SmolLM2-135M-Instruct (frozen, Q4_1 GGUF), chat template, 2 worked examples"
      else:
        cfg, params, tok = lm.load_gemma3()
        self.desc = "Gemma-3-270M (frozen, Q4_K_M GGUF), chat turns, 2 worked examples"
      enc = lambda s: tok.encode(s, add_bos=False)
      before, after = chat_pieces(tok)
      self.prefix_text = before + "Question:"
      prefix = np.asarray(tok.encode(self.prefix_text), np.int32)  # BOS as the model wants
      self.q = lambda s: enc(f" {s}\nFacts:")
      self.d = lambda s: enc(" " + s)
      self.a = lambda s: enc(s)
      self.pred = np.asarray(enc(after), np.int32)
      self.doc_marker = np.asarray(enc("\nKeywords:"), np.int32)
      self.doc_fn = L.lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = params
      self.fn = L.lm_prefix_fn(cfg, layer=c.rep_layer)
      self.params = L.prefill_prefix(cfg, params, prefix)
      self.prefix_len = int(prefix.shape[0])
    elif c.lm == "random":
      texts = list(kb.docs) + [q.question for q in questions] + [q.answer for q in questions]
      tok = L.WordTokenizer(texts)
      r = c.random_lm
      cfg = lm.LMConfig(
        vocab_size=tok.vocab_size,
        d_model=r.d_model,
        n_layers=r.n_layers,
        n_heads=2,
        n_kv_heads=2,
        head_dim=r.d_model // 2,
        ffn_dim=2 * r.d_model,
        rope_base=10000.0,
      )
      params = lm.init_params(jax.random.key(123), cfg, std=0.5)
      self.desc = f"random-init {r.n_layers}-layer d={r.d_model} decoder, word vocabulary"
      self.prefix_text = ""
      self.q = self.d = self.a = tok.encode
      self.pred = np.asarray([tok.token_to_id("[PRED]")], np.int32)
      self.doc_marker = np.asarray([tok.token_to_id("[DOC]")], np.int32)
      self.doc_fn = self.fn = L.lm_hidden_fn(cfg, layer=c.rep_layer)
      self.doc_params = self.params = params
      self.prefix_len = 0
    else:
      raise ValueError(f"lm must be 'smollm2', 'gemma3' or 'random', got {c.lm!r}")
    self.cfg = cfg


def context_key(split: str, qi: int, docs) -> str:
  return f"{split}/{qi}/" + "-".join(str(int(d)) for d in docs)


def gold_contexts(qs, split: str, n_docs: int):
  """Every gold-prefix context c_t (t = 0..hops) of every question (``t`` documents in it)."""
  rows = []
  for qi, q in enumerate(qs):
    for t in range(q.hops + 1):
      inc = np.zeros(n_docs, bool)
      inc[list(q.gold[:t])] = True
      rows.append(
        dict(
          key=context_key(split, qi, q.gold[:t]),
          q=qi,
          docs=tuple(q.gold[:t]),
          t=t,
          hops=q.hops,
          next_doc=q.gold[t] if t < q.hops else -1,
          in_context=inc,
          sufficient=t == q.hops,
        )
      )
  return rows


FIELDS = ("z", "h_answer", "h_pred", "correct", "logp")


class ContextStore:
  """Every context the experiment reads, read by the LM once (memoised, saved in the workdir).

  A context is a question and the documents in it, in order; its key is
  ``split/question/doc-doc-...``. The online loops of every method and seed, the gold prefixes
  and the baselines share contexts (the empty context, correct retrievals), so each is read
  once. The store is saved to ``<workdir>/contexts.npz`` after every batch of new reads, so a
  killed run resumes without reading them again.
  """

  def __init__(self, T: Texts, questions: dict, docs_tok, ans_tok: dict, c, path: str | None):
    self.T, self.questions, self.docs_tok, self.ans_tok = T, questions, docs_tok, ans_tok
    self.c, self.path = c, path
    self.memo: dict[str, dict] = {}
    self.n_read = 0
    if path and os.path.exists(path):
      try:
        z = core.cache.read_arrays(path)
      except core.CorruptFileError as e:  # torn or altered: read every context again
        logging.warning("%s; reading its contexts again", e)
      else:
        keys = [str(k) for k in z["keys"]]
        for i, k in enumerate(keys):
          self.memo[k] = {f: z[f][i] for f in FIELDS}

  def ids(self, key: str) -> list[int]:
    split, qi, docs = key.split("/")
    q = self.questions[split][int(qi)]
    ds = [int(d) for d in docs.split("-")] if docs else []
    return self.T.q(q.question) + [x for d in ds for x in self.docs_tok[d]]

  def read(self, keys) -> dict:
    """``{field: [len(keys), ...]}`` for the contexts ``keys`` (reading the missing ones)."""
    missing = list(dict.fromkeys(k for k in keys if k not in self.memo))
    if missing:
      seqs = [self.ids(k) for k in missing]
      ans = [self.ans_tok[k.split("/")[0]][int(k.split("/")[1])] for k in missing]
      extra = len(self.T.pred) + max(len(a) for a in ans)
      step = self.c.width_bucket  # one compilation per width
      widths = np.asarray([step * math.ceil((len(s) + extra) / step) for s in seqs])
      for w in sorted(set(widths.tolist())):
        idx = np.flatnonzero(widths == w)
        r = L.read_contexts(self.T.fn, self.T.params, [seqs[i] for i in idx],
                            [ans[i] for i in idx], self.T.pred, width=w, batch_size=self.c.lm_batch)  # fmt: skip
        for j, i in enumerate(idx):
          self.memo[missing[i]] = {f: np.asarray(r[f][j]) for f in FIELDS}
        self.n_read += len(idx)
        self.save()
    return {f: np.stack([self.memo[k][f] for k in keys]) for f in FIELDS}

  def save(self):
    if not self.path:
      return
    keys = list(self.memo)
    arrays = {f: np.stack([self.memo[k][f] for k in keys]) for f in FIELDS}
    core.cache.write_arrays(self.path, {"keys": np.asarray(keys), **arrays})  # atomic, checked


def online_trace(store: ContextStore, split: str, n_q: int, score_fn, t_max: int, final=True):
  """``L.greedy_retrieve`` on the store: the context of question ``qi`` after the documents
  ``retrieved`` is read by the LM once (``ContextStore``), whatever method or seed asks for it."""
  read = lambda docs: store.read([context_key(split, qi, d) for qi, d in enumerate(docs)])
  return L.greedy_retrieve(read, score_fn, n_q, t_max, final=final)


def prepare(c, workdir):
  t0 = time.time()
  kb, train_q, test_q = build_world(c)
  T = Texts(c, kb, train_q + test_q)
  docs_tok = [T.d(d) for d in kb.docs]
  dt, dl = L.pad_tokens(docs_tok)
  N = len(kb.docs)
  rows = {"train": gold_contexts(train_q, "train", N), "test": gold_contexts(test_q, "test", N)}
  qs = {"train": train_q, "test": test_q}
  ans = {k: [T.a(q.answer) for q in v] for k, v in qs.items()}
  os.makedirs(workdir, exist_ok=True)
  store = ContextStore(T, qs, docs_tok, ans, c, os.path.join(workdir, "contexts.npz"))
  doc_path = os.path.join(workdir, "documents.npz")
  tl = time.time()
  doc_h = core.cached_arrays(
    doc_path,
    lambda: {
      "h": np.asarray(
        L.encode_documents(T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=c.lm_batch)
      )
    },
  )["h"]
  feats = {"doc": {"h": doc_h}}
  for k in ("train", "test"):
    feats[k] = store.read([r["key"] for r in rows[k]])
  stats = {
    "lm": T.desc,
    "documents": N,
    "train_questions": len(train_q),
    "test_questions": len(test_q),
    "test_questions_per_hop": {h: sum(q.hops == h for q in test_q) for h in (1, 2, 3)},
    "train_contexts": len(rows["train"]),
    "test_contexts": len(rows["test"]),
    "entities_shared_train_test": len(
      {e for q in train_q for g in q.gold for e in kb.facts[g][1:]}
      & {e for q in test_q for g in q.gold for e in kb.facts[g][1:]}
    ),
    "doc_tokens_mean": float(np.mean(dl)),
    "prefix_tokens": T.prefix_len,
    "question_tokens_mean": float(np.mean([len(T.q(q.question)) for q in test_q])),
    "gold_read_s": time.time() - tl,
  }
  world = dict(kb=kb, train_q=train_q, test_q=test_q, T=T, rows=rows, ans=ans, store=store)
  stats["prepare_s"] = time.time() - t0
  return world, feats, stats


# --------------------------------------------------------------------------- head training
