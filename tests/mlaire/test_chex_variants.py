"""The MLAIRE pool metrics and interventions, with and without ``jax.jit``.

The metrics take a :class:`PoolBatch` (a pytree, traced) and static settings
(cutoffs, tie policy, variant; closed over) and are checked against the
brute-force references of ``tests/mlaire/reference.py``; the interventions
against float64 NumPy.
"""

import functools

import chex
import jax.numpy as jnp
import numpy as np

import jaxpapers.mlaire as M
from tests.mlaire import reference as ref
from tests.mlaire.test_interventions import _ref_offsets
from tests.mlaire.test_metrics import _pools


class MlaireVariantsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_ranks_under_both_tie_policies(self):
    d = _pools(0)
    for ties in ("pessimistic", "index"):
      got = self.variant(functools.partial(M.ranks, ties=ties))(
        M.pool_batch(**d)
      )
      chex.assert_shape(got, d["scores"].shape)
      chex.assert_type(got, jnp.int32)
      chex.assert_trees_all_equal(got, ref.ranks(d, ties).astype(np.int32))

  @chex.variants(with_jit=True, without_jit=True)
  def test_lpr_and_ndcgs_match_reference(self):
    d = _pools(1)
    k = 3

    @self.variant
    def report(b):
      return {
        "lpr_strict": M.lpr(b, variant="strict"),
        "lpr_pairwise": M.lpr(b, variant="pairwise"),
        "ndcg": M.semantic_ndcg(b, k),
        "lang_ndcg": M.lang_ndcg(b, k, w_lang=3.0, w_other=0.5, gain="exp"),
      }

    got = report(M.pool_batch(**d))
    pq = ref.per_query(d, k)
    pq_exp = ref.per_query(d, k, w_lang=3.0, w_other=0.5, gain="exp")
    want = {
      f"lpr_{v}": (
        ref.mean(pq[f"lpr_{v}"]),
        float(sum(e for _, e in pq[f"lpr_{v}"])),
      )
      for v in ("strict", "pairwise")
    }
    want["ndcg"] = np.mean([x for x, _ in pq["ndcg"]])
    want["lang_ndcg"] = np.mean([x for x, _ in pq_exp["lang_ndcg"]])
    chex.assert_trees_all_close(got, want, rtol=1e-5)
    chex.assert_type(got["ndcg"], jnp.float32)

  @chex.variants(with_jit=True, without_jit=True)
  def test_four_way_decomposition(self):
    d = _pools(2)
    # the second candidate: a 0-based or top-1 reading gives other fractions
    rank = 2
    got = self.variant(functools.partial(M.four_way, rank=rank))(
      M.pool_batch(**d)
    )
    chex.assert_shape(got, (4,))
    chex.assert_trees_all_close(got, ref.four_way(d, rank), rtol=1e-6)
    self.assertFalse(np.allclose(ref.four_way(d, 1), ref.four_way(d, rank)))

  @chex.variants(with_jit=True, without_jit=True)
  def test_pool_gathers_and_language_prior(self):
    rng = np.random.default_rng(3)
    q_all, n, dim, Q, P = 5, 8, 3, 4, 6
    full = rng.normal(size=(q_all, n)).astype(np.float32)
    q_emb = rng.normal(size=(q_all, dim)).astype(np.float32)
    p_emb = rng.normal(size=(n, dim)).astype(np.float32)
    doc = rng.integers(0, n, (Q, P)).astype(np.int32)
    mask = rng.random((Q, P)) < 0.8
    query = np.array([4, 0, 2, 2], np.int32)
    doc_lang = rng.integers(0, 3, (Q, P)).astype(np.int32)
    q_lang = rng.integers(0, 3, Q).astype(np.int32)

    @self.variant
    def gathers(full, q_emb, p_emb, doc, mask, query, doc_lang, q_lang, lam):
      s = M.pool_scores(full, doc, mask, query)
      return (
        s,
        M.dense_pool_scores(q_emb, p_emb, doc, mask, query),
        M.language_prior(s, doc_lang, q_lang, lam),
      )

    pool, dense, prior = gathers(
      full, q_emb, p_emb, doc, mask, query, doc_lang, q_lang, 0.3
    )
    chex.assert_shape((pool, dense, prior), (Q, P))
    chex.assert_type((pool, dense, prior), jnp.float32)
    want_pool = np.where(mask, full[query[:, None], doc], 0.0)
    want_dense = np.where(
      mask,
      np.einsum("qd,qpd->qp", q_emb[query].astype(np.float64), p_emb[doc]),
      0.0,
    )
    want_prior = want_pool + 0.3 * (doc_lang == q_lang[:, None])
    chex.assert_trees_all_close(
      (pool, dense, prior),
      (want_pool, want_dense, want_prior),
      rtol=1e-5,
      atol=1e-6,
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_language_offsets_fit_and_removal(self):
    rng = np.random.default_rng(4)
    n, dim, n_lang, n_content = 24, 5, 4, 7
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    # language 3 never appears: zero offset
    lang = rng.integers(0, 3, n).astype(np.int32)
    content = rng.integers(0, n_content, n).astype(np.int32)
    fit = functools.partial(
      M.fit_language_offsets, n_lang=n_lang, n_content=n_content
    )

    @self.variant
    def fit_and_remove(emb, lang, content):
      offsets = fit(emb, lang, content)
      return offsets, M.remove_language_offsets(emb, lang, offsets)

    offsets, cleaned = fit_and_remove(emb, lang, content)
    want = _ref_offsets(emb, lang, content, n_lang)
    chex.assert_shape(offsets, (n_lang, dim))
    chex.assert_shape(cleaned, (n, dim))
    chex.assert_trees_all_close(offsets, want, atol=1e-5)
    x = emb.astype(np.float64) - want[lang]
    chex.assert_trees_all_close(
      cleaned, x / np.linalg.norm(x, axis=1, keepdims=True), atol=1e-5
    )
