"""MLAIRE metrics against brute-force float64 references, closed forms and the
shared nDCG."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxpapers.mlaire as M
from jaxpapers import metrics
from jaxpapers.mlaire import _metrics
from tests.mlaire import reference as ref

Q, PP, L = 16, 10, 3


def _pools(seed, tie_levels=4):
  """Random pools with parallel positives, ties (quantised scores) and
  padding."""
  rng = np.random.default_rng(seed)
  q_content = rng.integers(0, 5, Q)
  q_lang = rng.integers(0, L, Q)
  doc_content = np.where(
    rng.random((Q, PP)) < 0.45, q_content[:, None], rng.integers(0, 5, (Q, PP))
  )
  doc_lang = rng.integers(0, L, (Q, PP))
  mask = rng.random((Q, PP)) < 0.85
  mask[:, 0] = True
  scores = rng.integers(0, tie_levels, (Q, PP)).astype(np.float32)
  # masked slots must be ignored, whatever their value
  scores = np.where(mask, scores, np.nan)
  return {
    "scores": scores,
    "doc_lang": doc_lang.astype(np.int32),
    "doc_content": doc_content.astype(np.int32),
    "mask": mask,
    "q_lang": q_lang.astype(np.int32),
    "q_content": q_content.astype(np.int32),
  }


def _batch(d):
  return M.pool_batch(**d)


@pytest.fixture(scope="module")
def pools():
  return [_pools(s) for s in range(3)]


@pytest.mark.parametrize("ties", ["pessimistic", "index"])
def test_ranks_match_sorted_reference(pools, ties):
  for d in pools:
    np.testing.assert_array_equal(
      np.asarray(M.ranks(_batch(d), ties=ties)), ref.ranks(d, ties)
    )


def test_pessimistic_ties_put_the_query_language_positive_last():
  # One query, three tied candidates: p*, an other-language positive, a
  # negative.
  d = {
    "scores": np.zeros((1, 3), np.float32),
    "doc_lang": np.array([[0, 1, 0]], np.int32),
    "doc_content": np.array([[7, 7, 3]], np.int32),
    "mask": np.ones((1, 3), bool),
    "q_lang": np.array([0], np.int32),
    "q_content": np.array([7], np.int32),
  }
  np.testing.assert_array_equal(M.ranks(_batch(d)), [[3, 2, 1]])
  np.testing.assert_array_equal(M.ranks(_batch(d), ties="index"), [[1, 2, 3]])
  assert float(M.lpr(_batch(d))[0]) == 0.0  # a tie never counts as a preference
  assert float(M.lpr(_batch(d), ties="index")[0]) == 1.0


@pytest.mark.parametrize("variant", ["strict", "pairwise", "topk"])
def test_lpr_matches_reference(pools, variant):
  for d in pools:
    val, n = M.lpr(
      _batch(d), variant=variant, k=3 if variant == "topk" else None
    )
    pq = ref.per_query(d, 3)[f"lpr_{variant}"]
    assert float(n) == sum(e for _, e in pq)
    np.testing.assert_allclose(float(val), ref.mean(pq), rtol=1e-6)


def test_lang_ndcg_and_semantic_ndcg_match_reference(pools):
  for d in pools:
    for k, gain, wl, wo in ((3, "linear", 2.0, 1.0), (5, "exp", 3.0, 0.5)):
      pq = ref.per_query(d, k, w_lang=wl, w_other=wo, gain=gain)
      got = M.lang_ndcg(_batch(d), k, w_lang=wl, w_other=wo, gain=gain)
      np.testing.assert_allclose(
        float(got), np.mean([x for x, _ in pq["lang_ndcg"]]), rtol=1e-5
      )
    pq = ref.per_query(d, 3)
    got = M.semantic_ndcg(_batch(d), 3)
    np.testing.assert_allclose(
      float(got), np.mean([x for x, _ in pq["ndcg"]]), rtol=1e-5
    )


def test_ndcg_per_query_matches_reference(pools):
  for d in pools:
    pq = ref.per_query(d, 5, w_lang=3.0, w_other=0.5, gain="exp")
    got = M.ndcg_per_query(_batch(d), 5, w_lang=3.0, w_other=0.5, gain="exp")
    for name in ("ndcg", "lang_ndcg"):
      assert got[name].shape == (Q,)
      np.testing.assert_allclose(
        got[name], [x for x, _ in pq[name]], rtol=1e-5, atol=1e-6
      )


def test_semantic_ndcg_equals_the_shared_ndcg_with_index_ties():
  d = _pools(7, tie_levels=3)
  d["mask"][:] = True
  d["scores"] = np.nan_to_num(d["scores"])
  sem = (d["doc_content"] == d["q_content"][:, None]).astype(np.float32)
  want = metrics.ndcg_at_k(d["scores"], sem, 4).mean()
  np.testing.assert_allclose(
    M.semantic_ndcg(_batch(d), 4, ties="index"), want, rtol=1e-6
  )


def test_four_way_and_profile_match_reference(pools):
  for d in pools:
    prof = np.asarray(M.four_way_profile(_batch(d), 4))
    assert prof.shape == (4, 4)
    for r in range(1, 5):
      np.testing.assert_allclose(prof[r - 1], ref.four_way(d, r), rtol=1e-6)
    np.testing.assert_allclose(
      M.four_way(_batch(d), rank=2), ref.four_way(d, 2), rtol=1e-6
    )
    np.testing.assert_allclose(prof.sum(1), 1.0, rtol=1e-6)


def test_report_matches_reference_overall_and_per_language(pools):
  d = pools[1]
  rep = M.mlaire_report(_batch(d), k=3, n_langs=L)
  pq = ref.per_query(d, 3)
  for name in M.REPORT_KEYS:
    np.testing.assert_allclose(
      float(rep[name]), ref.mean(pq[name]), rtol=1e-5, err_msg=name
    )
    for l in range(L):
      want = ref.mean(pq[name], group=d["q_lang"] == l)
      np.testing.assert_allclose(
        rep[name + "_by_lang"][l], want, rtol=1e-5, err_msg=name
      )
  np.testing.assert_allclose(rep["four_way"], ref.four_way(d, 1), rtol=1e-6)
  np.testing.assert_allclose(
    rep["four_way_profile"][2], ref.four_way(d, 3), rtol=1e-6
  )
  assert float(rep["n_lpr_strict"]) == sum(e for _, e in pq["lpr_strict"])


def _parallel(n_q=6, n_l=3, n_neg=2):
  """Every query's unit in every language plus ``n_neg`` negative units in every
  language."""
  q_lang = np.arange(n_q) % n_l
  q_content = np.arange(n_q)
  doc_content = np.stack(
    [
      np.repeat([c] + [100 + c * 10 + j for j in range(n_neg)], n_l)
      for c in q_content
    ]
  )
  doc_lang = np.tile(np.arange(n_l), (n_q, 1 + n_neg))
  return q_lang, q_content, doc_lang, doc_content


def test_closed_forms_for_oracles():
  q_lang, q_content, doc_lang, doc_content = _parallel()
  sem = doc_content == q_content[:, None]
  lm = doc_lang == q_lang[:, None]
  mk = lambda s: M.pool_batch(
    s.astype(np.float32),
    doc_lang,
    doc_content,
    np.ones_like(sem),
    q_lang,
    q_content,
  )
  # content first, query language first
  full = M.mlaire_report(mk(2.0 * sem + lm), k=5)
  # content only: ties among versions
  blind = M.mlaire_report(mk(sem.astype(float)), k=5)
  lang_only = M.mlaire_report(mk(lm.astype(float) + 0.01 * sem), k=3)
  assert float(full["lpr_strict"]) == 1.0 and float(
    full["lang_ndcg"]
  ) == pytest.approx(1.0)
  assert float(full["ndcg"]) == pytest.approx(1.0)
  np.testing.assert_allclose(full["four_way"], [1, 0, 0, 0])
  # Pessimistic ties: a language-blind oracle shows no preference, nDCG cannot
  # tell.
  assert (
    float(blind["ndcg"]) == pytest.approx(1.0)
    and float(blind["lpr_strict"]) == 0.0
  )
  assert float(blind["lpr_pairwise"]) == 0.0
  np.testing.assert_allclose(blind["four_way"], [0, 1, 0, 0])
  # Lang-nDCG of the blind oracle: p* at rank 3 of 3 relevant, gains 2,1,1 vs
  # ideal 2,1,1.
  dcg = 1 / np.log2(2) + 1 / np.log2(3) + 2 / np.log2(4)
  idcg = 2 / np.log2(2) + 1 / np.log2(3) + 1 / np.log2(4)
  assert float(blind["lang_ndcg"]) == pytest.approx(dcg / idcg, rel=1e-6)
  # A language-only scorer: perfect preference among relevant, but negatives in
  # the query language outrank the translations (preference-driven semantic
  # failures below rank 1).
  assert float(lang_only["lpr_strict"]) == 1.0
  np.testing.assert_allclose(lang_only["four_way_profile"][1], [0, 0, 1, 0])
  assert float(lang_only["recall"]) == pytest.approx(1 / 3)


def test_lpr_without_query_language_positive_is_undefined():
  q_lang, q_content, doc_lang, doc_content = _parallel()
  # drop p*
  doc_content = np.where(doc_lang == q_lang[:, None], -5, doc_content)
  b = M.pool_batch(
    np.random.default_rng(0).normal(size=doc_lang.shape).astype(np.float32),
    doc_lang,
    doc_content,
    np.ones(doc_lang.shape, bool),
    q_lang,
    q_content,
  )
  val, n = M.lpr(b)
  assert np.isnan(float(val)) and float(n) == 0.0


def test_sharded_report_equals_single_device(pools):
  d = pools[2]
  # Q = 32, divisible by 8
  d = {k: np.concatenate([v] * 2) for k, v in d.items()}
  single = M.mlaire_report(_batch(d), k=3, n_langs=L)
  mesh = jax.make_mesh((8,), ("q",))
  shard = lambda x: jax.device_put(
    x, NamedSharding(mesh, P("q", *([None] * (x.ndim - 1))))
  )
  sharded = M.mlaire_report(
    M.pool_batch(**{k: shard(v) for k, v in d.items()}), k=3, n_langs=L
  )
  for key in single:
    np.testing.assert_allclose(
      np.asarray(sharded[key]), np.asarray(single[key]), rtol=1e-6
    )


def test_report_compiles_once_per_shape(pools):
  _metrics._report_jit.clear_cache()
  for d in pools:
    M.mlaire_report(_batch(d), k=3, n_langs=L)
  assert _metrics._report_jit._cache_size() == 1


def test_bfloat16_scores_rank_like_float32(pools):
  d = dict(pools[0])
  # small integers are exact in bf16
  d["scores"] = jnp.asarray(d["scores"], jnp.bfloat16)
  np.testing.assert_array_equal(M.ranks(_batch(d)), ref.ranks(pools[0]))
