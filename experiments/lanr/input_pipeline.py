"""Data of the LAnR experiment: the synthetic multi-hop world, the reader's token layout
(``Texts``) and the store of every context the frozen LM reads (``ContextStore``, saved in
``<workdir>/contexts.npz``); ``online_trace`` runs the multi-hop loop on the store.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from absl import logging

from jaxpapers import core
from jaxpapers import lanr as L


def build_world(c):
  """The knowledge base in two disconnected groups: training questions ask about group 0,
  test questions about group 1, so no entity or document is shared between them."""
  kb = L.make_kb(c.data_seed, **c.kb, n_groups=2)
  train_q = L.make_questions(kb, kb.people_of(0), n_per_hop=c.n_train_per_hop, seed=c.data_seed)
  test_q = L.make_questions(kb, kb.people_of(1), n_per_hop=c.n_test_per_hop, seed=c.data_seed + 1)
  return kb, train_q, test_q


Texts = L.ReaderTexts


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
  tl = time.time()

  def encode():
    h = L.encode_documents(T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=c.lm_batch)
    return {"h": np.asarray(h)}

  doc_h = core.cached_arrays(os.path.join(workdir, "documents.npz"), encode)["h"]
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
  world = dict(kb=kb, test_q=test_q, rows=rows, store=store)
  stats["prepare_s"] = time.time() - t0
  return world, feats, stats
