"""Every retriever's scores on one seed's pools: e5 (raw, offset-removed, with a
language prior), BM25, character n-grams and the trivial controls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxpapers.mlaire._interventions import (
  fit_language_offsets,
  language_prior,
  remove_language_offsets,
)
from jaxpapers.mlaire._pools import Corpus, Pools, trivial_scores
from jaxpapers.mlaire._retrievers import (
  bm25_scores,
  char_ngram_scores,
  dense_pool_scores,
  pool_scores,
)


def prior_name(lam: float) -> str:
  """The retriever name of e5 plus a language prior of weight ``lam``
  (``e5_prior_0p05``).

  Args:
    lam: the prior's weight.

  Returns:
    ``f"e5_prior_{lam:g}"`` with the decimal point written ``p``.
  """
  return f"e5_prior_{lam:g}".replace(".", "p")


def score_pools(
  corpus: Corpus,
  pools: Mapping[str, Pools],
  rng: np.random.Generator,
  *,
  emb: Mapping[str, Any] | None = None,
  calib: Any = None,
  lambdas: Sequence[float] = (),
) -> dict:
  """``{retriever: {pool: [Q, P] scores}}`` of every retriever on one seed's
  pools.

  BM25 and character 3-5-gram TF-IDF score every (query, passage) of the corpus
  once and are gathered per pool. With ``emb``, e5 scores by cosine similarity
  (``e5``); ``e5_offset`` after removing per-language offsets fitted on the
  passages and queries of the ``calib`` units only (queries and passages carry
  different prefixes, so each side gets its own offsets); and ``e5_prior_<lam>``
  adds a query-language prior to e5 for every ``lambdas``. The trivial controls
  (:func:`trivial_scores`) draw their noise from ``rng``, pool by pool.

  Args:
    corpus: the rendered corpus (:func:`render_passages`).
    pools: ``{name: Pools}`` built from ``corpus``, in the order their noise is
      drawn.
    rng: the generator of the trivial retrievers' noise.
    emb: ``{'qe': [n_queries, D], 'pe': [n_passages, D]}`` e5 embeddings, or
      None (no e5).
    calib: int ``[n]`` content units the offsets are fitted on (required with
      ``emb``).
    lambdas: language-prior weights.

  Returns:
    ``{retriever: {pool: float32 [Q, P]}}``, retrievers in the order BM25,
    character n-grams, the e5 ones (with ``emb``), the trivial ones.
  """
  if emb is not None and calib is None:
    raise ValueError("calib (the offset-fitting units) is required with emb")
  n_l = len(corpus.langs)
  out = {}
  full = {
    "bm25": bm25_scores(corpus.queries, corpus.passages),
    "char_ngram": char_ngram_scores(corpus.queries, corpus.passages),
  }
  dense = None
  if emb is not None:
    qe, pe = emb["qe"], emb["pe"]
    rows = np.isin(corpus.content, calib)
    fit = lambda e: fit_language_offsets(
      e[rows],
      corpus.lang[rows],
      corpus.content[rows],
      n_l,
      n_content=len(corpus.units),
    )
    qe_o = remove_language_offsets(qe, corpus.lang, fit(qe))
    pe_o = remove_language_offsets(pe, corpus.lang, fit(pe))
    dense = (qe, pe, qe_o, pe_o)
  for v, p in pools.items():
    args = (p.doc, p.mask, p.query)
    for name, s in full.items():
      out.setdefault(name, {})[v] = np.asarray(pool_scores(s, *args))
    if dense is not None:
      qe, pe, qe_o, pe_o = dense
      e5 = dense_pool_scores(qe, pe, *args)
      out.setdefault("e5", {})[v] = np.asarray(e5)
      out.setdefault("e5_offset", {})[v] = np.asarray(
        dense_pool_scores(qe_o, pe_o, *args)
      )
      for lam in lambdas:
        s = language_prior(e5, p.doc_lang, p.q_lang, lam)
        out.setdefault(prior_name(lam), {})[v] = np.asarray(s)
    for name, sc in trivial_scores(p, rng).items():
      out.setdefault(name, {})[v] = sc
  return out
