"""Retrievers: e5 prefixes, BM25 against its formula, char n-grams, pool
gathers."""

import math

import numpy as np
import pytest

import jaxpapers.mlaire as M


def test_e5_prefixes_are_applied_and_refused_when_doubled():
  texts = [
    "Die offizielle Währung von Frankreich ist Euro.",
    "La moneda oficial de Japón es yen.",
  ]
  q = M.e5_embed(texts, kind="query")
  p = M.e5_embed(texts, kind="passage")
  assert q.shape == (2, 384) and q.dtype == np.float32
  np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
  assert np.max(np.abs(q - p)) > 1e-3  # the engine adds different prefixes
  # cached
  np.testing.assert_array_equal(M.e5_embed(texts[:1], kind="query"), q[:1])
  with pytest.raises(ValueError, match="must not carry an E5 prefix"):
    M.e5_embed(["query: what is the currency of France?"], kind="query")


def test_e5_finds_the_translation():
  qs = M.e5_embed(["What is the official currency of France?"], kind="query")
  ps = M.e5_embed(
    [
      "Die offizielle Währung von Frankreich ist Euro.",
      "Die offizielle Währung von Japan ist Yen.",
    ],
    kind="passage",
  )
  s = qs @ ps.T
  assert s[0, 0] > s[0, 1]


def _bm25_ref(queries, docs, k1=1.5, b=0.75):
  toks = [M.tokenize(d) for d in docs]
  n = len(docs)
  avg = np.mean([len(t) for t in toks])
  out = np.zeros((len(queries), n))
  for i, q in enumerate(queries):
    for t in M.tokenize(q):
      df = sum(t in d for d in toks)
      if df == 0:
        continue
      idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
      for j, d in enumerate(toks):
        tf = d.count(t)
        out[i, j] += idf * tf / (tf + k1 * (1 - b + b * len(d) / avg))
  return out


def test_bm25_matches_the_lucene_formula():
  docs = [
    "the euro is the currency of France",
    "yen of Japan",
    "euro euro Germany",
    "Brasil real",
  ]
  queries = ["currency of France", "euro", "Brasil Japan", "nothing here"]
  np.testing.assert_allclose(
    M.bm25_scores(queries, docs), _bm25_ref(queries, docs), rtol=1e-5
  )


def test_char_ngrams_identity_and_disjoint():
  s = M.char_ngram_scores(["Frankreich", "zzzz"], ["Frankreich", "qqqq"])
  assert (
    s[0, 0] == pytest.approx(1.0, abs=1e-6)
    and s[0, 1] == 0.0
    and s[1, 0] == 0.0
  )


def test_pool_gathers_match_numpy_indexing():
  rng = np.random.default_rng(0)
  full = rng.normal(size=(5, 9)).astype(np.float32)
  doc = rng.integers(0, 9, (3, 4)).astype(np.int32)
  mask = rng.random((3, 4)) < 0.7
  doc[~mask] = -1
  query = np.array([4, 0, 2], np.int32)
  want = np.where(mask, full[query[:, None], np.maximum(doc, 0)], 0.0)
  np.testing.assert_allclose(M.pool_scores(full, doc, mask, query), want)
  qe = rng.normal(size=(5, 3)).astype(np.float32)
  pe = rng.normal(size=(9, 3)).astype(np.float32)
  want = np.where(mask, (qe @ pe.T)[query[:, None], np.maximum(doc, 0)], 0.0)
  np.testing.assert_allclose(
    M.dense_pool_scores(qe, pe, doc, mask, query), want, rtol=1e-5
  )
