"""BM25 (eq. 5), hybrid scores (eq. 4) and the host-side text helpers."""

import numpy as np

import jaxpapers.goskills as S
from tests.goskills import reference as ref


def test_bm25_matches_loop_reference():
  rng = np.random.default_rng(0)
  docs = rng.integers(0, 3, (7, 9)) * (rng.random((7, 9)) < 0.5)
  q = rng.integers(0, 2, (3, 9))
  got = np.asarray(S.bm25_scores(q, docs))
  np.testing.assert_allclose(got, ref.bm25(q, docs), rtol=1e-5, atol=1e-6)
  got2 = np.asarray(S.bm25_scores(q, docs, k1=0.9, b=0.2))
  np.testing.assert_allclose(
    got2, ref.bm25(q, docs, k1=0.9, b=0.2), rtol=1e-5, atol=1e-6
  )


def test_hybrid_scores_reference_and_constant_bm25_row():
  rng = np.random.default_rng(1)
  qe, se = rng.normal(size=(2, 5)), rng.normal(size=(6, 5))
  bm = rng.random((2, 6)) * 4
  bm[1] = 2.0  # constant row: min-max gives 0, only the cosine remains
  got = np.asarray(S.hybrid_scores(qe, se, bm, alpha=0.3))
  cos = (qe / np.linalg.norm(qe, axis=1, keepdims=True)) @ (
    se / np.linalg.norm(se, axis=1, keepdims=True)
  ).T
  norm0 = (bm[0] - bm[0].min()) / (bm[0].max() - bm[0].min())
  np.testing.assert_allclose(got[0], 0.3 * cos[0] + 0.7 * norm0, atol=1e-6)
  np.testing.assert_allclose(got[1], 0.3 * cos[1], atol=1e-6)


def test_text_helpers_are_deterministic():
  texts = ["Load the CSV table, with pandas!", "", "export png"]
  assert S.tokenize(texts[0]) == [
    "load",
    "the",
    "csv",
    "table",
    "with",
    "pandas",
  ]
  vocab = S.build_vocab(texts)
  assert list(vocab) == sorted(vocab)
  c = S.term_counts(texts + ["csv csv unknownword"], vocab)
  assert c[3, vocab["csv"]] == 2 and c[3].sum() == 2
  e1, e2 = S.hashed_embeddings(texts), S.hashed_embeddings(list(texts))
  np.testing.assert_array_equal(e1, e2)
  np.testing.assert_allclose(np.linalg.norm(e1[[0, 2]], axis=1), 1.0, rtol=1e-6)
  assert (e1[1] == 0).all()
  # Near-duplicate texts are closer than unrelated ones.
  e = S.hashed_embeddings(
    ["clean the csv table", "quickly clean the csv table", "render video"]
  )
  assert e[0] @ e[1] > e[0] @ e[2] + 0.3
