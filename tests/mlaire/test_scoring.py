"""Every retriever on one seed's pools (score_pools) against float64 NumPy."""

import numpy as np
import pytest

import jaxpapers.mlaire as M

LANGS = ("en", "de", "fr")


@pytest.fixture(scope="module")
def setup():
  units = M.sample_units(M.cldr_units(LANGS), 6, seed=0)
  corpus = M.render_passages(units, LANGS, seed=0)
  pools = {
    v: M.build_pools(
      corpus, variant=v, n_hard=2, n_easy=3, n_trap=2, p_max=16, seed=i
    )
    for i, v in enumerate("AC")
  }
  r = np.random.default_rng(1)
  emb = {
    "qe": r.normal(size=(len(corpus.queries), 8)).astype(np.float32),
    "pe": r.normal(size=(len(corpus.passages), 8)).astype(np.float32),
  }
  return corpus, pools, emb


def test_prior_name():
  assert (
    M.prior_name(0.05) == "e5_prior_0p05" and M.prior_name(1) == "e5_prior_1"
  )


def test_score_pools_matches_numpy(setup):
  corpus, pools, emb = setup
  s = M.score_pools(
    corpus,
    pools,
    np.random.default_rng(0),
    emb=emb,
    calib=np.arange(4),
    lambdas=(0.1,),
  )
  assert list(s) == [
    "bm25",
    "char_ngram",
    "e5",
    "e5_offset",
    "e5_prior_0p1",
    "random",
    "lang_only",
    "blind_oracle",
  ]
  qe, pe = emb["qe"].astype(np.float64), emb["pe"].astype(np.float64)
  rng = np.random.default_rng(0)
  for v, p in pools.items():
    dot = np.einsum("qd,qpd->qp", qe[p.query], pe[np.where(p.mask, p.doc, 0)])
    want = np.where(p.mask, dot, 0.0)
    np.testing.assert_allclose(s["e5"][v], want, rtol=1e-5, atol=1e-5)
    same = p.doc_lang == p.q_lang[:, None]
    prior = s["e5_prior_0p1"][v] - s["e5"][v]
    assert np.all(prior[p.mask & ~same] <= prior[p.mask & same].min() + 1e-6)
    # The trivial controls draw their noise pool by pool, three arrays each.
    np.testing.assert_allclose(
      s["random"][v], rng.random(p.doc.shape), rtol=1e-6
    )
    for _ in range(2):  # lang_only's and blind_oracle's draws
      rng.random(p.doc.shape)
  # Without embeddings there is no e5 retriever.
  assert "e5" not in M.score_pools(corpus, pools, np.random.default_rng(0))
