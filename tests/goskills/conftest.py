"""Shared small libraries (module-independent, built once per session)."""

import numpy as np
import pytest

import jaxpapers.goskills as S


def edges_of(g):
  """(src, dst, type, weight) tuples of the unmasked edges."""
  a = {k: np.asarray(getattr(g, k)) for k in ("src", "dst", "etype", "weight", "emask")}
  return [
    (int(s), int(d), int(t), float(w))
    for s, d, t, w, m in zip(a["src"], a["dst"], a["etype"], a["weight"], a["emask"])
    if m
  ]


@pytest.fixture(scope="session")
def small_world():
  lib = S.make_skill_library(3, n_skills=90, n_workflows=7, reuse=0.3, decoy_rate=0.5)
  tasks = S.make_tasks(4, lib, n=12)
  docs = [f"{t.name} {t.purpose}" for t in lib.texts]
  vocab = S.build_vocab(docs)
  bm = S.bm25_scores(S.term_counts(tasks.texts, vocab), S.term_counts(docs, vocab))
  scores = S.hybrid_scores(S.hashed_embeddings(tasks.texts), S.hashed_embeddings(docs), bm)
  return lib, tasks, np.asarray(scores)
