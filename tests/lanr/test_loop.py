"""The jitted multi-hop loop against a step-by-step numpy reference, on a tiny
random LM."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxpapers import lanr as L
from jaxpapers import lm
from tests.jit_util import count_traces

CFG = lm.LMConfig(
  vocab_size=40,
  d_model=16,
  n_layers=2,
  n_heads=2,
  n_kv_heads=2,
  head_dim=8,
  ffn_dim=32,
  rope_base=10000.0,
)
PARAMS = lm.init_params(jax.random.key(0), CFG, std=0.5)
FN = L.lm_hidden_fn(CFG)
RNG = np.random.default_rng(0)
N, LD, B, LQ = 9, 4, 8, 5
DOC_LEN = RNG.integers(1, LD + 1, N).astype(np.int32)
DOCS = np.where(
  np.arange(LD) < DOC_LEN[:, None], RNG.integers(4, 40, (N, LD)), 0
).astype(np.int32)
Q_LEN = RNG.integers(2, LQ + 1, B).astype(np.int32)
Q = np.where(
  np.arange(LQ) < Q_LEN[:, None], RNG.integers(4, 40, (B, LQ)), 0
).astype(np.int32)
ANS = RNG.integers(4, 40, (B, 2)).astype(np.int32)
A_LEN = np.array([2, 1, 2, 0, 2, 1, 2, 2], np.int32)
PRED = np.array([2], np.int32)
HEADS = L.init_retrieval_heads(jax.random.key(1), 16, rep_dim=6)
CTL = L.init_control_head(jax.random.key(2), 16, width=8)


def _direct(seq, width=32):
  """Residual entering the last layer and logits of one sequence, via
  lm.forward.

  The sequence is right-padded to a fixed width with a mask (one compilation);
  causal attention keeps the real positions independent of the padding.
  """
  x = np.zeros((1, width), np.int32)
  x[0, : len(seq)] = seq
  m = np.arange(width)[None] < len(seq)
  logits, _, cap = lm.forward(
    PARAMS, x, config=CFG, mask=m, capture=lm.Capture(residual=True)
  )
  n = len(seq)
  return np.asarray(cap["residual"][0, -1, :n], np.float64), np.asarray(
    logits[0, :n], np.float64
  )


@pytest.fixture(scope="module")
def doc_h():
  return np.asarray(
    L.encode_documents(FN, PARAMS, DOCS, DOC_LEN, np.array([3]), batch_size=4)
  )


@pytest.fixture(scope="module")
def trace(doc_h):
  emb = L.doc_embedding(HEADS, doc_h)
  return L.multihop_retrieve(
    FN,
    PARAMS,
    HEADS,
    None,
    Q,
    Q_LEN,
    emb,
    DOCS,
    DOC_LEN,
    PRED,
    ANS,
    A_LEN,
    t_max=3,
  )


def test_encode_documents_reads_the_marker_state(doc_h):
  for i in (0, N - 1):  # the last batch is padded: its rows must not change
    h, _ = _direct(list(DOCS[i, : DOC_LEN[i]]) + [3])
    np.testing.assert_allclose(doc_h[i], h[-1], atol=1e-4)


def test_append_tokens_matches_numpy():
  buf = np.zeros((2, 8), np.int32)
  out, n = L.append_tokens(
    jnp.asarray(buf),
    jnp.array([1, 3]),
    jnp.array([[5, 6, 7], [8, 9, 1]]),
    jnp.array([2, 3]),
  )
  np.testing.assert_array_equal(n, [3, 6])
  np.testing.assert_array_equal(np.asarray(out)[0, :3], [0, 5, 6])
  np.testing.assert_array_equal(np.asarray(out)[1, 3:6], [8, 9, 1])


def _np_reference(doc_h, control, tau, t_max=3):
  """The loop written out per question with numpy float64 scoring."""
  e_d = np.asarray(L.doc_embedding(HEADS, doc_h), np.float64)
  out = {"docs": [], "calls": [], "h": [], "correct": []}
  for b in range(B):
    ctx, got, active = list(Q[b, : Q_LEN[b]]), [], True
    ans = list(ANS[b, : A_LEN[b]])
    hs, cs = [], []
    for t in range(t_max + 1):
      seq = ctx + [2] + ans
      hid, logits = _direct(seq)
      p = len(ctx)  # the [PRED] position
      z = hid[p]
      lg = logits[p : p + max(len(ans), 1)]
      pr = np.exp(lg - lg.max(-1, keepdims=True))
      pr /= pr.sum(-1, keepdims=True)
      ent = -(pr * np.log(pr)).sum(-1)
      hs.append(ent[: len(ans)].mean() if ans else 0.0)
      cs.append(
        bool(ans) and all(np.argmax(lg[i]) == a for i, a in enumerate(ans))
      )
      s = (
        0.0
        if control is None
        else float(
          jax.nn.sigmoid(
            L.control_logits(control, jnp.asarray(z[None], jnp.float32))
          )[0]
        )
      )
      active = active and s <= tau and t < t_max
      if active:
        e_q = np.asarray(
          L.query_embedding(HEADS, jnp.asarray(z[None], jnp.float32)),
          np.float64,
        )[0]
        sc = e_d @ e_q
        sc[got] = -np.inf
        d = int(np.argmax(sc))
        got.append(d)
        ctx = ctx + list(DOCS[d, : DOC_LEN[d]])
    out["docs"].append(got + [-1] * (t_max - len(got)))
    out["calls"].append(len(got))
    out["h"].append(hs)
    out["correct"].append(cs)
  return out


def test_multihop_retrieve_matches_step_by_step_reference(doc_h, trace):
  ref = _np_reference(doc_h, None, 0.5)
  np.testing.assert_array_equal(trace.doc_ids, ref["docs"])
  np.testing.assert_array_equal(trace.n_calls, 3)
  # never the same document twice
  assert all(len(set(d)) == 3 for d in ref["docs"])
  np.testing.assert_allclose(trace.h_answer, ref["h"], atol=1e-4)
  np.testing.assert_array_equal(trace.correct, ref["correct"])


def test_control_stops_like_the_reference_and_like_stop_hops(doc_h, trace):
  probs = np.asarray(jax.nn.sigmoid(L.control_logits(CTL, trace.z)))
  tau = float(np.median(probs[:, :3]))  # a threshold that stops some rows early
  emb = L.doc_embedding(HEADS, doc_h)
  with count_traces() as traces:
    tr = L.multihop_retrieve(
      FN,
      PARAMS,
      HEADS,
      CTL,
      Q,
      Q_LEN,
      emb,
      DOCS,
      DOC_LEN,
      PRED,
      ANS,
      A_LEN,
      t_max=3,
      tau_stop=tau,
    )
    L.multihop_retrieve(
      FN,
      PARAMS,
      HEADS,
      CTL,
      Q[::-1],
      Q_LEN[::-1],
      emb,
      DOCS,
      DOC_LEN,
      PRED,
      ANS,
      A_LEN,
      t_max=3,
      tau_stop=tau,
    )
  # new data (and other hop counts) do not recompile
  assert traces["_multihop"] <= 1
  ref = _np_reference(doc_h, CTL, tau)
  np.testing.assert_array_equal(tr.n_calls, ref["calls"])
  assert (
    0 < np.asarray(tr.n_calls).min() < 3 or np.asarray(tr.n_calls).min() == 0
  )
  assert len(set(np.asarray(tr.n_calls).tolist())) > 1
  np.testing.assert_array_equal(tr.doc_ids, ref["docs"])
  # the post-hoc rule on the control-free trace gives the same calls and final
  # statistics
  n = L.stop_hops(jnp.asarray(probs), tau)
  np.testing.assert_array_equal(n, tr.n_calls)
  np.testing.assert_allclose(
    L.at_hop(trace.h_answer, n), L.at_hop(tr.h_answer, tr.n_calls), atol=1e-5
  )
  np.testing.assert_array_equal(np.asarray(tr.active).sum(1), tr.n_calls)


def test_stop_hops_and_at_hop_closed_form():
  p = jnp.array(
    [
      [0.9, 0.1, 0.1, 0.1],
      [0.1, 0.2, 0.7, 0.9],
      [0.1, 0.1, 0.1, 0.9],
      [0.5, 0.6, 0, 0],
    ]
  )
  # s = tau does not stop
  np.testing.assert_array_equal(L.stop_hops(p, 0.5), [0, 2, 3, 1])
  x = jnp.arange(8.0).reshape(2, 4)
  np.testing.assert_array_equal(L.at_hop(x, jnp.array([3, 1])), [3.0, 5.0])


def test_sharded_batch_equals_single_device(doc_h, trace):
  mesh = jax.make_mesh(
    (8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  sh = NamedSharding(mesh, P("data"))
  put = lambda x: jax.device_put(jnp.asarray(x), sh)
  emb = L.doc_embedding(HEADS, doc_h)
  tr = L.multihop_retrieve(
    FN,
    PARAMS,
    HEADS,
    None,
    put(Q),
    put(Q_LEN),
    emb,
    DOCS,
    DOC_LEN,
    PRED,
    put(ANS),
    put(A_LEN),
    t_max=3,
  )
  np.testing.assert_array_equal(tr.doc_ids, trace.doc_ids)
  np.testing.assert_allclose(tr.h_answer, trace.h_answer, atol=1e-5)


def test_prefix_fn_equals_reading_the_prefix_in_the_context():
  prefix = np.array([5, 6, 7, 8], np.int32)
  ids = np.array([[9, 10, 11, 0, 0], [12, 13, 14, 15, 16]], np.int32)
  mask = np.arange(5)[None] < np.array([3, 5])[:, None]
  pos = np.array([[0, 2], [1, 4]], np.int32)
  h, lg = L.lm_prefix_fn(CFG)(
    L.prefill_prefix(CFG, PARAMS, prefix), ids, mask, pos
  )
  full = np.concatenate([np.broadcast_to(prefix, (2, 4)), ids], 1)
  m2 = np.concatenate([np.ones((2, 4), bool), mask], 1)
  h2, lg2 = FN(PARAMS, full, m2, pos + 4)
  np.testing.assert_allclose(
    np.asarray(h), np.asarray(h2), rtol=1e-4, atol=1e-4
  )
  np.testing.assert_allclose(
    np.asarray(lg), np.asarray(lg2), rtol=1e-4, atol=1e-4
  )
  # A prefix that is read must change the states (the cache is attended to).
  h3, _ = FN(PARAMS, ids, mask, pos)
  assert np.abs(np.asarray(h3) - np.asarray(h)).max() > 1e-3


def test_read_contexts_equals_one_read_per_row():
  """Batched, padded reads (a short last batch) equal each row read alone at its
  own width."""
  ctxs = [RNG.integers(4, 40, n).tolist() for n in (3, 5, 2, 4, 1)]
  answers = [RNG.integers(4, 40, n).tolist() for n in (1, 2, 2, 1, 2)]
  got = L.read_contexts(FN, PARAMS, ctxs, answers, PRED, width=12, batch_size=2)
  assert set(got) == {"z", "h_answer", "h_pred", "correct", "logp"} and got[
    "z"
  ].shape == (5, 16)
  for i, (c, a) in enumerate(zip(ctxs, answers)):
    one = L.read_context(
      FN,
      PARAMS,
      np.asarray([c + [0] * 3], np.int32),
      np.asarray([len(c)], np.int32),
      PRED,
      np.asarray([a], np.int32),
      np.asarray([len(a)], np.int32),
    )
    for k, v in one.items():
      np.testing.assert_allclose(
        got[k][i], np.asarray(v)[0], rtol=2e-5, atol=2e-5
      )
  with pytest.raises(ValueError, match="cannot hold a context"):
    L.read_contexts(FN, PARAMS, ctxs, answers, PRED, width=6, batch_size=2)


def test_greedy_retrieve_takes_the_best_unretrieved_document():
  """A reader whose state is the count of documents read and a score table per
  count: the loop must take, per hop, the best document not yet retrieved (ties:
  the lower id)."""
  table = np.array(
    [[0.1, 0.9, 0.9, 0.2], [0.0, 5.0, 1.0, 3.0], [7.0, 7.0, 0.0, 1.0]]
  )
  calls = []

  def read(docs):
    calls.append([list(d) for d in docs])
    z = np.asarray([[len(d)] for d in docs], np.float32)  # [Q=2, 1]
    return {"z": z, "logp": -z[:, 0]}

  score = lambda z: jnp.asarray(table)[z[:, 0].astype(int)]
  out = L.greedy_retrieve(read, score, 2, 3)
  # hop 2: 0 beats the read 1
  np.testing.assert_array_equal(out["doc_ids"], [[1, 3, 0]] * 2)
  assert out["z"].shape == (2, 4, 1) and out["logp"].shape == (2, 4)
  assert calls[-1] == [[1, 3, 0]] * 2
  short = L.greedy_retrieve(read, score, 2, 3, final=False)
  np.testing.assert_array_equal(short["doc_ids"], out["doc_ids"])
  assert short["z"].shape == (2, 3, 1)
