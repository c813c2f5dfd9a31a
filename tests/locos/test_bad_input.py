"""Bad-input battery for ``jaxpapers.locos``: malformed calls, eagerly and under
jit.

No model is loaded: every case fails its checks before the model runs, so a tiny
config (and no parameters) is enough.
"""

import jax
import numpy as np

from jaxpapers import lm, locos
from jaxpapers.locos import _toy
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

TINY = lm.LMConfig(
  vocab_size=37,
  d_model=32,
  n_layers=2,
  n_heads=4,
  n_kv_heads=2,
  head_dim=8,
  ffn_dim=48,
  rope_base=100.0,
)
TASK = _toy.ToyTask(
  num_names=4, num_landmarks=4, num_fillers=4, prompt_len=16, max_needles=2
)
TOK = TASK.tokenizer()
TRIAL = locos.Trial((1, 5, 6, 7), (1, 3), "N1")
BAD_TRIAL = locos.Trial((1, 99), (0, 1), "N1")  # id 99 >= vocab 37
HOST = "host-side (NumPy / Python) function, not traced"
GEN = "host-side decoding driver (greedy generation loop over batches)"
_rng = np.random.default_rng(0)
ATTN = _rng.dirichlet(np.ones(5), size=4).astype(np.float32)  # [H=4, K=5]
VALS = _rng.normal(size=(2, 5, 3)).astype(np.float32)  # [KV=2, K, dh=3]
WO = _rng.normal(size=(4, 3, 6)).astype(np.float32)  # [H, dh, d=6]
U = _rng.normal(size=6).astype(np.float32)

# One generated row of 2 steps over S = 5 cache slots (TINY: L = 2, H = 4, KV =
# 2, head_dim 8), without and with the attention and value capture.
NO_CAPTURE = lm.Generation(
  tokens=np.zeros((1, 2), np.int32),
  num_steps=np.full((1,), 2, np.int32),
  attn=None,
  values=None,
  key_pos=np.arange(5, dtype=np.int32)[None],
  key_valid=np.ones((1, 5), bool),
)
CAPTURED = NO_CAPTURE._replace(
  attn=np.zeros((1, 2, 2, 4, 5), np.float32),
  values=np.zeros((1, 2, 2, 5, 8), np.float32),
)

CASES = [
  Case(
    "collapse_index",
    locos.collapse_index,
    (np.ones(3), np.ones(3)),
    match=r"curve must be \[K, R\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "collapse_curves",
    locos.collapse_curves,
    ({("baseline", 0): np.ones(2)}, ("wu",), [1], [0, 1], 10, 0),
    match="detectors must include 'locos'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "ablation_conditions",
    locos.ablation_conditions,
    ({}, (), [1], 2, 4, -1, jax.random.key(0)),
    match="num_random must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "seed_blocks",
    locos.seed_blocks,
    ([3, 4], None, 0, 2),
    match="block_size and num_seeds must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "phi_per_position",
    locos.phi_per_position,
    (ATTN, VALS, WO, U, np.array([0, 1, 2, 3])),
    match=r"kv_map entries must be KV head indices in \[0, 2\)",
    jit="nan",
  ),
  Case(
    "phi_per_position",
    locos.phi_per_position,
    (ATTN, VALS, WO[:, :2], U, np.array([0, 0, 1, 1])),
    match="shapes disagree",
    id="phi_per_position-shape",
  ),
  Case(
    "contrast",
    locos.contrast,
    (np.ones(5), np.array([0, 1, 1, 0, 0]), np.ones(5, bool)),
    error=TypeError,
    match="must be bool masks",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "rouge1_recall",
    locos.rouge1_recall,
    ("Paris", None),
    error=TypeError,
    match="candidate must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "rouge_l",
    locos.rouge_l,
    (3, "Paris"),
    error=TypeError,
    match="reference must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "answer_steps",
    locos.answer_steps,
    ([1, 2], None, TOK),
    error=TypeError,
    match="answer must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "top_heads",
    locos.top_heads,
    (np.ones((2, 4)), 2.5),
    match=r"k must be in \[0, 8\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "top_heads",
    locos.top_heads,
    (np.full((2, 4), np.nan), 2),
    match="must be finite",
    jit=None,
    jit_reason=HOST,
    id="top_heads-nan",
  ),
  Case(
    "rank_heads",
    locos.rank_heads,
    (np.ones(8),),
    match=r"scores must be \[L, H\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "random_heads",
    locos.random_heads,
    (jax.random.key(0), 2, 4, 9),
    match=r"k must be in \[0, 8\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "jaccard_top_k",
    locos.jaccard_top_k,
    (np.ones((2, 4)), np.ones((4, 2)), 2),
    match="same shape",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "aggregate",
    locos.aggregate,
    ([{"accepted": True}], TINY),
    error=TypeError,
    match="sequence of TrialScore",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "Trial",
    locos.Trial,
    ((1, 2, 3), (2, 5), "x"),
    match=r"needle_span \(2, 5\) must satisfy",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "detect_heads",
    locos.detect_heads,
    (None, TINY, [BAD_TRIAL], TOK),
    match=r"prompt_ids must be token ids in \[0, vocab_size=37\)",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "detect_heads",
    locos.detect_heads,
    (None, TINY, [TRIAL], TOK),
    {"batch_size": 0},
    match="batch_size must be an int >= 1",
    jit=None,
    jit_reason=GEN,
    id="detect_heads-batch",
  ),
  Case(
    "score_batch",
    locos.score_batch,
    (NO_CAPTURE, [TRIAL]),
    {"params": None, "config": TINY, "tokenizer": TOK},
    match=r"generation must be captured with capture_attn=True",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "score_batch",
    locos.score_batch,
    (CAPTURED, [TRIAL, TRIAL]),
    {"params": None, "config": TINY, "tokenizer": TOK},
    match=r"trials: got 2 trials for a generation of 1 rows",
    jit=None,
    jit_reason=HOST,
    id="score_batch-rows",
  ),
  Case(
    "locos_trial",
    locos.locos_trial,
    (None, TINY, TRIAL, TOK),
    {"max_steps": 0},
    match="max_steps must be an int >= 1",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "locos_scores",
    locos.locos_scores,
    (None, TINY, [], TOK),
    match="non-empty sequence",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "evaluate_probes",
    locos.evaluate_probes,
    (None, TINY, [], TOK),
    match="non-empty",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "generate_texts",
    locos.generate_texts,
    (None, TINY, [TRIAL], TOK),
    {"batch_size": 0},
    match="batch_size must be an int >= 1",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "ablated_texts",
    locos.ablated_texts,
    (None, TINY, [TRIAL], TOK, np.zeros((2, 2, 4), bool), np.zeros((2, 4, 8))),
    match=(
      r"mask must be bool \[L, H\] = \[2, 4\] or \[N, L, H\] = \[1, 2, 4\], "
      r"got \(2, 2, 4\)"
    ),
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "ablation_cells",
    locos.ablation_cells,
    (
      None,
      TINY,
      [TRIAL],
      TOK,
      [("random", 1, [])],
      np.zeros((2, 4, 8)),
      {},
      "t",
      {},
    ),
    match=(
      r"conditions must be a non-empty list of \(name, k, \[mask, "
      r"...\]\) triples"
    ),
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bucket_indices",
    locos.bucket_indices,
    ([10, 70, 30], (16, 64)),
    match=(
      r"pad_to buckets \(16, 64\) must include a length >= the longest prompt "
      r"\(70"
    ),
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bucket_indices",
    locos.bucket_indices,
    ([10, 70], 32),
    match="pad_to=32 is shorter than the longest prompt",
    jit=None,
    jit_reason=HOST,
    id="bucket_indices-int",
  ),
  Case(
    "split_entities",
    locos.split_entities,
    (0,),
    {"frac": 1.0},
    match=r"frac must be in \(0, 1\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "ablation_curve",
    locos.ablation_curve,
    (None, TINY, [TRIAL], {}, [1]),
    {"tokenizer": TOK, "mode": "drop"},
    match="mode must be",
    jit=None,
    jit_reason=GEN,
  ),
  Case(
    "ablation_curve",
    locos.ablation_curve,
    (None, TINY, [TRIAL], {"locos": np.ones((4, 2))}, [1]),
    {"tokenizer": TOK, "mode": "zero_q"},
    match=r"must be \[L, H\] = \[2, 4\]",
    jit=None,
    jit_reason=GEN,
    id="ablation_curve-shape",
  ),
  Case(
    "bootstrap_ci",
    locos.bootstrap_ci,
    ([0.5, np.nan],),
    match="must be finite",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bootstrap_ci",
    locos.bootstrap_ci,
    ([0.5],),
    {"alpha": 1.5},
    match=r"alpha must be in",
    jit=None,
    jit_reason=HOST,
    id="bootstrap_ci-alpha",
  ),
  Case(
    "score_text",
    locos.score_text,
    ("a", "a", "bleu"),
    match="metric must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_probes",
    locos.make_probes,
    (np.random.default_rng(0),),
    {"tokenizer": TOK, "num": 1, "kind": "literal", "num_needles": 99},
    match="num_needles must be <=",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_needle_probes",
    lambda: locos.make_needle_probes(
      np.random.default_rng(0),
      tokenizer=TOK,
      num=1,
      context_tokens=512,
      depths=(1.5,),
    ),
    match=r"depths must be a non-empty sequence of numbers in \[0, 1\]",
    jit=None,
    jit_reason=HOST,
    id="make_needle_probes-depth",
  ),
  Case(
    "make_probes",
    lambda: locos.make_probes(
      np.random.default_rng(0),
      tokenizer=TOK,
      num=1,
      kind="literal",
      prompt_format=("plain"),
    ),
    match=r"prompt_format must be one of \('chat', 'completion'\)",
    jit=None,
    jit_reason=HOST,
    id="make_probes-format",
  ),
  Case(
    "make_probes",
    lambda: locos.make_probes(
      np.random.default_rng(0), tokenizer=TOK, num=1, kind="literal", shots=-1
    ),
    match="shots must be an int >= 0",
    jit=None,
    jit_reason=HOST,
    id="make_probes-shots",
  ),
  Case(
    "make_probes",
    lambda: locos.make_probes(None, tokenizer=TOK, num=1, kind="literal"),
    error=TypeError,
    match="rng must be a numpy",
    jit=None,
    jit_reason=HOST,
    id="make_probes-rng",
  ),
  Case(
    "ToyTask",
    locos.ToyTask,
    (),
    {"max_needles": 0},
    match="ToyTask.max_needles",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "ToyTokenizer",
    lambda: TOK.encode("N1 near Atlantis"),
    match="outside the toy vocabulary",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_toy_trials",
    locos.make_toy_trials,
    (TASK, np.random.default_rng(0), 2, "literal"),
    {"num_needles": 5},
    match=r"num_needles must be in \[1, max_needles=2\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "toy_batch",
    locos.toy_batch,
    (TASK, np.random.default_rng(0), 4),
    {"literal_frac": 1.5},
    match=r"literal_frac must be a fraction",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "toy_model_config",
    locos.toy_model_config,
    (TASK,),
    dict(d_model=30, n_layers=1, n_heads=4, n_kv_heads=2, ffn_dim=8),
    match=r"d_model \(30\) must be a multiple of n_heads \(4\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "toy_lm_loss",
    lambda tokens, mask: locos.toy_lm_loss(None, tokens, mask),
    (np.zeros((2, 5), np.int32), np.ones((2, 4), np.float32)),
    match=r"tokens and mask must both be \[B, T\]",
  ),
  Case(
    "parametric_probes",
    locos.parametric_probes,
    (TOK, [("Eiffel Tower",)]),
    match=r"landmarks must be \(landmark, city\) pairs",
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {
  "TrialScore": (
    "a result dataclass filled by detect_heads; aggregate checks what it is "
    "given"
  ),
  "haystack_sentences": (
    "takes no arguments (reads the sentences bundled with CPython)"
  ),
  "score_generation": (
    "the scoring half of detect_heads, on the capture of lm.generate; "
    "detect_heads checks the trials and the settings it passes on"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(locos, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_aggregate_without_accepted_trials_is_all_zeros():
  out = locos.aggregate([], TINY)
  assert set(out) == {"locos", "wu", "contrastive", "attention_spatial", "dla"}
  for v in out.values():
    np.testing.assert_array_equal(v, np.zeros((2, 4)))


def test_bootstrap_of_nothing_is_nan():
  lo, hi = locos.bootstrap_ci([])
  assert np.isnan(lo) and np.isnan(hi)


def test_empty_texts_score_zero():
  assert (
    locos.rouge1_recall("", "Paris") == 0.0
    and locos.rouge_l("Paris", "") == 0.0
  )


def test_jaccard_of_zero_heads_is_one():
  assert locos.jaccard_top_k(np.ones((2, 4)), np.zeros((2, 4)), 0) == 1.0
