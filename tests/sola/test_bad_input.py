"""Bad-input battery for ``jaxpapers.sola``: malformed calls, eagerly and under
jit."""

import jax
import numpy as np

import jaxpapers.sola as S
from tests.bad_input_util import Case, assert_covers, parametrize, run_case
from tests.sola.test_losses import identity_table

F32 = np.float32
TAB = identity_table(6)
IDS = np.tile(np.arange(6, dtype=np.int32), (2, 1))
LP = np.log(np.full((2, 6), 1 / 6, F32))
LG = np.zeros((2, 6), F32)
A = np.full((2, 3), 1 / 3, F32)
C = np.zeros((2, 3, 3), F32)
CFG = S.StudentConfig(
  vocab_size=7, d_model=4, n_layers=1, n_heads=2, ffn_dim=4, max_len=4
)
HOST = "host-side (numpy / tokenizers) construction"

CASES = [
  Case(
    "mcc_blocks",
    S.mcc_blocks,
    (np.zeros((0, 2), np.int64), [[0, 1]]),
    match="t_offsets",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "mcc_blocks",
    S.mcc_blocks,
    ([[0, 2], [1, 1]], [[0, 2]]),
    match="non-decreasing",
    jit=None,
    jit_reason=HOST,
    id="mcc_blocks-order",
  ),
  Case(
    "align_texts",
    S.align_texts,
    (["a"], None, None),
    {"max_len": 1},
    match="max_len",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "train_bpe",
    S.train_bpe,
    (["abc"],),
    {"vocab_size": 10},
    match="vocab_size",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "token_strings",
    S.token_strings,
    (object(),),
    error=AttributeError,
    match="vocab_size",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cache_teacher",
    S.cache_teacher,
    (lambda x: x, np.zeros((2, 3), np.int32), np.zeros(3, np.int32)),
    match="lengths",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "gather_cache",
    S.gather_cache,
    (
      S.TeacherCache(
        np.zeros((1, 2, 1), np.int32),
        np.zeros((1, 2, 1), np.float16),
        np.zeros((1, 2), F32),
      ),
      np.array([[5]]),
    ),
    match="positions must lie",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "estimate_correspondence",
    S.estimate_correspondence,
    (
      np.array([0]),
      np.array([9]),
      np.zeros((1, 1), np.int64),
      np.zeros((1, 1)),
    ),
    {"t_strings": ["a", "b"], "s_strings": ["a", "b"], "r": 1},
    match="s_first must hold",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "lexical_table",
    S.lexical_table,
    (["a"], ["b"]),
    {"r": 3},
    match="r must be <=",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "mined_map",
    S.mined_map,
    (["a"], []),
    match="s_strings",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "lexical_cost",
    S.lexical_cost,
    (
      np.zeros((2, 3), np.int32),
      np.ones(2, np.int32),
      np.zeros((2, 4), np.int32),
      np.ones(2, np.int32),
    ),
    match="padded length",
  ),
  Case(
    "pair_cost",
    S.pair_cost,
    (TAB, np.zeros(2, F32), np.zeros(2, np.int32)),
    error=TypeError,
    match="t_ids must have a integer|t_ids must have an integer",
  ),
  Case(
    "local_support",
    S.local_support,
    (IDS, LP, LG[:1], TAB),
    match=("s_logits must have shape"),
  ),
  Case(
    "local_support",
    S.local_support,
    (IDS, LP, LG, TAB),
    {"k": 2, "support": "both"},
    match="support must be one of",
    id="local_support-name",
  ),
  Case(
    "sola_loss",
    S.sola_loss,
    (IDS, LP, LG, TAB),
    {"k": 9},
    match=("k must be <="),
  ),
  Case("uld_loss", S.uld_loss, (LP, LG[:1]), match="s_logits must have shape"),
  Case(
    "mined_kl_loss",
    S.mined_kl_loss,
    (IDS + 3, LP, LG),
    match=r"mapped_ids must be student ids",
    jit="nan",
  ),
  Case(
    "chunk_logliks",
    S.chunk_logliks,
    (LP, IDS[:, :3]),
    {"n_blocks": 6},
    match="tok_block must have shape",
  ),
  Case(
    "chunk_logliks",
    S.chunk_logliks,
    (LP, IDS),
    {"n_blocks": 5},
    match=r"tok_block must hold block indices in \[-1, 5\)",
    jit="nan",
    id="chunk_logliks-range",
  ),
  Case(
    "chunk_logliks",
    S.chunk_logliks,
    (LP, IDS),
    {"n_blocks": 0},
    match="n_blocks must be >= 1",
    id="chunk_logliks-n_blocks",
  ),
  Case(
    "alm_chunk_loss",
    S.alm_chunk_loss,
    (LP, IDS, LP[:1], IDS[:1]),
    {"n_blocks": 6},
    match="s_tok_logp must have the leading axes",
  ),
  Case(
    "alm_chunk_loss",
    S.alm_chunk_loss,
    (LP, IDS, LP, IDS - 2),
    {"n_blocks": 6},
    match=r"s_block must hold indices in \[-1, 6\)",
    jit="nan",
    id="alm_chunk_loss-range",
  ),
  Case(
    "alm_chunk_loss",
    S.alm_chunk_loss,
    (LP, IDS, LP, IDS),
    {"n_blocks": 6, "mask": np.ones((2, 5), bool)},
    match="mask must have shape",
    id="alm_chunk_loss-mask",
  ),
  Case(
    "alm_chunk_loss",
    S.alm_chunk_loss,
    (LP, IDS, LP, IDS),
    {"n_blocks": 6, "clip": 0.0},
    match="clip must be >",
    id="alm_chunk_loss-clip",
  ),
  Case(
    "binary_kl_from_logp",
    S.binary_kl_from_logp,
    (LP, LP[:, :2]),
    match="l_s must have shape",
  ),
  Case(
    "pad_with_dummy_bucket",
    S.pad_with_dummy_bucket,
    (A, np.ones((2, 3), bool), A, np.ones((2, 3), bool), C),
    {"delta": 0.0},
    match="delta",
  ),
  Case(
    "entropic_ot_cost",
    S.entropic_ot_cost,
    (A, A, C[:, :2]),
    match=("cost must have shape"),
  ),
  Case(
    "entropic_ot_cost",
    S.entropic_ot_cost,
    (A * 2, A, C),
    match="summing to 1",
    jit="nan",
    id="entropic_ot_cost-mass",
  ),
  Case(
    "entropic_ot_plan",
    S.entropic_ot_plan,
    (A, A, C),
    {"epsilon": 0.0},
    match=("epsilon"),
  ),
  Case(
    "bits_per_byte",
    S.bits_per_byte,
    (np.ones(2, F32), np.zeros(2, np.int32)),
    match="positive number of bytes",
    jit="nan",
  ),
  Case(
    "token_logp",
    S.token_logp,
    (
      np.zeros((1, 3, 4), F32),
      np.zeros((1, 2), np.int32),
      np.ones(1, np.int32),
    ),
    match="tokens must have shape",
  ),
  Case(
    "student_logits",
    S.student_logits,
    (S.init_student(jax.random.key(0), CFG), np.zeros((1, 5), np.int32), CFG),
    match="max_len=4",
  ),
  Case(
    "student_bits_per_byte",
    S.student_bits_per_byte,
    (
      S.init_student(jax.random.key(0), CFG),
      np.zeros((1, 3), F32),
      np.ones(1, np.int32),
      np.ones(1, np.int32),
      CFG,
    ),
    error=TypeError,
    match="tokens must have a",
  ),
  Case(
    "sample_aligned_pairs",
    S.sample_aligned_pairs,
    (jax.random.key(0), np.ones((2, 3), bool), 4),
    match="num_pairs must be <= 3",
  ),
  Case(
    "sample_aligned_pairs",
    S.sample_aligned_pairs,
    (jax.random.key(0), np.ones((2, 3), np.int32), 2),
    error=TypeError,
    match="valid must have a bool",
    id="sample_aligned_pairs-dtype",
  ),
  Case(
    "text_windows",
    S.text_windows,
    ("abc", 0),
    match="chars must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "window_splits",
    S.window_splits,
    (["a b", "c d", "e f"], []),
    {"sizes": {"train": 1}, "window_chars": 4, "seed": 0},
    match="missing",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "init_student",
    S.init_student,
    (jax.random.key(0), "cfg"),
    error=TypeError,
    match="StudentConfig",
    jit=None,
    jit_reason="static config",
  ),
  Case(
    "StudentConfig",
    S.StudentConfig,
    (7,),
    {"d_model": 5, "n_heads": 2},
    match="multiple of n_heads",
    jit=None,
    jit_reason="static config",
  ),
]

EXEMPT = {
  "AlignedTexts": "a NamedTuple result container",
  "BPETokenizer": (
    "a wrapper built by train_bpe (its encode checks its text argument)"
  ),
  "CorrespondenceTable": "a NamedTuple of arrays",
  "MCCAlignment": "a NamedTuple result container",
  "Support": "a NamedTuple result container",
  "TeacherCache": "a NamedTuple of arrays",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_every_public_callable_has_a_case():
  assert_covers(S, CASES, EXEMPT)
