"""Dense top-k, the two-stage retriever, the reasoning loop, the encoders and
the LM reranker."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.leansearch as L
from jaxpapers import lm


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def emb():
  rng = np.random.default_rng(0)
  return _unit(rng.normal(size=(11, 8))).astype(np.float32), _unit(
    rng.normal(size=(60, 8))
  ).astype(np.float32)


def test_dense_topk_matches_float64_and_respects_valid(emb):
  q, d = emb
  valid = np.random.default_rng(1).random((11, 60)) < 0.7
  s, i = L.dense_topk(q, d, 7, valid=valid)
  ref = np.where(valid, q.astype(np.float64) @ d.T.astype(np.float64), -np.inf)
  want = np.argsort(-ref, axis=1, kind="stable")[:, :7]
  np.testing.assert_array_equal(np.asarray(i), want)
  np.testing.assert_allclose(
    np.asarray(s), np.take_along_axis(ref, want, 1), rtol=1e-5
  )
  assert valid[np.arange(11)[:, None], np.asarray(i)].all()


def test_dense_topk_without_valid_matches_float64_and_an_all_true_mask(emb):
  """No mask (the path that skips the select): the top 7 of every document, best
  first."""
  q, d = emb
  s, i = L.dense_topk(q, d, 7)
  ref = q.astype(np.float64) @ d.T.astype(np.float64)
  want = np.argsort(-ref, axis=1, kind="stable")[:, :7]
  np.testing.assert_array_equal(np.asarray(i), want)
  np.testing.assert_allclose(
    np.asarray(s), np.take_along_axis(ref, want, 1), rtol=1e-5
  )
  s1, i1 = L.dense_topk(q, d, 7, valid=np.ones((11, 60), bool))
  np.testing.assert_array_equal(np.asarray(i1), np.asarray(i))
  np.testing.assert_array_equal(np.asarray(s1), np.asarray(s))


def test_dense_topk_sharded_equals_single_device(emb):
  q, d = emb
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  s1, i1 = L.dense_topk(q, d, 5)
  # 11 queries padded to the device count
  s2, i2 = L.dense_topk(q, d, 5, mesh=mesh)
  np.testing.assert_array_equal(np.asarray(i1), np.asarray(i2))
  np.testing.assert_allclose(np.asarray(s1), np.asarray(s2), rtol=1e-6)
  valid = np.random.default_rng(2).random((11, 60)) < 0.5
  s1, i1 = L.dense_topk(q, d, 5, valid=valid)
  s2, i2 = L.dense_topk(q, d, 5, valid=valid, mesh=mesh)
  np.testing.assert_array_equal(np.asarray(i1), np.asarray(i2))
  np.testing.assert_allclose(np.asarray(s1), np.asarray(s2), rtol=1e-6)


def _retriever(d, rerank_fn=None, k=5, **kw):
  texts = [f"doc {j}" for j in range(d.shape[0])]
  return L.TwoStageRetriever(
    embed_fn=lambda qs: d[[int(x.split()[1]) for x in qs]],
    doc_emb=d,
    doc_text=texts,
    rerank_fn=rerank_fn,
    k=k,
    **kw,
  )


def test_rerank_of_a_perfect_ranking_leaves_it_unchanged(emb):
  _, d = emb
  base = _retriever(d)
  ids0, cos = base.search(["q 3", "q 17"])
  # A reranker that agrees with stage 1 (score = cosine) keeps the order.
  agree = lambda q, ids, texts: d[int(q.split()[1])] @ d[ids].T
  ids1, _ = _retriever(d, agree).search(["q 3", "q 17"])
  np.testing.assert_array_equal(ids0, ids1)
  assert ids0[0, 0] == 3 and ids0[1, 0] == 17
  # A constant reranker ties everywhere: ties fall back to the stage-1 cosine.
  const = lambda q, ids, texts: np.zeros(len(ids))
  np.testing.assert_array_equal(
    _retriever(d, const).search(["q 3", "q 17"])[0], ids0
  )
  # A reranker preferring the highest id reorders the M = max(2k, 50)
  # candidates.
  hi = lambda q, ids, texts: np.asarray(ids, float)
  ids2, _ = _retriever(d, hi).search(["q 3"])
  cand = np.asarray(L.dense_topk(d[[3]], d, 50)[1])[0]
  np.testing.assert_array_equal(ids2[0], np.sort(cand)[::-1][:5])


def test_bm25_index_and_fallback(emb):
  _, d = emb
  texts = ["add comm nat", "mul comm nat", "app nil list"] + [
    f"filler {j}" for j in range(57)
  ]
  bm = L.BM25Index(texts)
  ids, sc = bm.search(["comm nat"], 2)
  assert set(ids[0]) == {0, 1} and (sc[0] > 0).all()
  assert (bm.scores("zzz unknown") == 0).all()
  r = L.TwoStageRetriever(
    embed_fn=lambda qs: np.tile(d[:1], (len(qs), 1)) * 0 + d[0],
    doc_emb=d,
    doc_text=texts,
    k=2,
    fallback=bm,
    # only an exact match passes: the cosine path for doc 0
    min_cosine=1.0 - 1e-3,
  )
  ids, _ = r.search(["app nil list"])
  # cosine of d[0] with itself is 1 -> dense path, not the fallback
  assert ids[0, 0] == 0
  r2 = L.TwoStageRetriever(
    embed_fn=lambda qs: -np.tile(d[:1], (len(qs), 1)),
    doc_emb=d,
    doc_text=texts,
    k=2,
    fallback=bm,
    min_cosine=0.99,
  )
  assert r2.search(["app nil list"])[0][0, 0] == 2  # low confidence -> BM25


def _loop_parts(n_docs=40):
  """A planner echoing round numbers, a retriever returning fixed lists,
  keep-all filter."""
  rng = np.random.default_rng(0)
  table = {}

  def retriever(queries, *, valid=None, k):
    out = []
    for j, q in enumerate(queries):
      if q not in table:
        table[q] = rng.choice(n_docs, n_docs, replace=False)
      row = table[q]
      if valid is not None:
        row = row[valid[j][row]]
      out.append(row[:k])
    return np.stack(out), np.zeros((len(queries), k))

  planner = lambda s, inf, h: [s, f"round {len(h)}", f"round {len(h)}"]
  keep = lambda s, qs, ids, sc: ids >= 0
  return planner, retriever, keep


def test_loop_terminates_no_duplicates_fixed_length_and_valid():
  planner, retriever, keep = _loop_parts()
  never = lambda s, f, h: (False, "bad")
  it = L.IterativeRetrieval(
    planner,
    retriever,
    keep,
    never,
    n_docs=40,
    big_loop=3,
    search_top_k=6,
    output_top_k=25,
  )
  valid = np.ones(40, bool)
  valid[:10] = False
  tr = it.run("goal", valid=valid)
  assert tr.rounds == 4 and not tr.judged_good
  assert tr.round_ids.shape == (4, 25)
  for row in tr.round_ids:
    real = row[row >= 0]
    assert len(set(real.tolist())) == len(real)
    assert (real >= 10).all()  # excluded documents never come back
  # Duplicated sub-queries ("round r" twice) run once.
  assert all(len(q) == 2 for q in tr.queries)
  # Accumulating rounds never loses a document: the union only grows.
  sizes = [(r >= 0).sum() for r in tr.round_ids]
  assert sizes == sorted(sizes)


def test_loop_stops_on_good_judge_and_pads_rounds():
  planner, retriever, keep = _loop_parts()
  judge = L.StableTopJudge(k=5)
  same_planner = lambda s, inf, h: [s]
  it = L.IterativeRetrieval(
    same_planner,
    retriever,
    keep,
    judge,
    n_docs=40,
    big_loop=3,
    search_top_k=6,
    output_top_k=8,
  )
  tr = it.run("goal")
  # round 2 repeats round 1: top set stable
  assert tr.rounds == 2 and tr.judged_good
  np.testing.assert_array_equal(tr.round_ids[2], tr.ids)
  np.testing.assert_array_equal(tr.round_ids[3], tr.ids)


def test_proxy_planner_filter():
  names = frozenset({"add", "le", "S"})
  pl = L.ProxyPlanner(["s0", "s1", "s2", "s3"], names=names, prf=2)
  q1 = pl("Lemma x : forall n, le n (add n 0) -> le (S n) (S n)", "", [])
  assert q1 == [
    "Lemma x : forall n, le n (add n 0) -> le (S n) (S n)",
    "le n (add n 0)",
    "le (S n) (S n)",
    "le add S",
  ]
  q2 = pl(
    "ignored",
    "",
    [{"queries": q1, "fused": np.array([3, 1, 0]), "reason": ("")}],
  )
  assert q2 == [*q1, "s3", "s1"]
  flt = L.ProxyFilter(
    [frozenset({"add"}), frozenset(), frozenset({"mul"})],
    names=names,
    keep_top=1,
  )
  keep = flt(
    "Lemma y : add 1 1 = 2", ["q"], np.array([[1, 0, 2, -1]]), np.zeros((1, 4))
  )
  np.testing.assert_array_equal(keep, [[True, True, False, False]])


def test_info_nce_matches_float64():
  rng = np.random.default_rng(0)
  q, p, n = (_unit(rng.normal(size=s)) for s in [(4, 3), (4, 3), (2, 3)])
  c = np.concatenate([p, n])
  logits = q @ c.T / 0.1
  want = -np.mean(
    np.diag(logits - np.log(np.exp(logits).sum(1, keepdims=True)))
  )
  got = L.info_nce(
    q.astype(np.float32), p.astype(np.float32), n.astype(np.float32), tau=0.1
  )
  assert float(got) == pytest.approx(want, rel=1e-5)


def test_dual_encoder_learns_pairs():
  texts_q = [f"query about topic{j} and item{j}" for j in range(32)]
  texts_d = [f"document for item{j} concerning topic{j}" for j in range(32)]
  qi = L.hash_features(texts_q, n_buckets=1024, length=16)
  di = L.hash_features(texts_d, n_buckets=1024, length=16)
  assert qi.shape == (32, 16) and qi.min() >= 0 and qi.max() < 1024
  model, losses = L.train_dual_encoder(
    jax.random.key(0),
    qi,
    di,
    steps=60,
    batch=16,
    n_buckets=1024,
    dim=16,
    hidden=32,
  )
  assert losses[-10:].mean() < 0.5 * losses[:5].mean()
  e = L.dual_encoder_embedder(model, length=16)
  eq, ed = e(texts_q), e(texts_d)
  np.testing.assert_allclose(np.linalg.norm(eq, axis=1), 1.0, rtol=1e-5)
  top1 = np.argmax(eq @ ed.T, axis=1)
  assert (top1 == np.arange(32)).mean() >= 0.9


@pytest.fixture(scope="module")
def tiny_lm():
  cfg = lm.LMConfig(
    vocab_size=64,
    d_model=32,
    n_layers=2,
    n_heads=4,
    n_kv_heads=2,
    head_dim=8,
    ffn_dim=48,
  )
  rng = np.random.default_rng(0)
  params = {
    n: jnp.asarray(
      np.ones(sh) if "norm" in n else 0.3 * rng.normal(size=sh), jnp.float32
    )
    for n, sh in lm.param_shapes(cfg).items()
  }

  class Tok:
    def encode(self, text, add_bos=None):
      ids = [3 + (ord(c) % 60) for c in text]
      if text in (" yes", " no"):
        return [1] if text == " yes" else [2]
      return ([0] if add_bos is not False else []) + ids

  return cfg, params, Tok()


def test_lm_yes_no_shared_prefix_equals_full_prompts(tiny_lm):
  cfg, params, tok = tiny_lm
  docs = ["short", "a longer document text", "mid size"]
  got = L.lm_yes_no_scores(
    params, cfg, tok, "the query", docs, instruction=("Judge.")
  )
  full = [
    tok.encode("Judge.\nQuery: the query\nDocument:")
    + tok.encode(f" {d}\nRelevant (yes or no):", add_bos=False)
    for d in docs
  ]
  # independent path: whole prompts, no cache, one batch
  ids, mask = lm.left_pad(full)
  logits, _, _ = lm.forward(
    params, ids, config=cfg, mask=mask, logits_at=("last")
  )
  z = np.asarray(logits, np.float64)[:, [1, 2]]
  want = np.exp(z[:, 0]) / np.exp(z).sum(1)
  np.testing.assert_allclose(got, want, rtol=1e-4)


def test_e5_embedder_ranks_its_own_passage_first():
  q = L.e5_embedder(query=True)(
    ["commutativity of addition", "reversing a list"]
  )
  p = L.e5_embedder(query=False)(
    ["addition is commutative: n + m = m + n", "rev (rev l) = l"]
  )
  assert q.shape == (2, 384)
  assert np.argmax(q @ p.T, axis=1).tolist() == [0, 1]
