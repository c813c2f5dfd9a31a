"""Bad-input battery for ``jaxpapers.bayes_memory``: malformed calls, eagerly
and under jit."""

import jax
import numpy as np
import pytest
from flax import nnx

from jaxpapers import bayes_memory as bm
from jaxpapers import lm
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

CFG = lm.LMConfig(
  vocab_size=23,
  d_model=8,
  n_layers=1,
  n_heads=2,
  n_kv_heads=1,
  head_dim=4,
  ffn_dim=8,
)
PARAMS = lm.init_params(jax.random.key(0), CFG)
TOK = bm.WordTokenizer(23)
DIALOGUE = bm.make_preference_dialogues(0, n_dialogues=1)[0]
HOST = "host-side: tokenisation and text processing"

IDS = np.array([[1, 5, 6, 7, 0], [1, 5, 8, 9, 0]], np.int32)
ATT = IDS != 0
ATT[:, 0] = True
TGT = np.zeros_like(ATT)
TGT[:, 2:4] = True
TGT0 = TGT.copy()
TGT0[0, 0] = True
BAD_IDS = IDS.copy()
BAD_IDS[0, 1] = 99
FN = bm.make_logprob_fn(PARAMS, CFG, max_targets=4)
BATCH = bm.ScoringBatch(IDS, ATT, TGT, np.array([True]))
BATCH_BADV = bm.ScoringBatch(IDS, ATT, TGT, np.array([True, True]))

U = np.zeros((2, 3), np.float32)
LBF = np.ones((2, 3), np.float32)
LBF_NAN = LBF.copy()
LBF_NAN[0, 0] = np.nan
VALID = np.ones((2, 3), bool)
NOVALID = VALID.copy()
NOVALID[1] = False
FT = np.ones((2, 3, 4), np.float32)
FQ = np.ones((2, 4), np.float32)
POS = np.zeros((2, 3), np.float32)
ROWS = [(IDS[r], ATT[r], TGT[r]) for r in range(2)]
TREE = bm.build_prefix_tree(ROWS, [(0,), (0,)])


def _check_idx_poisoned(out):
  access, idx, iv = out
  assert not np.any(np.asarray(access)) and np.all(np.asarray(idx) == -1)


CASES = [
  Case(
    "memory_block",
    bm.memory_block,
    ("a turn",),
    error=TypeError,
    match="sequence of str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "encode_rows",
    bm.encode_rows,
    (TOK, [[]], "x", "y"),
    {"max_len": 3},
    match="max_len=3",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "encode_rows",
    bm.encode_rows,
    (TOK, [[]], "x", "y"),
    {"max_len": 64, "template": "{x}"},
    match="placeholders",
    jit=None,
    jit_reason=HOST,
    id="encode_rows-template",
  ),
  Case(
    "build_scoring_batch",
    bm.build_scoring_batch,
    (TOK, ["a", "b"], "x", "y"),
    {"max_len": 64, "n_max": 1},
    match="n_max=1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_scoring_batch",
    bm.build_scoring_batch,
    (TOK, ["a"], "x", "y"),
    {"max_len": 64, "n_max": 2, "baseline": "none"},
    match="baseline must be",
    jit=None,
    jit_reason=HOST,
    id="build_scoring_batch-baseline",
  ),
  Case(
    "build_loo_batch",
    bm.build_loo_batch,
    (TOK, ["a", "b"], "x", "y"),
    {"max_len": 64, "n_max": 1},
    match="n_max=1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "sequence_logprobs",
    bm.sequence_logprobs,
    (PARAMS, IDS, ATT, TGT0),
    {"config": CFG, "max_targets": 4},
    match="position 0",
    jit="nan",
  ),
  Case(
    "sequence_logprobs",
    bm.sequence_logprobs,
    (PARAMS, IDS, ATT, TGT),
    {"config": CFG, "max_targets": 1},
    match="max_targets=1",
    jit="nan",
    id="slp-targets",
  ),
  Case(
    "sequence_logprobs",
    bm.sequence_logprobs,
    (PARAMS, BAD_IDS, ATT, TGT),
    {"config": CFG, "max_targets": 4},
    match="vocab_size=23",
    jit="nan",
    id="slp-vocab",
  ),
  Case(
    "sequence_logprobs",
    bm.sequence_logprobs,
    (PARAMS, IDS, ATT[:, :3], TGT),
    {"config": CFG, "max_targets": 4},
    match="attn_mask must have shape",
    id="slp-shape",
  ),
  Case(
    "make_logprob_fn",
    bm.make_logprob_fn,
    (PARAMS, CFG),
    {"max_targets": 0},
    match="max_targets must be >= 1",
    jit=None,
    jit_reason="builds a closure (static)",
  ),
  Case(
    "log_bayes_factors",
    bm.log_bayes_factors,
    (FN, BATCH_BADV),
    match="turn_valid",
    jit=None,
    jit_reason=(
      "the batch is a dataclass argument; its shapes are checked alike"
    ),
  ),
  Case(
    "log_bayes_factors",
    bm.log_bayes_factors,
    (FN, (IDS, ATT, TGT)),
    error=TypeError,
    match="ScoringBatch",
    jit=None,
    jit_reason="type check",
    id="lbf-type",
  ),
  Case(
    "loo_log_bayes_factors",
    bm.loo_log_bayes_factors,
    (FN, BATCH_BADV),
    match="turn_valid",
    jit=None,
    jit_reason=(
      "the batch is a dataclass argument; its shapes are checked alike"
    ),
  ),
  Case(
    "access_and_select",
    bm.access_and_select,
    (LBF_NAN, VALID),
    match="NaN",
    jit="nan",
    jit_check=_check_idx_poisoned,
  ),
  Case(
    "access_and_select",
    bm.access_and_select,
    (LBF, VALID),
    {"k": 4},
    match="k must be <= 3",
    id="access-k",
  ),
  Case(
    "utility_distillation_loss",
    bm.utility_distillation_loss,
    (U, LBF_NAN, VALID),
    match="finite",
    jit="nan",
  ),
  Case(
    "utility_distillation_loss",
    bm.utility_distillation_loss,
    (U, LBF, NOVALID),
    match="every row",
    jit="nan",
    id="kd-novalid",
  ),
  Case(
    "utility_distillation_loss",
    bm.utility_distillation_loss,
    (U, LBF, VALID),
    {"beta": 0.0},
    match="beta must be > 0",
    id="kd-beta",
  ),
  Case(
    "utility_regression_loss",
    bm.utility_regression_loss,
    (U, LBF[:1], VALID),
    match="lbf must have shape",
  ),
  Case(
    "gate_loss",
    bm.gate_loss,
    (U[:, 0], LBF_NAN, VALID),
    match="finite",
    jit=("nan"),
  ),
  Case(
    "gate_loss",
    bm.gate_loss,
    (U[:1, 0], LBF, VALID),
    match="g_logit must have shape",
    id="gate-shape",
  ),
  Case(
    "pair_features",
    bm.pair_features,
    (FT, FQ[:, :3], POS),
    match=("f_query must have shape"),
  ),
  Case(
    "UtilityModel",
    lambda ft: bm.UtilityModel(3, hidden=4, rngs=nnx.Rngs(0))(ft, FQ, POS),
    (FT,),
    match="d_feat=3",
  ),
  Case(
    "AccessGate",
    lambda ft: bm.AccessGate(3, hidden=4, rngs=nnx.Rngs(0))(ft, FQ, VALID),
    (FT,),
    match="d_feat=3",
  ),
  Case(
    "train_utility_model",
    bm.train_utility_model,
    (FT, FQ, POS, VALID, LBF_NAN),
    match="finite",
    jit=None,
    jit_reason="a training loop (it jits its own steps)",
  ),
  Case(
    "predict_utilities",
    bm.predict_utilities,
    (object(), object(), FT, FQ, POS, VALID),
    error=TypeError,
    match="UtilityModel",
    jit=None,
    jit_reason=(
      "the modules are Python objects, checked by type before any tracing"
    ),
  ),
  Case(
    "mean_pooled_features",
    bm.mean_pooled_features,
    (PARAMS, IDS, ATT & False),
    {"config": CFG},
    match="every row",
    jit="nan",
  ),
  Case(
    "cosine_scores",
    bm.cosine_scores,
    (FT, FQ, VALID[:, :2]),
    match=("valid must have shape"),
  ),
  Case(
    "recency_scores",
    bm.recency_scores,
    (LBF,),
    error=TypeError,
    match=("bool dtype"),
  ),
  Case(
    "random_scores",
    bm.random_scores,
    (np.zeros(2, np.uint32), VALID),
    error=TypeError,
    match="typed PRNG key",
    jit=None,
    jit_reason="a raw uint32 key is rejected by type",
  ),
  Case(
    "bm25_scores",
    bm.bm25_scores,
    ([], "q"),
    match="at least one turn",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "retrieval_scores",
    bm.retrieval_scores,
    ("dense",),
    {"valid": VALID},
    match="method must be one of",
    jit=None,
    jit_reason="dispatch on a static name",
  ),
  Case(
    "evidence_recall_at_k",
    bm.evidence_recall_at_k,
    (LBF, np.array([0, 7]), VALID),
    match="gold_turn must be in",
    jit="nan",
  ),
  Case(
    "stale_retrieval_rate",
    bm.stale_retrieval_rate,
    (LBF_NAN, VALID, VALID),
    match=("NaN"),
    jit=("nan"),
  ),
  Case(
    "gate_auroc",
    bm.gate_auroc,
    (np.array([np.nan, 1.0], np.float32), np.array([1, 0], bool)),
    match="NaN",
    jit="nan",
  ),
  Case(
    "make_preference_dialogues",
    bm.make_preference_dialogues,
    (0,),
    {"n_dialogues": 1, "change_rate": 1.5},
    match="change_rate must be <= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_preference_dialogues",
    bm.make_preference_dialogues,
    (0,),
    {"n_dialogues": 1, "n_turns": 2, "n_queries": 2},
    match="n_turns must be >= 6",
    jit=None,
    jit_reason=HOST,
    id="dialogues-turns",
  ),
  Case(
    "greedy_select",
    bm.greedy_select,
    (lambda r: np.zeros(len(r)), [2, -1]),
    {"k_max": 1},
    match=r"n_turns\[1\] must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "greedy_select",
    bm.greedy_select,
    (lambda r: np.zeros(len(r) + 1), [2]),
    {"k_max": 1},
    match="score must return 3 log-probs",
    jit=None,
    jit_reason=HOST,
    id="greedy_select-scorer",
  ),
  Case(
    "greedy_select",
    bm.greedy_select,
    (lambda r: np.zeros(len(r)), [2]),
    {"k_max": 0},
    match="k_max must be >= 1",
    jit=None,
    jit_reason=HOST,
    id="greedy_select-k",
  ),
  Case(
    "make_set_scorer",
    lambda: bm.make_set_scorer(
      FN, TOK, [(["a"], "x", "y")], max_len=64, batch_rows=2
    )([(0, (3,))]),
    match=r"outside \[0, 1\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_prefix_tree",
    bm.build_prefix_tree,
    (ROWS, [(0,), (0, 1)]),
    match="keys must be tuples of one common depth",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_prefix_tree",
    bm.build_prefix_tree,
    ([(IDS[0], ATT[0], TGT0[0])], [(0,)]),
    match="target at position 0",
    jit=None,
    jit_reason=HOST,
    id="build_prefix_tree-target0",
  ),
  Case(
    "tree_logprobs",
    lambda: bm.tree_logprobs(PARAMS, TREE, config=CFG, max_targets=1),
    match="max_targets=1",
    jit=None,
    jit_reason=(
      "the tree is a static structure built on the host; "
      "its values are checked eagerly"
    ),
  ),
  Case(
    "tree_logprobs",
    bm.tree_logprobs,
    (PARAMS, ROWS),
    {"config": CFG, "max_targets": 4},
    error=TypeError,
    match="tree must be a PrefixTree",
    jit=None,
    jit_reason=HOST,
    id="tree_logprobs-type",
  ),
  Case(
    "row_tokens",
    bm.row_tokens,
    (ROWS,),
    error=TypeError,
    match="tree must be a PrefixTree",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "score_rows_shared",
    bm.score_rows_shared,
    (PARAMS, ROWS, [(0,), (0,)]),
    {"config": CFG, "max_targets": 4, "buckets": (3,)},
    match="largest bucket 3",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "WordTokenizer",
    lambda: bm.WordTokenizer(4),
    match="vocab_size must be >= 16",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "dialogue_rows",
    lambda: bm.dialogue_rows(DIALOGUE, TOK, max_len=0),
    match="max_len must be an int >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "subset_rows",
    lambda: bm.subset_rows(DIALOGUE, TOK, [(0, "z", (0,))], max_len=64),
    match="kind must be 'y' or 'alt'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "score_rows_bucketed",
    lambda: bm.score_rows_bucketed(
      FN, [(IDS[0], ATT[0], TGT[0])], buckets=(2,), batch_tokens=8
    ),
    match="largest bucket 2",
    jit=None,
    jit_reason="host-side batching of rows into length buckets",
  ),
  Case(
    "pooled_text_features",
    lambda: bm.pooled_text_features(PARAMS, ["a"], TOK, config=CFG, max_len=0),
    match="max_len must be an int >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "load_model",
    lambda: bm.load_model("gpt2"),
    match="model must be one of",
    jit=None,
    jit_reason=HOST,
  ),
]
_Q = {"seed": np.zeros(2, int)}
# The question arrays of two questions over three turns (question_arrays'
# fields).
_QA = {
  "lp_y": np.zeros((2, 6)),
  "lp_alt": np.zeros((2, 6)),
  "n_y": np.ones(2),
  "f_turn": FT,
  "f_query": FQ,
  "bm25": np.zeros((2, 3)),
  "need": np.ones(2, bool),
  "gold": np.zeros(2, int),
  "seed": np.zeros(2, int),
  "stale": np.zeros((2, 3), bool),
}
CASES += [
  Case(
    "score_dialogues",
    lambda: bm.score_dialogues(
      [],
      (None, None, None),
      None,
      buckets=(8,),
      batch_tokens=8,
      max_targets=1,
      feature_len=4,
      scoring="fast",
    ),
    match="scoring must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "question_arrays",
    lambda: bm.question_arrays([], [{}], 0),
    match="cells must hold one cell per dialogue",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "fit_leave_one_seed_out",
    lambda: bm.fit_leave_one_seed_out(_Q, tau_placebo=1.0),
    match="at least two seeds",
    jit=None,
    jit_reason="host-side loop over the data seeds",
  ),
  Case(
    "access_signal_metrics",
    lambda: bm.access_signal_metrics(
      np.zeros((2, 3)), np.ones(2, bool), np.zeros(2)
    ),
    match=r"lp_y must have shape \[Q, N \+ 3\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "choose_contexts",
    lambda: bm.choose_contexts(
      _QA,
      np.zeros((2, 2)),
      np.zeros(2),
      tau=0.0,
      tau_placebo=0.0,
      rng=np.random.default_rng(0),
    ),
    match=r"u must have shape \[2, 3\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "choose_contexts",
    lambda: bm.choose_contexts(
      {"lp_y": np.zeros((2, 6))},
      U,
      np.zeros(2),
      tau=0.0,
      tau_placebo=0.0,
      rng=None,
    ),
    match="missing",
    jit=None,
    jit_reason=HOST,
    id="missing_fields",
  ),
  Case(
    "selection_metrics",
    lambda: bm.selection_metrics(
      {**_QA, "lp_y": np.zeros((2, 3))},
      {},
      np.zeros(2),
      seed=0,
      n_boot=2,
      greedy_k=0,
      tau_placebo=0.0,
    ),
    match=r"lp_y'\] must have shape \[Q, N \+ 3\]",
    jit=None,
    jit_reason=HOST,
  ),
]
EXEMPT = {
  "Row": "a type alias (a tuple of three arrays), not a function",
  "LogprobFn": "a type alias (Callable), not a function",
  "SetScorer": "a type alias (Callable), not a function",
  "GreedySelection": "a plain frozen dataclass returned by greedy_select",
  "PrefixTree": (
    "a plain container built by build_prefix_tree; checked by tree_logprobs"
  ),
  "ScoringBatch": (
    "a plain container; its fields are checked by every function taking a batch"
  ),
  "Dialogue": "a plain frozen dataclass built by make_preference_dialogues",
  "Query": "a plain frozen dataclass built by make_preference_dialogues",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_every_public_callable_has_a_case():
  assert_covers(bm, CASES, EXEMPT)


def test_degenerate_inputs_have_documented_values():
  # no gold turn anywhere: recall is NaN (0/0), documented
  assert np.isnan(
    float(bm.evidence_recall_at_k(LBF, np.array([-1, -1]), VALID))
  )
  # nothing clears tau: no access, no valid selection
  acc, idx, iv = bm.access_and_select(LBF, VALID, tau=5.0, k=2)
  assert not np.any(np.asarray(acc)) and not np.any(np.asarray(iv))
  # a query sharing no word with any turn: BM25 all zero
  assert np.all(bm.bm25_scores(["jazz"], "zzz") == 0)


def test_missing_bm25s_names_the_extra(monkeypatch):
  import builtins

  real = builtins.__import__

  def fake(name, *a, **k):
    if name == "bm25s":
      raise ImportError("no bm25s")
    return real(name, *a, **k)

  monkeypatch.setattr(builtins, "__import__", fake)
  with pytest.raises(ImportError, match=r"jaxpapers\[bayes_memory\]"):
    bm.bm25_scores(["a"], "a")
