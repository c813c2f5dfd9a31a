"""The smoke experiment end to end (with resume), the memoised online loop
against the jitted one, the notebook, and one SmolLM2 path."""

import json

import jax
import numpy as np
import pytest

from experiments.lanr import evaluate, input_pipeline, train
from experiments.lanr.configs import default, smoke
from jaxpapers.core import claims as claims_lib
from jaxpapers.lanr import _reader as reader
from tests import notebook_util, resources


def test_smoke_experiment_end_to_end_and_resume(tmp_path, monkeypatch):
  cfg = smoke.get_config()
  metrics = train.train_and_evaluate(cfg, tmp_path)
  rec = json.loads((tmp_path / "results.json").read_text())
  assert {"calls.png", "recall.png"} <= set(rec["plots"])
  # a smoke run judges nothing
  assert all(c["verdict"] is None for c in rec["claims"])
  assert metrics["data"]["entities_shared_train_test"] == 0
  m = metrics["methods"]
  for name in evaluate.METHODS:
    assert len(m[name]["em"]["per_seed"]) == cfg.seeds
    assert 0.0 <= m[name]["recall_all"]["mean"] <= 1.0
  assert (
    m["fixed"]["calls"]["mean"] == cfg.t_max
    and m["one_call"]["calls"]["mean"] == 1.0
  )
  # a stopping rule only truncates the fixed-T_max trace: it never retrieves
  # more evidence
  for name in (
    "entropy_control",
    "oracle_control",
    "flare_entropy",
    "one_call",
  ):
    assert (
      m[name]["recall_all"]["mean"] <= m["fixed"]["recall_all"]["mean"] + 1e-12
    )
  d = metrics["derived"]
  refs = metrics["references"]
  assert d["calls_saved_entropy_control"] == pytest.approx(
    cfg.t_max - m["entropy_control"]["calls"]["mean"]
  )
  want = (
    m["fixed"]["recall_multihop"]["mean"]
    - refs["bm25_iterative"]["recall_multihop"]
  )
  assert d["lanr_minus_bm25_iter_multihop_recall"] == pytest.approx(want)
  assert (
    0.0 <= d["entropy_auroc"] <= 1.0
    and 0.0 <= d["entropy_auroc_same_docs"] <= 1.0
  )
  # Every context was read once: the online loops reuse the gold prefixes they
  # share.
  n = metrics["data"]["contexts_read"]
  assert n < metrics["data"]["test_contexts"] + metrics["data"][
    "train_contexts"
  ] + ((cfg.seeds + 2) * (cfg.t_max + 1) * metrics["data"]["test_questions"])
  # Resume: documents, contexts and every finished seed are read back; the LM
  # reads nothing.
  boom = lambda *a, **k: (_ for _ in ()).throw(AssertionError("re-read"))
  monkeypatch.setattr(train.L, "encode_documents", boom)
  monkeypatch.setattr(train.L, "read_contexts", boom)
  again = train.train_and_evaluate(cfg, tmp_path)
  assert again["derived"] == metrics["derived"]


def test_online_trace_equals_the_jitted_loop():
  cfg = smoke.get_config()
  kb, train_q, test_q = input_pipeline.build_world(cfg)
  T = input_pipeline.Texts(cfg, kb, train_q + test_q)
  docs_tok = [T.d(d) for d in kb.docs]
  dt, dl = train.L.pad_tokens(docs_tok)
  ans = [T.a(q.answer) for q in test_q]
  store = input_pipeline.ContextStore(
    T, {"test": test_q}, docs_tok, {"test": ans}, cfg, None
  )
  doc_h = train.L.encode_documents(
    T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=8
  )
  heads = train.L.init_retrieval_heads(
    jax.random.key(5), doc_h.shape[1], rep_dim=8
  )
  emb = train.L.doc_embedding(heads, doc_h)
  tr = input_pipeline.online_trace(
    store,
    "test",
    len(test_q),
    lambda z: train.L.query_embedding(heads, z) @ emb.T,
    3,
  )
  qi, ql = train.L.pad_tokens([T.q(q.question) for q in test_q])
  ai, al = train.L.pad_tokens(ans)
  ref = train.L.multihop_retrieve(
    T.fn, T.params, heads, None, qi, ql, emb, dt, dl, T.pred, ai, al, t_max=3
  )
  np.testing.assert_array_equal(tr["doc_ids"], np.asarray(ref.doc_ids))
  np.testing.assert_array_equal(tr["correct"], np.asarray(ref.correct))
  np.testing.assert_allclose(tr["z"], np.asarray(ref.z), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(
    tr["h_answer"], np.asarray(ref.h_answer), rtol=1e-4, atol=1e-4
  )
  # A buffer without room for [PRED] and the answer is refused (it would
  # overwrite the context's end), not read.
  ctx = T.q(test_q[0].question)
  with pytest.raises(ValueError, match="cannot hold a context with"):
    train.L.read_contexts(
      T.fn,
      T.params,
      [ctx],
      [ans[0]],
      T.pred,
      width=len(ctx) + len(T.pred),
      batch_size=1,
    )
  # Without the final read the loop stops after the last retrieval: same
  # documents.
  short = input_pipeline.online_trace(
    store,
    "test",
    len(test_q),
    lambda z: train.L.query_embedding(heads, z) @ emb.T,
    3,
    False,
  )
  np.testing.assert_array_equal(short["doc_ids"], tr["doc_ids"])
  assert short["z"].shape[1] == 3


def test_default_claims_parse_and_guard():
  parsed = {
    c.id: c for c in claims_lib.parse_claims(default.get_config().claims)
  }
  assert set(parsed) == {
    "latent_beats_question_query",
    "trained_heads_beat_frozen_cosine",
    "control_cuts_calls",
    "control_keeps_accuracy",
    "entropy_signals_sufficiency",
    "entropy_sufficiency_same_docs",
  }
  assert len(parsed["latent_beats_question_query"].controls) == 2
  for cid in (
    "control_cuts_calls",
    "control_keeps_accuracy",
    "entropy_signals_sufficiency",
  ):
    assert {r["metric"] for r in parsed[cid].requires} == {
      "references.gold_docs.em"
    }
  assert all(c.noise for c in parsed.values())


def test_chat_prompt_holds_the_worked_examples():
  class Tok:  # a ChatML template, as SmolLM2's
    chat_template = "<|im_start|>"

    def apply_chat_template(self, messages):
      out = "".join(
        f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages
      )
      return out + "<|im_start|>assistant\n"

  before, after = reader.chat_pieces(Tok())
  for q, docs, a in reader.SHOTS:
    assert (
      reader.user_content(q, docs) in before
      and f"assistant\n{a}<|im_end|>" in before
    )
  assert (
    before.endswith("<|im_start|>user\n")
    and after == "<|im_end|>\n<|im_start|>assistant\n"
  )
  # the worked examples share no name with any question of the default world
  kb, train_q, test_q = input_pipeline.build_world(default.get_config())
  names = set(kb.groups)
  shots = " ".join(q + " " + " ".join(d) + " " + a for q, d, a in reader.SHOTS)
  assert not any(n in shots for n in names)


@pytest.mark.slow
def test_smollm2_reads_contexts_and_documents():
  """The real LM path on two contexts (slow: loading SmolLM2 takes ~15 s)."""
  resources.require(resources.smollm2_missing())
  cfg = smoke.get_config()
  cfg.lm = "smollm2"
  kb, train_q, test_q = input_pipeline.build_world(cfg)
  T = input_pipeline.Texts(cfg, kb, train_q)
  assert T.prefix_len > 50  # the system turn and the two worked examples
  docs = [T.d(d) for d in kb.docs[:2]]
  dt, dl = train.L.pad_tokens(docs)
  h = np.asarray(
    train.L.encode_documents(
      T.doc_fn, T.doc_params, dt, dl, T.doc_marker, batch_size=2
    )
  )
  assert h.shape == (2, T.cfg.d_model) and np.isfinite(h).all()
  q = test_q[0]
  gold = T.q(q.question) + [x for g in q.gold for x in T.d(kb.docs[g])]
  width = len(gold) + len(T.pred) + len(T.a(q.answer))
  r = train.L.read_contexts(
    T.fn,
    T.params,
    [T.q(q.question), gold],
    [T.a(q.answer)] * 2,
    T.pred,
    width=width,
    batch_size=2,
  )
  assert np.isfinite(r["z"]).all() and r["h_answer"].shape == (2,)
  # the gold evidence makes SmolLM2 surer of the answer
  assert r["h_answer"][1] < r["h_answer"][0]


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/lanr.ipynb", timeout=300)
