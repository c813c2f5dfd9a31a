"""Data of the LAnR experiment: the synthetic multi-hop world, the reader's
token layout (``Texts``) and the store of every context the frozen LM reads
(``ContextStore``, saved in ``<workdir>/contexts.npz``); ``online_trace`` runs
the multi-hop loop on the store.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from jaxpapers import core
from jaxpapers import lanr as L


def build_world(c):
  """The knowledge base in two disconnected groups: training questions ask about
  group 0, test questions about group 1, so no entity or document is shared
  between them."""
  kb = L.make_kb(c.data_seed, **c.kb, n_groups=2)
  train_q = L.make_questions(
    kb, kb.people_of(0), n_per_hop=c.n_train_per_hop, seed=c.data_seed
  )
  test_q = L.make_questions(
    kb, kb.people_of(1), n_per_hop=c.n_test_per_hop, seed=c.data_seed + 1
  )
  return kb, train_q, test_q


Texts = L.ReaderTexts


def context_key(split: str, qi: int, docs) -> str:
  return f"{split}/{qi}/" + "-".join(str(int(d)) for d in docs)


FIELDS = ("z", "h_answer", "h_pred", "correct", "logp")


class ContextStore(core.cache.RowCache):
  """Every context the experiment reads, read by the frozen LM once.

  A context is a question and the documents in it, in order; its key is
  ``split/question/doc-doc-...``. The online loops of every method and seed, the
  gold prefixes and the baselines share contexts (the empty context, correct
  retrievals), so each is read once. The rows (``FIELDS``) are kept in
  ``<workdir>/contexts.npz`` (``core.cache.RowCache``), rewritten after every
  batch of new reads, so a killed run resumes without reading them again.
  """

  def __init__(
    self,
    T: Texts,
    questions: dict,
    docs_tok,
    ans_tok: dict,
    c,
    path: str | None,
  ):
    super().__init__(path, FIELDS)
    self.T, self.questions, self.docs_tok, self.ans_tok, self.c = (
      T,
      questions,
      docs_tok,
      ans_tok,
      c,
    )

  def ids(self, key: str) -> list[int]:
    split, qi, docs = key.split("/")
    ds = [int(d) for d in docs.split("-")] if docs else []
    return self.T.q(self.questions[split][int(qi)].question) + [
      x for d in ds for x in self.docs_tok[d]
    ]

  def read(self, keys) -> dict:
    """``{field: [len(keys), ...]}`` for the contexts ``keys`` (reading the
    missing ones)."""
    missing = self.missing(keys)
    if missing:
      seqs = [self.ids(k) for k in missing]
      ans = [
        self.ans_tok[k.split("/")[0]][int(k.split("/")[1])] for k in missing
      ]
      extra = len(self.T.pred) + max(len(a) for a in ans)
      step = self.c.width_bucket  # one compilation per width
      widths = np.asarray(
        [step * math.ceil((len(s) + extra) / step) for s in seqs]
      )
      for w in sorted(set(widths.tolist())):
        idx = np.flatnonzero(widths == w)
        r = L.read_contexts(
          self.T.fn,
          self.T.params,
          [seqs[i] for i in idx],
          [ans[i] for i in idx],
          self.T.pred,
          width=w,
          batch_size=self.c.lm_batch,
        )
        self.put(
          {missing[i]: {f: r[f][j] for f in FIELDS} for j, i in enumerate(idx)}
        )
    return self.stack(keys)


def online_trace(
  store: ContextStore, split: str, n_q: int, score_fn, t_max: int, final=True
):
  """``L.greedy_retrieve`` on the store: the context of question ``qi`` after
  the documents ``retrieved`` is read by the LM once (``ContextStore``),
  whatever method or seed asks for it."""
  read = lambda docs: store.read(
    [context_key(split, qi, d) for qi, d in enumerate(docs)]
  )
  return L.greedy_retrieve(read, score_fn, n_q, t_max, final=final)


def prepare(c, workdir):
  t0 = time.time()
  kb, train_q, test_q = build_world(c)
  T = Texts(c, kb, train_q + test_q)
  docs_tok = [T.d(d) for d in kb.docs]
  dt, dl = L.pad_tokens(docs_tok)
  N = len(kb.docs)
  qs = {"train": train_q, "test": test_q}
  rows = {  # every gold-prefix context, keyed in the store
    s: [
      dict(r, key=context_key(s, r["q"], r["docs"]))
      for r in L.gold_prefixes(v, N)
    ]
    for s, v in qs.items()
  }
  ans = {k: [T.a(q.answer) for q in v] for k, v in qs.items()}
  os.makedirs(workdir, exist_ok=True)
  store = ContextStore(
    T, qs, docs_tok, ans, c, os.path.join(workdir, "contexts.npz")
  )
  tl = time.time()

  def encode():
    h = L.encode_documents(
      T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=c.lm_batch
    )
    return {"h": np.asarray(h)}

  doc_h = core.cached_arrays(os.path.join(workdir, "documents.npz"), encode)[
    "h"
  ]
  feats = {"doc": {"h": doc_h}}
  for k in ("train", "test"):
    feats[k] = store.read([r["key"] for r in rows[k]])
  stats = {
    "lm": T.desc,
    "documents": N,
    "train_questions": len(train_q),
    "test_questions": len(test_q),
    "test_questions_per_hop": {
      h: sum(q.hops == h for q in test_q) for h in (1, 2, 3)
    },
    "train_contexts": len(rows["train"]),
    "test_contexts": len(rows["test"]),
    "entities_shared_train_test": len(
      {e for q in train_q for g in q.gold for e in kb.facts[g][1:]}
      & {e for q in test_q for g in q.gold for e in kb.facts[g][1:]}
    ),
    "doc_tokens_mean": float(np.mean(dl)),
    "prefix_tokens": T.prefix_len,
    "question_tokens_mean": float(
      np.mean([len(T.q(q.question)) for q in test_q])
    ),
    "gold_read_s": time.time() - tl,
  }
  world = dict(kb=kb, test_q=test_q, rows=rows, store=store)
  stats["prepare_s"] = time.time() - t0
  return world, feats, stats
