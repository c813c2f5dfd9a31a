"""What a retrieval loop and its stopping rule achieve, per question (host-side,
numpy).

:func:`stop_outcomes` reads one stopping rule off an online trace (calls made,
support recall of the documents retrieved by then, exact match of the answer
then); :func:`next_hop_accuracy` is teacher-forced retrieval on gold prefixes;
:func:`bm25_diagnostics` says why a question-as-query lexical retriever misses
later-hop documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxpapers.core import validation as V


def stop_outcomes(
  n, doc_ids, gold: Sequence[Sequence[int]], correct, t_max: int
) -> dict:
  """Per question, what a stopping rule gets from one online trace.

  Args:
    n: ``[Q]`` retrieval calls the rule makes (capped at ``t_max``).
    doc_ids: ``[Q, t_max]`` documents retrieved in order.
    gold: per question, its gold documents.
    correct: ``[Q, t_max + 1]`` exact match of the answer after ``k`` calls
      (column 0: closed book).
    t_max: the largest number of calls.

  Returns:
    ``{"calls", "recall", "em"}``: lists of ``[Q]`` floats; recall is 1 when
    every gold document is among the first ``n`` retrieved.
  """
  t_max = V.check_int(t_max, "t_max", min_value=1)
  doc_ids, correct = np.asarray(doc_ids), np.asarray(correct)
  Q = len(gold)
  if (
    doc_ids.shape != (Q, t_max)
    or correct.shape != (Q, t_max + 1)
    or np.shape(n) != (Q,)
  ):
    raise ValueError(
      "n [Q], doc_ids [Q, t_max] and correct [Q, "
      f"t_max + 1] with Q = len(gold) = {Q}, t_max = {t_max}; "
      f"got {np.shape(n)}, {doc_ids.shape} and {correct.shape}"
    )
  n = np.minimum(n, t_max).astype(np.int64)
  recall = [
    float(set(g) <= set(d[:k].tolist())) for d, k, g in zip(doc_ids, n, gold)
  ]
  return {
    "calls": n.astype(float).tolist(),
    "recall": recall,
    "em": np.asarray(correct)[np.arange(len(n)), n].astype(float).tolist(),
  }


def next_hop_accuracy(scores, in_context, next_doc, t) -> dict:
  """Teacher-forced retrieval on gold prefixes: is the next gold document the
  best-scoring document not in the context? Overall and for the first hop (the
  empty context).

  Args:
    scores: ``[M, N]`` scores of the M gold-prefix contexts against the N
      documents.
    in_context: bool ``[M, N]``, the documents already in each context (never
      retrieved).
    next_doc: int ``[M]``, the next gold document (−1: the context is
      sufficient; skipped).
    t: int ``[M]``, the documents in each context.

  Returns:
    ``{"all", "hop1"}``: the share of rows with a next document whose
    best-scoring document outside the context is it, over all such rows and over
    those with ``t = 0``.
  """
  s = np.asarray(scores, np.float64)
  inc, nxt, t = (
    np.asarray(in_context, bool),
    np.asarray(next_doc),
    np.asarray(t),
  )
  if (
    s.ndim != 2
    or inc.shape != s.shape
    or nxt.shape != (len(s),)
    or t.shape != (len(s),)
  ):
    raise ValueError(
      "scores and in_context must be [M, N] and next_doc, t [M]; "
      f"got {s.shape}, {inc.shape}, {nxt.shape} and {t.shape}"
    )
  hit = np.where(inc, -np.inf, s).argmax(1) == nxt
  has = nxt >= 0
  return {
    "all": float(hit[has].mean()),
    "hop1": float(hit[has & (t == 0)].mean()),
  }


def bm25_diagnostics(kb: Any, questions: Sequence[Any], top3) -> dict:
  """Why the question-only query fails: later-hop gold documents share no entity
  with the question and are rarely in its BM25 top 3, unlike hop-1 documents.

  Args:
    kb: the :class:`KB` the questions are about.
    questions: the :class:`QA` questions.
    top3: ``[Q, 3]`` the question-as-query BM25 top 3 of each question.

  Returns:
    ``{"hop1", "later_hops"}``, each ``{"docs", "share_an_entity_with_question",
    "in_question_top3"}``: the gold documents of that hop and the shares of them
    that name an entity of the question (other than its person, or that name the
    person) and that are in its top 3.
  """
  if len(top3) != len(questions):
    raise ValueError(
      f"top3 must have one row per question ({len(questions)}), got {len(top3)}"
    )
  out = {}
  for name, sel in (
    ("hop1", lambda i: i == 0),
    ("later_hops", lambda i: i >= 1),
  ):
    share, found = [], []
    for q, row in zip(questions, top3):
      for i, g in enumerate(q.gold):
        if not sel(i):
          continue
        ents = [e for e in kb.facts[g][1:] if e != q.person]
        share.append(
          float(any(e in q.question for e in ents) or q.person in kb.docs[g])
        )
        found.append(float(g in set(np.asarray(row).tolist())))
    out[name] = {
      "docs": len(share),
      "share_an_entity_with_question": float(np.mean(share)),
      "in_question_top3": float(np.mean(found)),
    }
  return out
