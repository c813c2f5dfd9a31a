"""Bad-input battery for ``jaxpapers.lanr``: malformed calls, eagerly and under
jit."""

import types

import jax
import numpy as np
import pytest

from jaxpapers import lanr as L
from jaxpapers import lm
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
R = np.random.default_rng(0)
EQ, ED = R.normal(size=(3, 4)).astype(F32), R.normal(size=(5, 4)).astype(F32)
POS = np.eye(3, 5, dtype=bool)
HEADS = L.init_retrieval_heads(jax.random.key(0), 4, rep_dim=2)
CTL = L.init_control_head(jax.random.key(1), 4, width=3)
CFG = lm.LMConfig(
  vocab_size=12,
  d_model=8,
  n_layers=1,
  n_heads=2,
  n_kv_heads=2,
  head_dim=4,
  ffn_dim=8,
  rope_base=100.0,
)
FN = L.lm_hidden_fn(CFG)
LMP = lm.init_params(jax.random.key(2), CFG)
HEADS8 = L.init_retrieval_heads(jax.random.key(3), 8, rep_dim=2)
I32 = np.int32
Q, QL = np.ones((2, 3), I32), np.array([3, 2], I32)
DT, DL = np.ones((4, 2), I32), np.array([2, 1, 2, 2], I32)
DE = R.normal(size=(4, 2)).astype(F32)
AI, AL = np.ones((2, 1), I32), np.array([1, 1], I32)
PRED = np.array([2], I32)
KB = L.make_kb(0, n_people=4, n_cities=2, n_countries=2, n_companies=2)
BATCH = dict(
  z=EQ,
  doc_h=ED,
  next_doc=np.array([0, 7, -1], I32),
  in_context=np.zeros((3, 5), bool),
  ctl_label=np.zeros(3, F32),
)
HOST = "host-side data building (numpy / Python)"


def _mh(**kw):
  args = dict(t_max=2)
  args.update(kw)
  return lambda q, ql, de: L.multihop_retrieve(
    FN, LMP, HEADS8, None, q, ql, de, DT, DL, PRED, AI, AL, **args
  )


CASES = [
  Case(
    "info_nce",
    L.info_nce,
    (EQ, ED, POS * 2.0),
    {"tau": 0.1},
    match="pos_mask must hold only 0/1",
    jit="nan",
  ),
  Case(
    "info_nce",
    L.info_nce,
    (EQ, ED[:, :3], POS),
    {"tau": 0.1},
    match="must share D",
    id="info_nce-D",
  ),
  Case(
    "info_nce",
    L.info_nce,
    (EQ, ED, POS),
    {"tau": 0.0},
    match="tau must be > 0",
    id=("info_nce-tau"),
  ),
  Case(
    "answer_entropy",
    L.answer_entropy,
    (EQ, POS),
    match=("logits must have rank 3"),
  ),
  Case(
    "answer_entropy",
    L.answer_entropy,
    (EQ[None], POS),
    match=r"answer_mask must have shape",
    id="answer_entropy-mask",
  ),
  Case(
    "entropy_labels",
    L.entropy_labels,
    (np.array([0.1, np.nan], F32), 0.5),
    match="h must not contain NaN",
    jit="nan",
  ),
  Case(
    "entropy_labels",
    L.entropy_labels,
    (np.array([1, 2]), 0.5),
    error=TypeError,
    match="h must have a floating dtype",
    id="entropy_labels-int",
  ),
  Case(
    "entropy_threshold_stop",
    L.entropy_threshold_stop,
    (np.zeros(2, F32), float("nan")),
    match="eps must be a finite number",
  ),
  Case(
    "control_loss",
    L.control_loss,
    (np.zeros(3, F32), np.array([0, 2.0, 1], F32)),
    match=r"labels must lie in \[0, 1\]",
    jit="nan",
  ),
  Case(
    "control_loss",
    L.control_loss,
    (np.zeros(3, F32), np.zeros(2, F32)),
    match="labels must have shape",
    id="control_loss-shape",
  ),
  Case(
    "auroc",
    L.auroc,
    (np.zeros(3, F32), np.array([0, 1, 2], F32)),
    match="labels must hold only 0/1",
    jit="nan",
  ),
  Case(
    "auroc",
    L.auroc,
    (np.zeros((2, 2), F32), np.zeros(2, F32)),
    match="scores must have rank 1",
    id="auroc-rank",
  ),
  Case(
    "standardise",
    L.standardise,
    (np.ones(3, I32),),
    error=TypeError,
    match="x must have a floating dtype",
  ),
  Case(
    "init_retrieval_heads",
    L.init_retrieval_heads,
    (0, 4),
    error=TypeError,
    match="key must be a typed PRNG key",
    jit=None,
    jit_reason="static construction",
  ),
  Case(
    "init_control_head",
    L.init_control_head,
    (jax.random.key(0), 0),
    match="hidden_dim must be >= 1",
    jit=None,
    jit_reason="static construction",
  ),
  Case(
    "query_embedding",
    L.query_embedding,
    (HEADS, np.ones((2, 5), F32)),
    match=r"z must have shape \[..., H\] with H = 4",
  ),
  Case(
    "doc_embedding",
    L.doc_embedding,
    ({"p_q": HEADS["p_q"]}, np.ones((2, 4), F32)),
    error=TypeError,
    match="heads must be a dict with 'p_d'",
  ),
  Case(
    "control_logits",
    L.control_logits,
    (CTL, np.ones((2, 3), F32)),
    match=r"z must have shape \[..., H\]",
  ),
  Case(
    "lanr_loss",
    L.lanr_loss,
    (HEADS, CTL, BATCH),
    {"cfg": L.LAnRConfig()},
    match=r"next_doc'\] must lie in \[-1, 5\)",
    jit=None,
    jit_reason="batch dict holds the arrays (closed over): see the traced case",
  ),
  Case(
    "lanr_loss",
    lambda nd: L.lanr_loss(
      HEADS, CTL, dict(BATCH, next_doc=nd), cfg=L.LAnRConfig()
    ),
    (BATCH["next_doc"],),
    match=r"next_doc'\] must lie in",
    jit="nan",
    id="lanr_loss-traced",
  ),
  Case(
    "lanr_loss",
    L.lanr_loss,
    (HEADS, CTL, BATCH),
    {"cfg": {}},
    error=TypeError,
    match="cfg must be a LAnRConfig",
    id="lanr_loss-cfg",
    jit=None,
    jit_reason="static config",
  ),
  Case(
    "LAnRConfig",
    L.LAnRConfig,
    (),
    {"control_labels": "median"},
    match="control_labels must be one of",
    jit=None,
    jit_reason="static config",
  ),
  Case(
    "LAnRConfig",
    L.LAnRConfig,
    (),
    {"tau_stop": 1.5},
    match="tau_stop must be <= 1",
    jit=None,
    jit_reason="static config",
    id="LAnRConfig-tau",
  ),
  Case(
    "append_tokens",
    L.append_tokens,
    (
      np.zeros((2, 3), I32),
      np.zeros(2, I32),
      np.ones((2, 4), I32),
      np.ones(2, I32),
    ),
    match=r"tokens must have shape \[B=2, T_tok <= L=3\]",
  ),
  Case(
    "append_tokens",
    L.append_tokens,
    (
      np.zeros((2, 3), F32),
      np.zeros(2, I32),
      np.ones((2, 1), I32),
      np.ones(2, I32),
    ),
    error=TypeError,
    match="buf must have a integer dtype",
    id="append_tokens-dtype",
  ),
  Case(
    "read_context",
    lambda i, n: L.read_context(FN, LMP, i, n, PRED, AI, AL),
    (np.ones((2, 1), I32), QL),
    match="cannot hold",
  ),
  Case(
    "read_context",
    lambda i, n: L.read_context(FN, LMP, i, n, PRED, AI, AL),
    (np.ones((2, 4), I32), np.array([3, 2], I32)),
    match=(
      r"ids width L=4 must hold every row's length \+ \[PRED\] \(1\) \+ its "
      r"answer_len"
    ),
    jit="nan",
    id="read_context-overflow",
  ),
  Case(
    "ReaderTexts",
    L.ReaderTexts,
    (types.SimpleNamespace(lm="bogus", rep_layer=-1), KB, []),
    match="lm must be 'smollm2', 'gemma3' or 'random'",
    jit=None,
    jit_reason="host-side tokenizer and model set-up",
  ),
  Case(
    "auroc_interval",
    L.auroc_interval,
    (np.zeros(3), np.zeros(2), np.zeros(3), 10),
    match="score, label and group must be 1-D of one length",
    jit=None,
    jit_reason="host-side bootstrap (NumPy)",
  ),
  Case(
    "greedy_retrieve",
    L.greedy_retrieve,
    (lambda docs: {"z": np.zeros((len(docs), 1))}, lambda z: z, 0, 3),
    match="num_questions",
    jit=None,
    jit_reason="host loop over hops",
  ),
  Case(
    "read_contexts",
    lambda c, a: L.read_contexts(FN, LMP, c, a, PRED, width=3, batch_size=2),
    ([[1, 2], [3]], [[1, 1], [2]]),
    match="width=3 cannot hold",
    jit=None,
    jit_reason="host loop over batches of ragged token lists",
  ),
  Case(
    "multihop_retrieve",
    _mh(),
    (Q, np.array([4, 1], I32), DE),
    match=r"q_len must lie in \[0, Lq=3\]",
    jit="nan",
  ),
  Case(
    "multihop_retrieve",
    _mh(max_len=5),
    (Q, QL, DE),
    match="max_len must be >=",
    id="multihop_retrieve-max_len",
  ),
  Case(
    "multihop_retrieve",
    _mh(t_max=0),
    (Q, QL, DE),
    match="t_max must be >= 1",
    id="multihop_retrieve-t_max",
  ),
  Case(
    "multihop_retrieve",
    _mh(),
    (Q, QL, DE[:, :1]),
    match="doc_emb must have D_r = 2",
    id="multihop_retrieve-Dr",
  ),
  Case(
    "encode_documents",
    lambda t, n: L.encode_documents(FN, LMP, t, n, PRED),
    (DT, np.array([0, 1, 2, 2], I32)),
    match=r"doc_len must lie in \[1, 2\]",
    jit=None,
    jit_reason="host loop over fixed-size batches (each batch is jitted)",
  ),
  Case(
    "lm_hidden_fn",
    L.lm_hidden_fn,
    (CFG,),
    {"layer": 3},
    match="layer must be <= 0",
    jit=None,
    jit_reason="builds a function",
  ),
  Case("stop_hops", L.stop_hops, (np.zeros((2, 1), F32), 0.5), match="T >= 1"),
  Case(
    "at_hop",
    L.at_hop,
    (np.zeros((2, 3), F32), np.array([0, 3], I32)),
    match=r"hops must lie in \[0, 3\)",
    jit="nan",
  ),
  Case(
    "make_kb",
    L.make_kb,
    (0,),
    {"n_people": 1000},
    match="n_people must be <= 375",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_questions",
    L.make_questions,
    (KB, ["Nobody"]),
    {"n_per_hop": 1, "seed": 0},
    match="people must be a non-empty list of names",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_questions",
    L.make_questions,
    (KB, list(KB.people)),
    {"n_per_hop": 99, "seed": 0},
    match="exceeds",
    jit=None,
    jit_reason=HOST,
    id="make_questions-too-many",
  ),
  Case(
    "WordTokenizer",
    L.WordTokenizer,
    ([1, 2],),
    error=TypeError,
    match="texts must be a non-empty sequence of strings",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "pad_tokens",
    L.pad_tokens,
    ([[1, 2, 3]],),
    {"width": 2},
    match="longer than width=2",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bm25_scores",
    L.bm25_scores,
    (["a"], []),
    match="non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "question_as_query_retrieve",
    L.question_as_query_retrieve,
    (["a"], ["a b"]),
    {"hops": 0},
    match="hops must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_kb",
    L.make_kb,
    (0,),
    {"n_people": 200, "n_groups": 2},
    match="n_people must be <= 187",
    jit=None,
    jit_reason=HOST,
    id="make_kb-groups",
  ),
  Case(
    "iterative_bm25_retrieve",
    L.iterative_bm25_retrieve,
    (["a"], ["a b", "b c"], ["c"]),
    {"hops": 2},
    match="doc_bridge must hold one string per document",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cosine_scores",
    L.cosine_scores,
    (EQ, ED[:, :3]),
    match="share the feature width H",
  ),
  Case(
    "fit_whitening",
    L.fit_whitening,
    (EQ[:1],),
    match="at least 2 states",
  ),
  Case(
    "fit_whitening",
    L.fit_whitening,
    (EQ,),
    {"dim": 0},
    match="dim must be >= 1",
    id="whitening-dim",
  ),
  Case(
    "whiten",
    L.whiten,
    ({"mean": np.zeros(4, F32), "w": np.eye(4, dtype=F32)}, ED[:, :3]),
    match=r"x must have shape \[..., H\] with H = 4",
  ),
  Case(
    "prefill_prefix",
    L.prefill_prefix,
    (CFG, LMP, np.zeros((1, 3), I32)),
    match="prefix_ids must have rank 1",
    jit=None,
    jit_reason="builds the LM parameters (runs the prefix once)",
  ),
  Case(
    "lm_prefix_fn",
    L.lm_prefix_fn,
    (CFG,),
    {"layer": -2},
    match="layer must be >= -1",
    jit=None,
    jit_reason="builds a function",
  ),
  Case(
    "support_recall",
    L.support_recall,
    (np.zeros((2, 3)), [(0,)]),
    match="retrieved must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "frozen_scorers",
    lambda z, h: L.frozen_scorers(z, h, dim=2),
    (EQ, ED[:, :3]),
    match="must share H",
    jit=None,
    jit_reason="returns Python scorer closures (fitted once, on the host)",
  ),
  Case(
    "stop_outcomes",
    lambda: L.stop_outcomes(
      [1, 2], np.zeros((2, 3)), [(0,), (1,)], np.zeros((2, 3)), 3
    ),
    match=r"correct \[Q, t_max \+ 1\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "next_hop_accuracy",
    lambda: L.next_hop_accuracy(
      np.zeros((2, 3)), np.zeros((2, 4)), [0, 1], [0, 1]
    ),
    match="in_context must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bm25_diagnostics",
    lambda: L.bm25_diagnostics(KB, [], np.zeros((1, 3))),
    match="one row per question",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "gold_prefixes",
    L.gold_prefixes,
    ([L.QA("q", "a", (0, 7), "p")], 5),
    match=r"outside \[0, n_docs=5\)",
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {
  "KB": "a frozen dataclass built by make_kb (tested there)",
  "QA": "a frozen dataclass built by make_questions (tested there)",
  "LMFn": "a type alias",
  "RetrievalTrace": "a NamedTuple returned by multihop_retrieve",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_every_public_callable_has_a_case():
  assert_covers(L, CASES, EXEMPT)


def test_degenerate_inputs_return_documented_values():
  # no positive: 0
  assert float(L.info_nce(EQ, ED, np.zeros((3, 5), bool), tau=0.1)) == 0.0
  assert (
    float(L.control_loss(np.zeros(2, F32), np.zeros(2, F32), np.zeros(2, bool)))
    == 0.0
  )
  # one class only: NaN
  assert np.isnan(L.auroc(np.zeros(2, F32), np.zeros(2, F32)))
  np.testing.assert_array_equal(
    L.answer_entropy(np.zeros((1, 2, 3), F32), np.zeros((1, 2), bool)), [0.0]
  )


if __name__ == "__main__":
  pytest.main([__file__])
