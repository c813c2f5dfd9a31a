"""Shared small libraries (module-independent, built once per session)."""

import numpy as np
import pytest

import jaxpapers.goskills as S
from experiments.goskills.configs import smoke


def edges_of(g):
  """(src, dst, type, weight) tuples of the unmasked edges."""
  a = {
    k: np.asarray(getattr(g, k))
    for k in ("src", "dst", "etype", "weight", "emask")
  }
  return [
    (int(s), int(d), int(t), float(w))
    for s, d, t, w, m in zip(
      a["src"], a["dst"], a["etype"], a["weight"], a["emask"]
    )
    if m
  ]


# The smoke experiment's sizes (skills, tasks, embedding width; its retrieval
# config is the default GoSkillsConfig): a library of one size has one set of
# shapes, so the library tests and the smoke run share their compiled programs
# within a session instead of compiling twice.
_SMOKE = smoke.get_config()
N_SKILLS, N_TASKS, EMBED_DIM = (
  _SMOKE.n_skills[0],
  _SMOKE.tasks,
  _SMOKE.embed_dim,
)


@pytest.fixture(scope="session")
def small_world():
  lib = S.make_skill_library(3, n_skills=N_SKILLS, reuse=0.3, decoy_rate=0.5)
  tasks = S.make_tasks(4, lib, n=N_TASKS)
  docs = [f"{t.name} {t.purpose}" for t in lib.texts]
  vocab = S.build_vocab(docs)
  bm = S.bm25_scores(
    S.term_counts(tasks.texts, vocab), S.term_counts(docs, vocab)
  )
  emb = lambda texts: S.hashed_embeddings(texts, dim=EMBED_DIM)
  scores = S.hybrid_scores(emb(tasks.texts), emb(docs), bm)
  return lib, tasks, np.asarray(scores)
