"""SOLA: cross-tokenizer distillation by entropic optimal transport on a local
support.

"SOLA: Semantic Optimal Local Alignment" (NeurIPS 2026; no public text or code):
a teacher and a student with *different* tokenizers are compared on Minimal
Complete Correspondence blocks of the same text; a cross-vocabulary cost is
estimated from calibration text; and entropic OT (ott-jax) runs on a
bidirectional local support around each teacher prediction. Everything beyond
the abstract is a reconstruction and marked as such in the docstrings.

Pieces: :func:`mcc_blocks` / :func:`align_texts` (host alignment),
:func:`cache_teacher` (resumable top-K_c cache), :func:`estimate_correspondence`
(calibrated cost tables), :func:`local_support`, :func:`entropic_ot_cost`,
:func:`sola_loss`, the baselines :func:`uld_loss`, :func:`mined_kl_loss` and
:func:`alm_chunk_loss`, :func:`bits_per_byte`, :func:`sample_aligned_pairs` and
:func:`student_bits_per_byte` (a training step's pieces), and
:func:`text_windows` / :func:`window_splits` (offline text split by document).
"""

from jaxpapers.sola._alm import (
  alm_chunk_loss,
  binary_kl_from_logp,
  chunk_logliks,
)
from jaxpapers.sola._cache import TeacherCache, cache_teacher, gather_cache
from jaxpapers.sola._cost import (
  CorrespondenceTable,
  estimate_correspondence,
  lexical_cost,
  lexical_table,
  pair_cost,
)
from jaxpapers.sola._data import text_windows, window_splits
from jaxpapers.sola._distill import sample_aligned_pairs, student_bits_per_byte
from jaxpapers.sola._eval import bits_per_byte, token_logp
from jaxpapers.sola._losses import (
  SUPPORTS,
  Support,
  local_support,
  mined_kl_loss,
  mined_map,
  sola_loss,
  uld_loss,
)
from jaxpapers.sola._mcc import (
  AlignedTexts,
  MCCAlignment,
  align_texts,
  mcc_blocks,
)
from jaxpapers.sola._ot import (
  entropic_ot_cost,
  entropic_ot_plan,
  pad_with_dummy_bucket,
)
from jaxpapers.sola._student import StudentConfig, init_student, student_logits
from jaxpapers.sola._tokenize import BPETokenizer, token_strings, train_bpe

__all__ = [
  "AlignedTexts",
  "BPETokenizer",
  "CorrespondenceTable",
  "MCCAlignment",
  "SUPPORTS",
  "StudentConfig",
  "Support",
  "TeacherCache",
  "align_texts",
  "alm_chunk_loss",
  "binary_kl_from_logp",
  "bits_per_byte",
  "cache_teacher",
  "chunk_logliks",
  "entropic_ot_cost",
  "entropic_ot_plan",
  "estimate_correspondence",
  "gather_cache",
  "init_student",
  "lexical_cost",
  "lexical_table",
  "local_support",
  "mcc_blocks",
  "mined_kl_loss",
  "mined_map",
  "pad_with_dummy_bucket",
  "pair_cost",
  "sample_aligned_pairs",
  "sola_loss",
  "student_bits_per_byte",
  "student_logits",
  "text_windows",
  "token_logp",
  "token_strings",
  "train_bpe",
  "uld_loss",
  "window_splits",
]
